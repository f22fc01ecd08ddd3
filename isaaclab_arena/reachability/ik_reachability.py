"""Batched top-down-grasp reachability with ``newton.ik`` (Levenberg-Marquardt), on ``cpu`` or ``cuda:0``.

For B candidates (robot base pose each) and K objects each, :meth:`IKReachabilityChecker.check` answers
whether the robot's TCP can reach a top-down grasp ``grasp_z_offset_m`` above every object position
within ``position_threshold_m`` and ``rotation_threshold_rad`` with its joints inside their limits.

How (no Python loop over candidates):

1. Targets go into each candidate's base frame (:func:`top_down_grasp_targets`); the B x K problems are
   flattened. Targets no configuration can reach are refused without IK (:class:`ReachBounds`): the TCP, or
   the wrist (which the target pose fixes up to the thresholds, whatever the wrist joints' angles), farther
   from the shoulder than the chain can carry it. Their ``position_error_m`` is the larger excess, a lower
   bound of the position error of any configuration within the rotation threshold.
2. Stage 1 solves every problem from one informed seed: the solution, found once at construction, for
   the nearest of a grid of top-down targets in the plane in front of the robot (by reach and height),
   turned toward the object (the first vertical joint rotated by the object's azimuth). Its early look is
   :data:`EARLY_LOOK_ITERATIONS` damped least-squares iterations with the limits held (the polish kernel of
   stage 3, one launch for every problem), which reaches most problems to within :data:`CONVERGED_SCORE` of
   the thresholds; the others are solved by ``newton.ik``'s LM from the same seed with the full iterations.
3. Stage 2 re-solves only the problems stage 1 left unreached, from ``n_seeds - 1`` fixed quasi-random
   (Roberts sequence) configurations spread over the joint limits, by LM (in the same call as stage 1's LM
   when both fit in :data:`MERGED_ROWS` rows).
3b. Stage 3 polishes the near misses (best score between 1 and :data:`NEAR_MISS_SCORE`) with the joint
   limits held exactly and the rotation weight balanced toward the verdict's max()
   (:class:`~isaaclab_arena.reachability.limit_polish.LimitPolish`), from their best solution, their
   stage-1 LM solution, their best stage-2 ones (:data:`POLISH_STARTS`), the library solutions of the
   :data:`LIBRARY_STARTS` nearest cells, and all of these through the other shoulder (j1 + pi, -j2, j3 + pi:
   the same tool poses on a roll-pitch-roll shoulder, found by FK at construction; it reaches behind the base
   past j1's limits).
   LM's soft limits and clamping, and its least-squares trade-off, miss grasps near the boundary that a
   configuration inside the limits reaches within both thresholds.
4. Every solution is clamped to the joint limits and measured by forward kinematics (:class:`ChainFK`);
   the verdict is about the clamped, feasible configuration, so limits are respected by construction.

Seeds are deterministic (no random draw): the same inputs give the same verdicts. Solvers are cached
per problem-count bucket (eight per octave, multiples of 64), so varying batch sizes reuse compiled kernels and
buffers; newton's model of the chain is built by the first LM solve (:meth:`IKReachabilityChecker._lm_model`).
Targets refused by the reach bounds never reach the solver, and a problem the early look reaches never reaches
LM: on the CPU an LM call costs about 0.6 ms per iteration whatever its size (some 15 kernel
launches) plus about 3.5 us per problem and iteration, the polish kernel about 0.7 us per problem and iteration.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import threading
import warnings
from dataclasses import dataclass, field

import numpy as np
import torch

from isaaclab_arena.reachability.chain_fk import ChainFK, matrix_to_quat_xyzw, rotation_angle_between
from isaaclab_arena.reachability.grasp_targets import top_down_grasp_targets
from isaaclab_arena.reachability.limit_polish import LimitPolish
from isaaclab_arena.reachability.reach_bounds import ReachBounds
from isaaclab_arena.reachability.seed_library_cache import load_library, store_library
from isaaclab_arena.reachability.urdf_chain import UrdfChain, load_urdf_chain


@dataclass(frozen=True)
class ReachabilityRobot:
    """What the IK needs to know about a robot arm.

    Attributes:
        urdf_path: The robot description (URDF) the simulated USD was built from.
        base_link: Root link; its frame is the robot's root pose (what placement writes).
        tcp_link: Tool frame measured against the grasp target (between the fingertips).
        home_joint_pos: Home position of the chain's joints, ``{joint name: rad or m}``; joints not named
            start at the middle of their limits.
    """

    urdf_path: str
    base_link: str
    tcp_link: str
    home_joint_pos: dict = field(default_factory=dict)


@dataclass
class ReachabilityResult:
    """Verdicts and residuals of one :meth:`IKReachabilityChecker.check` call, all (B, K) unless noted.

    Attributes:
        reachable: True when the grasp is reached within both thresholds (True where not evaluated).
        evaluated: False where the caller's mask skipped the object.
        position_error_m: TCP distance to the grasp point of the best solution, metres (NaN if skipped).
        rotation_error_rad: Angle between TCP and grasp orientation, radians (NaN if skipped).
        joint_pos: (B, K, n_joints) best solution, clamped to the joint limits (rad or m).
        joint_names: Names of the solution's joints.
    """

    reachable: torch.Tensor
    evaluated: torch.Tensor
    position_error_m: torch.Tensor
    rotation_error_rad: torch.Tensor
    joint_pos: torch.Tensor
    joint_names: list[str]

    @property
    def all_reachable(self) -> torch.Tensor:
        """(B,) True when every evaluated object of the candidate is reachable."""
        return self.reachable.all(dim=-1)


def _roberts_fractions(count: int, dims: int) -> np.ndarray:
    """(count, dims) low-discrepancy points in [0, 1) (Roberts' generalised golden-ratio sequence), k >= 1."""
    phi = 1.5
    for _ in range(50):  # root of x^(d+1) = x + 1
        phi = phi - (phi ** (dims + 1) - phi - 1) / ((dims + 1) * phi ** dims - 1)
    alpha = 1.0 / phi ** (1 + np.arange(dims))
    k = np.arange(1, count + 1)[:, None]
    return np.mod(0.5 + k * alpha, 1.0)


#: Stage 3 polishes problems whose best score is above 1 and below this (near misses of the boundary).
NEAR_MISS_SCORE = 3.0
#: Stage 3 starts from a problem's best solution, its stage-1 LM solution and its ``POLISH_STARTS - 1`` best stage-2
#: solutions.
POLISH_STARTS = 4
#: ... and from the library solutions of the ``LIBRARY_STARTS`` nearest (reach, height) cells.
LIBRARY_STARTS = 4

#: Seed libraries built in this process, by (URDF digest, base, TCP, home pose, device, n_seeds, iterations):
#: (reach-height cells (L, 2), joint solutions (L, C)). A second checker of the same arm builds in ~0.02 s, not ~0.6 s.
_LIBRARIES: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}

#: Damped least-squares iterations of stage 1's early look (the polish kernel): a problem reached by then to within
#: :data:`CONVERGED_SCORE` is not solved further (most are). 0: the seed alone is judged, every other problem goes
#: to LM.
EARLY_LOOK_ITERATIONS = 10

#: The early look stops a problem once its errors are within this fraction of the thresholds (1 mm and 0.01 rad at the
#: defaults): a reached grasp's joints are a solution to drive the arm with, not one at the edge of the verdict.
CONVERGED_SCORE = 0.1

#: Stage 1's rest (the problems its early look left unreached) and their stage-2 rows go into one LM call when they
#: are at most this many rows: below a few hundred rows a call's cost is mostly its fixed per-iteration kernel
#: launches on the CPU (iiwa, 30 iterations: 64 rows 19 ms, 192 rows 32 ms, 458 rows 66 ms), so one call of both beats
#: two even where the full solve reaches some of the rest, whose stage-2 rows are then not used.
MERGED_ROWS = 256

#: Weight of the soft joint-limit objective (solutions are clamped to the limits afterwards anyway).
LIMIT_WEIGHT = 10.0


def _keep_better(best: tuple[torch.Tensor, ...], rows: torch.Tensor, new: tuple[torch.Tensor, ...]) -> None:
    """Where ``new``'s score (its last tensor, one entry per index of ``rows``) is below ``best``'s at ``rows``,
    writes every tensor of ``new`` into ``best`` (q, position error, rotation error, score) in place."""
    better = new[-1] < best[-1][rows]
    upd = rows[better]
    for b, n in zip(best, new):
        b[upd] = n[better]


class _Solver:
    """One ``newton.ik.IKSolver`` for a fixed problem count, with its objective target buffers."""

    def __init__(self, model, tcp_body: int, count: int, device: str):
        import warp as wp
        from newton import ik

        self.count = count
        self.position = ik.IKObjectivePosition(link_index=tcp_body, link_offset=wp.vec3(0.0, 0.0, 0.0),
                                               target_positions=wp.zeros(count, dtype=wp.vec3, device=device))
        self.rotation = ik.IKObjectiveRotation(link_index=tcp_body, link_offset_rotation=wp.quat_identity(),
                                               target_rotations=wp.zeros(count, dtype=wp.vec4, device=device))
        limits = ik.IKObjectiveJointLimit(joint_limit_lower=model.joint_limit_lower,
                                          joint_limit_upper=model.joint_limit_upper, weight=LIMIT_WEIGHT)
        self.solver = ik.IKSolver(model=model, n_problems=count, objectives=[self.position, self.rotation, limits],
                                  optimizer="lm", jacobian_mode="analytic", sampler="none", n_seeds=1,
                                  lambda_initial=0.1)
        self.q_in = wp.zeros((count, model.joint_coord_count), dtype=wp.float32, device=device)
        self.q_out = wp.zeros((count, model.joint_coord_count), dtype=wp.float32, device=device)


class IKReachabilityChecker:
    """Batched top-down-grasp reachability for one robot arm (see module docstring).

    Args:
        robot: The arm's description.
        device: ``cpu`` or ``cuda:N``.
        n_seeds: Seeds per problem: 1 informed + ``n_seeds - 1`` quasi-random ones for stage 2.
        iterations: LM iterations per stage.
    """

    def __init__(self, robot: ReachabilityRobot, device: str = "cpu", n_seeds: int = 8, iterations: int = 30):
        if n_seeds < 1 or iterations < 1:
            raise ValueError(f"IKReachabilityChecker: n_seeds and iterations must be >= 1, got {n_seeds}, {iterations}")
        import warp as wp

        self.robot, self.device = robot, str(device)
        self.n_seeds, self.iterations = int(n_seeds), int(iterations)
        self.chain: UrdfChain = load_urdf_chain(robot.urdf_path, robot.base_link, robot.tcp_link)
        wp.init()
        self._model = None  # (newton's model of the chain, its TCP body's index): built by the first LM solve
        self._model_lock = threading.Lock()
        self.joint_names = list(self.chain.joint_names)
        unknown = sorted(set(robot.home_joint_pos) - set(self.joint_names))
        if unknown:
            raise ValueError(f"ReachabilityRobot.home_joint_pos names {unknown}, which are not joints of the chain "
                             f"{robot.base_link} -> {robot.tcp_link}: {self.joint_names}")
        lo, hi = self.chain.lower, self.chain.upper
        home = np.array([robot.home_joint_pos.get(n, 0.5 * (a + b)) for n, a, b in zip(self.joint_names, lo, hi)])
        tdev = torch.device(self.device)
        self._lower = torch.tensor(lo, dtype=torch.float32, device=tdev)
        self._upper = torch.tensor(hi, dtype=torch.float32, device=tdev)
        self._home = torch.tensor(home, dtype=torch.float32, device=tdev)
        self._fk = ChainFK(self.chain, tdev, torch.float32)
        self._polish = LimitPolish(self.chain, self._lower, self._upper, self.device)
        # the first joint turning about the base's vertical axis carries the object's azimuth in the seed
        self._yaw_joint = next((i for i, j in enumerate(self.chain.movable)
                                if j.type != "prismatic" and abs(abs(j.axis[2]) - 1) < 1e-6
                                and np.allclose(j.origin[:3, :3], np.eye(3))), None)
        _, home_rot = self._fk.forward(self._home[None])
        self.yaw_offset_rad = float(torch.atan2(home_rot[0, 1, 0], home_rot[0, 0, 0]))
        frac = _roberts_fractions(max(self.n_seeds - 1, 0), len(self.joint_names))
        self._spread = torch.tensor(lo + frac * (hi - lo), dtype=torch.float32, device=tdev)  # (S-1, C)
        self.reach_bounds = ReachBounds.of_chain(self.chain)
        # the seed library's grid is laid out about the first movable joint's origin (not the bounds' centre, which
        # may sit higher up the chain): the library, and so the seeds, stay those of the chain alone
        self._library_origin_z = float(self.chain.folded_transforms()[0][0][2, 3])
        self._solvers: dict[int, _Solver] = {}
        self._library_rz = torch.zeros(0, 2, device=tdev)
        self._library_q = torch.zeros(0, len(self.joint_names), device=tdev)
        self._flip = self._find_shoulder_flip()
        if self._yaw_joint is not None:
            self._build_seed_library()

    # ---- public --------------------------------------------------------------------------------------------
    def check(self, base_pose: torch.Tensor, object_positions: torch.Tensor, grasp_z_offset_m: float = 0.02,
              position_threshold_m: float = 0.01, rotation_threshold_rad: float = 0.1,
              mask: torch.Tensor | None = None) -> ReachabilityResult:
        """Reachability of a top-down grasp at each object for each candidate base pose.

        Args:
            base_pose: (B, 7) robot root pose, env-local: x, y, z (m), qx, qy, qz, qw.
            object_positions: (B, K, 3) object positions, env-local metres.
            grasp_z_offset_m: TCP height above the object position, metres.
            position_threshold_m: Largest accepted TCP position error, metres.
            rotation_threshold_rad: Largest accepted TCP orientation error, radians.
            mask: Optional (B, K) bool: only True entries are solved.
        """
        tdev = torch.device(self.device)
        base_pose = torch.as_tensor(base_pose, dtype=torch.float32, device=tdev)
        object_positions = torch.as_tensor(object_positions, dtype=torch.float32, device=tdev)
        pos_b, rot_b, azimuth_b = top_down_grasp_targets(base_pose, object_positions, grasp_z_offset_m,
                                                         self.yaw_offset_rad)
        batch, k = object_positions.shape[:2]
        evaluated = torch.ones(batch, k, dtype=torch.bool, device=tdev) if mask is None else \
            torch.as_tensor(mask, dtype=torch.bool, device=tdev).reshape(batch, k)
        thresholds = (float(position_threshold_m), float(rotation_threshold_rad))
        if not (thresholds[0] > 0 and thresholds[1] > 0):
            raise ValueError(f"IK thresholds must be > 0, got position {thresholds[0]} m, rotation {thresholds[1]} rad")
        n, c = batch * k, len(self.joint_names)
        excess = self.reach_bounds.excess_m(pos_b.reshape(-1, 3), rot_b.reshape(-1, 3, 3), thresholds[1])
        out_of_reach = evaluated.reshape(-1) & (excess > thresholds[0])
        idx = (evaluated.reshape(-1) & ~out_of_reach).nonzero().squeeze(-1)
        pos = pos_b.reshape(-1, 3)[idx]
        rot = rot_b.reshape(-1, 3, 3)[idx]
        q, pos_err, rot_err, score = self._solve_problems(pos, rot, azimuth_b.reshape(-1)[idx], thresholds)

        nan = torch.full((n,), math.nan, device=tdev)
        full_q = self._home.repeat(n, 1)
        full_p, full_r = nan.clone(), nan.clone()
        full_q[idx], full_p[idx], full_r[idx] = q, pos_err, rot_err
        full_p[out_of_reach] = excess[out_of_reach]
        reachable = ~out_of_reach
        reachable[idx] = score <= 1
        return ReachabilityResult(reachable.reshape(batch, k), evaluated, full_p.reshape(batch, k),
                                  full_r.reshape(batch, k), full_q.reshape(batch, k, c), list(self.joint_names))

    def check_config(self, base_pose: torch.Tensor, object_positions: torch.Tensor, config,
                     mask: torch.Tensor | None = None) -> ReachabilityResult:
        """:meth:`check` with the thresholds of a ``ReachabilityConfig`` (``grasp_z_offset_m``,
        ``ik_position_threshold_m``, ``ik_rotation_threshold_rad``)."""
        return self.check(base_pose, object_positions, config.grasp_z_offset_m, config.ik_position_threshold_m,
                          config.ik_rotation_threshold_rad, mask)

    def forward_kinematics(self, joint_pos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """TCP position (N, 3) metres and rotation (N, 3, 3) in the base frame for (N, n_joints) joint positions."""
        return self._fk.forward(torch.as_tensor(joint_pos, dtype=torch.float32, device=torch.device(self.device)))

    @property
    def model(self):
        """newton's model of the chain, which ``newton.ik``'s LM solves on (built on first use: :meth:`_lm_model`)."""
        return self._lm_model()[0]

    # ---- internals -----------------------------------------------------------------------------------------
    @staticmethod
    def _score(pos_err: torch.Tensor, rot_err: torch.Tensor, thresholds: tuple[float, float]) -> torch.Tensor:
        """max(position error / threshold, rotation error / threshold): <= 1 means reached."""
        return torch.maximum(pos_err / thresholds[0], rot_err / thresholds[1])

    def _solve_problems(self, pos: torch.Tensor, rot: torch.Tensor, azimuth: torch.Tensor,
                        thresholds: tuple[float, float]):
        """Stages 1 to 3 for (M,) base-frame targets -> best clamped q (M, C), errors (M,), scores (M,)."""
        # rotation residuals weigh pos_thr / rot_thr against position ones (metres): the LM objective then
        # trades position against orientation error the way the verdict does
        weight = thresholds[0] / thresholds[1]
        seeds = self._informed_seeds(pos, azimuth)
        # stage 1's early look: a few damped least-squares iterations from the informed seed, with the limits held
        # (the polish kernel: one launch); most problems are reached there and done
        q, pos_err, rot_err = self._polish.polish(pos, rot, seeds[:, None], thresholds, EARLY_LOOK_ITERATIONS,
                                                  stop_score=CONVERGED_SCORE)
        score = self._score(pos_err, rot_err, thresholds)
        s = self._spread.shape[0]

        def spread_rows(problems):  # stage 2's LM rows: each problem from every spread seed
            return (pos[problems].repeat_interleave(s, 0), rot[problems].repeat_interleave(s, 0),
                    self._spread.repeat(problems.numel(), 1))

        rest = (score > 1).nonzero().squeeze(-1)
        merged = None  # (problems, stage-2 rows' q, position and rotation errors) when solved with stage 1's rest
        lm = q.clone()  # stage 1's LM solution of the rest (else the early look's): a stage-3 start too
        if rest.numel():
            # the problems the early look left unreached are solved by LM from their seeds with the full iterations
            # (the better of the two results kept); a few of them also get their stage-2 rows in the same call (rows
            # are independent, so results are those of separate calls), saving a call's fixed cost
            r = rest.numel()
            rows = (pos[rest], rot[rest], seeds[rest])
            if s and r * (1 + s) <= MERGED_ROWS:
                rows = tuple(torch.cat(pair) for pair in zip(rows, spread_rows(rest)))
            qa, pa, ra = self._solve_and_measure(*rows, weight, self.iterations)
            lm[rest] = qa[:r]
            score_a = self._score(pa[:r], ra[:r], thresholds)
            _keep_better((q, pos_err, rot_err, score), rest, (qa[:r], pa[:r], ra[:r], score_a))
            if qa.shape[0] > r:
                merged = (rest, qa[r:], pa[r:], ra[r:])
            rest = (score > 1).nonzero().squeeze(-1)
        starts = torch.stack([q, lm], 1)  # (M, 2 + k, C) stage-3 starting configurations
        if s and rest.numel():  # stage 2: the unreached problems from every spread seed
            if merged is not None:  # already solved: the rows of the problems still unreached (a subset, both sorted)
                at = torch.searchsorted(merged[0], rest)
                sel = (at[:, None] * s + torch.arange(s, device=pos.device)).reshape(-1)
                q2, p2, r2 = merged[1][sel], merged[2][sel], merged[3][sel]
            else:
                q2, p2, r2 = self._solve_and_measure(*spread_rows(rest), weight, self.iterations)
            score2 = self._score(p2, r2, thresholds).reshape(-1, s)
            best2, arg = score2.min(dim=1)
            pick = torch.arange(rest.numel(), device=pos.device) * s + arg
            _keep_better((q, pos_err, rot_err, score), rest, (q2[pick], p2[pick], r2[pick], best2))
            # the k best stage-2 solutions of each problem also start stage 3 (other branches of the arm)
            k = min(POLISH_STARTS - 1, s)
            top = score2.topk(k, dim=1, largest=False).indices  # (R, k)
            starts = torch.cat([starts, q[:, None].expand(-1, k, -1).clone()], 1)
            starts[rest, 2:] = q2.reshape(-1, s, q.shape[1]).gather(1, top[..., None].expand(-1, -1, q.shape[1]))
        # stage 3: near misses, polished with the joint limits held exactly from their best solutions and the
        # library's solutions of the nearest (reach, height) cells
        near = ((score > 1) & (score < NEAR_MISS_SCORE)).nonzero().squeeze(-1)
        if near.numel():
            starts = torch.cat([starts[near], self._informed_seeds(pos[near], azimuth[near], LIBRARY_STARTS)], 1)
            if self._flip is not None:  # the same poses through the other shoulder: j1 + pi, -j2, j3 + pi
                starts = torch.cat([starts, self._flipped(starts)], 1)
            q3, p3, r3 = self._polish.polish(pos[near], rot[near], starts, thresholds)
            _keep_better((q, pos_err, rot_err, score), near, (q3, p3, r3, self._score(p3, r3, thresholds)))
        return q, pos_err, rot_err, score

    def _build_seed_library(self) -> None:
        """Solves a grid of top-down targets in the plane of azimuth 0 (reach 0.1-1.1 m from the first joint's
        axis, height -0.6 to +1.0 m around its origin) and keeps the reached ones as stage-1 seeds. A later
        checker of the same chain, home pose, device and settings in this process reuses them (:data:`_LIBRARIES`:
        the same tensors the build gives, so verdicts do not depend on it), and so does a later process through the
        disk cache (:mod:`~isaaclab_arena.reachability.seed_library_cache`)."""
        key = (hashlib.sha1(self.chain.urdf_xml.encode()).hexdigest(), self.robot.base_link, self.robot.tcp_link,
               tuple(sorted(self.robot.home_joint_pos.items())), self.device, self.n_seeds, self.iterations)
        known = _LIBRARIES.get(key) or load_library(key, self._home.device)
        if known is not None:
            self._library_rz, self._library_q = known[0].clone(), known[1].clone()
            _LIBRARIES[key] = known
            return
        self._solve_seed_library()
        _LIBRARIES[key] = (self._library_rz.clone(), self._library_q.clone())
        store_library(key, self._library_rz, self._library_q)

    def _solve_seed_library(self) -> None:
        tdev = self._home.device
        reach = torch.linspace(0.05, 1.1, 22, device=tdev)
        height = torch.linspace(-0.6, 1.0, 17, device=tdev)
        r, z = torch.meshgrid(reach, height, indexing="ij")
        pos = torch.stack([r.reshape(-1), torch.zeros_like(r).reshape(-1), z.reshape(-1) + self._library_origin_z], -1)
        base = torch.tensor([[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]], device=tdev)
        pos_b, rot_b, azimuth = top_down_grasp_targets(base, pos[None], 0.0, self.yaw_offset_rad)
        pos_b, rot_b, azimuth = pos_b[0], rot_b[0], azimuth[0]
        inside = self.reach_bounds.excess_m(pos_b, rot_b, 0.1) <= 0.01  # cells no configuration reaches: skipped
        pos_b, rot_b, azimuth = pos_b[inside], rot_b[inside], azimuth[inside]
        q, _, _, score = self._solve_problems(pos_b, rot_b, azimuth, (0.01, 0.1))
        keep = score <= 1
        self._library_rz = torch.stack([pos_b[keep, 0], pos_b[keep, 2]], -1)
        self._library_q = q[keep]

    def _find_shoulder_flip(self):
        """``(j1, j2, j3)`` coordinate indices when turning the first joint by pi, negating the second and turning
        the third by pi leaves every tool pose unchanged (a roll-pitch-roll shoulder, as on the Franka and the
        iiwa), checked with the FK on fixed configurations; else None."""
        if len(self.joint_names) < 3 or any(j.type == "prismatic" for j in self.chain.movable[:3]):
            return None
        frac = torch.tensor(_roberts_fractions(16, len(self.joint_names)), dtype=torch.float32, device=self._home.device)
        q = self._lower + frac * (self._upper - self._lower)
        flipped = q.clone()
        flipped[:, 0], flipped[:, 1], flipped[:, 2] = q[:, 0] + math.pi, -q[:, 1], q[:, 2] + math.pi
        (p, r), (pf, rf) = self._fk.forward(q), self._fk.forward(flipped)
        same = bool(((p - pf).norm(dim=-1).max() < 1e-4) & (rotation_angle_between(r, rf).max() < 1e-3))
        return (0, 1, 2) if same else None

    def _flipped(self, q: torch.Tensor) -> torch.Tensor:
        """(..., C) configurations through the other shoulder (:meth:`_find_shoulder_flip`), turned joints
        wrapped into their limits where a turn of 2 pi brings them there, clamped otherwise."""
        j1, j2, j3 = self._flip
        out = q.clone()
        out[..., j2] = -q[..., j2]
        for j in (j1, j3):
            turned = q[..., j] + math.pi
            turned = torch.where(turned > self._upper[j], turned - 2 * math.pi, turned)
            out[..., j] = turned
        return torch.maximum(torch.minimum(out, self._upper), self._lower)

    def _informed_seeds(self, pos: torch.Tensor, azimuth: torch.Tensor, count: int = 1) -> torch.Tensor:
        """Per target: the ``count`` library solutions nearest in (reach, height), or home, turned by the
        azimuth: (M, C), or (M, count, C) when ``count`` > 1."""
        m = azimuth.numel()
        if self._library_q.shape[0]:
            rz = torch.stack([pos[:, :2].norm(dim=-1), pos[:, 2]], -1)
            k = min(count, self._library_q.shape[0])
            nearest = torch.cdist(rz, self._library_rz).topk(k, dim=1, largest=False).indices  # (M, k)
            seeds = self._library_q[nearest]
            if k < count:
                seeds = torch.cat([seeds, seeds[:, :1].expand(-1, count - k, -1)], 1)
        else:
            seeds = self._home.expand(m, count, -1).clone()
        if self._yaw_joint is not None:
            j = self._yaw_joint
            turned = torch.remainder(seeds[..., j] + azimuth[:, None] + math.pi, 2 * math.pi) - math.pi
            seeds[..., j] = torch.clamp(turned, self._lower[j], self._upper[j])
        return seeds[:, 0] if count == 1 else seeds

    def _lm_model(self):
        """(newton's model of the chain, index of its TCP body), built once on first use: a check whose problems the
        early look settles, or that the reach bounds refuse, never needs it, and the first ``newton.ModelBuilder`` of
        a process costs newton's import of its solvers (about 0.4 s on the 2-core CPU). RuntimeError when newton's
        reading of the URDF gives other movable joints than the chain's, in another order."""
        with self._model_lock:
            if self._model is None:
                import newton

                builder = newton.ModelBuilder()
                builder.add_urdf(self.chain.urdf_xml, floating=False, enable_self_collisions=False)
                with warnings.catch_warnings():
                    # newton fixes up the URDF links' inertias for simulation: kinematics never reads them, and the
                    # warning would come in the middle of whichever fill first needs LM
                    warnings.filterwarnings("ignore", message="Inertia validation corrected")
                    model = builder.finalize(device=self.device)
                model_joints = [label.split("/")[-1] for label in model.joint_label]
                movable = [n for n in model_joints if n in self.chain.joint_names]
                if movable != self.chain.joint_names or model.joint_coord_count != len(movable):
                    raise RuntimeError(f"newton model of {self.robot.urdf_path} has joints {model_joints}; expected "
                                       f"the chain {self.chain.joint_names} in order")
                tcp = next(i for i, label in enumerate(model.body_label) if label.split("/")[-1] == self.robot.tcp_link)
                self._model = (model, tcp)
            return self._model

    def _solver_for(self, count: int) -> _Solver:
        # eight buckets per octave (at most an eighth of a solve is padding), each solver built once and reused
        step = max(64, (1 << (count - 1).bit_length()) // 8)
        bucket = -(-count // step) * step
        if bucket not in self._solvers:
            self._solvers[bucket] = _Solver(*self._lm_model(), bucket, self.device)
        return self._solvers[bucket]

    def _solve_and_measure(self, pos: torch.Tensor, rot: torch.Tensor, seeds: torch.Tensor, rotation_weight: float,
                           iterations: int):
        """``iterations`` of LM for (M,) problems from (M, C) seeds -> clamped solutions (M, C), position and
        rotation errors (M,)."""
        import warp as wp

        m = pos.shape[0]
        if m == 0:
            empty = torch.zeros(0, device=pos.device)
            return seeds.clone(), empty, empty.clone()
        s = self._solver_for(m)
        pad = s.count - m
        quat = matrix_to_quat_xyzw(rot)
        if pad:
            pos = torch.cat([pos, pos[:1].expand(pad, 3)])
            quat = torch.cat([quat, quat[:1].expand(pad, 4)])
            seeds = torch.cat([seeds, seeds[:1].expand(pad, seeds.shape[1])])
        s.rotation.weight = rotation_weight
        # on CUDA, warp works on torch's current stream, so torch's writes and reads are ordered around it
        stream = wp.ScopedStream(wp.stream_from_torch()) if pos.is_cuda else contextlib.nullcontext()
        with stream:
            s.position.set_target_positions(wp.from_torch(pos.contiguous(), dtype=wp.vec3))
            s.rotation.set_target_rotations(wp.from_torch(quat.contiguous(), dtype=wp.vec4))
            wp.copy(s.q_in, wp.from_torch(seeds.contiguous()))
            s.solver.step(s.q_in, s.q_out, iterations=iterations)
        q = torch.clamp(wp.to_torch(s.q_out)[:m].clone(), self._lower, self._upper)
        tcp_pos, tcp_rot = self._fk.forward(q)
        return q, (tcp_pos - pos[:m]).norm(dim=-1), rotation_angle_between(tcp_rot, rot[:m])

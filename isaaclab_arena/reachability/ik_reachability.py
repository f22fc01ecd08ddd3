"""Batched top-down-grasp reachability by damped least squares with the joint limits held (one warp kernel,
:class:`~isaaclab_arena.reachability.limit_polish.LimitPolish`), on ``cpu`` or ``cuda:0``.

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
   turned toward the object (the first vertical joint rotated by the object's azimuth). Most problems are
   reached to within :data:`CONVERGED_SCORE` of the thresholds in a few iterations and stop there.
3. Stage 2 re-solves only the problems stage 1 left unreached, from ``n_seeds - 1`` fixed quasi-random
   (Roberts sequence) configurations spread over the joint limits, each on its own.
3b. Stage 3 polishes the near misses (best score between 1 and :data:`NEAR_MISS_SCORE`) from their stage-1
   solution and their best stage-2 ones (:data:`POLISH_STARTS`), the library solutions of the
   :data:`LIBRARY_STARTS` nearest cells, and all of these through the other shoulder (j1 + pi, -j2, j3 + pi:
   the same tool poses on a roll-pitch-roll shoulder, found by FK at construction; it reaches behind the base
   past j1's limits), stopping at the first start that reaches the grasp, else keeping the best.
4. Every iterate is inside the joint limits (a joint at a limit that a step would push further out is held), the
   rotation residual's weight is balanced per problem toward the verdict's max(), and every solution is measured
   by the chain's forward kinematics, so the verdict is about a feasible configuration.

Every stage runs the same kernel (``LimitPolish``): one launch per stage, about 0.7 us per problem and iteration
on the CPU. Stages 1 and 2 were ``newton.ik``'s Levenberg-Marquardt until 2026-12-07 (soft limits, clamped after):
its import cost every robot process about 1.5 s (its solvers, viewers and rerun), its calls about 0.6 ms per
iteration whatever their size (some 15 kernel launches), and the verdicts agree with an independent IK
(Pinocchio) without it as they did with it (``tests/test_reachability_agreement.py``). Seeds are deterministic
(no random draw): the same inputs give the same verdicts. Targets refused by the reach bounds never reach the
solver.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import numpy as np
import torch

from isaaclab_arena.reachability.chain_fk import ChainFK, rotation_angle_between
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
#: Stage 3 starts from a problem's stage-1 solution and its ``POLISH_STARTS - 1`` best stage-2 solutions (the best
#: of them all among these).
POLISH_STARTS = 4
#: ... and from the library solutions of the ``LIBRARY_STARTS`` nearest (reach, height) cells.
LIBRARY_STARTS = 4

#: Seed libraries built in this process, by (URDF digest, base, TCP, home pose, device, n_seeds, iterations):
#: (reach-height cells (L, 2), joint solutions (L, C)). A second checker of the same arm builds in ~0.02 s, not ~0.6 s.
_LIBRARIES: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}

#: Stages 1 and 2 stop a problem once its errors are within this fraction of the thresholds (1 mm and 0.01 rad at the
#: defaults): a reached grasp's joints are a solution to drive the arm with, not one at the edge of the verdict.
CONVERGED_SCORE = 0.1


def _keep_better(best: tuple[torch.Tensor, ...], rows: torch.Tensor, new: tuple[torch.Tensor, ...]) -> None:
    """Where ``new``'s score (its last tensor, one entry per index of ``rows``) is below ``best``'s at ``rows``,
    writes every tensor of ``new`` into ``best`` (q, position error, rotation error, score) in place."""
    better = new[-1] < best[-1][rows]
    upd = rows[better]
    for b, n in zip(best, new):
        b[upd] = n[better]


class IKReachabilityChecker:
    """Batched top-down-grasp reachability for one robot arm (see module docstring).

    Args:
        robot: The arm's description.
        device: ``cpu`` or ``cuda:N``.
        n_seeds: Seeds per problem: 1 informed + ``n_seeds - 1`` quasi-random ones for stage 2.
        iterations: Damped least-squares iterations per start of stages 1 to 3.
    """

    def __init__(self, robot: ReachabilityRobot, device: str = "cpu", n_seeds: int = 8, iterations: int = 30):
        if n_seeds < 1 or iterations < 1:
            raise ValueError(f"IKReachabilityChecker: n_seeds and iterations must be >= 1, got {n_seeds}, {iterations}")
        import warp as wp

        self.robot, self.device = robot, str(device)
        self.n_seeds, self.iterations = int(n_seeds), int(iterations)
        self.chain: UrdfChain = load_urdf_chain(robot.urdf_path, robot.base_link, robot.tcp_link)
        wp.init()
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

    # ---- internals -----------------------------------------------------------------------------------------
    @staticmethod
    def _score(pos_err: torch.Tensor, rot_err: torch.Tensor, thresholds: tuple[float, float]) -> torch.Tensor:
        """max(position error / threshold, rotation error / threshold): <= 1 means reached."""
        return torch.maximum(pos_err / thresholds[0], rot_err / thresholds[1])

    def _solve_problems(self, pos: torch.Tensor, rot: torch.Tensor, azimuth: torch.Tensor,
                        thresholds: tuple[float, float]):
        """Stages 1 to 3 for (M,) base-frame targets -> best q inside the limits (M, C), errors (M,), scores (M,)."""
        seeds = self._informed_seeds(pos, azimuth)
        # stage 1: every problem from its informed seed; most are reached within a few iterations and stop there
        q, pos_err, rot_err = self._solve_and_measure(pos, rot, seeds, thresholds, self.iterations)
        score = self._score(pos_err, rot_err, thresholds)
        starts = q[:, None].clone()  # (M, 1 + k, C) stage-3 starting configurations: stage 1's solution first
        s = self._spread.shape[0]
        rest = (score > 1).nonzero().squeeze(-1)
        if s and rest.numel():  # stage 2: the unreached problems from every spread seed, each on its own
            q2, p2, r2 = self._solve_and_measure(pos[rest].repeat_interleave(s, 0), rot[rest].repeat_interleave(s, 0),
                                                 self._spread.repeat(rest.numel(), 1), thresholds, self.iterations)
            score2 = self._score(p2, r2, thresholds).reshape(-1, s)
            best2, arg = score2.min(dim=1)
            pick = torch.arange(rest.numel(), device=pos.device) * s + arg
            _keep_better((q, pos_err, rot_err, score), rest, (q2[pick], p2[pick], r2[pick], best2))
            # the k best stage-2 solutions of each problem also start stage 3 (other branches of the arm)
            k = min(POLISH_STARTS - 1, s)
            top = score2.topk(k, dim=1, largest=False).indices  # (R, k)
            starts = torch.cat([starts, starts.expand(-1, k, -1)], 1)
            starts[rest, 1:] = q2.reshape(-1, s, q.shape[1]).gather(1, top[..., None].expand(-1, -1, q.shape[1]))
        # stage 3: near misses, polished from their stage-1 and best stage-2 solutions and the library's solutions of
        # the nearest (reach, height) cells (a problem stops at the first start that reaches it)
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

    def _solve_and_measure(self, pos: torch.Tensor, rot: torch.Tensor, seeds: torch.Tensor,
                           thresholds: tuple[float, float], iterations: int):
        """Up to ``iterations`` damped least-squares iterations for (M,) problems, each from its own seed (M, C),
        a problem stopped once within :data:`CONVERGED_SCORE` of the thresholds (None: never) -> best solutions
        inside the limits (M, C), position and rotation errors (M,)."""
        return self._polish.polish(pos, rot, seeds[:, None], thresholds, iterations, stop_score=CONVERGED_SCORE)

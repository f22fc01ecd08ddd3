"""An independent reference for reachability verdicts (tests and ``scripts/bench_robot.py``): Pinocchio
kinematics and a projected damped-least-squares IK in float64 numpy, from the same URDF the project ships.

Targets are solved in batches (:meth:`PinocchioReach.solve_many`; :meth:`PinocchioReach.solve` is a batch of
one): every target runs its own multi-seed descent, with its own stopping, and gets the verdict it would get
alone; only Pinocchio's FK and Jacobian are called one configuration at a time, the rest is stacked numpy.

Any arm: :class:`PinocchioReach` takes a :class:`ReferenceArm` (URDF, arm joints, TCP frame, home pose);
the default is the Franka Panda. :func:`reference_arm` reads those four facts of a registered embodiment.

Shares nothing with ``isaaclab_arena.reachability`` but the problem statement: the grasp target (TCP
position and orientation in the robot base frame), the thresholds, and "joint limits respected" (every
iterate is projected into the limits, and the verdict is measured on that configuration).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from isaaclab_arena import ARENA_ROOT

URDF = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "assets", "robots", "franka_panda", "panda.urdf")
ARM = [f"panda_joint{i}" for i in range(1, 8)]
TCP = "panda_grasptarget"
READY = np.array([0.0, -math.pi / 4, 0.0, -3 * math.pi / 4, 0.0, math.pi / 2, math.pi / 4])


@dataclass(frozen=True)
class ReferenceArm:
    """What the reference needs of an arm: its URDF, arm joints (base to tip), TCP frame and home pose (rad)."""

    urdf: str
    arm_joints: tuple
    tcp: str
    home: tuple


FRANKA = ReferenceArm(URDF, tuple(ARM), TCP, tuple(READY))


def reference_arm(embodiment_name: str) -> ReferenceArm:
    """The :class:`ReferenceArm` of a registered embodiment (its URDF, joints, TCP and home pose only)."""
    from isaaclab_arena.embodiments import make_embodiment

    d = make_embodiment(embodiment_name).description
    return ReferenceArm(d.urdf_path, tuple(d.arm_joint_names), d.tcp_link,
                        tuple(float(d.default_joint_pos[j]) for j in d.arm_joint_names))


class PinocchioReach:
    """Top-down grasp reachability of an arm (other joints locked) by projected DLS from many seeds.

    ``yaw_offset`` is the tool's yaw about the vertical at the home pose relative to the base's x axis
    (radians, from Pinocchio's FK): top-down targets keep it, as the robot's home wrist roll.
    """

    def __init__(self, seeds: int = 12, iterations: int = 150, damping: float = 1e-2, rng_seed: int = 0,
                 arm: ReferenceArm = FRANKA):
        import pinocchio as pin

        self.pin, self.arm = pin, arm
        full = pin.buildModelFromUrdf(arm.urdf)
        lock = [full.getJointId(n) for n in full.names[1:] if n not in arm.arm_joints]
        self.model = pin.buildReducedModel(full, lock, pin.neutral(full))
        self.data = self.model.createData()
        self.frame = self.model.getFrameId(arm.tcp)
        self.lower, self.upper = self.model.lowerPositionLimit.copy(), self.model.upperPositionLimit.copy()
        self.home = np.array(arm.home, dtype=np.float64)
        rng = np.random.default_rng(rng_seed)
        self.spread = rng.uniform(self.lower, self.upper, (seeds, self.model.nq))
        self.iterations, self.damping = iterations, damping
        self._damping_eye = damping * np.eye(6)
        _, home_rot = self.fk(self.home)
        self.yaw_offset = math.atan2(home_rot[1, 0], home_rot[0, 0])

    def fk(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """TCP position (3,) m and rotation (3, 3) in the base frame."""
        self.pin.framesForwardKinematics(self.model, self.data, q)
        placement = self.data.oMf[self.frame]
        return placement.translation.copy(), placement.rotation.copy()

    def _descend(self, q: np.ndarray, p_t: np.ndarray, r_t: np.ndarray, pos_thr: float, rot_thr: float,
                 balance: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Projected DLS from every row of ``q`` (M, nq) rad toward its target ``p_t`` (M, 3) m, ``r_t``
        (M, 3, 3) in the base frame, all rows in one batch; a row stops on its own (converged, or stalled for
        20 iterations) and its result does not depend on the other rows. Returns each row's best score (M,)
        and its configuration (M, nq).

        With ``balance`` a row's rotation weight moves toward equal scaled errors at every iteration (the
        least-squares optimum then approaches the verdict's minimax one)."""
        model, data, frame, placement = self.model, self.data, self.frame, self.data.oMf
        jacobian, log3, aligned = self.pin.computeFrameJacobian, self.pin.log3, self.pin.LOCAL_WORLD_ALIGNED
        held_low, held_high = self.lower + 1e-9, self.upper - 1e-9
        best_score, best_q = np.full(len(q), math.inf), q.copy()
        # the rows still descending: q, targets, weights and counters hold those rows only
        rows, q, p_t, r_t = np.arange(len(q)), q.copy(), p_t.copy(), r_t.copy()
        w = np.tile([1.0, 1.0, 1.0] + [pos_thr / rot_thr] * 3, (len(q), 1))  # weigh errors as the verdict does
        since_better = np.zeros(len(q), dtype=np.int64)
        for _ in range(self.iterations):
            jac, pose = [], []
            for q_row in q:  # Pinocchio's FK and Jacobian, one row at a time (both copied out of ``data``)
                jac.append(jacobian(model, data, q_row, frame, aligned))
                pose.append(placement[frame].homogeneous)
            jac, pose = np.array(jac), np.array(pose)
            p, r = pose[:, :3, 3], pose[:, :3, :3]
            e = np.concatenate([p_t - p, [log3(m) for m in r_t @ r.transpose(0, 2, 1)]], 1)
            pe, re = np.sqrt(np.einsum("ki,ki->k", e[:, :3], e[:, :3])), rotation_angles(r, r_t)
            score = np.maximum(pe / pos_thr, re / rot_thr)
            if balance:
                ratio = np.clip((re / rot_thr) / np.maximum(pe / pos_thr, 1e-9), 0.5, 2.0)
                w[:, 3:] = np.clip(w[:, 3:] * np.sqrt(ratio)[:, None], 0.01 * pos_thr / rot_thr,
                                   100 * pos_thr / rot_thr)
            best_before = best_score[rows]
            since_better = np.where(score < best_before - 1e-4, 0, since_better + 1)
            better = score < best_before
            if better.any():
                best_score[rows[better]], best_q[rows[better]] = score[better], q[better]
            stop = ((pe < 1e-6) & (re < 1e-6)) | (since_better > 20)  # converged, or stalled for 20 iterations
            if stop.any():
                go = ~stop
                rows, q, p_t, r_t, w, since_better, jac, e = (a[go] for a in (rows, q, p_t, r_t, w, since_better,
                                                                              jac, e))
                if not len(rows):
                    break
            jac, e = jac * w[:, :, None], e * w
            dq = self._damped_step(jac, e)
            # joints at a limit that the step pushes further out are held (their columns removed), so the
            # other joints take up the motion instead of the projection discarding it
            held = ((q <= held_low) & (dq < 0)) | ((q >= held_high) & (dq > 0))
            some = held.any(1)
            if some.any():
                jac_held = np.where(held[some][:, None, :], 0.0, jac[some])
                dq[some] = self._damped_step(jac_held, e[some])
            q = np.minimum(np.maximum(q + dq, self.lower), self.upper)
        return best_score, best_q

    def _damped_step(self, jac: np.ndarray, e: np.ndarray) -> np.ndarray:
        """Damped least-squares steps J^T (J J^T + damping I)^-1 e of stacked Jacobians (K, 6, nq), errors (K, 6)."""
        jac_t = jac.transpose(0, 2, 1)
        return (jac_t @ np.linalg.solve(jac @ jac_t + self._damping_eye, e[:, :, None]))[:, :, 0]

    def solve_many(self, p_t: np.ndarray, r_t: np.ndarray, pos_thr: float = 0.01,
                   rot_thr: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
        """Best score (N,) and configuration (N, nq) rad over the seeds for each TCP target ``p_t`` (N, 3) m,
        ``r_t`` (N, 3, 3) in the base frame (or one target, (3,) and (3, 3)), solved in batches; score <= 1
        means reached within both thresholds (``pos_thr`` m, ``rot_thr`` rad).

        Each target gets what it would get on its own: the seeds in order (home turned to the target's
        azimuth, home, the spread ones) until its best score is <= 0.5, then, between 1 and 3, a balanced
        re-descent from its best configuration. The informed seed is descended first; the targets it leaves
        above 0.5 (almost only unreachable ones, which need every seed) descend from all the other seeds in
        one batch, and the seeds are then taken in order up to the first one that gets the target <= 0.5
        (a descent does not depend on the other rows, so the later ones change nothing)."""
        p_t = np.asarray(p_t, dtype=np.float64).reshape(-1, 3)
        r_t = np.asarray(r_t, dtype=np.float64).reshape(-1, 3, 3)
        n, nq = len(p_t), self.model.nq
        seeds = np.broadcast_to(np.concatenate([self.home[None], self.home[None], self.spread]),
                                (n, 2 + len(self.spread), nq)).copy()
        seeds[:, 0, 0] = np.clip(np.arctan2(p_t[:, 1], p_t[:, 0]), self.lower[0], self.upper[0])  # informed
        best_score, best_q = np.full(n, math.inf), seeds[:, 0].copy()
        for group in (slice(0, 1), slice(1, seeds.shape[1])):
            rows = np.nonzero(~(best_score <= 0.5))[0]  # comfortably inside: no need for more seeds
            if not len(rows):
                break
            start = seeds[rows, group]
            m = start.shape[1]
            score, q = self._descend(start.reshape(-1, nq), np.repeat(p_t[rows], m, 0), np.repeat(r_t[rows], m, 0),
                                     pos_thr, rot_thr)
            score, q = score.reshape(-1, m), q.reshape(-1, m, nq)
            for s in range(m):  # in seed order, as long as the target is not comfortably inside
                better = ~(best_score[rows] <= 0.5) & (score[:, s] < best_score[rows])
                best_score[rows[better]], best_q[rows[better]] = score[better, s], q[better, s]
        rows = np.nonzero((1.0 < best_score) & (best_score < 3.0))[0]
        if len(rows):
            # near the boundary the least-squares optimum trades position against orientation differently
            # from the verdict's max(): re-descend from the best configuration with balanced weights
            score, q = self._descend(best_q[rows], p_t[rows], r_t[rows], pos_thr, rot_thr, balance=True)
            better = score < best_score[rows]
            best_score[rows[better]], best_q[rows[better]] = score[better], q[better]
        return best_score, best_q

    def solve(self, p_t: np.ndarray, r_t: np.ndarray, pos_thr: float = 0.01, rot_thr: float = 0.1):
        """Best (score, q) over the seeds for one target (:meth:`solve_many` of one row); score <= 1 means
        reached within both thresholds."""
        score, q = self.solve_many(p_t, r_t, pos_thr, rot_thr)
        return float(score[0]), q[0]

    def reachable(self, p_t, r_t, pos_thr: float = 0.01, rot_thr: float = 0.1) -> bool:
        return self.solve(p_t, r_t, pos_thr, rot_thr)[0] <= 1.0


def rotation_angle(a: np.ndarray, b: np.ndarray) -> float:
    """Angle (rad) of the rotation between rotation matrices ``a`` and ``b`` (3, 3)."""
    return float(np.arccos(np.clip((np.trace(a.T @ b) - 1) / 2, -1, 1)))


def rotation_angles(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Angles (K,) rad of the rotations between stacked rotation matrices ``a`` and ``b`` (K, 3, 3)."""
    return np.arccos(np.clip((np.einsum("kij,kij->k", a, b) - 1) / 2, -1, 1))


def top_down_target(base_pos, base_quat_xyzw, obj_pos, z_offset: float,
                    yaw_offset: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """TCP target (position, rotation) in the base frame for a top-down grasp above ``obj_pos`` (float64):
    tool z down, tool x along the base-to-object azimuth turned by ``yaw_offset`` (radians)."""
    x, y, z, w = base_quat_xyzw
    rb = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                   [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                   [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
    target = np.asarray(obj_pos, dtype=np.float64) + np.array([0.0, 0.0, z_offset])
    d = target - np.asarray(base_pos, dtype=np.float64)
    a = math.atan2(d[1], d[0]) + yaw_offset
    rz = np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0], [0, 0, 1]])
    rw = rz @ np.diag([1.0, -1.0, -1.0])
    return rb.T @ d, rb.T @ rw

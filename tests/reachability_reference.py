"""An independent reference for reachability verdicts (tests only): Pinocchio kinematics and a projected
damped-least-squares IK in float64 numpy, from the same URDF the project ships.

Shares nothing with ``isaaclab_arena.reachability`` but the problem statement: the grasp target (TCP
position and orientation in the robot base frame), the thresholds, and "joint limits respected" (every
iterate is projected into the limits, and the verdict is measured on that configuration).
"""

from __future__ import annotations

import math
import os

import numpy as np

from isaaclab_arena import ARENA_ROOT

URDF = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "assets", "robots", "franka_panda", "panda.urdf")
ARM = [f"panda_joint{i}" for i in range(1, 8)]
TCP = "panda_grasptarget"
READY = np.array([0.0, -math.pi / 4, 0.0, -3 * math.pi / 4, 0.0, math.pi / 2, math.pi / 4])


class PinocchioReach:
    """Top-down grasp reachability of the Franka arm (fingers locked) by projected DLS from many seeds."""

    def __init__(self, seeds: int = 12, iterations: int = 150, damping: float = 1e-2, rng_seed: int = 0):
        import pinocchio as pin

        self.pin = pin
        full = pin.buildModelFromUrdf(URDF)
        lock = [full.getJointId(n) for n in full.names[1:] if n not in ARM]
        self.model = pin.buildReducedModel(full, lock, pin.neutral(full))
        self.data = self.model.createData()
        self.frame = self.model.getFrameId(TCP)
        self.lower, self.upper = self.model.lowerPositionLimit.copy(), self.model.upperPositionLimit.copy()
        rng = np.random.default_rng(rng_seed)
        self.spread = rng.uniform(self.lower, self.upper, (seeds, self.model.nq))
        self.iterations, self.damping = iterations, damping

    def fk(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """TCP position (3,) m and rotation (3, 3) in the base frame."""
        self.pin.framesForwardKinematics(self.model, self.data, q)
        placement = self.data.oMf[self.frame]
        return placement.translation.copy(), placement.rotation.copy()

    def _descend(self, q: np.ndarray, p_t: np.ndarray, r_t: np.ndarray, pos_thr: float, rot_thr: float):
        pin = self.pin
        best = (math.inf, q)
        w = np.array([1.0, 1.0, 1.0] + [pos_thr / rot_thr] * 3)  # weigh errors as the verdict does
        since_better = 0
        for _ in range(self.iterations):
            p, r = self.fk(q)
            e = np.concatenate([p_t - p, pin.log3(r_t @ r.T)])
            pe, re = np.linalg.norm(p_t - p), rotation_angle(r, r_t)
            score = max(pe / pos_thr, re / rot_thr)
            since_better += 1
            if score < best[0] - 1e-4:
                since_better = 0
            if score < best[0]:
                best = (score, q.copy())
            if (pe < 1e-6 and re < 1e-6) or since_better > 20:  # converged, or stalled for 20 iterations
                break
            jac = pin.computeFrameJacobian(self.model, self.data, q, self.frame, pin.LOCAL_WORLD_ALIGNED)
            jac, e = jac * w[:, None], e * w
            dq = jac.T @ np.linalg.solve(jac @ jac.T + self.damping * np.eye(6), e)
            q = np.clip(q + dq, self.lower, self.upper)
        return best

    def solve(self, p_t: np.ndarray, r_t: np.ndarray, pos_thr: float = 0.01, rot_thr: float = 0.1):
        """Best (score, q) over the seeds; score <= 1 means reached within both thresholds."""
        azimuth = math.atan2(p_t[1], p_t[0])
        informed = READY.copy()
        informed[0] = np.clip(azimuth, self.lower[0], self.upper[0])
        best = (math.inf, informed)
        for seed in [informed, READY, *self.spread]:
            found = self._descend(seed.copy(), p_t, r_t, pos_thr, rot_thr)
            if found[0] < best[0]:
                best = found
            if best[0] <= 0.5:  # comfortably inside: no need for more seeds
                break
        return best

    def reachable(self, p_t, r_t, pos_thr: float = 0.01, rot_thr: float = 0.1) -> bool:
        return self.solve(p_t, r_t, pos_thr, rot_thr)[0] <= 1.0


def rotation_angle(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.arccos(np.clip((np.trace(a.T @ b) - 1) / 2, -1, 1)))


def top_down_target(base_pos, base_quat_xyzw, obj_pos, z_offset: float) -> tuple[np.ndarray, np.ndarray]:
    """TCP target (position, rotation) in the base frame for a top-down grasp above ``obj_pos`` (float64):
    tool z down, tool x along the base-to-object azimuth."""
    x, y, z, w = base_quat_xyzw
    rb = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                   [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                   [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
    target = np.asarray(obj_pos, dtype=np.float64) + np.array([0.0, 0.0, z_offset])
    d = target - np.asarray(base_pos, dtype=np.float64)
    a = math.atan2(d[1], d[0])
    rz = np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0], [0, 0, 1]])
    rw = rz @ np.diag([1.0, -1.0, -1.0])
    return rb.T @ d, rb.T @ rw

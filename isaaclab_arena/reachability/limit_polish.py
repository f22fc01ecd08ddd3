"""Damped least-squares IK with the joint limits held exactly (one warp kernel, ``cpu`` or ``cuda:0``): every
stage of the reachability check (:mod:`ik_reachability`).

:class:`LimitPolish` runs damped least squares from given configurations where a joint at a limit that the step
would push further out is held (its Jacobian column removed, so the other joints take up the motion), every
iterate stays inside the limits, and the weight of the rotation residual is balanced per problem toward equal
scaled errors (the verdict is ``max(position / threshold, rotation / threshold)``); the best verdict score seen is
kept. A solver that treats the limits as a soft objective and clamps its result afterwards (``newton.ik``'s LM,
which stages 1 and 2 used before) misses, near a limit, grasps that a configuration inside the limits reaches.
One thread per problem walks its start configurations in turn, every iteration inside the kernel: the chain's
forward kinematics with its geometric Jacobian, the 6 x 6 damped system solved by Cholesky. A solve is one
launch, where the batched torch version it replaced ran some 130 small ops per iteration (the iiwa's polish at
1,024 candidates: 32 ms in torch); about 0.7 us per problem and iteration on the CPU. Metres and radians, the
chain's base frame.
"""

from __future__ import annotations

import contextlib

import numpy as np
import torch
import warp as wp

from isaaclab_arena.reachability.urdf_chain import UrdfChain

#: Damping of the least-squares step (squared metres of weighted residual). With every stage of the check on this
#: kernel (2026-12-07), 1e-4 refused 39 (Franka) and 28 (iiwa) of the agreement benchmark's 504 targets within 2 mm of
#: the reach boundary that the Pinocchio reference reaches (``scripts/bench_robot.py --only agreement``, seed 7), 3e-4
#: 2 and 7, 1e-3 and 3e-3 none (seed 11 too); 1e-5 refused 3 outside the 2 mm band. Stretched near the boundary, the
#: arm is near a singularity, where a smaller damping takes steps too long to converge in 30 iterations.
DAMPING = 1e-3
#: A joint within this of a limit (rad or m) is at it: a step pushing it further out holds it.
AT_LIMIT = 1e-7


@wp.func
def _chain_pose(q: wp.array2d(dtype=float), row: int, n: int, fixed_rot: wp.array(dtype=wp.mat33),
                fixed_pos: wp.array(dtype=wp.vec3), axis: wp.array(dtype=wp.vec3), sliding: wp.array(dtype=int),
                axes_out: wp.array2d(dtype=wp.vec3), origins_out: wp.array2d(dtype=wp.vec3)):
    """Tool position and rotation for joint row ``row`` of ``q``; each joint's axis and origin in the base frame
    go to ``axes_out[row]`` and ``origins_out[row]`` (for the Jacobian). Fixed transform c comes before joint c;
    transform n after the last joint."""
    rot = wp.identity(n=3, dtype=float)
    pos = wp.vec3(0.0)
    for c in range(n):
        pos = pos + rot @ fixed_pos[c]
        rot = rot @ fixed_rot[c]
        a = rot @ axis[c]
        axes_out[row, c] = a
        origins_out[row, c] = pos
        if sliding[c] != 0:
            pos = pos + q[row, c] * a
        else:
            k = wp.skew(axis[c])
            turn = wp.identity(n=3, dtype=float) + wp.sin(q[row, c]) * k + (1.0 - wp.cos(q[row, c])) * (k @ k)
            rot = rot @ turn
    pos = pos + rot @ fixed_pos[n]
    rot = rot @ fixed_rot[n]
    return pos, rot


@wp.func
def _rotation_vector(m: wp.mat33):
    """Axis * angle (radians) of a rotation matrix, for angles below pi."""
    skew = wp.vec3(m[2, 1] - m[1, 2], m[0, 2] - m[2, 0], m[1, 0] - m[0, 1])
    angle = wp.acos(wp.clamp((m[0, 0] + m[1, 1] + m[2, 2] - 1.0) * 0.5, -1.0, 1.0))
    s = wp.sin(angle)
    scale = 0.5
    if wp.abs(s) > 1.0e-6:
        scale = angle / (2.0 * s)
    return skew * scale


@wp.func
def _column(axes: wp.array2d(dtype=wp.vec3), origins: wp.array2d(dtype=wp.vec3), sliding: wp.array(dtype=int),
            row: int, c: int, tool: wp.vec3, w: float):
    """Joint c's Jacobian column (linear m per unit; angular, weighted by ``w``)."""
    a = axes[row, c]
    if sliding[c] != 0:
        return wp.spatial_vector(a, wp.vec3(0.0))
    return wp.spatial_vector(wp.cross(a, tool - origins[row, c]), a * w)


@wp.func
def _damped_step(axes: wp.array2d(dtype=wp.vec3), origins: wp.array2d(dtype=wp.vec3),
                 sliding: wp.array(dtype=int), row: int, n: int, tool: wp.vec3, w: float, err: wp.spatial_vector,
                 held: wp.array2d(dtype=int), dq: wp.array2d(dtype=float)):
    """dq[row] = J^T (J J^T + DAMPING I)^-1 err over the joints not held (a held joint's dq is 0)."""
    a = wp.spatial_matrix()
    for i in range(6):
        a[i, i] = DAMPING
    for c in range(n):
        if held[row, c] == 0:
            col = _column(axes, origins, sliding, row, c, tool, w)
            a = a + wp.outer(col, col)
    # Cholesky a = L L^T (a is symmetric positive definite: the damping), then L L^T y = err
    low = wp.spatial_matrix()
    for i in range(6):
        for j in range(i + 1):
            s = a[i, j]
            for k in range(j):
                s = s - low[i, k] * low[j, k]
            if i == j:
                low[i, i] = wp.sqrt(wp.max(s, 1.0e-20))
            else:
                low[i, j] = s / low[j, j]
    y = wp.spatial_vector()
    for i in range(6):
        s = err[i]
        for k in range(i):
            s = s - low[i, k] * y[k]
        y[i] = s / low[i, i]
    for ii in range(6):
        i = 5 - ii
        s = y[i]
        for k in range(i + 1, 6):
            s = s - low[k, i] * y[k]
        y[i] = s / low[i, i]
    for c in range(n):
        step = float(0.0)
        if held[row, c] == 0:
            step = wp.dot(_column(axes, origins, sliding, row, c, tool, w), y)
        dq[row, c] = step


@wp.kernel(enable_backward=False)
def _polish_kernel(fixed_rot: wp.array(dtype=wp.mat33), fixed_pos: wp.array(dtype=wp.vec3),
                   axis: wp.array(dtype=wp.vec3), sliding: wp.array(dtype=int), lower: wp.array(dtype=float),
                   upper: wp.array(dtype=float), target_pos: wp.array(dtype=wp.vec3),
                   target_rot: wp.array(dtype=wp.mat33), starts: wp.array2d(dtype=float), n_start: int,
                   iterations: int, pos_thr: float, rot_thr: float, stop_score: float,
                   x: wp.array2d(dtype=float), dq: wp.array2d(dtype=float), held: wp.array2d(dtype=int),
                   axes: wp.array2d(dtype=wp.vec3), origins: wp.array2d(dtype=wp.vec3),
                   best_q: wp.array2d(dtype=float), best_pos_err: wp.array(dtype=float),
                   best_rot_err: wp.array(dtype=float)):
    """Problem p: its ``n_start`` start rows of ``starts`` (rows p * n_start ...) polished in turn; the best
    score's configuration and errors go to ``best_*[p]``. A problem stops at the first iteration whose score is
    <= ``stop_score`` (negative: never; every start runs every iteration)."""
    p = wp.tid()
    n = axis.shape[0]
    w0 = pos_thr / rot_thr
    best = float(1.0e30)
    for c in range(n):
        best_q[p, c] = wp.clamp(starts[p * n_start, c], lower[c], upper[c])
    best_pos_err[p] = best
    best_rot_err[p] = best
    done = int(0)
    s = int(0)
    while s < n_start and done == 0:
        for c in range(n):
            x[p, c] = wp.clamp(starts[p * n_start + s, c], lower[c], upper[c])
        w = w0
        it = int(0)
        while it <= iterations:
            tool, rot = _chain_pose(x, p, n, fixed_rot, fixed_pos, axis, sliding, axes, origins)
            pos_err = wp.length(target_pos[p] - tool)
            rot_err = wp.acos(wp.clamp((wp.ddot(rot, target_rot[p]) - 1.0) * 0.5, -1.0, 1.0))
            score = wp.max(pos_err / pos_thr, rot_err / rot_thr)
            # balance the weights toward the verdict's max(): weigh rotation more where it is the larger of the
            # two scaled errors, less where position is (the least-squares optimum moves toward the minimax one)
            ratio = (rot_err / rot_thr) / wp.max(pos_err / pos_thr, 1.0e-9)
            w = wp.clamp(w * wp.sqrt(wp.clamp(ratio, 0.5, 2.0)), 0.01 * w0, 100.0 * w0)
            if score < best:
                best = score
                best_pos_err[p] = pos_err
                best_rot_err[p] = rot_err
                for c in range(n):
                    best_q[p, c] = x[p, c]
            if best <= stop_score:
                done = 1
            if it == iterations or done != 0:
                break
            err = wp.spatial_vector(target_pos[p] - tool,
                                    _rotation_vector(target_rot[p] @ wp.transpose(rot)) * w)
            for c in range(n):
                held[p, c] = 0
            _damped_step(axes, origins, sliding, p, n, tool, w, err, held, dq)
            any_held = int(0)
            for c in range(n):
                if (x[p, c] <= lower[c] + AT_LIMIT and dq[p, c] < 0.0) or (
                        x[p, c] >= upper[c] - AT_LIMIT and dq[p, c] > 0.0):
                    held[p, c] = 1
                    any_held = 1
            if any_held != 0:  # again without the held joints' columns: the others take up the motion
                _damped_step(axes, origins, sliding, p, n, tool, w, err, held, dq)
            for c in range(n):
                x[p, c] = wp.clamp(x[p, c] + dq[p, c], lower[c], upper[c])
            it += 1
        s += 1


class LimitPolish:
    """The polish of one chain on one device (see module docstring): its tables are built once.

    Args:
        chain: The serial chain (base frame to TCP).
        lower, upper: (C,) joint limits (rad or m), on ``device``.
        device: ``cpu`` or ``cuda:N``.
    """

    def __init__(self, chain: UrdfChain, lower: torch.Tensor, upper: torch.Tensor, device: str):
        self.device = str(device)
        folded, tail = chain.folded_transforms()
        folded = folded + [tail]
        self._fixed_rot = wp.array(np.stack([f[:3, :3] for f in folded]).astype(np.float32), dtype=wp.mat33,
                                   device=self.device)
        self._fixed_pos = wp.array(np.stack([f[:3, 3] for f in folded]).astype(np.float32), dtype=wp.vec3,
                                   device=self.device)
        self._axis = wp.array(np.array([j.axis for j in chain.movable], dtype=np.float32), dtype=wp.vec3,
                              device=self.device)
        self._sliding = wp.array(np.array([j.type == "prismatic" for j in chain.movable], dtype=np.int32),
                                 dtype=int, device=self.device)
        self._limits = (lower.to(torch.float32).contiguous(), upper.to(torch.float32).contiguous())  # kept alive
        self._lower, self._upper = (wp.from_torch(t) for t in self._limits)
        self.n_joints = len(chain.movable)

    def polish(self, pos: torch.Tensor, rot: torch.Tensor, starts: torch.Tensor, thresholds: tuple[float, float],
               iterations: int = 30, stop_score: float | None = 1.0):
        """Best configurations found from the start configurations.

        Args:
            pos: (P, 3) TCP target positions, metres, base frame.
            rot: (P, 3, 3) TCP target rotations, base frame.
            starts: (P, S, C) start configurations per problem (clamped to the limits first).
            thresholds: (position m, rotation rad) of the verdict.
            iterations: Damped least-squares iterations per start.
            stop_score: A problem stops once an iterate's verdict score (max(position error / threshold,
                rotation error / threshold)) is at most this; its result is that configuration. 1: as soon as the
                grasp is reached; less: once it is reached with a margin. None: every start runs every iteration
                and the best score is kept.

        Returns:
            ``(q, position_error_m, rotation_error_rad)`` of the best score per problem, (P, C), (P,), (P,).

        Raises:
            ValueError: shapes that do not match (P problems, at least one start each, the chain's joints).
        """
        p, s, c = starts.shape
        if c != self.n_joints or (p and s < 1) or tuple(pos.shape) != (p, 3) or tuple(rot.shape) != (p, 3, 3):
            raise ValueError(f"LimitPolish.polish: expected pos (P, 3), rot (P, 3, 3) and starts (P, S >= 1, "
                             f"{self.n_joints}) for the chain's {self.n_joints} joints; got pos {tuple(pos.shape)}, "
                             f"rot {tuple(rot.shape)}, starts {tuple(starts.shape)}")
        tdev = starts.device
        q = torch.empty(p, c, dtype=torch.float32, device=tdev)
        pos_err = torch.empty(p, dtype=torch.float32, device=tdev)
        rot_err = torch.empty(p, dtype=torch.float32, device=tdev)
        if p == 0:
            return q, pos_err, rot_err
        pos = pos.to(torch.float32).contiguous()
        rot = rot.to(torch.float32).contiguous()
        starts = starts.to(torch.float32).reshape(p * s, c).contiguous()
        # on CUDA, warp works on torch's current stream, so torch's writes and reads are ordered around it
        stream = wp.ScopedStream(wp.stream_from_torch()) if starts.is_cuda else contextlib.nullcontext()
        with stream:
            # per problem and joint: the iterate x, its step dq, the held flags, the joints' axes and origins
            scratch = [wp.empty((p, c), dtype=t, device=self.device) for t in (float, float, int, wp.vec3, wp.vec3)]
            wp.launch(_polish_kernel, dim=p, device=self.device,
                      inputs=[self._fixed_rot, self._fixed_pos, self._axis, self._sliding, self._lower, self._upper,
                              wp.from_torch(pos, dtype=wp.vec3), wp.from_torch(rot, dtype=wp.mat33),
                              wp.from_torch(starts), s, int(iterations), float(thresholds[0]), float(thresholds[1]),
                              -1.0 if stop_score is None else float(stop_score), *scratch, wp.from_torch(q),
                              wp.from_torch(pos_err), wp.from_torch(rot_err)])
        return q, pos_err, rot_err

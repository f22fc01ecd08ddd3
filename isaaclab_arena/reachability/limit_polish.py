"""Polish of near-miss IK solutions with the joint limits held exactly (batched torch, ``cpu`` or ``cuda:0``).

The LM solver of :mod:`ik_reachability` treats the joint limits as a soft objective and its result is clamped
afterwards, so near a limit the clamped configuration can miss a grasp that a configuration inside the limits
reaches. Near the reach boundary the least-squares optimum also trades position against orientation error
differently from the verdict's ``max(position / threshold, rotation / threshold)``.

:func:`polish_within_limits` runs damped least squares from given configurations where a joint at a limit
that the step would push further out is held (its Jacobian column removed, so the other joints take up the
motion), every iterate stays inside the limits, and the weight of the rotation residual is balanced per
problem toward equal scaled errors; the best verdict score seen is kept. The Jacobian is the chain's geometric
one (:meth:`ChainFK.forward_with_jacobian`). No Python loop over problems.
"""

from __future__ import annotations

import torch

from isaaclab_arena.reachability.chain_fk import ChainFK, rotation_angle_between, small_matmul

#: Damping of the least-squares step (squared metres of weighted residual).
DAMPING = 1e-4


def rotation_vector(m: torch.Tensor) -> torch.Tensor:
    """(..., 3) axis * angle (radians) of rotation matrices (..., 3, 3), for angles below pi."""
    skew = torch.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1]], -1)
    cos = ((m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2] - 1) / 2).clamp(-1.0, 1.0)
    angle = torch.acos(cos)
    sin = torch.sin(angle)
    scale = torch.where(sin.abs() > 1e-6, angle / (2 * sin.clamp(min=1e-12)), torch.full_like(angle, 0.5))
    return skew * scale[..., None]


def polish_within_limits(fk: ChainFK, pos: torch.Tensor, rot: torch.Tensor, q: torch.Tensor, lower: torch.Tensor,
                         upper: torch.Tensor, thresholds: tuple[float, float], iterations: int = 30,
                         rows_per_problem: int | None = None):
    """Best configurations found from ``q`` for the targets.

    Args:
        fk: Forward kinematics of the chain (base frame).
        pos: (M, 3) TCP target positions, metres, base frame.
        rot: (M, 3, 3) TCP target rotations, base frame.
        q: (M, C) start configurations inside the limits.
        lower, upper: (C,) joint limits.
        thresholds: (position m, rotation rad) of the verdict.
        iterations: Damped least-squares iterations.
        rows_per_problem: With rows in groups of this many consecutive rows per problem (its start
            configurations), a problem's rows stop once one of them reaches the verdict (score <= 1); their
            results are the best seen until then. None: every row runs every iteration.

    Returns:
        ``(q, position_error_m, rotation_error_rad)`` of the best score per problem, (M, C), (M,), (M,).
    """
    n = q.shape[0]
    dev, dt = q.device, q.dtype
    # the rotation residual's weight starts verdict-balanced (position / rotation threshold), then moves per problem
    w = torch.full((n,), thresholds[0] / thresholds[1], dtype=dt, device=dev)
    w_lo, w_hi = 0.01 * thresholds[0] / thresholds[1], 100.0 * thresholds[0] / thresholds[1]
    x = torch.maximum(torch.minimum(q, upper), lower)
    damp = torch.eye(6, dtype=dt, device=dev) * DAMPING
    best_score = torch.full((n,), float("inf"), dtype=dt, device=dev)
    best_q, best_p, best_r = x.clone(), best_score.clone(), best_score.clone()
    active = torch.arange(n, device=dev)  # rows still iterating; x, w, pos, rot hold only those rows
    for it in range(iterations + 1):
        p, r, jac = fk.forward_with_jacobian(x)
        pos_err = (pos - p).norm(dim=-1)
        rot_err = rotation_angle_between(r, rot)
        score = torch.maximum(pos_err / thresholds[0], rot_err / thresholds[1])
        # balance the weights toward the verdict's max(): weigh rotation more where it is the larger of the two
        # scaled errors, less where position is (the least-squares optimum then moves toward the minimax one)
        ratio = (rot_err / thresholds[1]) / (pos_err / thresholds[0]).clamp(min=1e-9)
        w = (w * ratio.clamp(0.5, 2.0).sqrt()).clamp(w_lo, w_hi)
        better = score < best_score[active]
        up = active[better]
        best_score[up], best_q[up], best_p[up], best_r[up] = score[better], x[better], pos_err[better], rot_err[better]
        if it == iterations:
            break
        if rows_per_problem and bool((score <= 1).any()):  # drop the rows of problems now reached
            reached = (best_score <= 1).reshape(-1, rows_per_problem).any(-1).repeat_interleave(rows_per_problem)
            keep = ~reached[active]
            active = active[keep]
            x, w, pos, rot, p, r, jac = x[keep], w[keep], pos[keep], rot[keep], p[keep], r[keep], jac[keep]
            if not active.numel():
                break
        jac = torch.cat([jac[:, :3], jac[:, 3:] * w[:, None, None]], 1)  # (n, 6, C)
        err = torch.cat([pos - p, rotation_vector(small_matmul(rot, r.transpose(-1, -2))) * w[:, None]], -1)  # (n, 6)

        def step(j):
            jt = j.transpose(1, 2)
            return small_matmul(jt, torch.linalg.solve(small_matmul(j, jt) + damp, err[..., None]))[..., 0]

        dq = step(jac)
        held = ((x <= lower + 1e-7) & (dq < 0)) | ((x >= upper - 1e-7) & (dq > 0))
        dq = torch.where(held.any(-1, keepdim=True), step(jac * ~held[:, None, :]), dq)
        x = torch.maximum(torch.minimum(x + dq, upper), lower)
    return best_q, best_p, best_r

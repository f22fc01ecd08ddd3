"""The per-candidate projected-Adam loop (the RelationSolver stage)."""

from __future__ import annotations

import warp as wp

from isaaclab_arena.relations.kernels.solve import HISTORY_EVERY, SolveSettings, face_to_update, penalties, project
from isaaclab_arena.relations.kernels.tables import KIND_FACE_TO, OI_ORDER, CandidateState, SceneTables, SolveOutputs


@wp.kernel(enable_backward=False)
def iterate_kernel(T: SceneTables, S: CandidateState, P: SolveSettings, env_ids: wp.array(dtype=wp.int64),
                   draw_ids: wp.array(dtype=wp.int64), O: SolveOutputs):
    """Projected Adam on candidate b until its own exit test passes (RelationSolver).

    Exit tests, in order, each iteration: every penalised violation <= 0 at the solver's thresholds
    (clearance included); the penalty loss below ``P.conv_loss`` (convergence_threshold) AND every
    penalised violation <= 0 at the checks' thresholds; at a checkpoint, the checks' thresholds alone.
    With ``P.history_slots`` > 0, slot k of ``O.history`` gets the positions after 10 k iterations."""
    b = wp.tid()
    n = T.n_mov
    if O.iters[b] < 0:  # penalty-free initial candidate of an init_exact scene: nothing to solve
        O.iters[b] = 0
        if P.history_slots > 0:
            for i in range(n):
                O.history[b, 0, i] = S.x[b, i]
        return
    e = int(env_ids[b])
    zero = wp.vec3(0.0)
    has_face = T.kind_start[KIND_FACE_TO + 1] > T.kind_start[KIND_FACE_TO]
    # ---- projected Adam, per-candidate early exit (RelationSolver)
    it = int(0)
    cp = int(0)
    b1t = float(1.0)
    b2t = float(1.0)
    while it < P.max_iters:
        if has_face:
            face_to_update(T, S, b, e)
        for i in range(n):
            S.g[b, i] = zero
        vmax, ploss = penalties(T, S, b, e, 0, P.margin, 1)
        if P.history_slots > 0:
            if it % HISTORY_EVERY == 0:
                for i in range(n):
                    O.history[b, it // HISTORY_EVERY, i] = S.x[b, i]
        if vmax <= 0.0:
            break
        # the checks' thresholds are tested when the penalty loss is below convergence_threshold (a low
        # loss alone never stops a candidate the checks would reject) and at each checkpoint
        check = ploss < P.conv_loss
        if cp < P.n_checkpoints:
            if it >= P.checkpoints[cp]:
                cp += 1
                check = True
        if check:
            vc, lc = penalties(T, S, b, e, 1, 0.0, 0)
            if vc <= 0.0:
                break
        it += 1
        b1t = b1t * P.beta1
        b2t = b2t * P.beta2
        lr_t = P.lr * wp.sqrt(1.0 - b2t) / (1.0 - b1t)
        for i in range(n):
            g = S.g[b, i]
            m = P.beta1 * S.m[b, i] + (1.0 - P.beta1) * g
            v = P.beta2 * S.v[b, i] + (1.0 - P.beta2) * wp.cw_mul(g, g)
            S.m[b, i] = m
            S.v[b, i] = v
            step = wp.vec3(m[0] / (wp.sqrt(v[0]) + P.eps), m[1] / (wp.sqrt(v[1]) + P.eps),
                           m[2] / (wp.sqrt(v[2]) + P.eps))
            S.x[b, i] = S.x[b, i] - lr_t * step
        for k in range(n):
            project(T, S, b, e, T.obj_i[k][OI_ORDER], 0)

    if P.history_slots > 0:  # the state at the cap (a stop on a multiple of 10 was written above)
        if it % HISTORY_EVERY == 0:
            for i in range(n):
                O.history[b, it // HISTORY_EVERY, i] = S.x[b, i]
    O.iters[b] = it

"""Initial candidates (the PlacementCandidateGenerator stage), one thread per candidate.

Each solve kernel lives in a module of its own, so that each compiled module holds its own copy of
the helper functions with few call sites (the CPU compiler then inlines them).
"""

from __future__ import annotations

import warp as wp

from isaaclab_arena.relations.kernels.geometry import BIG, PI, candidate_rng, yaw_quat
from isaaclab_arena.relations.kernels.solve import (
    SolveSettings,
    clutter_raise,
    face_to_update,
    placed_penetration,
    placed_relation_penalty,
    project,
    repair_shift,
    solver_offsets,
)
from isaaclab_arena.relations.kernels.tables import (
    FLAG_MOVABLE_PARENT,
    FLAG_PENALISED,
    FLAG_ROTATED,
    OI_CLUTTER,
    OI_FLAGS,
    OI_ORDER,
    OI_RANDOM,
    OI_RANK,
    OI_SUPPORT,
    OI_YAW,
    CandidateState,
    SceneTables,
)
from isaaclab_arena.relations.kernels.violations import obj_bounds


@wp.kernel(enable_backward=False)
def init_kernel(T: SceneTables, S: CandidateState, P: SolveSettings, env_ids: wp.array(dtype=wp.int64),
                 draw_ids: wp.array(dtype=wp.int64), rel_excess: wp.array2d(dtype=float),
                 rel_cause: wp.array2d(dtype=int), checks: wp.array2d(dtype=wp.bool), ov_pair: wp.array(dtype=int),
                 ov_depth: wp.array(dtype=float), loss_out: wp.array(dtype=float), iters_out: wp.array(dtype=int),
                 counts: wp.array2d(dtype=int), passed: wp.array(dtype=wp.bool), pending: wp.array(dtype=int)):
    """Initial candidate b (PlacementCandidateGenerator)."""
    b = wp.tid()
    e = int(env_ids[b])
    st = candidate_rng(P.seed, e, int(draw_ids[b]))
    n = T.n_mov
    zero = wp.vec3(0.0)
    # ---- initial candidate (PlacementCandidateGenerator): rotations, then On-tree positions
    for i in range(n):
        of = T.obj_f[i]
        q = wp.quat(of[0], of[1], of[2], of[3])
        if T.obj_i[i][OI_YAW] == 1:
            q = yaw_quat(wp.randf(st, -PI, PI)) * q
        S.rot[b, i] = q
        if (T.obj_i[i][OI_FLAGS] & FLAG_ROTATED) != 0:
            lo, hi = solver_offsets(q, T.local_lo[e, i], T.local_hi[e, i], T.obj_f[i], T.obj_i[i][OI_RANDOM])
            S.olo[b, i] = lo
            S.ohi[b, i] = hi
        else:
            S.olo[b, i] = T.local_lo[e, i]
            S.ohi[b, i] = T.local_hi[e, i]
        slo, shi = obj_bounds(T, S, b, e, T.obj_i[i][OI_SUPPORT])
        S.x[b, i] = 0.5 * (slo + shi)
    clean = int(T.init_exact)
    for k in range(n):
        i = T.obj_i[k][OI_ORDER]
        oi = T.obj_i[i]
        rank_i = oi[OI_RANK]
        cl = oi[OI_CLUTTER]
        best = S.x[b, i]
        best_rot = S.rot[b, i]
        best_pen = float(BIG)
        for t in range(P.init_tries):
            slo, shi = obj_bounds(T, S, b, e, oi[OI_SUPPORT])
            if cl >= 0:
                c = 0.5 * (slo + shi)
                h = 0.5 * T.rel_f[cl][0] * (shi - slo)
                slo = c - h
                shi = c + h
            olo = S.olo[b, i]
            ohi = S.ohi[b, i]
            p = wp.vec3(0.0, 0.0, shi[2] - olo[2])
            for a in range(2):
                lo_c = slo[a] + 0.5 * (ohi[a] - olo[a])
                hi_c = shi[a] - 0.5 * (ohi[a] - olo[a])
                cc = 0.5 * (lo_c + hi_c)
                if lo_c < hi_c:
                    cc = wp.randf(st, lo_c, hi_c)
                p[a] = cc - 0.5 * (olo[a] + ohi[a])
            S.x[b, i] = p
            if oi[OI_YAW] == 2:
                face_to_update(T, S, b, e)
            # one projection call site (so it inlines): i, then a repaired parent, then i again
            target = i
            for step in range(3):
                project(T, S, b, e, target, 1)
                if step == 0:
                    if (oi[OI_FLAGS] & FLAG_MOVABLE_PARENT) == 0:
                        break
                    target = repair_shift(T, S, b, e, i)
                    if target < 0:
                        break
                else:
                    target = i
            if cl >= 0:
                clutter_raise(T, S, b, e, i, rank_i, T.rel_f[cl][2])
            pen = placed_penetration(T, S, b, e, i, rank_i)
            if (oi[OI_FLAGS] & FLAG_PENALISED) != 0:
                pen += placed_relation_penalty(T, S, b, e, i, rank_i)
            if pen < best_pen:
                best_pen = pen
                best = S.x[b, i]
                best_rot = S.rot[b, i]
            if pen <= 0.0:
                break
        if best_pen > 0.0:
            clean = 0
        S.x[b, i] = best
        if oi[OI_YAW] == 2:
            S.rot[b, i] = best_rot
            lo, hi = solver_offsets(best_rot, T.local_lo[e, i], T.local_hi[e, i], T.obj_f[i], oi[OI_RANDOM])
            S.olo[b, i] = lo
            S.ohi[b, i] = hi
    iters_out[b] = -clean
    if clean == 0:
        wp.atomic_add(pending, 0, 1)
    for i in range(n):
        S.m[b, i] = zero
        S.v[b, i] = zero

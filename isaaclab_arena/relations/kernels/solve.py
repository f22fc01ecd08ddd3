"""The fused per-candidate kernel: initial sampling, projected Adam with its own early exit, FaceTo
headings and pose modifiers, final loss. One thread owns one candidate for the whole solve, so a
candidate that is already valid costs almost nothing and a stuck one costs only its own thread.

Interval-shaped relations (On, ClutterOn, NextTo, AlignWith, AtPosition, PositionLimitsBox) are
enforced exactly by projecting each object's origin onto the intersection of its per-axis intervals
(parents first); overlap, NotNextTo keep-outs and cylindrical limits are penalties whose slopes come
from the loss strategies. Positions are env-local metres, rotations xyzw.
"""

from __future__ import annotations

import warp as wp

from isaaclab_arena.relations.kernels.evaluate import evaluate_candidate
from isaaclab_arena.relations.kernels.geometry import (
    BIG,
    PI,
    box_overlaps,
    candidate_rng,
    rotated_offsets,
    rpy_quat,
    unit,
    vmin3,
    yaw_quat,
)
from isaaclab_arena.relations.kernels.tables import (
    KIND_ALIGN,
    KIND_AT,
    KIND_CLUTTER,
    KIND_LIMITS,
    KIND_NEXT_TO,
    KIND_ON,
    CandidateState,
    SceneTables,
)
from isaaclab_arena.relations.kernels.violations import (
    align_interval,
    clutter_interval,
    cylinder_raw,
    next_to_interval,
    not_next_to_raw,
    obj_bounds,
    on_interval,
)


@wp.struct
class SolveSettings:
    seed: int
    do_init: int
    init_tries: int
    max_iters: int
    lr: float
    beta1: float
    beta2: float
    eps: float
    margin: float
    do_post: int
    checkpoints: wp.array(dtype=int)
    n_checkpoints: int


@wp.func
def refresh_offsets(T: SceneTables, S: CandidateState, b: int, e: int, i: int):
    lo, hi = rotated_offsets(S.rot[b, i], T.local_lo[e, i], T.local_hi[e, i])
    S.olo[b, i] = lo
    S.ohi[b, i] = hi


@wp.func
def project(T: SceneTables, S: CandidateState, b: int, e: int, i: int, at_ratio: int):
    """Moves object i's origin onto the intersection of its relation intervals (highest priority
    interval alone where they conflict on an axis)."""
    olo = S.olo[b, i]
    ohi = S.ohi[b, i]
    big_lo = wp.vec3(-BIG)
    big_hi = wp.vec3(BIG)
    lo_all = big_lo
    hi_all = big_hi
    lo_pri = big_lo
    hi_pri = big_hi
    for k in range(T.proj_start[i], T.proj_start[i + 1]):
        kind = T.proj_kind[k]
        r = T.proj_row[k]
        lo = big_lo
        hi = big_hi
        if kind == KIND_ON:
            plo, phi = obj_bounds(T, S, b, e, T.on_parent[r])
            lo, hi = on_interval(olo, ohi, plo, phi, T.on_clear[r], T.on_margin[r], T.on_overlap[r])
        elif kind == KIND_CLUTTER:
            plo, phi = obj_bounds(T, S, b, e, T.cl_parent[r])
            lo, hi = clutter_interval(olo, ohi, plo, phi, T.cl_spread[r], T.cl_clear[r], T.cl_margin[r])
        elif kind == KIND_NEXT_TO:
            plo, phi = obj_bounds(T, S, b, e, T.nt_parent[r])
            lo, hi = next_to_interval(olo, ohi, plo, phi, T.nt_axis[r], T.nt_sign[r], T.nt_dist[r], T.nt_tol[r],
                                      T.nt_ratio[r], T.nt_has_ratio[r], at_ratio)
        elif kind == KIND_ALIGN:
            plo, phi = obj_bounds(T, S, b, e, T.al_parent[r])
            lo, hi = align_interval(olo, ohi, plo, phi, T.al_axis[r], T.al_off[r], T.al_tol[r])
        elif kind == KIND_AT:
            mask = T.at_mask[r]
            val = T.at_val[r]
            for a in range(3):
                if mask[a] > 0.0:
                    lo[a] = val[a]
                    hi[a] = val[a]
        elif kind == KIND_LIMITS:
            lo = T.lb_lo[r]
            hi = T.lb_hi[r]
        for a in range(3):
            if lo[a] > -BIG or hi[a] < BIG:
                lo_all[a] = wp.max(lo_all[a], lo[a])
                hi_all[a] = wp.min(hi_all[a], hi[a])
                lo_pri[a] = lo[a]
                hi_pri[a] = hi[a]
    p = S.x[b, i]
    for a in range(3):
        if lo_all[a] <= hi_all[a]:
            p[a] = wp.clamp(p[a], lo_all[a], hi_all[a])
        elif lo_pri[a] <= hi_pri[a]:
            p[a] = wp.clamp(p[a], lo_pri[a], hi_pri[a])
        else:
            p[a] = 0.5 * (lo_pri[a] + hi_pri[a])
    S.x[b, i] = p


@wp.func
def face_to_update(T: SceneTables, S: CandidateState, b: int, e: int):
    """Heading of every FaceTo subject: local +X toward the target's XY centre; bounds refit."""
    for r in range(T.n_ft):
        i = T.ft_child[r]
        tlo, thi = obj_bounds(T, S, b, e, T.ft_target[r])
        p = S.x[b, i]
        dx = 0.5 * (tlo[0] + thi[0]) - p[0]
        dy = 0.5 * (tlo[1] + thi[1]) - p[1]
        if dx * dx + dy * dy > 1.0e-12:
            S.rot[b, i] = yaw_quat(wp.atan2(dy, dx))
            refresh_offsets(T, S, b, e, i)


@wp.func
def penalties(T: SceneTables, S: CandidateState, b: int, e: int, check_level: int, margin: float,
              accumulate: int) -> float:
    """Largest violation of the penalised terms (<= 0: all satisfied). With ``accumulate`` adds the
    penalty gradients to S.g. ``check_level`` uses the checks' thresholds (no pair clearance, NotNextTo
    tolerance) instead of the solver's."""
    vmax = float(-BIG)
    for k in range(T.n_pairs):
        i = T.pr_i[k]
        j = T.pr_j[k]
        lo_i, hi_i = obj_bounds(T, S, b, e, i)
        lo_j, hi_j = obj_bounds(T, S, b, e, j)
        c = T.pr_clear[k]
        if check_level != 0:
            c = 0.0
        o = box_overlaps(lo_i, hi_i, lo_j, hi_j, c)
        d = vmin3(o)
        vmax = wp.max(vmax, d)
        if accumulate != 0 and d + margin > 0.0:
            axes = T.pr_axes[k]
            best = float(BIG)
            kk = int(0)
            for a in range(3):
                if axes[a] > 0.0 and o[a] < best:
                    best = o[a]
                    kk = a
            s = (lo_i[kk] + hi_i[kk]) - (lo_j[kk] + hi_j[kk])
            sg = float(1.0)
            if s < 0.0:
                sg = -1.0
            push = unit(kk) * (T.pair_w * sg)
            S.g[b, i] = S.g[b, i] - push
            if j < T.n_mov:
                S.g[b, j] = S.g[b, j] + push
    for r in range(T.n_nn):
        ci = T.nn_child[r]
        pi = T.nn_parent[r]
        clo, chi = obj_bounds(T, S, b, e, ci)
        plo, phi = obj_bounds(T, S, b, e, pi)
        depth, grad = not_next_to_raw(clo, chi, plo, phi, T.nn_axis[r], T.nn_sign[r], T.nn_margin[r])
        lim = float(0.0)
        if check_level != 0:
            lim = T.nn_tol[r]
        vmax = wp.max(vmax, depth - lim)
        if accumulate != 0 and depth + margin > 0.0:
            S.g[b, ci] = S.g[b, ci] + T.nn_w[r] * grad
            if pi < T.n_mov:
                S.g[b, pi] = S.g[b, pi] - T.nn_w[r] * grad
    for r in range(T.n_cy):
        ci = T.cy_child[r]
        depth, grad, cause = cylinder_raw(S.x[b, ci], T.cy_center[r], T.cy_rmin[r], T.cy_rmax[r])
        vmax = wp.max(vmax, depth)
        if accumulate != 0 and depth + margin > 0.0:
            S.g[b, ci] = S.g[b, ci] + T.cy_w[r] * grad
    return vmax


@wp.func
def placed_penetration(T: SceneTables, S: CandidateState, b: int, e: int, i: int, rank_i: int,
                       rank: wp.array(dtype=int), adj_start: wp.array(dtype=int), adj_pair: wp.array(dtype=int)) -> float:
    """Sum of clearance-grown penetrations of object i with fixed objects and earlier-placed movables."""
    total = float(0.0)
    lo_i, hi_i = obj_bounds(T, S, b, e, i)
    for q in range(adj_start[i], adj_start[i + 1]):
        k = adj_pair[q]
        j = T.pr_i[k]
        if j == i:
            j = T.pr_j[k]
        if j >= T.n_mov or rank[j] < rank_i:
            lo_j, hi_j = obj_bounds(T, S, b, e, j)
            total += wp.max(vmin3(box_overlaps(lo_i, hi_i, lo_j, hi_j, T.pr_clear[k])), 0.0)
    return total


@wp.func
def clutter_raise(T: SceneTables, S: CandidateState, b: int, e: int, i: int, rank_i: int,
                  rank: wp.array(dtype=int), adj_start: wp.array(dtype=int), adj_pair: wp.array(dtype=int)):
    """Lifts a ClutterOn release above every earlier-placed footprint it overlaps (gap_m grown)."""
    r = T.clutter[i]
    gap = T.cl_gap[r]
    lo_i, hi_i = obj_bounds(T, S, b, e, i)
    bottom = lo_i[2]
    for q in range(adj_start[i], adj_start[i + 1]):
        k = adj_pair[q]
        j = T.pr_i[k]
        if j == i:
            j = T.pr_j[k]
        if j >= T.n_mov or rank[j] < rank_i:
            lo_j, hi_j = obj_bounds(T, S, b, e, j)
            o = box_overlaps(lo_i, hi_i, lo_j, hi_j, gap)
            if o[0] > 0.0 and o[1] > 0.0:
                bottom = wp.max(bottom, hi_j[2] + gap)
    p = S.x[b, i]
    p[2] = p[2] + (bottom - lo_i[2])
    S.x[b, i] = p


@wp.kernel(enable_backward=False)
def solve_kernel(T: SceneTables, S: CandidateState, P: SolveSettings, env_ids: wp.array(dtype=wp.int64),
                 draw_ids: wp.array(dtype=wp.int64), rank: wp.array(dtype=int), adj_start: wp.array(dtype=int),
                 adj_pair: wp.array(dtype=int), dummy_f2: wp.array2d(dtype=float), dummy_i2: wp.array2d(dtype=int),
                 dummy_i: wp.array(dtype=int), dummy_f: wp.array(dtype=float), loss_out: wp.array(dtype=float),
                 iters_out: wp.array(dtype=int)):
    b = wp.tid()
    e = int(env_ids[b])
    st = candidate_rng(P.seed, e, int(draw_ids[b]))
    n = T.n_mov
    zero = wp.vec3(0.0)

    # ---- initial candidate (PlacementCandidateGenerator): rotations, then On-tree positions
    if P.do_init != 0:
        for i in range(n):
            q = T.base_rot[i]
            if T.yaw_mode[i] == 1:
                q = yaw_quat(wp.randf(st, -PI, PI)) * q
            S.rot[b, i] = q
            refresh_offsets(T, S, b, e, i)
            slo, shi = obj_bounds(T, S, b, e, T.init_support[i])
            S.x[b, i] = 0.5 * (slo + shi)
        for oi in range(n):
            i = T.order[oi]
            best = S.x[b, i]
            best_rot = S.rot[b, i]
            best_pen = float(BIG)
            for t in range(P.init_tries):
                slo, shi = obj_bounds(T, S, b, e, T.init_support[i])
                if T.clutter[i] >= 0:
                    r = T.clutter[i]
                    c = 0.5 * (slo + shi)
                    h = 0.5 * T.cl_spread[r] * (shi - slo)
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
                if T.yaw_mode[i] == 2:
                    face_to_update(T, S, b, e)
                project(T, S, b, e, i, 1)
                if T.clutter[i] >= 0:
                    clutter_raise(T, S, b, e, i, oi, rank, adj_start, adj_pair)
                pen = placed_penetration(T, S, b, e, i, oi, rank, adj_start, adj_pair)
                if pen < best_pen:
                    best_pen = pen
                    best = S.x[b, i]
                    best_rot = S.rot[b, i]
                if pen <= 0.0:
                    break
            S.x[b, i] = best
            S.rot[b, i] = best_rot
            refresh_offsets(T, S, b, e, i)
    else:
        for i in range(n):
            refresh_offsets(T, S, b, e, i)
    for i in range(n):
        S.m[b, i] = zero
        S.v[b, i] = zero

    # ---- projected Adam, per-candidate early exit (RelationSolver)
    it = int(0)
    cp = int(0)
    b1t = float(1.0)
    b2t = float(1.0)
    while it < P.max_iters:
        face_to_update(T, S, b, e)
        for i in range(n):
            S.g[b, i] = zero
        vmax = penalties(T, S, b, e, 0, P.margin, 1)
        if vmax <= 0.0:
            break
        if cp < P.n_checkpoints:
            if it >= P.checkpoints[cp]:
                cp += 1
                if penalties(T, S, b, e, 1, 0.0, 0) <= 0.0:
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
        for oi in range(n):
            project(T, S, b, e, T.order[oi], 0)

    # ---- after solving: FaceTo headings, RandomAroundSolution (RotateAroundSolution is the base rotation)
    if P.do_post != 0:
        face_to_update(T, S, b, e)
        for i in range(n):
            if T.ra_on[i] != 0:
                hp = T.ra_pos[i]
                hr = T.ra_rot[i]
                d = wp.vec3(wp.randf(st, -1.0, 1.0) * hp[0], wp.randf(st, -1.0, 1.0) * hp[1],
                            wp.randf(st, -1.0, 1.0) * hp[2])
                S.x[b, i] = S.x[b, i] + d
                dq = rpy_quat(wp.randf(st, -1.0, 1.0) * hr[0], wp.randf(st, -1.0, 1.0) * hr[1],
                              wp.randf(st, -1.0, 1.0) * hr[2])
                S.rot[b, i] = wp.normalize(dq * S.rot[b, i])
                refresh_offsets(T, S, b, e, i)
    loss_out[b] = evaluate_candidate(T, S, b, e, 0, dummy_f2, dummy_i2, dummy_i2, dummy_i, dummy_f)
    iters_out[b] = it

"""Device functions of the per-candidate solve (kernels in solve_init / solve_iterate / solve_finalize):
initial sampling, projected Adam with its own early exit, FaceTo
headings and pose modifiers, final loss. One thread owns one candidate for the whole solve, so a
candidate that is already valid costs almost nothing and a stuck one costs only its own thread.

Interval-shaped relations (On, ClutterOn, NextTo, AlignWith, AtPosition, PositionLimitsBox) are
enforced exactly by projecting each object's origin onto the intersection of its per-axis intervals
(parents first); overlap, NotNextTo keep-outs and cylindrical limits are penalties whose slopes come
from the loss strategies. Positions are env-local metres, rotations xyzw.
"""

from __future__ import annotations

import warp as wp

from isaaclab_arena.relations.kernels.geometry import (
    BIG,
    box_overlaps,
    candidate_rng,
    rotated_offsets,
    unit,
    vmin3,
    yaw_quat,
)
from isaaclab_arena.relations.kernels.tables import (
    KIND_CYLINDER,
    KIND_FACE_TO,
    KIND_NOT_NEXT_TO,
    KIND_ON,
    OI_ADJ0,
    OI_CLUTTER,
    OI_ADJ1,
    OI_PROJ0,
    OI_PROJ1,
    OI_RANDOM,
    OI_RANK,
    OI_SUPPORT,
    RF_W,
    CandidateState,
    SceneTables,
    vec10f,
)
from isaaclab_arena.relations.kernels.violations import (
    clutter_footprint,
    cylinder_raw,
    not_next_to_raw,
    obj_bounds,
    relation_interval,
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
    write_checks: int
    slot_mode: wp.array(dtype=int)
    checkpoints: wp.array(dtype=int)
    n_checkpoints: int
    conv_loss: float  # convergence_threshold: penalty-loss stop (guarded by the checks' thresholds)
    history_slots: int  # 0: no position history; else snapshots every HISTORY_EVERY iterations


HISTORY_EVERY = wp.constant(10)  # iterations between position-history snapshots


@wp.func
def project(T: SceneTables, S: CandidateState, b: int, e: int, i: int, at_ratio: int):
    """Moves object i's origin onto the intersection of its relation intervals (the highest-priority
    interval alone where they conflict on an axis)."""
    olo = S.olo[b, i]
    ohi = S.ohi[b, i]
    lo_all = wp.vec3(-BIG)
    hi_all = wp.vec3(BIG)
    lo_pri = wp.vec3(-BIG)
    hi_pri = wp.vec3(BIG)
    oi = T.obj_i[i]
    for k in range(oi[OI_PROJ0], oi[OI_PROJ1]):
        r = T.proj[k]
        ri = T.rel_i[r]
        plo, phi = obj_bounds(T, S, b, e, wp.max(ri[2], 0))
        lo, hi = relation_interval(ri[0], ri[3], ri[4], T.rel_f[r], olo, ohi, plo, phi, at_ratio)
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
            lo_all[a] = lo_pri[a]
            hi_all[a] = hi_pri[a]
        else:
            p[a] = 0.5 * (lo_pri[a] + hi_pri[a])
            lo_all[a] = p[a]
            hi_all[a] = p[a]
    S.x[b, i] = p
    S.ilo[b, i] = lo_all
    S.ihi[b, i] = hi_all


@wp.func
def can_move(T: SceneTables, S: CandidateState, b: int, k: int, a: int, direction: float) -> bool:
    """Whether object k may move along axis a in ``direction`` without leaving its projection interval."""
    if k >= T.n_mov:
        return False
    x = S.x[b, k][a]
    if direction > 0.0:
        return x < S.ihi[b, k][a] - 1.0e-6
    return x > S.ilo[b, k][a] + 1.0e-6


@wp.func
def carrier(T: SceneTables, S: CandidateState, b: int, k: int, other: int, a: int, direction: float) -> int:
    """The object that moves movable object k along axis a in ``direction``: k itself when its projection
    interval lets it, else the first movable parent of its projected relations (other than ``other``)
    that can (e.g. a NextTo subject pinned beside its parent is carried by that parent); -1 if none."""
    if can_move(T, S, b, k, a, direction):
        return k
    if k >= T.n_mov:
        return -1
    oi = T.obj_i[k]
    found = int(-1)
    for q in range(oi[OI_PROJ0], oi[OI_PROJ1]):
        p = T.rel_i[T.proj[q]][2]
        if found < 0 and p >= 0 and p < T.n_mov and p != other:
            if can_move(T, S, b, p, a, direction):
                found = p
    return found


@wp.func
def solver_offsets(q: wp.quat, llo: wp.vec3, lhi: wp.vec3, of: vec10f, random_on: int):
    """Bounds the solver uses: the rotated box, grown to cover every pose RandomAroundSolution may
    later draw (position half ranges; for rotation ranges the circumscribed circle, or sphere when
    roll/pitch vary), so a solved layout stays valid after the modifier."""
    lo, hi = rotated_offsets(q, llo, lhi)
    if random_on != 0:
        c = 0.5 * (lo + hi)
        h = 0.5 * (hi - lo)
        if of[7] > 0.0 or of[8] > 0.0:
            r = wp.length(h)
            h = wp.vec3(r, r, r)
        elif of[9] > 0.0:
            r = wp.sqrt(h[0] * h[0] + h[1] * h[1])
            h = wp.vec3(r, r, h[2])
        h = h + wp.vec3(of[4], of[5], of[6])
        lo = c - h
        hi = c + h
    return lo, hi


@wp.func
def face_to_update(T: SceneTables, S: CandidateState, b: int, e: int):
    """Heading of every FaceTo subject: local +X toward the target's XY centre; bounds refit."""
    for r in range(T.kind_start[KIND_FACE_TO], T.kind_start[KIND_FACE_TO + 1]):
        ri = T.rel_i[r]
        i = ri[1]
        tlo, thi = obj_bounds(T, S, b, e, ri[2])
        p = S.x[b, i]
        dx = 0.5 * (tlo[0] + thi[0]) - p[0]
        dy = 0.5 * (tlo[1] + thi[1]) - p[1]
        if dx * dx + dy * dy > 1.0e-12:
            q = yaw_quat(wp.atan2(dy, dx))
            S.rot[b, i] = q
            lo, hi = solver_offsets(q, T.local_lo[e, i], T.local_hi[e, i], T.obj_f[i], T.obj_i[i][OI_RANDOM])
            S.olo[b, i] = lo
            S.ohi[b, i] = hi


@wp.func
def not_next_to_push(T: SceneTables, S: CandidateState, b: int, ci: int, pi: int, clo: wp.vec3, chi: wp.vec3,
                     plo: wp.vec3, phi: wp.vec3, axis: int, sign: float, margin: float) -> wp.vec3:
    """Gradient direction of a NotNextTo keep-out depth: the shallowest way out (back past the side
    face, or out of either lateral edge of the grown footprint) that the subject or parent can move."""
    c = 1 - axis
    if sign > 0.0:
        past = chi[axis] - phi[axis]
    else:
        past = plo[axis] - clo[axis]
    lat1 = chi[c] - (plo[c] - margin)
    lat2 = (phi[c] + margin) - clo[c]
    best = float(BIG)
    grad = wp.vec3(0.0)
    if past < best and (can_move(T, S, b, ci, axis, -sign) or can_move(T, S, b, pi, axis, sign)):
        best = past
        grad = unit(axis) * sign
    if lat1 < best and (can_move(T, S, b, ci, c, -1.0) or can_move(T, S, b, pi, c, 1.0)):
        best = lat1
        grad = unit(c)
    if lat2 < best and (can_move(T, S, b, ci, c, 1.0) or can_move(T, S, b, pi, c, -1.0)):
        best = lat2
        grad = -unit(c)
    if best >= BIG:
        d, g0 = not_next_to_raw(clo, chi, plo, phi, axis, sign, margin)
        grad = g0
    return grad


@wp.func
def penalties(T: SceneTables, S: CandidateState, b: int, e: int, check_level: int, margin: float,
              accumulate: int):
    """(largest violation of the penalised terms in metres (<= 0: all satisfied), penalty loss: the sum of
    slope x weight x positive violation over those terms). With ``accumulate`` adds the penalty gradients
    to S.g. ``check_level`` uses the checks' thresholds (no pair clearance, NotNextTo tolerance) instead
    of the solver's."""
    vmax = float(-BIG)
    loss = float(0.0)
    for k in range(T.n_pairs):
        ij = T.pair_i[k]
        pf = T.pair_f[k]
        i = ij[0]
        j = ij[1]
        lo_i, hi_i = obj_bounds(T, S, b, e, i)
        lo_j, hi_j = obj_bounds(T, S, b, e, j)
        c = pf[0]
        if check_level != 0:
            c = 0.0
        o = box_overlaps(lo_i, hi_i, lo_j, hi_j, c)
        d = vmin3(o)
        vmax = wp.max(vmax, d)
        loss += T.pair_w * wp.max(d, 0.0)
        if accumulate != 0 and d + margin > 0.0:
            # push along the least-overlapping allowed axis on which one of the two can still move
            # apart (else the least-overlapping allowed axis)
            best_free = float(BIG)
            best_any = float(BIG)
            k_free = int(-1)
            k_any = int(-1)
            s_free = float(1.0)
            s_any = float(1.0)
            for a in range(3):
                if pf[1 + a] > 0.0:
                    sa = float(1.0)
                    if (lo_i[a] + hi_i[a]) - (lo_j[a] + hi_j[a]) < 0.0:
                        sa = -1.0
                    if o[a] < best_any:
                        best_any = o[a]
                        k_any = a
                        s_any = sa
                    if o[a] < best_free and (carrier(T, S, b, i, j, a, sa) >= 0 or carrier(T, S, b, j, i, a, -sa) >= 0):
                        best_free = o[a]
                        k_free = a
                        s_free = sa
            kk = k_any
            sg = s_any
            if k_free >= 0:
                kk = k_free
                sg = s_free
            push = unit(kk) * (T.pair_w * sg)
            # an object that cannot move that way itself passes the push to the parent that carries it
            ci = carrier(T, S, b, i, j, kk, sg)
            if ci < 0:
                ci = i
            S.g[b, ci] = S.g[b, ci] - push
            if j < T.n_mov:
                cj = carrier(T, S, b, j, i, kk, -sg)
                if cj < 0:
                    cj = j
                S.g[b, cj] = S.g[b, cj] + push
    for r in range(T.kind_start[KIND_NOT_NEXT_TO], T.kind_start[KIND_NOT_NEXT_TO + 1]):
        ri = T.rel_i[r]
        f = T.rel_f[r]
        ci = ri[1]
        pi = ri[2]
        clo, chi = obj_bounds(T, S, b, e, ci)
        plo, phi = obj_bounds(T, S, b, e, pi)
        depth, grad = not_next_to_raw(clo, chi, plo, phi, ri[3], f[0], f[2])
        lim = float(0.0)
        if check_level != 0:
            lim = f[1]
        vmax = wp.max(vmax, depth - lim)
        loss += f[RF_W] * wp.max(depth - lim, 0.0)
        if accumulate != 0 and depth + margin > 0.0:
            grad = not_next_to_push(T, S, b, ci, pi, clo, chi, plo, phi, ri[3], f[0], f[2])
            S.g[b, ci] = S.g[b, ci] + f[RF_W] * grad
            if pi < T.n_mov:
                S.g[b, pi] = S.g[b, pi] - f[RF_W] * grad
    for r in range(T.kind_start[KIND_CYLINDER], T.kind_start[KIND_CYLINDER + 1]):
        ri = T.rel_i[r]
        f = T.rel_f[r]
        ci = ri[1]
        depth, grad, cause = cylinder_raw(S.x[b, ci], wp.vec2(f[0], f[1]), f[2], f[3])
        vmax = wp.max(vmax, depth)
        loss += f[RF_W] * wp.max(depth, 0.0)
        if accumulate != 0 and depth + margin > 0.0:
            S.g[b, ci] = S.g[b, ci] + f[RF_W] * grad
    # projected relations to a movable parent that lost an interval conflict: push the parent
    for r in range(T.kind_start[KIND_ON + 1]):
        ri = T.rel_i[r]
        pi = ri[2]
        if pi >= 0 and pi < T.n_mov:
            ci = ri[1]
            res, shift = parent_residual(T, S, b, e, r)
            vmax = wp.max(vmax, res)
            w = T.rel_f[r][RF_W]
            loss += w * res
            if accumulate != 0 and res > 0.0:
                S.g[b, pi] = S.g[b, pi] - wp.vec3(w * wp.sign(shift[0]), w * wp.sign(shift[1]), w * wp.sign(shift[2]))
    return vmax, loss


@wp.func
def parent_residual(T: SceneTables, S: CandidateState, b: int, e: int, r: int):
    """How far (m) the subject of projected relation row r lies outside that relation's interval (the
    largest axis), and the per-axis shift of the (movable) parent that would make it satisfiable."""
    ri = T.rel_i[r]
    ci = ri[1]
    plo, phi = obj_bounds(T, S, b, e, ri[2])
    lo, hi = relation_interval(ri[0], ri[3], ri[4], T.rel_f[r], S.olo[b, ci], S.ohi[b, ci], plo, phi, 0)
    x = S.x[b, ci]
    res = float(0.0)
    shift = wp.vec3(0.0)
    for a in range(3):
        if lo[a] - x[a] > 1.0e-6:
            res = wp.max(res, lo[a] - x[a])
            shift[a] = x[a] - lo[a]
        if x[a] - hi[a] > 1.0e-6:
            res = wp.max(res, x[a] - hi[a])
            shift[a] = x[a] - hi[a]
    return res, shift


@wp.func
def repair_shift(T: SceneTables, S: CandidateState, b: int, e: int, i: int) -> int:
    """Initial sampling: shifts the first movable parent whose relation with object i cannot be met
    (e.g. a NextTo side that would leave the support) so that it can; returns that parent or -1. The
    caller re-projects the parent, then i."""
    oi = T.obj_i[i]
    moved = int(-1)
    for k in range(oi[OI_PROJ0], oi[OI_PROJ1]):
        r = T.proj[k]
        pi = T.rel_i[r][2]
        if moved < 0 and pi >= 0 and pi < T.n_mov:
            res, shift = parent_residual(T, S, b, e, r)
            if res > 0.0:
                S.x[b, pi] = S.x[b, pi] + shift
                moved = pi
    return moved


@wp.func
def is_placed(T: SceneTables, j: int, rank_i: int) -> bool:
    """Initial sampling: whether object j is already placed when the object of rank ``rank_i`` is
    drawn (fixed objects always are; movables when earlier in the parents-first order)."""
    if j >= T.n_mov:
        return True
    return T.obj_i[j][OI_RANK] < rank_i


@wp.func
def placed_neighbour(T: SceneTables, i: int, q: int, rank_i: int):
    """(pair index, other object, already placed) of the q-th no_overlap pair of object i."""
    k = T.adj[q]
    ij = T.pair_i[k]
    j = ij[0]
    if j == i:
        j = ij[1]
    return k, j, is_placed(T, j, rank_i)


@wp.func
def placed_penetration(T: SceneTables, S: CandidateState, b: int, e: int, i: int, rank_i: int) -> float:
    """Sum of clearance-grown penetrations of object i with fixed objects and earlier-placed movables."""
    total = float(0.0)
    lo_i, hi_i = obj_bounds(T, S, b, e, i)
    oi = T.obj_i[i]
    for q in range(oi[OI_ADJ0], oi[OI_ADJ1]):
        k, j, placed = placed_neighbour(T, i, q, rank_i)
        if placed:
            lo_j, hi_j = obj_bounds(T, S, b, e, j)
            total += wp.max(vmin3(box_overlaps(lo_i, hi_i, lo_j, hi_j, T.pair_f[k][0])), 0.0)
    return total


@wp.func
def placed_relation_penalty(T: SceneTables, S: CandidateState, b: int, e: int, i: int, rank_i: int) -> float:
    """Violation of i's penalised relations (NotNextTo to a placed parent, cylindrical limits)."""
    total = float(0.0)
    lo_i, hi_i = obj_bounds(T, S, b, e, i)
    for r in range(T.kind_start[KIND_NOT_NEXT_TO], T.kind_start[KIND_CYLINDER + 1]):
        ri = T.rel_i[r]
        if ri[1] == i:
            f = T.rel_f[r]
            if ri[0] == KIND_CYLINDER:
                depth, grad, cause = cylinder_raw(S.x[b, i], wp.vec2(f[0], f[1]), f[2], f[3])
                total += wp.max(depth, 0.0)
            else:
                pj = ri[2]
                if is_placed(T, pj, rank_i):
                    plo, phi = obj_bounds(T, S, b, e, pj)
                    depth, grad = not_next_to_raw(lo_i, hi_i, plo, phi, ri[3], f[0], f[2])
                    total += wp.max(depth, 0.0)
    return total


@wp.func
def clutter_raise(T: SceneTables, S: CandidateState, b: int, e: int, i: int, rank_i: int, gap: float):
    """Lifts a ClutterOn release above every earlier-placed footprint it overlaps (gap grown)."""
    lo_i, hi_i = obj_bounds(T, S, b, e, i)
    bottom = lo_i[2]
    oi = T.obj_i[i]
    for q in range(oi[OI_ADJ0], oi[OI_ADJ1]):
        k, j, placed = placed_neighbour(T, i, q, rank_i)
        if placed:
            lo_j, hi_j = obj_bounds(T, S, b, e, j)
            o = box_overlaps(lo_i, hi_i, lo_j, hi_j, gap)
            if o[0] > 0.0 and o[1] > 0.0:
                bottom = wp.max(bottom, hi_j[2] + gap)
    p = S.x[b, i]
    p[2] = p[2] + (bottom - lo_i[2])
    S.x[b, i] = p


@wp.func
def clutter_miss(T: SceneTables, S: CandidateState, b: int, e: int, r: int) -> float:
    """How far (m) the subject of ClutterOn row r lies outside its release region (0 inside)."""
    ri = T.rel_i[r]
    f = T.rel_f[r]
    clo, chi = obj_bounds(T, S, b, e, ri[1])
    plo, phi = obj_bounds(T, S, b, e, ri[2])
    return wp.max(clutter_footprint(clo, chi, plo, phi, f[0], f[3]), 0.0)


@wp.func
def kick(T: SceneTables, S: CandidateState, b: int, e: int, seed: int, draw: int) -> int:
    """Restart of a stuck candidate (called at a late checkpoint whose checks still fail): one movable
    object of the most overlapping no_overlap pair (at the check's zero clearance; else the subject of
    the first NotNextTo the check rejects), or the movable parent that carries it (a NextTo subject
    moves with its parent), is re-drawn uniformly on its initial-sampling support, as in initial
    sampling (XY only; the caller re-projects and repairs). Returns 1 when an object was moved, 0 when
    nothing is to move or the object is a ClutterOn release."""
    best = float(0.0)
    kb = int(-1)
    for k in range(T.n_pairs):
        ij = T.pair_i[k]
        lo_i, hi_i = obj_bounds(T, S, b, e, ij[0])
        lo_j, hi_j = obj_bounds(T, S, b, e, ij[1])
        d = vmin3(box_overlaps(lo_i, hi_i, lo_j, hi_j, 0.0))
        if d > best:
            best = d
            kb = k
    st = candidate_rng(seed, e, draw)
    o = int(-1)
    if kb >= 0:
        ij = T.pair_i[kb]
        o = ij[0]
        if ij[1] < T.n_mov and wp.randf(st) < 0.5:
            o = ij[1]
    else:  # no overlap: the subject of a NotNextTo keep-out the check rejects
        for r in range(T.kind_start[KIND_NOT_NEXT_TO], T.kind_start[KIND_NOT_NEXT_TO + 1]):
            ri = T.rel_i[r]
            f = T.rel_f[r]
            clo, chi = obj_bounds(T, S, b, e, ri[1])
            plo, phi = obj_bounds(T, S, b, e, ri[2])
            depth, grad = not_next_to_raw(clo, chi, plo, phi, ri[3], f[0], f[2])
            if o < 0 and depth - f[1] > 0.0:
                o = ri[1]
    if o < 0:
        return 0
    for depth in range(4):  # climb to the root of a chain of movable parents
        oi = T.obj_i[o]
        up = int(-1)
        for q in range(oi[OI_PROJ0], oi[OI_PROJ1]):
            pp = T.rel_i[T.proj[q]][2]
            if up < 0 and pp >= 0 and pp < T.n_mov:
                up = pp
        if up >= 0:
            o = up
    if T.obj_i[o][OI_CLUTTER] >= 0:
        return 0
    slo, shi = obj_bounds(T, S, b, e, T.obj_i[o][OI_SUPPORT])
    olo = S.olo[b, o]
    ohi = S.ohi[b, o]
    p = S.x[b, o]
    for a in range(2):
        lo_c = slo[a] + 0.5 * (ohi[a] - olo[a])
        hi_c = shi[a] - 0.5 * (ohi[a] - olo[a])
        cc = 0.5 * (lo_c + hi_c)
        if lo_c < hi_c:
            cc = wp.randf(st, lo_c, hi_c)
        p[a] = cc - 0.5 * (olo[a] + ohi[a])
    S.x[b, o] = p
    return 1


def solve_kernels(do_init: bool) -> tuple:
    """The kernels of one solve, launched in order on one argument list: initial candidates (or the
    preparation of given ones), the optimisation loop, then modifiers and the final evaluation."""
    from isaaclab_arena.relations.kernels.solve_finalize import finalize_kernel
    from isaaclab_arena.relations.kernels.solve_init import init_kernel
    from isaaclab_arena.relations.kernels.solve_iterate import iterate_kernel
    from isaaclab_arena.relations.kernels.solve_prepare import prepare_kernel

    return (init_kernel if do_init else prepare_kernel, iterate_kernel, finalize_kernel)

"""The solver's penalised terms: no_overlap pairs, PENALTY relation kinds, and INTERVAL relations to a
movable parent that lost a conflict (their parent is pushed). Metres, env-local world frame."""

from __future__ import annotations

import warp as wp

from isaaclab_arena.relations.kernels.broad_phase import next_box_pair
from isaaclab_arena.relations.kernels.geometry import BIG, box_overlaps, parked, unit, vmin3
from isaaclab_arena.relations.kernels.pair_rule import rule_pair_of
from isaaclab_arena.relations.kernels.pair_terms import allowed_axes, pair_term, push_pair, support_term
from isaaclab_arena.relations.kernels.projection import carrier, parent_residual
from isaaclab_arena.relations.kernels.rows import WEIGHT
from isaaclab_arena.relations.kernels.tables import (
    PF_CLEARANCE,
    RI_AXIS,
    RI_CHILD,
    RI_FLAG,
    RI_KIND,
    RI_PARENT,
    CandidateState,
    SceneTables,
    obj_bounds,
)
from isaaclab_arena.relations.kinds.dispatch import INTERVAL_END, PENALTY_END, relation_penalty, relation_push


@wp.func
def pair_push(T: SceneTables, S: CandidateState, b: int, axes: wp.vec3, i: int, j: int, o: wp.vec3,
              lo_i: wp.vec3, hi_i: wp.vec3, lo_j: wp.vec3, hi_j: wp.vec3):
    """Adds the push of overlapping pair (i, j) to S.g: along the least-overlapping allowed axis (``axes``: 1.0
    where a push may move the pair apart) on which one of the two can still move apart (else the least-overlapping
    allowed axis); an object that cannot move that way itself passes the push to the movable parent that carries
    it."""
    best_free = float(BIG)
    best_any = float(BIG)
    k_free = int(-1)
    k_any = int(-1)
    s_free = float(1.0)
    s_any = float(1.0)
    for a in range(3):
        if axes[a] > 0.0:
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
    ci = carrier(T, S, b, i, j, kk, sg)
    if ci < 0:
        ci = i
    S.g[b, ci] = S.g[b, ci] - push
    if j < T.n_mov:
        cj = carrier(T, S, b, j, i, kk, -sg)
        if cj < 0:
            cj = j
        S.g[b, cj] = S.g[b, cj] + push


def _penalties(general: bool, rule: bool = False):
    """The penalty function; ``general`` adds the OBB / MESH pairs and the MESH support terms, ``rule`` finds the
    axis-aligned pairs by rule (``kernels/pair_rule.py``) instead of in the listed tables (box scenes' kernels keep
    the smaller function, which the CPU compiler inlines: an out-of-line call copies the scene tables and
    candidate state, which warp passes by value)."""
    suffix = ("_general" if general else "") + ("_rule" if rule else "")

    @wp.func(name="penalties" + suffix)
    def penalties(T: SceneTables, S: CandidateState, b: int, e: int, check_level: int, margin: float,
                  accumulate: int):
        """(largest violation of the penalised terms in metres (<= 0: all satisfied), penalty loss: the sum of
        slope x weight x positive violation over those terms). With ``accumulate`` adds the push directions to
        S.g. ``check_level`` uses the checks' thresholds (no clearance to fixed objects, the kinds' allowances)
        instead of the solver's."""
        vmax = float(-BIG)
        loss = float(0.0)
        # axis-aligned boxes: every pair, or (large scenes) those the sweep along X brings within reach of a push
        # (a pair left out lies apart by more than its clearance and the margin: no loss, no push; the largest
        # violation it would give is negative, below what decides an exit)
        a = int(0)
        t = int(-1)
        reach = float(0.0)
        if not wp.static(rule):
            while True:
                k, a, t, reach, vi, vj = next_box_pair(T.sweep, 0, T.n_box_pairs, T.n_mov, T.n_all, S.order, S.key,
                                                       S.x, S.olo, S.ohi, T.pair_of, b,
                                                       T.sweep_pad + wp.max(margin, 0.0), a, t, reach)
                if k < 0:
                    break
                ij = T.pair_i[k]
                i = ij[0]
                j = ij[1]
                lo_i, hi_i = obj_bounds(T, S, b, e, i)
                lo_j, hi_j = obj_bounds(T, S, b, e, j)
                c = T.pair_f[k][PF_CLEARANCE]
                if check_level != 0 and j >= T.n_mov:
                    c = 0.0  # the checks: a fixed object may be touched (no_overlap); two placed ones keep clearance
                o = box_overlaps(lo_i, hi_i, lo_j, hi_j, c)
                d = vmin3(o)
                vmax = wp.max(vmax, d)
                loss += T.pair_w * wp.max(d, 0.0)
                if accumulate != 0 and d + margin > 0.0:
                    pair_push(T, S, b, allowed_axes(T, k), i, j, o, lo_i, hi_i, lo_j, hi_j)
        if wp.static(rule):  # pairs by rule: the sweep's (i, j) that are pairs, as above
            while True:
                k, a, t, reach, vi, vj = next_box_pair(T.sweep, 1, T.n_box_pairs, T.n_mov, T.n_all, S.order, S.key,
                                                       S.x, S.olo, S.ohi, T.pair_of, b,
                                                       T.sweep_pad + wp.max(margin, 0.0), a, t, reach)
                if k < 0:
                    break
                ok, i, j, c, axes = rule_pair_of(T.rule_i, T.rule_ex, T.rule_clj, T.rule_clv, T.clearance, vi, vj)
                if ok:
                    lo_i, hi_i = obj_bounds(T, S, b, e, i)
                    lo_j, hi_j = obj_bounds(T, S, b, e, j)
                    if check_level != 0 and j >= T.n_mov:
                        c = 0.0
                    o = box_overlaps(lo_i, hi_i, lo_j, hi_j, c)
                    d = vmin3(o)
                    vmax = wp.max(vmax, d)
                    loss += T.pair_w * wp.max(d, 0.0)
                    if accumulate != 0 and d + margin > 0.0:
                        pair_push(T, S, b, axes, i, j, o, lo_i, hi_i, lo_j, hi_j)
        if wp.static(general):
            for k in range(T.n_box_pairs, T.n_pairs):  # boxes turned about Z, or MESH
                ij = T.pair_i[k]
                c = T.pair_f[k][PF_CLEARANCE]
                if check_level != 0 and ij[1] >= T.n_mov:
                    c = 0.0
                dg, dirn = pair_term(T, S, b, e, k, c, BIG, allowed_axes(T, k))
                vmax = wp.max(vmax, dg)
                loss += T.pair_w * wp.max(dg, 0.0)
                if accumulate != 0 and dg + margin > 0.0:
                    push_pair(T, S, b, ij[0], ij[1], dirn)
        for r in range(T.kind_start[INTERVAL_END], T.kind_start[PENALTY_END]):
            ri = T.rel_i[r]
            f = T.rel_f[r]
            ci = ri[RI_CHILD]
            pi = ri[RI_PARENT]
            x = S.x[b, ci]
            if parked(x):
                continue
            clo, chi = obj_bounds(T, S, b, e, ci)
            plo = clo
            phi = chi
            if pi >= 0:
                plo, phi = obj_bounds(T, S, b, e, pi)
            depth, allowance, grad = relation_penalty(ri[RI_KIND], ri[RI_AXIS], ri[RI_FLAG], f, x, clo, chi, plo, phi)
            lim = float(0.0)
            if check_level != 0:
                lim = allowance
            vmax = wp.max(vmax, depth - lim)
            loss += f[WEIGHT] * wp.max(depth - lim, 0.0)
            if accumulate != 0 and depth + margin > 0.0:
                dirn = relation_push(ri[RI_KIND], T, S, b, ci, pi, x, clo, chi, plo, phi, ri[RI_AXIS], f)
                S.g[b, ci] = S.g[b, ci] + f[WEIGHT] * dirn
                if pi >= 0 and pi < T.n_mov:
                    S.g[b, pi] = S.g[b, pi] - f[WEIGHT] * dirn
        # INTERVAL relations to a movable parent that lost an interval conflict: push the parent
        for r in range(T.kind_start[INTERVAL_END]):
            ri = T.rel_i[r]
            pi = ri[RI_PARENT]
            if pi >= 0 and pi < T.n_mov and not parked(S.x[b, ri[RI_CHILD]]):
                res, shift = parent_residual(T, S, b, e, r)
                vmax = wp.max(vmax, res)
                w = T.rel_f[r][WEIGHT]
                loss += w * res
                if accumulate != 0 and res > 0.0:
                    S.g[b, pi] = S.g[b, pi] - wp.vec3(w * wp.sign(shift[0]), w * wp.sign(shift[1]),
                                                      w * wp.sign(shift[2]))
        if wp.static(general):
            # MESH support terms: an On footprint over its fixed support's mesh (the solver aims ``sm`` inside)
            for s in range(T.n_support):
                if parked(S.x[b, T.mesh[0].sup_i[s][0]]):
                    continue
                ex, grow, sc, sm, sr = support_term(T, S, b, e, s)
                if check_level == 0:
                    ex = ex + sm
                w = T.rel_f[sr][WEIGHT]
                vmax = wp.max(vmax, ex)
                loss += w * wp.max(ex, 0.0)
                if accumulate != 0 and ex + margin > 0.0:
                    S.g[b, sc] = S.g[b, sc] + w * grow
        return vmax, loss

    return penalties


penalties = _penalties(False)
penalties_general = _penalties(True)
penalties_rule = _penalties(False, rule=True)


@wp.func
def worst_penalty_subject(T: SceneTables, S: CandidateState, b: int, e: int) -> int:
    """The subject of the first PENALTY relation the check rejects (depth beyond its allowance), or -1."""
    o = int(-1)
    for r in range(T.kind_start[INTERVAL_END], T.kind_start[PENALTY_END]):
        ri = T.rel_i[r]
        ci = ri[RI_CHILD]
        pi = ri[RI_PARENT]
        if parked(S.x[b, ci]):
            continue
        clo, chi = obj_bounds(T, S, b, e, ci)
        plo = clo
        phi = chi
        if pi >= 0:
            plo, phi = obj_bounds(T, S, b, e, pi)
        depth, allowance, grad = relation_penalty(ri[RI_KIND], ri[RI_AXIS], ri[RI_FLAG], T.rel_f[r], S.x[b, ci], clo,
                                                  chi, plo, phi)
        if o < 0 and depth - allowance > 0.0:
            o = ci
    return o

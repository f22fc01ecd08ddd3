"""Initial sampling helpers (what an object's draw is scored against) and the restart of stuck candidates."""

from __future__ import annotations

import warp as wp

from isaaclab_arena.relations.kernels.geometry import (
    BIG,
    box_overlaps,
    candidate_rng,
    parked,
    vmin3,
)
from isaaclab_arena.relations.kernels.broad_phase import first_at_or_after, next_box_pair
from isaaclab_arena.relations.kernels.pair_rule import pair_number, rule_pair_of
from isaaclab_arena.relations.kernels.pair_terms import pair_term, support_term
from isaaclab_arena.relations.kernels.penalties import worst_penalty_subject
from isaaclab_arena.relations.kernels.projection import draw_pose
from isaaclab_arena.relations.kernels.tables import (
    OI_ADJ0,
    OI_ADJ1,
    FLAG_GENERAL_PAIRS,
    OI_CLUTTER,
    OI_FLAGS,
    OI_PROJ0,
    OI_PROJ1,
    OI_RANK,
    OI_SUPPORT,
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
from isaaclab_arena.relations.kinds import clutter_on
from isaaclab_arena.relations.kinds.dispatch import INTERVAL_END, PENALTY_END, relation_penalty

ANY_AXIS = wp.constant(wp.vec3(1.0, 1.0, 1.0))
#: Draws a restart of an OBB / MESH object tries (the least penetrating is kept).
KICK_TRIES = wp.constant(8)


@wp.func
def is_placed(T: SceneTables, j: int, rank_i: int) -> bool:
    """Whether object j is already placed when the object of rank ``rank_i`` is drawn (fixed objects
    always are; movables when earlier in the parents-first order)."""
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
    """Sum of clearance-grown penetrations (m) of object i with fixed objects and earlier-placed movables
    (axis-aligned pairs; ``placed_general`` adds the others)."""
    total = float(0.0)
    lo_i, hi_i = obj_bounds(T, S, b, e, i)
    oi = T.obj_i[i]
    for q in range(oi[OI_ADJ0], oi[OI_ADJ1]):
        k, j, placed = placed_neighbour(T, i, q, rank_i)
        if placed and k < T.n_box_pairs:
            lo_j, hi_j = obj_bounds(T, S, b, e, j)
            total += wp.max(vmin3(box_overlaps(lo_i, hi_i, lo_j, hi_j, T.pair_f[k][PF_CLEARANCE])), 0.0)
    return total


def _placed_penetration_sweep(rule: bool):
    """``placed_penetration`` through the broad phase; ``rule``: the pairs follow the rule (``kernels/pair_rule.py``,
    a variant of its own: the listed scenes' function stays as it was)."""

    @wp.func(name="placed_penetration_sweep" + ("_rule" if rule else ""))
    def placed_penetration_sweep(T: SceneTables, S: CandidateState, b: int, e: int, i: int, count: int,
                                 wmax: float) -> float:
        """``placed_penetration`` through the broad phase (``T.sweep``): the placed objects are the first ``count``
        entries of the candidate's sorted list (``broad_phase.sweep_insert``), ``wmax`` their largest X extent (m);
        only those whose X range comes within the largest clearance of i's are measured, then i's fixed pairs."""
        total = float(0.0)
        lo_i, hi_i = obj_bounds(T, S, b, e, i)
        pad = T.sweep_pad
        m = first_at_or_after(S, b, count, lo_i[0] - pad - wmax)
        end = count + T.n_all - T.n_mov  # list positions, then the fixed objects
        while m < end:
            j = T.n_mov + m - count
            if m < count:
                j = S.order[b, m]
                if S.key[b, m] > hi_i[0] + pad:  # the rest of the list lies beyond reach
                    j = -1
                    m = count - 1
            m += 1
            if wp.static(rule):
                if j >= 0:
                    ok, pi, pj, clearance, axes = rule_pair_of(T.rule_i, T.rule_ex, T.rule_clj, T.rule_clv,
                                                               T.clearance, i, j)
                    if ok:
                        lo_j, hi_j = obj_bounds(T, S, b, e, j)
                        total += wp.max(vmin3(box_overlaps(lo_i, hi_i, lo_j, hi_j, clearance)), 0.0)
            else:
                k = int(-1)
                if j >= 0:
                    k = T.pair_of[i, j]
                if k >= 0:
                    lo_j, hi_j = obj_bounds(T, S, b, e, j)
                    total += wp.max(vmin3(box_overlaps(lo_i, hi_i, lo_j, hi_j, T.pair_f[k][PF_CLEARANCE])), 0.0)
        return total

    return placed_penetration_sweep


placed_penetration_sweep = _placed_penetration_sweep(False)
placed_penetration_sweep_rule = _placed_penetration_sweep(True)


@wp.func
def placed_general(T: SceneTables, S: CandidateState, b: int, e: int, i: int, rank_i: int) -> float:
    """What ``placed_penetration`` leaves out for object i (flag GENERAL_PAIRS): its OBB / MESH pairs with
    placed objects (a MESH pair stops at its first penetrating sphere: a score, not a measure) and how far
    its footprint lies off the meshes of its fixed supports (MESH support terms), metres."""
    total = float(0.0)
    oi = T.obj_i[i]
    for q in range(oi[OI_ADJ0], oi[OI_ADJ1]):
        k, j, placed = placed_neighbour(T, i, q, rank_i)
        if placed and k >= T.n_box_pairs:
            d, dirn = pair_term(T, S, b, e, k, T.pair_f[k][PF_CLEARANCE], 0.0, ANY_AXIS)
            total += wp.max(d, 0.0)
    for s in range(T.n_support):
        if T.mesh[0].sup_i[s][0] == i:
            ex, grow, sc, sm, sr = support_term(T, S, b, e, s)
            total += wp.max(ex + sm, 0.0)
    return total


@wp.func
def placed_relation_penalty(T: SceneTables, S: CandidateState, b: int, e: int, i: int, rank_i: int) -> float:
    """Depth (m) of i in its PENALTY relations whose parent (if any) is already placed."""
    total = float(0.0)
    lo_i, hi_i = obj_bounds(T, S, b, e, i)
    for r in range(T.kind_start[INTERVAL_END], T.kind_start[PENALTY_END]):
        ri = T.rel_i[r]
        if ri[RI_CHILD] == i:
            pj = ri[RI_PARENT]
            if pj < 0 or is_placed(T, pj, rank_i):
                plo = lo_i
                phi = hi_i
                if pj >= 0:
                    plo, phi = obj_bounds(T, S, b, e, pj)
                depth, allowance, grad = relation_penalty(ri[RI_KIND], ri[RI_AXIS], ri[RI_FLAG], T.rel_f[r],
                                                          S.x[b, i], lo_i, hi_i, plo, phi)
                total += wp.max(depth, 0.0)
    return total


def _clutter_raise(rule: bool):
    """``clutter_raise``; ``rule``: the pairs follow the rule (``kernels/pair_rule.py``)."""

    @wp.func(name="clutter_raise" + ("_rule" if rule else ""))
    def clutter_raise(T: SceneTables, S: CandidateState, b: int, e: int, i: int, rank_i: int, gap: float):
        """Lifts a ClutterOn release above every earlier-placed footprint it overlaps (gap grown)."""
        lo_i, hi_i = obj_bounds(T, S, b, e, i)
        bottom = lo_i[2]
        if wp.static(rule):  # every object i forms a pair with (the maximum does not depend on the order)
            for j in range(T.n_all):
                ok, pi, pj, clearance, axes = rule_pair_of(T.rule_i, T.rule_ex, T.rule_clj, T.rule_clv, T.clearance,
                                                           i, j)
                if ok and is_placed(T, j, rank_i):
                    bottom = clutter_floor(T, S, b, e, j, lo_i, hi_i, gap, bottom)
        else:
            oi = T.obj_i[i]
            for q in range(oi[OI_ADJ0], oi[OI_ADJ1]):
                k, j, placed = placed_neighbour(T, i, q, rank_i)
                if placed:
                    bottom = clutter_floor(T, S, b, e, j, lo_i, hi_i, gap, bottom)
        p = S.x[b, i]
        p[2] = p[2] + (bottom - lo_i[2])
        S.x[b, i] = p

    return clutter_raise


@wp.func
def clutter_floor(T: SceneTables, S: CandidateState, b: int, e: int, j: int, lo_i: wp.vec3, hi_i: wp.vec3,
                  gap: float, bottom: float) -> float:
    """``bottom`` raised to object j's top plus ``gap`` (m) where the footprints of j and of the box (lo_i, hi_i)
    overlap (gap grown)."""
    lo_j, hi_j = obj_bounds(T, S, b, e, j)
    o = box_overlaps(lo_i, hi_i, lo_j, hi_j, gap)
    if o[0] > 0.0 and o[1] > 0.0:
        return wp.max(bottom, hi_j[2] + gap)
    return bottom


clutter_raise = _clutter_raise(False)
clutter_raise_rule = _clutter_raise(True)


@wp.func
def clutter_miss(T: SceneTables, S: CandidateState, b: int, e: int, r: int) -> float:
    """How far (m) the subject of ClutterOn row r lies outside its release region (0 inside)."""
    ri = T.rel_i[r]
    clo, chi = obj_bounds(T, S, b, e, ri[RI_CHILD])
    plo, phi = obj_bounds(T, S, b, e, ri[RI_PARENT])
    return wp.max(clutter_on.footprint_excess(clo, chi, plo, phi, T.rel_f[r]), 0.0)


def _kick(general: bool, rule: bool = False):
    """The restart function; ``general`` adds the OBB / MESH pairs, MESH support terms and the multi-draw
    restart of OBB / MESH objects (box scenes' kernels keep the smaller function)."""
    suffix = ("_general" if general else "") + ("_rule" if rule else "")

    @wp.func(name="kick" + suffix)
    def kick(T: SceneTables, S: CandidateState, b: int, e: int, seed: int, draw: int):
        """Restart of a stuck candidate (called at a late checkpoint whose checks still fail): picks one movable
        object of the most overlapping no_overlap pair (at the check's zero clearance; else the subject of the
        first PENALTY relation the check rejects, else of the first MESH support term that fails), or the movable
        parent that carries it (a NextTo subject moves with its parent). Returns (that object, or -1 when nothing
        is to move or it is a ClutterOn release; the restart's random state; whether the caller still draws it):
        the caller re-draws it as in initial sampling (``project`` with ``Redraw.IN_INTERVAL``), then re-projects
        and repairs everything. An OBB / MESH object (flag GENERAL_PAIRS) is drawn here instead: of KICK_TRIES draws
        over its last projection interval, the one that penetrates the others (and leaves its support's mesh) least."""
        best = float(0.0)
        kb = int(-1)
        bi = int(-1)
        bj = int(-1)
        if wp.static(rule):
            # the pairs the sweep brings within reach (pad 0: a pair it leaves out does not overlap along X); the
            # deepest, the lowest number among equals: the listed loop's first deepest in number order
            bk = int(-1)
            a = int(0)
            t = int(-1)
            reach = float(0.0)
            while True:
                k, a, t, reach, vi, vj = next_box_pair(T.sweep, 1, T.n_box_pairs, T.n_mov, T.n_all, S.order, S.key,
                                                       S.x, S.olo, S.ohi, T.pair_of, b, 0.0, a, t, reach)
                if k < 0:
                    break
                ok, i, j, clearance, axes = rule_pair_of(T.rule_i, T.rule_ex, T.rule_clj, T.rule_clv, T.clearance,
                                                         vi, vj)
                if ok:
                    lo_i, hi_i = obj_bounds(T, S, b, e, i)
                    lo_j, hi_j = obj_bounds(T, S, b, e, j)
                    d = vmin3(box_overlaps(lo_i, hi_i, lo_j, hi_j, 0.0))
                    if d > 0.0 and d >= best:
                        number = pair_number(T.n_mov, T.rule_i, T.rule_row, T.rule_ex, i, j)
                        if d > best or number < bk:
                            best = d
                            bk = number
                            bi = i
                            bj = j
        else:
            for k in range(T.n_pairs):
                d = float(0.0)
                if k < T.n_box_pairs:
                    ij = T.pair_i[k]
                    lo_i, hi_i = obj_bounds(T, S, b, e, ij[0])
                    lo_j, hi_j = obj_bounds(T, S, b, e, ij[1])
                    d = vmin3(box_overlaps(lo_i, hi_i, lo_j, hi_j, 0.0))
                if wp.static(general):
                    if k >= T.n_box_pairs:
                        d, dirn = pair_term(T, S, b, e, k, 0.0, BIG, ANY_AXIS)
                if d > best:
                    best = d
                    kb = k
            if kb >= 0:
                ij = T.pair_i[kb]
                bi = ij[0]
                bj = ij[1]
        st = candidate_rng(seed, e, draw)
        o = int(-1)
        if bi >= 0:
            o = bi
            if bj < T.n_mov and wp.randf(st) < 0.5:
                o = bj
        else:
            o = worst_penalty_subject(T, S, b, e)
        if wp.static(general):
            for s in range(T.n_support):  # else a footprint off its support's mesh (e.g. over a sink cut-out)
                if o < 0 and not parked(S.x[b, T.mesh[0].sup_i[s][0]]):
                    ex, grow, sc, sm, sr = support_term(T, S, b, e, s)
                    if ex > T.slack:
                        o = sc
        caller_draws = int(1)
        if o >= 0:
            for depth in range(4):  # climb to the root of a chain of movable parents
                oi = T.obj_i[o]
                up = int(-1)
                for q in range(oi[OI_PROJ0], oi[OI_PROJ1]):
                    pp = T.rel_i[T.proj[q]][RI_PARENT]
                    if up < 0 and pp >= 0 and pp < T.n_mov:
                        up = pp
                if up >= 0:
                    o = up
            if T.obj_i[o][OI_CLUTTER] >= 0:
                o = -1
        if wp.static(general):
            if o >= 0 and (T.obj_i[o][OI_FLAGS] & FLAG_GENERAL_PAIRS) != 0:
                # one scoring call site (a while loop), so that it inlines
                slo, shi = obj_bounds(T, S, b, e, T.obj_i[o][OI_SUPPORT])
                lo = S.ilo[b, o]
                hi = S.ihi[b, o]
                keep = S.x[b, o]
                best = float(BIG)
                t = int(0)
                while t < KICK_TRIES:
                    p, st = draw_pose(st, lo, hi, slo, shi, S.olo[b, o], S.ohi[b, o])
                    S.x[b, o] = p
                    score = placed_penetration(T, S, b, e, o, T.n_mov) + placed_general(T, S, b, e, o, T.n_mov)
                    if score < best:
                        best = score
                        keep = p
                    t += 1
                    if best <= 0.0:
                        t = KICK_TRIES
                S.x[b, o] = keep
                caller_draws = 0
        return o, st, caller_draws

    return kick


kick = _kick(False)
kick_general = _kick(True)
kick_rule = _kick(False, rule=True)

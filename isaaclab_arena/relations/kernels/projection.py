"""Exact projection of an object's origin onto its INTERVAL relations, and the repair of movable parents."""

from __future__ import annotations

import warp as wp

from isaaclab_arena.relations.kernels.freedom import can_move
from isaaclab_arena.relations.kernels.geometry import BIG, parked
from isaaclab_arena.relations.kernels.rows import RoomRow
from isaaclab_arena.relations.kernels.tables import (
    FLAG_STATIC_INTERVAL,
    OI_FLAGS,
    OI_PROJ0,
    OI_PROJ1,
    OI_SUPPORT,
    REDRAW_IN_RECORDED_INTERVAL,
    REDRAW_NONE,
    RI_AXIS,
    RI_CHILD,
    RI_FLAG,
    RI_KIND,
    RI_PARENT,
    CandidateState,
    SceneTables,
    obj_bounds,
)
from isaaclab_arena.relations.kinds.dispatch import relation_interval, relation_interval_of_parent


#: ``project``'s ``scene_bounds``: 0 none (intervals computed), FLAGGED the candidate's unrotated objects have their
#: scene bounds (an object flagged STATIC_INTERVAL reads its interval from ``T.static_iv``), ALL_STATIC every object
#: is flagged (a plain scene's init kernel: no call site of ``object_interval`` is compiled there).
SCENE_BOUNDS_FLAGGED = wp.constant(1)
SCENE_BOUNDS_ALL_STATIC = wp.constant(2)


@wp.func
def object_interval(T: SceneTables, S: CandidateState, b: int, e: int, i: int, at_ratio: int):
    """The per-axis range (lo, hi) of object i's origin that its INTERVAL relations allow: their
    intersection, leaving the room its NextTo chain needs (``T.room``) unless that room conflicts with its
    own relations (then without it); where they conflict on an axis, the highest-priority interval alone (its
    midpoint when even that one is empty); +-BIG where no relation constrains the axis."""
    olo = S.olo[b, i]
    ohi = S.ohi[b, i]
    oi = T.obj_i[i]
    room = T.room[e, i]
    lo_all = wp.vec3(-BIG)
    hi_all = wp.vec3(BIG)
    lo_pri = wp.vec3(-BIG)
    hi_pri = wp.vec3(BIG)
    attempt = int(0)
    while attempt < 2:  # a dynamic loop: one call site of the interval dispatch
        lo_all = wp.vec3(-BIG)
        hi_all = wp.vec3(BIG)
        lo_pri = wp.vec3(-BIG)
        hi_pri = wp.vec3(BIG)
        for k in range(oi[OI_PROJ0], oi[OI_PROJ1]):
            r = T.proj[k]
            ri = T.rel_i[r]
            plo, phi = obj_bounds(T, S, b, e, wp.max(ri[RI_PARENT], 0))
            lo, hi = relation_interval(ri[RI_KIND], ri[RI_AXIS], ri[RI_FLAG], T.rel_f[r], olo, ohi, plo, phi,
                                       at_ratio, room)
            for a in range(3):
                if lo[a] > -BIG or hi[a] < BIG:
                    lo_all[a] = wp.max(lo_all[a], lo[a])
                    hi_all[a] = wp.min(hi_all[a], hi[a])
                    lo_pri[a] = lo[a]
                    hi_pri[a] = hi[a]
        attempt += 1
        if lo_all[0] <= hi_all[0] and lo_all[1] <= hi_all[1] and lo_all[2] <= hi_all[2]:
            attempt = 2
        else:
            # the room a chain would like is a preference, not a relation: drop it before giving up a relation
            room = RoomRow()
    for a in range(3):
        if lo_all[a] > hi_all[a]:
            if lo_pri[a] <= hi_pri[a]:
                lo_all[a] = lo_pri[a]
                hi_all[a] = hi_pri[a]
            else:
                m = 0.5 * (lo_pri[a] + hi_pri[a])
                lo_all[a] = m
                hi_all[a] = m
    return lo_all, hi_all


@wp.func
def draw_pose(st: wp.uint32, lo: wp.vec3, hi: wp.vec3, slo: wp.vec3, shi: wp.vec3, olo: wp.vec3, ohi: wp.vec3):
    """(an origin drawn uniformly over what the object's relations allow, the advanced random state: callers
    must keep using the returned state).

    On an axis its INTERVAL relations bound (``[lo, hi]``, e.g. a support's inset footprint minus the
    object's extent, a NextTo gap band) the origin is uniform in that interval, so draws cover exactly the
    feasible region and never pile up on its border; on X/Y axes no relation bounds, the object's box centre
    is uniform over the support footprint [slo, shi] shrunk by its half size (its centre when wider); Z
    unbounded rests the object's bottom on the support top."""
    p = wp.vec3(0.0, 0.0, shi[2] - olo[2])
    for a in range(3):
        if lo[a] > -BIG and hi[a] < BIG:
            p[a] = lo[a]
            if lo[a] < hi[a]:
                p[a] = wp.randf(st, lo[a], hi[a])
        elif a < 2:
            lo_c = slo[a] + 0.5 * (ohi[a] - olo[a])
            hi_c = shi[a] - 0.5 * (ohi[a] - olo[a])
            cc = 0.5 * (lo_c + hi_c)
            if lo_c < hi_c:
                cc = wp.randf(st, lo_c, hi_c)
            p[a] = cc - 0.5 * (olo[a] + ohi[a])
    return p, st


@wp.func
def project(T: SceneTables, S: CandidateState, b: int, e: int, i: int, at_ratio: int, redraw: int,
            st: wp.uint32, scene_bounds: int) -> wp.uint32:
    """Clamps object i's origin into ``object_interval`` (``redraw`` a ``Redraw``: with IN_INTERVAL, first draws
    it anew there with ``draw_pose`` from random state ``st``) and records the interval used per axis (``S.ilo`` /
    ``S.ihi``); returns the advanced random state. IN_RECORDED_INTERVAL draws anew in the interval recorded by i's
    last projection instead of computing it again: for a caller that knows nothing it depends on changed since (the
    initial draws' next try of an object that the try does not turn: ``solve_init.py``). With ``scene_bounds``
    FLAGGED (the candidate's unrotated objects have their scene bounds: ``SolveSettings.scene_bounds``) an object
    flagged STATIC_INTERVAL takes its env's interval from ``T.static_iv`` (``static_intervals.py``); with ALL_STATIC
    (a caller that knows every object is flagged) every object does, and the interval is not recorded (the caller
    records them with ``record_static_intervals`` where the optimisation loop will read them). Kernels call it from
    one site each, so that it inlines. A parked pool member stays put."""
    p = S.x[b, i]
    if parked(p):
        return st
    lo = wp.vec3(0.0)
    hi = wp.vec3(0.0)
    if redraw == REDRAW_IN_RECORDED_INTERVAL:
        lo = S.ilo[b, i]
        hi = S.ihi[b, i]
    elif scene_bounds == SCENE_BOUNDS_ALL_STATIC or (
            scene_bounds != 0 and (T.obj_i[i][OI_FLAGS] & FLAG_STATIC_INTERVAL) != 0):
        lo = T.static_iv[e, i, 2 * at_ratio]
        hi = T.static_iv[e, i, 2 * at_ratio + 1]
    else:
        lo, hi = object_interval(T, S, b, e, i, at_ratio)
    if redraw != REDRAW_NONE:
        slo, shi = obj_bounds(T, S, b, e, T.obj_i[i][OI_SUPPORT])
        p, st = draw_pose(st, lo, hi, slo, shi, S.olo[b, i], S.ohi[b, i])
    for a in range(3):
        p[a] = wp.clamp(p[a], lo[a], hi[a])
    S.x[b, i] = p
    if scene_bounds != SCENE_BOUNDS_ALL_STATIC:  # else the interval is T.static_iv's: see record_static_intervals
        S.ilo[b, i] = lo
        S.ihi[b, i] = hi
    return st


@wp.func
def record_static_intervals(T: SceneTables, S: CandidateState, b: int, e: int, at_ratio: int):
    """Records in ``S.ilo`` / ``S.ihi`` the interval that ``project`` used for every object of candidate b when it
    was called with ALL_STATIC (which records none: the interval is the object's ``T.static_iv``), as the other
    ``scene_bounds`` record it per projection: for the optimisation loop (``freedom.can_move``, ``kick``). A parked
    pool member keeps its own, as ``project`` leaves it."""
    for i in range(T.n_mov):
        if not parked(S.x[b, i]):
            S.ilo[b, i] = T.static_iv[e, i, 2 * at_ratio]
            S.ihi[b, i] = T.static_iv[e, i, 2 * at_ratio + 1]


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
        p = T.rel_i[T.proj[q]][RI_PARENT]
        if found < 0 and p >= 0 and p < T.n_mov and p != other:
            if can_move(T, S, b, p, a, direction):
                found = p
    return found


@wp.func
def parent_residual(T: SceneTables, S: CandidateState, b: int, e: int, r: int):
    """How far (m) the subject of INTERVAL relation row r lies outside that relation's interval (the
    largest axis), and the per-axis shift of the (movable) parent that would make it satisfiable."""
    ri = T.rel_i[r]
    ci = ri[RI_CHILD]
    plo, phi = obj_bounds(T, S, b, e, ri[RI_PARENT])
    lo, hi = relation_interval_of_parent(ri[RI_KIND], ri[RI_AXIS], ri[RI_FLAG], T.rel_f[r], S.olo[b, ci],
                                         S.ohi[b, ci], plo, phi, 0, T.room[e, ci])
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
    """Shifts the first movable parent whose relation with object i cannot be met (e.g. a NextTo side
    that would leave the support) so that it can; returns that parent or -1. The caller re-projects the
    parent, then i."""
    oi = T.obj_i[i]
    moved = int(-1)
    for k in range(oi[OI_PROJ0], oi[OI_PROJ1]):
        r = T.proj[k]
        pi = T.rel_i[r][RI_PARENT]
        if moved < 0 and pi >= 0 and pi < T.n_mov:
            res, shift = parent_residual(T, S, b, e, r)
            if res > 0.0:
                S.x[b, pi] = S.x[b, pi] + shift
                moved = pi
    return moved

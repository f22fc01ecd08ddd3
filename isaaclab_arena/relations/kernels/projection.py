"""Exact projection of an object's origin onto its INTERVAL relations, and the repair of movable parents."""

from __future__ import annotations

import warp as wp

from isaaclab_arena.relations.kernels.freedom import can_move
from isaaclab_arena.relations.kernels.geometry import BIG
from isaaclab_arena.relations.kernels.tables import (
    OI_PROJ0,
    OI_PROJ1,
    RI_AXIS,
    RI_CHILD,
    RI_FLAG,
    RI_KIND,
    RI_PARENT,
    CandidateState,
    SceneTables,
    obj_bounds,
)
from isaaclab_arena.relations.kinds.dispatch import relation_interval
from isaaclab_arena.relations.kinds.kind import RoomRow


@wp.func
def intersect_intervals(T: SceneTables, S: CandidateState, b: int, e: int, i: int, at_ratio: int, room: RoomRow):
    """(intersection lo, hi, highest-priority interval lo, hi) of object i's INTERVAL relations per axis."""
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
        plo, phi = obj_bounds(T, S, b, e, wp.max(ri[RI_PARENT], 0))
        lo, hi = relation_interval(ri[RI_KIND], ri[RI_AXIS], ri[RI_FLAG], T.rel_f[r], olo, ohi, plo, phi, at_ratio,
                                   room)
        for a in range(3):
            if lo[a] > -BIG or hi[a] < BIG:
                lo_all[a] = wp.max(lo_all[a], lo[a])
                hi_all[a] = wp.min(hi_all[a], hi[a])
                lo_pri[a] = lo[a]
                hi_pri[a] = hi[a]
    return lo_all, hi_all, lo_pri, hi_pri


@wp.func
def object_interval(T: SceneTables, S: CandidateState, b: int, e: int, i: int, at_ratio: int):
    """The per-axis range (lo, hi) of object i's origin that its INTERVAL relations allow: their
    intersection, leaving the room its NextTo chain needs (``T.room``) unless that room conflicts with its
    own relations; where they conflict on an axis, the highest-priority interval alone (its midpoint when
    even that one is empty); +-BIG where no relation constrains the axis."""
    room = T.room[e, i]
    lo_all, hi_all, lo_pri, hi_pri = intersect_intervals(T, S, b, e, i, at_ratio, room)
    if lo_all[0] > hi_all[0] or lo_all[1] > hi_all[1] or lo_all[2] > hi_all[2]:
        # the room a chain would like is a preference, not a relation: drop it before giving up a relation
        lo_all, hi_all, lo_pri, hi_pri = intersect_intervals(T, S, b, e, i, at_ratio, RoomRow())
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
def project(T: SceneTables, S: CandidateState, b: int, e: int, i: int, at_ratio: int):
    """Clamps object i's origin into ``object_interval`` and records the interval used per axis."""
    lo, hi = object_interval(T, S, b, e, i, at_ratio)
    p = S.x[b, i]
    for a in range(3):
        p[a] = wp.clamp(p[a], lo[a], hi[a])
    S.x[b, i] = p
    S.ilo[b, i] = lo
    S.ihi[b, i] = hi


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
    lo, hi = relation_interval(ri[RI_KIND], ri[RI_AXIS], ri[RI_FLAG], T.rel_f[r], S.olo[b, ci], S.ohi[b, ci], plo,
                              phi, 0, T.room[e, ci])
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

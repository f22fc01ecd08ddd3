"""Initial sampling helpers (what an object's draw is scored against) and the restart of stuck candidates."""

from __future__ import annotations

import warp as wp

from isaaclab_arena.relations.kernels.geometry import (
    BIG,
    box_overlaps,
    candidate_rng,
    vmin3,
)
from isaaclab_arena.relations.kernels.penalties import worst_penalty_subject
from isaaclab_arena.relations.kernels.projection import object_interval
from isaaclab_arena.relations.kernels.tables import (
    OI_ADJ0,
    OI_ADJ1,
    OI_CLUTTER,
    OI_PROJ0,
    OI_PROJ1,
    OI_RANK,
    OI_SUPPORT,
    PF_CLEARANCE,
    RI_AXIS,
    RI_CHILD,
    RI_FLAG,
    RI_PARENT,
    CandidateState,
    SceneTables,
    obj_bounds,
)
from isaaclab_arena.relations.kinds import clutter_on
from isaaclab_arena.relations.kinds.dispatch import PENALTY_FUNCS, PENALTY_IDS


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
    """Sum of clearance-grown penetrations (m) of object i with fixed objects and earlier-placed movables."""
    total = float(0.0)
    lo_i, hi_i = obj_bounds(T, S, b, e, i)
    oi = T.obj_i[i]
    for q in range(oi[OI_ADJ0], oi[OI_ADJ1]):
        k, j, placed = placed_neighbour(T, i, q, rank_i)
        if placed:
            lo_j, hi_j = obj_bounds(T, S, b, e, j)
            total += wp.max(vmin3(box_overlaps(lo_i, hi_i, lo_j, hi_j, T.pair_f[k][PF_CLEARANCE])), 0.0)
    return total


@wp.func
def placed_relation_penalty(T: SceneTables, S: CandidateState, b: int, e: int, i: int, rank_i: int) -> float:
    """Depth (m) of i in its PENALTY relations whose parent (if any) is already placed."""
    total = float(0.0)
    lo_i, hi_i = obj_bounds(T, S, b, e, i)
    for jk in range(wp.static(len(PENALTY_IDS))):
        kid = wp.static(PENALTY_IDS[jk])
        for r in range(T.kind_start[kid], T.kind_start[kid + 1]):
            ri = T.rel_i[r]
            if ri[RI_CHILD] == i:
                pj = ri[RI_PARENT]
                if pj < 0 or is_placed(T, pj, rank_i):
                    plo = lo_i
                    phi = hi_i
                    if pj >= 0:
                        plo, phi = obj_bounds(T, S, b, e, pj)
                    depth, allowance, grad = wp.static(PENALTY_FUNCS[jk])(ri[RI_AXIS], ri[RI_FLAG], T.rel_f[r],
                                                                          S.x[b, i], lo_i, hi_i, plo, phi)
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
    clo, chi = obj_bounds(T, S, b, e, ri[RI_CHILD])
    plo, phi = obj_bounds(T, S, b, e, ri[RI_PARENT])
    return wp.max(clutter_on.footprint_excess(clo, chi, plo, phi, T.rel_f[r]), 0.0)


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
def kick(T: SceneTables, S: CandidateState, b: int, e: int, seed: int, draw: int) -> int:
    """Restart of a stuck candidate (called at a late checkpoint whose checks still fail): one movable
    object of the most overlapping no_overlap pair (at the check's zero clearance; else the subject of the
    first PENALTY relation the check rejects), or the movable parent that carries it (a NextTo subject
    moves with its parent), is re-drawn on its initial-sampling support as in initial sampling (XY only;
    the caller re-projects and repairs). Returns 1 when an object was moved, 0 when nothing is to move or
    the object is a ClutterOn release."""
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
    else:
        o = worst_penalty_subject(T, S, b, e)
    if o < 0:
        return 0
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
        return 0
    slo, shi = obj_bounds(T, S, b, e, T.obj_i[o][OI_SUPPORT])
    lo, hi = object_interval(T, S, b, e, o, 0)
    p, st = draw_pose(st, lo, hi, slo, shi, S.olo[b, o], S.ohi[b, o])
    S.x[b, o] = p
    return 1

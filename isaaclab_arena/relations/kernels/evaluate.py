"""Evaluation of every relation and the no-overlap term of one candidate: the solver's final loss and
the inexpensive checks' verdicts come from this one function (and the violation functions it calls)."""

from __future__ import annotations

import warp as wp

from isaaclab_arena.relations.kernels.geometry import BIG
from isaaclab_arena.relations.kernels.tables import (
    KIND_ALIGN,
    KIND_CLUTTER,
    KIND_FACE_TO,
    KIND_NEXT_TO,
    KIND_NOT_NEXT_TO,
    KIND_ON,
    NUM_KINDS,
    NUM_SLOTS,
    RF_W,
    SLOT_ALIGN,
    SLOT_CLUTTER,
    SLOT_FACE_TO,
    SLOT_NEXT_TO,
    SLOT_NO_OVERLAP,
    SLOT_NOT_NEXT_TO,
    SLOT_ON,
    CandidateState,
    SceneTables,
    SolveOutputs,
)
from isaaclab_arena.relations.kernels.violations import obj_bounds, overlap_depth, relation_violation


@wp.func
def check_slot(kind: int) -> int:
    """Verdict slot of the check of a relation kind (-1: a solver objective only, no check)."""
    if kind == KIND_ON:
        return SLOT_ON
    if kind == KIND_CLUTTER:
        return SLOT_CLUTTER
    if kind == KIND_NEXT_TO:
        return SLOT_NEXT_TO
    if kind == KIND_NOT_NEXT_TO:
        return SLOT_NOT_NEXT_TO
    if kind == KIND_ALIGN:
        return SLOT_ALIGN
    if kind == KIND_FACE_TO:
        return SLOT_FACE_TO
    return -1


@wp.func
def evaluate_candidate(T: SceneTables, S: CandidateState, b: int, e: int, write: int, O: SolveOutputs) -> float:
    """Returns the candidate's loss (sum of slope * weight * positive excess per relation, plus the
    no-overlap slope times the clearance-grown penetration of every pair). With ``write`` set, also
    stores every relation's excess and cause, the worst overlapping pair, and one verdict per check."""
    slack = T.slack
    loss = float(0.0)
    worst = float(-BIG)
    wk = int(-1)
    for k in range(T.n_pairs):
        ij = T.pair_i[k]
        lo_i, hi_i = obj_bounds(T, S, b, e, ij[0])
        lo_j, hi_j = obj_bounds(T, S, b, e, ij[1])
        d = overlap_depth(lo_i, hi_i, lo_j, hi_j, 0.0)
        if d > worst:
            worst = d
            wk = k
        dc = overlap_depth(lo_i, hi_i, lo_j, hi_j, T.pair_f[k][0])
        if dc > 0.0:
            loss += T.pair_w * dc
    fails = int(0)  # bit s set: check slot s failed
    if worst > slack:
        fails = 1 << SLOT_NO_OVERLAP
    for r in range(T.kind_start[NUM_KINDS]):
        ri = T.rel_i[r]
        f = T.rel_f[r]
        kind = ri[0]
        c = ri[1]
        clo, chi = obj_bounds(T, S, b, e, c)
        plo = clo
        phi = chi
        if ri[2] >= 0:
            plo, phi = obj_bounds(T, S, b, e, ri[2])
        ex, cause = relation_violation(kind, ri[3], ri[4], f, S.x[b, c], clo, chi, plo, phi, T.on_ztol, slack)
        if kind != KIND_FACE_TO:
            loss += f[RF_W] * wp.max(ex, 0.0)
        slot = check_slot(kind)
        if cause != 0 and slot >= 0:
            fails = fails | (1 << slot)
        if write != 0:
            O.rel_excess[b, ri[5]] = ex
            O.rel_cause[b, ri[5]] = cause
    if write != 0:
        O.ov_pair[b] = wk
        O.ov_depth[b] = worst
        for s in range(NUM_SLOTS):
            O.checks[b, s] = (fails & (1 << s)) == 0
    return loss

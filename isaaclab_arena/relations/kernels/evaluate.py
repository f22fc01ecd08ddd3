"""Evaluation of every relation and the no-overlap term of one candidate: the solver's final loss and the
inexpensive checks' verdicts come from this one function (and the kinds' violation functions)."""

from __future__ import annotations

import warp as wp

from isaaclab_arena.relations.kernels.broad_phase import next_box_pair
from isaaclab_arena.relations.kernels.geometry import BIG, overlap_depth, parked
from isaaclab_arena.relations.kernels.pair_rule import pair_number, rule_pair_of
from isaaclab_arena.relations.kernels.pair_terms import pair_term, support_term
from isaaclab_arena.relations.kernels.rows import WEIGHT
from isaaclab_arena.relations.kernels.tables import (
    PF_CLEARANCE,
    RI_AXIS,
    RI_CHILD,
    RI_FLAG,
    RI_KIND,
    RI_PARENT,
    RI_ROW,
    CandidateState,
    SceneTables,
    SolveOutputs,
    obj_bounds,
)
from isaaclab_arena.relations.kinds.dispatch import (
    NUM_KINDS,
    NUM_SLOTS,
    SLOT_CLEARANCE,
    SLOT_NO_OVERLAP,
    check_slot,
    relation_violation,
)
from isaaclab_arena.relations.kinds import KIND_ID, SLOT_OF_KIND
from isaaclab_arena.relations.kinds.on import On, OnCause

SLOT_ON = wp.constant(SLOT_OF_KIND[KIND_ID[On]])
ON_UNSUPPORTED = wp.constant(int(OnCause.UNSUPPORTED))
ALL_AXES = wp.constant(wp.vec3(1.0, 1.0, 1.0))


@wp.func
def passes(excess: float, slack: float) -> bool:
    """The one acceptance rule of every check: the excess over its limit is at most the slack (metres)."""
    return excess <= slack


def _evaluate_candidate(general: bool, rule: bool = False):
    """The evaluation function; ``general`` adds the OBB / MESH pairs and the MESH support terms, ``rule`` finds
    the axis-aligned pairs by rule (``SceneTables.pair_rule``, ``kernels/pair_rule.py``) instead of in the listed
    tables (variants of their own, so that box scenes' kernels keep the smaller function the CPU compiler inlines:
    the rule's loop beside the listed one made boxes3's finalize kernel 2x slower)."""
    suffix = ("_general" if general else "") + ("_rule" if rule else "")

    @wp.func(name="evaluate_candidate" + suffix)
    def evaluate_candidate(T: SceneTables, S: CandidateState, b: int, e: int, write: int, O: SolveOutputs) -> float:
        """Returns the candidate's loss (sum of slope x weight x positive excess per relation, plus the
        no-overlap slope times the clearance-grown penetration of every pair). With ``write`` set, also stores
        every relation's excess and cause, the worst overlapping pair, one verdict per check slot and the
        failed-slot bits."""
        slack = T.slack
        loss = float(0.0)
        worst = float(-BIG)
        wk = int(-1)
        worst_c = float(-BIG)
        wkc = int(-1)
        # axis-aligned boxes: every pair, or (large scenes) those the sweep along X brings within reach; a pair
        # left out is farther apart than any clearance (it changes no verdict, no loss; only a separated
        # layout's reported closest distance, which then stays at -BIG or the nearest pair within reach)
        a = int(0)
        t = int(-1)
        reach = float(0.0)
        if not wp.static(rule):
            while True:
                k, a, t, reach, vi, vj = next_box_pair(T.sweep, 0, T.n_box_pairs, T.n_mov, T.n_all, S.order, S.key,
                                                       S.x, S.olo, S.ohi, T.pair_of, b, T.sweep_pad, a, t, reach)
                if k < 0:
                    break
                ij = T.pair_i[k]
                lo_i, hi_i = obj_bounds(T, S, b, e, ij[0])
                lo_j, hi_j = obj_bounds(T, S, b, e, ij[1])
                d = overlap_depth(lo_i, hi_i, lo_j, hi_j, 0.0)
                if d > worst:
                    worst = d
                    wk = k
                # the clearance-grown depth: the same as overlap_depth with the clearance (rounding is monotone,
                # so the least axis plus the clearance is the least of the axes plus it, bit for bit)
                dc = d + T.pair_f[k][PF_CLEARANCE]
                if dc > 0.0:
                    loss += T.pair_w * dc
                if ij[1] < T.n_mov and dc > worst_c:  # clearance: pairs of two relation-placed objects
                    worst_c = dc
                    wkc = k
        if wp.static(rule):  # pairs by rule: the sweep's (i, j) that are pairs, as above, numbered as listed
            while True:
                k, a, t, reach, vi, vj = next_box_pair(T.sweep, 1, T.n_box_pairs, T.n_mov, T.n_all, S.order, S.key,
                                                       S.x, S.olo, S.ohi, T.pair_of, b, T.sweep_pad, a, t, reach)
                if k < 0:
                    break
                ok, i, j, clearance, axes = rule_pair_of(T.rule_i, T.rule_ex, T.rule_clj, T.rule_clv, T.clearance,
                                                         vi, vj)
                if ok:
                    lo_i, hi_i = obj_bounds(T, S, b, e, i)
                    lo_j, hi_j = obj_bounds(T, S, b, e, j)
                    d = overlap_depth(lo_i, hi_i, lo_j, hi_j, 0.0)
                    if d > worst:
                        worst = d
                        wk = pair_number(T.n_mov, T.rule_i, T.rule_row, T.rule_ex, i, j)
                    dc = d + clearance
                    if dc > 0.0:
                        loss += T.pair_w * dc
                    if j < T.n_mov and dc > worst_c:
                        worst_c = dc
                        wkc = pair_number(T.n_mov, T.rule_i, T.rule_row, T.rule_ex, i, j)
        if wp.static(general):
            for k in range(T.n_box_pairs, T.n_pairs):  # boxes turned about Z, or MESH: depth grows with the clearance
                pc = T.pair_f[k][PF_CLEARANCE]
                dg, dirn = pair_term(T, S, b, e, k, pc, BIG, ALL_AXES)
                if dg - pc > worst:
                    worst = dg - pc
                    wk = k
                if dg > 0.0:
                    loss += T.pair_w * dg
                if T.pair_i[k][1] < T.n_mov and dg > worst_c:
                    worst_c = dg
                    wkc = k
        fails = int(0)  # bit s set: check slot s failed
        if not passes(worst, slack):
            fails = fails | (1 << SLOT_NO_OVERLAP)
        if not passes(worst_c, slack):
            fails = fails | (1 << SLOT_CLEARANCE)
        for r in range(T.kind_start[NUM_KINDS]):
            ri = T.rel_i[r]
            f = T.rel_f[r]
            kind = ri[RI_KIND]
            c = ri[RI_CHILD]
            if parked(S.x[b, c]):  # a parked pool member has no relation residuals
                if write != 0:
                    O.rel_excess[b, ri[RI_ROW]] = 0.0
                    O.rel_cause[b, ri[RI_ROW]] = 0
                continue
            clo, chi = obj_bounds(T, S, b, e, c)
            plo = clo
            phi = chi
            if ri[RI_PARENT] >= 0:
                plo, phi = obj_bounds(T, S, b, e, ri[RI_PARENT])
            ex, cause = relation_violation(kind, ri[RI_AXIS], ri[RI_FLAG], f, S.x[b, c], clo, chi, plo, phi, slack)
            loss += f[WEIGHT] * wp.max(ex, 0.0)
            slot = check_slot(kind)
            if cause != 0 and slot >= 0:
                fails = fails | (1 << slot)
            if write != 0:
                O.rel_excess[b, ri[RI_ROW]] = ex
                O.rel_cause[b, ri[RI_ROW]] = cause
        if wp.static(general):
            # MESH support terms: part of their On relation's check
            for s in range(T.n_support):
                if parked(S.x[b, T.mesh[0].sup_i[s][0]]):
                    continue
                ex, grow, sc, sm, sr = support_term(T, S, b, e, s)
                loss += T.rel_f[sr][WEIGHT] * wp.max(ex, 0.0)
                if not passes(ex, slack):
                    fails = fails | (1 << SLOT_ON)
                    if write != 0:
                        rid = T.rel_i[sr][RI_ROW]
                        if O.rel_cause[b, rid] == 0:
                            O.rel_cause[b, rid] = ON_UNSUPPORTED
                        O.rel_excess[b, rid] = wp.max(O.rel_excess[b, rid], ex)
        if write != 0:
            O.ov_pair[b] = wk
            O.ov_depth[b] = worst
            O.cl_pair[b] = wkc
            O.cl_depth[b] = worst_c
            O.fail_bits[b] = fails
            for s in range(NUM_SLOTS):
                O.checks[b, s] = (fails & (1 << s)) == 0
        return loss

    return evaluate_candidate


#: Scenes whose pairs are all axis-aligned boxes and have no MESH support terms.
evaluate_candidate = _evaluate_candidate(False)
#: Scenes with OBB / MESH pairs or MESH support terms.
evaluate_candidate_general = _evaluate_candidate(True)
#: Scenes whose pairs follow the rule (large scenes of axis-aligned boxes).
evaluate_candidate_rule = _evaluate_candidate(False, rule=True)

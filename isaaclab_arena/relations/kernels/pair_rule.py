"""Pairs by rule (``SceneTables.pair_rule``): the no_overlap pairs of a large scene of axis-aligned boxes,
derived from per-object rows (``rule_i``, ``compiler/pair_rule.py``) instead of read from per-pair tables, so that
the scene's memory grows with its objects, not with its pairs.

The rule is the one the listed tables follow (``compiler/pair_tables.py::overlap_pairs``): placed object i and
object j form a pair when j is a placed object or a fixed collider, and the two are not exempt (an object and its
support); the clearance is the solver's unless the pair has one of its own; a push may move the pair apart along
an axis unless both are pinned on it (a fixed object always is), and along x and y when both are pinned on every
axis. Pair numbers are those of the listed order (by i, then the placed objects after i, then the fixed
colliders, less the exempt ones), so outputs that name a pair (``ov_pair``) are the same either way.
"""

from __future__ import annotations

import warp as wp

from isaaclab_arena.relations.kernels.tables import (
    RU_CL0,
    RU_CL1,
    RU_COLLIDER,
    RU_EX0,
    RU_EX1,
    RU_PINNED,
    vec6i,
)


@wp.func
def rule_pair_of(rule_i: wp.array(dtype=vec6i), rule_ex: wp.array(dtype=int), rule_clj: wp.array(dtype=int),
                 rule_clv: wp.array(dtype=float), default_clearance: float, a: int, c: int):
    """Whether placed object ``a`` and object ``c`` form a pair, then the pair's objects in its order (i < j),
    its clearance (m) and the axes a push may move it apart along (1.0 / 0.0): ``(ok, i, j, clearance, axes)``.
    It takes the arrays it reads, not the scene tables (which warp copies by value to a function not inlined)."""
    i = a
    j = c
    if c < a:
        i = c
        j = a
    ri = rule_i[i]
    rj = rule_i[j]
    ok = True
    if i == j or rj[RU_COLLIDER] < 0:
        ok = False
    for q in range(ri[RU_EX0], ri[RU_EX1]):
        if rule_ex[q] == j:
            ok = False
    clearance = default_clearance
    for q in range(ri[RU_CL0], ri[RU_CL1]):
        if rule_clj[q] == j:
            clearance = rule_clv[q]
    pin = ri[RU_PINNED] & rj[RU_PINNED]
    axes = wp.vec3(float(1 - (pin & 1)), float(1 - ((pin >> 1) & 1)), float(1 - ((pin >> 2) & 1)))
    if pin == 7:
        axes = wp.vec3(1.0, 1.0, 0.0)
    return ok, i, j, clearance, axes


@wp.func
def rule_column(rule_i: wp.array(dtype=vec6i), n_mov: int, i: int, j: int) -> int:
    """Place of object j among placed object i's partners before exemptions: the placed objects after i, then
    the fixed colliders."""
    if j >= n_mov:
        return n_mov - 1 - i + rule_i[j][RU_COLLIDER]
    return j - i - 1


@wp.func
def pair_number(n_mov: int, rule_i: wp.array(dtype=vec6i), rule_row: wp.array(dtype=int), rule_ex: wp.array(dtype=int),
                i: int, j: int) -> int:
    """The number of pair (i, j) (i < j, a pair by rule): its index in the listed order."""
    col = rule_column(rule_i, n_mov, i, j)
    number = rule_row[i] + col
    ri = rule_i[i]
    for q in range(ri[RU_EX0], ri[RU_EX1]):
        if rule_column(rule_i, n_mov, i, rule_ex[q]) < col:
            number -= 1
    return number

"""NextTo: the subject beside its parent on one side, at a gap of distance_m (within tolerance_m)."""

from __future__ import annotations

from dataclasses import dataclass

import warp as wp

from isaaclab_arena.relations.compiler.difference_constraints import C, H, L, RelationEdges
from isaaclab_arena.relations.kernels.geometry import BIG, shrunk
from isaaclab_arena.relations.kinds.kind import (
    CauseCode,
    KindRole,
    PackedRelation,
    ParamColumns,
    ParamRow,
    RoomRow,
    RelationKind,
    RelationLossStrategy,
)
from isaaclab_arena.relations.relation_base import Relation, Side, coerce_enum, number


class NextTo(Relation):
    """Places the subject beside the parent on ``side`` with a gap of ``distance_m`` (within ``tolerance_m``).

    Args:
        parent: The reference asset.
        side: Which side of the parent (``Side`` or its string).
        relation_loss_weight: Weight of the relation's loss term.
        distance_m: Gap between the parent's face and the subject's facing side, metres (>= 0).
        cross_position_ratio: Preferred position along the parent's cross axis, -1 (min edge) .. 1 (max
            edge); None: anywhere within the parent's cross extent. A soft preference, not checked.
        tolerance_m: Accepted gap error above ``distance_m``, metres (closer than ``distance_m`` fails).
    """

    yaml_kind = "next_to"
    is_spatial = True

    def __init__(self, parent, side: Side | str = Side.POSITIVE_X, relation_loss_weight: float = 1.0,
                 distance_m: float = 0.05, cross_position_ratio: float | None = None, tolerance_m: float = 0.01):
        super().__init__(parent, relation_loss_weight)
        self.side = coerce_enum(Side, side, "NextTo", "side")
        self.distance_m = number(distance_m, "NextTo", "distance_m", minimum=0.0)
        self.cross_position_ratio = number(cross_position_ratio, "NextTo", "cross_position_ratio", optional=True,
                                           minimum=-1.0, maximum=1.0)
        self.tolerance_m = number(tolerance_m, "NextTo", "tolerance_m", minimum=0.0)

    def params(self):
        return {"side": self.side.value, "relation_loss_weight": self.relation_loss_weight,
                "distance_m": self.distance_m, "cross_position_ratio": self.cross_position_ratio,
                "tolerance_m": self.tolerance_m}

    def describe(self) -> str:
        return f"next_to({self.parent.name}, {self.side.value})"


@dataclass(frozen=True)
class NextToLossStrategy(RelationLossStrategy):
    slope: float = 10.0


class NextToCause(CauseCode):
    WRONG_SIDE = 1, "on the wrong side"
    OFF_CROSS_EXTENT = 2, "outside the parent's extent along the cross axis"
    TOO_CLOSE = 3, "closer than distance_m"
    TOO_FAR = 4, "farther than distance_m + tolerance_m"


COLUMNS = ParamColumns("sign", "distance_m", "tolerance_m", "cross_ratio")
SIGN, DISTANCE, TOLERANCE, RATIO = COLUMNS.constants()


def pack(rel: NextTo, ctx) -> PackedRelation:
    """Axis column: the side's axis; flag: 1 when a cross-position ratio is given. The pair's no_overlap
    clearance is at most the requested gap."""
    ctx.limit_pair_clearance(rel.distance_m)
    return PackedRelation(axis=rel.side.axis_index, flag=int(rel.cross_position_ratio is not None), values={
        "sign": rel.side.sign, "distance_m": rel.distance_m, "tolerance_m": rel.tolerance_m,
        "cross_ratio": rel.cross_position_ratio or 0.0})


@wp.func
def interval(axis: int, flag: int, f: ParamRow, olo: wp.vec3, ohi: wp.vec3, plo: wp.vec3, phi: wp.vec3,
             at_ratio: int, room: RoomRow):
    """Origin range putting the gap in [dist, dist + tol] (aimed inside by a small band) and the subject's
    centre within the parent's cross extent (at the ratio point when ``at_ratio`` and a ratio is given)."""
    lo = wp.vec3(-BIG)
    hi = wp.vec3(BIG)
    dist = f[DISTANCE]
    tol = f[TOLERANCE]
    band = wp.min(0.25 * tol, 1.0e-3)
    g_lo = dist + band
    g_hi = dist + tol - band
    if f[SIGN] > 0.0:
        lo[axis] = phi[axis] + g_lo - olo[axis]
        hi[axis] = phi[axis] + g_hi - olo[axis]
    else:
        lo[axis] = plo[axis] - g_hi - ohi[axis]
        hi[axis] = plo[axis] - g_lo - ohi[axis]
    c = 1 - axis
    co = 0.5 * (olo[c] + ohi[c])
    if flag != 0 and at_ratio != 0:
        t = 0.5 * (plo[c] + phi[c]) + f[RATIO] * 0.5 * (phi[c] - plo[c]) - co
        lo[c] = t
        hi[c] = t
    else:
        l, h = shrunk(plo[c] - co, phi[c] - co)
        lo[c] = l
        hi[c] = h
    return lo, hi


@wp.func
def violation(axis: int, flag: int, f: ParamRow, p: wp.vec3, clo: wp.vec3, chi: wp.vec3, plo: wp.vec3,
              phi: wp.vec3, slack: float):
    """Side and cross position within tol; gap in [dist, dist + tol] (never closer than dist)."""
    dist = f[DISTANCE]
    tol = f[TOLERANCE]
    cc = 0.5 * (clo + chi)
    if f[SIGN] > 0.0:
        side = phi[axis] - cc[axis]
        gap = clo[axis] - phi[axis]
    else:
        side = cc[axis] - plo[axis]
        gap = plo[axis] - chi[axis]
    c = 1 - axis
    cross = wp.max(plo[c] - cc[c], cc[c] - phi[c])
    e1 = side - tol
    e2 = cross - tol
    e3 = dist - gap
    e4 = gap - dist - tol
    if e1 > slack:
        return e1, 1
    if e2 > slack:
        return e2, 2
    if e3 > slack:
        return e3, 3
    if e4 > slack:
        return e4, 4
    return wp.max(wp.max(e1, e2), wp.max(e3, e4)), 0


def feasibility(rel: NextTo, e: RelationEdges) -> None:
    """Feasibility constraints on one axis: along the side's axis a gap of distance_m (+ tolerance_m) from the
    parent's face on that side, the subject's centre beyond it; across, the subject's centre within the parent's
    extent (tolerance_m either way)."""
    k, d, tol = rel.side.axis_index, rel.distance_m, rel.tolerance_m
    if e.axis == k and rel.side.sign > 0:
        e.between(e.p(H), e.s(L), d, d + tol)
        e.at_least(e.p(H), e.s(C), -tol)
    elif e.axis == k:
        e.between(e.s(H), e.p(L), d, d + tol)
        e.at_least(e.s(C), e.p(L), -tol)
    elif e.axis == 1 - k:
        e.at_least(e.p(L), e.s(C), -tol)
        e.at_least(e.s(C), e.p(H), -tol)


KIND = RelationKind(name="next_to", relation=NextTo, role=KindRole.INTERVAL, columns=COLUMNS, pack=pack,
                    violation=violation, interval=interval, causes=NextToCause, check="next_to",
                    strategy=NextToLossStrategy,
                    feasibility=feasibility, feasibility_help="a smaller distance_m")

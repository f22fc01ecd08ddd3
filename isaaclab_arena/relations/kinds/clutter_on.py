"""ClutterOn: a release pose above a support before physics, inside the support's central region."""

from __future__ import annotations

from dataclasses import dataclass

import warp as wp

from isaaclab_arena.relations.compiler.difference_constraints import H, L, RelationEdges
from isaaclab_arena.relations.kernels.geometry import BIG, SHRINK, shrunk
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
from isaaclab_arena.relations.relation_base import Relation, flag, number, support_length


class ClutterOn(Relation):
    """Release pose above a support before physics: central ``spread`` region, ``clearance_m`` above its top.

    Args:
        parent: The support (an anchor, or placed by relations).
        spread: Fraction of the support's width and depth available for release, in (0, 1].
        clearance_m: Minimum height of the subject's bottom above the support top, metres.
        gap_m: Initial gap to neighbouring release bounds, metres (at least the solver clearance is used).
        random_yaw: Sample a world-Z yaw in addition to RotateAroundSolution.
        edge_margin_m: Inward margin within the release region, metres.
        relation_loss_weight: Weight of the relation's loss term.

    ``clearance_m``, ``gap_m`` and ``edge_margin_m`` are >= 0 and at most the support's largest side (at least
    0.5 m; ``relation_base.support_length``).
    """

    yaml_kind = "clutter_on"
    is_spatial = True

    def __init__(self, parent, spread: float = 0.2, clearance_m: float = 0.01, gap_m: float = 0.03,
                 random_yaw: bool = True, edge_margin_m: float = 0.0, relation_loss_weight: float = 1.0):
        super().__init__(parent, relation_loss_weight)
        self.spread = number(spread, "ClutterOn", "spread", minimum=0.0, strict_minimum=True, maximum=1.0)
        self.clearance_m = support_length(clearance_m, parent, "ClutterOn", "clearance_m")
        self.gap_m = support_length(gap_m, parent, "ClutterOn", "gap_m")
        self.random_yaw = flag(random_yaw, "ClutterOn", "random_yaw")
        self.edge_margin_m = support_length(edge_margin_m, parent, "ClutterOn", "edge_margin_m")

    def params(self):
        return {"spread": self.spread, "clearance_m": self.clearance_m, "gap_m": self.gap_m,
                "random_yaw": self.random_yaw, "edge_margin_m": self.edge_margin_m,
                "relation_loss_weight": self.relation_loss_weight}


@dataclass(frozen=True)
class ClutterOnLossStrategy(RelationLossStrategy):
    slope: float = 100.0


class ClutterOnCause(CauseCode):
    OUTSIDE_REGION = 1, "outside the release region"
    TOO_LOW = 2, "too little clearance above the support"


COLUMNS = ParamColumns("spread", "clearance_m", "gap_m", "edge_margin_m")
SPREAD, CLEARANCE, GAP, MARGIN = COLUMNS.constants()


def pack(rel: ClutterOn, ctx) -> PackedRelation:
    """The release may touch its support; its gap to neighbours is at least the solver clearance."""
    ctx.exempt_from_overlap()
    return PackedRelation(values={"spread": rel.spread, "clearance_m": rel.clearance_m,
                                  "gap_m": max(rel.gap_m, ctx.solver_params.clearance_m),
                                  "edge_margin_m": rel.edge_margin_m})


@wp.func
def region(plo: wp.vec3, phi: wp.vec3, spread: float, margin: float):
    """Release region (XY of the returned lo/hi): central ``spread`` of the support, inset by margin."""
    c = 0.5 * (plo + phi)
    h = 0.5 * spread * (phi - plo)
    return c - h + wp.vec3(margin, margin, 0.0), c + h - wp.vec3(margin, margin, 0.0)


@wp.func
def footprint_excess(clo: wp.vec3, chi: wp.vec3, plo: wp.vec3, phi: wp.vec3, f: ParamRow) -> float:
    """How far (m) the subject's footprint [clo, chi] reaches outside the release region (<= 0 inside)."""
    rlo, rhi = region(plo, phi, f[SPREAD], f[MARGIN])
    fp = float(-BIG)
    for a in range(2):
        fp = wp.max(fp, wp.max(rlo[a] - clo[a], chi[a] - rhi[a]))
    return fp


@wp.func
def interval(axis: int, flag: int, f: ParamRow, olo: wp.vec3, ohi: wp.vec3, plo: wp.vec3, phi: wp.vec3,
             at_ratio: int, room: RoomRow):
    """X/Y: the release region; Z: at least clearance above the support top (no upper bound)."""
    rlo, rhi = region(plo, phi, f[SPREAD], f[MARGIN])
    lo = wp.vec3(-BIG)
    hi = wp.vec3(BIG)
    for a in range(2):
        l, h = shrunk(rlo[a] - olo[a], rhi[a] - ohi[a])
        lo[a] = l
        hi[a] = h
    lo[2] = phi[2] + f[CLEARANCE] - olo[2] + SHRINK
    return lo, hi


@wp.func
def violation(axis: int, flag: int, f: ParamRow, p: wp.vec3, clo: wp.vec3, chi: wp.vec3, plo: wp.vec3,
              phi: wp.vec3, slack: float):
    """Footprint inside the release region; bottom at least clearance above the support top (slack only
    on the clearance, never below the top)."""
    fp = footprint_excess(clo, chi, plo, phi, f)
    low = wp.max((phi[2] + f[CLEARANCE]) - clo[2], phi[2] - clo[2] + slack)
    if fp > slack:
        return fp, 1
    if low > slack:
        return low, 2
    return wp.max(fp, low), 0


def feasibility(rel: ClutterOn, e: RelationEdges) -> None:
    """Feasibility constraints on one axis: released at least clearance_m above the parent's top; in x and y inside
    the central ``spread`` of the parent, inset by edge_margin_m (when the parent's width does not turn)."""
    if e.axis == 2:
        e.at_least(e.p(H), e.s(L), rel.clearance_m)
        return
    width = e.width(e.parent, e.axis)
    if width is not None:
        inset = 0.5 * (1.0 - rel.spread) * width + rel.edge_margin_m
        e.at_least(e.p(L), e.s(L), inset)
        e.at_least(e.s(H), e.p(H), inset)


KIND = RelationKind(name="clutter_on", relation=ClutterOn, role=KindRole.INTERVAL, columns=COLUMNS, pack=pack,
                    violation=violation, interval=interval, causes=ClutterOnCause, check="clutter_on_relation",
                    strategy=ClutterOnLossStrategy,
                    feasibility=feasibility, feasibility_help="a larger spread or a smaller edge_margin_m")

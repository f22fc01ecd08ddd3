"""On: the subject rests on top of its parent, its footprint inside the parent's (inset) extent."""

from __future__ import annotations

from dataclasses import dataclass

import warp as wp

from isaaclab_arena.relations.compiler.difference_constraints import H, L, RelationEdges
from isaaclab_arena.relations.kernels.geometry import BIG, shrunk, with_room
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
from isaaclab_arena.relations.relation_base import Relation, flag, support_length


class On(Relation):
    """Places the subject on top of the parent, footprint inside the parent's (optionally inset) extent.

    Args:
        parent: The support.
        relation_loss_weight: Weight of the relation's loss term.
        clearance_m: Gap between the support's top and the subject's bottom, metres (0 .. the support's largest side,
            at least 0.5 m: ``support_length``).
        edge_margin_m: Inward inset of the support's X/Y edges for containment, metres (same range).
        overlap: Require only intersecting footprints on X and Y (edge contact counts); ignores the margin.
    """

    yaml_kind = "on"
    is_spatial = True

    def __init__(self, parent, relation_loss_weight: float = 1.0, clearance_m: float = 0.01,
                 edge_margin_m: float = 0.05, overlap: bool = False):
        super().__init__(parent, relation_loss_weight)
        self.clearance_m = support_length(clearance_m, parent, "On", "clearance_m")
        self.edge_margin_m = support_length(edge_margin_m, parent, "On", "edge_margin_m")
        self.overlap = flag(overlap, "On", "overlap")

    def params(self):
        return {"relation_loss_weight": self.relation_loss_weight, "clearance_m": self.clearance_m,
                "edge_margin_m": self.edge_margin_m, "overlap": self.overlap}


@dataclass(frozen=True)
class OnLossStrategy(RelationLossStrategy):
    slope: float = 100.0


class OnCause(CauseCode):
    FOOTPRINT = 1, "footprint outside the support (edge_margin_m inset)"
    BELOW = 2, "below the support top"
    ABOVE = 3, "above the support top (more than clearance_m + on_relation_z_tolerance_m)"
    UNSUPPORTED = 4, "footprint over a gap in the support's collision mesh (MESH support term)"


COLUMNS = ParamColumns("clearance_m", "edge_margin_m", "z_tolerance_m")
CLEARANCE, MARGIN, ZTOL = COLUMNS.constants()


def pack(rel: On, ctx) -> PackedRelation:
    """The subject's height is fixed by the support (pinned Z) and it may touch the support."""
    ctx.pin(2)
    ctx.exempt_from_overlap()
    return PackedRelation(flag=int(rel.overlap), values={
        "clearance_m": rel.clearance_m, "edge_margin_m": rel.edge_margin_m,
        "z_tolerance_m": ctx.placer_params.on_relation_z_tolerance_m})


@wp.func
def interval(axis: int, flag: int, f: ParamRow, olo: wp.vec3, ohi: wp.vec3,
             plo: wp.vec3, phi: wp.vec3, at_ratio: int, room: RoomRow):
    """X/Y: the inset footprint less the room the subject's NextTo chain needs on this support (``room[0:4]``;
    overlap: any intersection); Z: bottom at top + clearance."""
    lo = wp.vec3(-BIG)
    hi = wp.vec3(BIG)
    for a in range(2):
        if flag != 0:
            l, h = shrunk(plo[a] - ohi[a], phi[a] - olo[a])
        else:
            l, h = shrunk(plo[a] + f[MARGIN] - olo[a], phi[a] - f[MARGIN] - ohi[a])
            l, h = with_room(l, h, room[2 * a], room[2 * a + 1])
        lo[a] = l
        hi[a] = h
    z = phi[2] + f[CLEARANCE] - olo[2]
    lo[2] = z
    hi[2] = z
    return lo, hi


@wp.func
def violation(axis: int, flag: int, f: ParamRow, p: wp.vec3, clo: wp.vec3,
              chi: wp.vec3, plo: wp.vec3, phi: wp.vec3, slack: float):
    """Footprint inside the parent inset by the margin (overlap: intersecting on X and Y); bottom in
    (top - ztol, top + clearance + ztol]."""
    margin = f[MARGIN]
    ztol = f[ZTOL]
    fp = float(-BIG)
    for a in range(2):
        if flag != 0:
            fp = wp.max(fp, wp.max(plo[a] - chi[a], clo[a] - phi[a]))
        else:
            fp = wp.max(fp, wp.max(plo[a] + margin - clo[a], chi[a] - (phi[a] - margin)))
    below = (phi[2] - ztol) - clo[2]
    above = clo[2] - (phi[2] + f[CLEARANCE] + ztol)
    if fp > slack:
        return fp, 1
    if below > slack:
        return below, 2
    if above > slack:
        return above, 3
    return wp.max(fp, wp.max(below, above)), 0


def feasibility(rel: On, e: RelationEdges) -> None:
    """Feasibility constraints on one axis: in z the subject's bottom within clearance_m (the placer's z tolerance
    either way) above the parent's top; in x and y its footprint inside the parent's inset by edge_margin_m, or
    overlapping the parent with ``overlap``."""
    if e.axis == 2:
        e.between(e.p(H), e.s(L), -e.z_tolerance_m, rel.clearance_m + e.z_tolerance_m)
    elif rel.overlap:
        e.at_least(e.p(L), e.s(H), 0.0)
        e.at_least(e.s(L), e.p(H), 0.0)
    else:
        e.at_least(e.p(L), e.s(L), rel.edge_margin_m)
        e.at_least(e.s(H), e.p(H), rel.edge_margin_m)


KIND = RelationKind(name="on", relation=On, role=KindRole.INTERVAL, columns=COLUMNS, pack=pack,
                    violation=violation, interval=interval, causes=OnCause, check="on_relation",
                    strategy=OnLossStrategy,
                    feasibility=feasibility, feasibility_help="a larger support or a smaller edge_margin_m")

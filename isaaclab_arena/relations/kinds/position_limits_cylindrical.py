"""PositionLimitsCylindrical: the subject's origin within [radius_min, radius_max] (XY) of a fixed centre."""

from __future__ import annotations

from dataclasses import dataclass

import warp as wp

from isaaclab_arena.relations.compiler.difference_constraints import ORIGIN, O, RelationEdges
from isaaclab_arena.relations.kernels.geometry import BIG, flagged
from isaaclab_arena.relations.kernels.tables import CandidateState, SceneTables
from isaaclab_arena.relations.kinds.kind import (
    CauseCode,
    KindRole,
    PackedRelation,
    ParamColumns,
    ParamRow,
    RelationKind,
    RelationLossStrategy,
)
from isaaclab_arena.relations.relation_base import RelationBase, number


class PositionLimitsCylindrical(RelationBase):
    """Keeps the subject's origin within [radius_min, radius_max] (XY distance, metres) of a fixed centre.

    Args:
        center_x, center_y: Env-local world XY of the centre, metres.
        radius_min: Minimum XY distance from the centre (a keep-out disc), or None.
        radius_max: Maximum XY distance from the centre, or None.
        relation_loss_weight: Weight of the relation's loss term.
    """

    yaml_kind = "position_limits_cylindrical"
    is_spatial = True

    def __init__(self, center_x: float, center_y: float, radius_min: float | None = None,
                 radius_max: float | None = None, relation_loss_weight: float = 1.0):
        name = "PositionLimitsCylindrical"
        self.center_x = number(center_x, name, "center_x")
        self.center_y = number(center_y, name, "center_y")
        self.radius_min = number(radius_min, name, "radius_min", optional=True, minimum=0.0)
        self.radius_max = number(radius_max, name, "radius_max", optional=True, minimum=0.0, strict_minimum=True)
        if self.radius_min is None and self.radius_max is None:
            raise ValueError(f"{name}: set radius_min, radius_max or both (metres); both are None")
        if self.radius_min is not None and self.radius_max is not None and self.radius_min > self.radius_max:
            raise ValueError(f"{name}: radius_min {self.radius_min:g} is above radius_max {self.radius_max:g}")
        self.relation_loss_weight = number(relation_loss_weight, name, "relation_loss_weight", minimum=0.0)

    def params(self):
        return {"center_x": self.center_x, "center_y": self.center_y, "radius_min": self.radius_min,
                "radius_max": self.radius_max, "relation_loss_weight": self.relation_loss_weight}


@dataclass(frozen=True)
class PositionLimitsCylindricalLossStrategy(RelationLossStrategy):
    slope: float = 100.0


class PositionLimitsCylindricalCause(CauseCode):
    INSIDE_RADIUS_MIN = 1, "inside radius_min"
    OUTSIDE_RADIUS_MAX = 2, "outside radius_max"


COLUMNS = ParamColumns("center_x", "center_y", "radius_min", "radius_max", "margin_m")
CENTER_X, CENTER_Y, RADIUS_MIN, RADIUS_MAX, MARGIN = COLUMNS.constants()


def pack(rel: PositionLimitsCylindrical, ctx) -> PackedRelation:
    """An absent radius is packed as -1. ``margin_m``: how far the subject's RandomAroundSolution may move it
    in XY after solving; the solver keeps that far inside the annulus (the check judges the radii)."""
    half = ctx.random_half_ranges()
    return PackedRelation(values={
        "center_x": rel.center_x, "center_y": rel.center_y,
        "radius_min": -1.0 if rel.radius_min is None else rel.radius_min,
        "radius_max": -1.0 if rel.radius_max is None else rel.radius_max,
        "margin_m": (half[0] ** 2 + half[1] ** 2) ** 0.5})


@wp.func
def radial_depth(p: wp.vec3, f: ParamRow, margin: float):
    """(depth, gradient, cause): depth > 0 inside radius_min + margin (cause 1) or outside radius_max - margin
    (cause 2)."""
    dx = p[0] - f[CENTER_X]
    dy = p[1] - f[CENTER_Y]
    r = wp.sqrt(dx * dx + dy * dy)
    d = wp.vec3(1.0, 0.0, 0.0)
    if r > 1.0e-9:
        d = wp.vec3(dx / r, dy / r, 0.0)
    e_in = float(-BIG)
    e_out = float(-BIG)
    if f[RADIUS_MIN] >= 0.0:
        e_in = f[RADIUS_MIN] + margin - r
    if f[RADIUS_MAX] >= 0.0:
        e_out = r - (f[RADIUS_MAX] - margin)
    if e_in >= e_out:
        return e_in, -d, 1
    return e_out, d, 2


@wp.func
def penalty(axis: int, flag: int, f: ParamRow, p: wp.vec3, clo: wp.vec3, chi: wp.vec3, plo: wp.vec3,
            phi: wp.vec3):
    """(radial depth inside the annulus shrunk by the RandomAroundSolution margin, the margin, gradient)."""
    depth, grad, cause = radial_depth(p, f, f[MARGIN])
    return depth, f[MARGIN], grad


@wp.func
def push(T: SceneTables, S: CandidateState, b: int, ci: int, pi: int, p: wp.vec3, clo: wp.vec3, chi: wp.vec3,
         plo: wp.vec3, phi: wp.vec3, axis: int, f: ParamRow) -> wp.vec3:
    """Radially, toward the allowed annulus."""
    depth, grad, cause = radial_depth(p, f, f[MARGIN])
    return grad


@wp.func
def violation(axis: int, flag: int, f: ParamRow, p: wp.vec3, clo: wp.vec3, chi: wp.vec3, plo: wp.vec3,
              phi: wp.vec3, slack: float):
    e, grad, cause = radial_depth(p, f, 0.0)
    return flagged(e, slack, cause)


def feasibility(rel: PositionLimitsCylindrical, e: RelationEdges) -> None:
    """Feasibility constraint in x and y: the origin within radius_max of the centre (the circle's bounding box;
    the minimum radius is no interval)."""
    if rel.radius_max is not None and e.axis < 2:
        centre = (rel.center_x, rel.center_y)[e.axis]
        e.between(ORIGIN, e.s(O), centre - rel.radius_max, centre + rel.radius_max)


KIND = RelationKind(name="position_limits_cylindrical", relation=PositionLimitsCylindrical, role=KindRole.PENALTY,
                    columns=COLUMNS, pack=pack, violation=violation, penalty=penalty, push=push,
                    causes=PositionLimitsCylindricalCause, check="position_limits", strategy=PositionLimitsCylindricalLossStrategy,
                    has_parent=False,
                    feasibility=feasibility, feasibility_help="wider radius limits or another centre")

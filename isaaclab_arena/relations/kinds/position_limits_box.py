"""PositionLimitsBox: the subject's origin inside an env-local world-axis box."""

from __future__ import annotations

from dataclasses import dataclass

import warp as wp

from isaaclab_arena.relations.compiler.difference_constraints import ORIGIN, O, RelationEdges
from isaaclab_arena.relations.kernels.geometry import BIG, flagged, with_room
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
from isaaclab_arena.relations.relation_base import RelationBase, limits, number


class PositionLimitsBox(RelationBase):
    """Keeps the subject's origin inside an env-local world-axis box; None leaves a bound open.

    Args:
        x_limits, y_limits, z_limits: (minimum, maximum) world coordinate, metres; either may be None.
        relation_loss_weight: Weight of the relation's loss term.
    """

    yaml_kind = "position_limits_box"
    is_spatial = True

    def __init__(self, x_limits=(None, None), y_limits=(None, None), z_limits=(None, None),
                 relation_loss_weight: float = 1.0):
        self.x_limits = limits(x_limits, "PositionLimitsBox", "x_limits")
        self.y_limits = limits(y_limits, "PositionLimitsBox", "y_limits")
        self.z_limits = limits(z_limits, "PositionLimitsBox", "z_limits")
        self.relation_loss_weight = number(relation_loss_weight, "PositionLimitsBox", "relation_loss_weight",
                                           minimum=0.0)

    def params(self):
        return {"x_limits": list(self.x_limits), "y_limits": list(self.y_limits), "z_limits": list(self.z_limits),
                "relation_loss_weight": self.relation_loss_weight}


@dataclass(frozen=True)
class PositionLimitsBoxLossStrategy(RelationLossStrategy):
    slope: float = 100.0


class PositionLimitsBoxCause(CauseCode):
    OUTSIDE = 1, "outside the position limits"


COLUMNS = ParamColumns("x_min", "y_min", "z_min", "x_max", "y_max", "z_max", "spread_x", "spread_y")
X_MIN, Y_MIN, Z_MIN, X_MAX, Y_MAX, Z_MAX, SPREAD_X, SPREAD_Y = COLUMNS.constants()
_OPEN = 1.0e9  # an open bound (metres); equals the kernels' BIG


def pack(rel: PositionLimitsBox, ctx) -> PackedRelation:
    """Open bounds are packed as +-1e9 m. ``spread_x/y`` are the subject's RandomAroundSolution half ranges: the
    modifier moves the origin after solving, so the solver keeps that far inside (Z limits get no such room;
    the check judges the limits themselves)."""
    values = {}
    for axis, (lo, hi) in zip("xyz", (rel.x_limits, rel.y_limits, rel.z_limits)):
        values[f"{axis}_min"] = -_OPEN if lo is None else lo
        values[f"{axis}_max"] = _OPEN if hi is None else hi
    half = ctx.random_half_ranges()
    values["spread_x"], values["spread_y"] = half[0], half[1]
    return PackedRelation(values=values)


@wp.func
def interval(axis: int, flag: int, f: ParamRow, olo: wp.vec3, ohi: wp.vec3, plo: wp.vec3, phi: wp.vec3,
             at_ratio: int, room: RoomRow):
    """The box, less on X/Y the room the subject's NextTo chain needs inside it (``room[4:8]``) and its
    RandomAroundSolution spread."""
    lo = wp.vec3(f[X_MIN], f[Y_MIN], f[Z_MIN])
    hi = wp.vec3(f[X_MAX], f[Y_MAX], f[Z_MAX])
    for a in range(2):
        l, h = with_room(lo[a], hi[a], room[4 + 2 * a] + f[SPREAD_X + a], room[5 + 2 * a] + f[SPREAD_X + a])
        lo[a] = l
        hi[a] = h
    return lo, hi


@wp.func
def violation(axis: int, flag: int, f: ParamRow, p: wp.vec3, clo: wp.vec3, chi: wp.vec3, plo: wp.vec3,
              phi: wp.vec3, slack: float):
    """How far (m) the origin lies outside the box."""
    e = float(-BIG)
    for a in range(3):
        e = wp.max(e, wp.max(f[X_MIN + a] - p[a], p[a] - f[X_MAX + a]))
    return flagged(e, slack, 1)


def feasibility(rel: PositionLimitsBox, e: RelationEdges) -> None:
    """Feasibility constraint on each axis: the origin within that axis' limits (None: open)."""
    e.between(ORIGIN, e.s(O), *(rel.x_limits, rel.y_limits, rel.z_limits)[e.axis])


KIND = RelationKind(name="position_limits_box", relation=PositionLimitsBox, role=KindRole.INTERVAL,
                    columns=COLUMNS, pack=pack, violation=violation, interval=interval,
                    causes=PositionLimitsBoxCause, check="position_limits", strategy=PositionLimitsBoxLossStrategy,
                    has_parent=False,
                    feasibility=feasibility, feasibility_help="wider position limits")

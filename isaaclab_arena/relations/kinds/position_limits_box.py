"""PositionLimitsBox: the subject's origin inside an env-local world-axis box."""

from __future__ import annotations

from dataclasses import dataclass

import warp as wp

from isaaclab_arena.relations.kernels.geometry import BIG, flagged
from isaaclab_arena.relations.kinds.kind import (
    CauseCode,
    KindRole,
    PackedRelation,
    ParamColumns,
    ParamRow,
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


COLUMNS = ParamColumns("x_min", "y_min", "z_min", "x_max", "y_max", "z_max", "room_neg_x", "room_pos_x", "room_neg_y",
                       "room_pos_y")
X_MIN, Y_MIN, Z_MIN, X_MAX, Y_MAX, Z_MAX, ROOM = COLUMNS.constants()[:7]
_OPEN = 1.0e9  # an open bound (metres); equals the kernels' BIG


def pack(rel: PositionLimitsBox, ctx) -> PackedRelation:
    """Open bounds are packed as +-1e9 m. The ``room_*`` columns hold what the subject's NextTo chain needs
    beyond its origin inside these limits, plus its RandomAroundSolution X/Y half ranges (the solver's target
    leaves it free; the check ignores it; Z limits get no such room)."""
    values = {}
    for axis, (lo, hi) in zip("xyz", (rel.x_limits, rel.y_limits, rel.z_limits)):
        values[f"{axis}_min"] = -_OPEN if lo is None else lo
        values[f"{axis}_max"] = _OPEN if hi is None else hi
    room = ctx.chain_room("origin")
    half = ctx.random_half_ranges()  # RandomAroundSolution moves the origin after solving: keep it inside
    room = [room[0] + half[0], room[1] + half[0], room[2] + half[1], room[3] + half[1]]
    values.update(zip(("room_neg_x", "room_pos_x", "room_neg_y", "room_pos_y"), room))
    return PackedRelation(values=values)


@wp.func
def interval(axis: int, flag: int, f: ParamRow, olo: wp.vec3, ohi: wp.vec3, plo: wp.vec3, phi: wp.vec3,
             at_ratio: int):
    """The box, less the room the subject's NextTo chain needs on X/Y."""
    lo = wp.vec3(f[X_MIN] + f[ROOM], f[Y_MIN] + f[ROOM + 2], f[Z_MIN])
    hi = wp.vec3(f[X_MAX] - f[ROOM + 1], f[Y_MAX] - f[ROOM + 3], f[Z_MAX])
    return lo, hi


@wp.func
def violation(axis: int, flag: int, f: ParamRow, p: wp.vec3, clo: wp.vec3, chi: wp.vec3, plo: wp.vec3,
              phi: wp.vec3, slack: float):
    """How far (m) the origin lies outside the box."""
    e = float(-BIG)
    for a in range(3):
        e = wp.max(e, wp.max(f[X_MIN + a] - p[a], p[a] - f[X_MAX + a]))
    return flagged(e, slack, 1)


KIND = RelationKind(name="position_limits_box", relation=PositionLimitsBox, role=KindRole.INTERVAL,
                    columns=COLUMNS, pack=pack, violation=violation, interval=interval,
                    causes=PositionLimitsBoxCause, check="position_limits", strategy=PositionLimitsBoxLossStrategy,
                    has_parent=False)

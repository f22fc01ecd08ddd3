"""AtPosition: selected env-local world coordinates of the subject's origin are fixed."""

from __future__ import annotations

from dataclasses import dataclass

import warp as wp

from isaaclab_arena.relations.compiler.difference_constraints import ORIGIN, O, RelationEdges
from isaaclab_arena.relations.kernels.geometry import BIG, flagged
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
from isaaclab_arena.relations.relation_base import RelationBase, number


class AtPosition(RelationBase):
    """Pins selected env-local world coordinates of the subject's origin (metres); None leaves an axis free.

    Combine with On so that the relation sets the height while the coordinates set the horizontal position.
    """

    yaml_kind = "at_position"
    is_spatial = True

    def __init__(self, x: float | None = None, y: float | None = None, z: float | None = None,
                 relation_loss_weight: float = 1.0):
        self.x = number(x, "AtPosition", "x", optional=True)
        self.y = number(y, "AtPosition", "y", optional=True)
        self.z = number(z, "AtPosition", "z", optional=True)
        if self.x is None and self.y is None and self.z is None:
            raise ValueError("AtPosition: set at least one of x, y, z (metres); all three are None")
        self.relation_loss_weight = number(relation_loss_weight, "AtPosition", "relation_loss_weight", minimum=0.0)

    def params(self):
        return {"x": self.x, "y": self.y, "z": self.z, "relation_loss_weight": self.relation_loss_weight}


@dataclass(frozen=True)
class AtPositionLossStrategy(RelationLossStrategy):
    slope: float = 100.0


class AtPositionCause(CauseCode):
    OFF_TARGET = 1, "off the requested coordinates"


COLUMNS = ParamColumns("use_x", "use_y", "use_z", "x", "y", "z", "spread_x", "spread_y", "spread_z")
USE_X, USE_Y, USE_Z, X, Y, Z, SPREAD_X = COLUMNS.constants()[:7]


def pack(rel: AtPosition, ctx) -> PackedRelation:
    """``use_*`` is 1 where a coordinate is given (that axis is pinned); ``spread_*`` is how far the subject's
    RandomAroundSolution may move it from there after solving (the check accepts that much)."""
    values = {}
    half = ctx.random_half_ranges()
    for axis, (use, col, v) in enumerate((("use_x", "x", rel.x), ("use_y", "y", rel.y), ("use_z", "z", rel.z))):
        if v is not None:
            values[use], values[col] = 1.0, v
            values["spread_" + "xyz"[axis]] = half[axis]
            ctx.pin(axis)
    return PackedRelation(values=values)


@wp.func
def interval(axis: int, flag: int, f: ParamRow, olo: wp.vec3, ohi: wp.vec3, plo: wp.vec3, phi: wp.vec3,
             at_ratio: int, room: RoomRow):
    """The given coordinates exactly; other axes free."""
    lo = wp.vec3(-BIG)
    hi = wp.vec3(BIG)
    for a in range(3):
        if f[USE_X + a] > 0.0:
            lo[a] = f[X + a]
            hi[a] = f[X + a]
    return lo, hi


@wp.func
def violation(axis: int, flag: int, f: ParamRow, p: wp.vec3, clo: wp.vec3, chi: wp.vec3, plo: wp.vec3,
              phi: wp.vec3, slack: float):
    """Largest distance (m) of the origin from a requested coordinate, beyond the RandomAroundSolution spread."""
    e = float(-BIG)
    for a in range(3):
        if f[USE_X + a] > 0.0:
            e = wp.max(e, wp.abs(p[a] - f[X + a]) - f[SPREAD_X + a])
    return flagged(e, slack, 1)


def feasibility(rel: AtPosition, e: RelationEdges) -> None:
    """Feasibility constraint on each given coordinate: the origin exactly there (env-local metres)."""
    v = (rel.x, rel.y, rel.z)[e.axis]
    if v is not None:
        e.between(ORIGIN, e.s(O), v, v)


KIND = RelationKind(name="at_position", relation=AtPosition, role=KindRole.INTERVAL, columns=COLUMNS, pack=pack,
                    violation=violation, interval=interval, causes=AtPositionCause, check="at_position",
                    strategy=AtPositionLossStrategy, has_parent=False,
                    feasibility=feasibility, feasibility_help="other AtPosition coordinates")

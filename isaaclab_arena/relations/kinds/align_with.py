"""AlignWith: bounding-box centres aligned along one world axis, within a band."""

from __future__ import annotations

from dataclasses import dataclass

import warp as wp

from isaaclab_arena.relations.compiler.difference_constraints import C, RelationEdges
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
from isaaclab_arena.relations.relation_base import Axis, Relation, coerce_enum, number


class AlignWith(Relation):
    """Aligns bounding-box centres along one world axis within ``tolerance_m``, offset by ``offset_m``.

    Args:
        parent: Reference asset placed by relations (or an anchor).
        axis: World axis to align (``Axis`` or ``x``/``y``/``z``).
        offset_m: Signed subject-minus-reference centre displacement along that axis, metres.
        tolerance_m: Zero-penalty band and the largest centre error the check accepts, metres.
        relation_loss_weight: Weight of the relation's loss term.
    """

    yaml_kind = "align_with"
    is_spatial = True

    def __init__(self, parent, axis: Axis | str, offset_m: float = 0.0, tolerance_m: float = 0.02,
                 relation_loss_weight: float = 1.0):
        super().__init__(parent, relation_loss_weight)
        self.axis = coerce_enum(Axis, axis, "AlignWith", "axis")
        self.offset_m = number(offset_m, "AlignWith", "offset_m")
        self.tolerance_m = number(tolerance_m, "AlignWith", "tolerance_m", minimum=0.0)

    def params(self):
        return {"axis": self.axis.value, "offset_m": self.offset_m, "tolerance_m": self.tolerance_m,
                "relation_loss_weight": self.relation_loss_weight}

    def describe(self) -> str:
        return f"align_with({self.parent.name}, {self.axis.value})"


@dataclass(frozen=True)
class AlignWithLossStrategy(RelationLossStrategy):
    slope: float = 100.0


class AlignWithCause(CauseCode):
    MISALIGNED = 1, "misaligned beyond tolerance_m"


COLUMNS = ParamColumns("offset_m", "tolerance_m")
OFFSET, TOLERANCE = COLUMNS.constants()


def pack(rel: AlignWith, ctx) -> PackedRelation:
    return PackedRelation(axis=rel.axis.index, values={"offset_m": rel.offset_m, "tolerance_m": rel.tolerance_m})


@wp.func
def interval(axis: int, flag: int, f: ParamRow, olo: wp.vec3, ohi: wp.vec3, plo: wp.vec3, phi: wp.vec3,
             at_ratio: int, room: RoomRow):
    """The subject's centre within tol of the parent's centre + offset along ``axis`` (a small band inside)."""
    lo = wp.vec3(-BIG)
    hi = wp.vec3(BIG)
    tol = f[TOLERANCE]
    band = wp.min(0.25 * tol, 1.0e-3)
    pc = 0.5 * (plo[axis] + phi[axis])
    co = 0.5 * (olo[axis] + ohi[axis])
    lo[axis] = pc + f[OFFSET] - tol + band - co
    hi[axis] = pc + f[OFFSET] + tol - band - co
    return lo, hi


@wp.func
def violation(axis: int, flag: int, f: ParamRow, p: wp.vec3, clo: wp.vec3, chi: wp.vec3, plo: wp.vec3,
              phi: wp.vec3, slack: float):
    """Centre error along axis within tol."""
    err = wp.abs(0.5 * (clo[axis] + chi[axis]) - 0.5 * (plo[axis] + phi[axis]) - f[OFFSET]) - f[TOLERANCE]
    return flagged(err, slack, 1)


def feasibility(rel: AlignWith, e: RelationEdges) -> None:
    """Feasibility constraint on its axis: the centres offset_m apart, within tolerance_m."""
    if e.axis == rel.axis.index:
        e.between(e.p(C), e.s(C), rel.offset_m - rel.tolerance_m, rel.offset_m + rel.tolerance_m)


KIND = RelationKind(name="align_with", relation=AlignWith, role=KindRole.INTERVAL, columns=COLUMNS, pack=pack,
                    violation=violation, interval=interval, causes=AlignWithCause, check="align_with",
                    strategy=AlignWithLossStrategy,
                    feasibility=feasibility, feasibility_help="another offset_m or a larger tolerance_m")

"""FaceTo: the subject turned about world Z so that its local +X points at the target."""

from __future__ import annotations

import warp as wp

from isaaclab_arena.relations.kinds.kind import CauseCode, KindRole, PackedRelation, ParamColumns, ParamRow, RelationKind
from isaaclab_arena.relations.relation_base import Relation


class FaceTo(Relation):
    """Turns the subject about world Z so that its local +X points at the target's XY position.

    An orientation relation: it constrains neither object's position; the heading is re-evaluated while
    solving and set from the solved positions.
    """

    yaml_kind = "face_to"

    def __init__(self, parent):
        super().__init__(parent, 1.0)

    def params(self):
        return {}


class FaceToCause(CauseCode):
    NO_HEADING = 1, "at the target's XY position (no defined heading)"


COLUMNS = ParamColumns()


def pack(rel: FaceTo, ctx) -> PackedRelation:
    return PackedRelation()


@wp.func
def violation(axis: int, flag: int, f: ParamRow, p: wp.vec3, clo: wp.vec3, chi: wp.vec3, plo: wp.vec3,
              phi: wp.vec3, slack: float):
    """Subject origin at the target's XY centre (no defined heading)."""
    tc = 0.5 * (plo + phi)
    dx = tc[0] - p[0]
    dy = tc[1] - p[1]
    e = 1.0e-6 - wp.sqrt(dx * dx + dy * dy)
    if e > 0.0:
        return e, 1
    return e, 0


KIND = RelationKind(name="face_to", relation=FaceTo, role=KindRole.HEADING, columns=COLUMNS, pack=pack,
                    violation=violation, causes=FaceToCause, check="face_to", strategy=None,
                    feasibility=None, feasibility_help=None)

"""The relation kinds the solver knows, in one list; everything indexed by kind is derived from it.

Adding a kind is a new module beside these (see ``kind.py`` for what it provides) plus one entry in
``KINDS``, among the kinds of its role: INTERVAL kinds first, then PENALTY kinds, then HEADING kinds. The
position in ``KINDS`` is the kind's id: relation rows of the compiled scene are grouped by it, so the rows
of each role form one contiguous range a kernel walks in one loop with one dispatch (one call site per
kernel module, which the CPU compiler inlines). It is also the order in which checks are reported.
``PROJECTION_PRIORITY`` orders the INTERVAL kinds when intervals of one object conflict on an axis: the
later kind wins.
"""

from __future__ import annotations

from isaaclab_arena.relations.kinds import (
    align_with,
    at_position,
    clutter_on,
    face_to,
    next_to,
    not_next_to,
    on,
    position_limits_box,
    position_limits_cylindrical,
)
from isaaclab_arena.relations.kinds.kind import KindRole, RelationKind

KINDS: tuple[RelationKind, ...] = (
    # INTERVAL
    on.KIND,
    clutter_on.KIND,
    next_to.KIND,
    align_with.KIND,
    at_position.KIND,
    position_limits_box.KIND,
    # PENALTY
    not_next_to.KIND,
    position_limits_cylindrical.KIND,
    # HEADING
    face_to.KIND,
)

#: INTERVAL kinds from lowest to highest projection priority (the highest wins a conflict on an axis).
PROJECTION_PRIORITY: tuple[RelationKind, ...] = (
    align_with.KIND,
    next_to.KIND,
    position_limits_box.KIND,
    at_position.KIND,
    clutter_on.KIND,
    on.KIND,
)

#: The checks of object pairs, not of a relation kind: no two objects intersect (slot 0), and every pair of
#: relation-placed objects keeps the solver clearance (slot 1).
NO_OVERLAP = "no_overlap"
CLEARANCE = "clearance"

KIND_ID: dict[type, int] = {k.relation: i for i, k in enumerate(KINDS)}
KIND_BY_NAME: dict[str, RelationKind] = {k.name: k for k in KINDS}
#: Check names in verdict-slot order: the pair checks, then each kind's check once, in ``KINDS`` order.
CHECK_SLOTS: tuple[str, ...] = tuple(dict.fromkeys([NO_OVERLAP, CLEARANCE] + [k.check for k in KINDS if k.check]))
#: Verdict slot of each kind's check (-1: an objective only).
SLOT_OF_KIND: tuple[int, ...] = tuple(CHECK_SLOTS.index(k.check) if k.check else -1 for k in KINDS)


def kind_of(relation) -> RelationKind | None:
    """The kind of a relation instance, or None for markers and modifiers (no solver objective)."""
    i = KIND_ID.get(type(relation))
    return None if i is None else KINDS[i]


def priority_of(kind: RelationKind) -> int:
    """Projection priority of an INTERVAL kind (higher wins)."""
    return PROJECTION_PRIORITY.index(kind)


def _check_tables() -> None:
    if len(KINDS) > 16:  # warp unrolls the generated dispatch loops up to its max_unroll (16)
        raise RuntimeError("more than 16 relation kinds: raise warp.config.max_unroll for the dispatch")
    roles = [k.role for k in KINDS]
    if roles != sorted(roles):
        raise RuntimeError("KINDS must list the INTERVAL kinds, then the PENALTY kinds, then the HEADING kinds")
    intervals = [k for k in KINDS if k.role == KindRole.INTERVAL]
    if sorted(map(id, intervals)) != sorted(map(id, PROJECTION_PRIORITY)):
        raise RuntimeError("PROJECTION_PRIORITY must list every INTERVAL kind exactly once")
    for k in KINDS:
        needs = {KindRole.INTERVAL: ("interval",), KindRole.PENALTY: ("penalty", "push")}.get(k.role, ())
        for fn in needs:
            if getattr(k, fn) is None:
                raise RuntimeError(f"relation kind '{k.name}' ({k.role.name}) has no {fn} function")


_check_tables()

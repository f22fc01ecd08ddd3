"""Spatial relations, orientation relations and placement modifiers: the user-facing classes.

Each relation kind is defined in a module of its own under ``relations/kinds/`` (user class, loss
strategy, packing, violation function, causes, check); markers and modifiers in ``markers.py``. This
module is the public import path (``from isaaclab_arena.relations.relations import IsAnchor, On, NextTo``).
Every length is in metres and every angle in radians; positions and limits are env-local world coordinates.
"""

from __future__ import annotations

from isaaclab_arena.relations.kinds.align_with import AlignWith
from isaaclab_arena.relations.kinds.at_position import AtPosition
from isaaclab_arena.relations.kinds.clutter_on import ClutterOn
from isaaclab_arena.relations.kinds.face_to import FaceTo
from isaaclab_arena.relations.kinds.next_to import NextTo
from isaaclab_arena.relations.kinds.not_next_to import NotNextTo
from isaaclab_arena.relations.kinds.on import On
from isaaclab_arena.relations.kinds.position_limits_box import PositionLimitsBox
from isaaclab_arena.relations.kinds.position_limits_cylindrical import PositionLimitsCylindrical
from isaaclab_arena.relations.markers import IsAnchor, RandomAroundSolution, RequiresReachability, RotateAroundSolution
from isaaclab_arena.relations.relation_base import Axis, Relation, RelationBase, Side

__all__ = ["AlignWith", "AtPosition", "Axis", "ClutterOn", "FaceTo", "IsAnchor", "NextTo", "NotNextTo", "On",
           "PositionLimitsBox", "PositionLimitsCylindrical", "RandomAroundSolution", "Relation", "RelationBase",
           "RequiresReachability", "RotateAroundSolution", "Side", "RELATION_KINDS", "RELATION_KIND_ALIASES"]

#: YAML ``kind`` -> relation class. ``position_limits`` is an alias of ``position_limits_box``.
RELATION_KINDS: dict[str, type[RelationBase]] = {
    cls.yaml_kind: cls
    for cls in (IsAnchor, On, ClutterOn, NextTo, NotNextTo, AtPosition, AlignWith, PositionLimitsBox,
                PositionLimitsCylindrical, FaceTo, RequiresReachability, RotateAroundSolution, RandomAroundSolution)
}
RELATION_KIND_ALIASES: dict[str, str] = {"position_limits": "position_limits_box", "cluttered_on": "clutter_on"}

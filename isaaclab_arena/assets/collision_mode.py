"""Which geometry the no-overlap term and check use for an asset."""

from enum import Enum

from isaaclab_arena.utils.checks import enum_member


class CollisionMode(str, Enum):
    BBOX = "bbox"
    MESH = "mesh"


def parse_collision_mode(value, owner: str, field: str = "collision_mode") -> "CollisionMode | None":
    """A ``CollisionMode`` from a member or its name in any case (``"MESH"``); None passes."""
    return enum_member(CollisionMode, value, owner, field, optional=True)

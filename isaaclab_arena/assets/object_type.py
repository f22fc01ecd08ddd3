"""How an asset is simulated: a rigid body, an articulation, or a static base (background, fixture)."""

from enum import Enum


class ObjectType(str, Enum):
    RIGID = "rigid"
    ARTICULATION = "articulation"
    BASE = "base"

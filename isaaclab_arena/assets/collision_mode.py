"""Which geometry the no-overlap term and check use for an asset."""

from enum import Enum


class CollisionMode(str, Enum):
    BBOX = "bbox"
    MESH = "mesh"

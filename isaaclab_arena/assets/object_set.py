"""A role filled by one of several registered rigid objects, chosen once per environment."""

from __future__ import annotations

import random

from isaaclab_arena.assets.asset import Object
from isaaclab_arena.assets.bounding_box import AxisAlignedBoundingBox
from isaaclab_arena.assets.object_type import ObjectType


class RigidObjectSet(Object):
    """One scene name whose object differs between environments.

    Args:
        name: Scene name of the role (prim ``{ENV_REGEX_NS}/<name>``).
        objects: Rigid member objects (at least one).
        random_choice: False (default): env ``i`` gets member ``i % len(objects)``. True: independent picks,
            reproducible with the placement seed.
    """

    def __init__(self, name: str, objects: list[Object], random_choice: bool = False):
        if not objects:
            raise ValueError(f"RigidObjectSet '{name}': objects must hold at least one member")
        for obj in objects:
            if not isinstance(obj, Object) or isinstance(obj, RigidObjectSet):
                raise TypeError(f"RigidObjectSet '{name}': members must be Objects, got {obj!r}")
            if obj.object_type != ObjectType.RIGID:
                raise ValueError(f"RigidObjectSet '{name}': member '{obj.name}' is {obj.object_type.value}; "
                                 "only rigid objects can be members")
        if not isinstance(random_choice, bool):
            raise ValueError(f"RigidObjectSet '{name}': random_choice must be true or false, got {random_choice!r}")
        super().__init__(name, objects[0].spawn_cfg, ObjectType.RIGID)
        self.objects = list(objects)
        self.random_choice = random_choice

    def get_bounding_box(self) -> AxisAlignedBoundingBox:
        """The tallest member's bounds."""
        return max((o.get_bounding_box() for o in self.objects), key=lambda b: b.size[2])

    def member_indices_per_env(self, num_envs: int, placement_seed: int | None) -> list[int]:
        """Which member each env gets: ordered cycling, or seeded independent picks."""
        if not self.random_choice:
            return [i % len(self.objects) for i in range(num_envs)]
        rng = random.Random(f"{placement_seed}:{self.name}" if placement_seed is not None else None)
        return [rng.randrange(len(self.objects)) for _ in range(num_envs)]

    def get_bounding_box_per_env(self, num_envs: int, placement_seed: int | None = None) -> list[AxisAlignedBoundingBox]:
        return [self.objects[i].get_bounding_box() for i in self.member_indices_per_env(num_envs, placement_seed)]

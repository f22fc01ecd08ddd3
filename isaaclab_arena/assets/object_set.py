"""A role filled by one of several registered rigid objects, chosen once per environment."""

from __future__ import annotations

import random

from isaaclab_arena.assets.asset import Object, PlaceableAsset
from isaaclab_arena.assets.bounding_box import AxisAlignedBoundingBox
from isaaclab_arena.assets.collision_mode import CollisionMode
from isaaclab_arena.assets.object_type import ObjectType
from isaaclab_arena.utils import checks
from isaaclab_arena.utils.pose import Pose


class RigidObjectSet(PlaceableAsset):
    """One scene name whose object differs between environments; it holds its members (composition).

    The set is placed as one asset (relations attach to the set); each env spawns and sizes the member
    ``member_indices_per_env(num_envs, placement_seed)`` gives it. It has no spawner config of its own: the
    members keep theirs.

    Args:
        name: Scene name of the role (prim ``{ENV_REGEX_NS}/<name>``).
        objects: Rigid member objects (at least one; not sets themselves).
        random_choice: False (default): env ``i`` gets member ``i % len(objects)``. True: independent picks,
            reproducible with the placement seed.
        initial_pose: Fixed env-local pose (metres, xyzw), as for an ``Object``.
        collision_mode: ``bbox`` or ``mesh``; None uses the solver default.
    """

    def __init__(self, name: str, objects: list[Object], random_choice: bool = False,
                 initial_pose: Pose | None = None, collision_mode: CollisionMode | str | None = None):
        super().__init__(name, ObjectType.RIGID, initial_pose, collision_mode)
        owner = f"RigidObjectSet '{name}'"
        objects = checks.member_list(objects, owner)
        for obj in objects:
            checks.instance_of(obj, Object, owner, "objects", "Objects")
            if obj.object_type != ObjectType.RIGID:
                raise ValueError(f"{owner}: member '{obj.name}' is {obj.object_type.value}; "
                                 "only rigid objects can be members")
        self.objects: list[Object] = objects
        self.random_choice = checks.flag(random_choice, owner, "random_choice")

    def get_bounding_box(self) -> AxisAlignedBoundingBox:
        """The tallest member's bounds (metres, local frame); per-env sizes use each env's own member."""
        return max((o.get_bounding_box() for o in self.objects), key=lambda b: b.size[2])

    def member_indices_per_env(self, num_envs: int, placement_seed: int | None) -> list[int]:
        """Which member each env gets: ordered cycling, or seeded independent picks."""
        if not self.random_choice:
            return [i % len(self.objects) for i in range(num_envs)]
        rng = random.Random(f"{placement_seed}:{self.name}" if placement_seed is not None else None)
        return [rng.randrange(len(self.objects)) for _ in range(num_envs)]

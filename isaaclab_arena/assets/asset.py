"""Placeable assets: objects, backgrounds and the common interface relations place.

Poses are env-local world poses (metres, xyzw). Bounds are axis-aligned in the asset's local frame. Geometry
that lives in files (USD) comes from the installed geometry reader (``geometry_reader.py``), never from an
import of a simulator or of pxr.
"""

from __future__ import annotations

from typing import Any

from isaaclab_arena.assets.bounding_box import AxisAlignedBoundingBox
from isaaclab_arena.assets.collision_mode import CollisionMode
from isaaclab_arena.assets.geometry_reader import spawn_cfg_bounds
from isaaclab_arena.assets.object_type import ObjectType
from isaaclab_arena.relations.relations import (
    FaceTo,
    IsAnchor,
    RandomAroundSolution,
    RelationBase,
    RotateAroundSolution,
)
from isaaclab_arena.utils import checks
from isaaclab_arena.utils.pose import Pose


class PlaceableAsset:
    """An asset that relations can place: a name, local bounds, an optional initial pose, relations.

    Args:
        name: Unique scene name (the runtime scene key).
        object_type: How the asset is simulated.
        initial_pose: Fixed env-local pose; required for anchors and passive obstacles, forbidden for
            relation-placed assets.
        collision_mode: ``bbox`` or ``mesh`` for the no-overlap term; None uses the solver default.
    """

    #: A robot (``embodiments.Embodiment``): a placer given it among its assets checks ``ik_reachable`` with it.
    is_embodiment = False

    def __init__(self, name: str, object_type: ObjectType | str = ObjectType.RIGID, initial_pose: Pose | None = None,
                 collision_mode: CollisionMode | str | None = None):
        self.name = checks.asset_id(name, "asset", "name")
        owner = f"asset '{name}'"
        self.object_type = checks.enum_member(ObjectType, object_type, owner, "object_type")
        self.initial_pose = checks.instance_of(initial_pose, Pose, owner, "initial_pose", "a Pose", optional=True)
        #: Pose written by a successful single-env ``ObjectPlacer.place()`` (``apply_positions_to_objects``);
        #: kept apart from ``initial_pose`` so a relation-placed asset can be placed again.
        self.placed_pose: Pose | None = None
        self.collision_mode = checks.enum_member(CollisionMode, collision_mode, owner, "collision_mode", optional=True)
        self._relations: list[RelationBase] = []

    # -- relations ---------------------------------------------------------------------------------
    def add_relation(self, relation: RelationBase) -> "PlaceableAsset":
        """Attaches a relation to this asset (the subject). Returns self for chaining."""
        if not isinstance(relation, RelationBase):
            raise TypeError(f"asset '{self.name}': add_relation() takes a relation, got {relation!r}")
        if relation.parent is self or (relation.parent is not None and relation.parent.name == self.name):
            raise ValueError(f"asset '{self.name}': {type(relation).__name__} refers to the asset itself; "
                             "a relation needs another asset as its reference")
        self._relations.append(relation)
        return self

    def get_relations(self) -> list[RelationBase]:
        return list(self._relations)

    def get_spatial_relations(self) -> list[RelationBase]:
        return [r for r in self._relations if r.is_spatial]

    def get_relations_of(self, cls) -> list:
        return [r for r in self._relations if isinstance(r, cls)]

    @property
    def is_anchor(self) -> bool:
        return any(isinstance(r, IsAnchor) for r in self._relations)

    @property
    def has_placement_relations(self) -> bool:
        """True when the solver places this asset (it is a movable subject of a spatial or FaceTo relation)."""
        return not self.is_anchor and any(r.is_spatial or isinstance(r, FaceTo) for r in self._relations)

    @property
    def rotate_around_solution(self) -> RotateAroundSolution | None:
        found = self.get_relations_of(RotateAroundSolution)
        return found[-1] if found else None

    @property
    def random_around_solution(self) -> RandomAroundSolution | None:
        found = self.get_relations_of(RandomAroundSolution)
        return found[-1] if found else None

    # -- geometry ----------------------------------------------------------------------------------
    def get_bounding_box(self) -> AxisAlignedBoundingBox:
        """Local axis-aligned bounds (metres) in the asset's root frame."""
        raise NotImplementedError(type(self).__name__)

    def set_initial_pose(self, pose: Pose) -> None:
        self.initial_pose = checks.instance_of(pose, Pose, f"asset '{self.name}'", "set_initial_pose()", "a Pose")

    def get_world_pose(self) -> Pose | None:
        """The fixed env-local pose the solver uses for this asset when it is not moved (anchors, obstacles)."""
        return self.initial_pose

    def get_scene_root_keys(self) -> list[str]:
        """Runtime scene keys of the physics roots this asset owns."""
        return [self.name]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class Object(PlaceableAsset):
    """A scene object spawned from an Isaac Lab spawner config (procedural shape or USD file).

    Args:
        name: Unique scene name.
        spawn_cfg: An ``isaaclab.sim`` spawner config (e.g. ``CuboidCfg``, ``UsdFileCfg``); its geometry
            gives the bounds.
        object_type: ``rigid`` (default), ``articulation`` or ``base`` (static collider).
        initial_pose: Fixed env-local pose (anchors, passive obstacles).
        collision_mode: ``bbox`` or ``mesh``.
        bounding_box: Explicit local bounds (metres). Needed for spawners whose geometry the project cannot read,
            and for plain geometry without a spawner (``spawn_cfg=None``: the placement core can place such an
            object, an Isaac Lab scene cannot spawn it).
        registry_name: The asset registry entry this object was made from, if any (YAML round-trip).
        registry_params: The parameters given to that registry entry.
    """

    def __init__(self, name: str, spawn_cfg: Any = None, object_type: ObjectType | str = ObjectType.RIGID,
                 initial_pose: Pose | None = None, collision_mode: CollisionMode | str | None = None,
                 bounding_box: AxisAlignedBoundingBox | None = None, registry_name: str | None = None,
                 registry_params: dict | None = None):
        super().__init__(name, object_type, initial_pose, collision_mode)
        owner = f"asset '{name}'"
        if spawn_cfg is None and bounding_box is None:
            raise ValueError(f"{owner}: give spawn_cfg (a spawner config such as CuboidCfg or UsdFileCfg) or "
                             "bounding_box= (plain geometry, metres)")
        self.spawn_cfg = spawn_cfg
        self._bounding_box = checks.instance_of(bounding_box, AxisAlignedBoundingBox, owner, "bounding_box",
                                                "an AxisAlignedBoundingBox", optional=True)
        self.registry_name = registry_name
        self.registry_params = dict(registry_params or {})

    def get_bounding_box(self) -> AxisAlignedBoundingBox:
        """Local bounds (metres): ``bounding_box=`` if given, else read from the spawner config (procedural
        shapes here, USD files through the installed geometry reader; ``MissingGeometryReaderError`` without one)."""
        if self._bounding_box is None:
            owner = f"asset '{self.name}'"
            try:
                self._bounding_box = spawn_cfg_bounds(self.spawn_cfg, owner)
            except (FileNotFoundError, ValueError, TypeError) as err:
                msg = str(err)
                raise type(err)(msg if msg.startswith(owner) else f"{owner}: {msg}") from None
        return self._bounding_box

    @property
    def usd_path(self) -> str | None:
        return getattr(self.spawn_cfg, "usd_path", None)


class Background(Object):
    """A static scene (room, table, counter) spawned from a USD file or shape; a passive obstacle or anchor.

    Takes the arguments of ``Object`` except ``object_type``.

    A background is simulated as a static collider (``ObjectType.BASE``). Without an initial pose it sits
    at the env origin.
    """

    def __init__(self, name: str, spawn_cfg: Any = None, initial_pose: Pose | None = None,
                 collision_mode: CollisionMode | str | None = None, bounding_box: AxisAlignedBoundingBox | None = None,
                 registry_name: str | None = None, registry_params: dict | None = None):
        super().__init__(name, spawn_cfg, ObjectType.BASE, initial_pose if initial_pose is not None else Pose.identity(),
                         collision_mode, bounding_box, registry_name, registry_params)

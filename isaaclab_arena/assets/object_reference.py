"""A prim inside a parent asset's USD (a tabletop inside a room) used as a placeable asset."""

from __future__ import annotations

from isaaclab_arena.assets.asset import Object, PlaceableAsset
from isaaclab_arena.assets.bounding_box import AxisAlignedBoundingBox
from isaaclab_arena.assets.geometry_reader import get_geometry_reader
from isaaclab_arena.assets.object_type import ObjectType
from isaaclab_arena.utils.pose import Pose

ENV_REGEX_NS = "{ENV_REGEX_NS}"


class ObjectReference(PlaceableAsset):
    """Refers to ``prim_path`` inside ``parent_asset``'s USD; bounds and pose are read from that USD.

    The USD is read by the installed geometry reader (``isaaclab_arena.assets.geometry_reader``; importing
    ``isaaclab_arena.adapters`` installs the pxr one), on first use.

    Args:
        name: Unique scene name of the reference.
        prim_path: ``{ENV_REGEX_NS}/<parent prim name>/<path inside the parent USD>``, or a path relative to
            the parent's default prim.
        parent_asset: The asset (usually a ``Background``) whose USD holds the prim.
        object_type: How the referenced prim is simulated.

    The reference's env-local pose is the parent's pose composed with the prim's authored transform; its
    bounds are the prim's own local bounds (scale included).
    """

    def __init__(self, name: str, prim_path: str, parent_asset: PlaceableAsset,
                 object_type: ObjectType | str = ObjectType.RIGID):
        super().__init__(name, object_type, None, None)
        if not isinstance(parent_asset, Object):
            raise TypeError(f"ObjectReference '{name}': parent_asset must be an Object or Background with a USD, "
                            f"got {parent_asset!r}")
        if not isinstance(prim_path, str) or not prim_path:
            raise ValueError(f"ObjectReference '{name}': prim_path must be a non-empty string")
        self.prim_path = prim_path
        self.parent_asset = parent_asset
        self._bounds_and_pose: tuple[AxisAlignedBoundingBox, Pose] | None = None

    def relative_prim_path(self) -> str:
        """The prim's path below the parent USD's default prim."""
        path = self.prim_path
        if path.startswith(ENV_REGEX_NS + "/"):
            parts = path[len(ENV_REGEX_NS) + 1:].split("/", 1)
            # The first component is the parent's prim name in the env namespace.
            return parts[1] if len(parts) > 1 else ""
        return path.lstrip("/")

    def _load(self) -> tuple[AxisAlignedBoundingBox, Pose]:
        if self._bounds_and_pose is None:
            usd_path = self.parent_asset.usd_path
            if usd_path is None:
                raise ValueError(f"ObjectReference '{self.name}': parent '{self.parent_asset.name}' is not spawned "
                                 "from a USD file, so it has no prims to refer to")
            reader = get_geometry_reader(f"ObjectReference '{self.name}'", f"prim '{self.prim_path}' of '{usd_path}'")
            try:
                self._bounds_and_pose = reader.prim_bounds_and_pose(usd_path, self.relative_prim_path())
            except (KeyError, ValueError, FileNotFoundError) as err:
                msg = err.args[0] if err.args else str(err)
                raise ValueError(f"ObjectReference '{self.name}' (prim_path '{self.prim_path}'): {msg}") from None
        return self._bounds_and_pose

    def get_bounding_box(self) -> AxisAlignedBoundingBox:
        return self._load()[0]

    def get_local_pose_in_parent(self) -> Pose:
        """The prim's pose in its parent asset's root frame."""
        return self._load()[1]

    def get_world_pose(self) -> Pose:
        parent_pose = self.parent_asset.get_world_pose() or Pose.identity()
        return parent_pose.compose(self.get_local_pose_in_parent())

    def set_initial_pose(self, pose: Pose) -> None:
        raise ValueError(f"ObjectReference '{self.name}': its pose comes from the prim in '{self.parent_asset.name}'; "
                         "set the parent's pose instead")

"""Where the asset model gets geometry it cannot compute itself: an injected reader, never an import.

The placement core takes plain geometry. It reads procedural shapes itself, by duck typing (a spawner config
whose class name says ``Cuboid`` and that has a ``size``, a ``Sphere`` with a ``radius``, ...), and needs no
simulator for that. Bounds that live in files (a ``UsdFileCfg``'s USD, a prim inside a background's USD) come
from a :class:`GeometryReader` that the adapter layer installs when it is imported
(``import isaaclab_arena.adapters`` installs the pxr reader of ``isaaclab_arena/adapters/spawn_geometry.py``).
The example asset library, the YAML loader, the env builder and the runners import it, so their users never
see the difference. A plain-Python user who builds ``Object(name, UsdFileCfg(...))`` and calls the placer
directly imports ``isaaclab_arena.adapters`` (or the example library) first, or passes ``bounding_box=``;
otherwise :class:`MissingGeometryReaderError` says so, naming the asset.

Bounds are axis-aligned in the asset's local root frame, metres; poses are xyzw.

MESH collision reads collision meshes the same way: procedural shapes become triangle meshes here
(:func:`shape_mesh`, trimesh), meshes in USD files come from the reader's optional ``collision_mesh_of`` /
``prim_collision_mesh`` (:func:`collision_mesh_of_spawn_cfg`, :func:`prim_collision_mesh`). A reader without
them leaves those assets on their bounding boxes.
"""

from __future__ import annotations

from typing import Any, Protocol

from isaaclab_arena.assets.bounding_box import AxisAlignedBoundingBox
from isaaclab_arena.utils.pose import Pose

#: What a user does when no reader is installed (appended to every MissingGeometryReaderError).
INSTALL_HINT = ("import isaaclab_arena.adapters first (the example asset library, the env spec loader and the env "
                "builder do this), or pass bounding_box=AxisAlignedBoundingBox(min_point, max_point) in metres")


class GeometryReader(Protocol):
    """Reads geometry that lives outside the spawner config's own fields (USD files)."""

    def bounds_of(self, spawn_cfg: Any) -> AxisAlignedBoundingBox:
        """Local bounds of what ``spawn_cfg`` spawns (metres, spawned prim's frame); ``TypeError`` if unknown."""

    def prim_bounds_and_pose(self, usd_path: str, prim_path: str) -> tuple[AxisAlignedBoundingBox, Pose]:
        """A prim's own local bounds (its scale included) and its pose in the file's default prim's frame.

        ``prim_path`` is relative to the default prim. Raises ``KeyError`` naming the prims that exist when it
        is not in the file, ``FileNotFoundError`` / ``ValueError`` for a file that cannot be read.
        """


    # Optional (MESH collision; a reader without them leaves USD assets on their bounding boxes):
    #   collision_mesh_of(spawn_cfg, asset_name, exclude_prims=()) -> (vertices (V, 3), faces (F, 3)): the colliders
    #       of what ``spawn_cfg`` spawns in the spawned prim's frame (metres), less the subtrees ``exclude_prims``
    #       (paths relative to the default prim); ``ValueError`` naming the asset when there is no collider.
    #   prim_collision_mesh(usd_path, prim_path, asset_name) -> (vertices, faces): the colliders under a prim in
    #       the frame of ``prim_bounds_and_pose`` (the prim's own frame, its scale applied), metres.


class MissingGeometryReaderError(RuntimeError):
    """Geometry was needed that only a reader can provide, and none is installed."""


_reader: GeometryReader | None = None


def set_geometry_reader(reader: GeometryReader | None) -> GeometryReader | None:
    """Installs ``reader`` (None removes it); returns the one it replaces."""
    global _reader
    if reader is not None and not all(callable(getattr(reader, m, None)) for m in ("bounds_of", "prim_bounds_and_pose")):
        raise TypeError(f"set_geometry_reader: {reader!r} needs bounds_of(spawn_cfg) and "
                        "prim_bounds_and_pose(usd_path, prim_path)")
    previous, _reader = _reader, reader
    return previous


def get_geometry_reader(owner: str, needed_for: str) -> GeometryReader:
    """The installed reader; ``MissingGeometryReaderError`` naming ``owner`` and ``needed_for`` otherwise."""
    if _reader is None:
        raise MissingGeometryReaderError(f"{owner}: {needed_for} needs a geometry reader and none is installed; "
                                         f"{INSTALL_HINT}")
    return _reader


#: Facets of the meshes standing in for procedural round shapes (cylinders, spheres, capsules, cones).
ROUND_SECTIONS = 32


def _axis_rotation(axis: Any):
    """4x4 rotation taking trimesh's +Z shape axis to ``axis`` (X, Y or Z)."""
    import numpy as np
    import trimesh

    a = str(axis).upper()
    if a == "X":
        return trimesh.transformations.rotation_matrix(np.pi / 2, [0, 1, 0])
    if a == "Y":
        return trimesh.transformations.rotation_matrix(-np.pi / 2, [1, 0, 0])
    return np.eye(4)


def spawn_cfgs_of(asset: Any) -> list:
    """Every spawner config of ``asset``: the members' of an object set, each entry of a multi-asset spawner
    (``assets_cfg``), else its own ``spawn_cfg``; [] for an asset without one (an object reference)."""
    members = getattr(asset, "objects", None)  # an object set: its members' spawners
    if members is not None:
        return [c for m in members for c in spawn_cfgs_of(m)]
    spawn = getattr(asset, "spawn_cfg", None)
    return list(getattr(spawn, "assets_cfg", None) or [spawn]) if spawn is not None else []


def shape_mesh(spawn_cfg: Any):
    """The triangle mesh (a ``trimesh.Trimesh``, spawned prim's frame, metres) of a procedural shape spawner,
    read from its own fields like :func:`shape_bounds`; None for anything else (USD files, unknown spawners).

    Cuboids, spheres, capsules, cylinders and cones (``axis`` honoured; cones centred on their origin as in
    USD), their mesh variants included."""
    import trimesh

    name = type(spawn_cfg).__name__
    if "Cuboid" in name and hasattr(spawn_cfg, "size"):
        return trimesh.creation.box(extents=tuple(float(v) for v in spawn_cfg.size))
    if "Sphere" in name and hasattr(spawn_cfg, "radius"):
        return trimesh.creation.icosphere(subdivisions=3, radius=float(spawn_cfg.radius))
    if not all(hasattr(spawn_cfg, a) for a in ("radius", "height")):
        return None
    radius, height = float(spawn_cfg.radius), float(spawn_cfg.height)
    if "Capsule" in name:
        shape = trimesh.creation.capsule(height=height, radius=radius, count=[ROUND_SECTIONS, ROUND_SECTIONS])
    elif "Cylinder" in name:
        shape = trimesh.creation.cylinder(radius=radius, height=height, sections=ROUND_SECTIONS)
    elif "Cone" in name:
        shape = trimesh.creation.cone(radius=radius, height=height, sections=ROUND_SECTIONS)
        shape.apply_translation((0.0, 0.0, -0.5 * height))
    else:
        return None
    shape.apply_transform(_axis_rotation(getattr(spawn_cfg, "axis", "Z")))
    return shape


def collision_mesh_of_spawn_cfg(spawn_cfg: Any, owner: str, exclude_prims: tuple[str, ...] = ()):
    """``(vertices, faces)`` of what ``spawn_cfg`` spawns (spawned prim's frame, metres): procedural shapes
    here, USD files through the installed reader's ``collision_mesh_of``. Raises ``ValueError`` naming
    ``owner`` when no collision mesh can be had (no reader, a reader without mesh support, no collider)."""
    import numpy as np

    shape = shape_mesh(spawn_cfg)
    if shape is not None:
        return np.asarray(shape.vertices, np.float64), np.asarray(shape.faces, np.int64)
    members = getattr(spawn_cfg, "assets_cfg", None)
    if members is not None:
        raise ValueError(f"{owner}: a multi-asset spawner has no single collision mesh")
    if _reader is None or not callable(getattr(_reader, "collision_mesh_of", None)):
        raise ValueError(f"{owner}: no geometry reader with collision meshes is installed ({INSTALL_HINT})")
    return _reader.collision_mesh_of(spawn_cfg, owner, tuple(exclude_prims))


def prim_collision_mesh(usd_path: str, prim_path: str, owner: str):
    """``(vertices, faces)`` of the colliders under ``prim_path`` of ``usd_path`` in the prim's own frame (as
    ``prim_bounds_and_pose`` gives it), metres; ``ValueError`` naming ``owner`` when there are none."""
    if _reader is None or not callable(getattr(_reader, "prim_collision_mesh", None)):
        raise ValueError(f"{owner}: no geometry reader with collision meshes is installed ({INSTALL_HINT})")
    return _reader.prim_collision_mesh(usd_path, prim_path, owner)


def _axis_box(radius: float, height: float, axis: Any) -> AxisAlignedBoundingBox:
    r, h = float(radius), 0.5 * float(height)
    half = {"X": (h, r, r), "Y": (r, h, r), "Z": (r, r, h)}[str(axis).upper()]
    return AxisAlignedBoundingBox(tuple(-v for v in half), half)


def shape_bounds(spawn_cfg: Any) -> AxisAlignedBoundingBox | None:
    """Bounds of a procedural shape from its own fields (duck typing, no import); None for anything else.

    Cuboids (``size``), spheres (``radius``), capsules, cylinders and cones (``radius``, ``height``, ``axis``),
    their mesh variants included; centred on the spawned prim's origin, metres.
    """
    name = type(spawn_cfg).__name__
    if "Cuboid" in name and hasattr(spawn_cfg, "size"):
        return AxisAlignedBoundingBox.from_size(tuple(spawn_cfg.size))
    if "Sphere" in name and hasattr(spawn_cfg, "radius"):
        r = float(spawn_cfg.radius)
        return AxisAlignedBoundingBox((-r, -r, -r), (r, r, r))
    if not all(hasattr(spawn_cfg, a) for a in ("radius", "height")):
        return None
    axis = getattr(spawn_cfg, "axis", "Z")
    if "Capsule" in name:
        return _axis_box(spawn_cfg.radius, float(spawn_cfg.height) + 2.0 * float(spawn_cfg.radius), axis)
    if "Cylinder" in name or "Cone" in name:
        return _axis_box(spawn_cfg.radius, spawn_cfg.height, axis)
    return None


def spawn_cfg_bounds(spawn_cfg: Any, owner: str) -> AxisAlignedBoundingBox:
    """Bounds of the shape ``spawn_cfg`` creates, in the spawned prim's frame (metres).

    Procedural shapes are read here; a multi-asset spawner (``assets_cfg``) gives the union of its members;
    anything else (USD files) goes to the installed reader. Errors name ``owner``.
    """
    members = getattr(spawn_cfg, "assets_cfg", None)
    if members is not None:
        boxes = [spawn_cfg_bounds(c, owner) for c in members]
        if not boxes:
            raise ValueError(f"{owner}: its multi-asset spawner has no members")
        lo = tuple(min(b.min_point[i] for b in boxes) for i in range(3))
        hi = tuple(max(b.max_point[i] for b in boxes) for i in range(3))
        return AxisAlignedBoundingBox(lo, hi)
    box = shape_bounds(spawn_cfg)
    if box is not None:
        return box
    usd_path = getattr(spawn_cfg, "usd_path", None)
    what = f"the bounds of USD file '{usd_path}'" if usd_path else f"the bounds of spawner {type(spawn_cfg).__name__}"
    return get_geometry_reader(owner, what).bounds_of(spawn_cfg)

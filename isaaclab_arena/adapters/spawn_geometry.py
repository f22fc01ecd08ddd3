"""The geometry reader of the asset model: spawner configs and USD files read with pxr.

Importing this module installs :data:`USD_GEOMETRY_READER` with
``isaaclab_arena.assets.geometry_reader.set_geometry_reader`` (``import isaaclab_arena.adapters`` does it).
Procedural shapes never reach the reader (the asset model reads their fields itself); this reader handles
spawners that point at a USD file (``UsdFileCfg``: the default prim's bounds times ``scale``) and prims inside
a USD file (object references). Bounds are in metres in the spawned prim's own frame; poses are xyzw.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from isaaclab_arena.adapters.usd_geometry import usd_file_bounds, usd_prim_bounds_and_pose
from isaaclab_arena.adapters.usd_mesh import spawn_cfg_collision_mesh, usd_collision_mesh
from isaaclab_arena.assets.bounding_box import AxisAlignedBoundingBox
from isaaclab_arena.assets.geometry_reader import set_geometry_reader
from isaaclab_arena.utils.pose import Pose
from isaaclab_arena.utils.pose_math import matrix_from_quat


class UsdGeometryReader:
    """Reads spawner and prim geometry from USD files (implements ``GeometryReader``)."""

    def bounds_of(self, spawn_cfg: Any) -> AxisAlignedBoundingBox:
        """Bounds of a USD-file spawner: the file's default prim, untransformed, times the spawner's ``scale``."""
        usd_path = getattr(spawn_cfg, "usd_path", None)
        if not isinstance(usd_path, str) or not usd_path:
            raise TypeError(f"cannot derive bounds from spawner {type(spawn_cfg).__name__}; use a procedural shape, "
                            "a UsdFileCfg, or pass bounding_box= explicitly for geometry the project does not know")
        box = usd_file_bounds(usd_path)
        scale = getattr(spawn_cfg, "scale", None)
        return box.scaled(tuple(scale)) if scale is not None else box

    def prim_bounds_and_pose(self, usd_path: str, prim_path: str) -> tuple[AxisAlignedBoundingBox, Pose]:
        """A prim's local bounds (its scale included) and its pose relative to the file's default prim."""
        return usd_prim_bounds_and_pose(usd_path, prim_path)

    def collision_mesh_of(self, spawn_cfg: Any, asset_name: str, exclude_prims: tuple[str, ...] = ()):
        """``(vertices, faces)`` of the colliders ``spawn_cfg`` spawns (spawned prim's frame, metres), less the
        prim subtrees ``exclude_prims``; ``NoCollisionMeshError`` (a ``ValueError``) naming the asset if none."""
        mesh = spawn_cfg_collision_mesh(spawn_cfg, asset_name, tuple(exclude_prims))
        return mesh.vertices, mesh.faces

    def prim_collision_mesh(self, usd_path: str, prim_path: str, asset_name: str):
        """``(vertices, faces)`` of the colliders under a prim in the prim's own frame (scale applied), metres:
        the frame of :meth:`prim_bounds_and_pose`'s bounds."""
        mesh = usd_collision_mesh(usd_path, prim_path, asset_name)
        pose = usd_prim_bounds_and_pose(usd_path, prim_path)[1]
        r = matrix_from_quat(np.asarray(pose.rotation_xyzw, np.float64))
        return (mesh.vertices - np.asarray(pose.position_xyz, dtype=np.float64)) @ r, mesh.faces


USD_GEOMETRY_READER = UsdGeometryReader()
set_geometry_reader(USD_GEOMETRY_READER)

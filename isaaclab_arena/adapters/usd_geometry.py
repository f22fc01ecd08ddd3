"""Bounds and transforms read from USD files with ``pxr`` (no simulator needed, no Isaac Lab import).

Lengths are converted to metres with the stage's ``metersPerUnit``; rotations are xyzw quaternions.
"""

from __future__ import annotations

import functools
import os

from pxr import Gf, Usd, UsdGeom

from isaaclab_arena.assets.bounding_box import AxisAlignedBoundingBox
from isaaclab_arena.utils.pose import Pose


@functools.lru_cache(maxsize=64)
def _open_stage(usd_path: str):
    if not os.path.isfile(usd_path):
        raise FileNotFoundError(f"USD file not found: {usd_path}")
    stage = Usd.Stage.Open(usd_path)
    if stage is None:
        raise ValueError(f"USD file could not be opened: {usd_path}")
    return stage


def _default_root(stage):
    root = stage.GetDefaultPrim()
    if not root or not root.IsValid():
        children = list(stage.GetPseudoRoot().GetChildren())
        if not children:
            raise ValueError(f"USD file has no prims: {stage.GetRootLayer().identifier}")
        root = children[0]
    return root


def _metres_per_unit(stage) -> float:
    return float(UsdGeom.GetStageMetersPerUnit(stage) or 1.0)


def usd_file_bounds(usd_path: str) -> AxisAlignedBoundingBox:
    """Local bounds of the default prim of ``usd_path`` (its own transform excluded), metres."""
    stage = _open_stage(os.path.abspath(usd_path))
    root = _default_root(stage)
    cache = UsdGeom.BBoxCache(Usd.TimeCode.Default(), [UsdGeom.Tokens.default_, UsdGeom.Tokens.render])
    box = cache.ComputeUntransformedBound(root).ComputeAlignedRange()
    if box.IsEmpty():
        raise ValueError(f"USD file {usd_path} has no geometry under its default prim {root.GetPath()}")
    mpu = _metres_per_unit(stage)
    return AxisAlignedBoundingBox(tuple(v * mpu for v in box.GetMin()), tuple(v * mpu for v in box.GetMax()))


def usd_prim_bounds_and_pose(usd_path: str, relative_prim_path: str) -> tuple[AxisAlignedBoundingBox, Pose]:
    """Bounds and pose of a prim inside a USD file, both relative to the file's default prim.

    Returns ``(bounds, pose)``: the prim's own untransformed local bounds and the prim's pose in the
    default prim's frame (metres, xyzw), so that ``parent_pose * pose`` is the prim's pose in the world.
    Raises ``KeyError`` naming the prims that exist when ``relative_prim_path`` is not in the file.
    """
    stage = _open_stage(os.path.abspath(usd_path))
    root = _default_root(stage)
    rel = relative_prim_path.strip("/")
    prim = stage.GetPrimAtPath(root.GetPath().AppendPath(rel)) if rel else root
    if not prim or not prim.IsValid():
        names = [str(p.GetPath()).replace(str(root.GetPath()), "", 1).lstrip("/") for p in Usd.PrimRange(root)][1:20]
        raise KeyError(f"prim '{relative_prim_path}' is not in {usd_path} (under {root.GetPath()}); "
                       f"prims there include: {names}")
    cache = UsdGeom.BBoxCache(Usd.TimeCode.Default(), [UsdGeom.Tokens.default_, UsdGeom.Tokens.render])
    box = cache.ComputeUntransformedBound(prim).ComputeAlignedRange()
    if box.IsEmpty():
        raise ValueError(f"prim '{relative_prim_path}' in {usd_path} has no geometry")
    xf_cache = UsdGeom.XformCache(Usd.TimeCode.Default())
    root_to_world = xf_cache.GetLocalToWorldTransform(root)
    prim_to_world = xf_cache.GetLocalToWorldTransform(prim)
    rel_mat = prim_to_world * root_to_world.GetInverse()
    mpu = _metres_per_unit(stage)
    # Separate scale from rotation: bounds absorb the prim's scale, the pose keeps rotation and translation.
    xform = Gf.Transform(rel_mat)
    scale = tuple(xform.GetScale())
    rot = xform.GetRotation().GetQuat()
    t = xform.GetTranslation()
    im = rot.GetImaginary()
    pose = Pose(tuple(float(v) * mpu for v in t), (float(im[0]), float(im[1]), float(im[2]), float(rot.GetReal())))
    bounds = AxisAlignedBoundingBox(tuple(v * mpu for v in box.GetMin()), tuple(v * mpu for v in box.GetMax()))
    return bounds.scaled(scale), pose

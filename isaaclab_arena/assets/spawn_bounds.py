"""Local bounds of an Isaac Lab spawner config, from its own geometry fields (metres)."""

from __future__ import annotations

from isaaclab_arena.assets.bounding_box import AxisAlignedBoundingBox


def _axis_box(radius: float, height: float, axis: str) -> AxisAlignedBoundingBox:
    r, h = float(radius), 0.5 * float(height)
    half = {"X": (h, r, r), "Y": (r, h, r), "Z": (r, r, h)}[str(axis).upper()]
    return AxisAlignedBoundingBox(tuple(-v for v in half), half)


def spawn_cfg_bounds(spawn_cfg) -> AxisAlignedBoundingBox:
    """Bounds of the shape a spawner config creates, in the spawned prim's frame.

    Supports the procedural shapes of ``isaaclab.sim`` (cuboid, sphere, cylinder, capsule, cone, and
    their mesh variants), ``UsdFileCfg`` (read with pxr, times ``scale``) and ``MultiAssetSpawnerCfg``
    (the union of its members). Raises ``TypeError`` for a spawner whose geometry is unknown.
    """
    name = type(spawn_cfg).__name__
    if hasattr(spawn_cfg, "assets_cfg"):  # MultiAssetSpawnerCfg
        boxes = [spawn_cfg_bounds(c) for c in spawn_cfg.assets_cfg]
        lo = tuple(min(b.min_point[i] for b in boxes) for i in range(3))
        hi = tuple(max(b.max_point[i] for b in boxes) for i in range(3))
        return AxisAlignedBoundingBox(lo, hi)
    if hasattr(spawn_cfg, "usd_path") and "Usd" in name:
        from isaaclab_arena.assets.usd_bounds import usd_file_bounds

        box = usd_file_bounds(spawn_cfg.usd_path)
        scale = getattr(spawn_cfg, "scale", None)
        return box.scaled(tuple(scale)) if scale is not None else box
    if "Cuboid" in name:
        return AxisAlignedBoundingBox.from_size(tuple(spawn_cfg.size))
    if "Sphere" in name:
        r = float(spawn_cfg.radius)
        return AxisAlignedBoundingBox((-r, -r, -r), (r, r, r))
    if "Capsule" in name:
        return _axis_box(spawn_cfg.radius, float(spawn_cfg.height) + 2.0 * float(spawn_cfg.radius), spawn_cfg.axis)
    if "Cylinder" in name or "Cone" in name:
        return _axis_box(spawn_cfg.radius, spawn_cfg.height, spawn_cfg.axis)
    raise TypeError(f"cannot derive bounds from spawner {name}; use a procedural shape, a UsdFileCfg, "
                    "or pass bounding_box= explicitly for geometry that is not known to the project")

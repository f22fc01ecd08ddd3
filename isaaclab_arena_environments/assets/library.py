"""Factories of the example assets: ``f(instance_name, **params) -> Object | Background``.

Every asset's bounds come from its own geometry: procedural shapes from their spawner fields, the table and
the bin from the USD files authored by ``generate_usd.py``, the concave assets (hollow bowl, mug with a
handle, shelf, kitchen counter) from those authored by ``generate_mesh_usd.py`` (read with pxr). Sizes are in metres.

Common params accepted by every factory:
    initial_pose: a ``Pose`` or ``{"position_xyz": [...], "rotation_xyzw": [...]}`` (env-local metres, xyzw).
    collision_mode: ``"bbox"`` or ``"mesh"``.
"""

from __future__ import annotations

import os
from typing import Any

import isaaclab.sim as sim_utils

import isaaclab_arena.adapters  # noqa: F401  (installs the USD geometry reader the table and bin bounds need)
from isaaclab_arena.assets.asset import Background, Object
from isaaclab_arena.assets.object_type import ObjectType
from isaaclab_arena.utils.pose import Pose

USD_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "usd")
TABLE_USD = os.path.join(USD_DIR, "table_background.usda")
BIN_USD = os.path.join(USD_DIR, "bin.usda")
BOWL_USD = os.path.join(USD_DIR, "bowl.usda")
MUG_USD = os.path.join(USD_DIR, "mug.usda")
SHELF_USD = os.path.join(USD_DIR, "shelf.usda")
KITCHEN_COUNTER_USD = os.path.join(USD_DIR, "kitchen_counter.usda")
GROUND_PLANE_USD = os.path.join(USD_DIR, "ground_plane.usda")
FLOOR_USD = os.path.join(USD_DIR, "floor.usda")


def _pose(value: Any, asset: str) -> Pose | None:
    if value is None or isinstance(value, Pose):
        return value
    if isinstance(value, dict):
        unknown = set(value) - {"position_xyz", "rotation_xyzw"}
        if unknown or "position_xyz" not in value:
            raise ValueError(f"asset '{asset}': initial_pose needs position_xyz (metres) and optionally "
                             f"rotation_xyzw (x, y, z, w); got keys {sorted(value)}")
        return Pose(tuple(value["position_xyz"]), tuple(value.get("rotation_xyzw", (0.0, 0.0, 0.0, 1.0))))
    raise TypeError(f"asset '{asset}': initial_pose must be a Pose or a mapping, got {value!r}")


def _check_params(asset: str, factory: str, params: dict, allowed: set[str]) -> None:
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise ValueError(f"asset '{asset}' ({factory}): unknown parameter(s) {unknown}; accepted: {sorted(allowed)}")


def _rigid_shape(shape_cfg_cls, color, mass_kg: float, **geometry):
    return shape_cfg_cls(
        **geometry,
        rigid_props=sim_utils.UsdPhysicsRigidBodyCfg(),
        mass_props=sim_utils.MassCfg(mass=float(mass_kg)),
        collision_props=sim_utils.UsdPhysicsCollisionCfg(),
        visual_material=sim_utils.PreviewSurfaceCfg(diffuse_color=tuple(float(c) for c in color)),
    )


#: Parameters every factory here accepts (also declared as each factory's ``accepted_params``, which the asset
#: registry checks and ``--list_assets`` / ``docs/ASSETS.md`` list).
COMMON_PARAMS = ("initial_pose", "collision_mode")
_COMMON = set(COMMON_PARAMS)


def _object(instance_name: str, factory: str, spawn_cfg, params: dict, object_type=ObjectType.RIGID) -> Object:
    _check_params(instance_name, factory, params, _COMMON)
    return Object(instance_name, spawn_cfg, object_type=object_type,
                  initial_pose=_pose(params.get("initial_pose"), instance_name),
                  collision_mode=params.get("collision_mode"), registry_name=factory, registry_params=dict(params))


def table_background(instance_name: str = "table_background", **params) -> Background:
    """Static table (USD): tabletop prim ``table`` 1.2 x 0.8 m, top at z = 0.75 m, on four legs."""
    _check_params(instance_name, "table_background", params, _COMMON)
    return Background(instance_name, sim_utils.UsdFileCfg(usd_path=TABLE_USD),
                      initial_pose=_pose(params.get("initial_pose"), instance_name),
                      collision_mode=params.get("collision_mode"), registry_name="table_background",
                      registry_params=dict(params))


def floor(instance_name: str = "floor", **params) -> Background:
    """Static floor slab (USD): 2.4 x 2.4 m, 0.02 m thick, its top at z = 0 (the ground's height); the support a
    robot stands ``On`` (anchor it with ``IsAnchor``)."""
    _check_params(instance_name, "floor", params, _COMMON)
    return Background(instance_name, sim_utils.UsdFileCfg(usd_path=FLOOR_USD),
                      initial_pose=_pose(params.get("initial_pose"), instance_name),
                      collision_mode=params.get("collision_mode"), registry_name="floor", registry_params=dict(params))


def mug(instance_name: str = "mug", **params) -> Object:
    """Mug proxy: a rigid cylinder of radius 0.04 m and height 0.10 m (bounds 0.08 x 0.08 x 0.10 m), 0.25 kg."""
    cfg = _rigid_shape(sim_utils.CylinderCfg, (0.9, 0.9, 0.85), 0.25, radius=0.04, height=0.10, axis="Z")
    return _object(instance_name, "mug", cfg, params)


def bowl(instance_name: str = "bowl", **params) -> Object:
    """Bowl proxy: a rigid cylinder of radius 0.08 m and height 0.06 m (bounds 0.16 x 0.16 x 0.06 m), 0.3 kg."""
    cfg = _rigid_shape(sim_utils.CylinderCfg, (0.85, 0.3, 0.2), 0.3, radius=0.08, height=0.06, axis="Z")
    return _object(instance_name, "bowl", cfg, params)


def _box_factory(name: str, size: tuple[float, float, float], color, mass_kg: float):
    def factory(instance_name: str = name, **params) -> Object:
        cfg = _rigid_shape(sim_utils.CuboidCfg, color, mass_kg, size=size)
        return _object(instance_name, name, cfg, params)

    factory.__name__ = name
    factory.__doc__ = f"Rigid box of {size[0]} x {size[1]} x {size[2]} m, {mass_kg} kg."
    return factory


cube_4cm = _box_factory("cube_4cm", (0.04, 0.04, 0.04), (0.9, 0.2, 0.2), 0.05)
cube_8cm = _box_factory("cube_8cm", (0.08, 0.08, 0.08), (0.2, 0.8, 0.2), 0.15)
cube_12cm = _box_factory("cube_12cm", (0.12, 0.12, 0.12), (0.2, 0.3, 0.9), 0.3)
box_flat = _box_factory("box_flat", (0.16, 0.10, 0.04), (0.8, 0.7, 0.2), 0.2)
box_tall = _box_factory("box_tall", (0.06, 0.06, 0.14), (0.6, 0.2, 0.7), 0.15)


def bin(instance_name: str = "bin", **params) -> Object:  # noqa: A001 - the registry name is "bin"
    """Open bin (USD): floor and four walls, outer 0.30 x 0.20 x 0.10 m; a kinematic rigid body (placeable,
    never moved by physics)."""
    cfg = sim_utils.UsdFileCfg(usd_path=BIN_USD, rigid_props=sim_utils.UsdPhysicsRigidBodyCfg(kinematic_enabled=True))
    return _object(instance_name, "bin", cfg, params)


def _dynamic_usd(usd_path: str, mass_kg: float):
    return sim_utils.UsdFileCfg(usd_path=usd_path, rigid_props=sim_utils.UsdPhysicsRigidBodyCfg(),
                                mass_props=sim_utils.MassCfg(mass=float(mass_kg)))


def hollow_bowl(instance_name: str = "hollow_bowl", **params) -> Object:
    """Hollow bowl (USD, ``generate_mesh_usd.py``): rim radius 0.08 m, 0.06 m high, inner floor at z = 0.008 m
    above its base; origin at the centre of its base. 65 convex collision parts; 0.3 kg."""
    return _object(instance_name, "hollow_bowl", _dynamic_usd(BOWL_USD, 0.3), params)


def mug_with_handle(instance_name: str = "mug_with_handle", **params) -> Object:
    """Mug with a handle on +X (USD): body radius 0.04 m, 0.10 m high, handle reaching x = 0.076 m; origin at
    the centre of its base. 27 convex collision parts; 0.3 kg."""
    return _object(instance_name, "mug_with_handle", _dynamic_usd(MUG_USD, 0.3), params)


def shelf(instance_name: str = "shelf", **params) -> Object:
    """Two-board shelf on four legs (USD): 0.24 m (x) by 0.40 m (y), boards at z = 0.15 and 0.30 m (0.015 m
    thick), open underneath and at the front (-X); origin at the centre of its footprint on the floor. 2.5 kg."""
    return _object(instance_name, "shelf", _dynamic_usd(SHELF_USD, 2.5), params)


def kitchen_counter(instance_name: str = "kitchen_counter", **params) -> Background:
    """Static kitchen counter (USD): 1.6 x 0.7 m, top at z = 0.90 m; prims ``counter_top`` (slab with a sink
    cut-out at x in [-0.55, -0.10], y in [-0.175, 0.175]), ``sink`` (0.18 m deep basin), ``stove`` (cooktop
    block at x in [0.25, 0.75], y in [-0.28, 0.28], 0.08 m high, burners on top), ``cabinet`` and ``apron``."""
    _check_params(instance_name, "kitchen_counter", params, _COMMON)
    return Background(instance_name, sim_utils.UsdFileCfg(usd_path=KITCHEN_COUNTER_USD),
                      initial_pose=_pose(params.get("initial_pose"), instance_name),
                      collision_mode=params.get("collision_mode"), registry_name="kitchen_counter",
                      registry_params=dict(params))


#: registry name -> factory, registered with ``isaaclab_arena.adapters.asset_registry`` by the package ``__init__``.
FACTORIES = {
    "table_background": table_background,
    "floor": floor,
    "mug": mug,
    "bowl": bowl,
    "cube_4cm": cube_4cm,
    "cube_8cm": cube_8cm,
    "cube_12cm": cube_12cm,
    "box_flat": box_flat,
    "box_tall": box_tall,
    "bin": bin,
    "hollow_bowl": hollow_bowl,
    "mug_with_handle": mug_with_handle,
    "shelf": shelf,
    "kitchen_counter": kitchen_counter,
}
for _factory in FACTORIES.values():
    _factory.accepted_params = list(COMMON_PARAMS)  # they take **params; this states which

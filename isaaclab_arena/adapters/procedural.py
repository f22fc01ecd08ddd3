"""Built-in registry entries: procedural shapes and USD files as Isaac Lab spawner configs.

Entries (YAML ``registry_name``); lengths in metres, masses in kilograms, colours RGB in [0, 1]:

- ``box``: rigid dynamic cuboid. ``size`` [x, y, z] (required), ``mass_kg`` (0.2), ``color``.
- ``cylinder``: rigid dynamic cylinder along local Z. ``radius``, ``height`` (required), ``mass_kg``, ``color``.
- ``sphere``: rigid dynamic sphere. ``radius`` (required), ``mass_kg``, ``color``.
- ``usd_file``: rigid dynamic object from a USD file. ``usd_path`` (required; relative paths are taken from
  the working directory), ``scale`` [x, y, z] or one number (1.0), ``mass_kg`` (None keeps the file's mass).
- ``static_box``: static cuboid collider, a ``Background`` (``ObjectType.BASE``). ``size`` (required), ``color``.
- ``usd_background``: static scene from a USD file, a ``Background``; prims inside it can be object
  references. ``usd_path`` (required); no ``scale``, so prims read from the file keep their authored size.

Every entry also takes ``initial_pose: {position_xyz: [x, y, z], rotation_xyzw: [x, y, z, w]}`` (env-local
world frame; rotation defaults to identity) and ``collision_mode: bbox | mesh``. Each entry's parameters are
a frozen dataclass (``BoxParams``, ...) whose fields name their check (``isaaclab_arena.utils.checks``).
Rigid entries use ``UsdPhysicsRigidBodyCfg``, ``MassCfg`` and ``UsdPhysicsCollisionCfg``; bounds come from
the spawner's own geometry, never typed in. Unknown or mistyped parameters raise ``ValueError`` naming the
asset and the accepted parameters.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import MISSING, dataclass, field
from typing import Any, Callable

import isaaclab.sim as sim_utils

from isaaclab_arena.adapters.asset_registry import register_asset
from isaaclab_arena.assets.asset import Background, Object
from isaaclab_arena.assets.collision_mode import CollisionMode, parse_collision_mode
from isaaclab_arena.utils import checks
from isaaclab_arena.utils.plain_data import plain
from isaaclab_arena.utils.pose import Pose, parse_pose

DEFAULT_COLOR = (0.6, 0.6, 0.6)


def _param(check: Callable[[Any, str, str], Any], default: Any = MISSING):
    """A dataclass field parsed by ``check(value, owner, field)``; no default means required."""
    return field(default=default, metadata={"check": check})


def _size(value, owner: str, name: str) -> tuple[float, ...]:
    return checks.vector(value, owner, name, 3, minimum=0.0, strict_minimum=True)


def _scale(value, owner: str, name: str) -> tuple[float, ...]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (checks.positive(value, owner, name),) * 3
    return checks.vector(value, owner, name, 3, minimum=0.0, strict_minimum=True)


def _color(value, owner: str, name: str) -> tuple[float, ...]:
    return checks.vector(value, owner, name, 3, minimum=0.0, maximum=1.0)


def _optional_positive(value, owner: str, name: str) -> float | None:
    return checks.positive(value, owner, name, optional=True)


def _usd_path(value, owner: str, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{owner}: {name} must be a path to a USD file, got {value!r}")
    path = os.path.abspath(os.path.expanduser(value))
    if not os.path.isfile(path):
        raise ValueError(f"{owner}: {name} '{value}' does not exist (relative paths are taken from the working "
                         f"directory {os.getcwd()})")
    return path


@dataclass(frozen=True)
class CommonParams:
    """Parameters every entry accepts: env-local pose (metres, xyzw) and no-overlap geometry."""

    initial_pose: Pose | None = _param(parse_pose, None)
    collision_mode: CollisionMode | None = _param(parse_collision_mode, None)


@dataclass(frozen=True, kw_only=True)
class BoxParams(CommonParams):
    size: tuple[float, float, float] = _param(_size)
    mass_kg: float = _param(checks.positive, 0.2)
    color: tuple[float, float, float] = _param(_color, DEFAULT_COLOR)


@dataclass(frozen=True, kw_only=True)
class CylinderParams(CommonParams):
    radius: float = _param(checks.positive)
    height: float = _param(checks.positive)
    mass_kg: float = _param(checks.positive, 0.2)
    color: tuple[float, float, float] = _param(_color, DEFAULT_COLOR)


@dataclass(frozen=True, kw_only=True)
class SphereParams(CommonParams):
    radius: float = _param(checks.positive)
    mass_kg: float = _param(checks.positive, 0.2)
    color: tuple[float, float, float] = _param(_color, DEFAULT_COLOR)


@dataclass(frozen=True, kw_only=True)
class UsdFileParams(CommonParams):
    usd_path: str = _param(_usd_path)
    scale: tuple[float, float, float] = _param(_scale, (1.0, 1.0, 1.0))
    mass_kg: float | None = _param(_optional_positive, None)


@dataclass(frozen=True, kw_only=True)
class StaticBoxParams(CommonParams):
    size: tuple[float, float, float] = _param(_size)
    color: tuple[float, float, float] = _param(_color, DEFAULT_COLOR)


@dataclass(frozen=True, kw_only=True)
class UsdBackgroundParams(CommonParams):
    usd_path: str = _param(_usd_path)


def accepted_names(params_cls: type) -> list[str]:
    """The entry's own parameters, then the common ones (the order error messages list them in)."""
    common = [f.name for f in dataclasses.fields(CommonParams)]
    return [f.name for f in dataclasses.fields(params_cls) if f.name not in common] + common


def parse_params(params_cls: type, instance_name: str, registry_name: str, params: dict):
    """``params`` (YAML data) checked field by field into a ``params_cls`` instance; errors name the asset."""
    owner = f"asset '{instance_name}' (registry_name '{registry_name}')"
    accepted = accepted_names(params_cls)
    unknown = [k for k in params if k not in accepted]
    if unknown:
        raise ValueError(f"{owner}: unknown parameter {unknown[0]!r}; accepted parameters: {', '.join(accepted)}")
    by_name = {f.name: f for f in dataclasses.fields(params_cls)}
    values = {}
    for name in accepted:
        f = by_name[name]
        if name in params:
            values[name] = f.metadata["check"](params[name], owner, name)
        elif f.default is MISSING:
            raise ValueError(f"{owner}: missing required parameter {name!r}; accepted parameters: {', '.join(accepted)}")
    return params_cls(**values)


def _entry(registry_name: str, params_cls: type):
    """Registers ``build(instance_name, params) -> asset`` as a factory that checks its params first."""

    def wrap(build):
        def factory(instance_name: str, **params):
            asset = build(instance_name, parse_params(params_cls, instance_name, registry_name, params))
            asset.registry_name = registry_name
            asset.registry_params = plain(params)
            return asset

        factory.__name__ = factory.__qualname__ = build.__name__
        factory.__module__ = build.__module__
        factory.__doc__ = build.__doc__
        factory.__annotations__ = {"return": build.__annotations__.get("return")}  # Object or Background
        factory.accepted_params = accepted_names(params_cls)
        factory.params_cls = params_cls
        return register_asset(registry_name)(factory)

    return wrap


def _rigid_props(mass_kg: float | None) -> dict:
    return {
        "rigid_props": sim_utils.UsdPhysicsRigidBodyCfg(),
        "mass_props": sim_utils.MassCfg(mass=mass_kg) if mass_kg is not None else None,
        "collision_props": sim_utils.UsdPhysicsCollisionCfg(),
    }


def _material(color) -> sim_utils.PreviewSurfaceCfg:
    return sim_utils.PreviewSurfaceCfg(diffuse_color=tuple(float(c) for c in color))


def _object(name: str, spawn_cfg, p: CommonParams) -> Object:
    return Object(name, spawn_cfg, initial_pose=p.initial_pose, collision_mode=p.collision_mode)


@_entry("box", BoxParams)
def box(instance_name: str, p: BoxParams) -> Object:
    """A rigid dynamic cuboid of ``size`` [x, y, z] metres centred on its origin."""
    cfg = sim_utils.CuboidCfg(size=p.size, visual_material=_material(p.color), **_rigid_props(p.mass_kg))
    return _object(instance_name, cfg, p)


@_entry("cylinder", CylinderParams)
def cylinder(instance_name: str, p: CylinderParams) -> Object:
    """A rigid dynamic cylinder along local Z, centred on its origin."""
    cfg = sim_utils.CylinderCfg(radius=p.radius, height=p.height, axis="Z", visual_material=_material(p.color),
                                **_rigid_props(p.mass_kg))
    return _object(instance_name, cfg, p)


@_entry("sphere", SphereParams)
def sphere(instance_name: str, p: SphereParams) -> Object:
    """A rigid dynamic sphere centred on its origin."""
    cfg = sim_utils.SphereCfg(radius=p.radius, visual_material=_material(p.color), **_rigid_props(p.mass_kg))
    return _object(instance_name, cfg, p)


@_entry("usd_file", UsdFileParams)
def usd_file(instance_name: str, p: UsdFileParams) -> Object:
    """A rigid dynamic object from a USD file (bounds read from the file with pxr, times ``scale``)."""
    cfg = sim_utils.UsdFileCfg(usd_path=p.usd_path, scale=p.scale, **_rigid_props(p.mass_kg))
    return _object(instance_name, cfg, p)


@_entry("static_box", StaticBoxParams)
def static_box(instance_name: str, p: StaticBoxParams) -> Background:
    """A static cuboid collider (no rigid body): a table, wall or shelf; identity pose when none is given."""
    cfg = sim_utils.CuboidCfg(size=p.size, collision_props=sim_utils.UsdPhysicsCollisionCfg(),
                              visual_material=_material(p.color))
    return Background(instance_name, cfg, initial_pose=p.initial_pose, collision_mode=p.collision_mode)


@_entry("usd_background", UsdBackgroundParams)
def usd_background(instance_name: str, p: UsdBackgroundParams) -> Background:
    """A static scene (room, table, counter) from a USD file, spawned as authored (no rigid body added)."""
    cfg = sim_utils.UsdFileCfg(usd_path=p.usd_path)
    return Background(instance_name, cfg, initial_pose=p.initial_pose, collision_mode=p.collision_mode)

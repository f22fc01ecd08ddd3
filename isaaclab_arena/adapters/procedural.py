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
world frame; rotation defaults to identity) and ``collision_mode: bbox | mesh``. Rigid entries use
``UsdPhysicsRigidBodyCfg``, ``MassCfg`` and ``UsdPhysicsCollisionCfg``; bounds come from the spawner's own
geometry (``spawn_bounds.py``), never typed in. Unknown or mistyped parameters raise ``ValueError`` naming
the asset and the accepted parameters.
"""

from __future__ import annotations

import enum
import math
import os
from typing import Any, Callable

from isaaclab_arena.assets.asset import Background, Object
from isaaclab_arena.assets.collision_mode import CollisionMode
from isaaclab_arena.assets.registry import register_asset
from isaaclab_arena.utils.pose import Pose

_REQUIRED = object()
_DEFAULT_COLOR = (0.6, 0.6, 0.6)


def plain(value: Any) -> Any:
    """``value`` as plain YAML data: tuples -> lists, enums -> their values, Poses -> dicts."""
    if isinstance(value, Pose):
        return value.to_dict()
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


# -- parameter parsers: (value, where, name) -> parsed value; ``where`` names the asset --------------------
def _finite(value, where: str, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{where}: {name} must be a number, got {value!r}")
    if not math.isfinite(float(value)):
        raise ValueError(f"{where}: {name} must be finite, got {value!r}")
    return float(value)


def _positive(value, where: str, name: str) -> float:
    v = _finite(value, where, name)
    if v <= 0.0:
        raise ValueError(f"{where}: {name} must be > 0, got {v:g}")
    return v


def _optional_positive(value, where: str, name: str) -> float | None:
    return None if value is None else _positive(value, where, name)


def _vector(value, where: str, name: str, n: int, parse: Callable = _finite) -> tuple[float, ...]:
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__len__") or len(value) != n:
        raise ValueError(f"{where}: {name} must be a list of {n} numbers, got {value!r}")
    return tuple(parse(v, where, f"{name}[{i}]") for i, v in enumerate(value))


def _size(value, where: str, name: str) -> tuple[float, float, float]:
    return _vector(value, where, name, 3, _positive)


def _scale(value, where: str, name: str) -> tuple[float, float, float]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        s = _positive(value, where, name)
        return (s, s, s)
    return _vector(value, where, name, 3, _positive)


def _color(value, where: str, name: str) -> tuple[float, float, float]:
    rgb = _vector(value, where, name, 3)
    if any(c < 0.0 or c > 1.0 for c in rgb):
        raise ValueError(f"{where}: {name} must be RGB values in [0, 1], got {list(rgb)!r}")
    return rgb


def parse_pose(value, where: str, name: str = "initial_pose") -> Pose | None:
    """``{position_xyz: [..], rotation_xyzw: [..]}`` (rotation optional, identity) or a ``Pose``; None passes."""
    if value is None or isinstance(value, Pose):
        return value
    if not isinstance(value, dict):
        raise ValueError(f"{where}: {name} must be a mapping {{position_xyz: [x, y, z], rotation_xyzw: [x, y, z, w]}}, "
                         f"got {value!r}")
    unknown = [k for k in value if k not in ("position_xyz", "rotation_xyzw")]
    if unknown:
        raise ValueError(f"{where}: {name} has unknown key {unknown[0]!r}; accepted keys: position_xyz, rotation_xyzw")
    if "position_xyz" not in value:
        raise ValueError(f"{where}: {name} needs position_xyz: [x, y, z] (metres); rotation_xyzw is optional")
    pos = _vector(value["position_xyz"], where, f"{name}.position_xyz", 3)
    rot = _vector(value.get("rotation_xyzw", (0.0, 0.0, 0.0, 1.0)), where, f"{name}.rotation_xyzw", 4)
    try:
        return Pose(pos, rot)
    except ValueError as err:
        raise ValueError(f"{where}: {name}: {err}") from None


def parse_collision_mode(value, where: str, name: str = "collision_mode") -> CollisionMode | None:
    if value is None or isinstance(value, CollisionMode):
        return value
    if isinstance(value, str):
        try:
            return CollisionMode(value.lower())
        except ValueError:
            pass
    raise ValueError(f"{where}: {name}={value!r} is not accepted; use one of 'bbox', 'mesh'")


def _usd_path(value, where: str, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{where}: {name} must be a path to a USD file, got {value!r}")
    path = os.path.abspath(os.path.expanduser(value))
    if not os.path.isfile(path):
        raise ValueError(f"{where}: {name} '{value}' does not exist (relative paths are taken from the working "
                         f"directory {os.getcwd()})")
    return path


_COMMON = {"initial_pose": (None, parse_pose), "collision_mode": (None, parse_collision_mode)}


def parse_params(instance_name: str, registry_name: str, params: dict, schema: dict) -> dict:
    """Checks ``params`` against ``schema`` (name -> (default or _REQUIRED, parser)) plus the common params."""
    schema = {**schema, **_COMMON}
    where = f"asset '{instance_name}' (registry_name '{registry_name}')"
    unknown = [k for k in params if k not in schema]
    if unknown:
        raise ValueError(f"{where}: unknown parameter {unknown[0]!r}; accepted parameters: {', '.join(schema)}")
    out = {}
    for name, (default, parser) in schema.items():
        if name in params:
            out[name] = parser(params[name], where, name)
        elif default is _REQUIRED:
            raise ValueError(f"{where}: missing required parameter {name!r}; accepted parameters: {', '.join(schema)}")
        else:
            out[name] = default
    return out


def _entry(registry_name: str, schema: dict):
    """Registers ``build(instance_name, values) -> asset`` as a factory that validates its params first."""

    def wrap(build):
        def factory(instance_name: str, **params):
            values = parse_params(instance_name, registry_name, params, schema)
            asset = build(instance_name, values)
            asset.registry_name = registry_name
            asset.registry_params = plain(params)
            return asset

        factory.__name__ = factory.__qualname__ = build.__name__
        factory.__module__ = build.__module__
        factory.__doc__ = build.__doc__
        factory.accepted_params = list(schema) + list(_COMMON)
        return register_asset(registry_name)(factory)

    return wrap


def _rigid_props(mass_kg: float | None) -> dict:
    import isaaclab.sim as sim_utils

    return {
        "rigid_props": sim_utils.UsdPhysicsRigidBodyCfg(),
        "mass_props": sim_utils.MassCfg(mass=mass_kg) if mass_kg is not None else None,
        "collision_props": sim_utils.UsdPhysicsCollisionCfg(),
    }


def _material(color):
    import isaaclab.sim as sim_utils

    return sim_utils.PreviewSurfaceCfg(diffuse_color=tuple(float(c) for c in color))


def _object(name: str, spawn_cfg, v: dict) -> Object:
    return Object(name, spawn_cfg, initial_pose=v["initial_pose"], collision_mode=v["collision_mode"])


_RIGID = {"mass_kg": (0.2, _positive), "color": (_DEFAULT_COLOR, _color)}


@_entry("box", {"size": (_REQUIRED, _size), **_RIGID})
def box(instance_name: str, v: dict) -> Object:
    """A rigid dynamic cuboid of ``size`` [x, y, z] metres centred on its origin."""
    import isaaclab.sim as sim_utils

    cfg = sim_utils.CuboidCfg(size=v["size"], visual_material=_material(v["color"]), **_rigid_props(v["mass_kg"]))
    return _object(instance_name, cfg, v)


@_entry("cylinder", {"radius": (_REQUIRED, _positive), "height": (_REQUIRED, _positive), **_RIGID})
def cylinder(instance_name: str, v: dict) -> Object:
    """A rigid dynamic cylinder along local Z, centred on its origin."""
    import isaaclab.sim as sim_utils

    cfg = sim_utils.CylinderCfg(radius=v["radius"], height=v["height"], axis="Z",
                                visual_material=_material(v["color"]), **_rigid_props(v["mass_kg"]))
    return _object(instance_name, cfg, v)


@_entry("sphere", {"radius": (_REQUIRED, _positive), **_RIGID})
def sphere(instance_name: str, v: dict) -> Object:
    """A rigid dynamic sphere centred on its origin."""
    import isaaclab.sim as sim_utils

    cfg = sim_utils.SphereCfg(radius=v["radius"], visual_material=_material(v["color"]), **_rigid_props(v["mass_kg"]))
    return _object(instance_name, cfg, v)


@_entry("usd_file", {"usd_path": (_REQUIRED, _usd_path), "scale": ((1.0, 1.0, 1.0), _scale),
                     "mass_kg": (None, _optional_positive)})
def usd_file(instance_name: str, v: dict) -> Object:
    """A rigid dynamic object from a USD file (bounds read from the file with pxr, times ``scale``)."""
    import isaaclab.sim as sim_utils

    cfg = sim_utils.UsdFileCfg(usd_path=v["usd_path"], scale=v["scale"], **_rigid_props(v["mass_kg"]))
    return _object(instance_name, cfg, v)


@_entry("static_box", {"size": (_REQUIRED, _size), "color": (_DEFAULT_COLOR, _color)})
def static_box(instance_name: str, v: dict) -> Background:
    """A static cuboid collider (no rigid body): a table, wall or shelf; identity pose when none is given."""
    import isaaclab.sim as sim_utils

    cfg = sim_utils.CuboidCfg(size=v["size"], collision_props=sim_utils.UsdPhysicsCollisionCfg(),
                              visual_material=_material(v["color"]))
    return Background(instance_name, cfg, initial_pose=v["initial_pose"], collision_mode=v["collision_mode"])


@_entry("usd_background", {"usd_path": (_REQUIRED, _usd_path)})
def usd_background(instance_name: str, v: dict) -> Background:
    """A static scene (room, table, counter) from a USD file, spawned as authored (no rigid body added)."""
    import isaaclab.sim as sim_utils

    cfg = sim_utils.UsdFileCfg(usd_path=v["usd_path"])
    return Background(instance_name, cfg, initial_pose=v["initial_pose"], collision_mode=v["collision_mode"])

"""Setting dotted attribute paths on an Isaac Lab env cfg (``sim.dt``, ``scene.light.spawn.intensity``).

``apply_env_cfg_overrides(cfg, overrides)`` sets every ``path: value`` on the cfg object it is given (the
builder calls it last in ``compose_manager_cfg()``, so the values win over the builder's own). Each path must
name an existing attribute (or an existing key of a dict attribute); a mapping value set on a config object
sets its fields one by one. Values keep the attribute's type: a float field takes a number, an int field an
integer, a bool field true/false, a tuple field a list; fields holding code (classes, functions) cannot be
set. ``scene.num_envs`` is refused (the env count comes from ``num_envs`` / ``--num_envs``).

``resolve_path(cfg, path, scene_entities=...)`` is the load-time check the YAML loader runs on a default cfg:
parts the builder fills in at compose time (scene entities named in ``scene_entities``, attributes that are
still None or unset, such as ``sim.physics``) raise ``DeferredPath`` and are checked when applied.
This module works on any cfg object and imports neither the builder nor the YAML loader.
"""

from __future__ import annotations

import dataclasses
from typing import Any

#: Paths that cannot be overridden, and why.
REFUSED_PATHS = {"scene.num_envs": "the env count comes from num_envs / --num_envs / ArenaEnvBuilderCfg.num_envs "
                                   "(placement pools are sized by it)"}
#: Scene entities the builder always adds besides one per asset.
BUILDER_SCENE_ENTITIES = ("ground", "light")


class DeferredPath(Exception):
    """The path reaches a part of the cfg the builder fills in at compose time."""


def _is_unset(value) -> bool:
    return value is None or value is dataclasses.MISSING or isinstance(value, type(dataclasses.MISSING))


def _attributes(obj) -> list[str]:
    if isinstance(obj, dict):
        return [str(k) for k in obj]
    if dataclasses.is_dataclass(obj):
        names = [f.name for f in dataclasses.fields(obj)]
        return names + [k for k in vars(obj) if k not in names]
    return sorted(vars(obj)) if hasattr(obj, "__dict__") else []


def _has(obj, name: str) -> bool:
    if isinstance(obj, dict):
        return name in obj
    return hasattr(obj, name) and not callable(getattr(type(obj), name, None)) or name in getattr(obj, "__dict__", {})


def _get(obj, name: str):
    return obj[name] if isinstance(obj, dict) else getattr(obj, name)


def resolve_path(cfg, path: str, *, scene_entities: tuple[str, ...] | None = None):
    """``(parent, last name)`` of ``path`` on ``cfg``. Raises ``ValueError`` for an unknown attribute, or
    ``DeferredPath`` (load-time check only, ``scene_entities`` given) for parts the builder fills in."""
    parts = path.split(".")
    obj = cfg
    for depth, name in enumerate(parts):
        here = ".".join(parts[:depth]) or "the env cfg"
        if depth and _is_unset(obj):
            if scene_entities is not None:
                raise DeferredPath(path)
            raise ValueError(f"'{here}' is {obj!r} in the composed env cfg, so '{name}' below it cannot be set")
        if not _has(obj, name):
            entities = () if scene_entities is None else scene_entities + BUILDER_SCENE_ENTITIES
            if depth == 1 and parts[0] == "scene" and name in entities:
                raise DeferredPath(path)  # the scene entity is added by compose_manager_cfg
            names = _attributes(obj)
            if depth == 1 and parts[0] == "scene":
                names = names + [f"{n} (scene entity)" for n in entities]
            raise ValueError(f"unknown attribute path '{path}': {type(obj).__name__} '{here}' has no attribute "
                             f"'{name}'; its attributes: {', '.join(names) or 'none'}")
        if depth == len(parts) - 1:
            return obj, name
        obj = _get(obj, name)
    raise AssertionError("unreachable")


def _coerce(path: str, current, value):
    """``value`` converted to the type of ``current`` (see module docstring); ``ValueError`` if it does not fit."""
    def bad(what: str):
        return ValueError(f"env_cfg_override '{path}': expects {what} (the current value is {current!r}), "
                          f"got {value!r}")

    if _is_unset(current):
        return value
    kinds = ((bool, (bool,), "true or false", None), (int, (int,), "an integer", None),
             (float, (int, float), "a number", float), (str, (str,), "a string", None),
             (tuple, (list, tuple), "a list", tuple), (list, (list, tuple), "a list", list),
             (dict, (dict,), "a mapping", dict))
    for current_type, accepted, what, convert in kinds:
        if isinstance(current, current_type):
            if not isinstance(value, accepted) or (current_type is not bool and isinstance(value, bool)):
                raise bad(what)
            return convert(value) if convert else value
    raise ValueError(f"env_cfg_override '{path}': holds a {type(current).__name__}, which YAML cannot set; "
                     "override numbers, strings, booleans, lists, mappings or the fields of a config one by one")


def apply_env_cfg_overrides(cfg, overrides: dict) -> Any:
    """Sets every ``path: value`` of ``overrides`` on ``cfg`` (in place) and returns ``cfg``.

    Raises ``ValueError`` naming the key for an unknown path or a value of the wrong type.
    """
    for path, value in overrides.items():
        if path in REFUSED_PATHS:
            raise ValueError(f"env_cfg_override '{path}' cannot be overridden: {REFUSED_PATHS[path]}")
        try:
            parent, name = resolve_path(cfg, path)
        except ValueError as err:
            raise ValueError(f"env_cfg_override '{path}': {err}") from None
        current = _get(parent, name)
        if isinstance(value, dict) and not isinstance(current, dict) and not _is_unset(current) \
                and hasattr(current, "__dict__") and not callable(current):
            apply_env_cfg_overrides(cfg, {f"{path}.{k}": v for k, v in value.items()})
            continue
        if callable(current) and not _is_unset(current):
            raise ValueError(f"env_cfg_override '{path}': holds code ({current!r}); YAML cannot set it")
        new = _coerce(path, current, value)
        if isinstance(parent, dict):
            parent[name] = new
        else:
            setattr(parent, name, new)
    return cfg

"""``env_cfg_override``: dotted Isaac Lab env-cfg attribute paths -> values, applied to the composed env cfg.

    env_cfg_override:
      sim.dt: 0.005            # physics step, seconds
      decimation: 4
      episode_length_s: 8.0    # seconds
      viewer.eye: [2.0, 2.0, 1.5]

``ArenaEnvBuilder.compose_manager_cfg()`` applies the mapping last (``apply_env_cfg_overrides``), so it wins
over the builder's own values (``ArenaEnvBuilderCfg.sim_dt`` / ``decimation`` / ``episode_length_s``).
Each path must name an existing attribute (or an existing key of a dict attribute); a mapping value set on
a config object sets its fields one by one. Values keep the attribute's type: a float field takes a number,
an int field an integer, a bool field true/false, a tuple field a list; fields holding code (classes,
functions) cannot be set. ``scene.num_envs`` is refused (use ``num_envs`` / ``--num_envs``).

At load time ``check_env_cfg_paths`` resolves every path on a default ``ArenaEnvCfg``; parts the builder fills
in at compose time (scene entities named after the spec's assets, ``ground`` and ``light``; attributes that are
still None or unset, such as ``sim.physics``) are checked when the override is applied.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from isaaclab_arena.env_spec.spec_issue import SpecIssue
from isaaclab_arena.env_spec.yaml_lines import line_of, to_plain

_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_REFUSED = {"scene.num_envs": "the env count comes from num_envs / --num_envs / ArenaEnvBuilderCfg.num_envs "
                              "(placement pools are sized by it)"}
#: Scene entities the builder always adds besides one per asset.
BUILDER_SCENE_ENTITIES = ("ground", "light")


class _Deferred(Exception):
    """The path reaches a part of the cfg the builder fills in at compose time."""


def _is_unset(value) -> bool:
    return value is None or value is dataclasses.MISSING or isinstance(value, type(dataclasses.MISSING))


def _attributes(obj) -> list[str]:
    if isinstance(obj, dict):
        return [str(k) for k in obj]
    if dataclasses.is_dataclass(obj):
        return [f.name for f in dataclasses.fields(obj)] + [k for k in vars(obj) if k not in
                                                             {f.name for f in dataclasses.fields(obj)}]
    return sorted(k for k in vars(obj)) if hasattr(obj, "__dict__") else []


def _has(obj, name: str) -> bool:
    if isinstance(obj, dict):
        return name in obj
    return hasattr(obj, name) and not callable(getattr(type(obj), name, None)) or name in getattr(obj, "__dict__", {})


def _get(obj, name: str):
    return obj[name] if isinstance(obj, dict) else getattr(obj, name)


def _walk(cfg, path: str, *, asset_names: tuple[str, ...] | None = None):
    """``(parent, last name)`` of ``path`` on ``cfg``; raises ``ValueError`` for an unknown attribute, or
    ``_Deferred`` (load-time check only, ``asset_names`` given) for parts the builder fills in."""
    parts = path.split(".")
    obj = cfg
    for depth, name in enumerate(parts):
        here = ".".join(parts[:depth]) or "the env cfg"
        if depth and _is_unset(obj):
            if asset_names is not None:
                raise _Deferred
            raise ValueError(f"'{here}' is {obj!r} in the composed env cfg, so '{name}' below it cannot be set")
        if not _has(obj, name):
            if asset_names is not None and depth == 1 and parts[0] == "scene" and \
                    name in asset_names + BUILDER_SCENE_ENTITIES:
                raise _Deferred  # the scene entity is added by compose_manager_cfg
            names = _attributes(obj)
            if asset_names is not None and depth == 1 and parts[0] == "scene":
                names = names + [f"{n} (scene entity)" for n in asset_names + BUILDER_SCENE_ENTITIES]
            raise ValueError(f"unknown attribute path '{path}': {type(obj).__name__} '{here}' has no attribute "
                             f"'{name}'; its attributes: {', '.join(names) or 'none'}")
        if depth == len(parts) - 1:
            return obj, name
        obj = _get(obj, name)
    raise AssertionError("unreachable")


def parse_env_cfg_override(raw: Any, line: int | None) -> dict:
    """Checks the ``env_cfg_override`` mapping's shape (dotted attribute paths, YAML data values)."""
    if not isinstance(raw, dict):
        raise SpecIssue(f"'env_cfg_override' must be a mapping of dotted env-cfg attribute paths to values "
                        f"(e.g. sim.dt: 0.005), got {raw!r}", where="env_cfg_override", line=line)
    for key in raw:
        kline = line_of(raw, key) or line
        if not isinstance(key, str) or not _PATH.match(key):
            raise SpecIssue(f"{key!r} is not a dotted attribute path (names of letters, digits and _, joined by "
                            "dots, e.g. sim.dt)", where="env_cfg_override", key=f"env_cfg_override.{key}", line=kline)
        if key in _REFUSED:
            raise SpecIssue(f"'{key}' cannot be overridden: {_REFUSED[key]}", where="env_cfg_override",
                            key=f"env_cfg_override.{key}", line=kline)
    return {k: to_plain(v) for k, v in raw.items()}


def check_env_cfg_paths(overrides: dict, asset_names: tuple[str, ...], lines: Any = None) -> None:
    """Resolves every override path on a default ``ArenaEnvCfg`` (see module docstring); raises ``SpecIssue``
    naming the key for an unknown attribute path."""
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvCfg

    cfg = ArenaEnvCfg()
    for key in overrides:
        try:
            _walk(cfg, key, asset_names=tuple(asset_names))
        except _Deferred:
            continue
        except ValueError as err:
            raise SpecIssue(str(err), where="env_cfg_override", key=f"env_cfg_override.{key}",
                            line=line_of(lines, key)) from None


def _coerce(path: str, current, value):
    """``value`` converted to the type of ``current`` (see module docstring); ``ValueError`` if it does not fit."""
    def bad(what: str):
        return ValueError(f"env_cfg_override '{path}': expects {what} (the current value is {current!r}), "
                          f"got {value!r}")

    if _is_unset(current):
        return value
    if isinstance(current, bool):
        if not isinstance(value, bool):
            raise bad("true or false")
        return value
    if isinstance(current, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad("an integer")
        return value
    if isinstance(current, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad("a number")
        return float(value)
    if isinstance(current, str):
        if not isinstance(value, str):
            raise bad("a string")
        return value
    if isinstance(current, tuple):
        if not isinstance(value, (list, tuple)):
            raise bad("a list")
        return tuple(value)
    if isinstance(current, list):
        if not isinstance(value, (list, tuple)):
            raise bad("a list")
        return list(value)
    if isinstance(current, dict):
        if not isinstance(value, dict):
            raise bad("a mapping")
        return dict(value)
    raise ValueError(f"env_cfg_override '{path}': holds a {type(current).__name__}, which YAML cannot set; "
                     "override numbers, strings, booleans, lists, mappings or the fields of a config one by one")


def apply_env_cfg_overrides(cfg, overrides: dict) -> Any:
    """Sets every ``path: value`` of ``overrides`` on ``cfg`` (in place) and returns ``cfg``.

    Raises ``ValueError`` naming the key for an unknown path or a value of the wrong type.
    """
    for path, value in overrides.items():
        if path in _REFUSED:
            raise ValueError(f"env_cfg_override '{path}' cannot be overridden: {_REFUSED[path]}")
        try:
            parent, name = _walk(cfg, path)
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

"""``env_cfg_override``: dotted Isaac Lab env-cfg attribute paths -> values, read from a spec.

    env_cfg_override:
      sim.dt: 0.005            # physics step, seconds
      decimation: 4
      episode_length_s: 8.0    # seconds
      viewer.eye: [2.0, 2.0, 1.5]

The mapping is stored in ``IsaacLabArenaEnvironment.env_cfg_overrides``; ``ArenaEnvBuilder.compose_manager_cfg()``
applies it last with ``isaaclab_arena.environments.env_cfg_override.apply_env_cfg_overrides`` (rules for paths
and value types there), so it wins over ``ArenaEnvBuilderCfg.sim_dt`` / ``decimation`` / ``episode_length_s``.
At load time every path is resolved on a default ``ArenaEnvCfg``; parts the builder fills in at compose time
(scene entities named after the spec's assets, ``ground`` and ``light``; attributes still None or unset, such
as ``sim.physics``) are checked when the override is applied.
"""

from __future__ import annotations

import re
from typing import Any

from isaaclab_arena.env_spec.spec_issue import SpecIssue
from isaaclab_arena.env_spec.yaml_lines import line_of
from isaaclab_arena.utils.checks import short_repr
from isaaclab_arena.utils.plain_data import plain

_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def parse_env_cfg_override(raw: Any, line: int | None) -> dict:
    """Checks the ``env_cfg_override`` mapping's shape (dotted attribute paths, YAML data values)."""
    from isaaclab_arena.environments.env_cfg_override import REFUSED_PATHS

    if not isinstance(raw, dict):
        raise SpecIssue(f"'env_cfg_override' must be a mapping of dotted env-cfg attribute paths to values "
                        f"(e.g. sim.dt: 0.005), got {short_repr(raw)}", where="env_cfg_override", line=line)
    for key in raw:
        kline = line_of(raw, key) or line
        if not isinstance(key, str) or not _PATH.match(key):
            raise SpecIssue(f"{short_repr(key)} is not a dotted attribute path (names of letters, digits and _, "
                            f"joined by "
                            "dots, e.g. sim.dt)", where="env_cfg_override", key=f"env_cfg_override.{key}", line=kline)
        if key in REFUSED_PATHS:
            raise SpecIssue(f"'{key}' cannot be overridden: {REFUSED_PATHS[key]}", where="env_cfg_override",
                            key=f"env_cfg_override.{key}", line=kline)
    return {k: plain(v) for k, v in raw.items()}


def check_env_cfg_paths(overrides: dict, asset_names: tuple[str, ...], lines: Any = None) -> None:
    """Resolves every override path on a default ``ArenaEnvCfg`` (see module docstring); ``SpecIssue`` naming
    the key for an unknown attribute path."""
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvCfg
    from isaaclab_arena.environments.env_cfg_override import DeferredPath, resolve_path

    cfg = ArenaEnvCfg()
    for key in overrides:
        try:
            resolve_path(cfg, key, scene_entities=tuple(asset_names))
        except DeferredPath:
            continue
        except ValueError as err:
            raise SpecIssue(str(err), where="env_cfg_override", key=f"env_cfg_override.{key}",
                            line=line_of(lines, key)) from None

"""YAML data -> typed spec nodes (``SpecGraph``): the top level of a spec.

``parse_spec(data, source)`` merges ``external_yaml`` includes, refuses unknown top-level keys and any NaN or
infinite number, parses every section into nodes (``parse_assets.py``, ``parse_relations.py``,
``cli_override_spec.py``, ``placer_params_spec.py``, ``env_cfg_override.py``) and checks the run settings.
Nothing is built here; ``build.py`` makes the assets and relations. Every problem is a ``SpecIssue`` holding
the line the YAML parser recorded for the node or key (see ``yaml_lines.py``).
"""

from __future__ import annotations

import copy
import math
import os
from typing import Any

from isaaclab_arena.env_spec.cli_override_spec import parse_cli_override_specs
from isaaclab_arena.env_spec.env_cfg_override import check_env_cfg_paths, parse_env_cfg_override
from isaaclab_arena.env_spec.external_yaml import merge_external_yaml
from isaaclab_arena.env_spec.nodes import SpecGraph
from isaaclab_arena.env_spec.parse_assets import (
    node_list,
    parse_asset_node,
    parse_object_reference,
    parse_object_set,
)
from isaaclab_arena.env_spec.parse_relations import parse_relations
from isaaclab_arena.env_spec.parse_robot import parse_embodiment, parse_task
from isaaclab_arena.env_spec.placer_params_spec import PLACEMENT_VALIDATOR_KEYS, parse_placer_params
from isaaclab_arena.env_spec.recording_spec import parse_recording
from isaaclab_arena.env_spec.spec_issue import SpecIssue
from isaaclab_arena.env_spec.write_back import snapshot_included
from isaaclab_arena.env_spec.yaml_lines import find_non_finite, line_of, line_text, start_line
from isaaclab_arena.utils.checks import env_name_problem, short_repr

TOP_LEVEL_KEYS = ("env_name", "embodiment", "background", "objects", "object_sets", "object_pools", "object_references",
                  "relations",
                  "task", "placer_params", "num_envs", "env_spacing", "default_physics_backend", "external_yaml",
                  "cli_override_specs", "env_cfg_override", "recording")
#: Read into ``placer_params`` (the older name of part of it).
OLDER_KEYS = ("placement_validators",)
NODE_LISTS = ("objects", "object_sets", "object_pools", "object_references", "relations", "cli_override_specs")


def parse_spec(data: Any, source: str, cls: type[SpecGraph] = SpecGraph) -> SpecGraph:
    """The spec of ``data`` (a mapping read from ``source``), as a ``cls`` instance."""
    merged, includes = merge_external_yaml(data, source)
    spec = _parse_merged(merged, source, cls)
    spec.external_yaml = list(includes.paths)
    spec.included_sources = set(includes.sources)
    spec.included_snapshot = snapshot_included(spec, merged)
    return spec


def _entry_where(section: str, index: int, entry: Any) -> str:
    """How messages name entry ``index`` of a node list before it is parsed."""
    label = f"{section}[{index}]"
    if not isinstance(entry, dict):
        return label
    if section != "relations":
        return f"{label} (id '{entry['id']}')" if isinstance(entry.get("id"), str) else label
    parts = [f"{k} '{entry[k]}'" for k in ("id", "kind", "subject", "reference") if isinstance(entry.get(k), str)]
    return f"{label} ({', '.join(parts)})" if parts else label


def _reject_non_finite(data: dict) -> None:
    for key, value in data.items():
        entries = list(enumerate(value)) if key in NODE_LISTS and isinstance(value, list) else [(None, value)]
        for index, entry in entries:
            path = f"{key}[{index}]" if index is not None else str(key)
            bad = find_non_finite(entry, path)
            if bad is None:
                continue
            if index is not None:
                where = _entry_where(str(key), index, entry)
                line = bad[2] or line_of(value, index)
            else:
                node_id = entry.get("id") if isinstance(entry, dict) else None
                where = f"{key} (id '{node_id}')" if isinstance(node_id, str) else str(key)
                line = bad[2] or line_of(data, key)
            raise SpecIssue(f"{short_repr(bad[1])} is not a finite number; NaN and infinite values are not accepted",
                            where=where, key=bad[0], line=line)


def _check_top_level(data: Any) -> None:
    if not isinstance(data, dict):
        raise SpecIssue(f"is not a spec: the top level must be a mapping with keys {', '.join(TOP_LEVEL_KEYS)}, "
                        f"got {type(data).__name__}", line=start_line(data))
    for key in data:
        if key not in TOP_LEVEL_KEYS and key not in OLDER_KEYS:
            raise SpecIssue(f"unknown top-level key {short_repr(key)}; accepted keys: {', '.join(TOP_LEVEL_KEYS)}",
                            key=str(key), line=line_of(data, key))
    _reject_non_finite(data)


def _placer_params(data: dict) -> tuple[dict, int | None]:
    """``placer_params`` with the older ``placement_validators`` block read into it, and its line."""
    placer, line = data.get("placer_params"), line_of(data, "placer_params")
    if placer is not None and not isinstance(placer, dict):
        raise SpecIssue(f"'placer_params' must be a mapping of ObjectPlacerParams fields, got {short_repr(placer)}",
                        where="placer_params", line=line)
    placer = copy.deepcopy(placer) if placer else {}
    validators = data.get("placement_validators")
    if validators is None:
        return placer, line
    vline = line_of(data, "placement_validators")
    if not isinstance(validators, dict):
        raise SpecIssue(f"'placement_validators' must be a mapping, got "
                        f"{short_repr(validators)}", where="placement_validators",
                        line=vline)
    for key, value in validators.items():
        kline = line_of(validators, key) or vline
        if key not in PLACEMENT_VALIDATOR_KEYS:
            raise SpecIssue(f"unknown key '{key}'; accepted: {', '.join(PLACEMENT_VALIDATOR_KEYS)} (other placer "
                            "settings go in placer_params)", where="placement_validators", key=str(key), line=kline)
        if key in placer:
            raise SpecIssue(f"'{key}' is set in both placement_validators and placer_params; keep one",
                            where="placement_validators", key=str(key), line=kline)
        placer[key] = value
    return placer, line or vline


def _run_settings(data: dict) -> tuple[int | None, float | None, str | None]:
    """``num_envs`` (> 0), ``env_spacing`` (metres, > 0) and ``default_physics_backend``."""
    num_envs = data.get("num_envs")
    if num_envs is not None and (isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs <= 0):
        raise SpecIssue(f"'num_envs' must be a positive integer, got {short_repr(num_envs)}", key="num_envs",
                        line=line_of(data, "num_envs"))
    spacing = data.get("env_spacing")
    if spacing is not None:
        if isinstance(spacing, bool) or not isinstance(spacing, (int, float)) or not math.isfinite(spacing) \
                or spacing <= 0:
            raise SpecIssue(f"'env_spacing' must be a number of metres > 0, got "
                            f"{short_repr(spacing)}", key="env_spacing",
                            line=line_of(data, "env_spacing"))
        spacing = float(spacing)
    physics = data.get("default_physics_backend")
    if physics is not None and (not isinstance(physics, str) or not physics):
        raise SpecIssue(f"'default_physics_backend' must be a physics preset name (e.g. ovphysx, newton_mjwarp), "
                        f"got {short_repr(physics)}", key="default_physics_backend",
                        line=line_of(data, "default_physics_backend"))
    return num_envs, spacing, physics


def _parse_merged(data: Any, source: str, cls: type[SpecGraph]) -> SpecGraph:
    _check_top_level(data)
    env_name = data.get("env_name")
    if env_name is None and source != "<dict>":
        env_name = os.path.splitext(os.path.basename(source))[0]
    problem = env_name_problem(env_name)
    if problem is not None:
        given = "env_name" in data
        raise SpecIssue(f"'env_name' {problem}" + ("" if given else " (taken from the file name; set env_name)"),
                        key="env_name", line=line_of(data, "env_name") if given else start_line(data))

    background = None
    if data.get("background") is not None:
        background = parse_asset_node(data["background"], "background", line_of(data, "background"))
    objects = [parse_asset_node(raw, f"objects[{i}]", line_of(data["objects"], i))
               for i, raw in enumerate(node_list(data, "objects"))]
    sets = [parse_object_set(raw, f"object_sets[{i}]", line_of(data["object_sets"], i))
            for i, raw in enumerate(node_list(data, "object_sets"))]
    refs = [parse_object_reference(raw, f"object_references[{i}]", line_of(data["object_references"], i), background)
            for i, raw in enumerate(node_list(data, "object_references"))]
    embodiment = parse_embodiment(data["embodiment"], line_of(data, "embodiment")) \
        if data.get("embodiment") is not None else None
    task = parse_task(data["task"], line_of(data, "task")) if data.get("task") is not None else None
    seen: dict[str, Any] = {}
    for node in ([background] if background else []) + objects + sets + refs + ([embodiment] if embodiment else []):
        first = seen.get(node.id)
        if first is not None:
            at = f" ({line_text(first.line, node.line)})" if first.line else ""
            raise SpecIssue(f"duplicate asset id '{node.id}': already defined by {first.label}{at}; every asset needs "
                            "a unique id", where=node.where, key="id", line=node.line)
        seen[node.id] = node
    relations = parse_relations(node_list(data, "relations"), line_of(data, "relations"))

    placer, placer_line = _placer_params(data)
    parse_placer_params(placer, placer_line)  # checks names and types now
    num_envs, spacing, physics = _run_settings(data)
    targets = {n.id: n for n in ([background] if background else []) + objects}
    overrides = parse_cli_override_specs(node_list(data, "cli_override_specs"), targets,
                                         line_of(data, "cli_override_specs"))
    cfg_override = {}
    if data.get("env_cfg_override") is not None:
        cfg_override = parse_env_cfg_override(data["env_cfg_override"], line_of(data, "env_cfg_override"))
        check_env_cfg_paths(cfg_override, tuple(seen), data["env_cfg_override"])
    recording = parse_recording(data.get("recording"), line_of(data, "recording"))
    from isaaclab_arena.env_spec.parse_pools import parse_object_pool

    pools = [parse_object_pool(raw, f"object_pools[{i}]", line_of(data["object_pools"], i))
             for i, raw in enumerate(node_list(data, "object_pools"))]
    return cls(env_name, background, objects, sets, refs, relations, placer, num_envs, spacing, physics, source=source,
               placer_params_line=placer_line, cli_override_specs=overrides, env_cfg_override=cfg_override,
               key_lines={str(k): line_of(data, k) for k in data}, embodiment=embodiment, task=task,
               recording=recording, object_pools=pools)

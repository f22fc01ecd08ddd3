"""Typed spec -> YAML data and files, and a Python ``IsaacLabArenaEnvironment`` -> typed spec.

``spec_to_dict`` writes only non-empty sections and relation parameters that were given; a spec that
merged ``external_yaml`` files is written as its own keys plus ``external_yaml`` (``flatten=True``: one
self-contained spec). ``write_spec_yaml`` writes atomically (a temporary file in the same folder, then
``os.replace``), so a failed write never leaves half a file. ``graph_from_arena_env`` goes the other way for
environments made from registered assets. Either way, a spec written back out loads equal.
"""

from __future__ import annotations

import copy
import os
from typing import Any

import yaml

from isaaclab_arena.env_spec.env_cfg_override import parse_env_cfg_override
from isaaclab_arena.env_spec.nodes import (
    AssetNode,
    EmbodimentNode,
    ObjectReferenceNode,
    ObjectSetNode,
    RelationNode,
    SpecGraph,
    TaskNode,
)
from isaaclab_arena.env_spec.parse_relations import REQUIRED, known_kinds_text, relation_parameters
from isaaclab_arena.env_spec.placer_params_spec import placer_params_to_dict
from isaaclab_arena.utils.atomic_files import write_text_atomic
from isaaclab_arena.env_spec.spec_issue import EnvSpecError, SpecIssue
from isaaclab_arena.env_spec.yaml_lines import line_of, source_of
from isaaclab_arena.relations.relations import RELATION_KINDS, RelationBase
from isaaclab_arena.utils.checks import short_repr
from isaaclab_arena.utils.plain_data import plain


def _sections(spec: SpecGraph) -> dict[str, list]:
    return {"objects": spec.objects, "object_sets": spec.object_sets, "object_pools": spec.object_pools,
            "object_references": spec.object_references,
            "relations": spec.relations, "cli_override_specs": spec.cli_override_specs}


def _included(spec: SpecGraph, line) -> bool:
    return source_of(line) is not None and source_of(line) in spec.included_sources


def _flat_dict(spec: SpecGraph) -> dict:
    out: dict[str, Any] = {"env_name": spec.env_name}
    for key in ("num_envs", "env_spacing", "default_physics_backend"):
        if getattr(spec, key) is not None:
            out[key] = getattr(spec, key)
    if spec.embodiment is not None:
        out["embodiment"] = spec.embodiment.to_dict()
    if spec.background is not None:
        out["background"] = spec.background.to_dict()
    for key, nodes in _sections(spec).items():
        if nodes:
            out[key] = [n.to_dict() for n in nodes]
    if spec.task is not None:
        out["task"] = spec.task.to_dict()
    if spec.placer_params:
        out["placer_params"] = plain(spec.placer_params)
    if spec.env_cfg_override:
        out["env_cfg_override"] = plain(spec.env_cfg_override)
    if spec.recording:
        out["recording"] = plain(spec.recording)
    return out


def snapshot_included(spec: SpecGraph, data: dict) -> dict:
    """What came from included files, as ``spec_to_dict`` writes it (to tell it apart from the spec's own
    keys later): top-level keys by name, list entries by (section, file, line)."""
    if not spec.included_sources:
        return {}
    snap: dict[Any, Any] = {}
    sections = _sections(spec)
    for key, value in _flat_dict(spec).items():
        if key in sections:
            for node, item in zip(sections[key], value):
                if _included(spec, node.line):
                    snap[(key, source_of(node.line), int(node.line))] = item
        elif _included(spec, line_of(data, key)):
            snap[key] = value
    return snap


def spec_to_dict(spec: SpecGraph, flatten: bool = False) -> dict:
    """The spec as plain YAML data (see the module docstring). An included entry changed after loading cannot
    be written as an include (the included file still holds the old one): ``EnvSpecError``; use ``flatten``."""
    flat = _flat_dict(spec)
    if flatten or not spec.external_yaml:
        return flat
    snap, sections = spec.included_snapshot, _sections(spec)
    out: dict[str, Any] = {}
    if snap.get("env_name") != flat["env_name"]:
        out["env_name"] = flat["env_name"]
    out["external_yaml"] = list(spec.external_yaml)
    for key in snap:
        if isinstance(key, str) and key not in flat:
            raise EnvSpecError(f"'{key}' came from an included file and was cleared after loading; write the spec "
                               "with to_dict(flatten=True) / to_yaml(path, flatten=True)", source=spec.source, key=key)
    for key, value in flat.items():
        if key == "env_name":
            continue
        if key not in sections:
            if key not in snap or snap[key] != value:
                out[key] = value
            continue
        own = []
        for node, item in zip(sections[key], value):
            tag = (key, source_of(node.line), int(node.line)) if _included(spec, node.line) else None
            if tag is None or tag not in snap:
                own.append(item)
            elif snap[tag] != item:
                raise EnvSpecError(f"{key} entry {item} came from included file {source_of(node.line)} and was "
                                   "changed after loading; write the spec with to_dict(flatten=True) / "
                                   "to_yaml(path, flatten=True)", source=source_of(node.line), line=node.line, key=key)
        if own:
            out[key] = own
    return out


def write_spec_yaml(spec: SpecGraph, path: str | os.PathLike, flatten: bool = False) -> str:
    """Writes ``spec`` to ``path`` atomically; ``external_yaml`` paths relative to ``path``'s folder."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    data = spec_to_dict(spec, flatten=flatten)
    if "external_yaml" in data:
        refs = [os.path.relpath(p, folder) for p in data["external_yaml"]]
        data["external_yaml"] = refs[0] if len(refs) == 1 else refs
    text = yaml.safe_dump(data, sort_keys=False, default_flow_style=None, allow_unicode=True)
    # the user's umask decides the mode, as for ``open(path, "w")`` (``mkstemp`` alone gave 0600)
    return write_text_atomic(path, text)


# -- Python environment -> spec ----------------------------------------------------------------------------------
def relation_to_node(subject_name: str, relation: RelationBase) -> RelationNode:
    """The spec entry of ``relation`` on ``subject_name``; only parameters that differ from the defaults."""
    cls = type(relation)
    if RELATION_KINDS.get(cls.yaml_kind) is not cls:
        raise SpecIssue(f"{cls.__name__} is not a relation kind YAML knows (kinds: {known_kinds_text()}), "
                        "so it cannot be written to a spec", where=f"asset '{subject_name}'")
    accepted = relation_parameters(cls)
    params = {}
    for name, value in relation.params().items():
        if name not in accepted:
            continue
        default = accepted[name]
        if default is not REQUIRED and plain(default) == plain(value):
            continue
        params[name] = plain(value)
    reference = relation.parent.name if relation.parent is not None else None
    return RelationNode(cls.yaml_kind, subject_name, reference, params)


def _asset_params(asset) -> dict:
    """The registry params that rebuild ``asset``, with its current initial pose and collision mode."""
    from isaaclab_arena.assets.asset import Background
    from isaaclab_arena.assets.collision_mode import parse_collision_mode
    from isaaclab_arena.utils.pose import Pose, parse_pose

    params = plain(copy.deepcopy(asset.registry_params))
    where = f"asset '{asset.name}'"
    expected = parse_pose(params.get("initial_pose"), where)
    if expected is None and isinstance(asset, Background):
        expected = Pose.identity()
    if asset.initial_pose != expected:
        if asset.initial_pose is None:
            params.pop("initial_pose", None)
        else:
            params["initial_pose"] = asset.initial_pose.to_dict()
    if asset.collision_mode != parse_collision_mode(params.get("collision_mode"), where):
        params["collision_mode"] = asset.collision_mode.value if asset.collision_mode is not None else None
    return params


def _add_properties(asset, params: dict) -> dict:
    """``params.physical_properties`` from the asset's ``PhysicalPropertyRanges`` (none: the key is left out)."""
    from isaaclab_arena.assets.physical_properties import physical_property_ranges_of

    ranges = physical_property_ranges_of(asset)
    params.pop("physical_properties", None)
    if ranges is not None and ranges.drawn_fields:
        params["physical_properties"] = ranges.to_dict()
    return params


def _asset_node(asset, names: set[str]):
    """The node of one asset (``SpecIssue`` for what YAML cannot express)."""
    from isaaclab_arena.assets.asset import Object
    from isaaclab_arena.assets.object_reference import ObjectReference
    from isaaclab_arena.assets.object_set import RigidObjectSet

    where = f"asset '{asset.name}'"
    if isinstance(asset, ObjectReference):
        if asset.parent_asset.name not in names:
            raise SpecIssue(f"parent '{asset.parent_asset.name}' is not an asset of the environment", where=where,
                            key="parent_id")
        return ObjectReferenceNode(asset.name, asset.parent_asset.name, asset.prim_path, asset.object_type.value)
    if isinstance(asset, RigidObjectSet):
        for m in asset.objects:
            if m.registry_name is None or m.registry_params:
                raise SpecIssue(f"member '{m.name}' must be a registered asset built without parameters "
                                f"(registry_name {short_repr(m.registry_name)}, params "
                                f"{short_repr(m.registry_params)})", where=where,
                                key="members")
        params = {}
        if asset.initial_pose is not None:
            params["initial_pose"] = asset.initial_pose.to_dict()
        if asset.collision_mode is not None:
            params["collision_mode"] = asset.collision_mode.value
        _add_properties(asset, params)
        return ObjectSetNode(asset.name, [m.registry_name for m in asset.objects], asset.random_choice, params)
    if isinstance(asset, Object):
        if asset.registry_name is None:
            raise SpecIssue("was not made from the asset registry, so it cannot be written to a spec; build it with "
                            "build_registered_asset() or register its factory with @register_asset", where=where,
                            key="registry_name")
        return AssetNode(asset.name, asset.registry_name, _add_properties(asset, _asset_params(asset)))
    raise SpecIssue(f"{type(asset).__name__} assets cannot be written to a spec", where=where)


def graph_from_arena_env(env, num_envs: int | None = None, cls: type[SpecGraph] = SpecGraph) -> SpecGraph:
    """The spec (a ``cls``) of a Python ``IsaacLabArenaEnvironment`` whose objects were made from registered
    assets. The first ``Background`` becomes ``background``; other objects, object sets, object references and
    every relation follow. ``num_envs`` defaults to the environment's. ``EnvSpecError`` for anything YAML cannot
    express (an object not made by the registry, set members with parameters, code-bearing placer settings,
    an embodiment or task)."""
    from isaaclab_arena.assets.asset import Background
    from isaaclab_arena.env_spec.env_cfg_override import check_env_cfg_paths

    source = f"<environment '{env.name}'>"
    try:
        robot = _embodiment_node(env.embodiment) if env.embodiment is not None else None
        task = _task_node(env.task) if env.task is not None else None
        names = {a.name for a in env.assets}
        background, nodes = None, []
        for asset in env.assets:
            node = _asset_node(asset, names)
            if background is None and isinstance(asset, Background):
                background = node
            else:
                nodes.append(node)
        scene = env.assets + ([env.embodiment] if env.embodiment is not None else [])
        # markers a task stamped (RequiresReachability on its pick-up object) are written as the task
        relations = [relation_to_node(a.name, r) for a in scene for r in a.get_relations()
                     if getattr(r, "stamped_by", None) is None]
        placer = placer_params_to_dict(env.placer_params)
        overrides = plain(parse_env_cfg_override(dict(env.env_cfg_overrides or {}), None))
        if overrides:
            check_env_cfg_paths(overrides, tuple(names))
    except SpecIssue as issue:
        raise EnvSpecError(issue.message, source=source, where=issue.where, key=issue.key) from None
    return cls(env.name, background, [n for n in nodes if isinstance(n, AssetNode)],
               [n for n in nodes if isinstance(n, ObjectSetNode)], [n for n in nodes if isinstance(n, ObjectReferenceNode)],
               relations, placer, num_envs if num_envs is not None else getattr(env, "num_envs", None), env.env_spacing,
               env.physics, env_cfg_override=overrides, embodiment=robot, task=task,
               recording=plain(copy.deepcopy(getattr(env, "recording", None) or {})))


def _embodiment_node(robot) -> EmbodimentNode:
    """The ``embodiment`` node of a robot made by the embodiment registry, with its current initial pose."""
    where = f"embodiment '{robot.name}'"
    if getattr(robot, "registry_name", None) is None:
        raise SpecIssue("was not made from the embodiment registry, so it cannot be written to a spec; build it with "
                        "make_embodiment()", where=where, key="registry_name")
    from isaaclab_arena.utils.pose import parse_pose

    params = plain(copy.deepcopy(robot.registry_params))
    if robot.initial_pose != parse_pose(params.get("initial_pose"), where):
        if robot.initial_pose is None:
            params.pop("initial_pose", None)
        else:
            params["initial_pose"] = robot.initial_pose.to_dict()
    return EmbodimentNode(robot.name, robot.registry_name, params)


def _task_node(task) -> TaskNode:
    """The ``task`` node of a ``PickAndPlaceTask`` (asset names as ids)."""
    kind = getattr(task, "yaml_kind", None)
    if kind is None:
        raise SpecIssue(f"{type(task).__name__} cannot be written to a spec (no YAML kind)", where="task")
    return TaskNode(kind, task.params(), "atomic", getattr(task, "description", ""))

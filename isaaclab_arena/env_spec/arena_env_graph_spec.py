"""YAML environment specs: a graph whose nodes are assets and whose edges are relations.

``ArenaEnvGraphSpec.from_yaml(path)`` reads and fully validates a spec (every asset is built once and the
placement restrictions are checked), ``to_arena_env()`` builds a fresh ``IsaacLabArenaEnvironment``, and
``to_dict()`` / ``to_yaml(path)`` write it back out. ``spec_from_arena_env(env)`` goes the other way, so a
Python environment made from registered assets can be saved as YAML; either way a spec written back out
loads equal.

Top-level keys (every other key is rejected, naming it):

``env_name``
    Environment name; defaults to the file's stem.
``background``
    ``{id, registry_name, params}``: a registered factory returning a ``Background``.
``objects``
    List of ``{id, registry_name, params}``; the node id is the asset's instance (scene) name.
``object_sets``
    List of ``{id, members: [registry names], random_choice: false, params}``: a ``RigidObjectSet`` whose
    members are built without parameters; ``params`` may hold ``initial_pose`` and ``collision_mode`` of the set.
``object_references``
    List of ``{id, parent_id, prim_path, object_type: rigid|base|articulation, params}``. A ``prim_path``
    that does not start with ``{ENV_REGEX_NS}/`` expands to ``{ENV_REGEX_NS}/<background registry_name>/<prim_path>``.
``relations``
    List of ``{kind, subject, reference?, params?}`` (see ``relation_spec.py``). An ``is_anchor`` subject without
    an ``initial_pose`` gets ``Pose.identity()``.
``placer_params``
    Nested override of ``ObjectPlacerParams`` (see ``placer_params_spec.py``). The older
    ``placement_validators`` block (``enabled_checks``, ``required_checks``, ``debug_visualize``,
    ``debug_visualize_output_path``) is read into the same fields.
``num_envs``, ``env_spacing``, ``default_physics_backend``
    Optional run settings: env count (> 0), spacing between env origins in metres (> 0), and the physics
    preset name the environment prefers (``IsaacLabArenaEnvironment.physics``).
``external_yaml``
    A spec file path (or a list of them), relative to this file's folder, merged in under this file's keys
    (see ``external_yaml.py``: node lists concatenated, other keys taken whole from the including file).
    Indices in error messages (``objects[3]``) count the merged lists; the file and line are the node's own.
``cli_override_specs``
    List of ``{arg, target_node_id}``: runner flag ``--<arg>`` swaps the ``registry_name`` of the background
    or objects node ``target_node_id`` (see ``cli_override_spec.py``, ``cli_overrides()``,
    ``apply_cli_overrides()``).
``env_cfg_override``
    Mapping of dotted Isaac Lab env-cfg attribute paths to values (``sim.dt: 0.005``), stored in
    ``IsaacLabArenaEnvironment.env_cfg_overrides`` and applied by ``ArenaEnvBuilder.compose_manager_cfg()``
    (see ``env_cfg_override.py``).

``embodiment`` and ``task`` are not supported yet and are rejected. Poses are env-local (metres, xyzw
quaternions).

Every error is an ``EnvSpecError`` naming the file, the line, the node (asset id, relation index, kind and
subject) and the key, and saying what is accepted.
"""

from __future__ import annotations

import copy
import math
import os
import re
import tempfile
from dataclasses import dataclass, field
from typing import Any

import yaml

from isaaclab_arena.env_spec.cli_override_spec import CliOverrideNode, line_text, parse_cli_override_specs
from isaaclab_arena.env_spec.env_cfg_override import check_env_cfg_paths, parse_env_cfg_override
from isaaclab_arena.env_spec.external_yaml import merge_external_yaml
from isaaclab_arena.env_spec.placer_params_spec import (
    PLACEMENT_VALIDATOR_KEYS,
    parse_placer_params,
    placer_params_to_dict,
)
from isaaclab_arena.env_spec.relation_spec import (
    RelationNode,
    build_relation,
    parse_relation_entry,
    relation_to_node,
)
from isaaclab_arena.env_spec.spec_issue import EnvSpecError, SpecIssue, issue_error
from isaaclab_arena.env_spec.yaml_lines import (
    find_non_finite,
    line_of,
    load_yaml_with_lines,
    source_of,
    start_line,
    to_plain,
    yaml_error_line,
)

ENV_REGEX_NS = "{ENV_REGEX_NS}"
TOP_LEVEL_KEYS = ("env_name", "background", "objects", "object_sets", "object_references", "relations",
                  "placer_params", "num_envs", "env_spacing", "default_physics_backend", "external_yaml",
                  "cli_override_specs", "env_cfg_override")
NOT_SUPPORTED_YET = ("embodiment", "task")
ASSET_NODE_KEYS = ("id", "registry_name", "params")
OBJECT_SET_KEYS = ("id", "members", "random_choice", "params")
OBJECT_SET_PARAMS = ("initial_pose", "collision_mode")
OBJECT_REFERENCE_KEYS = ("id", "parent_id", "prim_path", "object_type", "params")
OBJECT_TYPES = ("rigid", "base", "articulation")


# -- nodes ---------------------------------------------------------------------------------------------------
@dataclass
class AssetNode:
    """``background`` or ``objects`` entry: the asset ``id`` made by factory ``registry_name`` with ``params``."""

    id: str
    registry_name: str
    params: dict = field(default_factory=dict)
    line: int | None = field(default=None, compare=False, repr=False)
    key_lines: dict = field(default_factory=dict, compare=False, repr=False)
    where: str = field(default="", compare=False, repr=False)

    def to_dict(self) -> dict:
        out = {"id": self.id, "registry_name": self.registry_name}
        if self.params:
            out["params"] = to_plain(self.params)
        return out


@dataclass
class ObjectSetNode:
    """``object_sets`` entry: a ``RigidObjectSet`` ``id`` of registered ``members`` (built without parameters)."""

    id: str
    members: list[str]
    random_choice: bool = False
    params: dict = field(default_factory=dict)
    line: int | None = field(default=None, compare=False, repr=False)
    key_lines: dict = field(default_factory=dict, compare=False, repr=False)
    where: str = field(default="", compare=False, repr=False)

    def to_dict(self) -> dict:
        out = {"id": self.id, "members": list(self.members), "random_choice": self.random_choice}
        if self.params:
            out["params"] = to_plain(self.params)
        return out


@dataclass
class ObjectReferenceNode:
    """``object_references`` entry: prim ``prim_path`` (expanded) inside asset ``parent_id``'s USD."""

    id: str
    parent_id: str
    prim_path: str
    object_type: str = "rigid"
    params: dict = field(default_factory=dict)
    line: int | None = field(default=None, compare=False, repr=False)
    key_lines: dict = field(default_factory=dict, compare=False, repr=False)
    where: str = field(default="", compare=False, repr=False)

    def to_dict(self) -> dict:
        out = {"id": self.id, "parent_id": self.parent_id, "prim_path": self.prim_path, "object_type": self.object_type}
        if self.params:
            out["params"] = to_plain(self.params)
        return out


# -- parsing helpers -----------------------------------------------------------------------------------------
def _mapping(raw: Any, where: str, accepted: tuple[str, ...], line: int | None) -> None:
    if not isinstance(raw, dict):
        raise SpecIssue(f"must be a mapping with keys {', '.join(accepted)}, got {raw!r}", where=where, line=line)
    for key in raw:
        if key not in accepted:
            hint = " (YAML reads unquoted on/off/yes/no as booleans; quote it)" if isinstance(key, bool) else ""
            raise SpecIssue(f"unknown key {key!r}{hint}; accepted keys: {', '.join(accepted)}", where=where,
                            key=str(key), line=line_of(raw, key) or line)


def _asset_id(raw: dict, where: str, line: int | None) -> str:
    value = raw.get("id")
    if not isinstance(value, str) or not value or not value.replace("_", "a").isalnum():
        raise SpecIssue(f"'id' must be an identifier (letters, digits, _), got {value!r}", where=where, key="id",
                        line=line_of(raw, "id") if "id" in raw else line)
    return value


def _string(raw: dict, key: str, where: str, line: int | None, what: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value:
        raise SpecIssue(f"'{key}' must be {what}, got {value!r}", where=where, key=key,
                        line=line_of(raw, key) if key in raw else line)
    return value


def _params(raw: dict, where: str, line: int | None) -> dict:
    value = raw.get("params")
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SpecIssue(f"'params' must be a mapping of parameter names to values, got {value!r}", where=where,
                        key="params", line=line_of(raw, "params") or line)
    for key in value:
        if not isinstance(key, str):
            raise SpecIssue(f"parameter name {key!r} is not a string (quote it)", where=where, key="params",
                            line=line_of(value, key) or line)
    return value


def _param_lines(raw: dict) -> dict:
    params = raw.get("params")
    lines = {k: line_of(raw, k) for k in raw}
    if isinstance(params, dict):
        lines.update({f"params.{k}": line_of(params, k) for k in params})
    return lines


def _list(doc: dict, key: str) -> list:
    value = doc.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise SpecIssue(f"'{key}' must be a list, got {value!r}", where=key, line=line_of(doc, key))
    return value


def _parse_asset_node(raw: Any, where: str, line: int | None) -> AssetNode:
    _mapping(raw, where, ASSET_NODE_KEYS, line)
    line = start_line(raw) or line
    node_id = _asset_id(raw, where, line)
    where = f"{where} (id '{node_id}')"
    registry_name = _string(raw, "registry_name", where, line, "the name of a registered asset")
    where = f"{where[:-1]}, registry_name '{registry_name}')"
    return AssetNode(node_id, registry_name, _params(raw, where, line), line, _param_lines(raw), where)


def _parse_object_set(raw: Any, where: str, line: int | None) -> ObjectSetNode:
    _mapping(raw, where, OBJECT_SET_KEYS, line)
    line = start_line(raw) or line
    node_id = _asset_id(raw, where, line)
    where = f"{where} (id '{node_id}')"
    members = raw.get("members")
    mline = line_of(raw, "members") or line
    if not isinstance(members, list) or not members:
        raise SpecIssue(f"'members' must be a non-empty list of registered asset names, got {members!r}", where=where,
                        key="members", line=mline)
    for i, member in enumerate(members):
        if not isinstance(member, str) or not member:
            raise SpecIssue(f"members[{i}] must be a registered asset name, got {member!r}", where=where,
                            key=f"members[{i}]", line=line_of(members, i) or mline)
        if member in members[:i]:
            raise SpecIssue(f"members[{i}] '{member}' is listed twice; list each member once", where=where,
                            key=f"members[{i}]", line=line_of(members, i) or mline)
    random_choice = raw.get("random_choice", False)
    if not isinstance(random_choice, bool):
        raise SpecIssue(f"'random_choice' must be true or false, got {random_choice!r}", where=where,
                        key="random_choice", line=line_of(raw, "random_choice"))
    params = _params(raw, where, line)
    for key in params:
        if key not in OBJECT_SET_PARAMS:
            raise SpecIssue(f"unknown parameter '{key}' of an object set; accepted parameters: "
                            f"{', '.join(OBJECT_SET_PARAMS)} (members are built without parameters)", where=where,
                            key=f"params.{key}", line=line_of(raw["params"], key) or line)
    lines = _param_lines(raw)
    lines.update({f"members[{i}]": line_of(members, i) for i in range(len(members))})
    return ObjectSetNode(node_id, list(members), random_choice, params, line, lines, where)


def _parse_object_reference(raw: Any, where: str, line: int | None, background: AssetNode | None) -> ObjectReferenceNode:
    _mapping(raw, where, OBJECT_REFERENCE_KEYS, line)
    line = start_line(raw) or line
    node_id = _asset_id(raw, where, line)
    where = f"{where} (id '{node_id}')"
    parent_id = _string(raw, "parent_id", where, line, "the id of the asset whose USD holds the prim")
    prim_path = _string(raw, "prim_path", where, line, "a prim path")
    if not prim_path.startswith(ENV_REGEX_NS + "/"):
        if background is None:
            raise SpecIssue(f"relative prim_path '{prim_path}' expands to {ENV_REGEX_NS}/<background registry_name>/..., "
                            f"but the spec has no background; write the full path '{ENV_REGEX_NS}/<parent>/...'",
                            where=where, key="prim_path", line=line_of(raw, "prim_path"))
        prim_path = f"{ENV_REGEX_NS}/{background.registry_name}/{prim_path.lstrip('/')}"
    object_type = raw.get("object_type", "rigid")
    if not isinstance(object_type, str) or object_type.lower() not in OBJECT_TYPES:
        raise SpecIssue(f"'object_type' {object_type!r} is not accepted; use one of {', '.join(OBJECT_TYPES)}",
                        where=where, key="object_type", line=line_of(raw, "object_type"))
    params = _params(raw, where, line)
    for key in params:
        pline = line_of(raw["params"], key) or line
        if key == "openable_joint_name":
            raise SpecIssue("'openable_joint_name' (OpenableObjectReference) is not supported yet", where=where,
                            key=f"params.{key}", line=pline)
        raise SpecIssue(f"unknown parameter '{key}' of an object reference; it accepts none", where=where,
                        key=f"params.{key}", line=pline)
    return ObjectReferenceNode(node_id, parent_id, prim_path, object_type.lower(), dict(params), line,
                               _param_lines(raw), where)


def _describe_path(doc: dict, path: str) -> str:
    """A node description for a key path such as ``relations[2].params.x``."""
    m = re.match(r"(\w+)\[(\d+)\]", path)
    if m is None:
        section = path.split(".")[0]
        node = doc.get(section)
        if section == "background" and isinstance(node, dict) and isinstance(node.get("id"), str):
            return f"background (id '{node['id']}')"
        return section
    section, index = m.group(1), int(m.group(2))
    items = doc.get(section)
    entry = items[index] if isinstance(items, list) and index < len(items) else None
    if not isinstance(entry, dict):
        return f"{section}[{index}]"
    if section == "relations":
        parts = [f"{k} '{entry[k]}'" for k in ("kind", "subject", "reference") if isinstance(entry.get(k), str)]
        return f"relations[{index}] ({', '.join(parts)})" if parts else f"relations[{index}]"
    return f"{section}[{index}] (id '{entry['id']}')" if isinstance(entry.get("id"), str) else f"{section}[{index}]"


def _mentioned(message: str, names) -> str | None:
    """The parameter an error message is about: a quoted name first, then a bare one (lists of accepted names
    at the end of the message do not count)."""
    message = message.split("; accepted")[0]
    for name in names:
        if f"'{name}'" in message:
            return name
    for name in sorted(names, key=len, reverse=True):
        if re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", message):
            return name
    return None


# -- the spec ------------------------------------------------------------------------------------------------
@dataclass
class ArenaEnvGraphSpec:
    """A parsed environment spec (see the module docstring for the format)."""

    env_name: str
    background: AssetNode | None = None
    objects: list[AssetNode] = field(default_factory=list)
    object_sets: list[ObjectSetNode] = field(default_factory=list)
    object_references: list[ObjectReferenceNode] = field(default_factory=list)
    relations: list[RelationNode] = field(default_factory=list)
    placer_params: dict = field(default_factory=dict)
    num_envs: int | None = None
    env_spacing: float | None = None
    default_physics_backend: str | None = None
    source: str = field(default="<dict>", compare=False, repr=False)
    placer_params_line: int | None = field(default=None, compare=False, repr=False)
    #: Absolute paths of the files this spec lists in ``external_yaml`` (their content is merged in above).
    external_yaml: list[str] = field(default_factory=list)
    cli_override_specs: list[CliOverrideNode] = field(default_factory=list)
    #: Dotted env-cfg attribute path -> value (``sim.dt: 0.005``), applied by ``ArenaEnvBuilder``.
    env_cfg_override: dict = field(default_factory=dict)
    #: Source names of every file merged in through ``external_yaml`` (nested too).
    included_sources: set = field(default_factory=set, compare=False, repr=False)
    #: ``to_dict()`` values of what came from included files at load time (top-level keys, list entries).
    included_snapshot: dict = field(default_factory=dict, compare=False, repr=False)

    # -- loading -------------------------------------------------------------------------------------------
    @classmethod
    def from_yaml(cls, path: str | os.PathLike) -> "ArenaEnvGraphSpec":
        """Reads and validates the spec file ``path`` (relative paths are taken from the working directory)."""
        source = os.fspath(path)
        if not os.path.exists(source):
            raise EnvSpecError(f"spec file does not exist (relative paths are taken from the working directory "
                               f"{os.getcwd()})", source=source)
        if not os.path.isfile(source):
            raise EnvSpecError("spec path is not a file; give the path of a .yaml spec", source=source)
        try:
            with open(source, encoding="utf-8") as f:
                text = f.read()
        except UnicodeDecodeError as err:
            raise EnvSpecError(f"is not YAML: the file is not UTF-8 text ({err.reason})", source=source) from None
        try:
            data = load_yaml_with_lines(text, source)
        except yaml.YAMLError as err:
            problem = getattr(err, "problem", None) or str(err)
            context = getattr(err, "context", None)
            detail = f"is not valid YAML: {problem}" + (f" ({context})" if context else "")
            raise EnvSpecError(detail, source=source, line=yaml_error_line(err)) from None
        if data is None:
            raise EnvSpecError("the spec file is empty; a spec is a YAML mapping with env_name, objects, relations, ...",
                               source=source)
        return cls.from_dict(data, source=source)

    @classmethod
    def from_dict(cls, data: Any, source: str = "<dict>") -> "ArenaEnvGraphSpec":
        """Validates ``data`` (a spec mapping) and returns the spec. Builds the assets once to check them."""
        try:
            spec = cls._parse(data, source)
        except SpecIssue as issue:
            raise cls._error(issue, source) from None
        spec._build()  # every asset, reference and relation is made once, and the restrictions are checked
        return spec

    @staticmethod
    def _error(issue: SpecIssue, source: str) -> EnvSpecError:
        return issue_error(issue, source)

    @classmethod
    def _parse(cls, data: Any, source: str) -> "ArenaEnvGraphSpec":
        data, includes = merge_external_yaml(data, source)
        spec = cls._parse_merged(data, source)
        spec.external_yaml = list(includes.paths)
        spec.included_sources = set(includes.sources)
        spec.included_snapshot = spec._snapshot_included(data)
        return spec

    @classmethod
    def _parse_merged(cls, data: Any, source: str) -> "ArenaEnvGraphSpec":
        if not isinstance(data, dict):
            raise SpecIssue(f"is not a spec: the top level must be a mapping with keys {', '.join(TOP_LEVEL_KEYS)}, "
                            f"got {type(data).__name__}", line=start_line(data))
        for key in data:
            line = line_of(data, key)
            if key in NOT_SUPPORTED_YET:
                raise SpecIssue(f"top-level key '{key}' is not supported yet (a later version adds it); remove it",
                                key=str(key), line=line)
            if key not in TOP_LEVEL_KEYS and key != "placement_validators":
                raise SpecIssue(f"unknown top-level key {key!r}; accepted keys: {', '.join(TOP_LEVEL_KEYS)}",
                                key=str(key), line=line)
        bad = find_non_finite(data)
        if bad is not None:
            path, value, line = bad
            raise SpecIssue(f"{value!r} is not a finite number; NaN and infinite values are not accepted",
                            where=_describe_path(data, path), key=path, line=line)

        env_name = data.get("env_name")
        if env_name is None and source != "<dict>":
            env_name = os.path.splitext(os.path.basename(source))[0]
        if not isinstance(env_name, str) or not env_name:
            raise SpecIssue(f"'env_name' must be a non-empty string, got {env_name!r}", key="env_name",
                            line=line_of(data, "env_name"))

        background = None
        if data.get("background") is not None:
            background = _parse_asset_node(data["background"], "background", line_of(data, "background"))
        objects = [_parse_asset_node(raw, f"objects[{i}]", line_of(data["objects"], i))
                   for i, raw in enumerate(_list(data, "objects"))]
        sets = [_parse_object_set(raw, f"object_sets[{i}]", line_of(data["object_sets"], i))
                for i, raw in enumerate(_list(data, "object_sets"))]
        refs = [_parse_object_reference(raw, f"object_references[{i}]", line_of(data["object_references"], i), background)
                for i, raw in enumerate(_list(data, "object_references"))]

        seen: dict[str, Any] = {}
        for node in ([background] if background else []) + objects + sets + refs:
            if node.id in seen:
                first = seen[node.id]
                at = f" ({line_text(first.line, node.line)})" if first.line else ""
                raise SpecIssue(f"duplicate asset id '{node.id}': already defined by {first.where.split(' (')[0]}{at}; "
                                "every asset needs a unique id", where=node.where, key="id", line=node.line)
            seen[node.id] = node

        relations = [parse_relation_entry(raw, i, line_of(data["relations"], i))
                     for i, raw in enumerate(_list(data, "relations"))]

        placer = data.get("placer_params")
        pline = line_of(data, "placer_params")
        if placer is not None and not isinstance(placer, dict):
            raise SpecIssue(f"'placer_params' must be a mapping of ObjectPlacerParams fields, got {placer!r}",
                            where="placer_params", line=pline)
        placer = copy.deepcopy(placer) if placer else {}
        validators = data.get("placement_validators")
        if validators is not None:
            vline = line_of(data, "placement_validators")
            if not isinstance(validators, dict):
                raise SpecIssue(f"'placement_validators' must be a mapping, got {validators!r}",
                                where="placement_validators", line=vline)
            for key, value in validators.items():
                kline = line_of(validators, key) or vline
                if key not in PLACEMENT_VALIDATOR_KEYS:
                    raise SpecIssue(f"unknown key '{key}'; accepted: {', '.join(PLACEMENT_VALIDATOR_KEYS)} (other placer "
                                    "settings go in placer_params)", where="placement_validators", key=str(key), line=kline)
                if key in placer:
                    raise SpecIssue(f"'{key}' is set in both placement_validators and placer_params; keep one",
                                    where="placement_validators", key=str(key), line=kline)
                placer[key] = value
            pline = pline or vline
        parse_placer_params(placer, pline)  # checks names and types now

        num_envs = data.get("num_envs")
        if num_envs is not None and (isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs <= 0):
            raise SpecIssue(f"'num_envs' must be a positive integer, got {num_envs!r}", key="num_envs",
                            line=line_of(data, "num_envs"))
        spacing = data.get("env_spacing")
        if spacing is not None:
            if isinstance(spacing, bool) or not isinstance(spacing, (int, float)) or not math.isfinite(spacing) \
                    or spacing <= 0:
                raise SpecIssue(f"'env_spacing' must be a number of metres > 0, got {spacing!r}", key="env_spacing",
                                line=line_of(data, "env_spacing"))
            spacing = float(spacing)
        physics = data.get("default_physics_backend")
        if physics is not None and (not isinstance(physics, str) or not physics):
            raise SpecIssue(f"'default_physics_backend' must be a physics preset name (e.g. ovphysx, newton_mjwarp), "
                            f"got {physics!r}", key="default_physics_backend", line=line_of(data, "default_physics_backend"))
        targets = {n.id: n for n in ([background] if background else []) + objects}
        overrides = parse_cli_override_specs(_list(data, "cli_override_specs"), targets,
                                             line_of(data, "cli_override_specs"))
        cfg_override, cline = {}, line_of(data, "env_cfg_override")
        if data.get("env_cfg_override") is not None:
            cfg_override = parse_env_cfg_override(data["env_cfg_override"], cline)
            check_env_cfg_paths(cfg_override, tuple(seen), data["env_cfg_override"])
        return cls(env_name, background, objects, sets, refs, relations, placer, num_envs, spacing, physics, source,
                   pline, cli_override_specs=overrides, env_cfg_override=cfg_override)

    # -- building ------------------------------------------------------------------------------------------
    def to_arena_env(self):
        """A fresh ``IsaacLabArenaEnvironment`` with every asset and relation of the spec."""
        return self._build()

    def _build(self):
        from isaaclab_arena.environments.isaaclab_arena_environment import IsaacLabArenaEnvironment
        from isaaclab_arena.relations.placement_restrictions import PlacementConfigError, check_placement_restrictions

        try:
            assets, built_relations = self._build_assets()
            placer = parse_placer_params(self.placer_params, self.placer_params_line)
        except SpecIssue as issue:
            raise self._error(issue, self.source) from None
        env = IsaacLabArenaEnvironment(self.env_name, list(assets.values()), placer_params=placer,
                                       env_spacing=self.env_spacing, physics=self.default_physics_backend,
                                       env_cfg_overrides=copy.deepcopy(self.env_cfg_override))
        try:
            check_placement_restrictions(env.assets, random_yaw_init=placer.random_yaw_init)
        except PlacementConfigError as err:
            raise self._restriction_error(str(err), built_relations) from None
        return env

    def _nodes(self) -> list:
        return ([self.background] if self.background else []) + self.objects + self.object_sets + self.object_references

    def _restriction_error(self, message: str, built_relations: list) -> EnvSpecError:
        m = re.search(r"asset '([^']+)'", message)
        name = m.group(1) if m else None
        line, where = None, None
        for index, node, relation in built_relations:
            if node.subject == name and f"relation {relation.describe()}" in message:
                line, where = node.line, node.describe(index)
                break
        if line is None:
            for node in self._nodes():
                if node.id == name:
                    line, where = node.line, node.where
                    break
        return EnvSpecError(message, source=source_of(line) or self.source, line=line, where=where)

    def _build_asset(self, node: AssetNode):
        from isaaclab_arena.adapters.asset_registry import UnknownAssetError, build_registered_asset

        try:
            return build_registered_asset(node.registry_name, node.id, node.params)
        except UnknownAssetError as err:
            raise SpecIssue(str(err), where=node.where, key="registry_name",
                            line=node.key_lines.get("registry_name") or node.line) from None
        except (ValueError, TypeError) as err:
            name = _mentioned(str(err).split("):", 1)[-1], node.params)
            raise SpecIssue(str(err), where=node.where, key=f"params.{name}" if name else "params",
                            line=node.key_lines.get(f"params.{name}") or node.key_lines.get("params") or node.line) from None

    def _build_assets(self):
        from isaaclab_arena.assets.asset import Background, Object
        from isaaclab_arena.assets.object_reference import ObjectReference
        from isaaclab_arena.assets.object_set import RigidObjectSet
        from isaaclab_arena.assets.collision_mode import parse_collision_mode
        from isaaclab_arena.adapters.asset_registry import UnknownAssetError, build_registered_asset
        from isaaclab_arena.utils.pose import Pose, parse_pose

        assets: dict[str, Any] = {}
        if self.background is not None:
            bg = self._build_asset(self.background)
            if not isinstance(bg, Background):
                raise SpecIssue(f"registry entry '{self.background.registry_name}' makes a {type(bg).__name__}, not a "
                                "Background; put it under objects, or use a background entry (e.g. static_box)",
                                where=self.background.where, key="registry_name", line=self.background.line)
            assets[bg.name] = bg
        for node in self.objects:
            assets[node.id] = self._build_asset(node)
        for node in self.object_sets:
            members = []
            for i, member in enumerate(node.members):
                try:
                    members.append(build_registered_asset(member, f"{node.id}_{member}", {}))
                except (UnknownAssetError, ValueError, TypeError) as err:
                    raise SpecIssue(str(err), where=node.where, key=f"members[{i}]",
                                    line=node.key_lines.get(f"members[{i}]") or node.line) from None
            try:
                obj_set = RigidObjectSet(node.id, members, random_choice=node.random_choice)
                where = f"asset '{node.id}'"
                pose = parse_pose(node.params.get("initial_pose"), where)
                if pose is not None:
                    obj_set.set_initial_pose(pose)
                obj_set.collision_mode = parse_collision_mode(node.params.get("collision_mode"), where)
            except (ValueError, TypeError) as err:
                name = _mentioned(str(err), node.params)
                raise SpecIssue(str(err), where=node.where, key=f"params.{name}" if name else "members",
                                line=node.key_lines.get(f"params.{name}") or node.line) from None
            assets[node.id] = obj_set
        for node in self.object_references:
            parent = assets.get(node.parent_id)
            if not isinstance(parent, Object):  # object sets and references have no USD of their own
                usable = sorted(n for n, a in assets.items() if isinstance(a, Object))
                what = "unknown parent_id" if parent is None else "parent_id names an asset without its own USD"
                raise SpecIssue(f"{what} '{node.parent_id}'; it must be the background or an object spawned from a USD "
                                f"file: {', '.join(usable) or 'none defined'}", where=node.where, key="parent_id",
                                line=node.key_lines.get("parent_id") or node.line)
            try:
                ref = ObjectReference(node.id, node.prim_path, parent, node.object_type)
                ref.get_bounding_box()  # reads the prim from the parent's USD now, so a bad path fails at load
            except (ValueError, TypeError, KeyError) as err:
                raise SpecIssue(str(err.args[0] if err.args else err), where=node.where, key="prim_path",
                                line=node.key_lines.get("prim_path") or node.line) from None
            assets[node.id] = ref

        built_relations = []
        for index, node in enumerate(self.relations):
            subject, relation = build_relation(node, index, assets)
            built_relations.append((index, node, relation))
        for asset in assets.values():
            if asset.is_anchor and asset.initial_pose is None and not isinstance(asset, ObjectReference):
                asset.set_initial_pose(Pose.identity())  # YAML: an anchor without a pose sits at the env origin
        return assets, built_relations

    # -- command-line overrides ----------------------------------------------------------------------------
    def asset_node(self, node_id: str) -> AssetNode:
        """The background or ``objects`` node ``node_id`` (the nodes that have a ``registry_name``)."""
        for node in ([self.background] if self.background else []) + self.objects:
            if node.id == node_id:
                return node
        raise KeyError(f"spec '{self.env_name}' has no background or objects node '{node_id}'")

    def cli_overrides(self) -> list[CliOverrideNode]:
        """The declared ``cli_override_specs`` (flag ``--<arg>`` -> node ``target_node_id``)."""
        return list(self.cli_override_specs)

    def apply_cli_overrides(self, values: dict[str, str | None]) -> "ArenaEnvGraphSpec":
        """Swaps ``registry_name`` of each override's target node: ``values`` maps a declared ``arg`` to a
        registry name (None: flag not given). Validates by building the spec once; on any error the spec is
        left unchanged and ``EnvSpecError`` names the flag, the node and the accepted names. Returns ``self``.
        """
        from isaaclab_arena.adapters.asset_registry import UnknownAssetError, get_registered_asset, list_registered_assets

        declared = {n.arg: n for n in self.cli_override_specs}
        changes = []
        for arg, name in values.items():
            if arg not in declared:
                raise EnvSpecError(f"no cli override '{arg}' is declared; declared args: "
                                   f"{', '.join(declared) or 'none'} (cli_override_specs)", source=self.source,
                                   key="cli_override_specs")
            if name is None:
                continue
            spec_entry = declared[arg]
            node = self.asset_node(spec_entry.target_node_id)
            src = source_of(spec_entry.line) or self.source
            try:
                if not isinstance(name, str):
                    raise UnknownAssetError(f"registry names are strings, got {name!r}")
                get_registered_asset(name)
            except UnknownAssetError:
                raise EnvSpecError(f"{spec_entry.flag} {name!r}: unknown registry name for node '{node.id}' "
                                   f"({node.where}); accepted names: {', '.join(list_registered_assets())}",
                                   source=src, line=spec_entry.line, where=spec_entry.where, key="arg") from None
            changes.append((spec_entry, node, name))
        saved = [(node, node.registry_name, node.where) for _, node, _ in changes]
        for _, node, name in changes:
            node.registry_name = name
            node.where = f"{node.where.split(' (')[0]} (id '{node.id}', registry_name '{name}')"
        try:
            self._build()
        except EnvSpecError as err:
            for node, registry_name, where in saved:
                node.registry_name, node.where = registry_name, where
            flags = ", ".join(f"{e.flag} {name!r} (node '{n.id}')" for e, n, name in changes)
            raise EnvSpecError(f"with {flags}: {err.detail}", source=err.source, line=err.line, where=err.where,
                               key=err.key) from None
        return self

    # -- writing -------------------------------------------------------------------------------------------
    def _sections(self) -> dict[str, list]:
        return {"objects": self.objects, "object_sets": self.object_sets,
                "object_references": self.object_references, "relations": self.relations,
                "cli_override_specs": self.cli_override_specs}

    def _included(self, line) -> bool:
        return source_of(line) is not None and source_of(line) in self.included_sources

    def _flat_dict(self) -> dict:
        out: dict[str, Any] = {"env_name": self.env_name}
        if self.num_envs is not None:
            out["num_envs"] = self.num_envs
        if self.env_spacing is not None:
            out["env_spacing"] = self.env_spacing
        if self.default_physics_backend is not None:
            out["default_physics_backend"] = self.default_physics_backend
        if self.background is not None:
            out["background"] = self.background.to_dict()
        for key, nodes in self._sections().items():
            if nodes:
                out[key] = [n.to_dict() for n in nodes]
        if self.placer_params:
            out["placer_params"] = to_plain(self.placer_params)
        if self.env_cfg_override:
            out["env_cfg_override"] = to_plain(self.env_cfg_override)
        return out

    def _snapshot_included(self, data: dict) -> dict:
        """What came from included files, as written by ``to_dict`` (to tell it apart from this file's own)."""
        if not self.included_sources:
            return {}
        flat = self._flat_dict()
        snap: dict[Any, Any] = {}
        sections = self._sections()
        for key, value in flat.items():
            if key in sections:
                for node, item in zip(sections[key], value):
                    if self._included(node.line):
                        snap[(key, source_of(node.line), int(node.line))] = item
            elif self._included(line_of(data, key)):
                snap[key] = value
        return snap

    def to_dict(self, flatten: bool = False) -> dict:
        """The spec as plain YAML data (only non-empty sections; relation params that differ from defaults).

        A spec that merged ``external_yaml`` files is written as this file's own keys plus ``external_yaml``
        (absolute paths; ``to_yaml`` writes them relative to the written file); ``flatten=True`` writes one
        self-contained spec instead. An included entry changed after loading cannot be written as an include
        (the included file still holds the old one): that raises ``EnvSpecError``; use ``flatten=True``.
        """
        flat = self._flat_dict()
        if flatten or not self.external_yaml:
            return flat
        snap, sections = self.included_snapshot, self._sections()
        out: dict[str, Any] = {}
        if "env_name" in flat and snap.get("env_name") != flat["env_name"]:
            out["env_name"] = flat["env_name"]
        out["external_yaml"] = list(self.external_yaml)
        for key in snap:
            if isinstance(key, str) and key not in flat:
                raise EnvSpecError(f"'{key}' came from an included file and was cleared after loading; write the "
                                   "spec with to_dict(flatten=True) / to_yaml(path, flatten=True)", source=self.source,
                                   key=key)
        for key, value in flat.items():
            if key == "env_name":
                continue
            if key in sections:
                own = []
                for node, item in zip(sections[key], value):
                    tag = (key, source_of(node.line), int(node.line)) if self._included(node.line) else None
                    if tag is None or tag not in snap:
                        own.append(item)
                    elif snap[tag] != item:
                        raise EnvSpecError(f"{key} entry {item} came from included file {source_of(node.line)} and "
                                           "was changed after loading; write the spec with to_dict(flatten=True) / "
                                           "to_yaml(path, flatten=True)", source=source_of(node.line),
                                           line=node.line, key=key)
                if own:
                    out[key] = own
            elif key not in snap or snap[key] != value:
                out[key] = value
        return out

    def to_yaml(self, path: str | os.PathLike, flatten: bool = False) -> str:
        """Writes the spec to ``path`` atomically (a temporary file in the same folder, then ``os.replace``);
        ``external_yaml`` paths are written relative to ``path``'s folder (see ``to_dict``)."""
        path = os.fspath(path)
        folder = os.path.dirname(os.path.abspath(path))
        data = self.to_dict(flatten=flatten)
        if "external_yaml" in data:
            refs = [os.path.relpath(p, folder) for p in data["external_yaml"]]
            data["external_yaml"] = refs[0] if len(refs) == 1 else refs
        text = yaml.safe_dump(data, sort_keys=False, default_flow_style=None, allow_unicode=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return path

    @classmethod
    def from_arena_env(cls, env, num_envs: int | None = None) -> "ArenaEnvGraphSpec":
        return spec_from_arena_env(env, num_envs=num_envs)


def _asset_params(asset) -> dict:
    """The registry params that rebuild ``asset``, with its current initial pose and collision mode."""
    from isaaclab_arena.assets.asset import Background
    from isaaclab_arena.assets.collision_mode import parse_collision_mode
    from isaaclab_arena.utils.plain_data import plain
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


def spec_from_arena_env(env, num_envs: int | None = None) -> ArenaEnvGraphSpec:
    """The spec of a Python ``IsaacLabArenaEnvironment`` whose objects were made from registered assets.

    The first ``Background`` becomes ``background``; other objects, object sets, object references and every
    relation follow. Raises ``EnvSpecError`` for anything YAML cannot express (an object not made by the
    registry, set members with parameters, code-bearing placer settings, an embodiment or task).
    """
    from isaaclab_arena.assets.asset import Background, Object
    from isaaclab_arena.assets.object_reference import ObjectReference
    from isaaclab_arena.assets.object_set import RigidObjectSet

    source = f"<environment '{env.name}'>"

    def fail(detail: str, where: str | None = None, key: str | None = None) -> EnvSpecError:
        return EnvSpecError(detail, source=source, where=where, key=key)

    if env.embodiment is not None or env.task is not None:
        raise fail("environments with an embodiment or a task cannot be written to a spec yet")
    names = {a.name for a in env.assets}
    background, objects, sets, refs, relations = None, [], [], [], []
    for asset in env.assets:
        where = f"asset '{asset.name}'"
        if isinstance(asset, ObjectReference):
            if asset.parent_asset.name not in names:
                raise fail(f"parent '{asset.parent_asset.name}' is not an asset of the environment", where, "parent_id")
            refs.append(ObjectReferenceNode(asset.name, asset.parent_asset.name, asset.prim_path,
                                            asset.object_type.value))
        elif isinstance(asset, RigidObjectSet):
            members = []
            for m in asset.objects:
                if m.registry_name is None or m.registry_params:
                    raise fail(f"member '{m.name}' must be a registered asset built without parameters "
                               f"(registry_name {m.registry_name!r}, params {m.registry_params!r})", where, "members")
                members.append(m.registry_name)
            params = {}
            if asset.initial_pose is not None:
                params["initial_pose"] = asset.initial_pose.to_dict()
            if asset.collision_mode is not None:
                params["collision_mode"] = asset.collision_mode.value
            sets.append(ObjectSetNode(asset.name, members, asset.random_choice, params))
        elif isinstance(asset, Object):
            if asset.registry_name is None:
                raise fail("was not made from the asset registry, so it cannot be written to a spec; build it with "
                           "build_registered_asset() or register its factory with @register_asset", where, "registry_name")
            node = AssetNode(asset.name, asset.registry_name, _asset_params(asset))
            if background is None and isinstance(asset, Background):
                background = node
            else:
                objects.append(node)
        else:
            raise fail(f"{type(asset).__name__} assets cannot be written to a spec", where)
    for asset in env.assets:
        for relation in asset.get_relations():
            try:
                relations.append(relation_to_node(asset.name, relation))
            except SpecIssue as issue:
                raise fail(issue.message, issue.where, issue.key) from None
    try:
        placer = placer_params_to_dict(env.placer_params)
        overrides = to_plain(parse_env_cfg_override(dict(env.env_cfg_overrides or {}), None))
        if overrides:
            check_env_cfg_paths(overrides, tuple(names))
    except SpecIssue as issue:
        raise fail(issue.message, issue.where, issue.key) from None
    return ArenaEnvGraphSpec(env.name, background, objects, sets, refs, relations, placer, num_envs,
                             env.env_spacing, env.physics, env_cfg_override=overrides)

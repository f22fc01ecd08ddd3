"""Parsing the asset sections of a spec (``background``, ``objects``, ``object_sets``, ``object_references``)
into nodes. Shapes, names and types are checked here; registry names, parameter values and prims are
checked when the assets are built (``build.py``). Every ``SpecIssue`` carries the line the YAML parser
recorded for the offending node or key.
"""

from __future__ import annotations

from typing import Any

from isaaclab_arena.env_spec.nodes import AssetNode, ObjectReferenceNode, ObjectSetNode
from isaaclab_arena.env_spec.spec_issue import SpecIssue
from isaaclab_arena.env_spec.yaml_lines import line_of, start_line
from isaaclab_arena.utils.checks import asset_id_problem, short_repr

ENV_REGEX_NS = "{ENV_REGEX_NS}"
ASSET_NODE_KEYS = ("id", "registry_name", "params")
OBJECT_SET_KEYS = ("id", "members", "random_choice", "params")
OBJECT_SET_PARAMS = ("initial_pose", "collision_mode", "physical_properties")
OBJECT_REFERENCE_KEYS = ("id", "parent_id", "prim_path", "object_type", "params")
OBJECT_TYPES = ("rigid", "base", "articulation")


def check_mapping(raw: Any, where: str, accepted: tuple[str, ...], line: int | None) -> None:
    """``raw`` is a mapping whose keys are all in ``accepted``."""
    if not isinstance(raw, dict):
        raise SpecIssue(f"must be a mapping with keys {', '.join(accepted)}, got "
                        f"{short_repr(raw)}", where=where, line=line)
    for key in raw:
        if key not in accepted:
            hint = " (YAML reads unquoted on/off/yes/no as booleans; quote it)" if isinstance(key, bool) else ""
            raise SpecIssue(f"unknown key {short_repr(key)}{hint}; accepted keys: {', '.join(accepted)}", where=where,
                            key=str(key), line=line_of(raw, key) or line)


def node_list(doc: dict, key: str) -> list:
    """The list under top-level ``key`` (empty when absent or null)."""
    value = doc.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise SpecIssue(f"'{key}' must be a list, got {short_repr(value)}", where=key, line=line_of(doc, key))
    return value


def key_lines_of(raw: dict) -> dict:
    """Lines of the entry's keys, and of its parameters as ``params.<name>``."""
    lines = {str(k): line_of(raw, k) for k in raw}
    params = raw.get("params")
    if isinstance(params, dict):
        lines.update({f"params.{k}": line_of(params, k) for k in params})
    return lines


def _asset_id(raw: dict, where: str, line: int | None) -> str:
    value = raw.get("id")
    problem = asset_id_problem(value)
    if problem is not None:
        raise SpecIssue(f"'id' {problem}", where=where, key="id", line=line_of(raw, "id") if "id" in raw else line)
    return value


def _string(raw: dict, key: str, where: str, line: int | None, what: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value:
        raise SpecIssue(f"'{key}' must be {what}, got {short_repr(value)}", where=where, key=key,
                        line=line_of(raw, key) if key in raw else line)
    return value


def _params(raw: dict, where: str, line: int | None) -> dict:
    value = raw.get("params")
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SpecIssue(f"'params' must be a mapping of parameter names to values, got "
                        f"{short_repr(value)}", where=where,
                        key="params", line=line_of(raw, "params") or line)
    for key in value:
        if not isinstance(key, str):
            raise SpecIssue(f"parameter name {short_repr(key)} is not a string (quote it)", where=where, key="params",
                            line=line_of(value, key) or line)
    return value


def parse_asset_node(raw: Any, label: str, line: int | None) -> AssetNode:
    """A ``background`` or ``objects`` entry ``{id, registry_name, params}``."""
    check_mapping(raw, label, ASSET_NODE_KEYS, line)
    line = start_line(raw) or line
    node_id = _asset_id(raw, label, line)
    where = f"{label} (id '{node_id}')"
    registry_name = _string(raw, "registry_name", where, line, "the name of a registered asset")
    where = f"{label} (id '{node_id}', registry_name '{registry_name}')"
    return AssetNode(node_id, registry_name, _params(raw, where, line), line=line, key_lines=key_lines_of(raw),
                     label=label)


def parse_object_set(raw: Any, label: str, line: int | None) -> ObjectSetNode:
    """An ``object_sets`` entry ``{id, members, random_choice, params}``."""
    check_mapping(raw, label, OBJECT_SET_KEYS, line)
    line = start_line(raw) or line
    where = f"{label} (id '{_asset_id(raw, label, line)}')"
    members = raw.get("members")
    mline = line_of(raw, "members") or line
    if not isinstance(members, list) or not members:
        raise SpecIssue(f"'members' must be a non-empty list of registered asset names, got "
                        f"{short_repr(members)}", where=where,
                        key="members", line=mline)
    for i, member in enumerate(members):
        if not isinstance(member, str) or not member:
            raise SpecIssue(f"members[{i}] must be a registered asset name, got {short_repr(member)}", where=where,
                            key=f"members[{i}]", line=line_of(members, i) or mline)
        if member in members[:i]:
            raise SpecIssue(f"members[{i}] '{member}' is listed twice; list each member once", where=where,
                            key=f"members[{i}]", line=line_of(members, i) or mline)
    random_choice = raw.get("random_choice", False)
    if not isinstance(random_choice, bool):
        raise SpecIssue(f"'random_choice' must be true or false, got {short_repr(random_choice)}", where=where,
                        key="random_choice", line=line_of(raw, "random_choice"))
    params = _params(raw, where, line)
    for key in params:
        if key not in OBJECT_SET_PARAMS:
            raise SpecIssue(f"unknown parameter '{key}' of an object set; accepted parameters: "
                            f"{', '.join(OBJECT_SET_PARAMS)} (members are built without parameters)", where=where,
                            key=f"params.{key}", line=line_of(raw["params"], key) or line)
    lines = key_lines_of(raw)
    lines.update({f"members[{i}]": line_of(members, i) for i in range(len(members))})
    return ObjectSetNode(raw["id"], list(members), random_choice, params, line=line, key_lines=lines, label=label)


def parse_object_reference(raw: Any, label: str, line: int | None,
                           background: AssetNode | None) -> ObjectReferenceNode:
    """An ``object_references`` entry; a ``prim_path`` not starting with ``{ENV_REGEX_NS}/`` expands to
    ``{ENV_REGEX_NS}/<background registry_name>/<prim_path>``."""
    check_mapping(raw, label, OBJECT_REFERENCE_KEYS, line)
    line = start_line(raw) or line
    where = f"{label} (id '{_asset_id(raw, label, line)}')"
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
        raise SpecIssue(f"'object_type' {short_repr(object_type)} is not accepted; use one of "
                        f"{', '.join(OBJECT_TYPES)}",
                        where=where, key="object_type", line=line_of(raw, "object_type"))
    params = _params(raw, where, line)
    for key in params:
        pline = line_of(raw["params"], key) or line
        if key == "openable_joint_name":
            raise SpecIssue("'openable_joint_name' (OpenableObjectReference) is not supported yet", where=where,
                            key=f"params.{key}", line=pline)
        raise SpecIssue(f"unknown parameter '{key}' of an object reference; it accepts none", where=where,
                        key=f"params.{key}", line=pline)
    return ObjectReferenceNode(raw["id"], parent_id, prim_path, object_type.lower(), dict(params), line=line,
                               key_lines=key_lines_of(raw), label=label)

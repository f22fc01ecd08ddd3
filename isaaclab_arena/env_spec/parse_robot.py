"""Parsing and building the robot sections of a spec: ``embodiment`` and ``task``.

``embodiment: {id, registry_name, params}`` makes a robot with ``isaaclab_arena.embodiments.make_embodiment``
(runtime scene key ``robot``; relations name it by ``id``). ``task: {composition: atomic, description,
subtasks: [{kind: PickAndPlaceTask, params: {pick_up_object, destination_location, background_scene,
episode_length_s}}]}`` makes the task over the spec's assets (named by id). Every problem is a ``SpecIssue``
naming the node, the key (``registry_name``, ``params.initial_pose``, ``subtasks[0].params.pick_up_object``)
and its line.
"""

from __future__ import annotations

import copy
from typing import Any

from isaaclab_arena.env_spec.blame import blame_parameter
from isaaclab_arena.env_spec.nodes import EmbodimentNode, SpecGraph, TaskNode
from isaaclab_arena.env_spec.parse_assets import check_mapping, key_lines_of
from isaaclab_arena.env_spec.spec_issue import SpecIssue
from isaaclab_arena.env_spec.yaml_lines import line_of, start_line
from isaaclab_arena.tasks.pick_and_place import PickAndPlaceTask
from isaaclab_arena.utils.checks import asset_id_problem, short_repr

EMBODIMENT_KEYS = ("id", "registry_name", "params")
TASK_KEYS = ("composition", "description", "subtasks")
SUBTASK_KEYS = ("kind", "params")
COMPOSITIONS = ("atomic",)
#: Accepted ``params`` of each subtask kind (YAML names).
#: Parameters each task kind accepts in YAML: its asset ids, then its numbers (seconds, metres, m/s, fractions).
TASK_PARAMS = {"PickAndPlaceTask": PickAndPlaceTask.ASSET_PARAMS + PickAndPlaceTask.SCALAR_PARAMS}
#: Parameters given as numbers (not asset ids), per task kind.
TASK_SCALAR_PARAMS = {"PickAndPlaceTask": PickAndPlaceTask.SCALAR_PARAMS}
REQUIRED_TASK_PARAMS = {"PickAndPlaceTask": ("pick_up_object", "destination_location")}


def parse_embodiment(raw: Any, line: int | None) -> EmbodimentNode:
    """The ``embodiment`` node ``{id, registry_name, params}``."""
    check_mapping(raw, "embodiment", EMBODIMENT_KEYS, line)
    line = start_line(raw) or line
    node_id = raw.get("id", "robot")
    problem = asset_id_problem(node_id)
    if problem is not None:
        raise SpecIssue(f"'id' {problem}", where="embodiment", key="id", line=line_of(raw, "id") or line)
    name = raw.get("registry_name")
    if not isinstance(name, str) or not name:
        raise SpecIssue(f"'registry_name' must be the name of a registered embodiment (e.g. franka_panda), got "
                        f"{short_repr(name)}", where=f"embodiment (id '{node_id}')", key="registry_name",
                        line=line_of(raw, "registry_name") or line)
    params = raw.get("params") or {}
    if not isinstance(params, dict) or not all(isinstance(k, str) for k in params):
        raise SpecIssue(f"'params' must be a mapping of parameter names to values, got {short_repr(params)}",
                        where=f"embodiment (id '{node_id}')", key="params", line=line_of(raw, "params") or line)
    return EmbodimentNode(node_id, name, dict(params), line=line, key_lines=key_lines_of(raw), label="embodiment")


def parse_task(raw: Any, line: int | None) -> TaskNode:
    """The ``task`` node; ``composition: atomic`` needs exactly one subtask."""
    check_mapping(raw, "task", TASK_KEYS, line)
    line = start_line(raw) or line
    composition = raw.get("composition", "atomic")
    if composition not in COMPOSITIONS:
        raise SpecIssue(f"composition {short_repr(composition)} is not accepted; use one of {', '.join(COMPOSITIONS)}",
                        where="task", key="composition", line=line_of(raw, "composition") or line)
    description = raw.get("description", "")
    if not isinstance(description, str):
        raise SpecIssue(f"'description' must be text, got {short_repr(description)}", where="task", key="description",
                        line=line_of(raw, "description") or line)
    subtasks = raw.get("subtasks")
    sline = line_of(raw, "subtasks") or line
    if not isinstance(subtasks, list) or len(subtasks) != 1:
        raise SpecIssue(f"composition 'atomic' requires exactly one atomic task in 'subtasks', got "
                        f"{short_repr(subtasks)}",
                        where="task", key="subtasks", line=sline)
    sub = subtasks[0]
    sub_line = line_of(subtasks, 0) or sline
    check_mapping(sub, "task subtasks[0]", SUBTASK_KEYS, sub_line)
    kind = sub.get("kind")
    if kind not in TASK_PARAMS:
        raise SpecIssue(f"unknown task kind {short_repr(kind)}; accepted kinds: {', '.join(TASK_PARAMS)}", where="task",
                        key="subtasks[0].kind", line=line_of(sub, "kind") or sub_line)
    params = sub.get("params") or {}
    pline = line_of(sub, "params") or sub_line
    if not isinstance(params, dict):
        raise SpecIssue(f"'params' must be a mapping, got {short_repr(params)}", where="task", key="subtasks[0].params",
                        line=pline)
    lines = {"composition": line_of(raw, "composition"), "description": line_of(raw, "description"),
             "subtasks": sline, "subtasks[0].kind": line_of(sub, "kind") or sub_line}
    for key in params:
        lines[f"subtasks[0].params.{key}"] = line_of(params, key) or pline
        if key not in TASK_PARAMS[kind]:
            raise SpecIssue(f"unknown parameter {short_repr(key)} of {kind}; accepted parameters: "
                            f"{', '.join(TASK_PARAMS[kind])}",
                            where="task", key=f"subtasks[0].params.{key}", line=lines[f"subtasks[0].params.{key}"])
    for key in REQUIRED_TASK_PARAMS[kind]:
        if key not in params:
            raise SpecIssue(f"{kind} needs '{key}' (an asset id of this spec)", where="task",
                            key=f"subtasks[0].params.{key}", line=pline)
    return TaskNode(kind, dict(params), composition, description, line=line, key_lines=lines, label="task")


# -- building --------------------------------------------------------------------------------------------------
def build_embodiment(node: EmbodimentNode):
    """The embodiment of ``node`` (``make_embodiment``); unknown names and parameters name their key."""
    from isaaclab_arena.embodiments import UnknownEmbodimentError, make_embodiment

    def make(params: dict):
        return make_embodiment(node.registry_name, node.id, copy.deepcopy(params))

    try:
        return make(node.params)
    except UnknownEmbodimentError as err:
        raise SpecIssue(str(err), where=node.where, key="registry_name", line=node.key_line("registry_name")) from None
    except (ValueError, TypeError) as err:
        name = blame_parameter(make, node.params, err)
        key = f"params.{name}" if name else "params"
        raise SpecIssue(str(err), where=node.where, key=key, line=node.key_line(key)) from None


def check_embodiment_pose(node: EmbodimentNode, embodiment) -> None:
    """A relation-placed robot must not have an initial pose (the placer owns it)."""
    if embodiment.has_placement_relations and embodiment.initial_pose is not None:
        rels = ", ".join(r.describe() for r in embodiment.get_spatial_relations())
        raise SpecIssue(f"the robot is placed by relations ({rels}) and also has params.initial_pose; a relation-"
                        "placed robot's pose belongs to the placer: remove initial_pose, or remove the relations to "
                        "stand it at that fixed pose", where=node.where, key="params.initial_pose",
                        line=node.key_line("params.initial_pose"))


def build_task(node: TaskNode, assets: dict):
    """The task of ``node`` over ``assets`` (id -> asset, the embodiment excluded)."""
    from isaaclab_arena.tasks import TASK_KINDS

    kwargs: dict[str, Any] = {"description": node.description}
    known = ", ".join(sorted(assets)) or "none"
    for key, value in node.params.items():
        where_key = f"subtasks[0].params.{key}"
        if key in TASK_SCALAR_PARAMS.get(node.kind, ()):
            kwargs[key] = value  # checked by the task's constructor (refusals name the key and line below)
            continue
        if not isinstance(value, str) or value not in assets:
            raise SpecIssue(f"{key} {short_repr(value)} is not an asset id of this spec; asset ids: "
                            f"{known}", where=node.where,
                            key=where_key, line=node.key_line(where_key))
        kwargs[key] = assets[value]
    cls = TASK_KINDS[node.kind]

    def make(params: dict):
        return cls(**{k: v for k, v in kwargs.items() if k in params or k == "description"})

    try:
        return make(kwargs)
    except (ValueError, TypeError) as err:
        name = blame_parameter(make, {k: v for k, v in kwargs.items() if k != "description"}, err)
        key = f"subtasks[0].params.{name}" if name else "subtasks[0].params"
        raise SpecIssue(str(err), where=node.where, key=key, line=node.key_line(key)) from None


def check_reachability_markers(spec: SpecGraph, built: list) -> None:
    """``requires_reachability`` (or a task, which marks its pick-up object) needs an embodiment."""
    if spec.embodiment is not None:
        return
    for node, _ in built:
        if node.kind == "requires_reachability":
            raise SpecIssue(f"'{node.subject}' is marked requires_reachability, but the spec has no embodiment to "
                            "reach it; add a top-level 'embodiment: {id, registry_name}' or remove the relation",
                            where=node.where, key="kind", line=node.key_line("kind"))
    if spec.task is not None:
        raise SpecIssue("a task marks its pick_up_object requires_reachability, so the spec needs a robot; add a "
                        "top-level 'embodiment: {id, registry_name}'", where=spec.task.where, key="embodiment",
                        line=spec.key_lines.get("task") or spec.task.line)

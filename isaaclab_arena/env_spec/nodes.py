"""The typed spec: one dataclass per YAML node kind, and ``SpecGraph`` holding them all.

Parsing (``parse.py``) makes these from YAML data, building (``build.py``) turns them into assets and
relations, write-back (``write_back.py``) turns them into YAML data again. Every node remembers where it was
written: ``line`` (the line its mapping starts on, from the YAML parser's marks) and ``key_lines`` (key ->
line of that key; nested parameters as ``params.<name>``). Lines are ``SourceLine`` values when read from a
file, so a node merged in through ``external_yaml`` names its own file. Lines and descriptions are not part
of equality: a spec written back out and read again compares equal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from isaaclab_arena.utils.plain_data import plain


@dataclass(kw_only=True)
class _Located:
    """Where a node was written (not compared)."""

    line: int | None = field(default=None, compare=False, repr=False)
    key_lines: dict = field(default_factory=dict, compare=False, repr=False)
    #: ``objects[1]``, ``background``, ``relations[3]``: the node's place in the spec.
    label: str = field(default="", compare=False, repr=False)

    def key_line(self, key: str) -> int | None:
        """Line of ``key`` in this node (``params.size``, ``members[1]``), else the node's own line."""
        return self.key_lines.get(key) or self.line


@dataclass
class AssetNode(_Located):
    """``background`` or ``objects`` entry: the asset ``id`` made by registry factory ``registry_name`` with
    ``params`` (the node id is the asset's scene name)."""

    id: str
    registry_name: str
    params: dict = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"{self.label} (id '{self.id}', registry_name '{self.registry_name}')"

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"id": self.id, "registry_name": self.registry_name}
        if self.params:
            out["params"] = plain(self.params)
        return out


@dataclass
class ObjectSetNode(_Located):
    """``object_sets`` entry: a ``RigidObjectSet`` ``id`` of registered ``members`` (built without parameters);
    ``params`` may hold the set's ``initial_pose`` and ``collision_mode``."""

    id: str
    members: list[str]
    random_choice: bool = False
    params: dict = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"{self.label} (id '{self.id}')"

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"id": self.id, "members": list(self.members), "random_choice": self.random_choice}
        if self.params:
            out["params"] = plain(self.params)
        return out


@dataclass
class ObjectReferenceNode(_Located):
    """``object_references`` entry: prim ``prim_path`` (already expanded to a full ``{ENV_REGEX_NS}/...``
    path) inside the USD of asset ``parent_id``."""

    id: str
    parent_id: str
    prim_path: str
    object_type: str = "rigid"
    params: dict = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"{self.label} (id '{self.id}')"

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"id": self.id, "parent_id": self.parent_id, "prim_path": self.prim_path,
                               "object_type": self.object_type}
        if self.params:
            out["params"] = plain(self.params)
        return out


@dataclass
class RelationNode(_Located):
    """``relations`` entry. ``kind`` is canonical (aliases resolved); ``params`` hold only the values given;
    ``id`` (optional) names the relation in every message about it. ``key_lines`` of parameters are keyed
    ``params.<name>`` whether the parameter was written under ``params:`` or directly in the entry."""

    kind: str
    subject: str
    reference: str | None = None
    params: dict = field(default_factory=dict)
    id: str | None = None

    @property
    def where(self) -> str:
        parts = [f"id '{self.id}'"] if self.id is not None else []
        parts += [f"kind '{self.kind}'", f"subject '{self.subject}'"]
        if self.reference is not None:
            parts.append(f"reference '{self.reference}'")
        return f"{self.label or 'relation'} ({', '.join(parts)})"

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"id": self.id} if self.id is not None else {}
        out.update(kind=self.kind, subject=self.subject)
        if self.reference is not None:
            out["reference"] = self.reference
        if self.params:
            out["params"] = plain(self.params)
        return out


@dataclass
class CliOverrideNode(_Located):
    """``cli_override_specs`` entry: runner flag ``--<arg>`` sets the ``registry_name`` of node
    ``target_node_id`` (the background or an ``objects`` entry)."""

    arg: str
    target_node_id: str

    @property
    def where(self) -> str:
        return f"{self.label} (arg '{self.arg}')"

    @property
    def flag(self) -> str:
        return f"--{self.arg}"

    @property
    def dest(self) -> str:
        return f"cli_override_{self.arg}"

    def to_dict(self) -> dict:
        return {"arg": self.arg, "target_node_id": self.target_node_id}


@dataclass
class EmbodimentNode(_Located):
    """``embodiment``: the robot ``id`` made by embodiment registry factory ``registry_name`` with ``params``
    (e.g. ``stand_height_m``, ``initial_pose``; ``enable_cameras`` is forwarded). Its runtime scene key is
    ``robot``; relations name it by ``id``."""

    id: str
    registry_name: str
    params: dict = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"embodiment (id '{self.id}', registry_name '{self.registry_name}')"

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"id": self.id, "registry_name": self.registry_name}
        if self.params:
            out["params"] = plain(self.params)
        return out


@dataclass
class TaskNode(_Located):
    """``task``: ``{composition: atomic, description, subtasks: [{kind, params}]}``; ``atomic`` holds exactly one
    subtask, whose ``params`` name assets by id (``pick_up_object``, ``destination_location``,
    ``background_scene``) and give ``episode_length_s`` (seconds). Key lines of the subtask are kept as
    ``subtasks[0].kind`` / ``subtasks[0].params.<name>``."""

    kind: str
    params: dict = field(default_factory=dict)
    composition: str = "atomic"
    description: str = ""

    @property
    def where(self) -> str:
        return f"task (subtasks[0] kind '{self.kind}')"

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"composition": self.composition}
        if self.description:
            out["description"] = self.description
        sub: dict[str, Any] = {"kind": self.kind}
        if self.params:
            sub["params"] = plain(self.params)
        out["subtasks"] = [sub]
        return out


@dataclass
class SpecGraph:
    """A parsed environment spec: assets are nodes, relations are edges (see ``arena_env_graph_spec.py`` for
    the YAML format). ``num_envs`` / ``env_spacing`` (metres) are run settings the runner and the env builder
    use unless given explicitly."""

    env_name: str
    background: AssetNode | None = None
    objects: list[AssetNode] = field(default_factory=list)
    object_sets: list[ObjectSetNode] = field(default_factory=list)
    object_references: list[ObjectReferenceNode] = field(default_factory=list)
    relations: list[RelationNode] = field(default_factory=list)
    #: Nested override of ``ObjectPlacerParams`` fields (plain YAML data).
    placer_params: dict = field(default_factory=dict)
    num_envs: int | None = None
    env_spacing: float | None = None
    default_physics_backend: str | None = None
    #: The spec file (or ``<dict>``) the spec was read from.
    source: str = field(default="<dict>", compare=False, repr=False)
    placer_params_line: int | None = field(default=None, compare=False, repr=False)
    #: Absolute paths of the files this spec lists in ``external_yaml`` (their content is merged in).
    external_yaml: list[str] = field(default_factory=list)
    cli_override_specs: list[CliOverrideNode] = field(default_factory=list)
    #: Dotted env-cfg attribute path -> value (``sim.dt: 0.005``), applied by ``ArenaEnvBuilder``.
    env_cfg_override: dict = field(default_factory=dict)
    #: Source names of every file merged in through ``external_yaml`` (nested too).
    included_sources: set = field(default_factory=set, compare=False, repr=False)
    #: ``to_dict()`` values of what came from included files at load time (top-level keys, list entries).
    included_snapshot: dict = field(default_factory=dict, compare=False, repr=False)
    #: Top-level key -> line.
    key_lines: dict = field(default_factory=dict, compare=False, repr=False)
    #: The robot (``embodiment``), if any.
    embodiment: EmbodimentNode | None = None
    #: The task (``task``), if any.
    task: TaskNode | None = None
    #: The recorder's settings the spec carries (YAML ``recording``: ``PlacementRecordingCfg`` keys but
    #: env_spec / output), used unless the recorder's command line gives them (``env_spec/recording_spec.py``).
    recording: dict = field(default_factory=dict)
    #: ``object_pools`` entries (``parse_pools.ObjectPoolNode``): k of N objects join each layout.
    object_pools: list = field(default_factory=list)

    def asset_nodes(self) -> list:
        """Every node that makes an asset, in build order (background, objects, sets, references)."""
        return ([self.background] if self.background else []) + self.objects + self.object_sets + \
            self.object_references

    def asset_node(self, node_id: str) -> AssetNode:
        """The background or ``objects`` node ``node_id`` (the nodes that have a ``registry_name``)."""
        for node in ([self.background] if self.background else []) + self.objects:
            if node.id == node_id:
                return node
        raise KeyError(f"spec '{self.env_name}' has no background or objects node '{node_id}'")

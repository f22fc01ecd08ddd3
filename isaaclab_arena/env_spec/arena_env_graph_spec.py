"""YAML environment specs: a graph whose nodes are assets and whose edges are relations.

``ArenaEnvGraphSpec.from_yaml(path)`` reads and fully validates a spec (every asset and relation is built
once and the placement restrictions are checked), ``to_arena_env()`` builds a fresh
``IsaacLabArenaEnvironment``, ``to_dict()`` / ``to_yaml(path)`` write it back out and
``from_arena_env(env)`` goes the other way; either way a spec written back out loads equal. The class is a
thin front over one module per job: ``parse.py`` (YAML -> nodes), ``build.py`` (nodes -> environment),
``cli_override_spec.py`` (declared flags -> a new spec) and ``write_back.py`` (nodes -> YAML).

Top-level keys (every other key is refused, naming it):

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
    List of ``{id?, kind, subject, reference?, params?}`` (see ``parse_relations.py``). An ``is_anchor``
    subject without an ``initial_pose`` gets ``Pose.identity()``.
``placer_params``
    Nested override of ``ObjectPlacerParams`` (see ``placer_params_spec.py``). The older
    ``placement_validators`` block (``enabled_checks``, ``required_checks``, ``debug_visualize``,
    ``debug_visualize_output_path``) is read into the same fields.
``num_envs``, ``env_spacing``, ``default_physics_backend``
    Run settings: env count (> 0), spacing between env origins in metres (> 0), and the physics preset the
    environment prefers. ``environment_runner.py`` and ``ArenaEnvBuilderCfg`` use them unless ``--num_envs`` /
    ``--env_spacing`` / the builder cfg give other values.
``external_yaml``
    A spec file path (or a list of them), relative to this file's folder, merged in under this file's keys
    (see ``external_yaml.py``: node lists concatenated, other keys taken whole from the including file).
    Indices in error messages (``objects[3]``) count the merged lists; the file and line are the node's own.
``cli_override_specs``
    List of ``{arg, target_node_id}``: runner flag ``--<arg>`` swaps the ``registry_name`` of the background
    or objects node ``target_node_id`` (see ``cli_override_spec.py``).
``env_cfg_override``
    Mapping of dotted Isaac Lab env-cfg attribute paths to values (``sim.dt: 0.005``), applied by
    ``ArenaEnvBuilder.compose_manager_cfg()`` (see ``env_cfg_override.py``).

``embodiment``
    ``{id, registry_name, params}``: a robot from the embodiment registry (``franka_panda``); runtime scene key
    ``robot``, named by ``id`` in relations (``'on'`` floor, ``next_to`` table, ``rotate_around_solution``); a
    relation-placed robot must not have ``params.initial_pose`` (see ``parse_robot.py``).
``task``
    ``{composition: atomic, description, subtasks: [{kind: PickAndPlaceTask, params: {pick_up_object,
    destination_location, background_scene, episode_length_s}}]}`` over asset ids; the pick-up object is marked
    ``requires_reachability`` (which needs an embodiment).

Poses are env-local (metres, xyzw
quaternions). Every error is an ``EnvSpecError`` naming the file, the line, the node (asset id, relation
index, id, kind and subject) and the key, and saying what is accepted; values that cannot be meant are
refused too (``plausibility.py``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from isaaclab_arena.env_spec.build import build_environment
from isaaclab_arena.env_spec.cli_override_spec import apply_cli_overrides
from isaaclab_arena.env_spec.nodes import CliOverrideNode, SpecGraph
from isaaclab_arena.env_spec.parse import parse_spec
from isaaclab_arena.env_spec.spec_issue import EnvSpecError, SpecIssue, issue_error
from isaaclab_arena.env_spec.write_back import graph_from_arena_env, spec_to_dict, write_spec_yaml
from isaaclab_arena.env_spec.yaml_lines import load_yaml_file
from isaaclab_arena.utils.shipped_paths import shipped_path, where_paths_are_looked_for

__all__ = ["ArenaEnvGraphSpec", "EnvSpecError", "spec_from_arena_env"]


@dataclass(eq=True)
class ArenaEnvGraphSpec(SpecGraph):
    """A parsed environment spec (see the module docstring for the format and ``SpecGraph`` for the fields)."""

    @classmethod
    def from_yaml(cls, path: str | os.PathLike) -> "ArenaEnvGraphSpec":
        """Reads and validates the spec file ``path``. A relative path is taken from the working directory, else
        from the isaaclab_arena checkout (``ARENA_ROOT``), so that the documented example paths
        (``isaaclab_arena_environments/...``) work from any folder; that fallback is said on stderr."""
        source = shipped_path(os.fspath(path))
        if not os.path.exists(source):
            raise EnvSpecError(f"spec file does not exist ({where_paths_are_looked_for()})", source=source)
        if not os.path.isfile(source):
            raise EnvSpecError("spec path is not a file; give the path of a .yaml spec", source=source)
        try:
            data = load_yaml_file(source)
        except SpecIssue as issue:
            raise issue_error(issue, source) from None
        if data is None:
            raise EnvSpecError("the spec file is empty; a spec is a YAML mapping with env_name, objects, relations, ...",
                               source=source)
        return cls.from_dict(data, source=source)

    @classmethod
    def from_dict(cls, data: Any, source: str = "<dict>") -> "ArenaEnvGraphSpec":
        """Validates ``data`` (a spec mapping) and returns the spec; builds the assets once to check them."""
        try:
            spec = parse_spec(data, source, cls)
        except SpecIssue as issue:
            raise issue_error(issue, source) from None
        build_environment(spec)
        return spec

    @classmethod
    def from_arena_env(cls, env, num_envs: int | None = None) -> "ArenaEnvGraphSpec":
        """The spec of a Python ``IsaacLabArenaEnvironment`` made from registered assets (``write_back.py``)."""
        return graph_from_arena_env(env, num_envs, cls)

    def to_arena_env(self):
        """A fresh ``IsaacLabArenaEnvironment`` with every asset and relation of the spec."""
        return build_environment(self)

    def cli_overrides(self) -> list[CliOverrideNode]:
        """The declared ``cli_override_specs`` (flag ``--<arg>`` -> node ``target_node_id``)."""
        return list(self.cli_override_specs)

    def apply_cli_overrides(self, values: dict[str, str | None]) -> "ArenaEnvGraphSpec":
        """A new spec whose declared override targets use the registry names in ``values`` (``arg`` -> registry
        name; None: flag not given), validated by building it once. This spec is left unchanged."""
        return apply_cli_overrides(self, values)

    def to_dict(self, flatten: bool = False) -> dict:
        """The spec as plain YAML data; with ``external_yaml``, this file's own keys plus the includes
        (``flatten=True``: one self-contained spec)."""
        return spec_to_dict(self, flatten=flatten)

    def to_yaml(self, path: str | os.PathLike, flatten: bool = False) -> str:
        """Writes the spec to ``path`` atomically; returns the path."""
        return write_spec_yaml(self, path, flatten=flatten)


def spec_from_arena_env(env, num_envs: int | None = None) -> ArenaEnvGraphSpec:
    """The spec of a Python ``IsaacLabArenaEnvironment`` whose objects were made from registered assets."""
    return ArenaEnvGraphSpec.from_arena_env(env, num_envs=num_envs)

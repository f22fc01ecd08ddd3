"""Typed spec -> ``IsaacLabArenaEnvironment``: builds every asset and relation of a ``SpecGraph``.

Each object is built from one node, so an error is attributed to that node by construction: the node (its
file, line and description) is the one being built when the constructor raised, and the key within it is
found by building again (``blame.py``). Placement restrictions are checked on the whole scene; when they fail,
the relation that completes the failure is found by attaching the relations again in file order and checking
after each one: the first relation after which the check fails in the same way is the node named. Values that
cannot be meant are refused last (``plausibility.py``).
"""

from __future__ import annotations

import copy
from typing import Any

from isaaclab_arena.env_spec.blame import blame_parameter
from isaaclab_arena.env_spec.nodes import AssetNode, ObjectSetNode, RelationNode, SpecGraph
from isaaclab_arena.env_spec.parse_robot import (
    build_embodiment,
    build_task,
    check_embodiment_pose,
    check_reachability_markers,
)
from isaaclab_arena.env_spec.placer_params_spec import parse_placer_params
from isaaclab_arena.env_spec.plausibility import check_plausible
from isaaclab_arena.env_spec.spec_issue import SpecIssue, issue_error
from isaaclab_arena.relations.relations import RELATION_KINDS, RelationBase


def build_environment(spec: SpecGraph):
    """A fresh ``IsaacLabArenaEnvironment`` with every asset and relation of ``spec``; ``EnvSpecError`` naming
    the file, line, node and key of anything that cannot be built or placed."""
    from isaaclab_arena.environments.isaaclab_arena_environment import IsaacLabArenaEnvironment
    from isaaclab_arena.relations.compiler.placement_restrictions import PlacementConfigError, check_placement_restrictions

    try:
        assets = build_assets(spec)
        robot = build_embodiment(spec.embodiment) if spec.embodiment is not None else None
        scene = _with_robot(assets, spec, robot)
        from isaaclab_arena.env_spec.parse_pools import build_pools, check_pool_relation

        pools = build_pools(spec.object_pools, assets)
        members = {m: p.name for p in pools.values() for m in p.member_names}
        for node in spec.relations:
            check_pool_relation(node, pools, members)
        built = [(node, attach_relation(node, {**scene, **pools})) for node in spec.relations]
        default_anchor_poses(assets)
        if robot is not None:
            check_embodiment_pose(spec.embodiment, robot)
        check_reachability_markers(spec, built)
        task = build_task(spec.task, assets) if spec.task is not None else None
        placer = parse_placer_params(spec.placer_params, spec.placer_params_line)
        env = IsaacLabArenaEnvironment(spec.env_name, list(assets.values()), embodiment=robot, task=task,
                                       placer_params=placer, env_spacing=spec.env_spacing,
                                       physics=spec.default_physics_backend,
                                       env_cfg_overrides=copy.deepcopy(spec.env_cfg_override),
                                       num_envs=spec.num_envs, recording=copy.deepcopy(spec.recording))
        try:
            check_placement_restrictions(list(scene.values()), random_yaw_init=placer.random_yaw_init)
        except PlacementConfigError as err:
            node = _restriction_node(spec, err, placer.random_yaw_init)
            raise SpecIssue(str(err), where=node.where if node else "relations",
                            line=node.line if node else spec.key_lines.get("relations")) from None
        check_plausible(scene, [(n, r) for n, r in built if n.subject not in pools], spec.source)
    except SpecIssue as issue:
        raise issue_error(issue, spec.source) from None
    return env


def _with_robot(assets: dict, spec: SpecGraph, robot) -> dict:
    """The assets relations may name: ``assets`` plus the embodiment under its node id."""
    return {**assets, spec.embodiment.id: robot} if robot is not None else assets


def default_anchor_poses(assets: dict) -> None:
    """YAML: an anchor without a pose sits at the env origin (``Pose.identity()``)."""
    from isaaclab_arena.assets.object_reference import ObjectReference
    from isaaclab_arena.utils.pose import Pose

    for asset in assets.values():
        if asset.is_anchor and asset.initial_pose is None and not isinstance(asset, ObjectReference):
            asset.set_initial_pose(Pose.identity())


def _restriction_node(spec: SpecGraph, error: Exception, random_yaw_init: bool) -> RelationNode | None:
    """The relation node after whose attachment (in file order, on fresh assets) the restrictions fail exactly
    as ``error`` says; None when no prefix of the relations does."""
    from isaaclab_arena.relations.compiler.placement_restrictions import PlacementConfigError, check_placement_restrictions

    assets = build_assets(spec)
    robot = build_embodiment(spec.embodiment) if spec.embodiment is not None else None
    scene = _with_robot(assets, spec, robot)
    for node in spec.relations:
        attach_relation(node, scene)
        default_anchor_poses(assets)
        try:
            check_placement_restrictions(list(scene.values()), random_yaw_init=random_yaw_init)
        except PlacementConfigError as err:
            if (type(err), err.args) == (type(error), error.args):
                return node
    return None


# -- assets ----------------------------------------------------------------------------------------------------
def build_assets(spec: SpecGraph) -> dict[str, Any]:
    """Every asset of ``spec`` by id, in node order (background, objects, object sets, object references)."""
    from isaaclab_arena.assets.asset import Background

    assets: dict[str, Any] = {}
    if spec.background is not None:
        bg = _registered_asset(spec.background)
        if not isinstance(bg, Background):
            raise SpecIssue(f"registry entry '{spec.background.registry_name}' makes a {type(bg).__name__}, not a "
                            "Background; put it under objects, or use a background entry (e.g. static_box)",
                            where=spec.background.where, key="registry_name", line=spec.background.line)
        assets[bg.name] = bg
    for node in spec.objects:
        assets[node.id] = _registered_asset(node)
    for node in spec.object_sets:
        assets[node.id] = _object_set(node)
    for node in spec.object_references:
        assets[node.id] = _object_reference(node, assets)
    return assets


def _registered_asset(node: AssetNode):
    from isaaclab_arena.adapters.asset_registry import UnknownAssetError, build_registered_asset

    def make(params: dict):
        return build_registered_asset(node.registry_name, node.id, params)

    params = {k: v for k, v in node.params.items() if k != PROPERTIES_KEY}  # not a factory parameter
    try:
        asset = make(params)
    except UnknownAssetError as err:
        raise SpecIssue(str(err), where=node.where, key="registry_name", line=node.key_line("registry_name")) from None
    except (ValueError, TypeError) as err:
        name = blame_parameter(make, params, err)
        key = f"params.{name}" if name else "params"
        raise SpecIssue(str(err), where=node.where, key=key, line=node.key_line(key)) from None
    return _with_properties(node, asset)


def _object_set(node: ObjectSetNode):
    from isaaclab_arena.assets.object_set import RigidObjectSet
    from isaaclab_arena.assets.collision_mode import parse_collision_mode
    from isaaclab_arena.utils.pose import parse_pose
    from isaaclab_arena.adapters.asset_registry import UnknownAssetError, build_registered_asset

    members = []
    for i, member in enumerate(node.members):
        try:
            members.append(build_registered_asset(member, f"{node.id}_{member}", {}))
        except (UnknownAssetError, ValueError, TypeError) as err:
            raise SpecIssue(str(err), where=node.where, key=f"members[{i}]", line=node.key_line(f"members[{i}]")) \
                from None
    try:
        obj_set = RigidObjectSet(node.id, members, random_choice=node.random_choice)
    except (ValueError, TypeError) as err:
        raise SpecIssue(str(err), where=node.where, key="members", line=node.key_line("members")) from None
    pose = _set_param(node, "initial_pose", parse_pose)
    if pose is not None:
        obj_set.set_initial_pose(pose)
    obj_set.collision_mode = _set_param(node, "collision_mode", parse_collision_mode)
    return _with_properties(node, obj_set)


PROPERTIES_KEY = "physical_properties"


def _with_properties(node, asset):
    """Attaches ``params.physical_properties`` (``PhysicalPropertyRanges``) to ``asset``; a refusal names the
    field's key and line."""
    raw = node.params.get(PROPERTIES_KEY)
    if raw is None:
        return asset
    from isaaclab_arena.assets.physical_properties import PhysicalPropertyRanges, set_physical_property_ranges
    from isaaclab_arena.env_spec.yaml_lines import line_of

    try:
        return set_physical_property_ranges(asset, PhysicalPropertyRanges.from_mapping(raw, f"asset '{node.id}'"))
    except ValueError as err:
        key = f"params.{PROPERTIES_KEY}"
        line = node.key_line(key)
        if isinstance(raw, dict):
            msg, keys = str(err), list(raw)
            if "exclude each other" in msg:  # the one written last, as for other conflicting values
                bad = max(("mass_kg", "mass_scale"), key=keys.index)
            else:
                bad = next((k for k in keys if f"{k!r}" in msg or f": {k} must" in msg), None)
            if bad is not None:
                key, line = f"{key}.{bad}", line_of(raw, bad) or line
        raise SpecIssue(str(err), where=node.where, key=key, line=line) from None


def _set_param(node: ObjectSetNode, key: str, parse):
    """``parse(params[key])`` of an object set; a refusal names ``params.<key>``."""
    try:
        return parse(node.params.get(key), f"asset '{node.id}'")
    except (ValueError, TypeError) as err:
        raise SpecIssue(str(err), where=node.where, key=f"params.{key}", line=node.key_line(f"params.{key}")) from None


def _object_reference(node, assets: dict):
    from isaaclab_arena.assets.asset import Object
    from isaaclab_arena.assets.object_reference import ObjectReference

    parent = assets.get(node.parent_id)
    if not isinstance(parent, Object):  # object sets and references have no USD of their own
        usable = sorted(n for n, a in assets.items() if isinstance(a, Object))
        what = "unknown parent_id" if parent is None else "parent_id names an asset without its own USD"
        raise SpecIssue(f"{what} '{node.parent_id}'; it must be the background or an object spawned from a USD "
                        f"file: {', '.join(usable) or 'none defined'}", where=node.where, key="parent_id",
                        line=node.key_line("parent_id"))
    try:
        ref = ObjectReference(node.id, node.prim_path, parent, node.object_type)
        ref.get_bounding_box()  # reads the prim from the parent's USD now, so a bad path fails at load
    except (ValueError, TypeError, KeyError) as err:
        raise SpecIssue(str(err.args[0] if err.args else err), where=node.where, key="prim_path",
                        line=node.key_line("prim_path")) from None
    return ref


# -- relations -------------------------------------------------------------------------------------------------
def attach_relation(node: RelationNode, assets: dict) -> RelationBase:
    """Makes the relation of ``node`` (its own constructor checks the values) and attaches it to its subject."""
    cls = RELATION_KINDS[node.kind]
    known = ", ".join(sorted(assets)) or "none"
    subject = assets.get(node.subject)
    if subject is None:
        raise SpecIssue(f"unknown subject '{node.subject}'; asset ids defined in this spec: {known}", where=node.where,
                        key="subject", line=node.key_line("subject"))
    args = []
    if node.reference is not None:
        if node.reference == node.subject:
            raise SpecIssue(f"a relation to itself: subject and reference are both '{node.subject}'; a relation needs "
                            "another asset as its reference", where=node.where, key="reference",
                            line=node.key_line("reference"))
        parent = assets.get(node.reference)
        if parent is None:
            raise SpecIssue(f"unknown reference '{node.reference}'; asset ids defined in this spec: {known}",
                            where=node.where, key="reference", line=node.key_line("reference"))
        args.append(parent)

    def make(params: dict) -> RelationBase:
        return cls(*args, **params)

    try:
        relation = make(node.params)
    except (ValueError, TypeError) as err:
        name = blame_parameter(make, node.params, err)
        key = f"params.{name}" if name else None
        raise SpecIssue(str(err), where=node.where, key=key, line=node.key_line(key) if key else node.line) from None
    if hasattr(relation, "side_given"):  # NotNextTo: its side notice says whether the side is the default
        relation.side_given = "side" in node.params
    try:
        subject.add_relation(relation)
    except (ValueError, TypeError) as err:
        raise SpecIssue(str(err), where=node.where, line=node.line) from None
    return relation

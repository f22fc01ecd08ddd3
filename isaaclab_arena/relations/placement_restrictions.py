"""Checks of a scene's relations that run when placement is configured, before anything is solved.

Each restriction of the relations reference has its own error, naming the asset and the relation and
saying what would be accepted. ``check_placement_restrictions`` raises the first one it finds.
"""

from __future__ import annotations

import math
from typing import Iterable

from isaaclab_arena.assets.asset import Background, PlaceableAsset
from isaaclab_arena.assets.collision_mode import CollisionMode
from isaaclab_arena.assets.object_reference import ObjectReference
from isaaclab_arena.relations.relations import (
    AlignWith,
    ClutterOn,
    FaceTo,
    IsAnchor,
    On,
    RandomAroundSolution,
    RelationBase,
    RotateAroundSolution,
)


class PlacementConfigError(ValueError):
    """A scene's assets or relations cannot be placed as configured."""


def anchor_pose_for_restriction(asset: PlaceableAsset):
    """The pose whose rotation the anchor restriction applies to (the parent's pose for an ObjectReference)."""
    if isinstance(asset, ObjectReference):
        return asset.parent_asset.get_world_pose()
    return asset.initial_pose


def participates_in_placement(asset: PlaceableAsset) -> bool:
    """An anchor or an asset the solver places."""
    return asset.is_anchor or asset.has_placement_relations


def check_placement_restrictions(assets: Iterable[PlaceableAsset], random_yaw_init: bool = False) -> None:
    """Raises ``PlacementConfigError`` for the first restriction the scene breaks.

    Args:
        assets: Every asset of the scene (anchors, placed assets, obstacles, backgrounds).
        random_yaw_init: ``ObjectPlacerParams.random_yaw_init``; a movable ClutterOn support cannot use it.
    """
    assets = list(assets)
    by_name: dict[str, PlaceableAsset] = {}
    for asset in assets:
        if asset.name in by_name:
            raise PlacementConfigError(f"duplicate asset name '{asset.name}': every asset needs a unique name")
        by_name[asset.name] = asset

    def where(asset: PlaceableAsset, rel: RelationBase | None = None) -> str:
        return f"asset '{asset.name}'" + (f", relation {rel.describe()}" if rel is not None else "")

    for asset in assets:
        rels = asset.get_relations()
        for rel in rels:
            parent = rel.parent
            if parent is not None and by_name.get(parent.name) is not parent:
                raise PlacementConfigError(f"{where(asset, rel)}: reference '{parent.name}' is not an asset of this scene; "
                                           f"known assets: {sorted(by_name)}")

        if isinstance(asset, Background) and asset.collision_mode == CollisionMode.MESH and rels:
            raise PlacementConfigError(f"{where(asset, rels[0])}: a background with collision_mode='mesh' cannot have "
                                       "relations (IsAnchor included); anchor an ObjectReference to its support prim")

        if asset.is_anchor:
            _check_anchor(asset, rels, where)
        elif asset.initial_pose is not None and asset.has_placement_relations and not isinstance(asset, Background):
            rel = asset.get_spatial_relations()[0] if asset.get_spatial_relations() else rels[0]
            raise PlacementConfigError(f"{where(asset, rel)}: a relation-placed asset must not have an initial_pose; "
                                       "the placer owns its poses (remove initial_pose, or drop its relations to make "
                                       "it a fixed obstacle)")

        _check_clutter(asset, rels, random_yaw_init, where)
        _check_face_to(asset, rels, where)
        for rel in rels:
            if isinstance(rel, AlignWith):
                if asset.is_anchor:
                    raise PlacementConfigError(f"{where(asset, rel)}: the subject of AlignWith cannot be an anchor")
                if not participates_in_placement(rel.parent):
                    raise PlacementConfigError(f"{where(asset, rel)}: the reference '{rel.parent.name}' must be placed by "
                                               "relations (an anchor or an asset with placement relations)")
            if isinstance(rel, On) and not rel.overlap:
                _check_fits(asset, rel, where)

    movable = [a for a in assets if a.has_placement_relations]
    anchors = [a for a in assets if a.is_anchor]
    if movable and not anchors:
        raise PlacementConfigError(f"no anchor: assets {[a.name for a in movable]} are placed by relations, but no "
                                   "asset has IsAnchor(); mark a fixed support (a table, a counter reference) with IsAnchor()")


def _check_anchor(asset, rels, where) -> None:
    anchor_rel = next(r for r in rels if isinstance(r, IsAnchor))
    for rel in rels:
        if rel.is_spatial or isinstance(rel, (FaceTo, RotateAroundSolution, RandomAroundSolution)):
            raise PlacementConfigError(f"{where(asset, rel)}: anchors are fixed, so they cannot also carry "
                                       f"{type(rel).__name__}; remove IsAnchor() or the relation")
    pose = anchor_pose_for_restriction(asset)
    if pose is None:
        if isinstance(asset, ObjectReference):
            raise PlacementConfigError(f"{where(asset, anchor_rel)}: its parent '{asset.parent_asset.name}' has no "
                                       "initial pose, so the anchor's pose is unknown; call "
                                       "set_initial_pose(Pose(...)) on the parent")
        raise PlacementConfigError(f"{where(asset, anchor_rel)}: an anchor needs a fixed initial pose; call "
                                   "set_initial_pose(Pose(...)) (YAML: params.initial_pose, identity when omitted)")
    if not pose.is_upright_quarter_turn():
        owner = f"its parent '{asset.parent_asset.name}'" if isinstance(asset, ObjectReference) else "its"
        raise PlacementConfigError(f"{where(asset, anchor_rel)}: {owner} rotation {pose.rotation_xyzw} is not a multiple "
                                   "of 90 degrees about world Z with no tilt; use e.g. (0, 0, 0, 1) or "
                                   "(0, 0, 0.7071068, 0.7071068)")


def _check_clutter(asset, rels, random_yaw_init, where) -> None:
    clutter = [r for r in rels if isinstance(r, ClutterOn)]
    if not clutter:
        return
    rel = clutter[0]
    others = [r for r in asset.get_spatial_relations() if r is not rel]
    if others:
        raise PlacementConfigError(f"{where(asset, rel)}: ClutterOn must be the object's only spatial relation, but it "
                                   f"also has {others[0].describe()}; RotateAroundSolution may set its base rotation")
    if asset.random_around_solution is not None:
        raise PlacementConfigError(f"{where(asset, rel)}: ClutterOn cannot be combined with RandomAroundSolution")
    if asset.get_relations_of(FaceTo):
        raise PlacementConfigError(f"{where(asset, rel)}: ClutterOn cannot be combined with FaceTo")
    rot = asset.rotate_around_solution
    if rot is not None and (abs(rot.roll_rad) > 1e-9 or abs(rot.pitch_rad) > 1e-9):
        if asset.collision_mode == CollisionMode.MESH:
            raise PlacementConfigError(f"{where(asset, rel)}: roll or pitch on a ClutterOn object requires "
                                       "collision_mode='bbox'; mesh supports yaw only")
    support = rel.parent
    if support.get_relations_of(ClutterOn):
        raise PlacementConfigError(f"{where(asset, rel)}: the support '{support.name}' itself uses ClutterOn; supports "
                                   "must be anchors or placed by other relations")
    if support.is_anchor:
        return
    if not support.has_placement_relations:
        raise PlacementConfigError(f"{where(asset, rel)}: the support '{support.name}' must be an anchor (IsAnchor) or "
                                   "placed by relations")
    if support.get_relations_of(FaceTo) or random_yaw_init:
        raise PlacementConfigError(f"{where(asset, rel)}: the movable support '{support.name}' must stay upright with a "
                                   "fixed quarter-turn yaw, so it cannot use FaceTo or random_yaw_init")
    srot = support.rotate_around_solution
    if srot is not None:
        from isaaclab_arena.utils.pose import Pose

        if not Pose((0, 0, 0), srot.quaternion_xyzw()).is_upright_quarter_turn():
            raise PlacementConfigError(f"{where(asset, rel)}: the support '{support.name}' has a RotateAroundSolution that "
                                       "is not an upright quarter turn")


def _check_face_to(asset, rels, where) -> None:
    faces = [r for r in rels if isinstance(r, FaceTo)]
    if not faces:
        return
    rel = faces[0]
    if asset.is_anchor:
        raise PlacementConfigError(f"{where(asset, rel)}: an anchor cannot use FaceTo (anchors are not moved)")
    if len(faces) > 1:
        raise PlacementConfigError(f"{where(asset, faces[1])}: a subject can have only one FaceTo, this one has {len(faces)}")
    if asset.rotate_around_solution is not None:
        raise PlacementConfigError(f"{where(asset, rel)}: FaceTo cannot be combined with RotateAroundSolution")
    target = rel.parent
    if not participates_in_placement(target):
        raise PlacementConfigError(f"{where(asset, rel)}: the target '{target.name}' must also participate in relation "
                                   "placement (an anchor or an asset with placement relations)")
    for who in (asset, target):
        rnd = who.random_around_solution
        if rnd is not None and rnd.has_xy_offset:
            raise PlacementConfigError(f"{where(asset, rel)}: '{who.name}' uses RandomAroundSolution with XY offsets, "
                                       "which FaceTo's subject and target cannot use; set x_half_m and y_half_m to 0")


def _check_fits(asset, rel: On, where) -> None:
    from isaaclab_arena.assets.object_set import RigidObjectSet

    parent_box = rel.parent.get_bounding_box()
    children = asset.objects if isinstance(asset, RigidObjectSet) else [asset]
    for child in children:
        box = child.get_bounding_box()
        for axis, label in ((0, "x"), (1, "y")):
            room = parent_box.size[axis] - 2.0 * rel.edge_margin_m
            if box.size[axis] > room + 1e-9 and not math.isclose(box.size[axis], room):
                who = f"'{child.name}' (member of '{asset.name}')" if child is not asset else f"'{asset.name}'"
                raise PlacementConfigError(
                    f"{where(asset, rel)}: {who} is {box.size[axis]:.3f} m along {label}, larger than the "
                    f"{room:.3f} m that '{rel.parent.name}' offers inside edge_margin_m={rel.edge_margin_m:g}; use a "
                    "larger support, a smaller edge_margin_m, or On(..., overlap=True)")

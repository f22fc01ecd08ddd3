"""Checks of a scene's relations that run when placement is configured, before anything is solved.

Each restriction of the relations reference has its own error, naming the asset and the relation and
saying what would be accepted. ``check_placement_restrictions`` raises the first one it finds.
"""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np

from isaaclab_arena.assets.asset import Background, PlaceableAsset
from isaaclab_arena.assets.collision_mode import CollisionMode
from isaaclab_arena.assets.object_reference import ObjectReference
from isaaclab_arena.relations.kernels.tables import YawMode
from isaaclab_arena.relations.compiler.object_yaw import yaw_mode
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

    movable = [a for a in assets if a.has_placement_relations]
    anchors = [a for a in assets if a.is_anchor]
    if movable and not anchors:
        raise PlacementConfigError(f"no anchor: assets {[a.name for a in movable]} are placed by relations, but no "
                                   "asset has IsAnchor(); mark a fixed support (a table, a counter reference) with IsAnchor()")

    # sizes last, once every relation is known to be well-formed
    for asset in assets:
        for rel in asset.get_relations():
            if (isinstance(rel, On) and not rel.overlap) or isinstance(rel, ClutterOn):
                _check_fits(asset, rel, random_yaw_init, where)


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


def _xy_extent(box, quat) -> tuple[float, float]:
    """World X/Y size (metres) of a local box rotated by the xyzw quaternion ``quat`` (its 8 corners at once)."""
    from isaaclab_arena.utils.pose_math import quat_apply

    lo, hi = box.min_point, box.max_point
    corners = np.array([(x, y, z) for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])], np.float64)
    pts = quat_apply(np.asarray(quat, np.float64)[None, :], corners)
    return float(pts[:, 0].max() - pts[:, 0].min()), float(pts[:, 1].max() - pts[:, 1].min())


_IDENTITY = (0.0, 0.0, 0.0, 1.0)


def _fixed_rotation(asset, random_yaw_init: bool):
    """The xyzw rotation the solver gives ``asset`` when it is fixed, else None (its yaw is drawn or
    follows FaceTo). Anchors: their world pose; placed assets: RotateAroundSolution (identity without)."""
    if asset.is_anchor:
        pose = asset.get_world_pose()
        return pose.rotation_xyzw if pose is not None else None
    if yaw_mode(asset, random_yaw_init) != YawMode.FIXED:
        return None
    rot = asset.rotate_around_solution
    return rot.quaternion_xyzw() if rot is not None else _IDENTITY


def _check_fits(asset, rel, random_yaw_init: bool, where) -> None:
    """A child whose footprint cannot fit its support's room (On: the parent inset by edge_margin_m;
    ClutterOn: the central ``spread`` release region inset by edge_margin_m) is refused before solving.
    Footprints are world-aligned under the rotations the solver uses; for a child whose yaw is drawn
    (random yaw, FaceTo) only what no yaw can fix is refused."""

    from isaaclab_arena.assets.object_set import RigidObjectSet

    parent_rot = _fixed_rotation(rel.parent, random_yaw_init)
    if parent_rot is None:
        return  # a support whose heading varies: its room is only known per candidate
    try:
        parent_box = rel.parent.get_bounding_box()
    except (NotImplementedError, ValueError):
        return
    scale = rel.spread if isinstance(rel, ClutterOn) else 1.0
    px, py = _xy_extent(parent_box, parent_rot)
    room = (scale * px - 2.0 * rel.edge_margin_m, scale * py - 2.0 * rel.edge_margin_m)
    what = (f"the central spread={rel.spread:g} release region" if isinstance(rel, ClutterOn) else "room")
    child_rot = _fixed_rotation(asset, random_yaw_init)
    base = asset.rotate_around_solution.quaternion_xyzw() if asset.rotate_around_solution is not None else _IDENTITY
    children = asset.objects if isinstance(asset, RigidObjectSet) else [asset]
    for child in children:
        who = f"'{child.name}' (member of '{asset.name}')" if child is not asset else f"'{asset.name}'"
        if child_rot is not None:
            size = _xy_extent(child.get_bounding_box(), child_rot)
            for axis, label in ((0, "x"), (1, "y")):
                if size[axis] > room[axis] + 1e-9 and not math.isclose(size[axis], room[axis]):
                    turned = " (as rotated by its RotateAroundSolution)" if child_rot != _IDENTITY else ""
                    raise PlacementConfigError(
                        f"{where(asset, rel)}: {who} is {size[axis]:.3f} m along {label}{turned}, larger than the "
                        f"{room[axis]:.3f} m of {what} that '{rel.parent.name}' offers inside "
                        f"edge_margin_m={rel.edge_margin_m:g}; use a larger support, a smaller edge_margin_m"
                        + (", a larger spread" if isinstance(rel, ClutterOn) else ", or On(..., overlap=True)"))
        elif abs(base[0]) < 1e-9 and abs(base[1]) < 1e-9:  # upright, yaw drawn: no heading fits these
            w, d = sorted(_xy_extent(child.get_bounding_box(), _IDENTITY))
            if w > min(room) + 1e-9 or d > math.hypot(max(room[0], 0.0), max(room[1], 0.0)) + 1e-9:
                raise PlacementConfigError(
                    f"{where(asset, rel)}: {who} ({w:.3f} x {d:.3f} m footprint) does not fit {what} of "
                    f"{room[0]:.3f} x {room[1]:.3f} m that '{rel.parent.name}' offers inside "
                    f"edge_margin_m={rel.edge_margin_m:g} at any yaw; use a larger support or a smaller edge_margin_m"
                    + (" or a larger spread" if isinstance(rel, ClutterOn) else ""))

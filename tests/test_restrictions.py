"""Every restriction in placement_restrictions.py: one rejected and one accepted case each."""

from __future__ import annotations

import math

import pytest

from isaaclab_arena.assets.asset import Background
from isaaclab_arena.assets.object_reference import ObjectReference
from isaaclab_arena.assets.object_set import RigidObjectSet
from isaaclab_arena.adapters.asset_registry import build_registered_asset
from isaaclab_arena.relations.compiler.placement_restrictions import PlacementConfigError, check_placement_restrictions
from isaaclab_arena.relations.relations import (
    AlignWith,
    ClutterOn,
    FaceTo,
    IsAnchor,
    NextTo,
    On,
    RandomAroundSolution,
    RotateAroundSolution,
)
from isaaclab_arena.utils.pose import Pose, quat_from_euler_xyz


def yaw_pose(deg: float, position=(0.0, 0.0, 0.0)) -> Pose:
    return Pose(position, quat_from_euler_xyz(0.0, 0.0, math.radians(deg)))


def table(pose: Pose | None = Pose.identity(), size=(1.0, 0.8, 0.05), name="table", anchor=True):
    t = build_registered_asset("box", name, {"size": list(size)})
    if pose is not None:
        t.set_initial_pose(pose)
    if anchor:
        t.add_relation(IsAnchor())
    return t


def box(name: str, size=(0.08, 0.08, 0.1), **params):
    return build_registered_asset("box", name, {"size": list(size), **params})


def rejects(assets, *fragments, random_yaw_init=False):
    with pytest.raises(PlacementConfigError) as info:
        check_placement_restrictions(assets, random_yaw_init=random_yaw_init)
    msg = str(info.value)
    for fragment in fragments:
        assert fragment in msg, msg
    return msg


def accepts(assets, random_yaw_init=False):
    check_placement_restrictions(assets, random_yaw_init=random_yaw_init)


def write_room_usd(path, table_yaw_deg: float = 30.0) -> str:
    """``/room`` with a ``table`` Xform turned ``table_yaw_deg`` about Z holding a 1 x 0.8 x 0.05 m top."""
    from pxr import Gf, Usd, UsdGeom

    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    room = UsdGeom.Xform.Define(stage, "/room")
    stage.SetDefaultPrim(room.GetPrim())
    t = UsdGeom.Xform.Define(stage, "/room/table")
    t.AddTranslateOp().Set(Gf.Vec3d(0.3, 0.0, 0.7))
    t.AddRotateZOp().Set(table_yaw_deg)
    top = UsdGeom.Cube.Define(stage, "/room/table/top")
    top.CreateSizeAttr(1.0)
    top.CreateExtentAttr([Gf.Vec3f(-0.5), Gf.Vec3f(0.5)])
    top.AddScaleOp().Set(Gf.Vec3f(1.0, 0.8, 0.05))
    stage.GetRootLayer().Save()
    return str(path)


def room_reference(tmp_path, parent_pose: Pose):
    import isaaclab.sim as sim_utils

    usd = tmp_path / "room.usda"
    room = Background("room", sim_utils.UsdFileCfg(usd_path=str(usd) if usd.exists() else write_room_usd(usd)),
                      initial_pose=parent_pose)
    ref = ObjectReference("tabletop", "{ENV_REGEX_NS}/room/table", room)
    ref.add_relation(IsAnchor())
    return room, ref


# -- anchors ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("deg", [0.0, 90.0, 180.0, -90.0, 270.0])
def test_anchor_quarter_turn_yaw_accepted(deg):
    t = table(yaw_pose(deg, (0.0, 0.0, 0.4)))
    mug = box("mug").add_relation(On(t))
    accepts([t, mug])


def test_anchor_yaw_not_quarter_turn_rejected():
    t = table(yaw_pose(30.0))
    rejects([t], "asset 'table', relation is_anchor()", "not a multiple of 90 degrees about world Z")


def test_anchor_tilt_rejected():
    t = table(Pose((0, 0, 0), quat_from_euler_xyz(math.radians(90.0), 0.0, 0.0)))
    rejects([t], "asset 'table'", "not a multiple of 90 degrees about world Z with no tilt")
    t = table(Pose((0, 0, 0), quat_from_euler_xyz(0.0, math.radians(2.0), math.radians(90.0))))
    rejects([t], "asset 'table'", "no tilt")


def test_object_reference_anchor_uses_parent_pose(tmp_path):
    # the prim's own 30 degree turn is part of its bounds: accepted while the parent is a quarter turn
    room, ref = room_reference(tmp_path, yaw_pose(180.0))
    mug = box("mug", size=(0.05, 0.05, 0.05)).add_relation(On(ref))
    accepts([room, ref, mug])
    room2, ref2 = room_reference(tmp_path, yaw_pose(45.0))
    rejects([room2, ref2], "asset 'tabletop'", "its parent 'room' rotation", "not a multiple of 90 degrees")


def test_object_reference_anchor_needs_parent_pose(tmp_path):
    prop = build_registered_asset("usd_file", "prop", {"usd_path": write_room_usd(tmp_path / "prop.usda")})
    ref = ObjectReference("tabletop", "{ENV_REGEX_NS}/prop/table", prop).add_relation(IsAnchor())
    rejects([prop, ref], "asset 'tabletop', relation is_anchor()", "its parent 'prop' has no initial pose",
            "set_initial_pose(Pose(...)) on the parent")
    prop.set_initial_pose(yaw_pose(90.0, (1.0, 0.0, 0.0)))
    accepts([prop, ref])


def test_standalone_anchor_without_pose_rejected():
    t = table(pose=None)
    rejects([t], "asset 'table', relation is_anchor()", "an anchor needs a fixed initial pose")
    t.set_initial_pose(Pose.identity())
    accepts([t])


def test_anchor_cannot_carry_placement_relations():
    t, other = table(), table(name="shelf", pose=Pose((2.0, 0.0, 0.0)))
    t.add_relation(NextTo(other))
    rejects([t, other], "asset 'table', relation next_to(shelf, positive_x)", "anchors are fixed",
            "cannot also carry NextTo")


def test_relation_placed_asset_must_not_have_initial_pose():
    t = table()
    mug = box("mug", initial_pose={"position_xyz": [0.0, 0.0, 0.5]}).add_relation(On(t))
    rejects([t, mug], "asset 'mug', relation on(table)", "must not have an initial_pose")
    accepts([t, box("mug").add_relation(On(t))])


def test_mesh_background_cannot_have_relations():
    bg = build_registered_asset("static_box", "floor", {"size": [4.0, 4.0, 0.1], "collision_mode": "mesh"})
    bg.add_relation(IsAnchor())
    rejects([bg], "asset 'floor'", "collision_mode='mesh' cannot have relations", "ObjectReference")
    accepts([build_registered_asset("static_box", "floor", {"size": [4.0, 4.0, 0.1], "collision_mode": "mesh"})])


# -- ClutterOn ---------------------------------------------------------------------------------------------------
def test_clutter_on_must_be_only_spatial_relation():
    t = table()
    mug = box("mug").add_relation(ClutterOn(t)).add_relation(On(t))
    rejects([t, mug], "asset 'mug', relation clutter_on(table)", "ClutterOn must be the object's only spatial",
            "also has on(table)")
    ok = box("mug").add_relation(ClutterOn(t)).add_relation(RotateAroundSolution(yaw_rad=0.3))
    accepts([t, ok])


def test_clutter_on_rejects_random_around_solution():
    t = table()
    mug = box("mug").add_relation(ClutterOn(t)).add_relation(RandomAroundSolution(z_half_m=0.01))
    rejects([t, mug], "asset 'mug'", "ClutterOn cannot be combined with RandomAroundSolution")


def test_clutter_on_roll_needs_bbox_collision():
    t = table()
    tilted = RotateAroundSolution(roll_rad=math.pi / 2)
    mesh = box("mug", collision_mode="mesh").add_relation(ClutterOn(t)).add_relation(tilted)
    rejects([t, mesh], "asset 'mug'", "roll or pitch on a ClutterOn object requires collision_mode='bbox'")
    bbox = box("mug", collision_mode="bbox").add_relation(ClutterOn(t)).add_relation(RotateAroundSolution(roll_rad=1.0))
    accepts([t, bbox])
    yaw_mesh = box("mug", collision_mode="mesh").add_relation(ClutterOn(t)).add_relation(RotateAroundSolution(yaw_rad=1.0))
    accepts([t, yaw_mesh])


def test_clutter_support_must_be_anchor_or_relation_placed():
    t = table()
    obstacle = box("crate", size=(0.4, 0.4, 0.2), initial_pose={"position_xyz": [2.0, 0.0, 0.1]})
    mug = box("mug").add_relation(ClutterOn(obstacle))
    rejects([t, obstacle, mug], "asset 'mug', relation clutter_on(crate)",
            "the support 'crate' must be an anchor (IsAnchor) or placed by relations")
    tray = box("tray", size=(0.4, 0.3, 0.02)).add_relation(On(t))
    accepts([t, tray, box("mug").add_relation(ClutterOn(tray, spread=0.5))])


def test_clutter_support_cannot_use_clutter_on():
    t = table()
    tray = box("tray", size=(0.4, 0.3, 0.02)).add_relation(ClutterOn(t))
    mug = box("mug").add_relation(ClutterOn(tray))
    rejects([t, tray, mug], "asset 'mug'", "the support 'tray' itself uses ClutterOn")


def test_movable_clutter_support_must_stay_upright_quarter_turn():
    t = table()
    target = box("target").add_relation(On(t))
    tray = box("tray", size=(0.4, 0.3, 0.02)).add_relation(On(t)).add_relation(FaceTo(target))
    mug = box("mug").add_relation(ClutterOn(tray))
    rejects([t, target, tray, mug], "the movable support 'tray' must stay upright", "cannot use FaceTo")
    tray2 = box("tray", size=(0.4, 0.3, 0.02)).add_relation(On(t))
    mug2 = box("mug").add_relation(ClutterOn(tray2, spread=0.5))
    rejects([t, tray2, mug2], "random_yaw_init", random_yaw_init=True)
    accepts([t, tray2, mug2], random_yaw_init=False)
    tray3 = box("tray", size=(0.4, 0.3, 0.02)).add_relation(On(t)).add_relation(RotateAroundSolution(yaw_rad=0.5))
    rejects([t, tray3, box("mug").add_relation(ClutterOn(tray3))], "RotateAroundSolution that is not an upright quarter")
    tray4 = box("tray", size=(0.4, 0.3, 0.02)).add_relation(On(t)).add_relation(RotateAroundSolution(yaw_rad=math.pi / 2))
    accepts([t, tray4, box("mug").add_relation(ClutterOn(tray4, spread=0.5))])


# -- FaceTo ------------------------------------------------------------------------------------------------------
def test_face_to_at_most_once():
    t = table()
    a, b = box("a").add_relation(On(t)), box("b").add_relation(On(t))
    cam = box("cam").add_relation(On(t)).add_relation(FaceTo(a)).add_relation(FaceTo(b))
    rejects([t, a, b, cam], "asset 'cam', relation face_to(b)", "only one FaceTo")
    accepts([t, a, b, box("cam").add_relation(On(t)).add_relation(FaceTo(a))])


def test_face_to_not_on_anchor():
    t = table()
    a = box("a").add_relation(On(t))
    t.add_relation(FaceTo(a))
    rejects([t, a], "asset 'table'", "FaceTo")


def test_face_to_not_with_rotate_around_solution():
    t = table()
    a = box("a").add_relation(On(t))
    cam = box("cam").add_relation(On(t)).add_relation(FaceTo(a)).add_relation(RotateAroundSolution(yaw_rad=0.1))
    rejects([t, a, cam], "asset 'cam', relation face_to(a)", "FaceTo cannot be combined with RotateAroundSolution")


def test_face_to_target_must_be_placed_by_relations():
    t = table()
    lamp = box("lamp", initial_pose={"position_xyz": [1.0, 1.0, 0.0]})
    cam = box("cam").add_relation(On(t)).add_relation(FaceTo(lamp))
    rejects([t, lamp, cam], "asset 'cam', relation face_to(lamp)", "the target 'lamp' must also participate")
    accepts([t, box("cam").add_relation(On(t)).add_relation(FaceTo(t))])  # an anchor target participates


def test_face_to_rejects_random_xy_offsets():
    t = table()
    a = box("a").add_relation(On(t)).add_relation(RandomAroundSolution(x_half_m=0.02))
    cam = box("cam").add_relation(On(t)).add_relation(FaceTo(a))
    rejects([t, a, cam], "'a' uses RandomAroundSolution with XY offsets")
    a2 = box("a").add_relation(On(t)).add_relation(RandomAroundSolution(z_half_m=0.02))
    accepts([t, a2, box("cam").add_relation(On(t)).add_relation(FaceTo(a2))])


# -- AlignWith ---------------------------------------------------------------------------------------------------
def test_align_with_subject_not_anchor():
    t = table()
    a = box("a").add_relation(On(t))
    t.add_relation(AlignWith(a, "x"))
    rejects([t, a], "asset 'table', relation align_with(a, x)", "cannot also carry AlignWith")


def test_align_with_reference_must_be_relation_placed():
    t = table()
    lamp = box("lamp", initial_pose={"position_xyz": [1.0, 1.0, 0.0]})
    a = box("a").add_relation(On(t)).add_relation(AlignWith(lamp, "y"))
    rejects([t, lamp, a], "asset 'a', relation align_with(lamp, y)", "the reference 'lamp' must be placed by relations")
    b = box("b").add_relation(On(t))
    accepts([t, b, box("a").add_relation(On(t)).add_relation(AlignWith(b, "y", offset_m=0.1))])


# -- scene-wide checks -------------------------------------------------------------------------------------------
def test_relation_to_itself_rejected():
    mug = box("mug")
    with pytest.raises(ValueError, match="asset 'mug': NextTo refers to the asset itself"):
        mug.add_relation(NextTo(mug))
    twin = box("mug")  # another asset with the same name counts as itself too
    with pytest.raises(ValueError, match="refers to the asset itself"):
        mug.add_relation(On(twin))


def test_duplicate_names_rejected():
    t = table()
    rejects([t, box("mug"), box("mug")], "duplicate asset name 'mug'")
    accepts([t, box("mug"), box("cup")])


def test_reference_outside_scene_rejected():
    t = table()
    stray = table(name="shelf")
    mug = box("mug").add_relation(On(stray))
    rejects([t, mug], "asset 'mug', relation on(shelf)", "reference 'shelf' is not an asset of this scene")


def test_no_anchor_rejected():
    shelf = table(anchor=False)
    mug = box("mug").add_relation(On(shelf))
    rejects([shelf, mug], "no anchor", "['mug']", "IsAnchor()")
    accepts([shelf])  # nothing placed by relations: no anchor needed


def test_child_larger_than_support_rejected():
    t = table(size=(0.5, 0.5, 0.05))
    big = box("crate", size=(0.45, 0.2, 0.2)).add_relation(On(t))  # 0.45 > 0.5 - 2 * 0.05
    rejects([t, big], "asset 'crate', relation on(table)", "0.450 m along x", "larger than the 0.400 m")
    accepts([t, box("crate", size=(0.45, 0.2, 0.2)).add_relation(On(t, edge_margin_m=0.0))])
    accepts([t, box("crate", size=(0.9, 0.2, 0.2)).add_relation(On(t, overlap=True))])


def test_object_set_member_larger_than_support_rejected():
    t = table(size=(0.5, 0.5, 0.05))
    members = [box("small", size=(0.1, 0.1, 0.1)), box("wide", size=(0.1, 0.6, 0.05))]
    role = RigidObjectSet("thing", members).add_relation(On(t))
    rejects([t, role], "'wide' (member of 'thing')", "along y")
    accepts([t, RigidObjectSet("thing", members[:1]).add_relation(On(t))])

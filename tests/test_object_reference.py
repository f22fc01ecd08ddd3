"""ObjectReference: bounds and env-local pose of a prim inside its parent's USD (authored here with pxr)."""

from __future__ import annotations

import math

import pytest

import isaaclab_arena.adapters  # noqa: F401  (installs the USD geometry reader; see test_core_boundary.py without it)
from isaaclab_arena.assets.asset import Background
from isaaclab_arena.assets.object_reference import ObjectReference
from isaaclab_arena.assets.object_type import ObjectType
from isaaclab_arena.utils.pose import Pose


def write_background_usd(path, *, units_per_m: float = 1.0, table_translate=(0.5, -0.2, 0.0), table_yaw_deg=90.0,
                         table_scale=(2.0, 1.0, 0.5)) -> str:
    """A background ``/room`` whose ``table`` Xform is translated, turned about Z and scaled; its child ``top``
    is a unit cube (in metres) centred 0.75 m above the table frame. ``units_per_m`` authors in other units."""
    from pxr import Gf, Usd, UsdGeom

    u = units_per_m
    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0 / u)
    room = UsdGeom.Xform.Define(stage, "/room")
    stage.SetDefaultPrim(room.GetPrim())
    floor = UsdGeom.Cube.Define(stage, "/room/floor")
    floor.CreateSizeAttr(1.0 * u)
    floor.CreateExtentAttr([Gf.Vec3f(-0.5 * u), Gf.Vec3f(0.5 * u)])
    floor.AddTranslateOp().Set(Gf.Vec3d(0.0, 0.0, -0.5 * u))
    floor.AddScaleOp().Set(Gf.Vec3f(4.0, 4.0, 1.0))
    table = UsdGeom.Xform.Define(stage, "/room/table")
    table.AddTranslateOp().Set(Gf.Vec3d(*(v * u for v in table_translate)))
    table.AddRotateZOp().Set(float(table_yaw_deg))
    table.AddScaleOp().Set(Gf.Vec3f(*table_scale))
    top = UsdGeom.Cube.Define(stage, "/room/table/top")
    top.CreateSizeAttr(1.0 * u)
    top.CreateExtentAttr([Gf.Vec3f(-0.5 * u), Gf.Vec3f(0.5 * u)])
    top.AddTranslateOp().Set(Gf.Vec3d(0.0, 0.0, 0.75 * u))
    stage.GetRootLayer().Save()
    return str(path)


def make_background(usd_path: str, pose: Pose | None = None) -> Background:
    import isaaclab.sim as sim_utils

    return Background("room", sim_utils.UsdFileCfg(usd_path=usd_path), initial_pose=pose)


def _close(a, b, tol=1e-6):
    return all(math.isclose(x, y, abs_tol=tol) for x, y in zip(a, b, strict=True))


def _same_rotation(q, r, tol=1e-6):
    return _close(q, r, tol) or _close(q, tuple(-v for v in r), tol)


S45 = math.sqrt(0.5)


@pytest.mark.parametrize("units_per_m", [1.0, 100.0])
def test_bounds_and_pose_in_parent(tmp_path, units_per_m):
    usd = write_background_usd(tmp_path / "room.usda", units_per_m=units_per_m)
    ref = ObjectReference("table", "{ENV_REGEX_NS}/room/table", make_background(usd), ObjectType.BASE)
    box = ref.get_bounding_box()
    # top cube in table frame: [-0.5, 0.5]^2 x [0.25, 1.25], times the table's scale (2, 1, 0.5)
    assert _close(box.min_point, (-1.0, -0.5, 0.125))
    assert _close(box.max_point, (1.0, 0.5, 0.625))
    local = ref.get_local_pose_in_parent()
    assert _close(local.position_xyz, (0.5, -0.2, 0.0))
    assert _same_rotation(local.rotation_xyzw, (0.0, 0.0, S45, S45))
    # the background sits at the env origin: the world pose is the local one
    assert _close(ref.get_world_pose().position_xyz, (0.5, -0.2, 0.0))


def test_world_pose_composes_parent_pose(tmp_path):
    usd = write_background_usd(tmp_path / "room.usda")
    parent_pose = Pose((1.0, 0.0, 0.1), (0.0, 0.0, S45, S45))  # +90 deg about Z
    ref = ObjectReference("table", "{ENV_REGEX_NS}/room/table", make_background(usd, parent_pose))
    world = ref.get_world_pose()
    # (1, 0, 0.1) + Rz(90) * (0.5, -0.2, 0) = (1.2, 0.5, 0.1); rotation 90 + 90 = 180 deg about Z
    assert _close(world.position_xyz, (1.2, 0.5, 0.1))
    assert _same_rotation(world.rotation_xyzw, (0.0, 0.0, 1.0, 0.0))
    assert math.isclose(abs(world.yaw_rad()), math.pi, abs_tol=1e-6)


def test_relative_prim_path_and_leaf_prim(tmp_path):
    usd = write_background_usd(tmp_path / "room.usda", table_yaw_deg=0.0, table_scale=(1.0, 1.0, 1.0))
    bg = make_background(usd)
    ref = ObjectReference("top", "table/top", bg)
    assert ref.relative_prim_path() == "table/top"
    box = ref.get_bounding_box()
    assert _close(box.min_point, (-0.5, -0.5, -0.5)) and _close(box.max_point, (0.5, 0.5, 0.5))
    assert _close(ref.get_world_pose().position_xyz, (0.5, -0.2, 0.75))


def test_missing_prim_errors_naming_it(tmp_path):
    usd = write_background_usd(tmp_path / "room.usda")
    ref = ObjectReference("counter", "{ENV_REGEX_NS}/room/counter_top", make_background(usd))
    with pytest.raises(ValueError) as info:
        ref.get_bounding_box()
    msg = str(info.value)
    assert "counter_top" in msg and "ObjectReference 'counter'" in msg
    assert "table" in msg  # lists the prims that do exist


def test_reference_needs_usd_parent_and_fixed_pose(tmp_path):
    import isaaclab.sim as sim_utils

    from isaaclab_arena.assets.asset import Object

    cube = Object("crate", sim_utils.CuboidCfg(size=(0.2, 0.2, 0.2)))
    with pytest.raises(ValueError, match="not spawned from a USD file"):
        ObjectReference("lid", "{ENV_REGEX_NS}/crate/lid", cube).get_bounding_box()
    with pytest.raises(TypeError, match="parent_asset must be an Object"):
        ObjectReference("lid", "{ENV_REGEX_NS}/crate/lid", "crate")
    usd = write_background_usd(tmp_path / "room.usda")
    ref = ObjectReference("table", "{ENV_REGEX_NS}/room/table", make_background(usd))
    with pytest.raises(ValueError, match="set the parent's pose instead"):
        ref.set_initial_pose(Pose.identity())

"""The asset model's geometry: procedural shapes read by duck typing, USD through an injected reader, plain
geometry with explicit bounds, object sets by composition, and the shared validation helper (metres)."""

from __future__ import annotations

import math
import os
from enum import Enum

import pytest

import isaaclab.sim as sim_utils

from isaaclab_arena import ARENA_ROOT
from isaaclab_arena.adapters.spawn_geometry import USD_GEOMETRY_READER
from isaaclab_arena.assets.asset import Background, Object
from isaaclab_arena.assets.bounding_box import AxisAlignedBoundingBox
from isaaclab_arena.assets.geometry_reader import (
    MissingGeometryReaderError,
    get_geometry_reader,
    set_geometry_reader,
    shape_bounds,
)
from isaaclab_arena.assets.object_reference import ObjectReference
from isaaclab_arena.assets.object_set import RigidObjectSet
from isaaclab_arena.utils import checks
from isaaclab_arena.utils.pose import Pose

USD_DIR = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "assets", "usd")
BIN_USD = os.path.join(USD_DIR, "bin.usda")


@pytest.fixture
def no_reader():
    """Removes the installed geometry reader for one test, then puts it back."""
    previous = set_geometry_reader(None)
    try:
        yield
    finally:
        set_geometry_reader(previous)


def _bounds(box: AxisAlignedBoundingBox):
    return [round(v, 9) for v in box.min_point + box.max_point]


# -- procedural shapes: read from their own fields, no reader needed ---------------------------------------
@pytest.mark.parametrize("cfg, expected", [
    (sim_utils.CuboidCfg(size=(0.2, 0.1, 0.4)), [-0.1, -0.05, -0.2, 0.1, 0.05, 0.2]),
    (sim_utils.SphereCfg(radius=0.05), [-0.05, -0.05, -0.05, 0.05, 0.05, 0.05]),
    (sim_utils.CylinderCfg(radius=0.04, height=0.1, axis="Z"), [-0.04, -0.04, -0.05, 0.04, 0.04, 0.05]),
    (sim_utils.CapsuleCfg(radius=0.02, height=0.1, axis="X"), [-0.07, -0.02, -0.02, 0.07, 0.02, 0.02]),
    (sim_utils.ConeCfg(radius=0.03, height=0.08, axis="Y"), [-0.03, -0.04, -0.03, 0.03, 0.04, 0.03]),
    (sim_utils.MeshCuboidCfg(size=(0.3, 0.3, 0.1)), [-0.15, -0.15, -0.05, 0.15, 0.15, 0.05]),
])
def test_procedural_shapes_need_no_reader(no_reader, cfg, expected):
    assert _bounds(Object("thing", cfg).get_bounding_box()) == expected


def test_multi_asset_spawner_is_the_union_of_its_members(no_reader):
    cfg = sim_utils.MultiAssetSpawnerCfg(assets_cfg=[sim_utils.CuboidCfg(size=(0.4, 0.1, 0.1)),
                                                     sim_utils.SphereCfg(radius=0.1)])
    assert _bounds(Object("thing", cfg).get_bounding_box()) == [-0.2, -0.1, -0.1, 0.2, 0.1, 0.1]


def test_unknown_spawner_is_refused_naming_the_asset():
    class ChairCfg:  # a spawner whose geometry the project cannot read
        pass

    with pytest.raises(TypeError, match=r"asset 'chair': cannot derive bounds from spawner ChairCfg.*bounding_box="):
        Object("chair", ChairCfg()).get_bounding_box()
    assert shape_bounds(ChairCfg()) is None
    # an explicit box is the accepted way out
    box = AxisAlignedBoundingBox((-0.3, -0.3, 0.0), (0.3, 0.3, 0.9))
    assert Object("chair", ChairCfg(), bounding_box=box).get_bounding_box() == box


# -- plain geometry -----------------------------------------------------------------------------------------
def test_plain_geometry_object_and_its_refusals():
    box = AxisAlignedBoundingBox.from_size((0.1, 0.2, 0.3))
    obj = Object("crate", bounding_box=box)
    assert obj.spawn_cfg is None and obj.get_bounding_box() == box and obj.usd_path is None
    with pytest.raises(ValueError, match=r"asset 'crate': give spawn_cfg .* or bounding_box="):
        Object("crate")
    with pytest.raises(TypeError, match=r"asset 'crate': bounding_box must be an AxisAlignedBoundingBox"):
        Object("crate", bounding_box=(0.1, 0.2, 0.3))


def test_plain_geometry_cannot_be_spawned_into_a_scene():
    from isaaclab_arena.environments.scene_entities import entity_cfg

    obj = Object("crate", bounding_box=AxisAlignedBoundingBox.from_size((0.1, 0.1, 0.1)))
    with pytest.raises(ValueError, match=r"asset 'crate': it is plain geometry .* give it a spawner config"):
        entity_cfg(obj, Pose())


# -- USD through the reader -----------------------------------------------------------------------------------
def test_usd_object_without_reader_says_what_to_import(no_reader):
    obj = Object("bin", sim_utils.UsdFileCfg(usd_path=BIN_USD))
    with pytest.raises(MissingGeometryReaderError) as info:
        obj.get_bounding_box()
    msg = str(info.value)
    assert msg.startswith("asset 'bin': the bounds of USD file") and BIN_USD in msg
    assert "import isaaclab_arena.adapters" in msg and "bounding_box=" in msg
    assert "\n" not in msg


def test_object_reference_without_reader_names_the_reference(no_reader):
    bg = Background("room", sim_utils.UsdFileCfg(usd_path=os.path.join(USD_DIR, "table_background.usda")))
    ref = ObjectReference("table", "{ENV_REGEX_NS}/room/table", bg)
    with pytest.raises(MissingGeometryReaderError, match=r"ObjectReference 'table': prim '\{ENV_REGEX_NS\}/room/table'"
                       r".*import isaaclab_arena.adapters"):
        ref.get_bounding_box()


def test_an_injected_reader_replaces_the_usd_one():
    class FixedReader:
        def bounds_of(self, spawn_cfg):
            return AxisAlignedBoundingBox((0.0, 0.0, 0.0), (1.0, 2.0, 3.0))

        def prim_bounds_and_pose(self, usd_path, prim_path):
            return AxisAlignedBoundingBox((-1.0, -1.0, 0.0), (1.0, 1.0, 0.5)), Pose((0.0, 0.0, 0.25))

    previous = set_geometry_reader(FixedReader())
    try:
        obj = Background("room", sim_utils.UsdFileCfg(usd_path="anything.usda"), initial_pose=Pose((1.0, 0.0, 0.0)))
        assert obj.get_bounding_box().size == (1.0, 2.0, 3.0)
        ref = ObjectReference("top", "top", obj)
        assert ref.get_bounding_box().size == (2.0, 2.0, 0.5)
        assert ref.get_world_pose().position_xyz == (1.0, 0.0, 0.25)
    finally:
        set_geometry_reader(previous)
    assert get_geometry_reader("x", "y") is USD_GEOMETRY_READER


def test_reader_must_have_both_methods():
    with pytest.raises(TypeError, match="needs bounds_of"):
        set_geometry_reader(object())


def test_usd_reader_reads_the_bin_file():
    box = Object("bin", sim_utils.UsdFileCfg(usd_path=BIN_USD, scale=(2.0, 1.0, 1.0))).get_bounding_box()
    assert [round(v, 6) for v in box.size] == [0.6, 0.2, 0.1]  # outer 0.30 x 0.20 x 0.10 m, x scaled by 2
    with pytest.raises(FileNotFoundError, match=r"asset 'chair': USD file not found: .*no_chair.usda"):
        Object("chair", sim_utils.UsdFileCfg(usd_path="no_chair.usda")).get_bounding_box()


# -- RigidObjectSet by composition ---------------------------------------------------------------------------
def _cube(name: str, size: float) -> Object:
    return Object(name, sim_utils.CuboidCfg(size=(size, size, size)))


def test_object_set_holds_its_members():
    small, tall = _cube("small", 0.04), Object("tall", sim_utils.CuboidCfg(size=(0.05, 0.05, 0.2)))
    role = RigidObjectSet("thing", [small, tall], initial_pose=Pose((0.1, 0.0, 0.8)), collision_mode="BBOX")
    assert not isinstance(role, Object) and not hasattr(role, "spawn_cfg")
    assert role.objects == [small, tall] and role.object_type.value == "rigid"
    assert role.get_bounding_box().size[2] == pytest.approx(0.2)  # the tallest member
    assert role.member_indices_per_env(5, 0) == [0, 1, 0, 1, 0]
    assert role.initial_pose.position_xyz == (0.1, 0.0, 0.8) and role.collision_mode.value == "bbox"
    picks = RigidObjectSet("thing", [small, tall], random_choice=True)
    assert picks.member_indices_per_env(16, 7) == picks.member_indices_per_env(16, 7)
    assert set(picks.member_indices_per_env(64, 7)) == {0, 1}


def test_object_set_refusals():
    cube = _cube("c", 0.05)
    with pytest.raises(ValueError, match="RigidObjectSet 'thing': objects must hold at least one member"):
        RigidObjectSet("thing", [])
    with pytest.raises(TypeError, match="RigidObjectSet 'thing': objects must be Objects"):
        RigidObjectSet("thing", [cube, RigidObjectSet("inner", [cube])])
    with pytest.raises(ValueError, match="member 'floor' is base; only rigid objects can be members"):
        RigidObjectSet("thing", [Background("floor", sim_utils.CuboidCfg(size=(1.0, 1.0, 0.1)))])
    with pytest.raises(ValueError, match="RigidObjectSet 'thing': random_choice must be true or false, got 1"):
        RigidObjectSet("thing", [cube], random_choice=1)
    with pytest.raises(TypeError, match="ObjectReference 'lid': parent_asset must be an Object or Background with a USD"):
        ObjectReference("lid", "lid", RigidObjectSet("thing", [cube]))


# -- the shared validation helper ----------------------------------------------------------------------------
class Colour(str, Enum):
    RED = "red"
    BLUE = "blue"


@pytest.mark.parametrize("call, message", [
    (lambda: checks.number("1", "On", "clearance_m"), "On: clearance_m must be a number, got '1'"),
    (lambda: checks.number(True, "On", "clearance_m"), "On: clearance_m must be a number, got True"),
    (lambda: checks.number(math.nan, "On", "clearance_m"), "On: clearance_m must be finite, got nan"),
    (lambda: checks.number(-1, "On", "clearance_m", minimum=0.0), "On: clearance_m must be >= 0, got -1"),
    (lambda: checks.number(2, "P", "ratio", maximum=1.0, strict_maximum=True), "P: ratio must be < 1, got 2"),
    (lambda: checks.positive(0, "asset 'a'", "radius"), "asset 'a': radius must be > 0, got 0"),
    (lambda: checks.integer(2.0, "Cfg", "num_envs", minimum=1), "Cfg: num_envs must be an integer, got 2.0"),
    (lambda: checks.integer(0, "Cfg", "num_envs", minimum=1), "Cfg: num_envs must be an integer >= 1, got 0"),
    (lambda: checks.flag("yes", "On", "overlap"), "On: overlap must be true or false, got 'yes'"),
    (lambda: checks.enum_member(Colour, "green", "asset 'a'", "colour"),
     "asset 'a': colour='green' is not a valid Colour; accepted: 'red', 'blue'"),
    (lambda: checks.vector((1, 2), "asset 'a'", "size", 3), "asset 'a': size must be a list of 3 numbers, got (1, 2)"),
    (lambda: checks.vector((1, 0, 2), "asset 'a'", "size", 3, minimum=0.0, strict_minimum=True),
     "asset 'a': size[1] must be > 0, got 0"),
    (lambda: checks.identifier("my mug", "asset", "name"),
     "asset: name must be a non-empty identifier (letters, digits, _), got 'my mug'"),
])
def test_checks_refuse_with_owner_field_and_what_is_accepted(call, message):
    with pytest.raises(ValueError) as info:
        call()
    assert str(info.value) == message


def test_checks_accept_and_coerce():
    assert checks.number(3, "o", "f") == 3.0 and isinstance(checks.number(3, "o", "f"), float)
    assert checks.number(None, "o", "f", optional=True) is None
    assert checks.enum_member(Colour, "BLUE", "o", "f") is Colour.BLUE
    assert checks.vector([1, 2, 3], "o", "f", 3) == (1.0, 2.0, 3.0)
    assert checks.flag(False, "o", "f") is False and checks.integer(4, "o", "f", minimum=1) == 4
    with pytest.raises(TypeError, match="asset 'a': initial_pose must be a Pose or None, got"):
        checks.instance_of((0, 0, 0), Pose, "asset 'a'", "initial_pose", "a Pose", optional=True)


def test_asset_fields_use_the_helper():
    with pytest.raises(ValueError, match="asset 'a': object_type='static' is not a valid ObjectType; accepted: 'rigid'"):
        Object("a", bounding_box=AxisAlignedBoundingBox.from_size((1, 1, 1)), object_type="static")
    with pytest.raises(ValueError, match="asset 'a': collision_mode='sdf' is not a valid CollisionMode"):
        Object("a", bounding_box=AxisAlignedBoundingBox.from_size((1, 1, 1)), collision_mode="sdf")
    with pytest.raises(ValueError, match="asset: name must be ASCII letters, digits and _, not starting with a digit"):
        Object("", bounding_box=AxisAlignedBoundingBox.from_size((1, 1, 1)))

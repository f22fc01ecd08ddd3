"""YAML environment specs: YAML equals the equivalent Python, round trips, the registry, a real env.

Every bad input's message: tests/test_env_spec_errors.py."""

from __future__ import annotations

import math
import os

import isaaclab.sim as sim_utils
import pytest

from isaaclab_arena.assets.asset import Background, Object
from isaaclab_arena.assets.collision_mode import CollisionMode
from isaaclab_arena.assets.object_reference import ObjectReference
from isaaclab_arena.assets.object_set import RigidObjectSet
from isaaclab_arena.assets.object_type import ObjectType
from isaaclab_arena.adapters.asset_registry import (
    build_registered_asset,
    get_registered_asset,
    list_registered_assets,
    register_asset,
)
from isaaclab_arena.env_spec import ArenaEnvGraphSpec, EnvSpecError, spec_from_arena_env
from isaaclab_arena.environments.isaaclab_arena_environment import IsaacLabArenaEnvironment
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams, ReachabilityConfig
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams
from isaaclab_arena.relations.relations import (
    RELATION_KINDS,
    AlignWith,
    IsAnchor,
    NextTo,
    NotNextTo,
    On,
    PositionLimitsBox,
    PositionLimitsCylindrical,
    RotateAroundSolution,
    Side,
)
from isaaclab_arena.utils.pose import Pose
from _spec_helpers import BASE, write, write_room_usd

GREY = (0.6, 0.6, 0.6)


# -- helpers ---------------------------------------------------------------------------------------------------
def asset_signature(asset) -> dict:
    """Everything that makes two assets the same object for placement and spawning."""
    sig = {"type": type(asset).__name__, "name": asset.name, "object_type": asset.object_type,
           "collision_mode": asset.collision_mode, "initial_pose": asset.initial_pose,
           "bounds": asset.get_bounding_box(), "relations": [(type(r).__name__, r.parent.name if r.parent else None,
                                                               r.params()) for r in asset.get_relations()]}
    if isinstance(asset, ObjectReference):
        sig.update(prim_path=asset.prim_path, parent=asset.parent_asset.name, world=asset.get_world_pose())
    elif isinstance(asset, RigidObjectSet):
        sig.update(members=[asset_signature(m)["spawn_cfg"] for m in asset.objects], random=asset.random_choice)
    else:
        sig.update(spawn_cfg=asset.spawn_cfg)
    return sig


def env_signature(env: IsaacLabArenaEnvironment) -> dict:
    return {"name": env.name, "env_spacing": env.env_spacing, "physics": env.physics,
            "placer_params": env.placer_params, "assets": {a.name: asset_signature(a) for a in env.assets}}


def rigid(shape_cls, mass=0.2, color=GREY, **geometry):
    return shape_cls(**geometry, rigid_props=sim_utils.UsdPhysicsRigidBodyCfg(), mass_props=sim_utils.MassCfg(mass=mass),
                     collision_props=sim_utils.UsdPhysicsCollisionCfg(),
                     visual_material=sim_utils.PreviewSurfaceCfg(diffuse_color=color))


# -- YAML gives the same objects as the equivalent Python --------------------------------------------------------
def test_yaml_equals_equivalent_python(tmp_path):
    env = ArenaEnvGraphSpec.from_yaml(write(tmp_path, BASE)).to_arena_env()

    table = Background("table", sim_utils.CuboidCfg(size=(1.0, 0.8, 0.75),
                                                    collision_props=sim_utils.UsdPhysicsCollisionCfg(),
                                                    visual_material=sim_utils.PreviewSurfaceCfg(diffuse_color=GREY)),
                       initial_pose=Pose((0.0, 0.0, 0.375)))
    mug = Object("mug", rigid(sim_utils.CuboidCfg, mass=0.25, size=(0.08, 0.08, 0.1)))
    bowl = Object("bowl", rigid(sim_utils.CylinderCfg, color=(0.8, 0.3, 0.2), radius=0.07, height=0.05, axis="Z"))
    table.add_relation(IsAnchor())
    mug.add_relation(On(table))
    bowl.add_relation(NextTo(mug, side=Side.NEGATIVE_Y, distance_m=0.03))
    bowl.add_relation(On(table, clearance_m=0.02))
    python_env = IsaacLabArenaEnvironment("mug_bowl", [table, mug, bowl])

    assert env_signature(env) == env_signature(python_env)
    got = {a.name: a for a in env.assets}
    assert got["mug"].get_bounding_box().size == pytest.approx((0.08, 0.08, 0.1))
    assert got["bowl"].get_bounding_box().size == pytest.approx((0.14, 0.14, 0.05))
    assert got["bowl"].get_relations()[0].side is Side.NEGATIVE_Y
    assert got["mug"].registry_name == "box" and got["mug"].registry_params == {"size": [0.08, 0.08, 0.1],
                                                                                 "mass_kg": 0.25}


def test_every_relation_kind_and_alias_from_yaml(tmp_path):
    text = BASE + """\
  - kind: position_limits
    subject: mug
    x_limits: [-0.3, null]
  - kind: position_limits_cylindrical
    subject: bowl
    params: {center_x: 0.0, center_y: 0.0, radius_max: 0.45}
  - kind: not_next_to
    subject: mug
    reference: bowl
    side: positive_y
  - kind: align_with
    subject: mug
    reference: bowl
    params: {axis: x, tolerance_m: 0.05}
  - kind: rotate_around_solution
    subject: bowl
    yaw_rad: 1.5
"""
    env = ArenaEnvGraphSpec.from_yaml(write(tmp_path, text)).to_arena_env()
    mug, bowl = env.get_asset("mug"), env.get_asset("bowl")
    assert mug.get_relations()[1:] == [PositionLimitsBox(x_limits=(-0.3, None)), NotNextTo(bowl, side="positive_y"),
                                       AlignWith(bowl, "x", tolerance_m=0.05)]
    assert bowl.get_relations()[2:] == [PositionLimitsCylindrical(0.0, 0.0, radius_max=0.45),
                                        RotateAroundSolution(yaw_rad=1.5)]
    assert mug.get_relations()[2].side is Side.POSITIVE_Y


def test_anchor_without_pose_gets_identity_and_other_sections(tmp_path):
    room = write_room_usd(tmp_path / "room.usda")
    text = f"""\
env_name: sets_and_refs
num_envs: 4
env_spacing: 2.5
default_physics_backend: ovphysx
background:
  id: room
  registry_name: usd_background
  params: {{usd_path: {room}}}
objects:
  - id: crate
    registry_name: box
    params: {{size: [0.3, 0.3, 0.3]}}
object_sets:
  - id: thing
    members: [box_flat, cube_4cm]
    random_choice: true
object_references:
  - id: tabletop
    parent_id: room
    prim_path: table
    object_type: base
relations:
  - {{kind: is_anchor, subject: crate}}
  - {{kind: is_anchor, subject: tabletop}}
  - {{kind: 'on', subject: thing, reference: tabletop}}
placer_params:
  placement_seed: 7
  random_yaw_init: true
  min_unique_layouts_per_env: 3
  solver_params: {{clearance_m: 0.0, collision_mode: mesh, checkpoint_iters: [10, 20]}}
  reachability_config: {{grasp_z_offset_m: 0.05}}
"""
    spec = ArenaEnvGraphSpec.from_yaml(write(tmp_path, text))
    assert (spec.num_envs, spec.env_spacing, spec.default_physics_backend) == (4, 2.5, "ovphysx")
    env = spec.to_arena_env()
    assert env.get_asset("crate").initial_pose == Pose.identity()  # YAML anchors default to identity
    ref = env.get_asset("tabletop")
    assert isinstance(ref, ObjectReference) and ref.object_type is ObjectType.BASE
    assert ref.prim_path == "{ENV_REGEX_NS}/usd_background/table"  # relative path: background registry name
    assert ref.get_bounding_box().size == pytest.approx((1.0, 0.6, 0.04))
    assert ref.get_world_pose().position_xyz == pytest.approx((0.2, 0.0, 0.0))
    thing = env.get_asset("thing")
    assert isinstance(thing, RigidObjectSet) and thing.random_choice
    assert [m.registry_name for m in thing.objects] == ["box_flat", "cube_4cm"]
    pp = env.placer_params
    assert (pp.placement_seed, pp.random_yaw_init, pp.min_unique_layouts_per_env) == (7, True, 3)
    assert pp.solver_params.clearance_m == 0.0 and pp.solver_params.collision_mode is CollisionMode.MESH
    assert pp.solver_params.checkpoint_iters == (10, 20) and pp.reachability_config.grasp_z_offset_m == 0.05
    assert pp.max_placement_attempts == ObjectPlacerParams().max_placement_attempts
    assert (env.env_spacing, env.physics) == (2.5, "ovphysx")


def test_env_name_defaults_to_file_stem_and_inline_params(tmp_path):
    text = BASE.replace("env_name: mug_bowl\n", "").replace("params: {clearance_m: 0.02}", "clearance_m: 0.02")
    spec = ArenaEnvGraphSpec.from_yaml(write(tmp_path, text, name="kitchen_scene.yaml"))
    env = spec.to_arena_env()
    assert env.name == "kitchen_scene"
    assert env.get_asset("bowl").get_relations()[1] == On(env.get_asset("table"), clearance_m=0.02)


def test_placement_validators_block_maps_to_placer_params(tmp_path):
    text = BASE + "placement_validators:\n  enabled_checks: [on_relation, no_overlap]\n  required_checks: [no_overlap]\n"
    env = ArenaEnvGraphSpec.from_yaml(write(tmp_path, text)).to_arena_env()
    assert env.placer_params.enabled_checks == ["on_relation", "no_overlap"]
    assert env.placer_params.required_checks == ["no_overlap"]


def test_to_arena_env_builds_fresh_objects(tmp_path):
    spec = ArenaEnvGraphSpec.from_yaml(write(tmp_path, BASE))
    a, b = spec.to_arena_env(), spec.to_arena_env()
    assert a.get_asset("mug") is not b.get_asset("mug")
    assert len(a.get_asset("mug").get_relations()) == 1 and env_signature(a) == env_signature(b)


# -- round trips -------------------------------------------------------------------------------------------------
def test_yaml_round_trip(tmp_path):
    spec = ArenaEnvGraphSpec.from_yaml(write(tmp_path, BASE + "placer_params: {placement_seed: 3}\n"))
    out = spec.to_yaml(tmp_path / "out.yaml")
    text = open(out).read()
    assert "kind: 'on'" in text  # written quoted, so YAML reads a string
    again = ArenaEnvGraphSpec.from_yaml(out)
    assert again == spec
    assert env_signature(again.to_arena_env()) == env_signature(spec.to_arena_env())
    assert [f for f in os.listdir(tmp_path) if f.endswith(".tmp")] == []


def test_a_written_spec_gets_the_mode_the_users_umask_gives(tmp_path):
    """As ``open(path, "w")`` would (the writer's ``mkstemp`` gave 0600: readable by its owner only)."""
    spec = ArenaEnvGraphSpec.from_yaml(write(tmp_path, BASE))
    old = os.umask(0o022)
    try:
        out = spec.to_yaml(tmp_path / "shared.yaml")
        os.umask(0o077)
        private = spec.to_yaml(tmp_path / "private.yaml")
    finally:
        os.umask(old)
    assert os.stat(out).st_mode & 0o777 == 0o644
    assert os.stat(private).st_mode & 0o777 == 0o600


def test_python_env_round_trip(tmp_path):
    room_usd = write_room_usd(tmp_path / "room.usda")
    room = build_registered_asset("usd_background", "room", {"usd_path": room_usd})
    room.set_initial_pose(Pose((0.5, 0.0, 0.0), (0.0, 0.0, 1.0, 0.0)))  # 180 degrees about Z, set after building
    top = ObjectReference("tabletop", "{ENV_REGEX_NS}/room/table", room, ObjectType.BASE).add_relation(IsAnchor())
    mug = build_registered_asset("box", "mug", {"size": [0.08, 0.08, 0.1], "collision_mode": "mesh"})
    bowl = build_registered_asset("cylinder", "bowl", {"radius": 0.07, "height": 0.05})
    lamp = build_registered_asset("sphere", "lamp", {"radius": 0.05,
                                                     "initial_pose": {"position_xyz": [2.0, 0.0, 0.05]}})
    role = RigidObjectSet("fruit", [build_registered_asset("cube_4cm", "a"), build_registered_asset("box_tall", "b")])
    mug.add_relation(On(top, edge_margin_m=0.1)).add_relation(RotateAroundSolution(yaw_rad=0.7))
    bowl.add_relation(On(top)).add_relation(NextTo(mug, side="positive_y", cross_position_ratio=0.5))
    role.add_relation(On(top)).add_relation(PositionLimitsBox(y_limits=(None, 0.3)))
    params = ObjectPlacerParams(placement_seed=11, resolve_on_reset=False,
                                solver_params=RelationSolverParams(max_iters=200, verbose=False),
                                reachability_config=ReachabilityConfig(ik_position_threshold_m=0.02))
    env = IsaacLabArenaEnvironment("round_trip", [room, top, mug, bowl, lamp, role], placer_params=params,
                                   env_spacing=3.0)

    spec = spec_from_arena_env(env, num_envs=8)
    path = spec.to_yaml(tmp_path / "saved.yaml")
    loaded = ArenaEnvGraphSpec.from_yaml(path)
    assert loaded == spec and loaded.num_envs == 8
    assert env_signature(loaded.to_arena_env()) == env_signature(env)
    # only what differs from the defaults is written
    d = loaded.to_dict()
    assert d["placer_params"] == {"solver_params": {"max_iters": 200, "verbose": False}, "placement_seed": 11,
                                  "resolve_on_reset": False, "reachability_config": {"ik_position_threshold_m": 0.02}}
    assert {"kind": "on", "subject": "bowl", "reference": "tabletop"} in d["relations"]
    assert d["background"]["params"]["initial_pose"] == {"position_xyz": [0.5, 0.0, 0.0],
                                                         "rotation_xyzw": [0.0, 0.0, 1.0, 0.0]}


def _shipped_specs() -> list[str]:
    import glob

    from isaaclab_arena import ARENA_ROOT

    return sorted(glob.glob(os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "**", "*.yaml"), recursive=True))


@pytest.mark.parametrize("spec_path", _shipped_specs(), ids=os.path.basename)
def test_shipped_specs_round_trip(tmp_path, spec_path):
    spec = ArenaEnvGraphSpec.from_yaml(spec_path)
    env = spec.to_arena_env()
    saved = spec_from_arena_env(env, num_envs=spec.num_envs).to_yaml(tmp_path / "saved.yaml")
    assert env_signature(ArenaEnvGraphSpec.from_yaml(saved).to_arena_env()) == env_signature(env)


def test_spec_from_env_rejects_what_yaml_cannot_express():
    handmade = Object("mug", rigid(sim_utils.CuboidCfg, size=(0.1, 0.1, 0.1)))
    with pytest.raises(EnvSpecError, match="asset 'mug'.*was not made from the asset registry"):
        spec_from_arena_env(IsaacLabArenaEnvironment("e", [handmade]))
    params = ObjectPlacerParams(solver_params=RelationSolverParams(strategies={}))
    with pytest.raises(EnvSpecError, match="placer_params.solver_params.strategies"):
        spec_from_arena_env(IsaacLabArenaEnvironment("e", [], placer_params=params))
    member = build_registered_asset("box", "big", {"size": [0.2, 0.2, 0.2]})
    with pytest.raises(EnvSpecError, match="member 'big' must be a registered asset built without parameters"):
        spec_from_arena_env(IsaacLabArenaEnvironment("e", [RigidObjectSet("s", [member])]))


def test_to_yaml_never_leaves_half_a_file(tmp_path):
    spec = ArenaEnvGraphSpec.from_yaml(write(tmp_path, BASE))
    target = tmp_path / "kept.yaml"
    target.write_text("previous contents\n")
    spec.placer_params = {"placement_seed": object()}  # not representable in YAML: the dump fails
    with pytest.raises(Exception):
        spec.to_yaml(target)
    assert target.read_text() == "previous contents\n"
    spec.placer_params = {}
    (tmp_path / "a_dir").mkdir()
    with pytest.raises(OSError):
        spec.to_yaml(tmp_path / "a_dir")  # os.replace onto a folder fails after the temp file was written
    assert sorted(f for f in os.listdir(tmp_path) if ".tmp" in f) == []


# -- asset registry ----------------------------------------------------------------------------------------------
def test_registry_lists_and_rejects():
    names = list_registered_assets()
    for entry in ("box", "cylinder", "sphere", "usd_file", "static_box", "usd_background"):
        assert entry in names
    with pytest.raises(KeyError) as info:
        get_registered_asset("boxx")
    assert "Unknown asset registry_name 'boxx' (did you mean 'box'?)" in str(info.value)
    assert "cylinder" in str(info.value)
    with pytest.raises(ValueError, match="asset 'mug' \\(registry_name 'box'\\): unknown parameter 'mass'; accepted "
                                         "parameters: size, mass_kg, color, initial_pose, collision_mode"):
        build_registered_asset("box", "mug", {"size": [0.1, 0.1, 0.1], "mass": 1.0})
    with pytest.raises(ValueError, match="asset 'ball'.*radius must be > 0"):
        build_registered_asset("sphere", "ball", {"radius": -0.1})
    with pytest.raises(ValueError, match="asset 'ball'.*missing required parameter 'radius'"):
        build_registered_asset("sphere", "ball", {})
    with pytest.raises(ValueError, match="asset 'ball'.*initial_pose needs position_xyz"):
        build_registered_asset("sphere", "ball", {"radius": 0.1, "initial_pose": {"rotation_xyzw": [0, 0, 0, 1]}})
    with pytest.raises(ValueError, match="asset 'ball'.*unit quaternion"):
        build_registered_asset("sphere", "ball", {"radius": 0.1, "initial_pose": {"position_xyz": [0, 0, 0],
                                                                                   "rotation_xyzw": [0, 0, 0, 2]}})
    with pytest.raises(ValueError, match="asset 'prop'.*usd_path 'missing.usda' does not exist"):
        build_registered_asset("usd_file", "prop", {"usd_path": "missing.usda"})


def test_registry_entries_geometry_and_duplicates(tmp_path):
    cyl = build_registered_asset("cylinder", "can", {"radius": 0.03, "height": 0.12, "mass_kg": 0.4})
    assert cyl.get_bounding_box().size == pytest.approx((0.06, 0.06, 0.12))
    assert cyl.spawn_cfg.mass_props.mass == 0.4 and cyl.spawn_cfg.rigid_props is not None
    ball = build_registered_asset("sphere", "ball", {"radius": 0.05})
    assert ball.get_bounding_box().size == pytest.approx((0.1, 0.1, 0.1)) and ball.object_type is ObjectType.RIGID
    wall = build_registered_asset("static_box", "wall", {"size": [2.0, 0.1, 1.0]})
    assert isinstance(wall, Background) and wall.object_type is ObjectType.BASE and wall.spawn_cfg.rigid_props is None
    prop = build_registered_asset("usd_file", "prop", {"usd_path": write_room_usd(tmp_path / "prop.usda"),
                                                       "scale": 0.5})
    assert prop.get_bounding_box().size == pytest.approx((0.3, 0.5, 0.02))  # room bounds (0.6 x 1.0 x 0.04) * 0.5

    @register_asset("test_env_spec_widget")
    def widget(instance_name, size=0.1):
        return build_registered_asset("box", instance_name, {"size": [size] * 3})

    assert get_registered_asset("test_env_spec_widget") is widget
    with pytest.raises(ValueError, match="registry name 'box' is already taken"):
        register_asset("box")(widget)
    with pytest.raises(ValueError, match="asset 'w' \\(registry_name 'test_env_spec_widget'\\): unknown parameter "
                                         "'sise'; accepted parameters: size"):
        build_registered_asset("test_env_spec_widget", "w", {"sise": 1})


def test_from_dict_without_file(tmp_path):
    spec = ArenaEnvGraphSpec.from_yaml(write(tmp_path, BASE))
    assert ArenaEnvGraphSpec.from_dict(spec.to_dict()) == spec
    data = spec.to_dict()
    data["relations"][1]["kind"] = True
    with pytest.raises(EnvSpecError) as info:
        ArenaEnvGraphSpec.from_dict(data, source="generated")
    assert str(info.value).startswith("generated: relations[1]") and "quote it: kind: 'on'" in str(info.value)


def test_every_relation_kind_is_accepted_by_the_loader():
    # each YAML kind maps to a class whose parameters the loader can name
    from isaaclab_arena.env_spec.parse_relations import relation_parameters

    for kind, cls in RELATION_KINDS.items():
        assert cls.yaml_kind == kind
        names = relation_parameters(cls)
        assert "parent" not in names and all(isinstance(n, str) for n in names)
    assert math.isclose(relation_parameters(On)["clearance_m"], 0.01)


# -- procedural entries in a real kit-less Isaac Lab env -----------------------------------------------------------
PHYSICS_SPEC = """\
env_name: procedural_drop
background:
  id: table
  registry_name: static_box
  params:
    size: [1.0, 0.8, 0.4]
    initial_pose: {position_xyz: [0.0, 0.0, 0.2]}
objects:
  - id: block
    registry_name: box
    params: {size: [0.1, 0.06, 0.04], initial_pose: {position_xyz: [0.2, 0.1, 0.43]}}
  - id: can
    registry_name: cylinder
    params: {radius: 0.03, height: 0.12, mass_kg: 0.3, initial_pose: {position_xyz: [-0.2, 0.1, 0.47]}}
  - id: ball_stand
    registry_name: static_box
    params: {size: [0.2, 0.2, 0.1], initial_pose: {position_xyz: [0.0, -0.2, 0.45]}}
  - id: ball
    registry_name: sphere
    params: {radius: 0.04, initial_pose: {position_xyz: [0.0, -0.2, 0.55]}}
relations:
  - {kind: is_anchor, subject: table}
"""


@pytest.mark.sim
def test_procedural_entries_rest_where_their_bounds_say(tmp_path):
    """Spawned from the spec, each shape settles with its bounds' bottom on the surface below it (top of the
    table at z = 0.40 m, top of the static stand at z = 0.50 m): the collider matches the geometry the
    placement uses."""
    import torch
    from isaaclab.app import launch_simulation

    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg

    arena_env = ArenaEnvGraphSpec.from_yaml(write(tmp_path, PHYSICS_SPEC)).to_arena_env()
    expected = {name: surface - arena_env.get_asset(name).get_bounding_box().min_point[2]
                for name, surface in (("block", 0.40), ("can", 0.40), ("ball", 0.50))}
    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=2, env_spacing=2.0,
                                                            gym_id="test_env_spec_procedural"))
    env_cfg = builder.compose_manager_cfg()
    with launch_simulation(env_cfg, {"headless": True, "device": "cpu"}):
        env = builder.make_registered(env_cfg)
        try:
            env.reset()
            zero = torch.zeros(2, 0)
            for _ in range(60):
                env.step(zero)
            scene = env.unwrapped.scene
            for name, z in expected.items():
                local = scene[name].data.root_pos_w.torch - scene.env_origins
                speed = scene[name].data.root_lin_vel_w.torch.norm(dim=-1)
                assert local[:, 2].tolist() == pytest.approx([z, z], abs=3e-3), name
                assert float(speed.max()) < 0.05, name
        finally:
            env.close()

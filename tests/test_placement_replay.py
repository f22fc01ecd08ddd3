"""Replay order (each resetting env takes the next layout of one shared, wrapping queue, in request order) and the
replay configuration checks (recorded layouts exclude re-solving and a placement seed)."""

from __future__ import annotations

import json

import pytest
import torch

from isaaclab_arena.assets.asset import Background, Object
from isaaclab_arena.assets.bounding_box import AxisAlignedBoundingBox
from isaaclab_arena.assets.object_set import RigidObjectSet
from isaaclab_arena.relations.placement_layouts import PlacementLayouts, PlacementLayoutsError
from isaaclab_arena.offline_placement.placement_replay import (
    PlacementReplayQueue,
    ReplayConfigError,
    check_replay_configuration,
    replay_root_poses,
    zero_root_velocities,
)
from isaaclab_arena.relations.relations import ClutterOn, IsAnchor, On, RandomAroundSolution, RequiresReachability
from isaaclab_arena.utils.pose import Pose

BOX = AxisAlignedBoundingBox.from_size((0.06, 0.06, 0.1))


# -- replay order --------------------------------------------------------------------------------------

def test_full_resets_follow_seed_000_order():
    queue = PlacementReplayQueue(num_layouts=4, num_envs=3)
    all_envs = torch.arange(3)
    assert queue.next_layouts(all_envs).tolist() == [0, 1, 2]
    assert queue.next_layouts(all_envs).tolist() == [3, 0, 1]
    assert queue.next_layouts(all_envs).tolist() == [2, 3, 0]
    assert queue.consumed == 9 and queue.cursor == 1


def test_partial_reset_consumes_only_its_envs():
    queue = PlacementReplayQueue(num_layouts=4, num_envs=3)
    assert queue.next_layouts(torch.arange(3)).tolist() == [0, 1, 2]
    # Only env 2 resets: it gets the next layout, nobody else consumes one.
    assert queue.next_layouts(torch.tensor([2])).tolist() == [3]
    # Then envs 0 and 2 (in request order 2, 0): the queue wraps.
    assert queue.next_layouts(torch.tensor([2, 0])).tolist() == [0, 1]
    assert queue.next_layouts(torch.arange(3)).tolist() == [2, 3, 0]
    assert queue.next_layouts(torch.tensor([], dtype=torch.long)).tolist() == []
    assert queue.cursor == 1


def test_env_count_multiple_of_layouts_repeats_same_assignment():
    queue = PlacementReplayQueue(num_layouts=2, num_envs=4)
    first = queue.next_layouts(torch.arange(4)).tolist()
    assert first == [0, 1, 0, 1]
    assert queue.next_layouts(torch.arange(4)).tolist() == first


def test_slice_and_list_env_ids_and_rewind():
    queue = PlacementReplayQueue(num_layouts=5, num_envs=3)
    assert queue.next_layouts(slice(None)).tolist() == [0, 1, 2]
    assert queue.next_layouts([1]).tolist() == [3]
    assert queue.next_layouts(None).tolist() == [4, 0, 1]
    queue.reset()
    assert queue.next_layouts([0, 1]).tolist() == [0, 1]
    with pytest.raises(ValueError, match="num_layouts must be a positive integer"):
        PlacementReplayQueue(num_layouts=0)
    with pytest.raises(ValueError, match="build the queue with num_envs"):
        PlacementReplayQueue(num_layouts=2).next_layouts(slice(None))


def test_replay_root_poses_are_the_recorded_layouts_plus_origins():
    pos = torch.tensor([[[0.1, 0.0, 0.8], [0.0, 0.1, 0.8]], [[0.2, 0.0, 0.8], [0.0, 0.2, 0.8]],
                        [[0.3, 0.0, 0.8], [0.0, 0.3, 0.8]], [[0.4, 0.0, 0.8], [0.0, 0.4, 0.8]]])
    rot = torch.tensor([0.0, 0.0, 0.0, 1.0]).expand(4, 2, 4).clone()
    layouts = PlacementLayouts(("mug", "box"), pos, rot)
    queue = PlacementReplayQueue(len(layouts), num_envs=3)
    queue.next_layouts(torch.arange(3))
    env_ids = torch.tensor([0, 2])
    ids = queue.next_layouts(env_ids)  # [3, 0]
    origins = torch.tensor([[10.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 5.0, 0.0]])[env_ids]
    poses = replay_root_poses(layouts, ids, origins)
    assert set(poses) == {"mug", "box"} and poses["mug"].shape == (2, 7)
    torch.testing.assert_close(poses["mug"][:, :3], torch.tensor([[10.4, 0.0, 0.8], [0.1, 5.0, 0.8]]))
    torch.testing.assert_close(poses["box"][:, :3], torch.tensor([[10.0, 0.4, 0.8], [0.0, 5.1, 0.8]]))
    torch.testing.assert_close(poses["box"][:, 3:], rot[:2, 1])
    # The layouts themselves are not modified by adding origins.
    torch.testing.assert_close(layouts.position("mug")[3], torch.tensor([0.4, 0.0, 0.8]))
    assert torch.count_nonzero(zero_root_velocities(2)) == 0 and zero_root_velocities(2).shape == (2, 6)


# -- replay configuration ------------------------------------------------------------------------------

def _scene(mug_extra=None):
    table = Background("table", spawn_cfg=object(), bounding_box=AxisAlignedBoundingBox.from_size((1.0, 1.0, 0.8)))
    table.add_relation(IsAnchor())
    mug = Object("mug", spawn_cfg=object(), bounding_box=BOX)
    mug.add_relation(On(table))
    cube = Object("cube", spawn_cfg=object(), bounding_box=BOX)
    cube.add_relation(ClutterOn(table))
    shelf = Object("shelf", spawn_cfg=object(), bounding_box=BOX, initial_pose=Pose((1.0, 0.0, 0.0)))
    for rel in mug_extra or []:
        mug.add_relation(rel)
    return [table, mug, cube, shelf]


def _layouts(names=("mug", "cube"), n=3) -> PlacementLayouts:
    pos = torch.zeros((n, len(names), 3))
    rot = torch.tensor([0.0, 0.0, 0.0, 1.0]).expand(n, len(names), 4).clone()
    return PlacementLayouts(tuple(names), pos, rot)


def test_valid_configuration_returns_layouts(tmp_path):
    layouts = _layouts()
    assert check_replay_configuration(layouts, assets=_scene(), resolve_on_reset=True,
                                      placement_seeds={"--placement_seed": None}) is layouts
    path = tmp_path / "l.jsonl"
    layouts.write_episode_jsonl(path, source="settled")
    loaded = check_replay_configuration(assets=_scene(), layouts_path=str(path),
                                        resolve_on_reset={"--resolve_on_reset": None,
                                                          "placer_params.resolve_on_reset": True})
    assert loaded.object_names == ("mug", "cube") and len(loaded) == 3


def test_both_path_and_object_rejected(tmp_path):
    with pytest.raises(ReplayConfigError, match="both a placement layouts path .* and a PlacementLayouts object"):
        check_replay_configuration(_layouts(), assets=_scene(), layouts_path=str(tmp_path / "l.jsonl"))
    with pytest.raises(ReplayConfigError, match="no layouts"):
        check_replay_configuration(assets=_scene())


def test_missing_placed_object_rejected():
    with pytest.raises(ReplayConfigError, match="missing placed object 'cube'"):
        check_replay_configuration(_layouts(("mug",)), assets=_scene())


def test_unknown_recorded_object_rejected():
    with pytest.raises(ReplayConfigError, match="Unknown cached object 'plate'"):
        check_replay_configuration(_layouts(("mug", "cube", "plate")), assets=_scene())


def test_recorded_anchor_rejected():
    with pytest.raises(ReplayConfigError, match="recorded object 'table' is the anchor"):
        check_replay_configuration(_layouts(("mug", "cube", "table")), assets=_scene())


def test_object_set_rejected():
    scene = _scene()
    members = [Object("m1", spawn_cfg=object(), bounding_box=BOX), Object("m2", spawn_cfg=object(), bounding_box=BOX)]
    fruit = RigidObjectSet("fruit", members)
    fruit.add_relation(On(scene[0]))
    with pytest.raises(ReplayConfigError, match="recorded asset 'fruit' is a RigidObjectSet; replay needs concrete"):
        check_replay_configuration(_layouts(("mug", "cube", "fruit")), assets=scene + [fruit])


def test_random_around_solution_rejected():
    scene = _scene(mug_extra=[RandomAroundSolution(x_half_m=0.01)])
    with pytest.raises(ReplayConfigError, match="recorded asset 'mug' uses RandomAroundSolution"):
        check_replay_configuration(_layouts(), assets=scene)


@pytest.mark.parametrize("setting", [False, {"--no-resolve_on_reset": False},
                                     {"--resolve_on_reset": None, "placer_params.resolve_on_reset": False}])
def test_resolve_on_reset_false_rejected(setting):
    name = "resolve_on_reset" if setting is False else [k for k, v in setting.items() if v is False][0]
    with pytest.raises(ReplayConfigError, match=f"{name} is False; recorded layouts need resolve_on_reset=True"):
        check_replay_configuration(_layouts(), assets=_scene(), resolve_on_reset=setting)


@pytest.mark.parametrize("name", ["--placement_seed", "ArenaEnvBuilderCfg.placement_seed",
                                  "placer_params.placement_seed"])
def test_explicit_placement_seed_rejected(name):
    seeds = {"--placement_seed": None, "ArenaEnvBuilderCfg.placement_seed": None, "placer_params.placement_seed": None}
    seeds[name] = 42
    with pytest.raises(ReplayConfigError, match=f"{name}=42 is set; remove explicit placement_seed"):
        check_replay_configuration(_layouts(), assets=_scene(), placement_seeds=seeds)


def test_embodiment_with_marker_must_be_recorded_with_every_root():
    class TwoRootRobot(Object):
        def get_scene_root_keys(self):
            return ["robot", "robot_base"]

    robot = TwoRootRobot("robot", spawn_cfg=object(), bounding_box=BOX)
    robot.add_relation(RequiresReachability())
    with pytest.raises(ReplayConfigError, match="embodiment 'robot' carries placement relations or markers"):
        check_replay_configuration(_layouts(), assets=_scene(), embodiment=robot)
    with pytest.raises(ReplayConfigError, match=r"asset 'robot' owns roots \['robot', 'robot_base'\] but the "
                                                r"recording lacks \['robot_base'\]"):
        check_replay_configuration(_layouts(("mug", "cube", "robot")), assets=_scene(), embodiment=robot)
    ok = check_replay_configuration(_layouts(("mug", "cube", "robot", "robot_base")), assets=_scene(),
                                    embodiment=robot)
    assert len(ok.object_names) == 4


def test_non_finite_layout_mutated_after_construction_rejected():
    layouts = _layouts()
    layouts.positions[1, 0, 2] = float("nan")
    with pytest.raises(PlacementLayoutsError, match="layout 1: object 'mug': position_xyz is not finite"):
        check_replay_configuration(layouts, assets=_scene())


def test_bad_file_error_names_line(tmp_path):
    path = tmp_path / "l.jsonl"
    good = {"variations": {"scene.relation_placement": {"poses": {
        "mug": {"position_xyz": [0, 0, 0.8], "rotation_xyzw": [0, 0, 0, 1]},
        "cube": {"position_xyz": [0, 0, 0.8], "rotation_xyzw": [0, 0, 0, 1]}}}}}
    path.write_text(json.dumps(good) + "\n" + json.dumps({"episode": 1}) + "\n")
    with pytest.raises(PlacementLayoutsError, match=r"l.jsonl:2: no placement block"):
        check_replay_configuration(assets=_scene(), layouts_path=str(path))


# -- record -> replay round trip in a real kit-less Isaac Lab env (OV PhysX, CPU) ------------------------

def _build_and_run(spec: str, layouts_path: str, gym_id: str, settle_steps: int, num_envs: int = 2):
    """Builds the env replaying ``layouts_path``, resets, settles; returns what was measured."""
    from isaaclab.app import launch_simulation

    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.offline_placement.scene_capture import capture_root_poses, capture_settled_batch

    arena_env = ArenaEnvGraphSpec.from_yaml(spec).to_arena_env()
    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=num_envs, env_spacing=2.5, gym_id=gym_id,
                                                            placement_layouts_path=layouts_path))
    env_cfg = builder.compose_manager_cfg()
    keys = ["mug", "bowl"]
    with launch_simulation(env_cfg, {"headless": True, "device": "cpu"}):
        env = builder.make_registered(env_cfg)
        try:
            env.reset()
            scene = env.unwrapped.scene
            after_reset = capture_root_poses(scene, keys)
            zero = torch.zeros(num_envs, 0)
            for _ in range(settle_steps):
                env.step(zero)
            batch = capture_settled_batch(scene, range(num_envs), after_reset, num_steps=settle_steps,
                                          decimation=env.unwrapped.cfg.decimation,
                                          physics_dt_s=env.unwrapped.cfg.sim.dt)
        finally:
            env.close()
    return after_reset, batch


@pytest.mark.sim
def test_record_then_replay_round_trip_in_kitless_env(tmp_path):
    import os

    from isaaclab_arena import ARENA_ROOT
    from isaaclab_arena.offline_placement.post_physics_validation import run_post_physics_validators
    from isaaclab_arena.offline_placement.recording_config import build_post_physics_validators
    from isaaclab_arena.offline_placement.pose_math import quat_angle_deg
    from isaaclab_arena.relations.placement_layouts import layouts_from_root_poses, validation_block

    spec = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "tabletop", "mug_bowl_table.yaml")
    yaw30 = [0.0, 0.0, 0.2588190, 0.9659258]
    # Release poses 4 mm above rest (table top 0.75 m; mug half height 0.05 m, bowl 0.03 m); 2 layouts, 2 envs,
    # so any number of full resets gives env i layout i.
    release = PlacementLayouts(
        ("mug", "bowl"),
        torch.tensor([[[0.10, 0.10, 0.804], [-0.15, 0.00, 0.784]], [[0.00, -0.10, 0.804], [0.20, 0.15, 0.784]]]),
        torch.tensor([[[0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 1.0]], [yaw30, [0.0, 0.0, 0.0, 1.0]]]))
    release_path = release.write_episode_jsonl(tmp_path / "release.jsonl", source="solver")

    # "Record": replay the release poses, settle, check after physics.
    after_reset, batch = _build_and_run(spec, release_path, "test_replay_record", settle_steps=60)
    torch.testing.assert_close(after_reset["mug"], release.root_poses()[:, 0], atol=2e-5, rtol=0)
    strict = run_post_physics_validators(build_post_physics_validators({"physics_settled": {}, "pose_shift": {}}),
                                         batch)
    assert _verdicts_of(strict, "physics_settled") == [True, True]
    # The 4 mm drop exceeds the default 2 mm pose_shift limit; the message names the object and the measures.
    assert _verdicts_of(strict, "pose_shift") == [False, False]
    reason = strict.reports["pose_shift"][0].reason
    assert reason.split(":")[0] in ("mug", "bowl") and "limits 0.002 m and 2 deg" in reason
    relaxed = run_post_physics_validators(
        build_post_physics_validators({"physics_settled": {}, "pose_shift": {"max_translation_m": 0.01}}), batch)
    assert relaxed.accepted.tolist() == [True, True]

    settled = layouts_from_root_poses(
        batch.final_root_poses,
        validation=[validation_block(post_physics=relaxed.post_physics_block(i),
                                     sampling={**batch.sampling_info(), "env_id": i}) for i in range(2)])
    settled_path = settled.write_episode_jsonl(tmp_path / "settled.jsonl", source="settled")
    assert PlacementLayouts.from_episode_jsonl(settled_path).validation[1]["post_physics"]["passed"] is True

    # Replay the settled layouts in a fresh env: poses match the recording and stay put.
    replay_reset, replay_batch = _build_and_run(spec, settled_path, "test_replay_replay", settle_steps=30)
    for j, key in enumerate(settled.object_names):
        recorded = settled.root_poses()[:, j]
        for poses in (replay_reset[key], replay_batch.final_root_poses[key]):
            assert (poses[:, :3] - recorded[:, :3]).norm(dim=-1).max() < 1e-3, key
            assert quat_angle_deg(poses[:, 3:], recorded[:, 3:]).max() < 1.0, key
    assert _verdicts_of(run_post_physics_validators(build_post_physics_validators(
        {"physics_settled": {}, "pose_shift": {}}), replay_batch), "pose_shift") == [True, True]


def _verdicts_of(results, check):
    return [r.passed for r in results.reports[check]]

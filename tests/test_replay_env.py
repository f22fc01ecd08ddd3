"""Recorded-layout replay wired end to end into real kit-less Isaac Lab envs (OV PhysX, CPU).

- the three entry points: ``ArenaEnvBuilderCfg(placement_layouts_path=...)``, ``arena_env.placement_layouts``
  set before ``compose_manager_cfg()``, ``environment_runner.py --env_spec ... --placement_layouts`` and
  ``policy_runner.py --placement_layouts ... <registered env>``;
- the replay order read back from the simulator (4 layouts, 3 envs: [0, 1, 2] then [3, 0, 1]; a partial
  reset consumes only its envs' layouts, in request order, and leaves the other envs untouched);
- one reset writer, which zeros the root velocities of the resetting envs only;
- the solver is never invoked (a spy on ``ObjectPlacer.place_batch`` / ``PooledObjectPlacer``, and a scene the
  solver cannot place at all); ``--no_solve_relations`` is compatible.
"""

from __future__ import annotations

import os

import pytest
import torch

from isaaclab_arena import ARENA_ROOT
from isaaclab_arena.relations.placement_layouts import PlacementLayouts

TABLE_SCENE = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "tabletop", "mug_bowl_table.yaml")
IDENTITY = [0.0, 0.0, 0.0, 1.0]


def four_layouts() -> PlacementLayouts:
    """Four distinct resting layouts of the mug (z 0.80 m) and the bowl (z 0.78 m) on the tabletop (top 0.75 m),
    env-local metres; layout i has the mug at x = -0.24 + 0.12 i and a yaw of 20 i degrees."""
    import math

    pos, rot = [], []
    for i in range(4):
        yaw = math.radians(20.0 * i)
        pos.append([[-0.24 + 0.12 * i, 0.12, 0.80], [0.2 - 0.1 * i, -0.15, 0.78]])
        rot.append([[0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2)], IDENTITY])
    return PlacementLayouts(("mug", "bowl"), torch.tensor(pos), torch.tensor(rot), sources=["settled"] * 4)


@pytest.fixture()
def layouts_file(tmp_path):
    return four_layouts().write_episode_jsonl(tmp_path / "layouts.jsonl", source="settled")


@pytest.fixture()
def no_solver(monkeypatch):
    """Fails the test if anything solves: the placer's batch entry point or the pooled placer."""
    from isaaclab_arena.relations import object_placer, pooled_object_placer

    calls = []

    def spy(*args, **kwargs):
        calls.append("solver")
        raise AssertionError("replay invoked the solver")

    monkeypatch.setattr(object_placer.ObjectPlacer, "place_batch", spy)
    monkeypatch.setattr(object_placer.ObjectPlacer, "place", spy)
    monkeypatch.setattr(pooled_object_placer.PooledObjectPlacer, "__init__", spy)
    return calls


def _local(env, names):
    """Env-local root poses ``{key: (E, 7)}`` and root velocities ``{key: (E, 6)}`` read back from the simulator."""
    u = env.unwrapped
    poses, vels = {}, {}
    for n in names:
        d = u.scene[n].data
        poses[n] = torch.cat([d.root_pos_w.torch - u.scene.env_origins, d.root_quat_w.torch], -1).cpu().clone()
        vels[n] = torch.cat([d.root_lin_vel_w.torch, d.root_ang_vel_w.torch], -1).cpu().clone()
    return poses, vels


def _assert_layouts(poses, layouts, layout_ids, env_ids=None, what=""):
    """Each env in ``env_ids`` holds the recorded layout ``layout_ids`` (position 2e-5 m, rotation 0.01 deg)."""
    from isaaclab_arena.offline_placement.pose_math import quat_angle_deg

    rec = layouts.root_poses(torch.as_tensor(layout_ids))
    rows = torch.arange(rec.shape[0]) if env_ids is None else torch.as_tensor(env_ids)
    for j, name in enumerate(layouts.object_names):
        got = poses[name][rows]
        dist = torch.linalg.vector_norm(got[:, :3] - rec[:, j, :3], dim=-1)
        ang = quat_angle_deg(got[:, 3:], rec[:, j, 3:])
        assert float(dist.max()) < 2e-5, f"{what}: {name} positions {got[:, :3].tolist()} vs {rec[:, j, :3].tolist()}"
        assert float(ang.max()) < 1e-2, f"{what}: {name} rotations differ by {ang.tolist()} deg"


def _launch(builder):
    from isaaclab.app import launch_simulation

    env_cfg = builder.compose_manager_cfg()
    ctx = launch_simulation(env_cfg, {"headless": True, "device": "cpu"})
    ctx.__enter__()
    try:
        env = builder.make_registered(env_cfg)
    except BaseException:
        ctx.__exit__(None, None, None)
        raise
    return env, ctx


def _close(env, ctx):
    env.close()
    ctx.__exit__(None, None, None)


@pytest.mark.sim
def test_replay_order_partial_resets_and_the_single_writer_in_a_real_env(layouts_file, no_solver):
    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg

    layouts = PlacementLayouts.from_episode_jsonl(layouts_file)
    arena_env = ArenaEnvGraphSpec.from_yaml(TABLE_SCENE).to_arena_env()
    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=3, env_spacing=2.5, gym_id="test_replay_order",
                                                            placement_layouts_path=str(layouts_file)))
    env, ctx = _launch(builder)
    try:
        u = env.unwrapped
        assert builder.placer is None and no_solver == []
        # One reset writer: the arena placement term is the only reset event, and it covers both recorded roots.
        assert u.event_manager.active_terms["reset"] == ["arena_placement"]
        assert {"mug", "bowl"} <= set(builder.pose_source.object_names)
        names = list(layouts.object_names)

        env.reset()
        poses, _ = _local(env, names)
        _assert_layouts(poses, layouts, [0, 1, 2], what="first full reset")
        env.reset()
        poses, _ = _local(env, names)
        _assert_layouts(poses, layouts, [3, 0, 1], what="second full reset")

        # Give every env a root velocity, then reset only env 1: it takes the next layout (2) with zero velocity;
        # envs 0 and 2 keep their poses and velocities.
        moving = torch.tensor([[0.3, -0.2, 0.1, 0.0, 0.0, 0.5]]).repeat(3, 1)
        for n in names:
            u.scene[n].write_root_velocity_to_sim_index(root_velocity=moving.clone(), env_ids=torch.arange(3))
        before, vel_before = _local(env, names)
        assert float(vel_before["mug"].abs().max()) > 0.1
        u.reset(env_ids=torch.tensor([1]))
        poses, vels = _local(env, names)
        _assert_layouts(poses, layouts, [2], env_ids=[1], what="partial reset of env 1")
        for n in names:
            torch.testing.assert_close(poses[n][[0, 2]], before[n][[0, 2]], atol=1e-6, rtol=0)
            assert float(vels[n][1].abs().max()) < 1e-6, f"{n}: env 1 velocity {vels[n][1].tolist()} not zeroed"
            torch.testing.assert_close(vels[n][[0, 2]], moving[[0, 2]], atol=1e-5, rtol=0)

        # Request order 2, 0: env 2 takes layout 3, env 0 takes layout 0 (the queue wraps); env 1 is untouched.
        u.reset(env_ids=torch.tensor([2, 0]))
        after, _ = _local(env, names)
        _assert_layouts(after, layouts, [3, 0], env_ids=[2, 0], what="partial reset of envs [2, 0]")
        for n in names:
            torch.testing.assert_close(after[n][1], poses[n][1], atol=1e-6, rtol=0)
        # The shared queue continues: the next full reset draws [1, 2, 3].
        env.reset()
        poses, _ = _local(env, names)
        _assert_layouts(poses, layouts, [1, 2, 3], what="full reset after the partial ones")
        assert no_solver == []
    finally:
        _close(env, ctx)


def _impossible_scene(name):
    """Two 1.0 x 0.7 m slabs On a 1.2 x 0.8 m tabletop: the solver can never place both (no_overlap)."""
    import isaaclab.sim as sim_utils

    from isaaclab_arena.assets.asset import Object
    from isaaclab_arena.assets.object_reference import ObjectReference
    from isaaclab_arena.environments.isaaclab_arena_environment import IsaacLabArenaEnvironment
    from isaaclab_arena.relations.relations import IsAnchor, On
    from isaaclab_arena_environments.assets.library import table_background

    bg = table_background("table_background")
    table = ObjectReference("table", "{ENV_REGEX_NS}/table_background/table", bg, object_type="base")
    table.add_relation(IsAnchor())
    slabs = []
    for slab_name in ("slab_a", "slab_b"):
        slab = Object(slab_name, sim_utils.CuboidCfg(size=(1.0, 0.7, 0.05),
                                                     rigid_props=sim_utils.UsdPhysicsRigidBodyCfg(),
                                                     collision_props=sim_utils.UsdPhysicsCollisionCfg()))
        slab.add_relation(On(table))
        slabs.append(slab)
    return IsaacLabArenaEnvironment(name, [bg, table, *slabs])


@pytest.mark.sim
def test_in_memory_layouts_replay_a_scene_the_solver_cannot_place(no_solver):
    """``arena_env.placement_layouts`` set before ``compose_manager_cfg()``: stacked slabs the solver would reject."""
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg

    # Slab b rests on slab a (table top 0.75 m, slabs 5 cm thick): overlapping footprints the solver never accepts.
    layouts = PlacementLayouts(("slab_a", "slab_b"),
                               torch.tensor([[[0.0, 0.0, 0.775], [0.05, 0.02, 0.825]],
                                             [[0.02, 0.0, 0.775], [-0.05, 0.0, 0.825]]]),
                               torch.tensor([IDENTITY]).expand(2, 2, 4).clone())
    arena_env = _impossible_scene("replay_impossible")
    arena_env.placement_layouts = layouts
    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=2, env_spacing=3.0, gym_id="test_replay_memory"))
    env, ctx = _launch(builder)
    try:
        assert builder.placer is None
        env.reset()
        poses, _ = _local(env, ["slab_a", "slab_b"])
        _assert_layouts(poses, layouts, [0, 1], what="in-memory replay")
        # The stack stays put: the slabs were recorded at rest.
        for _ in range(20):
            env.step(torch.zeros(2, 0))
        later, _ = _local(env, ["slab_a", "slab_b"])
        for n in ("slab_a", "slab_b"):
            assert float(torch.linalg.vector_norm(later[n][:, :3] - poses[n][:, :3], dim=-1).max()) < 1e-3
        assert no_solver == []
    finally:
        _close(env, ctx)


@pytest.mark.sim
def test_environment_runner_replays_the_file(layouts_file, tmp_path, no_solver):
    from isaaclab_arena.scripts import environment_runner

    summary = environment_runner.main(["--env_spec", TABLE_SCENE, "--placement_layouts", str(layouts_file),
                                       "--num_envs", "3", "--env_spacing", "2.5", "--num_steps", "5",
                                       "--output_dir", str(tmp_path / "out"), "--no-pictures"])
    layouts = PlacementLayouts.from_episode_jsonl(layouts_file)
    after = {k: torch.tensor(v) for k, v in summary["after_reset"].items()}
    _assert_layouts(after, layouts, [0, 1, 2], what="environment_runner --placement_layouts")
    assert "placement" not in summary and no_solver == []


@pytest.mark.sim
def test_environment_runner_no_solve_relations_is_compatible(layouts_file, tmp_path, no_solver):
    from isaaclab_arena.scripts import environment_runner

    summary = environment_runner.main(["--env_spec", TABLE_SCENE, "--placement_layouts", str(layouts_file),
                                       "--no_solve_relations", "--num_envs", "2", "--num_steps", "0",
                                       "--output_dir", str(tmp_path / "out"), "--no-pictures"])
    after = {k: torch.tensor(v) for k, v in summary["after_reset"].items()}
    _assert_layouts(after, PlacementLayouts.from_episode_jsonl(layouts_file), [0, 1], what="--no_solve_relations")
    assert no_solver == []


@pytest.mark.sim
def test_policy_runner_replays_the_file_for_a_registered_env(layouts_file, tmp_path, no_solver):
    """``--placement_layouts`` goes before the environment subcommand (a runner flag)."""
    from isaaclab_arena.evaluation import policy_runner

    summary = policy_runner.main(["--policy_type", "zero_action", "--placement_layouts", str(layouts_file),
                                  "--num_envs", "3", "--env_spacing", "2.5", "--num_steps", "3",
                                  "--output_dir", str(tmp_path / "out"), "--no-pictures", "table_pick_and_place"])
    assert summary["env"] == "table_pick_and_place"
    after = {k: torch.tensor(v) for k, v in summary["after_reset"].items()}
    _assert_layouts(after, PlacementLayouts.from_episode_jsonl(layouts_file), [0, 1, 2],
                    what="policy_runner --placement_layouts table_pick_and_place")
    assert no_solver == []


@pytest.mark.sim
def test_policy_runner_python_runner_sets_layouts_on_the_builder(layouts_file, no_solver):
    """A Python runner may set ``builder.arena_env.placement_layouts`` after obtaining the builder."""
    import argparse

    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena_environments.registered import get_registered_environment

    add_args, build = get_registered_environment("table_pick_and_place")
    parser = argparse.ArgumentParser()
    add_args(parser)
    builder = ArenaEnvBuilder(build(parser.parse_args([])), ArenaEnvBuilderCfg(num_envs=2, env_spacing=2.5,
                                                                              gym_id="test_replay_registered"))
    layouts = PlacementLayouts.from_episode_jsonl(layouts_file)
    builder.arena_env.placement_layouts = layouts
    env, ctx = _launch(builder)
    try:
        env.reset()
        poses, _ = _local(env, ["mug", "bowl"])
        _assert_layouts(poses, layouts, [0, 1], what="builder.arena_env.placement_layouts")
        assert builder.placer is None and no_solver == []
    finally:
        _close(env, ctx)


def test_the_solver_spy_catches_a_solving_build(no_solver):
    """Control for the spy above: the same scene without recorded layouts does reach the solver."""
    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg

    builder = ArenaEnvBuilder(ArenaEnvGraphSpec.from_yaml(TABLE_SCENE).to_arena_env(), ArenaEnvBuilderCfg(num_envs=2))
    with pytest.raises(AssertionError, match="replay invoked the solver"):
        builder.compose_manager_cfg()
    assert no_solver == ["solver"]

"""The registered ``franka_table_pick_and_place`` env in a real kit-less Isaac Lab 3.0 env (OV PhysX, CPU),
4 envs: the robot base is where its relations put it (re-checked in float64 from the simulator), it holds its
pose for 100 steps (joint drift reported), the RequiresReachability objects are reachable from the solved base
(Pinocchio, float64, from the simulator's poses), the task's success term and observations are live, the
scripted policy places the cube on the bowl, and recorded layouts (robot root included) replay exactly."""

from __future__ import annotations

import argparse
import math

import numpy as np
import pytest
import torch
from reachability_reference import PinocchioReach, top_down_target

pytestmark = [pytest.mark.sim]

NUM_ENVS = 4
TABLE = ((-0.6, -0.4, 0.71), (0.6, 0.4, 0.75))  # tabletop world box, metres
STAND = 0.75
DRIFT_BOUND_RAD = 2e-3
NAMES = ("robot", "pick_up_object", "bowl")


def _arena_env(**kw):
    from isaaclab_arena_environments.registered import get_registered_environment

    add_args, build = get_registered_environment("franka_table_pick_and_place")
    parser = argparse.ArgumentParser()
    add_args(parser)
    args = parser.parse_args([])
    for k, v in kw.items():
        setattr(args, k, v)
    return build(args)


def _local(env, names=NAMES) -> dict[str, torch.Tensor]:
    u = env.unwrapped
    return {n: torch.cat([u.scene[n].data.root_pos_w.torch - u.scene.env_origins, u.scene[n].data.root_quat_w.torch],
                         -1).clone() for n in names}


def _yaw(q):
    x, y, z, w = (float(v) for v in q)
    return math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from isaaclab.app import launch_simulation

    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.evaluation.policy import make_policy
    from isaaclab_arena.offline_placement.recording import SettledPlacementParams
    from isaaclab_arena.offline_placement.recording_output import record_placements_to_jsonl

    tmp = tmp_path_factory.mktemp("robot_pp")
    builder = ArenaEnvBuilder(_arena_env(), ArenaEnvBuilderCfg(num_envs=NUM_ENVS, placement_seed=7, output_dir=str(tmp),
                                                               gym_id="test_franka_pick_and_place"))
    env_cfg = builder.compose_manager_cfg()
    out = {"builder": builder, "tmp": tmp}
    with launch_simulation(env_cfg, {"headless": True, "device": "cpu"}):
        env = builder.make_registered(env_cfg)
        u = env.unwrapped
        obs, _ = env.reset()
        out["events"] = list(u.event_manager.active_terms["reset"])
        out["terminations"] = list(u.termination_manager.active_terms)
        out["obs_terms"] = list(u.observation_manager.active_terms["policy"])
        out["obs"] = obs["policy"].clone()
        out["after_reset"] = _local(env)
        out["pool_current"] = builder.placer.current_poses.clone()
        out["pool_names"] = list(builder.placer.object_names)
        out["pool_checks"] = dict(zip(builder.placer.check_names, builder.placer.current_checks.T.clone()))
        art = u.scene["robot"]
        q0 = art.data.joint_pos.torch.clone()
        zero = torch.zeros(NUM_ENVS, u.action_manager.total_action_dim)
        drift, success = [], []
        for _ in range(100):
            _, _, terminated, _, _ = env.step(zero)
            drift.append((art.data.joint_pos.torch[:, :7] - q0[:, :7]).abs().max().item())
            success.append(terminated.clone())
        out["drift"], out["zero_success"] = drift, torch.stack(success).any().item()
        out["after_100"] = _local(env)
        # the scripted policy from a fresh reset: one episode per env
        obs, _ = env.reset()
        policy = make_policy("scripted_pick_and_place", env)
        ended = torch.zeros(NUM_ENVS, dtype=torch.bool)
        won = torch.zeros(NUM_ENVS, dtype=torch.bool)
        for _ in range(int(u.max_episode_length)):
            _, _, terminated, truncated, _ = env.step(policy(obs))
            won |= terminated & ~ended
            ended |= terminated | truncated
            if bool(ended.all()):
                break
        out["scripted_success"] = won
        # record settled layouts of this env (robot root included)
        print(f"\n[franka pick-and-place] joint drift over 100 steps (max |q - q0|, rad): {max(drift):.2e}; "
              f"scripted episodes: {int(won.sum())}/{NUM_ENVS} successes")
        params = SettledPlacementParams(num_steps=30, robot_keys=("robot",), log=lambda line: None)  # default checks
        out["record"] = record_placements_to_jsonl(env, tmp / "robot_layouts.jsonl", min_layouts=NUM_ENVS,
                                                   max_batches=3, params=params,
                                                   scene_assets=builder.arena_env.get_placement_assets())
        env.close()
    return out


def test_robot_env_has_its_placement_task_and_terms(run):
    assert run["pool_names"] == ["pick_up_object", "bowl", "robot"]
    # the robot's root pose comes from the pool (no second root writer): the joint reset keeps its hands off it
    assert run["events"] == ["reset_robot_joints", "arena_placement"]
    assert run["builder"].pose_source.object_names == ["pick_up_object", "bowl", "robot"]
    assert set(run["terminations"]) == {"time_out", "success"}
    assert run["obs_terms"] == ["joint_pos", "joint_vel", "tcp_pose", "object_pose", "destination_pose"]
    obs, poses = run["obs"], run["after_reset"]
    torch.testing.assert_close(obs[:, -14:-7], poses["pick_up_object"], atol=1e-5, rtol=0)
    torch.testing.assert_close(obs[:, -7:], poses["bowl"], atol=1e-5, rtol=0)
    assert run["pool_checks"]["ik_reachable"].all()


def test_robot_base_is_where_its_relations_put_it(run):
    base = run["after_reset"]["robot"].double().numpy()
    pool = run["pool_current"][:, run["pool_names"].index("robot")]
    torch.testing.assert_close(run["after_reset"]["robot"], pool, atol=1e-4, rtol=0)
    for e in range(NUM_ENVS):
        x, y, z = base[e, :3]
        # On(floor): the stand's bottom (z - 0.75) on the floor's top (z = 0), within On's clearance and tolerance
        assert -5e-3 < z - STAND <= 0.015 + 1e-4, z
        # NextTo(table, negative_x, 5 cm): the stand's +X face 5-6 cm from the tabletop's -X face, its centre
        # within the tabletop's Y extent; RotateAroundSolution(yaw 0): facing +X, upright
        gap = TABLE[0][0] - (x + 0.15)
        assert 0.05 - 1e-4 <= gap <= 0.06 + 1e-4, gap
        assert TABLE[0][1] - 1e-4 <= y <= TABLE[1][1] + 1e-4
        assert abs(_yaw(base[e, 3:])) < 1e-4 and abs(base[e, 6]) > 1 - 1e-6
    assert np.ptp(base[:, 1]) > 0.05  # the envs' robots stand at different places along the side


def test_robot_holds_its_pose_for_100_steps(run):
    assert max(run["drift"]) < DRIFT_BOUND_RAD, f"joint drift {max(run['drift']):.2e} rad"
    torch.testing.assert_close(run["after_100"]["robot"], run["after_reset"]["robot"], atol=1e-5, rtol=0)
    assert not run["zero_success"]  # nothing was put on the bowl


def test_reachability_objects_are_reachable_from_the_solved_base(run):
    ref = PinocchioReach()
    poses = {k: v.double().numpy() for k, v in run["after_reset"].items()}
    for e in range(NUM_ENVS):
        for name in ("pick_up_object", "bowl"):
            p_t, r_t = top_down_target(poses["robot"][e, :3], poses["robot"][e, 3:], poses[name][e, :3], 0.02)
            assert ref.reachable(p_t, r_t, 0.01, 0.1), (e, name, p_t)


def test_scripted_policy_puts_the_cube_on_the_bowl(run):
    assert int(run["scripted_success"].sum()) >= NUM_ENVS - 1, run["scripted_success"]


def test_robot_layouts_record_and_replay_exactly(run, tmp_path):
    from isaaclab.app import launch_simulation

    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.relations.placement_layouts import PlacementLayouts

    record = run["record"]
    assert record.output is not None and record.accepted >= NUM_ENVS, record
    layouts = PlacementLayouts.from_episode_jsonl(record.output)
    assert set(layouts.object_names) == {"robot", "pick_up_object", "bowl"}
    names = list(layouts.object_names)
    builder = ArenaEnvBuilder(_arena_env(), ArenaEnvBuilderCfg(num_envs=NUM_ENVS, placement_layouts_path=record.output,
                                                               gym_id="test_franka_replay"))
    env_cfg = builder.compose_manager_cfg()
    with launch_simulation(env_cfg, {"headless": True, "device": "cpu"}):
        env = builder.make_registered(env_cfg)
        try:
            assert builder.placer is None
            env.reset()
            got = _local(env, names)
            for k, name in enumerate(names):
                want = layouts.root_poses(torch.arange(NUM_ENVS))[:, k]
                torch.testing.assert_close(got[name][:, :3], want[:, :3], atol=2e-5, rtol=0)
                dots = (got[name][:, 3:] * want[:, 3:]).sum(-1).abs()
                assert bool((dots > 1 - 1e-6).all()), (name, got[name], want)
        finally:
            env.close()

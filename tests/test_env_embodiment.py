"""A Franka Panda on its stand in a real kit-less Isaac Lab 3.0 env (OV PhysX, CPU): spawned where it was
put in every env, holding its home pose for 100 steps (joint drift reported), its stand a real collider,
its tool-frame observation equal to an independent FK (Pinocchio), its actions and joint reset live."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

pytestmark = [pytest.mark.sim]

NUM_ENVS = 4
YAW = math.radians(30.0)
BASE = ((-0.8, 0.0, 0.75), (0.0, 0.0, math.sin(YAW / 2), math.cos(YAW / 2)))
#: A 4 cm cube dropped onto the stand's corner (stand 0.4 x 0.4 m; the arm's base link is ~0.25 x 0.2 m).
CUBE_XY_IN_BASE = (0.16, 0.16)
DRIFT_BOUND_RAD = 1e-3


def _rot(q):
    x, y, z, w = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _local(env, name):
    u = env.unwrapped
    return (u.scene[name].data.root_pos_w.torch - u.scene.env_origins).clone()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from isaaclab.app import launch_simulation

    from isaaclab_arena.embodiments import make_embodiment
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.environments.isaaclab_arena_environment import IsaacLabArenaEnvironment
    from isaaclab_arena.utils.pose import Pose
    from isaaclab_arena_environments.assets import library

    robot = make_embodiment("franka_panda", "franka", {"initial_pose": Pose(*BASE), "stand_size_xy_m": (0.4, 0.4)})
    cube_xy = _rot(BASE[1])[:2, :2] @ np.array(CUBE_XY_IN_BASE) + np.array(BASE[0][:2])
    cube = library.cube_4cm("cube", initial_pose=Pose((float(cube_xy[0]), float(cube_xy[1]), BASE[0][2] + 0.10)))
    arena_env = IsaacLabArenaEnvironment("franka_on_stand", [library.table_background("table_background"), cube],
                                         embodiment=robot)
    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=NUM_ENVS, env_spacing=3.0,
                                                            output_dir=str(tmp_path_factory.mktemp("robot")),
                                                            gym_id="test_env_embodiment"))
    env_cfg = builder.compose_manager_cfg()
    out = {"robot": robot, "cube_xy": cube_xy}
    with launch_simulation(env_cfg, {"headless": True, "device": "cpu"}):
        env = builder.make_registered(env_cfg)
        u = env.unwrapped
        art = u.scene["robot"]
        obs, _ = env.reset()
        out["obs_shape"] = tuple(obs["policy"].shape)
        out["action_dim"] = u.action_manager.total_action_dim
        out["physics"] = type(u.sim.cfg.physics).__name__
        out["joint_names"] = list(art.joint_names)
        home = art.data.default_joint_pos.torch.clone()
        zero = torch.zeros(NUM_ENVS, out["action_dim"])
        drift = []
        for _ in range(100):
            obs, *_ = env.step(zero)
            drift.append((art.data.joint_pos.torch - home).abs().max().item())
        out["drift"] = drift
        out["root"] = _local(env, "robot")
        out["root_quat"] = art.data.root_quat_w.torch.clone()
        out["tcp_obs"] = obs["policy"][:, -7:].clone()
        out["cube"] = _local(env, "cube")
        # a joint-1 offset of 0.3 rad through the arm action (joint_pos mode): physics follows
        act = zero.clone()
        act[:, 0] = 0.3
        for _ in range(60):
            env.step(act)
        out["q_after_action"] = art.data.joint_pos.torch.clone()
        out["home"] = home
        # reset env 0 only: its joints return to home, the others keep the commanded offset
        u._reset_idx(torch.tensor([0]))
        out["q_after_reset0"] = art.data.joint_pos.torch.clone()
        print(f"\n[franka] joint drift over 100 steps (max |q - home|, rad): {max(drift):.2e}; "
              f"base {out['root'][0].tolist()}")
        env.close()
    return out


def test_robot_spawns_on_ov_physx_with_its_terms(run):
    assert run["physics"] == "OvPhysxCfg"
    assert run["joint_names"][:7] == [f"panda_joint{i}" for i in range(1, 8)]
    assert run["action_dim"] == 8  # 7 arm joint offsets + 1 gripper open/close
    assert run["obs_shape"] == (NUM_ENVS, 9 + 9 + 7)  # joint pos, joint vel, TCP pose


def test_base_is_where_it_was_put_in_every_env(run):
    torch.testing.assert_close(run["root"], torch.tensor(BASE[0]).expand(NUM_ENVS, 3), atol=1e-4, rtol=0)
    dots = (run["root_quat"] * torch.tensor(BASE[1])).sum(-1).abs()
    assert torch.all(dots > 1 - 1e-6), run["root_quat"]


def test_arm_holds_its_home_pose_for_100_steps(run):
    assert max(run["drift"]) < DRIFT_BOUND_RAD, f"joint drift {max(run['drift']):.2e} rad"


def test_tool_frame_observation_matches_pinocchio_fk(run):
    from reachability_reference import READY, PinocchioReach

    p_b, r_b = PinocchioReach(seeds=1).fk(READY)
    rot = _rot(BASE[1])
    expected = rot @ p_b + np.array(BASE[0])
    tcp = run["tcp_obs"].double().numpy()
    assert np.abs(tcp[:, :3] - expected).max() < 1e-3, (tcp[:, :3], expected)
    sim_rot = _rot(tcp[0, 3:])
    angle = math.acos(max(-1.0, min(1.0, (np.trace((rot @ r_b).T @ sim_rot) - 1) / 2)))
    assert angle < 1e-3


def test_stand_is_a_collider_the_cube_rests_on(run):
    cube = run["cube"]
    top = BASE[0][2]
    assert torch.all((cube[:, 2] - (top + 0.02)).abs() < 3e-3), f"cube at z={cube[:, 2].tolist()}, stand top {top}"
    assert torch.all((cube[:, :2] - torch.tensor(run["cube_xy"], dtype=torch.float32)).norm(dim=-1) < 0.01)


def test_arm_action_moves_joints_and_reset_brings_them_home(run):
    q, home = run["q_after_action"], run["home"]
    assert torch.all((q[:, 0] - (home[:, 0] + 0.3)).abs() < 0.02), q[:, 0]
    q0 = run["q_after_reset0"]
    torch.testing.assert_close(q0[0], home[0], atol=1e-5, rtol=0)
    assert torch.all((q0[1:, 0] - (home[1:, 0] + 0.3)).abs() < 0.02)

"""The Franka's differential-IK action (``action_mode="ik_abs"``) in a real kit-less env (OV PhysX, CPU):
a TCP pose command in the robot base frame brings the tool frame there."""

from __future__ import annotations

import math

import pytest
import torch

pytestmark = [pytest.mark.sim]

NUM_ENVS = 2
BASE_XYZ = (0.5, -0.2, 0.6)
#: Target in the base frame: 10 cm forward, 10 cm left and 15 cm below the home TCP (0.307, 0, 0.485),
#: tool pointing down (the home orientation: 180 degrees about x).
TARGET_B = (0.407, 0.10, 0.335)
TOP_DOWN_XYZW = (1.0, 0.0, 0.0, 0.0)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from isaaclab.app import launch_simulation

    from isaaclab_arena.embodiments import make_embodiment
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.environments.isaaclab_arena_environment import IsaacLabArenaEnvironment
    from isaaclab_arena.utils.pose import Pose

    robot = make_embodiment("franka_panda", "robot", {"initial_pose": Pose(BASE_XYZ), "stand_height_m": 0.6,
                                                      "action_mode": "ik_abs"})
    builder = ArenaEnvBuilder(IsaacLabArenaEnvironment("franka_ik", [], embodiment=robot),
                              ArenaEnvBuilderCfg(num_envs=NUM_ENVS, env_spacing=3.0, gym_id="test_env_embodiment_ik",
                                                 output_dir=str(tmp_path_factory.mktemp("robot_ik"))))
    env_cfg = builder.compose_manager_cfg()
    out = {}
    with launch_simulation(env_cfg, {"headless": True, "device": "cpu"}):
        env = builder.make_registered(env_cfg)
        obs, _ = env.reset()
        out["action_dim"] = env.unwrapped.action_manager.total_action_dim
        act = torch.tensor([[*TARGET_B, *TOP_DOWN_XYZW, 1.0]]).repeat(NUM_ENVS, 1)
        for _ in range(150):
            obs, *_ = env.step(act)
        out["tcp"] = obs["policy"][:, -7:].clone()
        env.close()
    return out


def test_ik_action_reaches_the_commanded_tcp_pose(run):
    assert run["action_dim"] == 8  # pose (xyz + xyzw) + gripper
    tcp = run["tcp"]
    expected = torch.tensor(BASE_XYZ) + torch.tensor(TARGET_B)  # base not rotated
    err = (tcp[:, :3] - expected).norm(dim=-1)
    assert torch.all(err < 0.01), f"TCP {tcp[:, :3].tolist()} vs {expected.tolist()} (err {err.tolist()} m)"
    dots = (tcp[:, 3:] * torch.tensor(TOP_DOWN_XYZW)).sum(-1).abs().clamp(max=1.0)
    angle = 2 * torch.arccos(dots)
    assert torch.all(angle < 0.05), f"TCP orientation off by {angle.tolist()} rad"
    assert math.isfinite(float(tcp.sum()))

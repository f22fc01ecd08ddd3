"""Heterogeneous placement in a real kit-less env (OV PhysX, CPU): a RigidObjectSet role gets a different
member per env, solved and simulated with that member's size. Own module: one live env per process."""

from __future__ import annotations

import os

import pytest
import torch

from isaaclab_arena import ARENA_ROOT

TABLETOP = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "tabletop")
TOP_Z = 0.75


def _local(env, name):
    u = env.unwrapped
    return torch.cat([u.scene[name].data.root_pos_w.torch - u.scene.env_origins, u.scene[name].data.root_quat_w.torch], -1).clone()


def _build(spec, num_envs, tmp, **cfg):
    from isaaclab.app import launch_simulation

    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg

    arena_env = ArenaEnvGraphSpec.from_yaml(os.path.join(TABLETOP, spec)).to_arena_env()
    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=num_envs, env_spacing=2.5, placement_seed=7,
                                                            output_dir=str(tmp), gym_id=f"test_pooled_{spec}", **cfg))
    env_cfg = builder.compose_manager_cfg()
    ctx = launch_simulation(env_cfg, {"headless": True, "device": "cpu"})
    ctx.__enter__()
    env = builder.make_registered(env_cfg)
    return builder, env, ctx




@pytest.fixture(scope="module")
def heterogeneous(tmp_path_factory):
    builder, env, ctx = _build("heterogeneous_tabletop.yaml", 3, tmp_path_factory.mktemp("het"))
    env.reset()
    layout = _local(env, "cube")
    for _ in range(60):
        env.step(torch.zeros(3, 0))
    rest = _local(env, "cube")
    yield builder, layout, rest
    env.close()
    ctx.__exit__(None, None, None)


def test_heterogeneous_envs_get_their_own_member_and_size(heterogeneous):
    builder, layout, rest = heterogeneous
    assert builder.member_indices["cube"] == [0, 1, 2]
    halves = torch.tensor([0.02, 0.04, 0.06])
    # solved with each member's size (On clearance at most 1 cm above the top) and simulated with it
    assert torch.all(layout[:, 2] - (TOP_Z + halves) > -2e-3) and torch.all(layout[:, 2] - (TOP_Z + halves) < 1.6e-2)
    assert torch.all((rest[:, 2] - (TOP_Z + halves)).abs() < 3e-3), rest[:, 2].tolist()



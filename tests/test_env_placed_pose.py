"""Direct ObjectPlacer.place() use: solved poses written back (apply_positions_to_objects) spawn the env.

A single-env placement writes each placed asset's ``placed_pose``; a builder with ``solve_relations=False``
(``--no_solve_relations``) then starts the objects exactly there, in a real kit-less env (OV PhysX, CPU).
"""

from __future__ import annotations

import torch

from isaaclab_arena.relations.object_placer import ObjectPlacer
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
import pytest


def _scene():
    from isaaclab_arena_environments.registered import get_registered_environment

    add_args, build = get_registered_environment("table_pick_and_place")
    import argparse

    parser = argparse.ArgumentParser()
    add_args(parser)
    return build(parser.parse_args([]))


def test_failed_or_disabled_write_back_leaves_assets_untouched():
    arena_env = _scene()
    ObjectPlacer(ObjectPlacerParams(placement_seed=3, apply_positions_to_objects=False)).place(arena_env.assets, num_envs=1)
    assert all(a.placed_pose is None for a in arena_env.get_placed_assets())


@pytest.mark.sim
def test_placed_poses_spawn_the_env_without_solving():
    from isaaclab.app import launch_simulation

    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg

    arena_env = _scene()
    [result] = ObjectPlacer(ObjectPlacerParams(placement_seed=3)).place(arena_env.assets, num_envs=1)
    assert result.success
    mug, bowl = arena_env.get_asset("mug"), arena_env.get_asset("bowl")
    assert mug.placed_pose is not None and mug.initial_pose is None
    assert torch.allclose(torch.tensor(mug.placed_pose.position_xyz), torch.as_tensor(result.positions["mug"]).float().cpu(), atol=1e-6)

    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=2, env_spacing=2.0, solve_relations=False,
                                                            gym_id="test_env_placed_pose"))
    env_cfg = builder.compose_manager_cfg()
    with launch_simulation(env_cfg, {"headless": True, "device": "cpu"}):
        env = builder.make_registered(env_cfg)
        try:
            env.reset()
            u = env.unwrapped
            for asset in (mug, bowl):
                pos = (u.scene[asset.name].data.root_pos_w.torch - u.scene.env_origins).cpu()
                want = torch.tensor(asset.placed_pose.position_xyz, dtype=pos.dtype).expand_as(pos)
                assert torch.allclose(pos, want, atol=2e-5), (asset.name, pos.tolist(), want[0].tolist())
        finally:
            env.close()

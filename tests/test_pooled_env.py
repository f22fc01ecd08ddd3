"""Pooled placement in a real kit-less Isaac Lab env (OV PhysX, CPU) with the real solver.

One env build per fixture (module scope). Layout poses read back from the simulator must equal the pool's,
objects must come to rest on the table, partial resets must consume only the reset envs' layouts, and a
RigidObjectSet must give each env its own member, placed and simulated with that member's size.
"""

from __future__ import annotations

import os
import subprocess
import sys

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
def tabletop(tmp_path_factory):
    builder, env, ctx = _build("mug_bowl_table.yaml", 4, tmp_path_factory.mktemp("mug_bowl"))
    env.reset()
    yield builder, env
    env.close()
    ctx.__exit__(None, None, None)


def test_reset_writes_the_pooled_layouts_and_they_pass(tabletop):
    builder, env = tabletop
    pool = builder.placer
    for j, name in enumerate(pool.object_names):
        torch.testing.assert_close(_local(env, name)[:, :3], pool.current_poses[:, j, :3], atol=1e-4, rtol=0)
    slots = pool.current_slot_info["slots"]
    assert bool(pool.slot_passed[torch.arange(4), slots].all()), "a layout handed out failed a required check"
    assert pool.consumed.tolist() == [1, 1, 1, 1]
    # envs got different layouts
    assert (pool.current_poses[0] - pool.current_poses[1]).abs().max() > 1e-3
    assert os.path.isfile(pool.diagnostics.path)


def test_objects_rest_on_the_table_after_stepping(tabletop):
    builder, env = tabletop
    for _ in range(60):
        env.step(torch.zeros(4, 0))
    for name, half in (("mug", 0.05), ("bowl", 0.03)):
        z = _local(env, name)[:, 2]
        assert torch.all((z - (TOP_Z + half)).abs() < 3e-3), f"{name} rests at {z.tolist()}"
        assert torch.all(env.unwrapped.scene[name].data.root_lin_vel_w.torch.norm(dim=-1) < 1e-2)


def test_partial_reset_changes_and_consumes_only_the_reset_envs(tabletop):
    builder, env = tabletop
    pool = builder.placer
    before = {n: _local(env, n) for n in pool.object_names}
    consumed = pool.consumed.clone()
    env.unwrapped.reset(env_ids=torch.tensor([2]))
    after = {n: _local(env, n) for n in pool.object_names}
    assert (pool.consumed - consumed).tolist() == [0, 0, 1, 0]
    for j, n in enumerate(pool.object_names):
        torch.testing.assert_close(after[n][[0, 1, 3]], before[n][[0, 1, 3]], atol=1e-6, rtol=0)
        torch.testing.assert_close(after[n][2, :3], pool.current_poses[2, j, :3], atol=1e-4, rtol=0)


_SEED_SCRIPT = """
import sys, torch
from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec
from isaaclab_arena.relations.pooled_object_placer import PooledObjectPlacer
import dataclasses
env = ArenaEnvGraphSpec.from_yaml(sys.argv[1]).to_arena_env()
params = dataclasses.replace(env.placer_params, placement_seed=11, min_unique_layouts_per_env=2)
pool = PooledObjectPlacer(env.get_placement_assets(), params, num_envs=3)
pool.diagnostics.verbose = False
pool.initialize()
print("POSES", [round(v, 6) for v in pool.poses.flatten().tolist()])
"""


def test_same_placement_seed_reproduces_layouts_across_processes():
    spec = os.path.join(TABLETOP, "mug_bowl_table.yaml")
    outs = [subprocess.run([sys.executable, "-c", _SEED_SCRIPT, spec], capture_output=True, text=True, cwd=ARENA_ROOT,
                           timeout=300) for _ in range(2)]
    lines = [next(l for l in o.stdout.splitlines() if l.startswith("POSES")) for o in outs]
    assert lines[0] == lines[1]


def test_impossible_scene_without_fallbacks_fails_naming_env_and_checks():
    import isaaclab.sim as sim_utils

    from isaaclab_arena.assets.asset import Object
    from isaaclab_arena.assets.object_reference import ObjectReference
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.environments.isaaclab_arena_environment import IsaacLabArenaEnvironment
    from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
    from isaaclab_arena.relations.relations import IsAnchor, On
    from isaaclab_arena_environments.assets.library import table_background

    bg = table_background("table_background")
    table = ObjectReference("table", "{ENV_REGEX_NS}/table_background/table", bg, object_type="base")
    table.add_relation(IsAnchor())
    slab = Object("slab", sim_utils.CuboidCfg(size=(2.0, 2.0, 0.05), rigid_props=sim_utils.UsdPhysicsRigidBodyCfg(),
                                              collision_props=sim_utils.UsdPhysicsCollisionCfg()))
    slab.add_relation(On(table))
    params = ObjectPlacerParams(allow_best_loss_fallbacks=False, max_placement_attempts=2, min_unique_layouts_per_env=2)
    arena_env = IsaacLabArenaEnvironment("impossible", [bg, table, slab], placer_params=params)
    with pytest.raises(RuntimeError, match=r"Placement pool could not fill 2 layouts per env after 2 solve batches.*"
                                           r"env 0: failed .*on_relation"):
        ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=2)).compose_manager_cfg()

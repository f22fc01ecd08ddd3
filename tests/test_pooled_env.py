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

from _helpers import TABLETOP, TOP_Z, build_pooled_env as _build, local_pose as _local


@pytest.fixture(scope="module")
def tabletop(tmp_path_factory):
    builder, env, ctx = _build("mug_bowl_table.yaml", 4, tmp_path_factory.mktemp("mug_bowl"))
    env.reset()
    yield builder, env
    env.close()
    ctx.__exit__(None, None, None)


def _term(env):
    return env.unwrapped.event_manager._mode_term_cfgs["reset"][0].func


def _revalidate(builder, env):
    """The layout read back from the simulator, checked again with the placer's checks (no solving)."""
    pool = builder.placer
    back = torch.stack([_local(env, n) for n in pool.object_names], dim=1)
    batch = pool.placer.validate_poses(pool.assets, back[..., :3], back[..., 3:],
                                       env_ids=torch.arange(back.shape[0]), num_envs=pool.num_envs)
    return batch


@pytest.mark.sim
def test_reset_writes_the_pooled_layouts_and_they_pass(tabletop):
    builder, env = tabletop
    pool = builder.placer
    assert _term(env).writer.name == "ovphysx_batched"
    for j, name in enumerate(pool.object_names):
        torch.testing.assert_close(_local(env, name), pool.current_poses[:, j], atol=1e-4, rtol=0)
    slots = pool.current_slot_info["slots"]
    assert bool(pool.slot_passed[torch.arange(4), slots].all()), "a layout handed out failed a required check"
    batch = _revalidate(builder, env)
    assert bool(batch.passed.all()), {k: v.tolist() for k, v in batch.check_results.items()}
    assert set(batch.check_results) >= {"no_overlap", "on_relation", "next_to"}
    assert pool.consumed.tolist() == [1, 1, 1, 1]
    from isaaclab_arena.environments.reset_events import FALLBACK_EXTRAS_KEY

    # which envs hold a best-loss fallback is in the env's extras after every reset (none here)
    mask = env.unwrapped.extras[FALLBACK_EXTRAS_KEY]
    assert mask.dtype == torch.bool and mask.tolist() == pool.current_fallback.tolist() == [False] * 4
    # envs got different layouts
    assert (pool.current_poses[0] - pool.current_poses[1]).abs().max() > 1e-3
    assert os.path.isfile(pool.diagnostics.path)


@pytest.mark.sim
def test_objects_rest_on_the_table_after_stepping(tabletop):
    builder, env = tabletop
    for _ in range(60):
        env.step(torch.zeros(4, 0))
    for name, half in (("mug", 0.05), ("bowl", 0.03)):
        z = _local(env, name)[:, 2]
        assert torch.all((z - (TOP_Z + half)).abs() < 3e-3), f"{name} rests at {z.tolist()}"
        assert torch.all(env.unwrapped.scene[name].data.root_lin_vel_w.torch.norm(dim=-1) < 1e-2)
    # resting where they were placed: the solved layout was physically valid (no push-apart)
    for j, name in enumerate(builder.placer.object_names):
        moved = (_local(env, name)[:, :2] - builder.placer.current_poses[:, j, :2]).norm(dim=-1)
        assert torch.all(moved < 5e-3), f"{name} slid {moved.tolist()} m"


@pytest.mark.sim
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
        torch.testing.assert_close(after[n][2], pool.current_poses[2, j], atol=1e-4, rtol=0)
        assert (after[n][2, :3] - before[n][2, :3]).abs().max() > 1e-3  # a new layout, not the old one


@pytest.mark.sim
def test_an_empty_partition_is_refilled_during_the_reset(tabletop):
    builder, env = tabletop
    pool = builder.placer
    fills = pool.num_fills
    while int(pool.remaining[0]) > 0:
        env.unwrapped.reset(env_ids=torch.tensor([0]))
    env.unwrapped.reset(env_ids=torch.tensor([0]))  # env 0 finds its partition empty
    assert pool.num_fills == fills + 1
    assert pool.diagnostics.fills[-1].reason == "reset_refill" and pool.diagnostics.fills[-1].envs == [0]
    assert pool.remaining[0] == pool.layouts_per_env - 1
    for j, n in enumerate(pool.object_names):
        torch.testing.assert_close(_local(env, n)[0], pool.current_poses[0, j], atol=1e-4, rtol=0)
    assert bool(_revalidate(builder, env).passed[0])


_SEED_SCRIPT = """
import sys, torch
from isaaclab.app import launch_simulation
from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec
from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
arena_env = ArenaEnvGraphSpec.from_yaml(sys.argv[1]).to_arena_env()
builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=3, env_spacing=2.5, placement_seed=int(sys.argv[2])))
cfg = builder.compose_manager_cfg()
builder.placer.diagnostics.verbose = False
with launch_simulation(cfg, {"headless": True, "device": "cpu"}):
    env = builder.make_registered(cfg)
    rows = []
    for _ in range(2):  # creation layout, then the next one
        env.reset()
        u = env.unwrapped
        for n in builder.placer.object_names:
            rows += (u.scene[n].data.root_pos_w.torch - u.scene.env_origins).flatten().tolist()
    print("POSES", [round(v, 4) for v in rows])
    env.close()
"""


@pytest.mark.sim
@pytest.mark.slow
def test_same_placement_seed_reproduces_layouts_across_processes():
    spec = os.path.join(TABLETOP, "mug_bowl_table.yaml")
    procs = [subprocess.Popen([sys.executable, "-c", _SEED_SCRIPT, spec, seed], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=ARENA_ROOT) for seed in ("42", "42", "43")]
    outs = [p.communicate(timeout=300) for p in procs]
    lines = []
    for (out, err), p in zip(outs, procs):
        found = [l for l in out.splitlines() if l.startswith("POSES")]
        assert p.returncode == 0 and found, err[-2000:]
        lines.append(found[0])
    assert lines[0] == lines[1]
    assert lines[0] != lines[2]


def test_impossible_scenes_without_fallbacks_fail_naming_relations_and_metres():
    import isaaclab.sim as sim_utils

    from isaaclab_arena.assets.asset import Object
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.environments.isaaclab_arena_environment import IsaacLabArenaEnvironment
    from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
    from isaaclab_arena.relations.compiler.placement_restrictions import PlacementConfigError
    from isaaclab_arena.relations.relations import IsAnchor, NextTo, On, Side
    from isaaclab_arena.assets.object_reference import ObjectReference
    from isaaclab_arena_environments.assets.library import bowl, mug, table_background

    def scene(name, objects):
        bg = table_background("table_background")
        table = ObjectReference("table", "{ENV_REGEX_NS}/table_background/table", bg, object_type="base")
        table.add_relation(IsAnchor())
        params = ObjectPlacerParams(allow_best_loss_fallbacks=False, max_placement_attempts=2,
                                    min_unique_layouts_per_env=2)
        return IsaacLabArenaEnvironment(name, [bg, table, *objects(table)], placer_params=params)

    def gap(table):  # each object fits the table, but mug + 1.0 m gap + bowl (1.24 m) cannot: refused before solving
        m = mug("mug").add_relation(On(table))
        return [m, bowl("bowl").add_relation(On(table)).add_relation(NextTo(m, side=Side.POSITIVE_X, distance_m=1.0))]

    with pytest.raises(PlacementConfigError, match=r"asset 'bowl' next_to\(mug, positive_x\): along x it cannot hold "
                                                   r"together with .*'mug' on\(table\).*: 0\.140 m of room is missing"):
        ArenaEnvBuilder(scene("impossible", gap), ArenaEnvBuilderCfg(num_envs=2)).compose_manager_cfg()

    def slabs(table):  # each fits, and both by area (0.72 of 0.77 m²), but never side by side: fails after solving
        cfg = dict(rigid_props=sim_utils.UsdPhysicsRigidBodyCfg(), collision_props=sim_utils.UsdPhysicsCollisionCfg())
        return [Object(n, sim_utils.CuboidCfg(size=(0.6, 0.6, 0.05), **cfg)).add_relation(On(table))
                for n in ("slab_a", "slab_b")]

    with pytest.raises(RuntimeError, match=r"Placement pool could not fill 2 layouts per env after 2 solve batches\. "
                                           r"Available per env: \[0, 0\].*env 0: failed no_overlap, clearance; env 1: "
                                           r"failed no_overlap, clearance\. In env\(s\) \[0, 1\], relations in conflict .*no_overlap: "
                                           r"'slab_a' overlaps 'slab_b' \(the deepest failing pair in 8/8 candidates, "
                                           r"smallest such depth 0\.\d+ m.*Met by every candidate .*'slab_a' on\(table\), "
                                           r"'slab_b' on\(table\)\. Try: every candidate overlapped somewhere"):
        ArenaEnvBuilder(scene("crowded", slabs), ArenaEnvBuilderCfg(num_envs=2)).compose_manager_cfg()

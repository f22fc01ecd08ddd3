"""Heterogeneous placement in a real kit-less env (OV PhysX, CPU): a RigidObjectSet role gets a different
member per env, solved and simulated with that member's size. Own module: one live env per process."""

from __future__ import annotations

import pytest
import torch

from _helpers import TOP_Z, build_pooled_env as _build, local_pose as _local


def _spawned_sizes(env, name):
    """Extent (m) of the prim each env spawned for ``name``, read from the simulator's USD stage."""
    from pxr import Usd, UsdGeom

    u = env.unwrapped
    stage = u.sim.stage
    cache = UsdGeom.BBoxCache(Usd.TimeCode.Default(), [UsdGeom.Tokens.default_])
    out = []
    for path in u.scene.env_prim_paths:
        prim = stage.GetPrimAtPath(f"{path}/{name}")
        assert prim.IsValid(), f"{path}/{name} was not spawned"
        r = cache.ComputeUntransformedBound(prim).ComputeAlignedRange()
        out.append([float(v) for v in (r.GetMax() - r.GetMin())])
    return torch.tensor(out)


@pytest.fixture(scope="module")
def heterogeneous(tmp_path_factory):
    builder, env, ctx = _build("heterogeneous_tabletop.yaml", 3, tmp_path_factory.mktemp("het"))
    env.reset()
    layout = _local(env, "cube")
    sizes = _spawned_sizes(env, "cube")
    writer = env.unwrapped.event_manager._mode_term_cfgs["reset"][0].func.writer.name
    for _ in range(60):
        env.step(torch.zeros(3, 0))
    rest = _local(env, "cube")
    yield builder, layout, rest, sizes, writer
    env.close()
    ctx.__exit__(None, None, None)


@pytest.mark.sim
def test_heterogeneous_envs_get_their_own_member_and_size(heterogeneous):
    builder, layout, rest, sizes, writer = heterogeneous
    assert builder.member_indices["cube"] == [0, 1, 2]
    assert writer == "ovphysx_batched"
    # each env spawned a different object: its own member's geometry
    torch.testing.assert_close(sizes, torch.tensor([[0.04] * 3, [0.08] * 3, [0.12] * 3]), atol=1e-4, rtol=0)
    # the solver sized each env's candidates with that member
    problem = builder.placer.placer.compile(builder.placer.assets, 3)
    k = problem.object_names.index("cube")
    torch.testing.assert_close((problem.local_hi - problem.local_lo)[:, k].cpu(), sizes, atol=1e-5, rtol=0)
    halves = torch.tensor([0.02, 0.04, 0.06])
    # solved with each member's size (On clearance at most 1 cm above the top) and simulated with it
    assert torch.all(layout[:, 2] - (TOP_Z + halves) > -2e-3) and torch.all(layout[:, 2] - (TOP_Z + halves) < 1.6e-2)
    assert torch.all((rest[:, 2] - (TOP_Z + halves)).abs() < 3e-3), rest[:, 2].tolist()




def test_random_member_picks_without_a_seed_follow_the_placers_seed():
    """placement_seed=None: the placer draws one seed; the builder must spawn the members that seed picks."""
    from isaaclab_arena.assets.object_reference import ObjectReference
    from isaaclab_arena.assets.object_set import RigidObjectSet
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.environments.isaaclab_arena_environment import IsaacLabArenaEnvironment
    from isaaclab_arena.relations.relations import IsAnchor, On
    from isaaclab_arena_environments.assets import library as L

    bg = L.table_background("table_background")
    table = ObjectReference("table", "{ENV_REGEX_NS}/table_background/table", bg, object_type="base")
    table.add_relation(IsAnchor())
    cube = RigidObjectSet("cube", [L.cube_4cm("a"), L.cube_8cm("b"), L.cube_12cm("c")], random_choice=True)
    cube.add_relation(On(table))
    builder = ArenaEnvBuilder(IsaacLabArenaEnvironment("random_set", [bg, table, cube]), ArenaEnvBuilderCfg(num_envs=12))
    cfg = builder.compose_manager_cfg()
    seed = builder.placer.placement_seed
    assert seed is not None
    expected = cube.member_indices_per_env(12, seed)
    assert builder.member_indices["cube"] == expected and len(set(expected)) > 1
    # the clone assignment spawns exactly those members, and the solver sized candidates with them
    assert cfg.scene.clone_cfg.clone_strategy.layout.tolist() == expected
    problem = builder.placer.placer.compile(builder.placer.assets, 12)
    heights = (problem.local_hi - problem.local_lo)[:, problem.object_names.index("cube"), 2].cpu()
    torch.testing.assert_close(heights, torch.tensor([0.04, 0.08, 0.12])[expected], atol=1e-5, rtol=0)
    z = builder.placer.creation_poses[:, 0, 2]
    assert torch.all(z - (TOP_Z + heights / 2) > -2e-3) and torch.all(z - (TOP_Z + heights / 2) < 1.6e-2)

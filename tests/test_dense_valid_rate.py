"""Valid-layout rate of the dense tabletop example (isaaclab_arena_environments/tabletop/dense_tabletop.yaml)
and of the benchmark's all_relations scene on the first batch: FaceTo headings are re-evaluated during
the solve (the mug's rotated footprint stays inside the table's inset), a NextTo subject pinned beside
its parent passes overlap pushes to that parent, and candidates stuck in a local minimum at a late
checkpoint are restarted. Fixed seeds; the figures are deterministic on the CPU."""

from __future__ import annotations

import os

import torch

from isaaclab_arena import ARENA_ROOT
from isaaclab_arena.relations.object_placer import ObjectPlacer
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams
from isaaclab_arena.benchmarks.scenes import all_relations_scene
from isaaclab_arena.relations.diagnostics.placement_diagnostics import rejection_records

DENSE = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "tabletop", "dense_tabletop.yaml")
N = 2048


def first_batch(assets, seed: int = 1):
    placer = ObjectPlacer(ObjectPlacerParams(placement_seed=seed, solver_params=RelationSolverParams(verbose=False)))
    problem = placer.compile(assets, N)
    return placer.place_problem(problem, torch.arange(N), torch.zeros(N, dtype=torch.long))


def test_dense_tabletop_first_batch_valid_rate():
    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec

    assets = ArenaEnvGraphSpec.from_yaml(DENSE).to_arena_env().assets
    batch = first_batch(assets)
    rate = batch.passed.float().mean().item()
    assert rate >= 0.999, f"dense_tabletop first-batch valid rate {rate:.4f} < 0.999"
    # the FaceTo subject (mug) is never left with its turned footprint outside the table's inset
    assert int(batch.check_results["on_relation"].sum()) == N
    # the verdicts are the checks' own: a rejected candidate carries a rejection record naming it
    bad = (~batch.passed).nonzero().flatten()
    if len(bad):
        recs = rejection_records(batch.select(bad[:1]))
        assert recs and recs[0].check in batch.check_results


def test_dense_tabletop_same_seed_same_layouts():
    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec

    assets = ArenaEnvGraphSpec.from_yaml(DENSE).to_arena_env().assets
    a, b = first_batch(assets, seed=3), first_batch(assets, seed=3)
    assert torch.equal(a.positions, b.positions) and torch.equal(a.passed, b.passed)


def test_all_relations_first_batch_valid_rate():
    batch = first_batch(all_relations_scene())
    rate = batch.passed.float().mean().item()
    assert rate >= 0.999, f"all_relations first-batch valid rate {rate:.4f} < 0.999"

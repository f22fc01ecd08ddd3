"""On the CPU a large batch runs in chunks of ``relation_solver.CHUNK_ROWS`` candidates per thread (each chunk
through all three launches): results equal those of one piece, candidate by candidate."""

from __future__ import annotations

import pytest
import torch

from isaaclab_arena.benchmarks.scenes import SCENES
from isaaclab_arena.relations import relation_solver
from isaaclab_arena.relations.object_placer import ObjectPlacer
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams


@pytest.mark.parametrize("scene", ["boxes3", "crowded14", "clutter"])
def test_chunks_give_the_results_of_one_piece(scene, monkeypatch):
    env = torch.arange(3000) % 64
    draw = torch.arange(3000) // 64
    out = []
    for chunk in (10**9, 700):  # one piece; then 3 chunks of a thread's 1,500 rows (two threads)
        monkeypatch.setattr(relation_solver, "CHUNK_ROWS", chunk)
        placer = ObjectPlacer(ObjectPlacerParams(placement_seed=7, solver_params=RelationSolverParams(
            verbose=False, cpu_threads=2)), extensions=[])
        problem = placer.compile(SCENES[scene](), 64)
        out.append(placer.place_problem(problem, env, draw))
        ws = next(iter(placer.solver._spaces.values()))
        assert [len(chunks) for chunks in ws.parts] == ([1, 1] if chunk > 3000 else [3, 3])
    a, b = out
    for field in ("positions", "rotations", "loss"):
        assert torch.equal(getattr(a, field), getattr(b, field)), field
    assert torch.equal(a.passed, b.passed) and torch.equal(a.solved.iterations, b.solved.iterations)
    assert torch.equal(a.solved.relation_excess, b.solved.relation_excess)

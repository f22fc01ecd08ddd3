"""Runs of candidates per kernel thread (``kernels/launch.py``, issue 21): on the CPU each kernel call handles
``CPU_ROWS_PER_TASK`` candidates in a row. Shown here: the run length changes no candidate's result in any stage
(generate, solve with iterations and restarts, finalize, solving given candidates, checking given layouts),
batches that do not fill their last run included, and a kernel that stopped at the end of a full run (the last,
partial one left out) would be caught."""

from __future__ import annotations

import pytest
import torch

from isaaclab_arena.benchmarks.scenes import SCENES
from isaaclab_arena.relations.compiler.compile_problem import compile_placement_problem
from isaaclab_arena.relations.kernels import launch
from isaaclab_arena.relations.object_placer import ObjectPlacer
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.relations.relation_solver import RelationSolver
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams
from isaaclab_arena.relations.solving import evaluation
from isaaclab_arena.relations.solving.evaluation import evaluate_poses
from isaaclab_arena.relations.solving.placement_candidate_generator import PlacementCandidateGenerator

FIELDS = ("positions", "rotations", "loss", "iterations", "relation_excess", "relation_cause", "overlap_pair",
          "overlap_depth", "clearance_pair", "clearance_depth", "builtin_verdicts", "builtin_fail_bits")


def _placer(seed: int) -> ObjectPlacer:
    return ObjectPlacer(ObjectPlacerParams(placement_seed=seed, solver_params=RelationSolverParams(verbose=False)),
                        extensions=[])


def _stages(scene: str, b: int, rows: int, monkeypatch) -> dict:
    """Every stage's output for batch size ``b`` with ``rows`` candidates per kernel call (fresh placer, problem
    and workspaces, so that no recorded launch of another run length is reused)."""
    monkeypatch.setattr(launch, "CPU_ROWS_PER_TASK", rows)
    placer = _placer(11)
    problem = placer.compile(SCENES[scene](), 8)
    env, draw = torch.arange(b) % 8, torch.arange(b) // 8
    solved = placer.place_problem(problem, env, draw).solved
    pos = solved.positions.clone()
    pos[::4, 0] = pos[::4, -1]  # every fourth layout with two objects on one spot
    checked = evaluate_poses(problem, env, pos, solved.rotations)
    params = ObjectPlacerParams(placement_seed=11)
    raw = compile_placement_problem(SCENES[scene](), 8, 11, params)
    solver = RelationSolver(RelationSolverParams(verbose=False))
    generated = PlacementCandidateGenerator(solver).generate(raw, env, draw)
    given = solver.solve_candidates(raw, generated)
    return {"solved": solved, "checked": checked, "generated": generated, "given": given}


def _assert_same(a: dict, b: dict) -> None:
    for stage in a:
        for f in FIELDS:
            x, y = getattr(a[stage], f, None), getattr(b[stage], f, None)
            if x is None and y is None:
                continue
            assert torch.equal(x, y), (stage, f)


@pytest.mark.parametrize("scene, b", [("boxes3", 1000), ("crowded14", 300)])
def test_run_length_changes_no_result(scene, b, monkeypatch):
    """1000 and 300 candidates: 2 threads of 500 / 150, runs of 64 leave a partial last run; runs of 7 and 1
    (one candidate per call, the GPU's shape) give the same bits in every stage."""
    one = _stages(scene, b, 1, monkeypatch)
    assert int(one["solved"].iterations.max()) > 0 or scene == "boxes3"  # crowded14 iterates
    assert bool((~one["checked"].builtin_verdicts.all(1))[::4].all())  # the doubled spot is caught
    for rows in (7, 64):
        _assert_same(one, _stages(scene, b, rows, monkeypatch))


def test_a_kernel_that_drops_the_partial_run_is_caught(monkeypatch):
    """The comparison above fails when a launch leaves the last, partial run out: with the launch dim rounded
    down instead of up, the last candidates keep the workspace's zeros."""
    one = _stages("boxes3", 1000, 1, monkeypatch)
    def rounded_down(count, device):
        return count // 64, 64, count

    monkeypatch.setattr(launch, "launch_rows", rounded_down)
    monkeypatch.setattr(evaluation, "launch_rows", rounded_down)
    dropped = _stages("boxes3", 1000, 64, monkeypatch)
    with pytest.raises(AssertionError):
        _assert_same(one, dropped)


@pytest.mark.parametrize("count, device, expected", [(1000, "cpu", (16, 64, 1000)), (64, "cpu", (1, 64, 64)),
                                                     (1, "cpu", (1, 64, 1)), (1000, "cuda:0", (1000, 1, 1000))])
def test_launch_shape(count, device, expected):
    assert launch.launch_rows(count, device) == expected

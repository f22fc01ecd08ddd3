"""The pipeline stages on their own: compile, generate, solve, validate; determinism with the CPU
thread split."""

from __future__ import annotations

import torch

from isaaclab_arena.relations.object_placer import ObjectPlacer
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.relations.solving.placement_candidate_generator import PlacementCandidateGenerator
from isaaclab_arena.relations.compiler.compile_problem import compile_placement_problem
from isaaclab_arena.relations.solving.evaluation import evaluate_poses
from isaaclab_arena.relations.kinds import CHECK_SLOTS
from isaaclab_arena.relations.relation_solver import RelationSolver
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams
from isaaclab_arena.benchmarks.scenes import SCENES
from isaaclab_arena.relations.validation.runner import PlacementValidationRunner


def test_compiled_tables_describe_the_scene():
    params = ObjectPlacerParams()
    problem = compile_placement_problem(SCENES["mug_bowl"](), 3, 7, params)
    assert problem.object_names == ["mug", "bowl"] and problem.fixed_names == ["table"]
    # rows grouped by kind in kinds.KINDS order (on, ..., next_to), scene order within a kind
    assert [r.check for r in problem.relations] == ["on_relation", "on_relation", "next_to"]
    assert problem.pairs.tolist() == [[0, 1]]  # mug-bowl; both On the table (exempt)
    assert problem.local_lo.shape == (3, 3, 3)
    assert torch.allclose(problem.fixed_hi[0, 0], torch.tensor([0.6, 0.4, 0.75]))
    assert CHECK_SLOTS[0] == "no_overlap"


def test_generate_then_solve_then_validate():
    params = ObjectPlacerParams(placement_seed=4)
    problem = compile_placement_problem(SCENES["crowded14"](), 4, 4, params)
    solver = RelationSolver(RelationSolverParams())
    gen = PlacementCandidateGenerator(solver)
    batch = gen.generate(problem, torch.arange(32) % 4, torch.arange(32) // 4)
    assert batch.loss is None and batch.iterations is None and not batch.evaluated  # poses only
    z = batch.positions[..., 2]
    assert torch.all((z > 0.75) & (z < 0.9))  # every start rests on the table
    runner = PlacementValidationRunner.from_params(params)
    start = runner.validate(evaluate_poses(problem, batch.env_ids, batch.positions, batch.rotations))
    solved = solver.solve_candidates(problem, batch)
    assert solved is not batch and torch.equal(batch.positions, gen.generate(problem, batch.env_ids, batch.draw_ids).positions)
    after = runner.validate(solved)
    assert int(after.passed.sum()) >= int(start.passed.sum())
    assert after.passed.float().mean() >= 0.95


def test_thread_split_does_not_change_layouts():
    """Any cpu_threads value gives bit-identical layouts (each part of a split batch is launched; a candidate's
    result depends only on its own random stream)."""
    scene = SCENES["crowded14"]()
    envs = torch.arange(600) % 300
    draws = torch.arange(600) // 300
    runs = {}
    for threads in (1, 2, 3, 4, 8):
        pl = ObjectPlacer(ObjectPlacerParams(placement_seed=9, solver_params=RelationSolverParams(
            cpu_threads=threads, verbose=False)))
        runs[threads] = pl.place_batch(scene, envs, draws, num_envs=300)
    ref = runs[1]
    assert bool(ref.passed.all()) and float(ref.positions.abs().sum()) > 0.0  # every row was solved
    for threads, b in runs.items():
        assert torch.equal(b.positions, ref.positions), threads
        assert torch.equal(b.rotations, ref.rotations) and torch.equal(b.iterations, ref.iterations), threads
    one = ObjectPlacer(ObjectPlacerParams(placement_seed=9)).place_batch(scene, [299], [1], num_envs=300)
    assert torch.equal(one.positions[0], ref.positions[-1])
    assert RelationSolverParams().cpu_threads >= 1  # default: the cores this process may use


def test_solver_params_validation():
    import pytest

    with pytest.raises(ValueError, match="cpu_threads"):
        RelationSolverParams(cpu_threads=0)
    with pytest.raises(ValueError, match="beta1"):
        RelationSolverParams(beta1=1.0)
    with pytest.raises(ValueError, match="no loss strategy registered for RandomAroundSolution"):
        from isaaclab_arena.relations.relations import RandomAroundSolution

        RelationSolverParams().strategy_for(RandomAroundSolution)


def test_initial_sampling_follows_the_on_chain_else_the_first_anchor():
    from isaaclab_arena.relations.relations import IsAnchor, NotNextTo, On
    from isaaclab_arena.benchmarks.scenes import cuboid, on_table, table
    from isaaclab_arena.utils.pose import Pose

    shelf = cuboid("shelf", (0.6, 0.4, 1.0), Pose((3.0, 0.0, 0.5)))  # the first anchor collected
    shelf.add_relation(IsAnchor())
    t = table()
    plate = on_table(t, "plate", (0.3, 0.3, 0.02))
    cup = cuboid("cup", (0.05, 0.05, 0.05))
    cup.add_relation(On(plate, overlap=True))  # chain cup -> plate -> table
    lost = cuboid("lost", (0.05, 0.05, 0.05))
    lost.add_relation(NotNextTo(plate))  # no On chain: starts on the first anchor
    a = cuboid("a", (0.05, 0.05, 0.05))
    b = cuboid("b", (0.05, 0.05, 0.05))
    a.add_relation(On(b, overlap=True))
    b.add_relation(On(a, overlap=True))  # a loop: first anchor as well
    scene = [shelf, t, plate, cup, lost, a, b]
    # the On loop can never hold (the feasibility pre-check refuses it while on_relation is required)
    params = ObjectPlacerParams(placement_seed=2, required_checks=["no_overlap"])
    problem = compile_placement_problem(scene, 4, 2, params)
    batch = PlacementCandidateGenerator(RelationSolver()).generate(problem, torch.arange(16) % 4, torch.arange(16) // 4)
    pos = {n: batch.positions[:, k] for k, n in enumerate(problem.object_names)}
    for name in ("plate", "cup"):
        assert bool((pos[name][:, 0].abs() <= 0.6).all()), name  # on the table, not the shelf
    for name in ("lost", "a", "b"):
        assert bool(((pos[name][:, 0] - 3.0).abs() <= 0.3).all()), name  # on the shelf's footprint
    assert bool((pos["lost"][:, 2] >= 1.0).all())  # drawn on the shelf top
    assert len({round(float(x), 4) for x in pos["lost"][:, 0]}) > 8  # drawn, not just centred


def test_checking_given_layouts_on_several_threads_changes_no_verdict_and_each_batch_owns_its_tensors():
    """``evaluate_poses`` keeps its buffers between calls and splits large batches over threads: the verdicts,
    excesses and pairs are the same on 1, 2 and 3 threads, a batch returned earlier is not overwritten by a later
    call, and layouts moved into overlap are rejected (the check does run)."""
    params = ObjectPlacerParams(placement_seed=5, solver_params=RelationSolverParams(verbose=False))
    problem = compile_placement_problem(SCENES["crowded14"](), 400, 5, params)
    envs = torch.arange(400)
    solved = ObjectPlacer(params).place_problem(problem, envs, envs)
    pos, rot = solved.positions.clone(), solved.solved.rotations.clone()
    bad = pos.clone()
    bad[::2, 1] = bad[::2, 0]  # every other layout: object 1 moved onto object 0
    first = evaluate_poses(problem, envs, pos, rot, threads=1)
    kept = first.builtin_fail_bits.clone()
    fields = ("builtin_fail_bits", "relation_excess", "relation_cause", "overlap_pair", "overlap_depth", "loss")
    for threads in (2, 3):
        again = evaluate_poses(problem, envs, bad, rot, threads=threads)
        ref = evaluate_poses(problem, envs, bad, rot, threads=1)
        for name in fields:
            assert torch.equal(getattr(again, name), getattr(ref, name)), (threads, name)
        assert bool((again.builtin_fail_bits[::2] != 0).all()) and bool((again.builtin_fail_bits[1::2] == 0).all())
    assert torch.equal(first.builtin_fail_bits, kept) and bool((kept == 0).all())  # still the clean verdicts


def test_solves_split_over_threads_return_every_output_and_each_batch_owns_its_tensors():
    """A solve split over threads: every output of crowded14 (600 candidates, some optimised) is the same on 1, 2
    and 3 threads and is what the check pass finds on the returned poses, and a batch returned earlier is not
    overwritten by a later solve of other draws (the workspace's buffers are reused)."""
    fields = ("positions", "rotations", "loss", "iterations", "relation_excess", "relation_cause", "overlap_pair",
              "overlap_depth", "clearance_pair", "clearance_depth", "builtin_verdicts", "builtin_fail_bits")
    envs = torch.arange(600) % 50
    draws = torch.arange(600)
    results = {}
    for threads in (1, 2, 3):
        params = ObjectPlacerParams(placement_seed=5, solver_params=RelationSolverParams(verbose=False,
                                                                                         cpu_threads=threads))
        problem = compile_placement_problem(SCENES["crowded14"](), 50, 5, params)
        solver = RelationSolver(params.solver_params)
        first = solver.solve(problem, envs, draws)
        kept = {f: getattr(first, f).clone() for f in fields}
        second = solver.solve(problem, envs, draws + 600)
        for f in fields:
            assert torch.equal(getattr(first, f), kept[f]), (threads, f)  # not overwritten by the second solve
        assert not torch.equal(second.positions, first.positions)
        results[threads] = kept
    assert bool((results[1]["iterations"] > 0).any()) and bool((results[1]["builtin_fail_bits"] == 0).any())
    # and they are the outputs: the check pass on the returned poses gives the same verdicts, excesses and pairs
    checked = evaluate_poses(problem, envs, results[1]["positions"], results[1]["rotations"])
    for f in ("builtin_fail_bits", "builtin_verdicts", "relation_excess", "relation_cause", "overlap_pair",
              "overlap_depth", "clearance_pair", "clearance_depth"):
        assert torch.equal(getattr(checked, f), results[1][f]), f
    for threads in (2, 3):
        for f in fields:
            assert torch.equal(results[threads][f], results[1][f]), (threads, f)

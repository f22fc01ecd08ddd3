"""Every RelationSolverParams reporting / stopping setting has an effect: verbose and profile lines,
the position history, the convergence_threshold stop (never stopping a layout the checks reject), and
the not-yet-available debug viewer and MESH mode (clear warning / error). Real solver, no mocks."""

from __future__ import annotations

import logging
import re

import pytest
import torch

from isaaclab_arena.relations.object_placer import ObjectPlacer
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.relations.optimization.losses.relation_loss_strategies import NotNextToLossStrategy
from isaaclab_arena.relations.solving.evaluation import evaluate_poses
from isaaclab_arena.relations.solving.placement_candidate_generator import PlacementCandidateGenerator
from isaaclab_arena.relations.pooled_object_placer import PooledObjectPlacer
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams
from isaaclab_arena.relations.relations import AtPosition, NotNextTo, PositionLimitsBox, Side
from isaaclab_arena.benchmarks.scenes import SCENES, crowded_scene, cuboid, on_table, table
from isaaclab_arena.utils.pose import Pose

SOLVER_LINE = re.compile(r"^\[solver\] (\d+) candidates: (\d+) converged, iterations median/max (\d+)/(\d+), "
                         r"final loss median/max (\S+)/(\S+), ([0-9.]+) ms$")
PROFILE_LINE = re.compile(r"^\[solver profile\] wall_ms=([0-9.]+) batch=(\d+) pairs=(\d+) init_ms=([0-9.]+) "
                          r"iterate_ms=([0-9.]+) finalize_ms=([0-9.]+) iterations_max=(\d+) ms_per_iter=([0-9.]+)$")


def placer(**solver) -> ObjectPlacer:
    solver.setdefault("verbose", False)
    return ObjectPlacer(ObjectPlacerParams(placement_seed=3, solver_params=RelationSolverParams(**solver)))


def ids(b: int, envs: int):
    return torch.arange(b) % envs, torch.arange(b) // envs


def lines(out: str, prefix: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(prefix)]


# ---------------------------------------------------------------------------------------------- verbose
def test_verbose_prints_one_line_per_solve_call_from_the_batch_tensors(capsys):
    pl = ObjectPlacer(ObjectPlacerParams(placement_seed=3))  # verbose is on by default
    assert pl.solver.params.verbose
    env, draw = ids(96, 32)
    batch = pl.place_batch(SCENES["all_relations"](), env, draw, num_envs=32)
    out = lines(capsys.readouterr().out, "[solver]")
    assert len(out) == 1, out
    m = SOLVER_LINE.match(out[0])
    assert m, out[0]
    it = batch.iterations
    assert int(m[1]) == 96
    assert int(m[2]) == int((it < 600).sum())
    assert int(m[3]) == int(it.float().median()) and int(m[4]) == int(it.max()) and int(m[4]) > 0
    assert float(m[5]) == pytest.approx(float(batch.loss.median()), rel=1e-3, abs=1e-4)
    assert float(m[6]) == pytest.approx(float(batch.loss.max()), rel=1e-3, abs=1e-4)
    assert float(m[7]) > 0.0
    # place(): one line for the whole call (2 envs x 10 attempts)
    pl.place(SCENES["mug_bowl"](), num_envs=2)
    out = lines(capsys.readouterr().out, "[solver]")
    assert len(out) == 1 and out[0].startswith("[solver] 20 candidates: 20 converged"), out


def test_verbose_off_prints_nothing(capsys):
    placer(verbose=False).place_batch(SCENES["all_relations"](), *ids(64, 8), num_envs=8)
    placer(verbose=False).place(SCENES["mug_bowl"](), num_envs=2)
    assert capsys.readouterr().out == ""


def test_verbose_counts_candidates_that_hit_the_cap_as_not_converged(capsys):
    pl = placer(verbose=True, max_iters=1)
    batch = pl.place_batch(SCENES["crowded14"](), *ids(128, 16), num_envs=16)
    capped = int((batch.iterations == 1).sum())
    assert capped > 0  # crowded14 starts some candidates overlapping: one step is not enough for them
    m = SOLVER_LINE.match(lines(capsys.readouterr().out, "[solver]")[0])
    assert int(m[1]) == 128 and int(m[2]) == 128 - capped and int(m[4]) == 1


def test_pooled_fill_prints_one_solver_line_per_batch(capsys, monkeypatch):
    calls = []
    orig = ObjectPlacer.place_batch

    def counted(self, *a, **kw):
        calls.append(1)
        return orig(self, *a, **kw)

    monkeypatch.setattr(ObjectPlacer, "place_batch", counted)
    pool = PooledObjectPlacer(SCENES["mug_bowl"](), ObjectPlacerParams(placement_seed=5, min_unique_layouts_per_env=3,
                                                                       max_placement_attempts=4), num_envs=4)
    pool.initialize()
    out = lines(capsys.readouterr().out, "[solver]")
    assert calls and len(out) == len(calls), out
    assert all(SOLVER_LINE.match(line) for line in out)


# ---------------------------------------------------------------------------------------------- profile
@pytest.mark.slow
def test_profile_prints_wall_time_batch_pairs_and_ms_per_iter(capsys):
    pl = placer(profile=True, init_attempts=1)  # one draw per object: some candidates are left to iterate
    scene = SCENES["all_relations"]()
    batch = pl.place_batch(scene, *ids(64, 8), num_envs=8)
    out = lines(capsys.readouterr().out, "[solver profile]")
    assert len(out) == 1, out
    m = PROFILE_LINE.match(out[0])
    assert m, out[0]
    wall, b, pairs, t_init, t_iter, t_fin, it_max, per_iter = m.groups()
    assert int(b) == 64 and int(pairs) == len(pl.compile(scene, 8).pairs) and int(pairs) > 0
    assert int(it_max) == int(batch.iterations.max()) > 0
    assert float(wall) > 0 and float(t_init) > 0 and float(t_iter) > 0 and float(t_fin) > 0
    assert float(wall) >= float(t_init) + float(t_iter) + float(t_fin) - 1e-3
    assert float(per_iter) == pytest.approx(float(t_iter) / int(it_max), rel=0.02, abs=2e-5)
    # the general solve path reports too
    problem = pl.compile(scene, 8)
    start = PlacementCandidateGenerator(pl.solver).generate(problem, *ids(16, 8))
    assert lines(capsys.readouterr().out, "[solver") == []  # generation alone (no iterations) is not reported
    pl.solver.solve_candidates(problem, start)
    m = PROFILE_LINE.match(lines(capsys.readouterr().out, "[solver profile]")[0])
    assert int(m[2]) == 16


def test_profile_off_prints_nothing_and_does_not_change_layouts(capsys):
    scene = SCENES["all_relations"]()
    plain = placer().place_batch(scene, *ids(64, 8), num_envs=8)
    assert capsys.readouterr().out == ""
    profiled = placer(profile=True).place_batch(scene, *ids(64, 8), num_envs=8)
    assert torch.equal(plain.positions, profiled.positions) and torch.equal(plain.iterations, profiled.iterations)


# ----------------------------------------------------------------------------------- position history
def test_position_history_snapshots_every_10_iterations_nan_after_the_stop():
    scene = crowded_scene(24)  # dense enough that some candidates iterate
    env, draw = ids(96, 32)
    pl = placer(save_position_history=True, init_attempts=1)  # one draw per object: some candidates iterate
    batch = pl.place_batch(scene, env, draw, num_envs=32)
    h = batch.position_history
    n = len(batch.object_names)
    assert h.shape == (96, 600 // 10 + 1, n, 3) and h.dtype == torch.float32
    assert pl.solver.last_position_history is h
    # slot k holds the positions after 10 k iterations: present exactly while 10 k <= iterations, else NaN
    k = torch.arange(h.shape[1])
    present = (10 * k)[None, :] <= batch.iterations[:, None]
    finite = torch.isfinite(h).all(-1).all(-1)
    assert torch.equal(finite, present) and torch.isnan(h[~present]).all()
    assert int(batch.iterations.max()) >= 10  # some candidates leave more than one snapshot
    # slot 0 is the initial candidate the generator draws for the same (env, draw), up to the FaceTo headings
    # the solve refreshes from the drawn positions before its first snapshot
    start = PlacementCandidateGenerator(pl.solver).generate(pl.compile(scene, 32), env, draw)
    assert (h[:, 0] - start.positions).abs().max() < 1e-3
    plain = crowded_scene(24)  # no FaceTo: slot 0 is exactly the generated candidate
    h0 = pl.place_batch(plain, env, draw, num_envs=32).position_history[:, 0]
    torch.testing.assert_close(h0, PlacementCandidateGenerator(pl.solver).generate(pl.compile(plain, 32), env, draw)
                               .positions, atol=1e-6, rtol=0)
    moved = present[:, 1] & ((h[:, 1] - h[:, 0]).abs().amax((-1, -2)) > 1e-4)
    assert moved.any()  # the snapshots follow the solve
    # select() keeps the history with its candidates
    sub = batch.select(torch.tensor([5, 2]))
    torch.testing.assert_close(sub.position_history, h[[5, 2]], equal_nan=True, atol=0, rtol=0)


def test_position_history_off_is_none_and_the_flag_does_not_change_the_solve():
    scene = SCENES["all_relations"]()
    env, draw = ids(64, 8)
    off = placer()
    a = off.place_batch(scene, env, draw, num_envs=8)
    assert a.position_history is None and off.solver.last_position_history is None
    assert all(ws.hist is None for ws in off.solver._spaces.values())  # no history buffer is allocated
    b = placer(save_position_history=True).place_batch(scene, env, draw, num_envs=8)
    assert torch.equal(a.positions, b.positions) and torch.equal(a.iterations, b.iterations)
    assert torch.equal(a.passed, b.passed)


def test_position_history_follows_max_iters_and_the_solve_path():
    scene = SCENES["crowded14"]()
    pl = placer(save_position_history=True, max_iters=25)
    batch = pl.place_batch(scene, *ids(32, 8), num_envs=8)
    assert batch.position_history.shape[1] == 3  # after 0, 10 and 20 iterations
    # the general path: generate, then solve the generated candidates
    problem = pl.compile(scene, 8)
    start = PlacementCandidateGenerator(pl.solver).generate(problem, *ids(16, 8))
    assert start.position_history is None
    h = pl.solver.solve_candidates(problem, start).position_history
    assert h.shape == (16, 3, len(problem.object_names), 3) and torch.isfinite(h[:, 0]).all()


# ------------------------------------------------------------------------------ convergence_threshold
def _crowded_around_a_wall():
    """Crowded boxes on a table split by a fixed wall: the solver aims for its clearance from the wall, the
    checks accept touching it, so the checks' thresholds can hold before the solver's do."""
    scene = crowded_scene(16)
    scene.append(cuboid("wall", (0.1, 0.8, 0.3), Pose((0.0, 0.0, 0.9))))
    return scene


def test_convergence_threshold_stops_at_the_checks_thresholds_once_the_loss_is_low():
    scene = _crowded_around_a_wall()
    env, draw = ids(256, 32)
    strict = placer(convergence_threshold=0.0).place_batch(scene, env, draw, num_envs=32)
    default = placer().place_batch(scene, env, draw, num_envs=32)
    loose = placer(convergence_threshold=1e9).place_batch(scene, env, draw, num_envs=32)
    # a larger threshold can only stop a candidate earlier (the trajectory is the same until it stops)
    assert bool((default.iterations <= strict.iterations).all()) and bool((loose.iterations <= default.iterations).all())
    assert int(loose.iterations.sum()) < int(strict.iterations.sum())
    # threshold 0: every stop reached the solver's clearance from the wall too (loss 0); a huge threshold stops as
    # soon as the checks hold, some short of it (loss > 0); every layout that stopped passes its checks
    stopped = strict.iterations < 600
    assert float(strict.loss[stopped].max()) == 0.0 and float(loose.loss.max()) > 0.0
    for batch in (strict, default, loose):
        assert bool(batch.passed[batch.iterations < 600].all())


def _keep_out_scene():
    t = table()
    a = on_table(t, "a", (0.1, 0.1, 0.1))
    a.add_relation(AtPosition(x=0.0, y=0.0))
    b = on_table(t, "b", (0.1, 0.1, 0.1))
    b.add_relation(NotNextTo(a, side=Side.POSITIVE_X))
    b.add_relation(PositionLimitsBox(x_limits=(0.2, None)))
    return [t, a, b]


def test_convergence_threshold_never_stops_a_layout_the_checks_reject():
    # a keep-out slope of 1e-6 makes any violation's loss (1e-6 x depth) fall below the default 1e-4
    # threshold from the first iteration: a loss-only stop would keep violating layouts
    sp = RelationSolverParams(verbose=False, init_attempts=1)
    sp.strategies[NotNextTo] = NotNextToLossStrategy(slope=1e-6)
    pl = ObjectPlacer(ObjectPlacerParams(placement_seed=3, solver_params=sp))
    scene = _keep_out_scene()
    env, draw = ids(128, 16)
    start = PlacementCandidateGenerator(pl.solver).generate(pl.compile(scene, 16), env, draw)
    evaluated = evaluate_poses(pl.compile(scene, 16), start.env_ids, start.positions, start.rotations)
    bad = ~pl.runner.validate(evaluated).verdicts["not_next_to"]
    assert int(bad.sum()) > 0  # some initial draws violate the keep-out
    batch = pl.place_batch(scene, env, draw, num_envs=16)
    assert bool((batch.iterations[bad] > 0).all())  # they were not stopped at their low loss
    stopped = batch.iterations < sp.max_iters
    assert bool(batch.check_results["not_next_to"][stopped].all()) and bool(batch.passed.all())


def test_convergence_threshold_is_validated():
    with pytest.raises(ValueError, match="RelationSolverParams: convergence_threshold must be >= 0, got -1"):
        RelationSolverParams(convergence_threshold=-1.0)


# ------------------------------------------------------------------------- MESH collision mode
def test_mesh_collision_mode_without_meshes_places_like_bbox(caplog):
    """Plain-geometry objects have no collision mesh: in MESH mode their pairs stay on boxes ([NoCollision]),
    so the layouts are those of BBOX mode, bit for bit."""
    from isaaclab_arena.relations.mesh.logs import forget_logged

    forget_logged()
    env = torch.arange(16)
    with caplog.at_level(logging.WARNING, logger="isaaclab_arena.relations.mesh"):
        mesh = placer(collision_mode="mesh").place_batch(SCENES["mug_bowl"](), env, env * 0, num_envs=16)
    box = placer(collision_mode="bbox").place_batch(SCENES["mug_bowl"](), env, env * 0, num_envs=16)
    assert torch.equal(mesh.positions, box.positions) and bool(mesh.passed.all())
    assert any("[NoCollision]" in r.getMessage() and "'mug'" in r.getMessage() for r in caplog.records)

"""The Rerun debug view (``debug_visualize``): what it draws (plain numpy re-checks of the geometry), the
``.rrd`` it writes for a failing scene read back with rerun's own reader, the error without rerun-sdk, and
that with the flags off the core never touches it.

The tests that write recordings need ``rerun-sdk`` (pinned in ``requirements.txt``, so the project's environment
has it); in an environment without it they skip, saying so. The tests of the error without it hide the package
(``_hide_rerun``: a ``rerun`` package on ``PYTHONPATH`` that raises ``ImportError``).
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from _helpers import fresh_interpreter_last_line
from isaaclab_arena import ARENA_ROOT
from isaaclab_arena.debug import view_geometry as geo
from isaaclab_arena.debug.rerun_import import INSTALL_COMMAND, DebugViewerUnavailableError, import_rerun
from isaaclab_arena.relations.solving.evaluation import evaluate_poses
from isaaclab_arena.relations.markers import RequiresReachability
from isaaclab_arena.relations.object_placer import ObjectPlacer
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams
from isaaclab_arena.relations.relations import NextTo, NotNextTo, PositionLimitsBox, Side
from isaaclab_arena.benchmarks.scenes import SCENES, on_table, table

try:
    import_rerun()
    HAVE_RERUN = True
except DebugViewerUnavailableError:
    HAVE_RERUN = False
needs_rerun = pytest.mark.skipif(not HAVE_RERUN, reason=f"rerun-sdk is not installed ({INSTALL_COMMAND})")


def conflict_scene():
    """'b' must be next to 'a' on +X and must not be past a's +X side: every candidate fails not_next_to."""
    t = table()
    a = on_table(t, "a", (0.1, 0.1, 0.1))
    b = on_table(t, "b", (0.1, 0.1, 0.1), NextTo(a, side=Side.POSITIVE_X, distance_m=0.05),
                 NotNextTo(a, side=Side.POSITIVE_X))
    return [t, a, b]


def solver(**kw):
    return RelationSolverParams(verbose=False, **kw)


# ---------------------------------------------------------------------------------------- geometry (no rerun)
def test_support_and_keep_out_regions_match_the_relations_in_float64():
    scene = conflict_scene()
    pl = ObjectPlacer(ObjectPlacerParams(placement_seed=1, solver_params=solver(save_position_history=True)))
    vb = pl.place_batch(scene, [0, 0], [0, 1], num_envs=1)
    regions = {(r.rid, r.role): r for r in geo.relation_regions(vb.solved, pl.params.solver_params)}
    p = vb.problem
    on_a = next(cr.rid for cr in p.relations if cr.subject == "a" and cr.relation.yaml_kind == "on")
    keep = next(cr.rid for cr in p.relations if cr.relation.yaml_kind == "not_next_to")
    # table 1.2 x 0.8 m, top at 0.75 m, On edge margin 0.05 m
    sup = regions[(on_a, "support")]
    np.testing.assert_allclose(sup.center[0], [0.0, 0.0, 0.75], atol=1e-6)
    np.testing.assert_allclose(sup.half_size[0], [0.55, 0.35, geo.FLAT_HALF_M], atol=1e-6)
    # keep-out: past a's +X face, a's Y footprint grown by the NotNextTo margin (0.1 m by default)
    ko = regions[(keep, "keep_out")]
    a = p.object_names.index("a")
    a_lo = vb.positions[:, a].double().numpy() - 0.05
    a_hi = vb.positions[:, a].double().numpy() + 0.05
    np.testing.assert_allclose(ko.center[:, 0] - ko.half_size[:, 0], a_hi[:, 0], atol=1e-6)
    np.testing.assert_allclose(ko.half_size[:, 1], 0.05 + 0.1, atol=1e-6)
    np.testing.assert_allclose(ko.center[:, 1], 0.5 * (a_lo[:, 1] + a_hi[:, 1]), atol=1e-6)
    # and the verdicts: not_next_to fails in both candidates (b's +X face is past a's), On holds
    ok = geo.relation_passed(vb.solved)
    assert not ok[:, keep].any() and ok[:, on_a].all()
    b = p.object_names.index("b")
    assert (vb.positions[:, b, 0] + 0.05 > vb.positions[:, a, 0] + 0.05).all()


def test_position_limits_region_and_segments():
    t = table()
    box = on_table(t, "box", (0.1, 0.1, 0.1), PositionLimitsBox(x_limits=(None, 0.2), y_limits=(-0.1, 0.1)))
    pl = ObjectPlacer(ObjectPlacerParams(placement_seed=2, solver_params=solver()))
    vb = pl.place_batch([t, box], [0, 0, 0], [0, 1, 2], num_envs=1)
    reg = [r for r in geo.relation_regions(vb.solved, pl.params.solver_params) if r.role == "limits"][0]
    lo, hi = reg.center - reg.half_size, reg.center + reg.half_size
    np.testing.assert_allclose(hi[:, 0], 0.2, atol=1e-6)
    np.testing.assert_allclose(lo[:, 0], -0.6, atol=1e-6)  # unbounded: drawn to the scene's extent (table)
    np.testing.assert_allclose(lo[:, 1], -0.1, atol=1e-6)
    seg = geo.relation_segments(vb.solved)
    on = next(cr.rid for cr in vb.problem.relations if cr.relation.yaml_kind == "on")
    np.testing.assert_allclose(seg[:, on, 1], np.tile([0.0, 0.0, 0.375], (3, 1)), atol=1e-6)  # table centre


def test_snapshot_losses_end_at_the_solved_loss_and_fill_stopped_candidates():
    scene = conflict_scene()
    pl = ObjectPlacer(ObjectPlacerParams(placement_seed=3, solver_params=solver(save_position_history=True,
                                                                                max_iters=60)))
    vb = pl.place_batch(scene, [0] * 4, list(range(4)), num_envs=1)
    h = vb.position_history
    filled = geo.forward_filled_history(h)
    assert not torch.isnan(filled).any()
    for b in range(len(vb)):  # a stopped candidate keeps its last snapshot (plain loop re-check)
        last = None
        for s in range(h.shape[1]):
            if not torch.isnan(h[b, s]).any():
                last = h[b, s]
            torch.testing.assert_close(filled[b, s], last)
    loss = geo.snapshot_losses(vb.solved)
    assert loss.shape == (4, h.shape[1])
    # the last snapshot is the final pose here (no modifiers): its loss is the solver's
    final = evaluate_poses(vb.problem, vb.env_ids, filled[:, -1], vb.rotations).loss
    np.testing.assert_allclose(loss[:, -1], final.double().numpy(), rtol=1e-6)
    assert (loss > 0).all()  # a conflict: never zero


@pytest.mark.slow
def test_debug_flags_off_never_import_the_view():
    code = ("import sys, torch\n"
            "from isaaclab_arena.relations.object_placer import ObjectPlacer\n"
            "from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams\n"
            "from isaaclab_arena.benchmarks.scenes import SCENES\n"
            "pl = ObjectPlacer(ObjectPlacerParams(placement_seed=1))\n"
            "pl.place(SCENES['mug_bowl']())\n"
            "assert pl.debug_view is None and not pl.solver.params.save_position_history\n"
            "print(sorted(m for m in sys.modules if m.startswith(('rerun', 'isaaclab_arena.debug'))))\n")
    # the default set holds the view's extension (a small module); the view and rerun are never imported
    assert fresh_interpreter_last_line(code) == "['isaaclab_arena.debug', 'isaaclab_arena.debug.extension']"


def _hide_rerun(tmp_path) -> str:
    """A folder holding a ``rerun`` package that cannot be imported: first on ``PYTHONPATH``, it hides the
    environment's rerun-sdk."""
    folder = tmp_path / "hide_rerun"
    (folder / "rerun").mkdir(parents=True)
    (folder / "rerun" / "__init__.py").write_text("raise ImportError('rerun-sdk hidden by the test')\n")
    return str(folder)


@pytest.mark.slow
def test_without_rerun_the_flag_fails_with_the_install_command(tmp_path):
    code = ("from isaaclab_arena.relations.object_placer import ObjectPlacer\n"
            "from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams\n"
            "ObjectPlacer(ObjectPlacerParams(debug_visualize=True))\n")
    env = {**os.environ, "ISAACLAB_ARENA_RERUN_DIR": str(tmp_path / "none"),
           "PYTHONPATH": f"{ARENA_ROOT}:{_hide_rerun(tmp_path)}"}
    out = subprocess.run([sys.executable, "-c", code], cwd=str(tmp_path), env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode != 0
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("isaaclab_arena.debug.rerun_import.DebugViewerUnavailableError: debug_visualize needs")
    assert last.endswith(f"install it with: {INSTALL_COMMAND}")


# ------------------------------------------------------------------------------------ the recording (rerun)
@needs_rerun
def test_failing_scene_rrd_has_entities_verdicts_and_loss_series(tmp_path):
    from isaaclab_arena.debug.rrd_contents import read_rrd

    path = str(tmp_path / "failing.rrd")
    pl = ObjectPlacer(ObjectPlacerParams(placement_seed=7, debug_visualize_output_path=path,
                                         solver_params=solver(max_iters=100)))
    vb = pl.place_batch(conflict_scene(), [0, 0, 1, 1, 1], [0, 1, 0, 1, 2], num_envs=2)
    assert pl.debug_view.path == path and not vb.passed.any()
    rrd = read_rrd(path)
    root = "/placement/batch_000"
    for e in ("objects/a", "objects/b", "anchors/table", "candidate", "overview/b"):
        assert f"{root}/{e}" in rrd, sorted(rrd)
    assert rrd[f"{root}/objects/a"].times["candidate"] == [0, 1, 2, 3, 4]
    # verdicts per candidate, as the validation gave them
    cand = rrd[f"{root}/candidate"].components
    for check in ("not_next_to", "on_relation", "next_to", "no_overlap"):
        got = [row[0] for row in cand[f"check.{check}"]]
        assert got == vb.validation.verdicts[check].tolist(), check
        scal = [row[0] for row in rrd[f"/checks/batch_000/{check}"].components["Scalars:scalars"]]
        assert scal == [float(v) for v in vb.validation.verdicts[check].tolist()]
    assert [row[0] for row in cand["passed"]] == [False] * 5
    assert all("inside the keep-out region" in row[0] for row in cand["causes"])
    np.testing.assert_allclose(np.array(cand["violation_m"]), vb.solved.relation_excess.double().numpy(), atol=1e-6)
    # the failing relation is drawn red with its cause, the others green
    p = vb.problem
    red, green = int.from_bytes(bytes((230, 40, 40, 255)), "big"), int.from_bytes(bytes((40, 190, 90, 255)), "big")
    for cr in p.relations:
        rel = rrd[f"{root}/relations/{cr.rid:02d}"].components
        colors = [row[0] for row in rel["LineStrips3D:colors"]]
        if cr.relation.yaml_kind == "not_next_to":
            assert colors == [red] * 5
            assert all("inside the keep-out region by" in row[0] for row in rel["LineStrips3D:labels"])
        else:
            assert colors == [green] * 5
    # the logged boxes re-checked in float64: b's +X face is past a's in every candidate (the keep-out)
    ca = np.array(rrd[f"{root}/objects/a"].components["Boxes3D:centers"])[:, 0]
    cb = np.array(rrd[f"{root}/objects/b"].components["Boxes3D:centers"])[:, 0]
    ha = np.array(rrd[f"{root}/objects/a"].components["Boxes3D:half_sizes"])[:, 0]
    hb = np.array(rrd[f"{root}/objects/b"].components["Boxes3D:half_sizes"])[:, 0]
    assert ((cb[:, 0] + hb[:, 0]) > (ca[:, 0] + ha[:, 0])).all()
    keep = next(cr.rid for cr in p.relations if cr.relation.yaml_kind == "not_next_to")
    assert f"{root}/regions/{keep:02d}_keep_out" in rrd
    # the loss per iteration: snapshots at 0, 10, ..., 100 iterations, never below the final loss's minimum
    mean = rrd["/solver/batch_000/loss/mean"]
    assert mean.times["iteration"] == list(range(0, 101, 10))
    per = np.array([row for row in rrd["/solver/batch_000/loss/candidates"].components["Scalars:scalars"]])
    assert per.shape == (11, 5) and (per > 0).all()
    np.testing.assert_allclose([r[0] for r in mean.components["Scalars:scalars"]], per.mean(1), rtol=1e-6)
    np.testing.assert_allclose(per[-1], vb.loss.double().numpy(), rtol=1e-5)
    assert len(rrd["/candidate_loss"].components["BarChart:values"]) == 5
    text = rrd["/summary"].components["TextDocument:text"][0][0]
    assert "not_next_to=0/5" in text and "inside the keep-out region: 5 rejected" in text


@needs_rerun
def test_every_batch_is_logged_and_the_previous_one_cleared(tmp_path):
    from isaaclab_arena.debug.rrd_contents import read_rrd

    path = str(tmp_path / "two.rrd")
    pl = ObjectPlacer(ObjectPlacerParams(placement_seed=2, debug_visualize_output_path=path,
                                         solver_params=solver()))
    scene = SCENES["mug_bowl"]()
    a = pl.place_batch(scene, [0, 1], [0, 0], num_envs=2)
    pl.place_batch(scene, [0, 1, 0], [1, 1, 2], num_envs=2)
    rrd = read_rrd(path)
    assert rrd["/placement/batch_001/objects/mug"].times["candidate"] == [2, 3, 4]
    assert rrd["/placement/batch_000"].times["candidate"] == [2]  # the Clear when batch 1 starts
    assert a.passed.all()
    ov = rrd["/placement/batch_000/overview/bowl"].components["Points3D:colors"][0]
    assert ov == [int.from_bytes(bytes((40, 190, 90, 255)), "big")] * 2  # both passed: green


@needs_rerun
def test_grasps_follow_the_ik_reachable_verdicts_when_that_check_runs(tmp_path):
    from typing import ClassVar

    from isaaclab_arena.debug.rrd_contents import read_rrd
    from isaaclab_arena.debug.extension import DEBUG_VIEW
    from isaaclab_arena.relations.extensions import PlacementExtension
    from isaaclab_arena.relations.validation.pre_physics import PrePhysicsPlacementValidator
    from isaaclab_arena.relations.validation.types import ValidationCost

    class FakeReach(PrePhysicsPlacementValidator):  # stands in for the real check: reachable when x < 0
        check = "ik_reachable"
        cost: ClassVar = ValidationCost.EXPENSIVE

        def validate_batch(self, batch, collision_objects):
            k = batch.object_names.index("mug")
            return batch.positions[:, k, 0] < 0.0

    t = table()
    mug = on_table(t, "mug", (0.08, 0.08, 0.1))
    mug.add_relation(RequiresReachability())
    path = str(tmp_path / "reach.rrd")
    # the placer's extensions, chosen here: the debug view and the stand-in check (no registry involved)
    pl = ObjectPlacer(ObjectPlacerParams(placement_seed=5, debug_visualize_output_path=path,
                                         required_checks=None, solver_params=solver()),
                      extensions=[DEBUG_VIEW, PlacementExtension("fake_reach", validators=(FakeReach,))])
    vb = pl.place_batch([t, mug], [0] * 8, list(range(8)), num_envs=1)
    rrd = read_rrd(path)
    g = rrd["/placement/batch_000/grasps"].components
    pos = np.array(g["Points3D:positions"])[:, 0]
    np.testing.assert_allclose(pos[:, 2], 0.75 + 0.01 + 0.1 + 0.02, atol=1e-5)  # top of the mug + offset
    want = [int.from_bytes(bytes((40, 190, 90, 255) if ok else (230, 40, 40, 255)), "big")
            for ok in (vb.positions[:, 0, 0] < 0).tolist()]
    assert [row[0] for row in g["Points3D:colors"]] == want
    assert 0 < sum(vb.check_results["ik_reachable"].tolist()) < 8  # both colours appear


@needs_rerun
def test_yaml_placer_params_debug_visualize_writes_the_recording(tmp_path):
    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec
    from isaaclab_arena.relations.pooled_object_placer import PooledObjectPlacer

    path = tmp_path / "yaml.rrd"
    spec = tmp_path / "scene.yaml"
    spec.write_text(open(os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "tabletop",
                                      "mug_bowl_table.yaml")).read()
                    + f"placer_params: {{debug_visualize: true, debug_visualize_output_path: '{path}'}}\n")
    env = ArenaEnvGraphSpec.from_yaml(str(spec)).to_arena_env()
    assert env.placer_params.debug_visualize and env.placer_params.debug_visualize_output_path == str(path)
    pool = PooledObjectPlacer(env.get_placement_assets(), env.placer_params, num_envs=2)
    pool.fill(torch.arange(2), "creation")
    assert path.stat().st_size > 0 and pool.placer.debug_view.batches >= 1


@pytest.mark.slow
def test_runner_flag_without_rerun_is_one_error_line_with_the_install_command(tmp_path):
    runner = os.path.join(ARENA_ROOT, "isaaclab_arena", "scripts", "environment_runner.py")
    spec = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "tabletop", "mug_bowl_table.yaml")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["ISAACLAB_ARENA_RERUN_DIR"] = str(tmp_path / "none")
    env["PYTHONPATH"] = _hide_rerun(tmp_path)  # after the checkout, before the environment's packages
    out = subprocess.run([os.path.join(ARENA_ROOT, "scripts", "arena_python.sh"), runner, "--env_spec", spec,
                          "--num_envs", "1", "--num_steps", "1", "--debug_visualize", "--output_dir", str(tmp_path)],
                         cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 2, out.stderr[-2000:]
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert errors == ["error: debug_visualize needs rerun-sdk==0.41.0 (pinned in requirements.txt), which this "
                      "Python environment lacks; run through scripts/arena_python.sh, or install it with: "
                      f"{INSTALL_COMMAND}"]

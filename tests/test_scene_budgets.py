"""Scene budgets (``relations/compiler/scene_budgets.py``, ``footprint_budget.check_footprint_budget``): a scene too large
or too crowded is refused when it is compiled, in seconds and in one line naming the figures and the knob,
before anything that grows with it is built; the footprint bound is a proof (a scene that tiles its support
exactly is accepted and its layout passes the checks; one more box is refused), its figures re-checked in
float64; the shipped examples pass every budget; ``max_objects`` / ``memory_budget_gb`` override them."""

from __future__ import annotations

import glob
import math
import os
import re
import time

import numpy as np
import pytest
import torch

from isaaclab_arena import ARENA_ROOT
from isaaclab_arena.env_spec.placer_params_spec import parse_placer_params, placer_params_to_dict
from isaaclab_arena.env_spec.spec_issue import SpecIssue
from isaaclab_arena.relations.compiler.compile_problem import _SceneCompiler
from isaaclab_arena.relations.compiler.footprint_budget import footprint_budget_violations
from isaaclab_arena.relations.object_placer import ObjectPlacer
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.relations.compiler.placement_restrictions import PlacementConfigError
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams
from isaaclab_arena.relations.relations import ClutterOn, IsAnchor, On, RotateAroundSolution
from isaaclab_arena.relations.compiler.scene_budgets import DEFAULT_MAX_OBJECTS, check_memory_budget, estimate_memory
from isaaclab_arena.benchmarks.scenes import TABLE_SIZE, cuboid, on_table, table
from isaaclab_arena.utils.pose import Pose

#: The room of ``scenes.table()`` inside On's default 0.05 m edge margins, m².
ROOM_M2 = (TABLE_SIZE[0] - 0.1) * (TABLE_SIZE[1] - 0.1)


def params(**kw) -> ObjectPlacerParams:
    kw.setdefault("placement_seed", 3)
    solver = kw.pop("solver", {})
    return ObjectPlacerParams(solver_params=RelationSolverParams(verbose=False, **solver), **kw)


def refused(assets, num_envs: int = 1, **kw) -> tuple[str, float]:
    """The refusal of compiling ``assets`` and the seconds it took."""
    t0 = time.perf_counter()
    with pytest.raises(PlacementConfigError) as err:
        ObjectPlacer(params(**kw)).compile(assets, num_envs)
    return str(err.value), time.perf_counter() - t0


def one_line(msg: str) -> None:
    assert "\n" not in msg and len(msg) <= 300, (len(msg), msg)


def boxes(n: int, density: float, height: float = 0.05, t=None, **on) -> list:
    """``n`` equal square boxes On ``t`` (default ``table()``) whose footprints add up to ``density`` x the room."""
    t = t if t is not None else table()
    side = math.sqrt(density * ROOM_M2 / n)
    return [t] + [cuboid(f"b{k}", (side, side, height)).add_relation(On(t, **on)) for k in range(n)]


def violations(assets, **kw) -> list[str]:
    p = params(**kw)
    sc = _SceneCompiler(assets, 1, 0, p)
    return footprint_budget_violations(sc.movables, sc.fixed, p)


def figures(msg: str) -> tuple[float, float, float]:
    m = re.search(r"need at least ([0-9.]+) m² .* free area is (?:at most )?([0-9.]+) m² .*; ([0-9.]+)x\)", msg)
    return float(m.group(1)), float(m.group(2)), float(m.group(3))


# ------------------------------------------------------------------------------------------------ footprint
@pytest.mark.parametrize("yaw", [False, True])
def test_thousand_boxes_with_2_6x_the_table_area_are_refused_in_seconds_in_one_line(yaw):
    scene = boxes(1000, 2.6)
    msg, seconds = refused(scene, random_yaw_init=yaw)
    one_line(msg)
    assert seconds < 10.0, seconds  # the solver took 85 s to fail this scene before the budget
    assert msg.startswith("the 1000 objects On 'table' need at least ")
    assert "its free area is 0.770 m² (1.100 x 0.700 m inside the 0.05 m edge margins; 2.6x)" in msg
    assert msg.endswith("use a larger support, fewer objects or smaller ones")
    # the figures, independently in float64 (a yaw never changes a box's footprint area)
    sizes = np.array([np.subtract(a.get_bounding_box().max_point, a.get_bounding_box().min_point, dtype=np.float64)
                      for a in scene[1:]])
    need = float(np.sum(sizes[:, 0] * sizes[:, 1]))
    room = float(np.float64(1.2 - 2 * 0.05) * np.float64(0.8 - 2 * 0.05))
    got_need, got_room, ratio = figures(msg)
    assert got_need == pytest.approx(need, abs=6e-4) and got_room == pytest.approx(room, abs=6e-4)
    assert ratio == pytest.approx(need / room, abs=0.06) and need == pytest.approx(2.6 * room, rel=1e-9)


def tiling(extra: int = 0) -> list:
    """11 x 7 boxes of 0.1 x 0.1 m that tile the table's 1.1 x 0.7 m room exactly (100 % density), plus ``extra``."""
    t = table()
    return [t] + [on_table(t, f"b{k}", (0.1, 0.1, 0.05)) for k in range(77 + extra)]


def test_the_bound_is_a_proof_an_exact_tiling_passes_and_one_more_box_is_refused():
    scene = tiling()
    pl = ObjectPlacer(params(solver={"clearance_m": 0.0}))
    assert violations(scene) == []
    # the tiling layout itself passes every check: a scene at 100 % density has a valid layout
    xs, ys = np.arange(-0.5, 0.51, 0.1), np.arange(-0.3, 0.31, 0.1)
    layout = {f"b{k}": (float(xs[k // 7]), float(ys[k % 7]), 0.75 + 0.01 + 0.025) for k in range(77)}
    vb = pl.validate_poses(scene, layout)
    assert bool(vb.passed.all()), vb.validation.counts()
    # one more 0.1 x 0.1 m box: 0.780 m² on 0.770 m²
    msg, _ = refused(tiling(extra=1))
    one_line(msg)
    assert msg.startswith("the 78 objects On 'table' need at least 0.780 m² ") and "; 1.01x)" in msg


def test_objects_at_other_heights_are_not_counted_on_the_table():
    # 40 low boxes and 40 released 0.2 m above the table (On clearance): 0.8 m² in all, but the two levels
    # never meet in height, so only 0.4 m² must share the table's surface
    t = table()
    low = [cuboid(f"low{k}", (0.1, 0.1, 0.05)).add_relation(On(t)) for k in range(40)]
    high = [cuboid(f"high{k}", (0.1, 0.1, 0.05)).add_relation(On(t, clearance_m=0.2)) for k in range(40)]
    assert violations([t] + low + high) == []
    assert len(violations([t] + low + [cuboid(f"more{k}", (0.1, 0.1, 0.05)).add_relation(On(t))
                                       for k in range(40)])) == 1
    # boxes stacked On trays are the trays' children, not the table's: the table holds 4 trays (0.6 m²) ...
    t = table()
    trays = [on_table(t, f"tray{k}", (0.5, 0.3, 0.02)) for k in range(4)]
    small = [cuboid(f"s{k}", (0.06, 0.06, 0.05)).add_relation(On(trays[k % 4])) for k in range(100)]
    found = violations([t] + trays + small)
    # ... and each tray 25 x 0.0036 = 0.090 m² in its 0.4 x 0.2 m room (a placed support: "at most")
    assert len(found) == 4 and found[0].startswith("the 25 objects On 'tray0' need at least 0.090 m² ")
    assert "its free area is at most 0.080 m² (0.400 x 0.200 m" in found[0]


def test_what_the_bound_does_not_cover_is_not_refused():
    over = boxes(200, 1.5)
    assert len(violations(over)) == 1
    assert violations(over, required_checks=["on_relation"]) == []  # overlaps allowed
    assert violations(over, enabled_checks=["no_overlap"], required_checks=["no_overlap"]) == []  # not held On
    t = table()  # ClutterOn releases may stack above each other (physics settles them)
    assert violations([t] + [cuboid(f"c{k}", (0.1, 0.1, 0.05)).add_relation(ClutterOn(t, spread=1.0))
                             for k in range(100)]) == []
    t = table()  # On(overlap=True) only asks the footprints to touch the support
    assert violations([t] + [cuboid(f"o{k}", (0.1, 0.1, 0.05)).add_relation(On(t, overlap=True))
                             for k in range(100)]) == []
    # a single object larger than the room is left to the other checks, which name its relation
    t = table()
    scene = [t, on_table(t, "big", (1.3, 0.9, 0.1)), on_table(t, "small", (0.1, 0.1, 0.1))]
    assert violations(scene) == []
    assert refused(scene)[0].startswith("asset 'big', relation on(table): 'big' is 1.300 m along x")


def test_a_scene_at_40_percent_density_still_solves():
    scene = boxes(24, 0.4)
    assert violations(scene) == []
    results = ObjectPlacer(params(max_placement_attempts=10)).place(scene, num_envs=2)
    assert all(r.success for r in results), [r.explanation[:300] for r in results]


def random_crowded(seed: int) -> tuple[list, bool]:
    """Boxes of random sizes, heights, On clearances and base rotations (some laid on a side) on a table of
    random size, at 0.3 .. 1.6 x its room by area, random yaw or not."""
    rng = np.random.default_rng(seed)
    tx, ty = float(rng.uniform(0.4, 0.8)), float(rng.uniform(0.3, 0.6))
    t = cuboid("table", (tx, ty, 0.75), Pose((0.0, 0.0, 0.375)))
    t.add_relation(IsAnchor())
    n = int(rng.integers(4, 12))
    sizes = rng.uniform(0.05, 0.2, (n, 3))
    room = (tx - 0.1) * (ty - 0.1)
    sizes[:, :2] *= math.sqrt(float(rng.uniform(0.3, 1.6)) * room / float(np.sum(sizes[:, 0] * sizes[:, 1])))
    out = [t]
    for k in range(n):
        o = cuboid(f"o{k}", tuple(float(v) for v in sizes[k]))
        o.add_relation(On(t, clearance_m=float(rng.choice([0.01] * 7 + [0.12]))))
        if rng.random() < 0.15:
            o.add_relation(RotateAroundSolution(roll_rad=math.pi / 2))
        out.append(o)
    return out, bool(rng.random() < 0.5)


@pytest.mark.slow
def test_random_crowded_scenes_refused_only_where_no_candidate_is_valid(monkeypatch):
    """With the budget bypassed, the scenes it refuses are solved: no candidate passes the checks."""
    import isaaclab_arena.relations.compiler.compile_problem as compile_problem

    monkeypatch.setattr(compile_problem, "check_footprint_budget", lambda *args: None)
    refusals = valid = 0
    for seed in range(24):
        scene, yaw = random_crowded(seed)
        pl = ObjectPlacer(params(placement_seed=seed, random_yaw_init=yaw, solver={"clearance_m": 0.0}))
        refused_here = bool(violations(scene, random_yaw_init=yaw))
        refusals += refused_here
        try:
            problem = pl.compile(scene, 1)
        except PlacementConfigError:  # the feasibility pre-check (a footprint larger than the room)
            continue
        batch = pl.place_problem(problem, torch.zeros(48, dtype=torch.long), torch.arange(48))
        passed = int(batch.passed.sum())
        assert not (refused_here and passed), (seed, passed)
        valid += passed
    assert refusals >= 4 and valid >= 20, (refusals, valid)


# ------------------------------------------------------------------------------------------------- count
def test_ten_thousand_objects_are_refused_at_compile_start():
    t = table()
    scene = [t] + [on_table(t, f"b{k}", (0.004, 0.004, 0.01)) for k in range(10_000)]
    msg, seconds = refused(scene)
    one_line(msg)
    assert seconds < 5.0, seconds  # before the budget: 5.4 GB after 75 s of compiling, no output
    assert msg.startswith(f"the scene places 10000 objects, more than placer_params.max_objects={DEFAULT_MAX_OBJECTS} ")
    assert "49,995,000" in msg and "raise max_objects (null: no limit)" in msg


def test_max_objects_override_lets_the_scene_past_the_count_check():
    scene = boxes(DEFAULT_MAX_OBJECTS + 1, 2.6)
    msg, _ = refused(scene)
    assert msg.startswith(f"the scene places {DEFAULT_MAX_OBJECTS + 1} objects")
    for limit in (None, DEFAULT_MAX_OBJECTS + 1):  # past the count check: the footprint budget answers next
        msg, seconds = refused(scene, max_objects=limit)
        assert msg.startswith(f"the {DEFAULT_MAX_OBJECTS + 1} objects On 'table' need at least ") and seconds < 10.0


def test_yaml_placer_params_accept_the_budget_fields():
    p = parse_placer_params({"max_objects": 5000, "memory_budget_gb": 8})
    assert (p.max_objects, p.memory_budget_gb) == (5000, 8.0)
    assert parse_placer_params({"max_objects": None}).max_objects is None
    assert placer_params_to_dict(p) == {"max_objects": 5000, "memory_budget_gb": 8}
    for bad in ({"max_objects": 0}, {"max_objects": 1.5}, {"memory_budget_gb": 0}, {"memory_budget_gb": "8"}):
        with pytest.raises(SpecIssue):
            parse_placer_params(bad)


# ------------------------------------------------------------------------------------------------ memory
def test_memory_budget_refuses_before_allocating_and_names_the_knobs():
    # 2,000 objects in 1,024 envs: a 10,240-candidate batch of them takes 5.9 GB
    p = params(memory_budget_gb=4)
    with pytest.raises(PlacementConfigError) as err:
        check_memory_budget(2000, 1, 2000, 1024, p)
    msg = str(err.value)
    one_line(msg)
    assert msg.startswith("placement would allocate about 6.57 GB ")
    assert "(compile 0.55 GB for 2,001,000 pairs, a 10240-candidate batch 5.90 GB, " in msg
    # the failure tally counts the pairs its candidates failed, not every pair in every env (49 GB here)
    assert "failure tally 0.06 GB) but the budget is 4.00 GB (placer_params.memory_budget_gb=4)" in msg
    assert "lower num_envs (1024) or max_placement_attempts (10), or place fewer than 2000 objects" in msg
    check_memory_budget(2000, 1, 2000, 16, p)  # 16 envs fit
    check_memory_budget(2000, 1, 2000, 1024, params(memory_budget_gb=7))  # the override lets it through
    # through the compile, before the geometry is read: a tiny budget refuses a small scene
    msg, seconds = refused(boxes(10, 0.3), num_envs=64, memory_budget_gb=1e-6)
    one_line(msg)
    assert msg.startswith("placement would allocate about ") and "memory_budget_gb=1e-06" in msg and seconds < 5.0


def test_memory_budget_defaults_to_half_the_available_memory_host_and_cuda(monkeypatch):
    import isaaclab_arena.relations.compiler.scene_budgets as budgets

    monkeypatch.setattr(budgets, "available_host_bytes", lambda: 1_200_000_000)
    monkeypatch.setattr(budgets, "available_device_bytes", lambda device: 600_000_000)
    p = params()
    with pytest.raises(PlacementConfigError) as err:  # CPU: all of it (0.70 GB) against the host's 0.6 GB
        check_memory_budget(2000, 1, 2000, 64, p)
    one_line(str(err.value))
    assert "but the budget is 0.60 GB (half the 1.20 GB available; memory_budget_gb)" in str(err.value)
    # CUDA: the compile's host part (0.26 GB) fits the host, the tables, batch and tally (0.44 GB) not the device's
    with pytest.raises(PlacementConfigError) as err:
        check_memory_budget(2000, 1, 2000, 64, p, device="cuda:0")
    msg = str(err.value)
    one_line(msg)
    assert "(a 640-candidate batch 0.37 GB, failure tally 0.00 GB) but the budget is 0.30 GB (half the 0.60 GB " \
           "available on cuda:0; memory_budget_gb)" in msg
    check_memory_budget(200, 1, 200, 64, p, device="cuda:0")  # a smaller scene fits both
    monkeypatch.setattr(budgets, "available_host_bytes", lambda: None)  # unknown, no override: nothing to check
    check_memory_budget(2000, 1, 2000, 64, p)

def test_memory_estimate_counts_at_least_the_compiled_pairs():
    scene = boxes(30, 0.3)
    problem = ObjectPlacer(params()).compile(scene, 4)
    est = estimate_memory(problem.num_objects, len(problem.fixed_names), problem.num_relations, 4, params())
    assert est.pairs == len(problem.pairs) + 30  # the table's On pairs are exempt; the estimate counts them
    assert est.candidates == 4 * 10


# ------------------------------------------------------------------------------------------- the examples
def test_every_shipped_example_passes_the_budgets():
    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec

    specs = sorted(glob.glob(os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "**", "*.yaml"), recursive=True))
    assert len(specs) >= 6
    for path in specs:
        env = ArenaEnvGraphSpec.from_yaml(path).to_arena_env()
        if not any(a.has_placement_relations for a in env.assets):
            continue
        p = env.placer_params
        sc = _SceneCompiler(env.assets, 1, 0, p)
        assert sc.n_mov <= (p.max_objects or sc.n_mov), path
        assert footprint_budget_violations(sc.movables, sc.fixed, p) == [], path
        n_rel = sum(len(a.get_relations()) for a in sc.movables)
        check_memory_budget(sc.n_mov, len(sc.fixed), n_rel, 1024, params(memory_budget_gb=2))


@pytest.mark.slow
def test_a_scene_whose_pairs_follow_the_rule_is_budgeted_without_rows_per_pair():
    """3,000 boxes (4.5 million pairs): listed pairs would need 0.68 GB at the compile's peak, which a 0.4 GB
    budget refuses; the scene keeps its pairs as the rule, so its estimate counts none and it compiles."""
    import sys

    sys.path.insert(0, os.path.join(ARENA_ROOT, "scripts"))
    from bench_scale_refill import many_boxes

    p = params(memory_budget_gb=0.4, max_objects=None)
    listed = estimate_memory(3000, 1, 3000, 1, p)
    ruled = estimate_memory(3000, 1, 3000, 1, p, listed_pairs=False)
    assert listed.compile_host + listed.tables > 0.68e9 and ruled.compile_host + ruled.tables < 0.01e9
    with pytest.raises(PlacementConfigError, match="compile 0.54 GB for 4,501,500 pairs"):
        check_memory_budget(3000, 1, 3000, 1, p)
    problem = ObjectPlacer(p).compile(many_boxes(3000), 1)
    assert problem.tables.pair_rule == 1 and len(problem.pairs) == 3000 * 2999 // 2

"""Figures of ``bench_placement.py`` beyond the per-scene rates (issue 21):

  bench scene=many_boxes stage=compile objects=1000 pairs=... compile_s=... compile_peak_mb=...
      compiling a scene of ``objects`` boxes (6 x 6 x 5 cm, On one table sized for 12 % footprint density): the
      one-time cost of ``ObjectPlacer.compile`` (checks, tables, pair geometry, feasibility), median of runs, and
      the peak traced Python memory of one compile (``tracemalloc``; numpy and torch buffers included);
  bench scene=many_boxes stage=solve objects=80 batch=256 us_per_layout=... valid_rate=...
      solving and checking layouts of 80 such boxes (``ObjectPlacer.place_problem``), microseconds of wall time per
      layout, median of runs, and the fraction of layouts that pass every check;
  bench scene=many_boxes stage=compile_rss objects=1000 pairs_by_rule=1 compile_rss_mb=...
      the growth of the process's peak resident memory (``VmHWM``) over one compile of ``objects`` boxes, each
      in a fresh child process (scene built and modules imported before; 0 when the compile fits in memory the
      process had already touched; 1,000, 2,000, 4,000; quick: 250);
  bench scene=many_boxes stage=pairs objects=500 batch=64 listed_ms=... rule_ms=... rule_vs_listed=...
      solving and checking ``batch`` layouts of ``objects`` boxes with the no_overlap pairs kept as listed tables
      and as the rule (``compiler/pair_rule.py``; the bench moves ``RULE_FROM_OBJECTS`` to choose), medians of
      interleaved runs; the layouts of both are checked to be identical (128, 500, 2,000 boxes; quick: 128);
  bench scene=boxes3 stage=refill envs=1024 layouts_per_env=... batch=... refill_ms=... solve_ms=... refill_vs_solve=...
      a reset's refill (``PooledObjectPlacer.fill`` of every env's partition: draw, solve, check, rank, store,
      diagnostics) against ``ObjectPlacer.place_problem`` of the same number of candidates (solve and check
      alone), medians of runs.

Usage (through bench_placement.py; or alone): scripts/arena_python.sh scripts/bench_scale_refill.py [--quick]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
import tracemalloc

if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

#: Box edge (m) and the fraction of the table's top the boxes' footprints cover.
BOX_M, DENSITY = 0.06, 0.12


def many_boxes(n: int) -> list:
    """A table (1.5 : 1, sized so that ``n`` boxes cover ``DENSITY`` of its top) with ``n`` boxes On it."""
    from isaaclab_arena.assets.asset import Object
    from isaaclab_arena.assets.bounding_box import AxisAlignedBoundingBox
    from isaaclab_arena.relations.relations import IsAnchor, On
    from isaaclab_arena.benchmarks.scenes import cuboid
    from isaaclab_arena.utils.pose import Pose

    area = n * BOX_M * BOX_M / DENSITY
    length = math.sqrt(area * 1.5)
    table = Object("table", bounding_box=AxisAlignedBoundingBox.from_size((length, area / length, 0.75)),
                   initial_pose=Pose((0.0, 0.0, 0.375)))
    table.add_relation(IsAnchor())
    boxes = []
    for i in range(n):
        box = cuboid(f"box_{i}", (BOX_M, BOX_M, 0.05))
        box.add_relation(On(table))
        boxes.append(box)
    return [table] + boxes


def _placer(**params):
    from isaaclab_arena.relations.object_placer import ObjectPlacer
    from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
    from isaaclab_arena.relations.relation_solver_params import RelationSolverParams

    return ObjectPlacer(ObjectPlacerParams(placement_seed=1234, solver_params=RelationSolverParams(verbose=False),
                                           **params))


def bench_scaling(n: int, runs: int) -> None:
    assets = many_boxes(n)
    times = []
    for _ in range(runs):
        placer = _placer(max_objects=None)  # a fresh placer: nothing cached
        t0 = time.perf_counter()
        problem = placer.compile(assets, 16)
        times.append(time.perf_counter() - t0)
    tracemalloc.start()
    _placer(max_objects=None).compile(assets, 16)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"bench scene=many_boxes stage=compile objects={n} pairs={len(problem.pairs)} "
          f"compile_s={statistics.median(times):.3f} compile_peak_mb={peak / 2**20:.1f} runs={runs}", flush=True)


def _peak_rss_kb() -> int:
    """This process's peak resident memory in kB: ``VmHWM`` (kept per address space, so it starts afresh in a child
    process; ``ru_maxrss`` carries over the parent's peak at the fork), else ``ru_maxrss``."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def compile_rss_mb(n: int) -> tuple[float, bool]:
    """(growth of the peak RSS over one compile of ``n`` boxes in MB, whether its pairs follow the rule); run in a
    fresh process (``--compile_rss``), since the peak only grows."""
    assets = many_boxes(n)
    placer = _placer(max_objects=None)
    placer.compile(many_boxes(8), 16)  # modules imported, warp initialised: not the compile's memory
    before = _peak_rss_kb()
    problem = placer.compile(assets, 16)
    return (_peak_rss_kb() - before) / 1024.0, bool(problem.tables.pair_rule)


def bench_compile_rss(n: int) -> None:
    import subprocess

    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--compile_rss", str(n)], capture_output=True,
                         text=True, check=True)
    mb, rule = out.stdout.split()[-2:]
    print(f"bench scene=many_boxes stage=compile_rss objects={n} pairs_by_rule={int(rule == 'True')} "
          f"compile_rss_mb={float(mb):.1f}", flush=True)


def bench_pairs(n: int, batch: int, runs: int) -> None:
    """Listed tables against the rule for the same scene, interleaved in one process (layouts must agree)."""
    from isaaclab_arena.relations.compiler import pair_rule

    assets = many_boxes(n)
    env_ids = torch.arange(batch)
    sides = {}
    for name, threshold in (("listed", 10**9), ("rule", 8)):
        saved = pair_rule.RULE_FROM_OBJECTS
        pair_rule.RULE_FROM_OBJECTS = threshold
        try:
            placer = _placer()
            problem = placer.compile(assets, batch)
        finally:
            pair_rule.RULE_FROM_OBJECTS = saved
        assert bool(problem.tables.pair_rule) == (name == "rule"), name
        placer.place_problem(problem, env_ids, env_ids * 0)  # kernels loaded, workspace built
        sides[name] = (placer, problem, [])
    first = {}
    for r in range(runs):
        for name, (placer, problem, times) in sides.items():
            t0 = time.perf_counter()
            vb = placer.place_problem(problem, env_ids, env_ids * 0 + 1 + r)
            times.append(time.perf_counter() - t0)
            first.setdefault(r, []).append(vb.positions)
    for r, (a, b) in first.items():
        if not torch.equal(a, b):
            raise AssertionError(f"{n} boxes: listed and rule layouts differ (run {r})")
    lm, rm = (statistics.median(sides[k][2]) * 1e3 for k in ("listed", "rule"))
    print(f"bench scene=many_boxes stage=pairs objects={n} batch={batch} listed_ms={lm:.2f} rule_ms={rm:.2f} "
          f"rule_vs_listed={rm / lm:.2f} runs={runs}", flush=True)


def bench_dense(n: int, batch: int, runs: int) -> None:
    placer = _placer()
    problem = placer.compile(many_boxes(n), batch)
    env_ids = torch.arange(batch)
    placer.place_problem(problem, env_ids, env_ids * 0)  # kernels loaded, workspace built
    times, valid = [], []
    for r in range(runs):
        t0 = time.perf_counter()
        vb = placer.place_problem(problem, env_ids, env_ids * 0 + 1 + r)
        times.append(time.perf_counter() - t0)
        valid.append(float(vb.passed.float().mean()))
    print(f"bench scene=many_boxes stage=solve objects={n} batch={batch} "
          f"us_per_layout={statistics.median(times) / batch * 1e6:.2f} valid_rate={statistics.median(valid):.4f} "
          f"runs={runs}", flush=True)


def bench_refill(scene: str, envs: int, runs: int) -> None:
    from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
    from isaaclab_arena.relations.pooled_object_placer import PooledObjectPlacer
    from isaaclab_arena.relations.relation_solver_params import RelationSolverParams
    from isaaclab_arena.benchmarks.scenes import SCENES

    assets = SCENES[scene]()
    params = ObjectPlacerParams(placement_seed=1234, solver_params=RelationSolverParams(verbose=False))
    pool = PooledObjectPlacer(assets, params, num_envs=envs)
    pool.diagnostics.verbose = False  # a printed block per fill is not the refill's work
    pool.initialize()
    every = torch.arange(envs)
    layouts = pool.layouts_per_env
    placer = pool.placer
    problem = placer.compile(assets, envs)
    env_ids = every.repeat_interleave(layouts)
    refill, solve = [], []
    for r in range(runs):  # interleaved, so that both see the same machine
        t0 = time.perf_counter()
        pool.fill(every, "reset_refill")
        refill.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        placer.place_problem(problem, env_ids, env_ids * 0 + 10_000 + r)
        solve.append(time.perf_counter() - t0)
    rm, sm = statistics.median(refill) * 1e3, statistics.median(solve) * 1e3
    print(f"bench scene={scene} stage=refill envs={envs} layouts_per_env={layouts} batch={envs * layouts} "
          f"refill_ms={rm:.3f} solve_ms={sm:.3f} refill_vs_solve={rm / sm:.2f} runs={runs}", flush=True)


def run(quick: bool) -> None:
    bench_scaling(250 if quick else 1000, 1 if quick else 3)
    bench_dense(80, 32 if quick else 256, 3 if quick else 7)
    bench_refill("boxes3", 64 if quick else 1024, 3 if quick else 9)
    for n in (250,) if quick else (1000, 2000, 4000):
        bench_compile_rss(n)
    for n, batch in ((128, 16),) if quick else ((128, 256), (500, 64), (2000, 10)):
        bench_pairs(n, batch, 1 if quick else 5)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                 allow_abbrev=False)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--compile_rss", type=int, default=0, help=argparse.SUPPRESS)  # the child of bench_compile_rss
    args = ap.parse_args()
    if args.compile_rss:
        print(*compile_rss_mb(args.compile_rss))
    else:
        run(args.quick)

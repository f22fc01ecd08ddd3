"""Placement benchmark: solved-and-validated layouts per second through ObjectPlacer's code path.

Prints one line per (scene, batch):
  bench scene=boxes3 batch=4096 layouts_per_s=... valid_rate=... ms_per_solve=... valid_layouts_per_s=...
        spread_pct=... windows=... calls=...
plus ``bench scene=... compile_s=...`` (one-time compile and kernel load, excluded from the rates),
``bench scene=... batch=... validate_only_per_s=...`` (the check pass alone on one solved batch: the ceiling;
``n/a`` where the checkout has no known way to run it alone),
  bench scene=boxes3 spread_tv=... border_frac=... reference_border_frac=...
(how the solver's layouts spread against brute-force rejection sampling, ``placement_spread.py``; the worst
total-variation distance of an object's X or Y histogram, and the fraction of objects within 1 mm of their
feasible range's border), and for boxes3/boxes10 Isaac Lab's stock
randomiser (``sample_object_poses`` of isaaclab_tasks/contrib/stack/mdp/stack_events.py) checked by our
validators:
  bench scene=boxes3 peer=isaaclab_stock layouts_per_s=... valid_rate=... ratio=...

Compile time and memory of 1,000 .. 4,000 objects, 80 boxes' solve, listed pairs against pairs by rule, and a reset's
refill against solving the same layouts (``bench_scale_refill.py``; ``--no-scaling`` skips them):
  bench scene=many_boxes stage=compile objects=1000 pairs=... compile_s=... compile_peak_mb=...
  bench scene=many_boxes stage=solve objects=80 batch=256 us_per_layout=... valid_rate=...
  bench scene=boxes3 stage=refill envs=1024 layouts_per_env=5 batch=5120 refill_ms=... solve_ms=... refill_vs_solve=...
  bench scene=many_boxes stage=compile_rss objects=1000 pairs_by_rule=1 compile_rss_mb=...
  bench scene=many_boxes stage=pairs objects=500 batch=64 listed_ms=... rule_ms=... rule_vs_listed=...

MESH scenes (``bench_mesh_scenes.py``: the example assets' meshes) are solved with BBOX and with MESH collision in
the same run:
  bench scene=kitchen_mesh collision=mesh batch=256 layouts_per_s=... valid_rate=... ...
  bench scene=kitchen_mesh batch=256 mesh_vs_bbox=...
(``--no-mesh`` skips them; ``--scenes`` selects them by name like the others).

A layout counts from the drawing of its candidate to its check verdicts (ObjectPlacer.place_problem:
generate, solve, modifiers, validate). Every figure is sustained (``bench_timing.sustained``): warm-up calls
discarded, then ``--runs`` windows of at least ``--window_s`` seconds of back-to-back calls; the figure is the
median window, ``spread_pct`` the (slowest - fastest window) / median. Each call draws new candidates (draw id =
call count). ``cpu_*`` figures count this process's CPU seconds instead of wall seconds over the same windows:
on a shared machine they move much less with other processes' load. The first line, ``# code=...``, names the
checkout measured and the machine.

Which checkout is measured: the one on PYTHONPATH when PYTHONPATH is set (``scripts/arena_python.sh`` sets it to
its own checkout; ``scripts/bench_compare.py`` points it at each side), else this script's checkout. Only the
stable placer API is needed (``ObjectPlacer(ObjectPlacerParams(...))``, ``compile``,
``place_problem(...).passed``, ``benchmarks.scenes``); the validate-only ceiling and the peer's verdicts go
through :func:`validate_only_call` and :func:`peer_verdicts`, which tolerate other versions of the core.

Usage: scripts/arena_python.sh scripts/bench_placement.py [--quick] [--device cpu] [--runs 5] [--window_s 1.0]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time

if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

from bench_timing import code_line, sustained, sustained_placement  # noqa: E402
from isaaclab_arena.benchmarks.scenes import SCENES, TABLE_SIZE  # noqa: E402

try:  # placer settings of the chain scenes (absent in older checkouts)
    from isaaclab_arena.benchmarks.scenes import SCENE_PLACER_PARAMS  # noqa: E402
except ImportError:
    SCENE_PLACER_PARAMS = {}

# all_relations uses every remaining relation kind but ClutterOn (it must be an object's only spatial
# relation), which the clutter scene covers: six boxes released on the table's central 40 %.
# chain4 / row5 / chain4_yaw: relation chains (a NextTo chain with cross_position_ratio, a row tied by AlignWith
# and NextTo inside PositionLimitsBox, the chain with random yaw), measured for their valid_rate.
# The scenes of issue 21's targets run up to the batches where their throughput levels off (boxes3 65,536, mug_bowl
# 16,384-65,536, crowded14 4,096-16,384, boxes10 4,096: more candidates per call share the call's fixed cost).
FULL = [("boxes3", [1, 32, 128, 1024, 4096, 16384, 65536]), ("boxes10", [1, 128, 1024, 4096]),
        ("mug_bowl", [1, 1024, 4096, 16384, 65536]), ("crowded14", [256, 1024, 4096, 16384]), ("all_relations", [256]),
        ("clutter", [256]), ("chain4", [1024]), ("row5", [1024]), ("chain4_yaw", [1024]), ("crowded14_yaw", [256])]
QUICK = [("boxes3", [1, 128]), ("boxes10", [128]), ("mug_bowl", [128]), ("crowded14", [64]), ("all_relations", [64]),
         ("clutter", [64]), ("chain4", [128]), ("row5", [128]), ("chain4_yaw", [128]), ("crowded14_yaw", [64])]
#: Scenes whose spread is measured against rejection sampling, with (rejection-sampled, solved) layout counts.
# (reference layouts, solved layouts): the statistic's own noise (two independent reference samples of these
# sizes) is about 0.02; mug_bowl's rejection sampler keeps about 1 layout in 5000 draws (~40 s for 24000)
SPREAD = {"boxes3": (16000, 32000), "mug_bowl": (24000, 48000)}
SPREAD_QUICK = {"boxes3": (1500, 3000)}
PEER = {"boxes3": (3, 4096), "boxes10": (10, 1024)}
PEER_QUICK = {"boxes3": (3, 256), "boxes10": (10, 64)}
#: Pairwise clearance the solver keeps between placed objects when the core does not say (metres).
DEFAULT_CLEARANCE_M = 0.01


def _import(*candidates):
    """The first importable ``(module, name)`` of ``candidates``."""
    import importlib

    for mod, name in candidates:
        try:
            return getattr(importlib.import_module(mod), name)
        except (ImportError, AttributeError):
            continue
    raise ImportError(f"none of {candidates} is importable from this checkout")


def make_placer(seed: int, **params):
    """``ObjectPlacer(ObjectPlacerParams(placement_seed=seed, **params))`` with the solver's progress line off
    where the checkout has ``RelationSolverParams(verbose=...)`` (printing is not timed work)."""
    ObjectPlacer = _import(("isaaclab_arena.relations.object_placer", "ObjectPlacer"),
                           ("isaaclab_arena.relations", "ObjectPlacer"))
    ObjectPlacerParams = _import(("isaaclab_arena.relations.object_placer_params", "ObjectPlacerParams"),
                                 ("isaaclab_arena.relations", "ObjectPlacerParams"))
    kw = {"placement_seed": seed, **params}
    try:
        solver_params = ObjectPlacerParams().solver_params
        if hasattr(solver_params, "verbose"):
            kw["solver_params"] = type(solver_params)(verbose=False)
    except (AttributeError, TypeError):
        pass
    return ObjectPlacer(ObjectPlacerParams(**kw))


def solver_clearance(placer) -> float:
    """The solver's pairwise clearance (metres) of this checkout, else :data:`DEFAULT_CLEARANCE_M`."""
    value = getattr(getattr(placer.params, "solver_params", None), "clearance_m", None)
    return float(value) if value is not None else DEFAULT_CLEARANCE_M


def validate_only_call(placer, problem, env_ids: torch.Tensor, batch):
    """A callable re-running evaluation and checks alone on the poses of the solved ``batch``, or None when
    this checkout's core has no way known here (the figure is then printed as ``n/a``). Cores with stage
    values: ``placer.validate(problem, evaluate_poses(problem, env_ids, positions, rotations))``; older ones
    (c2fad5c): ``batch.invalidate()`` then ``placer.runner.run(batch)``."""
    try:
        from isaaclab_arena.relations.solving.evaluation import evaluate_poses
    except ImportError:
        evaluate_poses = None
    sync = torch.cuda.synchronize if str(env_ids.device).startswith("cuda") else (lambda: None)
    if evaluate_poses is not None and callable(getattr(placer, "validate", None)):
        pos, rot = batch.positions, batch.rotations

        def call():
            placer.validate(problem, evaluate_poses(problem, env_ids, pos, rot))
            sync()
        return call
    runner = getattr(placer, "runner", None)
    if runner is not None and callable(getattr(runner, "run", None)) and callable(getattr(batch, "invalidate", None)):
        def call():
            batch.invalidate()
            runner.run(batch)
            sync()
        return call
    return None


def peer_verdicts(placer, assets, positions: torch.Tensor, device: str):
    """(B,) bool verdicts of our checks on given layouts (B, n, 3) env-local metres, or None when unknown."""
    validate = getattr(placer, "validate_poses", None)
    if validate is None:
        return None
    return validate(assets, positions, device=device).passed


def bench_scene(name: str, batches: list[int], timing: dict, device: str, results: dict) -> None:
    if name not in SCENES:  # an older checkout without this scene
        print(f"bench scene={name} n/a", flush=True)
        return
    assets = SCENES[name]()
    placer = make_placer(1234, **SCENE_PLACER_PARAMS.get(name, {}))
    num_envs = max(batches)
    t0 = time.perf_counter()
    problem = placer.compile(assets, num_envs, device)
    env = torch.arange(num_envs, device=device)
    placer.place_problem(problem, env, torch.zeros_like(env))  # kernel load (cached after the first process)
    print(f"bench scene={name} compile_s={time.perf_counter() - t0:.3f}", flush=True)
    draws = [0]
    for b in batches:
        s, rate = sustained_placement(placer, problem, torch.arange(b, device=device), draws, timing)
        results[(name, b)] = b / s.median
        print(f"bench scene={name} batch={b} layouts_per_s={b / s.median:.0f} valid_rate={rate:.4f} "
              f"ms_per_solve={s.median * 1e3:.3f} valid_layouts_per_s={rate * b / s.median:.0f} "
              f"cpu_layouts_per_s={b / max(s.cpu_median, 1e-12):.0f} {s.keys()}", flush=True)
    # validate-only on the largest batch (the ceiling)
    b = max(batches)
    env_ids = torch.arange(b, device=device)
    call = validate_only_call(placer, problem, env_ids,
                              placer.place_problem(problem, env_ids, torch.zeros_like(env_ids)))
    if call is None:
        print(f"bench scene={name} batch={b} validate_only_per_s=n/a", flush=True)
        return
    s = sustained(call, **timing)
    print(f"bench scene={name} batch={b} validate_only_per_s={b / s.median:.0f} "
          f"solve_vs_validate={(b / s.median) / results[(name, b)]:.2f}x "
          f"cpu_validate_only_per_s={b / max(s.cpu_median, 1e-12):.0f} {s.keys()}", flush=True)


def bench_peer(name: str, n_obj: int, n_layouts: int, timing: dict, device: str, ours: float | None) -> None:
    """Isaac Lab's stock stacking-task randomiser on the same job, checked by our validators.

    Axis-aligned cubes of side ``a`` keep the solver's clearance ``c`` when their centres differ by at least
    ``a + c`` along X or Y; a centre distance above ``(a + c) * sqrt(2)`` guarantees that in every direction, so
    that is the stock sampler's ``min_separation`` (plus 1 mm)."""
    from isaaclab_tasks.contrib.stack.mdp.stack_events import sample_object_poses

    placer = make_placer(0)
    half = 0.06
    margin = 0.05  # On's default edge_margin_m
    pose_range = {"x": (-TABLE_SIZE[0] / 2 + margin + half, TABLE_SIZE[0] / 2 - margin - half),
                  "y": (-TABLE_SIZE[1] / 2 + margin + half, TABLE_SIZE[1] / 2 - margin - half),
                  "z": (TABLE_SIZE[2] + 0.01 + half, TABLE_SIZE[2] + 0.01 + half)}
    clearance = solver_clearance(placer)
    min_sep = (2 * half + clearance) * math.sqrt(2) + 1e-3
    random.seed(0)
    last = {}

    def run():
        last["layouts"] = [sample_object_poses(num_objects=n_obj, min_separation=min_sep, pose_range=pose_range)
                           for _ in range(n_layouts)]

    s = sustained(run, **timing)
    per_s = n_layouts / s.median
    pos = torch.tensor([[p[:3] for p in lay] for lay in last["layouts"]], dtype=torch.float32, device=device)
    passed = peer_verdicts(placer, SCENES[name](), pos, device)
    rate = float(passed.float().mean()) if passed is not None else None
    ratio = f" ratio={ours / per_s:.1f}" if ours else ""
    valid = (f"valid_rate={rate:.4f} valid_layouts_per_s={rate * per_s:.0f}" if rate is not None
             else "valid_rate=n/a")
    print(f"bench scene={name} peer=isaaclab_stock layouts_per_s={per_s:.0f} {valid}{ratio} "
          f"min_separation_m={min_sep:.4f} clearance_m={clearance:g} {s.keys()}", flush=True)


def bench_spread(name: str, counts: tuple[int, int]) -> None:
    """``bench scene=... spread_tv=... border_frac=... reference_border_frac=...``: the solver's layouts against
    brute-force rejection sampling (``placement_spread.py``)."""
    import placement_spread as spread

    assets = SCENES[name]()
    t0 = time.perf_counter()
    reference = spread.rejection_layouts(assets, counts[0], max_draws=300_000_000)
    solved = spread.solver_layouts(assets, counts[1])
    lo, hi, _ = spread.feasible_ranges(make_placer(0), assets)
    print(f"bench scene={name} spread_tv={spread.spread_tv(solved, reference, lo, hi):.4f} "
          f"border_frac={spread.border_frac(solved, lo, hi):.4f} "
          f"reference_border_frac={spread.border_frac(reference, lo, hi):.4f} reference_layouts={len(reference)} "
          f"solved_layouts={len(solved)} seconds={time.perf_counter() - t0:.1f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small batches, short windows (CI)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--runs", type=int, default=None, help="timed windows per figure (median; default 5, quick 3)")
    ap.add_argument("--window_s", type=float, default=None, help="minimum seconds per window (default 1.0, quick 0.1)")
    ap.add_argument("--warmup_s", type=float, default=None, help="discarded seconds first (default 0.5, quick 0.05)")
    ap.add_argument("--scenes", nargs="*", default=None, help="subset of scenes")
    ap.add_argument("--batches", nargs="*", type=int, default=None, help="subset of batch sizes")
    ap.add_argument("--no-peer", dest="peer", action="store_false", help="skip Isaac Lab's stock randomiser")
    ap.add_argument("--no-spread", dest="spread", action="store_false", help="skip the spread against rejection "
                                                                             "sampling")
    ap.add_argument("--no-mesh", dest="mesh", action="store_false", help="skip the MESH scenes (BBOX against MESH)")
    ap.add_argument("--no-scaling", dest="scaling", action="store_false",
                    help="skip the compile of 1,000 objects and the refill against its solve (bench_scale_refill.py)")
    args = ap.parse_args()
    plan = QUICK if args.quick else FULL
    timing = {"windows": args.runs or (3 if args.quick else 5),
              "window_s": args.window_s if args.window_s is not None else (0.1 if args.quick else 1.0),
              "warmup_s": args.warmup_s if args.warmup_s is not None else (0.05 if args.quick else 0.5)}
    import bench_mesh_scenes

    mesh_plan = bench_mesh_scenes.QUICK if args.quick else bench_mesh_scenes.FULL
    if args.scenes:
        known = [n for n, _ in FULL] + [n for n, _ in bench_mesh_scenes.FULL]
        unknown = sorted(set(args.scenes) - set(known))
        if unknown:
            ap.error(f"unknown scenes {unknown}; accepted: {known}")
        plan = [p for p in plan if p[0] in args.scenes]
        mesh_plan = [p for p in mesh_plan if p[0] in args.scenes]
    if args.batches:
        plan = [(n, [b for b in bs if b in args.batches]) for n, bs in plan]
        plan = [(n, bs) for n, bs in plan if bs]
        mesh_plan = [(n, [b for b in bs if b in args.batches]) for n, bs in mesh_plan]
        mesh_plan = [(n, bs) for n, bs in mesh_plan if bs]
    print(code_line(), flush=True)
    results: dict = {}
    for name, batches in plan:
        bench_scene(name, batches, timing, args.device, results)
    for name, batches in (mesh_plan if args.mesh else []):
        bench_mesh_scenes.bench(name, batches, timing, args.device)
    if args.scaling and not args.scenes and args.device == "cpu":
        import bench_scale_refill

        bench_scale_refill.run(args.quick)
    if args.spread:
        for name, counts in (SPREAD_QUICK if args.quick else SPREAD).items():
            if not args.scenes or name in args.scenes:
                bench_spread(name, counts)
    if not args.peer:
        return
    for name, (n_obj, n_layouts) in (PEER_QUICK if args.quick else PEER).items():
        if args.scenes and name not in args.scenes:
            continue
        ours = max((v for (s, b), v in results.items() if s == name), default=None)
        bench_peer(name, n_obj, n_layouts, timing, args.device, ours)


if __name__ == "__main__":
    main()

"""Placement benchmark: solved-and-validated layouts per second through ObjectPlacer's code path.

Prints one line per (scene, batch):
  bench scene=boxes3 batch=4096 layouts_per_s=... valid_rate=... ms_per_solve=... valid_layouts_per_s=...
plus ``bench scene=... compile_s=...`` (one-time compile and kernel load, excluded from the rates),
``bench scene=... batch=... validate_only_per_s=...`` (the check pass alone: the ceiling), and for
boxes3/boxes10 Isaac Lab's stock randomiser (``sample_object_poses`` of
isaaclab_tasks/contrib/stack/mdp/stack_events.py) checked by our validators:
  bench scene=boxes3 peer=isaaclab_stock layouts_per_s=... valid_rate=... ratio=...

A layout counts from the drawing of its candidate to its check verdicts (ObjectPlacer.place_problem:
generate, solve, modifiers, validate). Figures are medians of several runs.

Usage: scripts/arena_python.sh scripts/bench_placement.py [--quick] [--device cpu] [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

from isaaclab_arena.relations.object_placer import ObjectPlacer  # noqa: E402
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams  # noqa: E402
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams  # noqa: E402
from isaaclab_arena.relations.scenes import SCENES, TABLE_SIZE  # noqa: E402

# all_relations uses every remaining relation kind but ClutterOn (it must be an object's only spatial
# relation), which the clutter scene covers: six boxes released on the table's central 40 %.
FULL = [("boxes3", [1, 32, 128, 1024, 4096]), ("boxes10", [1, 128, 1024]), ("mug_bowl", [1, 1024]),
        ("crowded14", [256]), ("all_relations", [256]), ("clutter", [256])]
QUICK = [("boxes3", [1, 128]), ("boxes10", [128]), ("mug_bowl", [128]), ("crowded14", [64]), ("all_relations", [64]),
         ("clutter", [64])]
PEER = {"boxes3": (3, 4096), "boxes10": (10, 1024)}
PEER_QUICK = {"boxes3": (3, 256), "boxes10": (10, 64)}


def median_time(fn, runs: int) -> float:
    ts = []
    for r in range(runs):
        t0 = time.perf_counter()
        fn(r)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def bench_scene(name: str, batches: list[int], runs: int, device: str, results: dict) -> None:
    assets = SCENES[name]()
    # the solver's per-call progress line (RelationSolverParams.verbose, default on) is not timed here
    placer = ObjectPlacer(ObjectPlacerParams(placement_seed=1234, solver_params=RelationSolverParams(verbose=False)))
    num_envs = max(batches)
    t0 = time.perf_counter()
    problem = placer.compile(assets, num_envs, device)
    env = torch.arange(num_envs, device=device)
    placer.place_problem(problem, env, torch.zeros_like(env))  # kernel load (cached after the first process)
    print(f"bench scene={name} compile_s={time.perf_counter() - t0:.3f}", flush=True)
    for b in batches:
        env_ids = torch.arange(b, device=device)
        valid, total = [0], [0]

        def run(r, env_ids=env_ids, valid=valid, total=total):
            batch = placer.place_problem(problem, env_ids, torch.full_like(env_ids, r + 1))
            valid[0] += int(batch.passed.sum())
            total[0] += len(batch)

        reps = runs if b >= 128 else max(runs, 4096 // b if b > 1 else 200)
        run(-1)
        valid[0] = total[0] = 0
        t = median_time(run, reps)
        rate = valid[0] / total[0]
        results[(name, b)] = b / t
        print(f"bench scene={name} batch={b} layouts_per_s={b / t:.0f} valid_rate={rate:.4f} ms_per_solve={t * 1e3:.3f} "
              f"valid_layouts_per_s={rate * b / t:.0f}", flush=True)
    # validate-only on the largest batch (the ceiling)
    b = max(batches)
    env_ids = torch.arange(b, device=device)
    batch = placer.place_problem(problem, env_ids, torch.zeros_like(env_ids))
    from isaaclab_arena.relations.evaluation import evaluate_poses

    def validate(r):
        placer.validate(problem, evaluate_poses(problem, env_ids, batch.positions, batch.rotations))

    validate(0)
    t = median_time(validate, max(runs, 20 if b < 128 else runs))
    ratio = results[(name, b)] / (b / t)
    print(f"bench scene={name} batch={b} validate_only_per_s={b / t:.0f} solve_vs_validate={1 / ratio:.2f}x",
          flush=True)


def bench_peer(name: str, n_obj: int, n_layouts: int, device: str, ours: float | None) -> None:
    """Isaac Lab's stock stacking-task randomiser on the same work, checked by our validators."""
    from isaaclab_tasks.contrib.stack.mdp.stack_events import sample_object_poses

    half = 0.06
    margin = 0.05  # On's default edge_margin_m
    pose_range = {"x": (-TABLE_SIZE[0] / 2 + margin + half, TABLE_SIZE[0] / 2 - margin - half),
                  "y": (-TABLE_SIZE[1] / 2 + margin + half, TABLE_SIZE[1] / 2 - margin - half),
                  "z": (TABLE_SIZE[2] + 0.01 + half, TABLE_SIZE[2] + 0.01 + half)}
    min_sep = 0.12 * 2 ** 0.5 + 1e-3  # centre distance that keeps two 0.12 m cubes apart
    random.seed(0)
    t0 = time.perf_counter()
    layouts = [sample_object_poses(num_objects=n_obj, min_separation=min_sep, pose_range=pose_range)
               for _ in range(n_layouts)]
    dt = time.perf_counter() - t0
    pos = torch.tensor([[p[:3] for p in lay] for lay in layouts], dtype=torch.float32, device=device)
    placer = ObjectPlacer(ObjectPlacerParams(placement_seed=0))
    batch = placer.validate_poses(SCENES[name](), pos, device=device)
    rate = float(batch.passed.float().mean())
    ratio = f" ratio={ours / (n_layouts / dt):.1f}" if ours else ""
    print(f"bench scene={name} peer=isaaclab_stock layouts_per_s={n_layouts / dt:.0f} valid_rate={rate:.4f}"
          f" valid_layouts_per_s={rate * n_layouts / dt:.0f}{ratio}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small batches and few runs (CI)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--runs", type=int, default=None, help="timed runs per figure (median)")
    ap.add_argument("--scenes", nargs="*", default=None, help="subset of scenes")
    args = ap.parse_args()
    plan = QUICK if args.quick else FULL
    runs = args.runs or (3 if args.quick else 9)
    if args.scenes:
        plan = [p for p in plan if p[0] in args.scenes]
    results: dict = {}
    for name, batches in plan:
        bench_scene(name, batches, runs, args.device, results)
    peers = PEER_QUICK if args.quick else PEER
    for name, (n_obj, n_layouts) in peers.items():
        if args.scenes and name not in args.scenes:
            continue
        ours = max((v for (s, b), v in results.items() if s == name), default=None)
        bench_peer(name, n_obj, n_layouts, args.device, ours)


if __name__ == "__main__":
    main()

"""MESH collision benchmark: sphere-set versus mesh queries per second (``MeshPairQuery``, one warp thread
per candidate) for 256 and 4096 candidates.

Pairs (subject spheres -> target mesh, both extracted from the shipped USD assets):
  mug_in_bowl     mug_with_handle (30 spheres) -> hollow_bowl
  cube_by_mug     a 4 cm cube (30 spheres)     -> mug_with_handle
  mug_on_counter  mug_with_handle (30 spheres) -> kitchen_counter
Candidate sets, seeded:
  near     subject yawed at random around the target, its origin on the target's box grown by the
           subject's radius -2..+4 cm: mostly free or grazing, like solved candidates
  overlap  subject origin uniform in the target's box: mostly overlapping (the expensive case)
Modes: ``check`` stops a candidate at its first penetrating sphere (the no_overlap verdict), ``full``
measures every sphere (depth and push, as the solver needs).

Prints per (pair, set, mode, batch):
  bench mesh pair=... set=... mode=... batch=... candidates_per_s=... sphere_queries_per_s=... overlap_rate=...
(sphere_queries = candidates x spheres, culled ones included) and once per pair the setup cost:
  bench mesh pair=... fit_s=... grid_s=... spheres=... cover_volume_ratio=... cover_bulge_m=... cover_coverage=...
(the subject's spheres: union volume over its box volume, how far they reach outside its mesh, the share of
20,000 surface samples they hold; fit_s is 0 when an earlier pair fitted the same subject)
Figures are medians of ``--runs`` timed runs after a warm-up.

Usage: scripts/arena_python.sh scripts/bench_mesh.py [--device cpu] [--runs 7] [--batches 256 4096]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import trimesh  # noqa: E402

from isaaclab_arena.adapters.usd_mesh import usd_collision_mesh  # noqa: E402
from isaaclab_arena.relations.mesh import MeshPairQuery, cover_stats, fit_sphere_cover, prepare_target  # noqa: E402
from isaaclab_arena_environments.assets import library  # noqa: E402


def _subjects():
    cube = trimesh.creation.box(extents=(0.04, 0.04, 0.04))
    return {"mug": usd_collision_mesh(library.MUG_USD).mesh, "cube": cube}


PAIRS = {"mug_in_bowl": ("mug", library.BOWL_USD), "cube_by_mug": ("cube", library.MUG_USD),
         "mug_on_counter": ("mug", library.KITCHEN_COUNTER_USD)}


def candidates(kind: str, b: int, target: trimesh.Trimesh, subject_radius: float, rng) -> torch.Tensor:
    """(b, 7) subject poses in the target's frame (identity target pose): position, yaw-only xyzw."""
    lo, hi = target.bounds
    if kind == "overlap":
        pos = lo + rng.random((b, 3)) * (hi - lo)
    else:
        ang = rng.random(b) * 2 * np.pi
        centre, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
        # a point on the box's footprint outline, pushed out by the subject's radius and -2..+4 cm
        d = np.c_[np.cos(ang), np.sin(ang)]
        scale = 1.0 / np.max(np.abs(d) / half[:2], axis=1)
        pos = np.c_[centre[:2] + d * (scale[:, None] + subject_radius + rng.uniform(-0.02, 0.04, (b, 1))),
                    lo[2] + rng.random(b) * (hi[2] - lo[2])]
    yaw = rng.random(b) * 2 * np.pi
    return torch.tensor(np.c_[pos, np.zeros((b, 2)), np.sin(0.5 * yaw), np.cos(0.5 * yaw)], dtype=torch.float32)


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--batches", type=int, nargs="+", default=[256, 4096])
    args = parser.parse_args()
    subjects = _subjects()
    identity = torch.tensor([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0], device=args.device)
    for pair, (subject_name, target_usd) in PAIRS.items():
        subject = subjects[subject_name]
        t0 = time.perf_counter()
        cover = fit_sphere_cover(subject.vertices, subject.faces, 30, seed=0)
        fit_s = time.perf_counter() - t0
        stats = cover_stats(cover, subject.vertices, subject.faces)
        tmesh = usd_collision_mesh(target_usd).mesh
        target = prepare_target(pair, tmesh.vertices, tmesh.faces)
        t0 = time.perf_counter()
        target.sdf_grid()
        grid_s = time.perf_counter() - t0
        query = MeshPairQuery(cover, target, args.device)
        print(f"bench mesh pair={pair} fit_s={fit_s:.3f} grid_s={grid_s:.3f} spheres={cover.num_spheres} "
              f"cover_volume_ratio={stats.volume_ratio:.3f} cover_bulge_m={stats.bulge_m:.4f} "
              f"cover_coverage={stats.coverage:.4f} target_faces={len(target.faces)}", flush=True)
        radius = float(np.linalg.norm(subject.vertices[:, :2], axis=1).max())
        for kind in ("near", "overlap"):
            for b in args.batches:
                poses = candidates(kind, b, tmesh, radius, np.random.default_rng(b)).to(args.device)
                for mode, stop in (("check", 0.0), ("full", 1.0e9)):
                    out = query(poses, identity, stop_above=stop)  # warm-up (kernel load)
                    times = []
                    for _ in range(args.runs):
                        if args.device.startswith("cuda"):
                            torch.cuda.synchronize()
                        t0 = time.perf_counter()
                        out = query(poses, identity, stop_above=stop, check=False)
                        if args.device.startswith("cuda"):
                            torch.cuda.synchronize()
                        times.append(time.perf_counter() - t0)
                    t = statistics.median(times)
                    rate = float((out.depth > 0).float().mean())
                    print(f"bench mesh pair={pair} set={kind} mode={mode} batch={b} candidates_per_s={b / t:.0f} "
                          f"sphere_queries_per_s={b * cover.num_spheres / t:.0f} overlap_rate={rate:.3f}", flush=True)


if __name__ == "__main__":
    main()

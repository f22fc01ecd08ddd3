"""Evaluation and recording on 1 and 2 processes: torchrun (one job split over ranks) and Ray (an experiment's
shards as tasks). Prints one line per configuration and the parallel efficiency:

    scripts/arena_python.sh scripts/bench_distributed.py [--runs 3] [--episodes 16] [--num_envs 4] [--only eval,ray,record]

``episodes_per_min`` counts episodes over the evaluation loop's wall time (the slowest rank; Isaac Lab start-up and
layout solving excluded) and ``episodes_per_min_wall`` over the whole command; ``merge_s`` is rank 0's gather
and merge after every rank finished. ``recorded_layouts_per_min`` is the recorder's accepted layouts over the
whole command. Medians over ``--runs``. On 2 cores expect at most 2x: two ranks share the cores with the
simulators' own worker threads.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
LAUNCHER = os.path.join(HERE, "arena_python.sh")
ENV = "franka_table_pick_and_place"


def _run(cwd, *args) -> float:
    t = time.perf_counter()
    out = subprocess.run([LAUNCHER, *args], cwd=cwd, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:6])} ... failed:\n{out.stderr[-3000:]}")
    return time.perf_counter() - t


def bench_eval(cwd, episodes: int, num_envs: int, nproc: int) -> dict:
    out = os.path.join(cwd, f"eval{nproc}")
    shutil.rmtree(out, ignore_errors=True)
    args = ["isaaclab_arena/evaluation/policy_runner.py", "--policy_type", "scripted_pick_and_place", "--num_envs",
            str(num_envs), "--env_spacing", "0", "--num_episodes", str(episodes), "--placement_seed", "7",
            "--output_dir", out, "--no-report", "--no-progress"]
    if nproc > 1:
        args = ["-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}", *args, "--distributed"]
    wall = _run(cwd, *args, ENV, "--episode_length_s", "5")
    summary = json.load(open(os.path.join(out, "eval_summary.json")))
    return {"episodes_per_min": 60 * episodes / summary["wall_s"], "episodes_per_min_wall": 60 * episodes / wall,
            "merge_s": summary.get("merge_s", 0.0)}


def bench_ray(cwd, episodes: int, num_envs: int, nproc: int) -> dict:
    exp = os.path.join(cwd, "bench_exp.yaml")
    with open(exp, "w") as f:
        f.write(f"name: bench\nruns:\n  - {{name: scripted, environment: {ENV}, num_envs: {num_envs}, env_spacing: 0, "
                f"num_episodes: {episodes}, placement_seed: 7, env_args: {{episode_length_s: 5}}, "
                "policy: {type: scripted_pick_and_place}}\n")
    out = os.path.join(cwd, f"ray{nproc}")
    shutil.rmtree(out, ignore_errors=True)
    args = ["isaaclab_arena/evaluation/eval_runner.py", "--experiment", exp, "--output_dir", out, "--no-progress"]
    if nproc > 1:
        args += ["--ray", "--shard_episodes", str((episodes + nproc - 1) // nproc)]
    wall = _run(cwd, *args)
    return {"episodes_per_min_wall": 60 * episodes / wall}


def bench_record(cwd, layouts: int, num_envs: int, nproc: int) -> dict:
    out = os.path.join(cwd, f"rec{nproc}.jsonl")
    for p in (out, out + ".shards"):
        shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else (os.path.exists(p) and os.remove(p))
    spec = os.path.join(os.path.dirname(HERE), "isaaclab_arena_environments", "tabletop", "mug_bowl_table.yaml")
    args = ["isaaclab_arena/scripts/record_placement_layouts.py", f"env_spec={spec}", f"output={out}",
            f"num_envs={num_envs}", "env_spacing=0", f"min_layouts={layouts}", "max_batches=20", "settle.num_steps=30",
            "settle.validators.pose_shift.max_translation_m=0.02"]
    if nproc > 1:
        args = ["-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}", *args, "--distributed"]
    wall = _run(cwd, *args)
    with open(out) as f:
        n = sum(1 for line in f if line.strip())
    return {"recorded_layouts_per_min": 60 * n / wall}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--episodes", type=int, default=16)
    p.add_argument("--num_envs", type=int, default=4)
    p.add_argument("--layouts", type=int, default=32)
    p.add_argument("--only", default="eval,ray,record")
    args = p.parse_args()
    only = set(args.only.split(","))
    cwd = tempfile.mkdtemp(prefix="bench_distributed_")
    benches = [("eval", bench_eval, args.episodes), ("ray", bench_ray, args.episodes),
               ("record", bench_record, args.layouts)]
    for name, fn, count in benches:
        if name not in only:
            continue
        rows = {}
        for nproc in (1, 2):
            samples = [fn(cwd, count, args.num_envs, nproc) for _ in range(args.runs)]
            rows[nproc] = {k: statistics.median(s[k] for s in samples) for k in samples[0]}
            figures = " ".join(f"{k}={v:.3g}" for k, v in rows[nproc].items())
            print(f"bench distributed={name} processes={nproc} runs={args.runs} {figures}", flush=True)
        key = next(iter(rows[1]))
        eff = rows[2][key] / rows[1][key] / 2
        print(f"bench distributed={name} speedup_2x={rows[2][key] / rows[1][key]:.2f} parallel_efficiency={eff:.2f} "
              f"(on {key})", flush=True)
    shutil.rmtree(cwd, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

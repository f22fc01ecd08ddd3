"""Benchmark of the placement recorder: ``bench recorder_accepted_per_min=...`` (and the replay reset cost).

Usage (from the repository root)::

    scripts/arena_python.sh scripts/bench_recorder.py [--num_envs 16] [--num_steps 90] [--min_layouts 192]
                                                      [--max_batches 16] [--device cpu] [--no-replay]

Records settled layouts of the table clutter scene (``isaaclab_arena_environments/clutter/table_clutter.yaml``:
four boxes ClutterOn a tabletop) in a kit-less Isaac Lab env (OV PhysX), ``--num_envs`` parallel envs,
``--num_steps`` env steps of settling per batch (decimation 2, dt 1/120 s), all default post-physics checks.

Prints:
- ``bench recorder_env_build_s``: compose (solver pool fill) + env creation, seconds;
- ``bench recorder_accepted_per_min``: accepted layouts per minute of recording (reset, solver verdicts,
  settling, post-physics checks, atomic write), env build excluded;
- ``bench recorder_acceptance_rate``: 1 - rejected / attempted (the last batch may accept more than are written);
- ``bench replay_reset_ms_1024``: the replay reset for 1024 envs in a real env: one call of the replay reset
  writer (queue draw, pose gather, batched root pose + zero velocity writes of the recorded roots);
- ``bench replay_env_reset_ms_1024``: the whole ``env.reset()`` of that env, for comparison
  (both from ``isaaclab_arena.offline_placement.bench_replay``; skipped with ``--no-replay``).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from isaaclab_arena import ARENA_ROOT

SCENE = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "clutter", "table_clutter.yaml")


def bench_recorder(num_envs: int, num_steps: int, min_layouts: int, max_batches: int, device: str) -> dict:
    from isaaclab.app import launch_simulation

    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.offline_placement.recording import SettledPlacementParams
    from isaaclab_arena.offline_placement.recording_output import record_placements_to_jsonl

    arena_env = ArenaEnvGraphSpec.from_yaml(SCENE).to_arena_env()
    t0 = time.perf_counter()
    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=num_envs, env_spacing=2.0, device=device,
                                                            placement_seed=42, gym_id="bench_recorder"))
    env_cfg = builder.compose_manager_cfg()
    out = os.path.join(tempfile.mkdtemp(prefix="bench_recorder_"), "table_clutter.jsonl")
    with launch_simulation(env_cfg, {"headless": True, "device": device}):
        env = builder.make_registered(env_cfg)
        build_s = time.perf_counter() - t0
        try:
            t1 = time.perf_counter()
            result = record_placements_to_jsonl(env, out, min_layouts=min_layouts, max_batches=max_batches,
                                                params=SettledPlacementParams(num_steps=num_steps, seed=42, verbose=False),
                                                scene_assets=arena_env.get_placement_assets())
            record_s = time.perf_counter() - t1
        finally:
            env.close()
    return {"build_s": build_s, "record_s": record_s, "accepted": result.accepted, "attempted": result.attempted,
            "rejections": result.rejections, "rejected": result.summary.rejected, "output": result.output}


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num_envs", type=int, default=16)
    parser.add_argument("--num_steps", type=int, default=90)
    parser.add_argument("--min_layouts", type=int, default=192)
    parser.add_argument("--max_batches", type=int, default=16)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--no-replay", dest="replay", action="store_false", help="skip bench replay_reset_ms_1024")
    args = parser.parse_args()
    r = bench_recorder(args.num_envs, args.num_steps, args.min_layouts, args.max_batches, args.device)
    per_min = r["accepted"] / (r["record_s"] / 60.0) if r["record_s"] > 0 else 0.0
    print(f"[bench] table_clutter, {args.num_envs} envs, {args.num_steps} settle steps: {r['accepted']}/"
          f"{r['attempted']} accepted in {r['record_s']:.2f} s, rejections {r['rejections']}", flush=True)
    print(f"bench recorder_env_build_s={r['build_s']:.3f}", flush=True)
    print(f"bench recorder_accepted_per_min={per_min:.1f}", flush=True)
    rate = 1.0 - r["rejected"] / max(1, r["attempted"])  # layouts past the target are accepted but not written
    print(f"bench recorder_acceptance_rate={rate:.3f}", flush=True)
    if args.replay:
        from isaaclab_arena.offline_placement.bench_replay import bench_env_reset

        replay = bench_env_reset(1024)
        print(f"bench replay_reset_ms_1024={replay['term_ms']:.3f}", flush=True)
        print(f"bench replay_env_reset_ms_1024={replay['env_reset_ms']:.3f}", flush=True)


if __name__ == "__main__":
    main()

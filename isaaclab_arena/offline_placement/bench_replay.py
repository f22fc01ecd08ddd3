"""Benchmark of the replay reset: ``bench replay_reset_ms_1024=...``.

Usage (from the repository root)::

    scripts/arena_python.sh -m isaaclab_arena.offline_placement.bench_replay [--num_envs 1024] [--no-env]

Prints two figures:
- ``bench replay_queue_ms_<N>``: queue draw + batched gather of the layouts' root poses + env origins for N
  resetting envs (the simulator-free part of the replay reset term), median over repeats.
- ``bench replay_reset_ms_<N>``: ``env.reset()`` of a real kit-less Isaac Lab env (OV PhysX, CPU,
  ``mug_bowl_table.yaml``) replaying recorded layouts for all N envs: the whole reset including the pose
  writes, median over repeats (skipped with ``--no-env``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import torch

from isaaclab_arena.relations.placement_layouts import PlacementLayouts
from isaaclab_arena.relations.placement_replay import PlacementReplayQueue, replay_root_poses, zero_root_velocities


def _layouts(num_layouts: int) -> PlacementLayouts:
    g = torch.Generator().manual_seed(0)
    xy = (torch.rand((num_layouts, 2, 2), generator=g) - 0.5) * 0.6
    z = torch.tensor([0.80, 0.78]).expand(num_layouts, 2)[..., None]
    yaw = (torch.rand((num_layouts, 2), generator=g) - 0.5) * 6.28
    rot = torch.stack([torch.zeros_like(yaw), torch.zeros_like(yaw), torch.sin(yaw / 2), torch.cos(yaw / 2)], -1)
    return PlacementLayouts(("mug", "bowl"), torch.cat([xy, z], -1), rot, sources=["settled"] * num_layouts)


def bench_queue(num_envs: int, repeats: int = 200) -> float:
    layouts = _layouts(64)
    queue = PlacementReplayQueue(len(layouts), num_envs)
    env_ids = torch.arange(num_envs)
    origins = torch.randn(num_envs, 3)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        ids = queue.next_layouts(env_ids)
        replay_root_poses(layouts, ids, origins)
        zero_root_velocities(num_envs)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def bench_env_reset(num_envs: int, repeats: int = 10) -> float:
    from isaaclab.app import launch_simulation

    from isaaclab_arena import ARENA_ROOT
    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg

    spec = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "tabletop", "mug_bowl_table.yaml")
    path = _layouts(64).write_episode_jsonl(os.path.join(tempfile.mkdtemp(), "bench.jsonl"), source="settled")
    arena_env = ArenaEnvGraphSpec.from_yaml(spec).to_arena_env()
    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=num_envs, env_spacing=2.5, gym_id="bench_replay",
                                                            placement_layouts_path=path))
    env_cfg = builder.compose_manager_cfg()
    with launch_simulation(env_cfg, {"headless": True, "device": "cpu"}):
        env = builder.make_registered(env_cfg)
        try:
            env.reset()
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                env.reset()
                times.append((time.perf_counter() - t0) * 1e3)
        finally:
            env.close()
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num_envs", type=int, default=1024)
    parser.add_argument("--no-env", dest="env", action="store_false", help="skip the Isaac Lab env reset")
    args = parser.parse_args()
    print(f"bench replay_queue_ms_{args.num_envs}={bench_queue(args.num_envs):.3f}", flush=True)
    if args.env:
        print(f"bench replay_reset_ms_{args.num_envs}={bench_env_reset(args.num_envs):.3f}", flush=True)


if __name__ == "__main__":
    main()

"""Benchmark of the replay reset: ``bench replay_reset_ms_1024=...``.

Usage (from the repository root)::

    scripts/arena_python.sh -m isaaclab_arena.offline_placement.bench_replay [--num_envs 1024] [--no-env]

Prints three figures, each the median over repeats, for N resetting envs:
- ``bench replay_queue_ms_<N>``: queue draw + batched gather of the layouts' root poses + env origins
  (the simulator-free part of the replay reset), no Isaac Lab.
- ``bench replay_reset_ms_<N>``: the replay reset itself in a real kit-less Isaac Lab env (OV PhysX, CPU,
  ``mug_bowl_table.yaml``, 2 recorded roots): one call of the single replay reset writer
  (``ArenaPoseResetTerm``) for all N envs: queue draw, pose gather, env origins, and the batched
  ``write_root_pose_to_sim_index`` / ``write_root_velocity_to_sim_index`` of every recorded root. This is
  what replay adds to a reset.
- ``bench replay_env_reset_ms_<N>``: the whole ``env.reset()`` of that env (the term above plus Isaac Lab's
  own reset work: managers, scene reset, ``write_data_to_sim``, ``sim.forward``), for comparison.

``--no-env`` skips the two Isaac Lab figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import torch

from isaaclab_arena.offline_placement.placement_layouts import PlacementLayouts
from isaaclab_arena.offline_placement.placement_replay import PlacementReplayQueue, replay_root_poses, zero_root_velocities


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


def bench_env_reset(num_envs: int, repeats: int = 50) -> dict[str, float]:
    """Median milliseconds of the replay reset term call and of ``env.reset()`` for ``num_envs`` envs.

    Returns:
        ``{"term_ms": ..., "env_reset_ms": ..., "writer": <the reset term's root writer>}``.
    """
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
            u = env.unwrapped
            env.reset()
            term_cfg = u.event_manager.get_term_cfg("arena_placement")
            term = term_cfg.func  # the ArenaPoseResetTerm instance (class-based term)
            env_ids = torch.arange(num_envs, device=u.device)
            term(u, env_ids, **term_cfg.params)  # warm-up
            term_ms = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                term(u, env_ids, **term_cfg.params)
                term_ms.append((time.perf_counter() - t0) * 1e3)
            reset_ms = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                env.reset()
                reset_ms.append((time.perf_counter() - t0) * 1e3)
        finally:
            env.close()
    writer = getattr(getattr(term, "writer", None), "name", "per_asset")
    return {"term_ms": statistics.median(term_ms), "env_reset_ms": statistics.median(reset_ms), "writer": writer}


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num_envs", type=int, default=1024)
    parser.add_argument("--no-env", dest="env", action="store_false", help="skip the Isaac Lab env reset")
    args = parser.parse_args()
    print(f"bench replay_queue_ms_{args.num_envs}={bench_queue(args.num_envs):.3f}", flush=True)
    if args.env:
        r = bench_env_reset(args.num_envs)
        print(f"[bench] mug_bowl_table, 2 recorded roots, {args.num_envs} envs, root writer: {r['writer']}", flush=True)
        print(f"bench replay_reset_ms_{args.num_envs}={r['term_ms']:.3f}", flush=True)
        print(f"bench replay_env_reset_ms_{args.num_envs}={r['env_reset_ms']:.3f}", flush=True)


if __name__ == "__main__":
    main()

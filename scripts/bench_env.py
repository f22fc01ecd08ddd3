"""Benchmarks of the environment integration; prints one ``bench key=value ...`` line each.

    scripts/arena_python.sh scripts/bench_env.py [--only pool,pool16,reset,steps] [--device cpu]

* ``pool_fill_s``: pool generation, 64 envs x 5 layouts, densest example (dense_tabletop.yaml).
* ``pool_fill_16obj_256x5_s``: a 16-object tabletop, 256 envs x 5 layouts (target < 1 s on this CPU).
* ``reset_ms_1024``: one call of the reset term for 1024 envs (target < 5 ms), dense example (7 objects);
  refill resets (one in ``min_unique_layouts_per_env``) are reported apart and amortised.
* ``steps_ratio``: env-steps/s with placement at every reset over the same env with fixed poses (>= 0.95),
  resets at the env's episode rate (1 s episodes = 60 env steps), 64 envs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DENSE = os.path.join(ROOT, "isaaclab_arena_environments", "tabletop", "dense_tabletop.yaml")


def _dense():
    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec

    return ArenaEnvGraphSpec.from_yaml(DENSE).to_arena_env()


def _sixteen():
    from isaaclab_arena.assets.object_reference import ObjectReference
    from isaaclab_arena.environments.isaaclab_arena_environment import IsaacLabArenaEnvironment
    from isaaclab_arena.relations.relations import IsAnchor, On
    from isaaclab_arena_environments.assets import library as L

    bg = L.table_background("table_background")
    table = ObjectReference("table", "{ENV_REGEX_NS}/table_background/table", bg, object_type="base")
    table.add_relation(IsAnchor())
    kinds = [L.mug, L.bowl, L.cube_4cm, L.cube_8cm, L.box_flat, L.box_tall, L.cube_4cm, L.cube_8cm]
    objs = [kinds[i % len(kinds)](f"obj_{i:02d}").add_relation(On(table)) for i in range(16)]
    return IsaacLabArenaEnvironment("tabletop_16", [bg, table, *objs])


def bench_pool(arena_env, num_envs, layouts, key, device):
    import dataclasses

    from isaaclab_arena.relations.pooled_object_placer import PooledObjectPlacer

    params = dataclasses.replace(arena_env.placer_params, min_unique_layouts_per_env=layouts, placement_seed=0)
    warm = PooledObjectPlacer(arena_env.get_placement_assets(), params, num_envs=2, device=device)
    warm.diagnostics.verbose = False
    warm.initialize()  # compile / warm caches
    pool = PooledObjectPlacer(arena_env.get_placement_assets(), params, num_envs=num_envs, device=device)
    pool.diagnostics.verbose = False
    t = time.perf_counter()
    pool.initialize()
    dt = time.perf_counter() - t
    ok = int(pool.slot_passed.sum())
    print(f"bench {key}={dt:.3f} envs={num_envs} layouts_per_env={layouts} objects={len(pool.object_names)} "
          f"passed_slots={ok}/{num_envs * layouts} fallback_envs={len(pool.fallback_envs)} device={device}", flush=True)


def _build(arena_env, num_envs, solve, episode_length_s=5.0, device="cpu"):
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg

    b = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=num_envs, env_spacing=2.0, solve_relations=solve,
                                                      placement_seed=0, episode_length_s=episode_length_s,
                                                      device=device, gym_id=f"bench_{arena_env.name}_{num_envs}_{solve}"))
    return b, b.compose_manager_cfg()


def bench_reset(device, num_envs=1024, reps=40):
    """Cost of one call of the reset term for ``num_envs`` envs (pool pop + batched root writes), median over
    calls that find their partitions non-empty; refills (every ``min_unique_layouts_per_env`` resets of the
    same envs) are reported apart, with their cost per reset amortised."""
    from isaaclab.app import launch_simulation

    solve = _solver_available()
    b, cfg = _build(_dense(), num_envs, solve, device=device)
    if b.placer is not None:
        b.placer.diagnostics.verbose = False
    with launch_simulation(cfg, {"headless": True, "device": device}):
        env = b.make(cfg)
        env.reset()
        term = env.event_manager._mode_term_cfgs["reset"][0].func
        ids = torch.arange(num_envs, device=env.device)
        for _ in range(3):
            term(env, ids, b.pose_source_key)
        plain, refill = [], []
        for _ in range(reps):
            fills = b.placer.num_fills if b.placer is not None else 0
            t = time.perf_counter()
            term(env, ids, b.pose_source_key)
            dt = (time.perf_counter() - t) * 1000
            (refill if b.placer is not None and b.placer.num_fills != fills else plain).append(dt)
        writer = term.writer.name
        # the root writes alone (no pool), same envs and poses
        names = term.source.object_names
        world = torch.stack([env.scene[n].data.root_link_pose_w.torch.clone() for n in names], dim=1)
        wt = []
        for _ in range(20):
            t = time.perf_counter()
            term.writer.write(ids, world)
            wt.append((time.perf_counter() - t) * 1000)
        env.close()
    med = sorted(plain)[len(plain) // 2]
    ref = sorted(refill)[len(refill) // 2] if refill else 0.0
    per = b.placer.layouts_per_env if b.placer is not None else 1
    print(f"bench reset_ms_1024={med:.3f} objects={len(b.pose_source.object_names)} writer={writer} "
          f"writes_only_ms={sorted(wt)[len(wt) // 2]:.3f} load={os.getloadavg()[0]:.2f} "
          f"refill_reset_ms={ref:.1f} amortised_ms={(med * (per - 1) + ref) / per:.3f} layouts_per_env={per} "
          f"source={'pooled' if solve else 'fixed'} envs={num_envs} device={device}", flush=True)


def bench_steps(device, num_envs=64, episode_length_s=1.0, block_steps=300, rounds=3):
    """env-steps/s with placement at every reset over the same env with fixed poses.

    One env (dense example, resets at its episode rate: ``episode_length_s`` / (sim_dt * decimation) env
    steps); its reset term alternates, block by block, between the pooled placer (a fresh layout per reset,
    refills during resets) and a fixed-pose source holding each env's creation layout (same objects, same
    physics, same writer). Blocks alternate so machine-load drift hits both alike."""
    from isaaclab.app import launch_simulation

    from isaaclab_arena.environments.reset_events import FixedPoseSource

    b, cfg = _build(_dense(), num_envs, True, episode_length_s=episode_length_s, device=device)
    b.placer.diagnostics.verbose = False
    steps_per_episode = round(episode_length_s / (cfg.sim.dt * cfg.decimation))
    with launch_simulation(cfg, {"headless": True, "device": device}):
        env = b.make(cfg)
        env.reset()
        term = env.event_manager._mode_term_cfgs["reset"][0].func
        pooled = term.source
        names = pooled.object_names
        index = torch.tensor([b.placer.object_names.index(n) for n in names])
        fixed = FixedPoseSource(names, b.placer.creation_poses[:, index])
        act = torch.zeros(num_envs, 0, device=env.device)
        for _ in range(20):
            env.step(act)
        elapsed = {"placed": 0.0, "fixed": 0.0}
        fills0 = b.placer.num_fills
        for _ in range(rounds):
            for kind, source in (("fixed", fixed), ("placed", pooled)):
                term.source = source
                t = time.perf_counter()
                for _ in range(block_steps):
                    env.step(act)
                elapsed[kind] += time.perf_counter() - t
        refills = b.placer.num_fills - fills0
        env.close()
    rate = {k: rounds * block_steps * num_envs / v for k, v in elapsed.items()}
    print(f"bench steps_ratio={rate['placed'] / rate['fixed']:.3f} placed_env_steps_s={rate['placed']:.0f} "
          f"fixed_env_steps_s={rate['fixed']:.0f} envs={num_envs} steps_per_episode={steps_per_episode} "
          f"steps_per_variant={rounds * block_steps} refills={refills} device={device}", flush=True)


def _solver_available() -> bool:
    try:
        import isaaclab_arena.relations.object_placer  # noqa: F401
    except ImportError:
        return False
    return True


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--only", default="pool,pool16,reset,steps")
    p.add_argument("--device", default="cpu")
    args = p.parse_args()
    which = set(args.only.split(","))
    solver = _solver_available()
    if not solver:
        print("bench solver=unavailable reason=isaaclab_arena.relations.object_placer_missing", flush=True)
    if "pool" in which and solver:
        bench_pool(_dense(), 64, 5, "pool_fill_s", args.device)
    if "pool16" in which and solver:
        bench_pool(_sixteen(), 256, 5, "pool_fill_16obj_256x5_s", args.device)
    if "reset" in which:
        bench_reset(args.device)
    if "steps" in which and solver:
        bench_steps(args.device)


if __name__ == "__main__":
    sys.exit(main())

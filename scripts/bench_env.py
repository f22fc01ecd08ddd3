"""Benchmarks of the environment integration; prints one ``bench key=value ...`` line each.

    scripts/arena_python.sh scripts/bench_env.py [--only pool,pool16,reset,steps] [--device cpu] [--window_s 1.0]

* ``pool_fill_s``: pool generation (``PooledObjectPlacer.initialize()`` of a fresh pool), 64 envs x 5 layouts,
  densest example (dense_tabletop.yaml).
* ``pool_fill_16obj_256x5_s``: the same for a 16-object tabletop, 256 envs x 5 layouts (target < 1 s on this CPU).
* ``reset_ms_1024``: one call of the reset term for 1024 envs (target < 5 ms), dense example (7 objects);
  refill resets (one in ``min_unique_layouts_per_env``) are reported apart and amortised; ``writes_only_ms``
  is the root writer alone.
* ``steps_ratio``: env-steps/s with placement at every reset over the same env with fixed poses (>= 0.95),
  resets at the env's episode rate (1 s episodes = 60 env steps), 64 envs.

Every figure is sustained (``bench_timing``): warm-up calls discarded, then ``--windows`` windows of at least
``--window_s`` seconds of repeated calls (steps: rounds of one block per variant, each block at least
``--window_s``); the figure is the median window, ``spread_pct`` the (slowest - fastest window) / median. The
first line, ``# code=...``, names the checkout measured (PYTHONPATH's, see bench_placement.py) and the machine.
``cpu_*`` figures count this process's CPU seconds (all its threads) over the same windows: steadier than wall
time when other processes load the machine.
Only API that older checkouts share is used (the term is called with its own ``params``), so
``bench_compare.py --env`` can run this script against either side.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

from bench_timing import code_line, sustained, sustained_samples  # noqa: E402


def _dense():
    from isaaclab_arena import ARENA_ROOT
    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec

    dense = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "tabletop", "dense_tabletop.yaml")
    return ArenaEnvGraphSpec.from_yaml(dense).to_arena_env()


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


def bench_pool(arena_env, num_envs, layouts, key, device, timing):
    """Seconds of ``initialize()`` of a fresh pool (its construction untimed), sustained."""
    import dataclasses

    from isaaclab_arena.relations.pooled_object_placer import PooledObjectPlacer

    params = dataclasses.replace(arena_env.placer_params, min_unique_layouts_per_env=layouts, placement_seed=0)
    last = {}

    def fill():
        pool = PooledObjectPlacer(arena_env.get_placement_assets(), params, num_envs=num_envs, device=device)
        pool.diagnostics.verbose = False
        t, c = time.perf_counter(), time.process_time()
        pool.initialize()
        last["pool"] = pool
        return time.perf_counter() - t, time.process_time() - c

    s = sustained(fill, self_timed=True, min_warmup_calls=1, **timing)
    pool = last["pool"]
    ok = int(pool.slot_passed.sum())
    print(f"bench {key}={s.median:.3f} envs={num_envs} layouts_per_env={layouts} objects={len(pool.object_names)} "
          f"passed_slots={ok}/{num_envs * layouts} fallback_envs={len(pool.fallback_envs)} device={device} "
          f"cpu_{key}={s.cpu_median:.3f} {s.keys()}", flush=True)


def _build(arena_env, num_envs, solve, episode_length_s=5.0, device="cpu"):
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg

    gym_id = f"bench_{arena_env.name}_{num_envs}_{solve}"
    b = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=num_envs, env_spacing=2.0, solve_relations=solve,
                                                      placement_seed=0, episode_length_s=episode_length_s,
                                                      device=device, gym_id=gym_id))
    return b, b.compose_manager_cfg()


def _reset_term(env):
    """(term instance, its params) of the arena placement reset term."""
    term_cfg = env.event_manager._mode_term_cfgs["reset"][0]
    return term_cfg.func, term_cfg.params


def bench_reset(device, timing, num_envs=1024):
    """Cost of one call of the reset term for ``num_envs`` envs (pool pop + batched root writes): the sustained
    mean over calls that find their partitions non-empty; refills (every ``min_unique_layouts_per_env`` resets
    of the same envs) are reported apart (median), with their cost per reset amortised."""
    from isaaclab.app import launch_simulation

    solve = _solver_available()
    b, cfg = _build(_dense(), num_envs, solve, device=device)
    if b.placer is not None:
        b.placer.diagnostics.verbose = False
    with launch_simulation(cfg, {"headless": True, "device": device}):
        env = b.make(cfg)
        env.reset()
        term, params = _reset_term(env)
        ids = torch.arange(num_envs, device=env.device)
        plain, plain_cpu, refill = [], [], []

        def reset_call():
            fills = b.placer.num_fills if b.placer is not None else 0
            t, c = time.perf_counter(), time.process_time()
            term(env, ids, **params)
            dt, dc = time.perf_counter() - t, time.process_time() - c
            if b.placer is not None and b.placer.num_fills != fills:
                refill.append(dt)
            else:
                plain.append(dt)
                plain_cpu.append(dc)

        for _ in range(3):  # warm-up, discarded
            reset_call()
        t_end = time.perf_counter() + timing["warmup_s"]
        while time.perf_counter() < t_end:
            reset_call()
        plain.clear(), plain_cpu.clear(), refill.clear()
        windows, cpu_windows = [], []
        for _ in range(timing["windows"]):
            start, t0 = len(plain), time.perf_counter()
            while time.perf_counter() - t0 < timing["window_s"] or len(plain) == start:
                reset_call()
            windows.append(plain[start:])
            cpu_windows.append(plain_cpu[start:])
        s = sustained_samples(windows, cpu_windows)
        writer = term.writer.name
        # the root writes alone (no pool), same envs and poses
        names = term.source.object_names
        world = torch.stack([env.scene[n].data.root_link_pose_w.torch.clone() for n in names], dim=1)
        w = sustained(lambda: term.writer.write(ids, world), **timing)
        env.close()
    ref = statistics.median(refill) * 1e3 if refill else 0.0
    med = s.median * 1e3
    per = b.placer.layouts_per_env if b.placer is not None else 1
    print(f"bench reset_ms_1024={med:.3f} objects={len(b.pose_source.object_names)} writer={writer} "
          f"writes_only_ms={w.median * 1e3:.3f} load={os.getloadavg()[0]:.2f} "
          f"refill_reset_ms={ref:.1f} amortised_ms={(med * (per - 1) + ref) / per:.3f} layouts_per_env={per} "
          f"source={'pooled' if solve else 'fixed'} envs={num_envs} device={device} "
          f"cpu_reset_ms={s.cpu_median * 1e3:.3f} cpu_writes_only_ms={w.cpu_median * 1e3:.3f} {s.keys()} "
          f"writes_spread_pct={w.spread_pct:.1f}", flush=True)


def bench_steps(device, timing, num_envs=64, episode_length_s=1.0, rounds=3):
    """env-steps/s with placement at every reset over the same env with fixed poses.

    One env (dense example, resets at its episode rate: ``episode_length_s`` / (sim_dt * decimation) env
    steps); its reset term alternates, block by block, between the pooled placer (a fresh layout per reset,
    refills during resets) and a fixed-pose source holding each env's creation layout (same objects, same
    physics, same writer). Blocks alternate so machine-load drift hits both alike; each block runs whole pool
    cycles (``min_unique_layouts_per_env`` episodes, so one refill per cycle) for at least ``window_s``; one
    block per variant first is discarded (warm-up). The figure is the median over rounds of the round's ratio."""
    from isaaclab.app import launch_simulation

    from isaaclab_arena.environments.reset_events import FixedPoseSource

    b, cfg = _build(_dense(), num_envs, True, episode_length_s=episode_length_s, device=device)
    b.placer.diagnostics.verbose = False
    steps_per_episode = round(episode_length_s / (cfg.sim.dt * cfg.decimation))
    with launch_simulation(cfg, {"headless": True, "device": device}):
        env = b.make(cfg)
        env.reset()
        term, _ = _reset_term(env)
        pooled = term.source
        names = pooled.object_names
        index = torch.tensor([b.placer.object_names.index(n) for n in names])
        fixed = FixedPoseSource(names, b.placer.creation_poses[:, index])
        act = torch.zeros(num_envs, 0, device=env.device)

        # a block is whole pool cycles (layouts_per_env episodes: one refill each), at least min_s seconds
        cycle = steps_per_episode * b.placer.layouts_per_env

        def block(source, min_s):
            term.source = source
            steps, t0, c0 = 0, time.perf_counter(), time.process_time()
            while steps == 0 or time.perf_counter() - t0 < min_s:
                for _ in range(cycle):
                    env.step(act)
                steps += cycle
            n = steps * num_envs
            return n / (time.perf_counter() - t0), n / (time.process_time() - c0), steps

        block(fixed, timing["warmup_s"])  # warm-up, discarded
        block(pooled, timing["warmup_s"])
        fills0 = b.placer.num_fills
        rates = {"placed": [], "fixed": []}
        cpu_rates = {"placed": [], "fixed": []}
        total = 0
        for _ in range(rounds):
            for kind, source in (("fixed", fixed), ("placed", pooled)):
                rate, cpu_rate, steps = block(source, timing["window_s"])
                rates[kind].append(rate)
                cpu_rates[kind].append(cpu_rate)
                total += steps
        term.source = pooled
        refills = b.placer.num_fills - fills0
        env.close()
    ratios = [p / f for p, f in zip(rates["placed"], rates["fixed"])]
    cpu_ratio = statistics.median([p / f for p, f in zip(cpu_rates["placed"], cpu_rates["fixed"])])
    med = statistics.median(ratios)
    spread = 100.0 * (max(ratios) - min(ratios)) / med
    print(f"bench steps_ratio={med:.3f} placed_env_steps_s={statistics.median(rates['placed']):.0f} "
          f"fixed_env_steps_s={statistics.median(rates['fixed']):.0f} envs={num_envs} "
          f"steps_per_episode={steps_per_episode} steps_timed={total} refills={refills} device={device} "
          f"cpu_steps_ratio={cpu_ratio:.3f} spread_pct={spread:.1f} windows={rounds}", flush=True)


def _solver_available() -> bool:
    try:
        import isaaclab_arena.relations.pooled_object_placer  # noqa: F401
    except ImportError:
        return False
    return True


def main() -> None:
    p = argparse.ArgumentParser(allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", default="pool,pool16,reset,steps")
    p.add_argument("--device", default="cpu")
    p.add_argument("--windows", type=int, default=3, help="timed windows per figure (steps: rounds)")
    p.add_argument("--window_s", type=float, default=1.0, help="minimum seconds per window (steps: per block)")
    p.add_argument("--warmup_s", type=float, default=0.5, help="discarded seconds first")
    args = p.parse_args()
    which = set(args.only.split(","))
    unknown = sorted(which - {"pool", "pool16", "reset", "steps"})
    if unknown:
        p.error(f"--only: unknown {unknown}; accepted: pool, pool16, reset, steps")
    timing = {"windows": args.windows, "window_s": args.window_s, "warmup_s": args.warmup_s}
    print(code_line(), flush=True)
    solver = _solver_available()
    if not solver:
        print("bench solver=unavailable reason=isaaclab_arena.relations.pooled_object_placer_missing", flush=True)
    if "pool" in which and solver:
        bench_pool(_dense(), 64, 5, "pool_fill_s", args.device, timing)
    if "pool16" in which and solver:
        bench_pool(_sixteen(), 256, 5, "pool_fill_16obj_256x5_s", args.device, timing)
    if "reset" in which:
        bench_reset(args.device, timing)
    if "steps" in which and solver:
        bench_steps(args.device, timing, rounds=args.windows)


if __name__ == "__main__":
    sys.exit(main())

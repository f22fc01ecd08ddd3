"""Benchmarks of the robot: batched IK reachability and a robot env's stepping rate. Prints ``bench ...`` lines.

    scripts/arena_python.sh scripts/bench_robot.py [--only ik,env] [--device cpu] [--num_envs 64]
    scripts/arena_python.sh scripts/bench_robot.py --only success --embodiment kuka_iiwa [--num_episodes 64]

* ``ik_checks_per_s``: candidates checked per second by ``IKReachabilityChecker.check`` for batches of 256
  and 1024 candidates, one ``RequiresReachability`` object each: a Franka on a 0.75 m stand beside a
  1.2 x 0.8 m table (base x = -0.8 +- 0.1 m, yaw +- 0.3 rad), the object anywhere on the table top. Warm-up
  calls (kernel compilation, solver allocation) are discarded; the figure is the median of windows of at
  least 1 s of repeated calls. ``reachable`` is the fraction of candidates found reachable.
* ``robot_pool_fill`` (``--only fill``): the robot scene's pool fill, ``robot/<arm>_pick_and_place.yaml`` loaded
  as a user would, 16 envs x its layouts per env, ``ik_reachable`` included: ``fill_s`` the median of 7 refills
  of every env after the first fill, ``first_fill_s`` the first (compile and the kernels' first loads),
  ``checker_build_s`` the first ``IKReachabilityChecker`` of the process (its seed library read from disk, or
  solved when absent).
* ``robot_env_steps_per_s``: env-steps/s of a kit-less OV PhysX env (CPU) with the Franka, the table and a
  mug, zero actions (the arm holds its home pose), after 20 warm-up steps.
* ``pick_and_place_env_steps_per_s`` (``--only pick``): env-steps/s of the registered
  ``franka_table_pick_and_place`` env (robot placed by relations, ``ik_rel`` actions, task terms) driven by the
  scripted pick-and-place policy, resets included, after 20 warm-up steps: the median of 3 windows of 100 steps.
* ``success`` (``--only success``): the scripted pick-and-place policy through the evaluation runner on the same
  registered env with the robot ``--embodiment`` (default ``franka_panda``; ``kuka_iiwa`` for the second arm),
  ``--num_episodes`` episodes (default 64, one layout each, placement seed 7), success rates on clean layouts and
  on best-loss fallback layouts apart (``placement_fallback``, as the runner reports them); one line
  ``bench success embodiment=... episodes=... success_clean=... success_fallback=...`` (``none`` when a kind
  has no episode) with the counts, 95 % Wilson intervals and the wall time.

* ``agreement`` (``--only agreement``): reachability verdicts of ``IKReachabilityChecker`` against the independent
  reference of the tests (Pinocchio + projected DLS in float64, ``tests/reachability_reference.py``) on 1,000+
  top-down grasps (``tests/reachability_agreement_cases.py``): 500 random ones around 50 turned and 50
  relation-placed bases (the robot of ``robot/<arm>_pick_and_place.yaml`` placed by its relations) and 500
  bisected near the reference's reach boundary. One line ``bench agreement embodiment=... targets=...
  disagreements_refused=... disagreements_reached=... reference_missed=... outside_2mm=...``: both directions,
  the reference's misses (the project's configuration confirmed by Pinocchio's FK) apart, and the disagreements
  not within 2 mm of the boundary. ``--agreement_seed`` draws another sample.

``--embodiment`` chooses the robot of the ``ik``, ``fill``, ``env``, ``pick``, ``success`` and ``agreement`` benchmarks.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch


def _candidates(batch: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    u = lambda *shape: torch.rand(*shape, generator=g)  # noqa: E731
    yaw = (u(batch) * 2 - 1) * 0.3
    base = torch.zeros(batch, 7)
    base[:, 0] = -0.8 + (u(batch) * 2 - 1) * 0.1
    base[:, 1] = (u(batch) * 2 - 1) * 0.1
    base[:, 2] = 0.75
    base[:, 5], base[:, 6] = torch.sin(yaw / 2), torch.cos(yaw / 2)
    obj = torch.stack([(u(batch) * 2 - 1) * 0.6, (u(batch) * 2 - 1) * 0.4, torch.full((batch,), 0.80)], -1)
    return base, obj[:, None, :]


def _sustained(fn, min_window_s: float = 1.0, windows: int = 3) -> float:
    """Median seconds per call over ``windows`` windows of at least ``min_window_s`` each."""
    per_call = []
    for _ in range(windows):
        n, t0 = 0, time.perf_counter()
        while True:
            fn()
            n += 1
            if time.perf_counter() - t0 >= min_window_s:
                break
        per_call.append((time.perf_counter() - t0) / n)
    return statistics.median(per_call)


def bench_ik(device: str, embodiment: str = "franka_panda") -> None:
    from isaaclab_arena.embodiments import make_embodiment
    from isaaclab_arena.reachability import IKReachabilityChecker

    t = time.perf_counter()
    checker = IKReachabilityChecker(make_embodiment(embodiment).reachability_robot, device=device)
    setup = time.perf_counter() - t
    for batch in (256, 1024):
        base, obj = _candidates(batch)
        t = time.perf_counter()
        result = checker.check(base, obj)  # warm-up: compile, allocate the solver buckets
        first = time.perf_counter() - t
        checker.check(base, obj)
        sec = _sustained(lambda: checker.check(base, obj))
        print(f"bench ik embodiment={embodiment} batch={batch} objects_per_candidate=1 device={device} ik_checks_per_s={batch / sec:.0f} "
              f"ms_per_batch={sec * 1e3:.1f} reachable={result.reachable.float().mean().item():.3f} "
              f"first_call_s={first:.2f} setup_s={setup:.2f} seeds={checker.n_seeds} iterations={checker.iterations}",
              flush=True)


def bench_env(num_envs: int, steps: int = 200, embodiment: str = "franka_panda") -> None:
    from isaaclab.app import launch_simulation

    from isaaclab_arena.embodiments import make_embodiment
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.environments.isaaclab_arena_environment import IsaacLabArenaEnvironment
    from isaaclab_arena.utils.pose import Pose
    from isaaclab_arena_environments.assets import library

    robot = make_embodiment(embodiment, "robot", {"initial_pose": Pose((-0.8, 0.0, 0.75))})
    mug = library.mug("mug", initial_pose=Pose((-0.3, 0.1, 0.80)))
    arena_env = IsaacLabArenaEnvironment("bench_robot", [library.table_background("table_background"), mug],
                                         embodiment=robot)
    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=num_envs, env_spacing=3.0, gym_id="bench_robot"))
    env_cfg = builder.compose_manager_cfg()
    with launch_simulation(env_cfg, {"headless": True, "device": "cpu"}):
        env = builder.make_registered(env_cfg)
        env.reset()
        act = torch.zeros(num_envs, env.unwrapped.action_manager.total_action_dim)
        for _ in range(20):
            env.step(act)
        t = time.perf_counter()
        for _ in range(steps):
            env.step(act)
        dt = time.perf_counter() - t
        robot_art = env.unwrapped.scene["robot"]
        drift = (robot_art.data.joint_pos.torch - robot_art.data.default_joint_pos.torch).abs().max().item()
        print(f"bench robot_env embodiment={embodiment} num_envs={num_envs} physics={builder.physics} "
              f"robot_env_steps_per_s="
              f"{steps * num_envs / dt:.0f} steps={steps} joint_drift_rad={drift:.1e}", flush=True)
        env.close()


def _pick_and_place_builder(embodiment: str, num_envs: int, gym_id: str, output_dir: str | None = None):
    """``ArenaEnvBuilder`` of the registered pick-and-place env with robot ``embodiment`` (placement seed 7)."""
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena_environments.registered import get_registered_environment

    add_args, build = get_registered_environment("franka_table_pick_and_place")
    parser = argparse.ArgumentParser(allow_abbrev=False)
    add_args(parser)
    return ArenaEnvBuilder(build(parser.parse_args(["--embodiment", embodiment])),
                           ArenaEnvBuilderCfg(num_envs=num_envs, placement_seed=7, gym_id=gym_id,
                                              output_dir=output_dir))


def bench_pick_and_place(num_envs: int, embodiment: str = "franka_panda") -> None:
    from isaaclab.app import launch_simulation

    from isaaclab_arena.evaluation.policy import make_policy

    builder = _pick_and_place_builder(embodiment, num_envs, "bench_pick_and_place")
    env_cfg = builder.compose_manager_cfg()
    with launch_simulation(env_cfg, {"headless": True, "device": "cpu"}):
        env = builder.make_registered(env_cfg)
        obs, _ = env.reset()
        policy = make_policy("scripted_pick_and_place", env)
        reset = policy.reset

        def steps(n):
            nonlocal obs
            for _ in range(n):
                obs, _, terminated, truncated, _ = env.step(policy(obs))
                reset((terminated | truncated).nonzero().flatten())

        steps(20)
        windows = []
        for _ in range(3):
            t = time.perf_counter()
            steps(100)
            windows.append(100 * num_envs / (time.perf_counter() - t))
        print(f"bench pick_and_place_env embodiment={embodiment} num_envs={num_envs} physics={builder.physics} "
              f"pick_and_place_env_steps_per_s={statistics.median(windows):.0f} "
              f"spread={min(windows):.0f}-{max(windows):.0f}", flush=True)
        env.close()


def _rate(block: dict) -> str:
    return "none" if not block["episodes"] else f"{block['success_rate']:.3f}"


def bench_success(embodiment: str, num_envs: int, num_episodes: int = 64) -> None:
    """Scripted pick-and-place success of ``embodiment`` over ``num_episodes`` episodes, clean and fallback
    layouts apart (the evaluation runner's records: ``fallback`` marks a best-loss fallback layout)."""
    import tempfile

    from isaaclab_arena.evaluation.episodes import EvaluationSettings, evaluate

    t = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench_success_") as out:
        builder = _pick_and_place_builder(embodiment, num_envs, "bench_success", out)
        summary = evaluate(builder, EvaluationSettings(policy_type="scripted_pick_and_place", num_episodes=num_episodes,
                                                       progress=False, report=False), log=lambda line: None)
    rates = summary["rates"]
    clean, fallback = rates["clean"], rates["fallback"]
    lo, hi = clean["wilson_95"]
    print(f"bench success embodiment={embodiment} episodes={summary['num_episodes']} success_clean={_rate(clean)} "
          f"success_fallback={_rate(fallback)} clean={clean['successes']}/{clean['episodes']} "
          f"fallback={fallback['successes']}/{fallback['episodes']} clean_wilson95={lo:.3f}-{hi:.3f} "
          f"num_envs={num_envs} physics={builder.physics} placement_seed={summary['placement_seed']} "
          f"terminations={','.join(f'{k}:{v}' for k, v in summary['terminations'].items())} "
          f"wall_s={time.perf_counter() - t:.0f}", flush=True)


#: The shipped spec that places each arm by relations (the agreement's relation-placed bases).
PICK_AND_PLACE_SPECS = {"franka_panda": "franka_pick_and_place.yaml", "kuka_iiwa": "kuka_iiwa_pick_and_place.yaml"}


def bench_agreement(embodiment: str, seed: int) -> None:
    """Prints the agreement of the project's reachability verdicts with the tests' independent reference."""
    import os
    import sys

    from isaaclab_arena import ARENA_ROOT
    from isaaclab_arena.embodiments import make_embodiment
    from isaaclab_arena.reachability import IKReachabilityChecker

    sys.path.insert(0, os.path.join(ARENA_ROOT, "tests"))  # the reference lives with the tests, apart from the code
    from reachability_agreement_cases import agreement_problem

    spec = PICK_AND_PLACE_SPECS.get(embodiment)
    t = time.perf_counter()
    problem = agreement_problem(embodiment, spec and os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "robot",
                                                                   spec), rng_seed=seed)
    build_s = time.perf_counter() - t
    report = problem.compare(IKReachabilityChecker(make_embodiment(embodiment).reachability_robot))
    print(f"bench agreement embodiment={embodiment} seed={seed} {report.line()} reference_s={build_s:.0f}", flush=True)
    for case in report.cases:
        print(f"  {case}", flush=True)


def bench_fill(embodiment: str, num_envs: int = 16, refills: int = 7) -> None:
    """Prints the robot scene's pool fill: the shipped pick-and-place spec of the arm, ``num_envs`` envs x its
    layouts per env, ``ik_reachable`` included (the placer takes the robot from the spec's assets)."""
    import os

    from isaaclab_arena import ARENA_ROOT
    from isaaclab_arena.embodiments import make_embodiment
    from isaaclab_arena.env_spec import ArenaEnvGraphSpec
    from isaaclab_arena.reachability import IKReachabilityChecker
    from isaaclab_arena.relations.pooled_object_placer import PooledObjectPlacer

    t = time.perf_counter()
    IKReachabilityChecker(make_embodiment(embodiment).reachability_robot)
    build = time.perf_counter() - t
    spec = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "robot", PICK_AND_PLACE_SPECS[embodiment])
    arena_env = ArenaEnvGraphSpec.from_yaml(spec).to_arena_env()
    pool = PooledObjectPlacer(arena_env.get_placement_assets(), arena_env.placer_params, num_envs=num_envs)
    pool.diagnostics.verbose = False
    t = time.perf_counter()
    pool.initialize()
    first = time.perf_counter() - t
    assert "ik_reachable" in pool.check_names, "the spec's robot did not reach the pool"
    every = torch.arange(num_envs)
    times = []
    for _ in range(refills):
        t = time.perf_counter()
        pool.fill(every, "reset_refill")
        times.append(time.perf_counter() - t)
    print(f"bench robot_pool_fill embodiment={embodiment} num_envs={num_envs} layouts_per_env={pool.layouts_per_env} "
          f"batch={num_envs * pool.layouts_per_env} fill_s={statistics.median(times):.3f} first_fill_s={first:.2f} "
          f"checker_build_s={build:.2f} fallback={int(pool.slot_fallback.sum())} refills={refills}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--only", default="ik,env", help="comma list of: ik, fill, env, pick, success, agreement")
    parser.add_argument("--agreement_seed", type=int, default=7, help="sample of the agreement benchmark")
    parser.add_argument("--device", default="cpu", help="device of the IK check (cpu or cuda:0)")
    parser.add_argument("--num_envs", type=int, default=64, help="envs of the robot env benchmarks")
    parser.add_argument("--embodiment", default="franka_panda",
                        help="robot of the env, pick and success benchmarks, by embodiment registry name")
    parser.add_argument("--num_episodes", type=int, default=64, help="episodes of the success benchmark (>= 64)")
    args = parser.parse_args()
    only = set(args.only.split(","))
    if "ik" in only:
        bench_ik(args.device, args.embodiment)
    if "fill" in only:
        bench_fill(args.embodiment)
    if "env" in only:
        bench_env(args.num_envs, embodiment=args.embodiment)
    if "pick" in only:
        bench_pick_and_place(args.num_envs, args.embodiment)
    if "success" in only:
        bench_success(args.embodiment, args.num_envs, args.num_episodes)
    if "agreement" in only:
        bench_agreement(args.embodiment, args.agreement_seed)


if __name__ == "__main__":
    main()

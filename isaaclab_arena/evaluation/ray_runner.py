"""``eval_runner.py --experiment file.yaml --ray``: an experiment's runs (or shards of large runs) as Ray tasks.

Ray runs on this machine with no setup (``ray.init()`` starts a local instance that ends with the command) or
joins a cluster with ``--ray_address host:port`` (a head started with ``ray start --head --port 6379``; more
machines join with ``ray start --address host:6379``; every machine needs this checkout at the same path and
the environment built by ``scripts/arena_python.sh``). Each task builds its own env in its worker process, runs
its episodes and returns their records; a worker that dies is retried by Ray (``max_retries``), and the driver
collates the records by (run, episode), so nothing is duplicated or lost. Episode ``k`` runs layout ``k``
whichever task runs it, so the collated records are those of the sequential run (exactly so with
``env_spacing: 0``, see ``episodes.py``).
"""

from __future__ import annotations

import os
import socket
import sys
import time

#: Ray tasks retried after their worker died.
MAX_RETRIES = 3


def check_ray_address(address: str | None, timeout_s: float = 3.0) -> None:
    """Refuses (``ValueError``, one line) a ``host:port`` Ray address that does not accept a connection."""
    if address in (None, "", "auto", "local"):
        return
    target = address.split("://", 1)[-1]
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"--ray_address {address!r}: give host:port of a Ray head (e.g. 127.0.0.1:6379)")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s):
            pass
    except OSError as err:
        raise ValueError(f"--ray_address {address}: no Ray head answers there ({err.strerror or err}); start one with "
                         f"'ray start --head --port {port}', or leave --ray_address out to run Ray on this machine") \
            from None


def shards_of(num_episodes: int, shard_episodes: int | None) -> list[list[int]]:
    """Contiguous shares of a run's episodes, ``shard_episodes`` each (None: the whole run in one task)."""
    size = num_episodes if not shard_episodes else max(1, int(shard_episodes))
    return [list(range(a, min(a + size, num_episodes))) for a in range(0, num_episodes, size)]


def evaluate_shard(run, episodes: list[int], output_dir: str, cwd: str, verbose: bool = False) -> dict:
    """A Ray task's work: the run's episodes ``episodes`` in an env of its own; returns the shard's summary and
    records (nothing is written but the placement diagnostics in ``output_dir``)."""
    from isaaclab_arena.utils.runner_gc import collect_rarely

    collect_rarely()  # a Ray worker runs this task as a runner would (utils/runner_gc.py), before the heavy imports
    os.chdir(cwd)
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    from isaaclab_arena.evaluation.episodes import EvaluationSettings, evaluate
    from isaaclab_arena.evaluation.experiment import make_builder

    builder = make_builder(run, output_dir, where=f"run {run.name}")
    settings = EvaluationSettings(policy_type=run.policy_type, num_episodes=run.num_episodes,
                                  policy_settings=run.policy_settings, run=run.name, output_dir=None,
                                  placement_layouts=run.placement_layouts, factors=run.factors, episodes=episodes,
                                  progress=False, report=False, verbose=verbose, seed_flag=False)
    summary = evaluate(builder, settings, log=lambda line: None)
    records = summary.pop("records_list")
    return {"summary": summary, "records": records}


def run_on_ray(experiment, checked: list, address: str | None = None, shard_episodes: int | None = None,
               verbose: bool = False, command: list[str] | None = None) -> list[dict]:
    """Runs every checked ``(run, builder)`` as Ray tasks; returns one result per run (summary with
    ``records_list``), in the experiment's run order, after writing each run's files."""
    import ray

    from isaaclab_arena import ARENA_ROOT
    from isaaclab_arena.evaluation.episodes import resummarize, write_run_files

    check_ray_address(address)
    cwd = os.getcwd()
    path = os.pathsep.join(p for p in (ARENA_ROOT, cwd, os.environ.get("PYTHONPATH", "")) if p)
    ray.init(address=address or None, include_dashboard=False, log_to_driver=verbose, ignore_reinit_error=True,
             runtime_env={"env_vars": {"PYTHONPATH": path, "OMP_NUM_THREADS": "1"}},
             **({} if address else {"num_cpus": os.cpu_count() or 1}))
    try:
        task = ray.remote(num_cpus=1, max_retries=MAX_RETRIES)(evaluate_shard)
        pending = {}
        for i, (run, _) in enumerate(checked):
            shards = shards_of(run.num_episodes, shard_episodes)
            for k, eps in enumerate(shards):
                out = os.path.join(experiment.output_dir, run.name, f"shard{k}")
                pending[task.remote(run, eps, out, cwd, verbose)] = (i, k, len(shards))
        print(f"[ray] {len(pending)} tasks for {len(checked)} runs on {ray.cluster_resources().get('CPU', 0):g} CPUs "
              f"({'cluster ' + address if address else 'this machine'})", flush=True)
        parts: dict[int, list[dict]] = {}
        t0 = time.perf_counter()
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            i, k, n = pending.pop(done[0])
            parts.setdefault(i, []).append(ray.get(done[0]))
            print(f"[ray] run {checked[i][0].name}: shard {k + 1}/{n} done ({time.perf_counter() - t0:.0f} s)",
                  flush=True)
    finally:
        ray.shutdown()
    results = []
    for i, (run, _) in enumerate(checked):
        records = sorted((r for p in parts[i] for r in p["records"]), key=lambda r: r["episode"])
        base = min(parts[i], key=lambda p: p["records"][0]["episode"] if p["records"] else 0)["summary"]
        env_steps = sum(p["summary"]["env_steps"] for p in parts[i])
        wall = max(p["summary"]["wall_s"] for p in parts[i])
        summary = resummarize(base, records, {"env_steps": env_steps, "wall_s": wall, "ray_tasks": len(parts[i]),
                                              "env_steps_per_s": round(env_steps / wall, 1) if wall else None})
        paths = write_run_files(os.path.join(experiment.output_dir, run.name), summary, records)
        summary.update(records=paths["records"], report=paths["report"], summary_path=paths["summary"],
                       records_list=records)
        results.append(summary)
    return results


__all__ = ["MAX_RETRIES", "check_ray_address", "evaluate_shard", "run_on_ray", "shards_of"]

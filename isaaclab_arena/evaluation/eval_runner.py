"""Runs an experiment file: its runs in sequence, then the collated records, summary and report.

    scripts/arena_python.sh isaaclab_arena/evaluation/eval_runner.py --experiment my_experiment.yaml

The file format is in ``evaluation/experiment.py`` and docs/EVALUATION.md. Every run is checked first (the
environment, the policy class, the factors, the files it names); a bad one is refused in one line, exit 2,
before anything is simulated. Each run writes ``<output_dir>/<run>/episodes.jsonl``, ``eval_summary.json`` and
``report.html``; the experiment writes ``<output_dir>/episodes.jsonl`` (every run's records, in run order),
``experiment_summary.json`` (each run's rates and settings) and ``report.html`` (the runs side by side).
"""

from __future__ import annotations

if __name__ == "__main__":  # Ctrl-C during start-up (imports take seconds): one line, no traceback
    import _signal  # loaded with the interpreter (importing ``signal`` runs Python code a Ctrl-C can land in)

    _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGINT})  # held until quiet_interrupts() has its handler
    from isaaclab_arena.utils.interrupts import quiet_interrupts
    from isaaclab_arena.utils.runner_gc import collect_rarely, skip_collection_at_exit

    quiet_interrupts()
    collect_rarely()  # full garbage collections 100x rarer: 0.5-1.5 s less per run (utils/runner_gc.py)
    skip_collection_at_exit()  # and none at exit: about 1 s less

import argparse
import os
import sys


def make_parser() -> argparse.ArgumentParser:
    from isaaclab_arena.utils.arena_argparse import ArenaArgumentParser

    p = ArenaArgumentParser(prog="eval_runner.py", description=__doc__.split("\n\n")[0],
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--experiment", required=True, help="experiment YAML (from the working directory)")
    p.add_argument("--output_dir", default=None,
                   help="where the runs' files go (default: the file's output_dir, else ./outputs/experiments/<name>)")
    p.add_argument("--runs", default=None, metavar="NAMES", help="comma-separated run names to run (default: all)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True,
                   help="progress bar with an ETA on stderr (default on)")
    p.add_argument("--ray", action="store_true",
                   help="run the runs (or shards of them) as Ray tasks: on this machine, or a cluster (--ray_address)")
    p.add_argument("--ray_address", default=None, metavar="HOST:PORT",
                   help="join the Ray cluster whose head listens there (ray start --head --port 6379); default: "
                        "start Ray on this machine")
    p.add_argument("--shard_episodes", type=int, default=None, metavar="N",
                   help="with --ray: split each run into tasks of N episodes (default: one task per run)")
    p.add_argument("--verbose", action="store_true", help="Isaac Lab's manager tables and start-up messages")
    return p


def check_experiment(experiment, names: list[str] | None = None) -> list:
    """``[(run, builder)]`` of the runs to run, after checking each (environment, policy class, factors)."""
    from isaaclab_arena.evaluation.experiment import ExperimentError, make_builder
    from isaaclab_arena.evaluation.factors import check_factors, scene_roles
    from isaaclab_arena.evaluation.policy import PolicyError, load_policy_class

    runs = experiment.runs
    if names is not None:
        known = [r.name for r in runs]
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ExperimentError(f"--runs: no run named '{unknown[0]}' in {experiment.path}; runs: {', '.join(known)}")
        runs = [r for r in runs if r.name in names]
    checked = []
    for i, run in enumerate(runs):
        where = f"{experiment.path}: runs[{experiment.runs.index(run)}] ({run.name})"
        try:
            load_policy_class(run.policy_type)
        except PolicyError as err:
            raise ExperimentError(f"{where}.policy.type: {err}") from None
        builder = make_builder(run, os.path.join(experiment.output_dir, run.name), where)
        try:
            check_factors(run.factors, scene_roles(builder), where=f"{where}.factors")
        except ValueError as err:
            raise ExperimentError(str(err)) from None
        checked.append((run, builder))
    return checked


def run_experiment(experiment, names: list[str] | None = None, progress: bool = True, verbose: bool = False,
                   command: list[str] | None = None, ray: bool = False, ray_address: str | None = None,
                   shard_episodes: int | None = None) -> dict:
    """Runs the experiment's runs in sequence (or as Ray tasks) and writes the collated files; returns the
    experiment summary."""
    from isaaclab_arena.evaluation.episodes import EvaluationSettings, evaluate

    if ray:
        from isaaclab_arena.evaluation.ray_runner import check_ray_address

        check_ray_address(ray_address)  # before any run is checked or built
    checked = check_experiment(experiment, names)
    if ray:
        from isaaclab_arena.evaluation.ray_runner import run_on_ray

        return collate(experiment, run_on_ray(experiment, checked, ray_address, shard_episodes, verbose, command))
    results = []
    for run, builder in checked:
        print(f"[experiment] {experiment.name}: run {run.name} ({len(results) + 1}/{len(checked)})", flush=True)
        settings = EvaluationSettings(
            policy_type=run.policy_type, num_episodes=run.num_episodes, policy_settings=run.policy_settings,
            run=run.name, output_dir=os.path.join(experiment.output_dir, run.name),
            placement_layouts=run.placement_layouts, factors=run.factors, progress=progress, verbose=verbose,
            command=command, seed_flag=False)
        result = evaluate(builder, settings)
        if result["placement_seed_drawn"]:
            print(f"[experiment] run {run.name} drew placement seed {result['placement_seed']}; set placement_seed: "
                  f"{result['placement_seed']} in the run to repeat its layouts", flush=True)
        results.append(result)
    return collate(experiment, results)


def collate(experiment, results: list[dict]) -> dict:
    """Writes ``episodes.jsonl``, ``experiment_summary.json`` and ``report.html`` of all runs."""
    from isaaclab_arena.evaluation.episode_records import records_text, write_json_atomic, write_text_atomic
    from isaaclab_arena.evaluation.statistics import format_rate

    out = experiment.output_dir
    os.makedirs(out, exist_ok=True)
    records = [r for res in results for r in res["records_list"]]
    records_path = write_text_atomic(os.path.join(out, "episodes.jsonl"), records_text(records))
    runs = [{k: v for k, v in res.items() if k != "records_list"} for res in results]
    report_path = os.path.join(out, "report.html")
    from isaaclab_arena.evaluation.report import write_report

    write_report(report_path, [{"summary": s, "records": res["records_list"]} for s, res in zip(runs, results)],
                 title=f"Experiment {experiment.name}")
    summary = {"experiment": experiment.name, "file": experiment.path, "output_dir": out, "records": records_path,
               "report": report_path, "runs": runs,
               "comparison": [{"run": s["run"], "env": s["env"], "policy": s["policy"], "episodes": s["num_episodes"],
                               "success_rate": s["success_rate"], "wilson_95": s["rates"]["all"]["wilson_95"]}
                              for s in runs]}
    path = write_json_atomic(os.path.join(out, "experiment_summary.json"), summary)
    for s in runs:
        print(f"[experiment] {s['run']}: success rate {format_rate(s['rates']['all'])} ({s['policy']} on {s['env']})",
              flush=True)
    print(f"[experiment] records: {records_path}", flush=True)
    print(f"[experiment] summary: {path}; report: {report_path}", flush=True)
    summary["summary_path"] = path
    return summary


def main(argv: list[str] | None = None) -> dict:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = make_parser().parse_args(argv)
    from isaaclab_arena.environments.quiet_output import held_output, quiet_warp_init

    quiet_warp_init(args.verbose)
    with held_output(args.verbose):  # Isaac Lab's import-time messages
        from isaaclab_arena.evaluation.experiment import load_experiment

    experiment = load_experiment(args.experiment, args.output_dir)
    names = None if args.runs is None else [n.strip() for n in args.runs.split(",") if n.strip()]
    if (args.ray_address or args.shard_episodes is not None) and not args.ray:
        raise ValueError("--ray_address and --shard_episodes go with --ray")
    if args.shard_episodes is not None and args.shard_episodes <= 0:
        raise ValueError(f"--shard_episodes must be a positive integer, got {args.shard_episodes}")
    return run_experiment(experiment, names, progress=args.progress, verbose=args.verbose,
                          command=[os.path.abspath(__file__), *argv], ray=args.ray, ray_address=args.ray_address,
                          shard_episodes=args.shard_episodes)


if __name__ == "__main__":
    # one OpenMP / intra-op thread unless the user sets OMP_NUM_THREADS: batched CPU ops then give the same bits for
    # any env count (evaluation/episodes.py); set before torch and the simulators load
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from isaaclab_arena.environments.cli import run_main_reporting_user_errors

    run_main_reporting_user_errors(main, sys.argv[1:])

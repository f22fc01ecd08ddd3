"""Records settled layouts of several specs: one recording per spec, in sequence or as Ray tasks.

    scripts/arena_python.sh isaaclab_arena/scripts/record_many.py --specs scenes/a.yaml scenes/b.yaml \\
        --output_dir outputs/recordings --ray -- num_envs=4 min_layouts=32 settle.num_steps=60

Every spec gets ``<output_dir>/<spec file stem>.jsonl``, recorded by ``record_placement_layouts.py`` with the Hydra
overrides after ``--`` (shared by every recording; ``env_spec`` and ``output`` are set per spec). ``--ray`` runs
the recordings as Ray tasks on this machine, or on a cluster with ``--ray_address host:port`` (see
docs/EVALUATION.md "Scale out"); a worker that dies is retried by Ray. A recording writes its file only when it
ends (the recorder's atomic writer), so a retried task starts afresh and a finished one is never recorded twice:
a spec whose output already exists is skipped (run the same command again to finish what a failed job left).
Exit status: 0 when every spec has its file, 1 when one recorded nothing, 2 for refused input (one line).
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
import time


def make_parser() -> argparse.ArgumentParser:
    from isaaclab_arena.utils.arena_argparse import ArenaArgumentParser

    p = ArenaArgumentParser(prog="record_many.py", description=__doc__.split("\n\n")[0],
                            epilog="Hydra overrides of every recording follow '--' (e.g. -- num_envs=4 min_layouts=16)",
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--specs", nargs="+", required=True, help="environment YAML specs (from the working directory)")
    p.add_argument("--output_dir", default=os.path.join("outputs", "recordings"),
                   help="one <spec stem>.jsonl per spec goes here (default ./outputs/recordings)")
    p.add_argument("--ray", action="store_true", help="run the recordings as Ray tasks")
    p.add_argument("--ray_address", default=None, metavar="HOST:PORT", help="join this Ray cluster (with --ray)")
    p.add_argument("--device", default="cpu", help="simulation device: cpu or cuda:0")
    p.add_argument("--verbose", action="store_true", help="each recording's full console output")
    return p


def plan(specs: list[str], output_dir: str) -> list[tuple[str, str]]:
    """``[(spec path, output path)]``, absolute; refuses a missing spec, two specs with one stem, and overrides
    that would fight the per-spec keys."""
    from isaaclab_arena.utils.shipped_paths import shipped_path, where_paths_are_looked_for

    out = []
    for spec in specs:
        path = os.path.abspath(shipped_path(spec))
        if not os.path.isfile(path):
            raise ValueError(f"--specs {spec}: no such file ({where_paths_are_looked_for()})")
        out.append((path, os.path.join(os.path.abspath(output_dir), os.path.splitext(os.path.basename(path))[0]
                                       + ".jsonl")))
    stems = [o for _, o in out]
    dup = sorted({s for s in stems if stems.count(s) > 1})
    if dup:
        raise ValueError(f"--specs: two specs would record to {dup[0]}; give specs with different file names")
    return out


def record_one(spec: str, output: str, overrides: list[str], device: str, cwd: str, verbose: bool = False) -> dict:
    """One recording (in this process or a Ray worker): ``{"spec", "output", "status", "wall_s"}``; an existing
    output is kept and reported as ``"status": "kept"``."""
    import contextlib
    import io

    from isaaclab_arena.utils.runner_gc import collect_rarely

    collect_rarely()  # in a Ray worker as in the runner's own process (utils/runner_gc.py), before the heavy imports
    os.chdir(cwd)
    if os.path.exists(output):
        return {"spec": spec, "output": output, "status": "kept", "wall_s": 0.0}
    from isaaclab_arena.scripts.record_placement_layouts import main as record

    argv = [*overrides, f"env_spec={spec}", f"output={output}", "--device", device] + (["--verbose"] if verbose else [])
    t0 = time.perf_counter()
    held = io.StringIO()
    with contextlib.nullcontext() if verbose else contextlib.redirect_stdout(held):
        status = record(argv)
    return {"spec": spec, "output": output, "status": status, "wall_s": round(time.perf_counter() - t0, 1)}


def run(jobs: list[tuple[str, str]], overrides: list[str], device: str, ray: bool = False,
        ray_address: str | None = None, verbose: bool = False) -> list[dict]:
    cwd = os.getcwd()
    if not ray:
        return [record_one(spec, out, overrides, device, cwd, verbose) for spec, out in jobs]
    import ray as ray_lib

    from isaaclab_arena import ARENA_ROOT
    from isaaclab_arena.evaluation.ray_runner import MAX_RETRIES, check_ray_address

    check_ray_address(ray_address)
    path = os.pathsep.join(p for p in (ARENA_ROOT, cwd, os.environ.get("PYTHONPATH", "")) if p)
    ray_lib.init(address=ray_address or None, include_dashboard=False, log_to_driver=verbose, ignore_reinit_error=True,
                 runtime_env={"env_vars": {"PYTHONPATH": path, "OMP_NUM_THREADS": "1"}})
    try:
        task = ray_lib.remote(num_cpus=1, max_retries=MAX_RETRIES)(record_one)
        pending = {task.remote(spec, out, overrides, device, cwd, verbose): spec for spec, out in jobs}
        results = []
        while pending:
            done, _ = ray_lib.wait(list(pending), num_returns=1)
            pending.pop(done[0])
            results.append(ray_lib.get(done[0]))
            print(f"[record_many] {os.path.basename(results[-1]['spec'])}: {_word(results[-1])}", flush=True)
    finally:
        ray_lib.shutdown()
    order = {spec: i for i, (spec, _) in enumerate(jobs)}
    return sorted(results, key=lambda r: order[r["spec"]])


def _word(result: dict) -> str:
    status = result["status"]
    if status == "kept":
        return f"kept {result['output']} (already recorded)"
    return {0: f"recorded {result['output']} ({result['wall_s']} s)", 1: "no layout was accepted"}.get(
        status, f"refused (exit {status}; rerun it alone with record_placement_layouts.py to see why)")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    overrides: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, overrides = argv[:cut], argv[cut + 1:]
    parser = make_parser()
    args = parser.parse_args(argv)
    if args.ray_address and not args.ray:
        parser.error("--ray_address goes with --ray")
    taken = [o for o in overrides if o.split("=", 1)[0].lstrip("+") in ("env_spec", "output")]
    if taken:
        parser.error(f"{taken[0]}: record_many sets env_spec and output per spec (--specs, --output_dir)")
    jobs = plan(args.specs, args.output_dir)
    results = run(jobs, overrides, args.device, args.ray, args.ray_address, args.verbose)
    for r in results:
        if not args.ray:
            print(f"[record_many] {os.path.basename(r['spec'])}: {_word(r)}", flush=True)
    statuses = [r["status"] for r in results]
    if any(s not in (0, 1, "kept") for s in statuses):
        return 2
    return 1 if 1 in statuses else 0


if __name__ == "__main__":
    from isaaclab_arena.environments.cli import is_user_error

    try:
        sys.exit(main())
    except Exception as err:  # noqa: BLE001 - refused input is one line; anything else keeps its traceback
        if not is_user_error(err):
            raise
        print(f"error: {err}", file=sys.stderr, flush=True)
        sys.exit(2)

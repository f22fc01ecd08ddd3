"""What a runner's process costs beyond its work: wall clock, CPU seconds (every thread of the process), garbage-collection
seconds, peak memory, and which heavy optional packages it loaded.

    scripts/arena_python.sh scripts/bench_start_up.py [--runs 3] [--checkout PATH]

Runs each command below through ``scripts/arena_python.sh`` of this checkout (or of ``--checkout``, e.g. a ``git
worktree`` of another commit, to compare) from a temporary folder, ``--runs`` times, with a
probe that times every garbage collection (``gc.callbacks``) and, at exit, reads the process's CPU time
(``time.process_time``: all its threads, the main one and OV PhysX's, warp's and the placer's) and peak resident
memory (``VmHWM``) and which of trimesh, scipy, networkx, newton and matplotlib.pyplot were imported; prints one
line per command::

    bench start_up command=<name> wall_s=<median> wall_max_s=<max> cpu_s=<median> gc_s=<median> full_collections=<median>
        peak_rss_gb=<median> loaded=<modules, comma-separated or ->

``readme``: the README's scene (``mug_bowl_table.yaml``), 2 envs, 2 steps; ``franka_eval``: the scripted policy on
``franka_table_pick_and_place``, 2 envs, 2 episodes of 1 s (placement seed 7; the simulated arm imports newton,
through Isaac Lab's actuators). On a 2-core machine the CPU seconds say more than the wall clock: a thread that
burns CPU beside the main one costs no wall time there while the other core is idle, and half of it under load. The figures are for comparing commits on one machine (see
``docs/TESTING.md``, "What the suite's time is made of"): most of the suite's child processes are such starts.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMANDS = {
    "readme": ["isaaclab_arena/scripts/environment_runner.py", "--env_spec",
               "isaaclab_arena_environments/tabletop/mug_bowl_table.yaml", "--num_envs", "2", "--num_steps", "2",
               "--placement_seed", "1"],
    "franka_eval": ["isaaclab_arena/evaluation/policy_runner.py", "--policy_type", "scripted_pick_and_place",
                    "--num_envs", "2", "--num_episodes", "2", "--placement_seed", "7", "--no-report",
                    "--no-progress", "franka_table_pick_and_place", "--episode_length_s", "1"],
}
HEAVY = ("trimesh", "scipy", "networkx", "newton", "matplotlib.pyplot")
MARK = "bench-start-up-probe "

#: Run as ``python -c``: times the collections, runs the script as ``__main__``, reports at exit (registered
#: first, so it runs after every hook the runner registers).
PROBE = """
import atexit, gc, json, os, runpy, sys, time
t0, spent, full = time.perf_counter(), [0.0], [0]
def _gc(phase, info, _start=[0.0]):
    if phase == "start":
        _start[0] = time.perf_counter()
    else:
        spent[0] += time.perf_counter() - _start[0]
        full[0] += info.get("generation") == 2
gc.callbacks.append(_gc)
def _report():
    rss = next((int(ln.split()[1]) for ln in open("/proc/self/status") if ln.startswith("VmHWM:")), 0)
    print({mark!r} + json.dumps({{"gc_s": spent[0], "full": full[0], "rss_kb": rss, "cpu_s": time.process_time(),
                                  "loaded": [m for m in {heavy!r} if m in sys.modules]}}), file=sys.stderr, flush=True)
atexit.register(_report)
script = os.path.join({repo!r}, sys.argv[1])
sys.argv = [script] + sys.argv[2:]
runpy.run_path(script, run_name="__main__")
"""


def run_once(cwd: str, args: list[str], checkout: str = REPO) -> dict:
    code = PROBE.format(mark=MARK, heavy=HEAVY, repo=checkout)
    t0 = time.perf_counter()
    out = subprocess.run([os.path.join(checkout, "scripts", "arena_python.sh"), "-c", code, *args], cwd=cwd,
                         capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - t0
    probe = [ln for ln in out.stderr.splitlines() if ln.startswith(MARK)]
    if out.returncode != 0 or not probe:
        raise SystemExit(f"bench_start_up: {args[0]} exited {out.returncode}:\n{out.stderr[-2000:]}")
    return {"wall": wall, **json.loads(probe[-1][len(MARK):])}


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, REPO)
    from isaaclab_arena.utils.arena_argparse import ArenaArgumentParser

    p = ArenaArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--commands", nargs="+", default=list(COMMANDS), choices=list(COMMANDS))
    p.add_argument("--checkout", default=REPO, help="the checkout whose launcher and code run (default: this one)")
    args = p.parse_args(argv)
    checkout = os.path.abspath(args.checkout)
    with tempfile.TemporaryDirectory() as cwd:
        for name in args.commands:
            script, *rest = COMMANDS[name]
            runs = [run_once(cwd, [script, "--output_dir", f"out_{name}_{k}", *rest], checkout) for k in range(args.runs)]
            med = lambda key: statistics.median(r[key] for r in runs)  # noqa: E731
            loaded = sorted({m for r in runs for m in r["loaded"]}, key=HEAVY.index)
            print(f"bench start_up command={name} wall_s={med('wall'):.2f} wall_max_s={max(r['wall'] for r in runs):.2f} "
                  f"cpu_s={med('cpu_s'):.2f} gc_s={med('gc_s'):.2f} full_collections={med('full'):.0f} "
                  f"peak_rss_gb={med('rss_kb') / 2**20:.3f} loaded={','.join(loaded) or '-'} runs={args.runs}"
                  + ("" if checkout == REPO else f" checkout={checkout}"),
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

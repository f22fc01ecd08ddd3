"""How fast the user-facing commands answer ``--help`` (they import neither torch nor Isaac Lab for it).

    scripts/arena_python.sh scripts/bench_cli.py [--runs 5]

Runs each runner's ``--help`` through ``scripts/arena_python.sh`` from a temporary folder ``--runs`` times and
prints ``bench cli_help script=<script> median_s=<s> max_s=<s>`` (wall clock, process start included).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = ("isaaclab_arena/scripts/environment_runner.py", "isaaclab_arena/evaluation/policy_runner.py",
           "isaaclab_arena/scripts/record_placement_layouts.py")


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, REPO)
    from isaaclab_arena.utils.arena_argparse import ArenaArgumentParser

    p = ArenaArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args(argv)
    launcher = os.path.join(REPO, "scripts", "arena_python.sh")
    with tempfile.TemporaryDirectory() as cwd:
        for script in SCRIPTS:
            times = []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                out = subprocess.run([launcher, os.path.join(REPO, script), "--help"], cwd=cwd, capture_output=True,
                                     text=True, timeout=120)
                times.append(time.perf_counter() - t0)
                if out.returncode != 0:
                    print(f"bench cli_help script={script} error={out.stderr.strip().splitlines()[-1:]}")
                    return 1
            print(f"bench cli_help script={script} median_s={statistics.median(times):.2f} max_s={max(times):.2f}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

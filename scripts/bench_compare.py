"""Before/after benchmark of two checkouts in one run, interleaved so machine load hits both alike.

    scripts/arena_python.sh scripts/bench_compare.py --before /work/wt/before --after /work/wt/mine \\
        [--rounds 3] [--quick] [--scenes boxes3 mug_bowl] [--env] [--runs 5] [--window_s 1.0]

The benchmark scripts are the *after* checkout's (``scripts/bench_placement.py``, with ``--env`` also
``scripts/bench_env.py``), run in a subprocess with ``PYTHONPATH`` set to each checkout in turn, so the same
measuring code times both sides' placement code. For every round and every scene: one process per side, the
two sides back to back (A, B), the order swapped every round (B, A). Each side's figure is the median over
rounds of the script's own sustained median; the ratio is after / before.

Prints, per scene and batch (and per env figure with ``--env``)::

    compare scene=boxes3 batch=4096 figure=layouts_per_s before=... after=... ratio=... before_spread_pct=...
            after_spread_pct=... rounds=3

``*_spread_pct`` is (max - min) / median over the rounds. For rates (``*_per_s``) a ratio below 1 is slower;
for times (``*_s``, ``*_ms``) a ratio above 1 is slower. ``cpu_*`` figures count the benchmark process's CPU
seconds (steadier under other processes' load). The last lines, ``compare worst=...``, name the scene and
batch with the lowest ratio, wall and CPU. A side whose process imports ``isaaclab_arena`` from another folder
than the one given is refused (the ``# code=`` line of the benchmark names it).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

PLACEMENT_SCENES = ["boxes3", "boxes10", "mug_bowl", "crowded14", "all_relations", "clutter"]
#: Placement figures compared (rates: higher is faster).
PLACEMENT_FIGURES = ("layouts_per_s", "cpu_layouts_per_s", "validate_only_per_s", "cpu_validate_only_per_s")
#: bench_env.py figures compared (keys of its bench lines).
ENV_FIGURES = ("pool_fill_s", "cpu_pool_fill_s", "pool_fill_16obj_256x5_s", "cpu_pool_fill_16obj_256x5_s",
               "reset_ms_1024", "cpu_reset_ms", "writes_only_ms", "cpu_writes_only_ms", "steps_ratio",
               "cpu_steps_ratio", "placed_env_steps_s", "fixed_env_steps_s")


def parse_bench(stdout: str) -> tuple[str | None, list[dict]]:
    """(code folder of the ``# code=`` line, one dict per ``bench key=value ...`` line)."""
    code, rows = None, []
    for line in stdout.splitlines():
        if line.startswith("# code="):
            code = line.split()[1].split("=", 1)[1]
        elif line.startswith("bench "):
            rows.append(dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv))
    return code, rows


def _number(text: str | None) -> float | None:
    try:
        return float(str(text).rstrip("x"))
    except (TypeError, ValueError):
        return None


def run_side(side: str, script: str, args: list[str], timeout: float) -> list[dict]:
    """Runs ``script args`` with PYTHONPATH=``side``; returns its bench rows (refuses another checkout)."""
    env = dict(os.environ, PYTHONPATH=side, PYTHONUNBUFFERED="1")
    out = subprocess.run([sys.executable, script, *args], capture_output=True, text=True, env=env, timeout=timeout,
                         cwd=side)
    if out.returncode != 0:
        raise SystemExit(f"bench_compare: {os.path.basename(script)} {' '.join(args)} failed on {side} "
                         f"(exit {out.returncode}): {out.stderr.strip().splitlines()[-1:] or out.stdout[-300:]}")
    code, rows = parse_bench(out.stdout)
    if code is not None and os.path.realpath(code) != os.path.realpath(side):
        raise SystemExit(f"bench_compare: the run for {side} imported isaaclab_arena from {code}; "
                         f"check PYTHONPATH / the editable install")
    return rows


def placement_figures(rows: list[dict]) -> dict:
    """{(scene, batch, figure): value} of a bench_placement.py run (our solver only, not the peer)."""
    out = {}
    for r in rows:
        if "peer" in r or "batch" not in r:
            continue
        for fig in PLACEMENT_FIGURES:
            v = _number(r.get(fig))
            if v is not None:
                out[(r["scene"], int(r["batch"]), fig)] = v
        v = _number(r.get("valid_rate"))
        if v is not None and "layouts_per_s" in r:
            out[(r["scene"], int(r["batch"]), "valid_rate")] = v
    return out


def env_figures(rows: list[dict]) -> dict:
    """{("env", 0, figure): value} of a bench_env.py run."""
    return {("env", 0, fig): _number(r[fig]) for r in rows for fig in ENV_FIGURES
            if fig in r and _number(r[fig]) is not None}


def _summary(values: list[float]) -> tuple[float, float]:
    med = statistics.median(values)
    return med, (100.0 * (max(values) - min(values)) / med if med else 0.0)


def report(collected: dict, rounds: int) -> list[str]:
    """The ``compare`` lines from {key: {"before": [...], "after": [...]}}."""
    lines, worst = [], {}
    for (scene, batch, fig), sides in collected.items():
        if not sides["before"] or not sides["after"]:
            continue
        b, bs = _summary(sides["before"])
        a, as_ = _summary(sides["after"])
        ratio = a / b if b else float("nan")
        where = f"scene={scene} batch={batch}" if scene != "env" else "bench=env"
        fmt = ".0f" if b >= 1000 else ".2f" if b >= 10 else ".4f"
        lines.append(f"compare {where} figure={fig} before={b:{fmt}} after={a:{fmt}} ratio={ratio:.3f} "
                     f"before_spread_pct={bs:.1f} after_spread_pct={as_:.1f} rounds={len(sides['before'])}")
        if fig in ("layouts_per_s", "cpu_layouts_per_s") and (fig not in worst or ratio < worst[fig][0]):
            worst[fig] = (ratio, where)
    for fig, (ratio, where) in worst.items():
        lines.append(f"compare worst={ratio:.3f} figure={fig} {where} rounds={rounds}")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True, help="checkout measured first (e.g. a worktree of the old commit)")
    ap.add_argument("--after", required=True, help="checkout measured second; its scripts/ do the measuring")
    ap.add_argument("--rounds", type=int, default=3, help="processes per side and scene (median over rounds)")
    ap.add_argument("--scenes", nargs="*", default=None, help=f"subset of {PLACEMENT_SCENES}")
    ap.add_argument("--quick", action="store_true", help="bench_placement.py --quick (small batches, short windows)")
    ap.add_argument("--runs", type=int, default=None, help="windows per figure (bench_placement.py --runs)")
    ap.add_argument("--window_s", type=float, default=None, help="seconds per window (bench_placement.py --window_s)")
    ap.add_argument("--env", action="store_true", help="also bench_env.py (env build per process: minutes)")
    ap.add_argument("--env_only", default="reset,steps", help="bench_env.py --only (default reset,steps)")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per benchmark process")
    args = ap.parse_args()
    sides = {"before": os.path.abspath(args.before), "after": os.path.abspath(args.after)}
    for name, path in sides.items():
        if not os.path.isdir(os.path.join(path, "isaaclab_arena")):
            ap.error(f"--{name} {path} is not a checkout (no isaaclab_arena/ in it)")
    if args.rounds < 1:
        ap.error(f"--rounds must be >= 1, got {args.rounds}")
    scenes = args.scenes or PLACEMENT_SCENES
    unknown = sorted(set(scenes) - set(PLACEMENT_SCENES))
    if unknown:
        ap.error(f"unknown scenes {unknown}; accepted: {PLACEMENT_SCENES}")
    placement = os.path.join(sides["after"], "scripts", "bench_placement.py")
    extra = ["--no-peer", "--no-spread"] + (["--quick"] if args.quick else [])
    extra += ["--runs", str(args.runs)] if args.runs else []
    extra += ["--window_s", str(args.window_s)] if args.window_s is not None else []
    jobs = [(scene, placement, ["--scenes", scene, *extra], placement_figures) for scene in scenes]
    if args.env:
        jobs.append(("env", os.path.join(sides["after"], "scripts", "bench_env.py"), ["--only", args.env_only],
                     env_figures))
    collected: dict = {}
    print(f"# before={sides['before']} after={sides['after']} rounds={args.rounds} "
          f"scripts={sides['after']}/scripts", flush=True)
    for r in range(args.rounds):
        for label, script, script_args, parse in jobs:
            order = ("before", "after") if r % 2 == 0 else ("after", "before")
            for side in order:
                figures = parse(run_side(sides[side], script, script_args, args.timeout))
                for key, value in figures.items():
                    collected.setdefault(key, {"before": [], "after": []})[side].append(value)
                print(f"# round {r + 1}/{args.rounds} {label} {side}: "
                      + " ".join(f"{k[1]}:{k[2]}={v:g}" for k, v in figures.items()), flush=True)
    for line in report(collected, args.rounds):
        print(line, flush=True)


if __name__ == "__main__":
    main()

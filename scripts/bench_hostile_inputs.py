"""Hostile inputs and what the project answers to each, with the wall time (issue 19, "nothing silent, nothing
hangs"): one row per input with its outcome (exit status, exception type, or "runs"), the answer's first line
cut to 140 characters, the answer's full length in characters and the seconds it took.

Measure (a few minutes: the subprocess cases start the runner, some start a simulation)::

    scripts/arena_python.sh scripts/bench_hostile_inputs.py --markdown      # every case, a Markdown table
    scripts/arena_python.sh scripts/bench_hostile_inputs.py --quick         # in-process cases only (seconds)

Nothing is asserted: each case reports what a user would see (``tests/test_hostile_inputs.py`` and its
neighbours assert). In-process cases time the one call that answers (a YAML load, a constructor, a compile,
``place()``, a pool fill); subprocess cases time the whole command, ``<checkout>/scripts/arena_python.sh
<script> ...`` run from a temporary folder outside the checkout, with a timeout (``TIMEOUT_S``: "timeout").
A subprocess answer is its stderr without the launcher's ``arena_python:`` notes unless the case says otherwise.
A case may answer ``(note, text)``: the row shows the note (what the bench read from the answer, e.g. whether a
block came last) and counts the characters of ``text``, the project's own words.

Cases (``*``: a subprocess or a simulation start, skipped by ``--quick``):

 1. a YAML alias bomb (nested aliases, "billion laughs"; ``tests/test_hostile_inputs.py``'s construction) of
    8 levels (381 bytes) and of 9 (426 bytes): ``ArenaEnvGraphSpec.from_yaml``; ``*`` the runner
    ``--env_spec bomb.yaml``.
 2. 10,000 boxes On a table, compiled (``ObjectPlacer.compile``): the object budget.
 3. 1,000 boxes with 2.6x the table's free area, compiled: the footprint budget.
 4. 24 boxes at 70 % of the table's free area (under the footprint budget, not placeable), a pool fill without
    fallbacks: the error and its length.
 5. ``env_name: my scene`` and ``env_name: a/b``: ``from_yaml``; ``*`` the runner.
 6. ``*`` the shipped Franka pick-and-place task with ``destination_location: floor``, runner ``--num_steps 2``.
 7. replayed positions x = 1e6 m, z = -50 m, x = 1e308 (``PlacementLayouts.from_episode_jsonl``).
 8. ``On(table, clearance_m=5.0)``; ``NextTo(mug, distance_m=50)`` compiled in a scene 1 m across.
 9. ``ObjectPlacer.place()`` on a scene proven infeasible before solving (a NextTo chain longer than the table)
    and on one that is solved and fails (two 0.6 m slabs side by side): raises vs returns ``success=False``.
10. ``*`` a scene whose relations contradict each other, runner with fallbacks (the default): exit status,
    whether the summary block is the last thing printed (its first line), ``run_summary.json`` and the picture.
11. a crowded scene with random yaw that runs out of attempts (12 boxes at 60 %, 2 attempts, 4 layouts per
    env, no fallbacks): does the pool's error suggest ``max_placement_attempts``.
12. ``not_next_to`` without a side in YAML: the side line the compile prints.
13. ``*`` the documented ``--env_spec isaaclab_arena_environments/tabletop/mug_bowl_table.yaml`` from a folder
    outside the checkout.
14. ``*`` ``--output_dir`` naming an existing file; a mistyped flag (``--num_env 4``).
15. ``*`` Ctrl-C (SIGINT to the process group, as a terminal sends it) 0.3 s and 1.0 s after the runner starts:
    exit status, the last stderr line, whether "Traceback" appears.
16. ``*`` ``python -m isaaclab_arena.debug.rrd_contents placement_debug.rrd --view`` with DISPLAY unset.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAUNCHER = os.path.join(CHECKOUT, "scripts", "arena_python.sh")
RUNNER = "isaaclab_arena/scripts/environment_runner.py"
MUG_BOWL = os.path.join(CHECKOUT, "isaaclab_arena_environments", "tabletop", "mug_bowl_table.yaml")
FRANKA = os.path.join(CHECKOUT, "isaaclab_arena_environments", "robot", "franka_pick_and_place.yaml")
TIMEOUT_S = 300
ANSWER_CHARS = 140

#: tests/_spec_helpers.py's BASE: a 1.0 x 0.8 x 0.75 m table, a mug and a bowl on it.
BASE = """\
env_name: mug_bowl
background:
  id: table
  registry_name: static_box
  params:
    size: [1.0, 0.8, 0.75]
    initial_pose: {position_xyz: [0.0, 0.0, 0.375]}
objects:
  - id: mug
    registry_name: box
    params: {size: [0.08, 0.08, 0.1], mass_kg: 0.25}
  - id: bowl
    registry_name: cylinder
    params: {radius: 0.07, height: 0.05, color: [0.8, 0.3, 0.2]}
relations:
  - kind: is_anchor
    subject: table
  - kind: 'on'
    subject: mug
    reference: table
  - kind: next_to
    subject: bowl
    reference: mug
    params: {side: negative_y, distance_m: 0.03}
  - kind: 'on'
    subject: bowl
    reference: table
    params: {clearance_m: 0.02}
"""

#: tests/test_failing_runs.py's CONFLICT: bowl next_to and not_next_to the mug's +x side.
CONFLICT = """\
env_name: my_failing_scene
background: {id: table_background, registry_name: table_background}
object_references:
  - {id: table, parent_id: table_background, prim_path: table, object_type: base}
objects:
  - {id: mug, registry_name: mug}
  - {id: bowl, registry_name: bowl}
relations:
  - {kind: is_anchor, subject: table}
  - {kind: 'on', subject: mug, reference: table}
  - {kind: 'on', subject: bowl, reference: table}
  - {kind: next_to, subject: bowl, reference: mug, params: {side: positive_x, distance_m: 0.05}}
  - {kind: not_next_to, subject: bowl, reference: mug, params: {side: positive_x}}
placer_params: {placement_seed: 7, allow_best_loss_fallbacks: true}
"""

_TMP: list[str] = []


def tmp_dir() -> str:
    """A fresh folder outside the checkout (removed at exit)."""
    path = tempfile.mkdtemp(prefix="arena_hostile_")
    _TMP.append(path)
    return path


def write(folder: str, name: str, text: str) -> str:
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(text)
    return path


# -- measuring ---------------------------------------------------------------------------------------------------

def attempt(call) -> tuple[str, str, float]:
    """``call()`` timed, its console output swallowed: ("runs", what it returned) or (exception type, message)."""
    sink = io.StringIO()
    t0 = time.perf_counter()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            answer = call()
        outcome = "runs"
    except Exception as e:  # noqa: BLE001 - the exception is the answer being reported
        outcome, answer = type(e).__name__, str(e)
    return outcome, answer, time.perf_counter() - t0


class Run:
    """A finished (or timed-out) subprocess: ``rc`` (None: timed out), ``stdout``, ``stderr``, ``seconds``."""

    def __init__(self, rc, stdout: str, stderr: str, seconds: float):
        self.rc, self.stdout, self.stderr, self.seconds = rc, stdout, stderr, seconds

    @property
    def outcome(self) -> str:
        return "timeout" if self.rc is None else f"exit {self.rc}"

    def err_lines(self) -> list[str]:
        return [ln for ln in self.stderr.splitlines() if ln.strip() and not ln.startswith("arena_python:")]

    def err(self) -> str:
        return "\n".join(self.err_lines())

    def result(self, answer=None) -> tuple:
        return self.outcome, self.err() if answer is None else answer, self.seconds


def arena(cwd: str, *args, timeout: float = TIMEOUT_S, env: dict | None = None,
          sigint_after: float | None = None) -> Run:
    """``<checkout>/scripts/arena_python.sh <args>`` from ``cwd`` in its own process group; ``sigint_after``:
    SIGINT to the group that many seconds after the start (a terminal's Ctrl-C). Killed at ``timeout``."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([LAUNCHER, *map(str, args)], cwd=cwd, env=env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        if sigint_after is not None:
            time.sleep(sigint_after)
            os.killpg(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=timeout)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        rc = None
    return Run(rc, stdout, stderr, time.perf_counter() - t0)


def yes(flag: bool) -> str:
    return "yes" if flag else "no"


# -- scenes (copied from the tests: the script imports nothing from tests/) ----------------------------------------

def alias_bomb(levels: int) -> str:
    """tests/test_hostile_inputs.py: expands to 9**levels list items through nested aliases."""
    names = "abcdefghijklmnop"[:levels]
    lines = ["env_name: bomb", "placer_params:", f"  {names[0]}: &{names[0]} [x, x, x, x, x, x, x, x, x]"]
    for prev, name in zip(names, names[1:]):
        lines.append(f"  {name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def boxes(n: int, density: float) -> list:
    """tests/test_scene_budgets.py: ``n`` equal square boxes On ``scenes.table()`` whose footprints add up to
    ``density`` x the table's free area (inside On's 0.05 m edge margins)."""
    from isaaclab_arena.relations.relations import On
    from isaaclab_arena.benchmarks.scenes import TABLE_SIZE, cuboid, table

    t = table()
    side = math.sqrt(density * (TABLE_SIZE[0] - 0.1) * (TABLE_SIZE[1] - 0.1) / n)
    return [t] + [cuboid(f"b{k}", (side, side, 0.05)).add_relation(On(t)) for k in range(n)]


def placer(**kw):
    from isaaclab_arena.relations.object_placer import ObjectPlacer
    from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
    from isaaclab_arena.relations.relation_solver_params import RelationSolverParams

    kw.setdefault("placement_seed", 3)
    return ObjectPlacer(ObjectPlacerParams(solver_params=RelationSolverParams(verbose=False), **kw))


def pool_fill(assets, num_envs: int = 2, **kw) -> str:
    """A pool fill without fallbacks (what the env builder runs): raises RuntimeError when envs stay short."""
    import torch

    from isaaclab_arena.relations.pooled_object_placer import PooledObjectPlacer

    pl = placer(allow_best_loss_fallbacks=False, **kw)
    pool = PooledObjectPlacer(assets, pl.params, num_envs=num_envs, placer=pl)
    pool.fill(torch.arange(num_envs), "creation")
    return f"filled {num_envs} envs"


def compiled(assets) -> str:
    placer().compile(assets, 1)
    return "compiled"


def base_env():
    """The BASE scene as an IsaacLabArenaEnvironment (a fresh one per call: relations get added to it)."""
    import yaml

    from isaaclab_arena.env_spec import ArenaEnvGraphSpec

    return ArenaEnvGraphSpec.from_dict(yaml.safe_load(BASE)).to_arena_env()


def load_yaml(text: str, name: str = "scene.yaml"):
    from isaaclab_arena.env_spec import ArenaEnvGraphSpec

    path = write(tmp_dir(), name, text)
    return attempt(lambda: f"loaded {ArenaEnvGraphSpec.from_yaml(path).env_name!r}")


def mug_bowl_named(name: str) -> str:
    with open(MUG_BOWL) as f:
        return f.read().replace("env_name: mug_bowl_table", f"env_name: {json.dumps(name)}")


def layout_line(position: str) -> str:
    """tests/test_hostile_inputs.py: one episode JSONL line placing 'mug' at ``position``."""
    return ('{"variations": {"scene.relation_placement": {"poses": {"mug": {"position_xyz": ' + position +
            ', "rotation_xyzw": [0.0, 0.0, 0.0, 1.0]}}}}}\n')


# -- the cases: each returns (outcome, answer, seconds) ------------------------------------------------------------

def bomb_load(levels: int):
    return lambda: load_yaml(alias_bomb(levels), "bomb.yaml")


def bomb_runner(levels: int):
    def case():
        cwd = tmp_dir()
        path = write(cwd, "bomb.yaml", alias_bomb(levels))
        return arena(cwd, RUNNER, "--env_spec", path).result()
    return case


def ten_thousand_boxes():
    from isaaclab_arena.benchmarks.scenes import on_table, table

    t = table()
    scene = [t] + [on_table(t, f"b{k}", (0.004, 0.004, 0.01)) for k in range(10_000)]
    return attempt(lambda: compiled(scene))


def footprint_2_6x():
    scene = boxes(1000, 2.6)
    return attempt(lambda: compiled(scene))


def density_70_percent():
    scene = boxes(24, 0.7)
    return attempt(lambda: pool_fill(scene))


def env_name_load(name: str):
    return lambda: load_yaml(BASE.replace("env_name: mug_bowl", f"env_name: {json.dumps(name)}"))


def env_name_runner(name: str):
    def case():
        cwd = tmp_dir()
        path = write(cwd, "named.yaml", mug_bowl_named(name))
        return arena(cwd, RUNNER, "--env_spec", path, "--num_steps", "0").result()
    return case


def floor_destination():
    cwd = tmp_dir()
    with open(FRANKA) as f:
        write(cwd, "floor_task.yaml", f.read().replace("destination_location: bowl", "destination_location: floor"))
    run = arena(cwd, RUNNER, "--env_spec", "floor_task.yaml", "--num_envs", "2", "--num_steps", "2",
                "--output_dir", "out")
    if run.rc != 0:
        return run.result()
    steps = [ln for ln in run.stdout.splitlines() if "steps x" in ln]
    return run.result(steps[-1] if steps else run.stdout.strip().splitlines()[-1])


def replay(position: str):
    def case():
        from isaaclab_arena.offline_placement.placement_layouts import PlacementLayouts

        path = write(tmp_dir(), "layouts.jsonl", layout_line(position))
        return attempt(lambda: f"{PlacementLayouts.from_episode_jsonl(path).num_layouts} layout(s) loaded")
    return case


def on_clearance_5m():
    from isaaclab_arena.relations.relations import On

    table = base_env().get_asset("table")
    return attempt(lambda: f"constructed {On(table, clearance_m=5.0).describe()}")


def next_to_50m():
    from isaaclab_arena.relations.relations import NextTo

    env = base_env()
    env.get_asset("bowl").add_relation(NextTo(env.get_asset("mug"), side="positive_x", distance_m=50.0))
    return attempt(lambda: compiled(env.get_placement_assets()))


def place_result(results) -> str:
    r = results[0]
    return "success=True" if r.success else f"success=False: {r.explanation}"


def place_chain_too_long():
    from isaaclab_arena.relations.relations import NextTo, On, Side
    from isaaclab_arena.benchmarks.scenes import cuboid, on_table, table

    t = table()  # 1.2 m: 0.3 m + 1.0 m + 0.3 m cannot fit in its 1.1 m of room
    mug = on_table(t, "mug", (0.3, 0.3, 0.1))
    bowl = cuboid("bowl", (0.3, 0.3, 0.1)).add_relation(On(t))
    bowl.add_relation(NextTo(mug, side=Side.POSITIVE_X, distance_m=1.0))
    return attempt(lambda: place_result(placer().place([t, mug, bowl])))


def place_two_slabs():
    from isaaclab_arena.benchmarks.scenes import on_table, table

    t = table()  # 0.72 of 0.77 m² (under the footprint budget), but two 0.6 m squares never fit side by side
    scene = [t, on_table(t, "slab_a", (0.6, 0.6, 0.05)), on_table(t, "slab_b", (0.6, 0.6, 0.05))]
    return attempt(lambda: place_result(placer().place(scene)))


def fallback_run():
    cwd = tmp_dir()
    write(cwd, "scene.yaml", CONFLICT)
    run = arena(cwd, RUNNER, "--env_spec", "scene.yaml", "--num_envs", "2", "--num_steps", "2", "--output_dir", "out")
    lines = run.stdout.splitlines()
    starts = [i for i, ln in enumerate(lines) if ln.startswith("[arena] ==== placement")]
    block = lines[starts[-1]:] if starts else []
    last = bool(block) and block[-1] == lines[-1] and block[-1].startswith("[arena] ====")
    out = os.path.join(cwd, "out")
    note = (f"block last: {yes(last)}, run_summary.json: {yes(os.path.isfile(os.path.join(out, 'run_summary.json')))}"
            f", layouts.png: {yes(os.path.isfile(os.path.join(out, 'layouts.png')))}; "
            f"{block[0] if block else 'no summary block'}")
    return run.result((note, "\n".join(block) if block else run.err()))


def crowded_random_yaw():
    scene = boxes(12, 0.6)
    outcome, answer, seconds = attempt(lambda: pool_fill(scene, random_yaw_init=True, max_placement_attempts=2,
                                                         min_unique_layouts_per_env=4))
    hint = answer[answer.find("Try: "):] if "Try: " in answer else "(no advice)"
    return outcome, (f"suggests max_placement_attempts: {yes('max_placement_attempts' in answer)}; {hint}", answer), \
        seconds


def not_next_to_no_side():
    from isaaclab_arena.env_spec import ArenaEnvGraphSpec

    path = write(tmp_dir(), "scene.yaml", BASE + "  - kind: not_next_to\n    subject: bowl\n    reference: mug\n")
    assets = ArenaEnvGraphSpec.from_yaml(path).to_arena_env().assets

    def compile_and_read():
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            placer().compile(assets, 2)
        found = [ln for ln in printed.getvalue().splitlines() if "not_next_to" in ln]
        return "\n".join(found) or "(no not_next_to line printed)"
    return attempt(compile_and_read)


def documented_path():
    cwd = tmp_dir()
    run = arena(cwd, RUNNER, "--env_spec", "isaaclab_arena_environments/tabletop/mug_bowl_table.yaml",
                "--num_envs", "2", "--num_steps", "2")
    if run.rc != 0:
        return run.result()
    steps = [ln for ln in run.stdout.splitlines() if "steps x" in ln]
    return run.result("\n".join(steps[-1:] + run.err_lines()))


def output_dir_is_a_file():
    cwd = tmp_dir()
    write(cwd, "taken", "not a folder")
    return arena(cwd, RUNNER, "--env_spec", MUG_BOWL, "--output_dir", "taken").result()


def mistyped_flag():
    return arena(tmp_dir(), RUNNER, "--env_spec", MUG_BOWL, "--num_env", "4").result()


def ctrl_c(after_s: float):
    def case():
        cwd = tmp_dir()
        write(cwd, "scene.yaml", CONFLICT)
        run = arena(cwd, RUNNER, "--env_spec", "scene.yaml", "--num_envs", "2", "--num_steps", "100000",
                    "--output_dir", "out", sigint_after=after_s)
        lines = run.err_lines()
        return run.result((f"last stderr line: {lines[-1] if lines else '(none)'!r}; "
                           f"Traceback: {yes('Traceback' in run.stderr)}", run.err()))
    return case


def view_without_display():
    cwd = tmp_dir()
    write(cwd, "placement_debug.rrd", "")
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    return arena(cwd, "-m", "isaaclab_arena.debug.rrd_contents", "placement_debug.rrd", "--view", env=env).result()


#: (name, case, quick): ``quick`` cases run in-process, without a simulation (``--quick`` runs only those).
CASES = [
    (f"1 alias bomb 8 levels ({len(alias_bomb(8))} B), from_yaml", bomb_load(8), True),
    (f"1 alias bomb 9 levels ({len(alias_bomb(9))} B), from_yaml", bomb_load(9), True),
    (f"1 alias bomb 8 levels ({len(alias_bomb(8))} B), runner", bomb_runner(8), False),
    (f"1 alias bomb 9 levels ({len(alias_bomb(9))} B), runner", bomb_runner(9), False),
    ("2 10,000 boxes On a table, compile", ten_thousand_boxes, True),
    ("3 1,000 boxes, 2.6x the table's area, compile", footprint_2_6x, True),
    ("4 24 boxes at 70 % density, pool fill", density_70_percent, True),
    ("5 env_name 'my scene', from_yaml", env_name_load("my scene"), True),
    ("5 env_name 'a/b', from_yaml", env_name_load("a/b"), True),
    ("5 env_name 'my scene', runner", env_name_runner("my scene"), False),
    ("5 env_name 'a/b', runner", env_name_runner("a/b"), False),
    ("6 task destination_location floor, runner", floor_destination, False),
    ("7 replay x = 1e6 m", replay("[1e6, 0.0, 0.8]"), True),
    ("7 replay z = -50 m", replay("[0.1, 0.0, -50]"), True),
    ("7 replay x = 1e308", replay("[1e308, 0.0, 0.8]"), True),
    ("8 On(table, clearance_m=5.0)", on_clearance_5m, True),
    ("8 NextTo(mug, distance_m=50) in a 1 m scene, compile", next_to_50m, True),
    ("9 place(): NextTo chain longer than the table", place_chain_too_long, True),
    ("9 place(): two 0.6 m slabs on the table", place_two_slabs, True),
    ("10 contradicting relations, runner with fallbacks", fallback_run, False),
    ("11 crowded, random yaw, out of attempts", crowded_random_yaw, True),
    ("12 not_next_to without side (YAML), compile", not_next_to_no_side, True),
    ("13 documented --env_spec path from outside", documented_path, False),
    ("14 --output_dir naming a file", output_dir_is_a_file, False),
    ("14 mistyped flag --num_env 4", mistyped_flag, False),
    ("15 Ctrl-C at 0.3 s", ctrl_c(0.3), False),
    ("15 Ctrl-C at 1.0 s", ctrl_c(1.0), False),
    ("16 --view without a display", view_without_display, False),
]


# -- the table -----------------------------------------------------------------------------------------------------

def first_line(answer: str) -> str:
    line = answer.strip().splitlines()[0] if answer.strip() else ""
    return line if len(line) <= ANSWER_CHARS else line[:ANSWER_CHARS - 3] + "..."


def print_table(rows: list[tuple[str, str, str, int, float]], markdown: bool) -> None:
    header = ("case", "outcome", f"answer (first line, <= {ANSWER_CHARS} chars)", "chars", "s")
    cells = [header] + [(name, outcome, line, str(chars), f"{seconds:.2f}") for name, outcome, line, chars, seconds
                        in rows]
    if markdown:
        esc = lambda s: s.replace("|", "\\|")  # noqa: E731
        print("| " + " | ".join(header) + " |")
        print("|---|---|---|--:|--:|")
        for row in cells[1:]:
            print("| " + " | ".join(esc(c) if i < 3 else c for i, c in enumerate(row)) + " |")
        return
    widths = [max(len(row[i]) for row in cells) for i in range(5)]
    for row in cells:
        print("  ".join(c.rjust(w) if i >= 3 else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip())


def main(argv=None) -> int:
    from isaaclab_arena.utils.arena_argparse import ArenaArgumentParser

    parser = ArenaArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--quick", action="store_true", help="in-process cases only (no subprocess, no simulation)")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    rows = []
    try:
        for name, case, quick in CASES:
            if args.quick and not quick:
                continue
            print(f"... {name}", file=sys.stderr, flush=True)
            outcome, answer, seconds = case()
            note, text = answer if isinstance(answer, tuple) else (None, answer)
            rows.append((name, outcome, first_line(note or text), len(text), seconds))
    finally:
        for path in _TMP:
            shutil.rmtree(path, ignore_errors=True)
    print_table(rows, args.markdown)
    print(f"\n{len(rows)} cases in {time.perf_counter() - t0:.1f} s{' (--quick)' if args.quick else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

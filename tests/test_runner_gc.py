"""A runner's garbage collection (``utils/runner_gc.py``): full collections 100x rarer while it runs (young cycles
still freed at once, old ones by the next full collection) and none at exit (objects kept alive only by a reference
cycle are no longer finalised at shutdown, exit hooks registered later still run); every runner that installs the
one-line Ctrl-C report also sets both, before its heavy imports."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from isaaclab_arena import ARENA_ROOT

_PROBE = """
import atexit
{setup}
class Cycle:
    def __init__(self):
        self.me = self

    def __del__(self):
        print("cycle finalised", flush=True)

Cycle()
atexit.register(lambda: print("later hook ran", flush=True))
print("end of script", flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("skip, want", [
    (False, ["end of script", "later hook ran", "cycle finalised"]),
    (True, ["end of script", "later hook ran"]),
])
def test_the_exit_hook_leaves_cycles_to_the_operating_system_and_runs_after_later_hooks(tmp_path, skip, want):
    setup = ("from isaaclab_arena.utils.runner_gc import skip_collection_at_exit\nskip_collection_at_exit()"
             if skip else "")
    out = subprocess.run([sys.executable, "-c", _PROBE.format(setup=setup)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120, env={**os.environ, "PYTHONPATH": ARENA_ROOT})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.splitlines() == want


def test_every_runner_sets_both_before_its_imports():
    runners = []
    for d, _, files in os.walk(os.path.join(ARENA_ROOT, "isaaclab_arena")):
        for f in files:
            text = open(os.path.join(d, f)).read() if f.endswith(".py") and f != "interrupts.py" else ""
            if "quiet_interrupts()" in text:
                head = text.split("\nimport", 1)[0]
                runners.append((f, "    skip_collection_at_exit()" in head and "    collect_rarely()" in head))
    assert len(runners) == 8 and all(has for _, has in runners), runners


_CYCLES = """
import gc, json
{setup}
runs = [0, 0, 0]
gc.callbacks.append(lambda phase, info: phase == "stop" and runs.__setitem__(info["generation"],
                                                                            runs[info["generation"]] + 1))

class Node:
    pass

def cycle():
    a, b = Node(), Node()
    a.other, b.other = b, a
    return a

old = [cycle() for _ in range(20_000)]  # survive young collections: long-lived objects
gc.collect(1)
del old  # now garbage that only a full collection frees
young_garbage = sum(1 for _ in range(2_000_000) if cycle() is None)  # churn: young cycles, freed young
gc.collect(1)  # the last young cycles
left = sum(isinstance(o, Node) for o in gc.get_objects())
print(json.dumps({{"threshold": gc.get_threshold(), "runs": runs, "old_nodes_left": left}}))
gc.collect()
print(json.dumps({{"after_full": sum(isinstance(o, Node) for o in gc.get_objects())}}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("rare", [False, True])
def test_rare_full_collections_leave_old_cycles_to_the_next_one_and_free_young_ones(tmp_path, rare):
    import json

    setup = "from isaaclab_arena.utils.runner_gc import collect_rarely\ncollect_rarely()" if rare else ""
    out = subprocess.run([sys.executable, "-c", _CYCLES.format(setup=setup)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120, env={**os.environ, "PYTHONPATH": ARENA_ROOT})
    assert out.returncode == 0, out.stderr[-2000:]
    during, after = (json.loads(line) for line in out.stdout.splitlines())
    assert during["threshold"][2] == (1000 if rare else 10)
    young, full = during["runs"][1], during["runs"][2]
    assert young >= 100, during  # the churn ran many young collections either way
    # each young collection promotes the one cycle alive at that moment (2 nodes), which then waits in the old
    # generation with the rest
    promoted = 2 * young
    if rare:  # no full collection among them: the 40,000 old nodes wait, the 4 million young ones were freed
        assert full == 0 and 40_000 <= during["old_nodes_left"] <= 40_000 + promoted, during
    else:  # the default pace: full collections ran and freed the old cycles
        assert full > 0 and during["old_nodes_left"] <= promoted < 40_000, during
    assert after["after_full"] == 0  # a full collection frees everything either way


def test_ray_tasks_set_it_before_their_imports():
    """A Ray worker runs the evaluation's and the recordings' tasks as a runner would."""
    import inspect

    from isaaclab_arena.evaluation.ray_runner import evaluate_shard
    from isaaclab_arena.scripts.record_many import record_one

    for task in (evaluate_shard, record_one):
        body = inspect.getsource(task)
        assert "    collect_rarely()" in body, task.__name__
        before = body[:body.index("    collect_rarely()")].replace("from isaaclab_arena.utils.runner_gc import", "")
        assert "import isaaclab_arena" not in before and "from isaaclab_arena" not in before, task.__name__


_FREEZE = """
import gc
{setup}
class Cycle:
    def __init__(self, name):
        self.me, self.name = self, name

    def __del__(self):
        print(self.name, "finalised", flush=True)

imported = Cycle("imported")  # stands for the objects of the imported modules
{freeze}
del imported
made_later = Cycle("made later")  # the env, its layouts
del made_later
print("collected", gc.collect() > 0, flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("runner, freeze, want", [
    (True, False, ["imported finalised", "made later finalised", "collected True"]),
    (True, True, ["made later finalised", "collected True"]),
    # a runner's main called from Python (no runner __main__ block: skip_collection_at_exit never ran) freezes nothing
    (False, True, ["imported finalised", "made later finalised", "collected True"]),
])
def test_frozen_imports_are_left_out_of_later_collections_and_later_cycles_are_not(tmp_path, runner, freeze, want):
    setup = "from isaaclab_arena.utils.runner_gc import freeze_imports, skip_collection_at_exit"
    if runner:
        setup += "\nskip_collection_at_exit()"
    out = subprocess.run([sys.executable, "-c", _FREEZE.format(setup=setup, freeze="freeze_imports()" if freeze else "")],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": ARENA_ROOT})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.splitlines()[:len(want)] == want


def test_every_runner_that_builds_an_env_freezes_its_imports_after_them():
    import inspect

    from isaaclab_arena.evaluation import policy_runner
    from isaaclab_arena.scripts import environment_runner, export_layout_usd, record_placement_layouts, train_rsl_rl

    for runner in (environment_runner, policy_runner, export_layout_usd, record_placement_layouts, train_rsl_rl):
        text = inspect.getsource(runner)
        assert "    freeze_imports()" in text, runner.__name__
        held = text.rindex("held_output(", 0, text.index("    freeze_imports()"))
        assert "import-time messages" in text[held:text.index("\n", held)], runner.__name__

"""Runners skip Python's final garbage collections at exit (``utils/process_exit.py``): objects kept alive only by
a reference cycle are no longer finalised at shutdown, exit hooks registered later still run, and every runner
that installs the one-line Ctrl-C report also registers the hook."""

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
    setup = ("from isaaclab_arena.utils.process_exit import skip_collection_at_exit\nskip_collection_at_exit()"
             if skip else "")
    out = subprocess.run([sys.executable, "-c", _PROBE.format(setup=setup)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120, env={**os.environ, "PYTHONPATH": ARENA_ROOT})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.splitlines() == want


def test_every_runner_registers_the_hook():
    runners = []
    for d, _, files in os.walk(os.path.join(ARENA_ROOT, "isaaclab_arena")):
        for f in files:
            text = open(os.path.join(d, f)).read() if f.endswith(".py") and f != "interrupts.py" else ""
            if "quiet_interrupts()" in text:
                runners.append((f, "    skip_collection_at_exit()" in text.split("\nimport", 1)[0]))
    assert len(runners) == 8 and all(has for _, has in runners), runners

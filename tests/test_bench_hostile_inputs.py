"""``scripts/bench_hostile_inputs.py --quick`` (issue 19's table of hostile inputs, in-process cases only) runs from
a folder outside the checkout, prints a row for every quick case, and every refusal in it is short and has no
traceback."""

from __future__ import annotations

import os

from _outside import arena

from isaaclab_arena import ARENA_ROOT
import pytest

pytestmark = [pytest.mark.slow]

BENCH = os.path.join(ARENA_ROOT, "scripts", "bench_hostile_inputs.py")

#: The quick cases, and whether each is a refusal (refused where it enters, before any solving); the others
#: are answers after solving (a pool's error, a place() result, a printed line) whose length is reported only.
QUICK_CASES = {
    "1 alias bomb 8 levels (381 B), from_yaml": True,
    "1 alias bomb 9 levels (426 B), from_yaml": True,
    "2 10,000 boxes On a table, compile": True,
    "3 1,000 boxes, 2.6x the table's area, compile": True,
    "4 24 boxes at 70 % density, pool fill": False,
    "5 env_name 'my scene', from_yaml": True,
    "5 env_name 'a/b', from_yaml": True,
    "7 replay x = 1e6 m": True,
    "7 replay z = -50 m": True,
    "7 replay x = 1e308": True,
    "8 On(table, clearance_m=5.0)": True,
    "8 NextTo(mug, distance_m=50) in a 1 m scene, compile": True,
    "9 place(): NextTo chain longer than the table": True,
    "9 place(): two 0.6 m slabs on the table": False,
    "11 crowded, random yaw, out of attempts": False,
    "12 not_next_to without side (YAML), compile": False,
}


def _cells(line: str) -> list[str]:
    """The cells of a Markdown table row (``\\|`` is a literal bar)."""
    inner = line.strip()[1:-1].replace("\\|", "\0")
    return [c.strip().replace("\0", "|") for c in inner.split(" | ")]


def test_quick_run_prints_every_case_and_short_refusals(tmp_path):
    out = arena(tmp_path, BENCH, "--quick", "--markdown", timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Traceback" not in out.stdout and "Traceback" not in out.stderr, out.stderr[-3000:]
    rows = {}
    for line in out.stdout.splitlines():
        if line.startswith("| ") and not line.startswith("| case "):
            name, outcome, answer, chars, seconds = _cells(line)
            rows[name] = (outcome, answer, int(chars), float(seconds))
    assert set(rows) == set(QUICK_CASES), sorted(set(rows) ^ set(QUICK_CASES))
    for name, refusal in QUICK_CASES.items():
        outcome, answer, chars, _ = rows[name]
        assert answer, name
        if refusal:
            assert outcome.endswith("Error") and outcome != "RuntimeError", (name, outcome)
            assert chars < 500 and "Traceback" not in answer, (name, chars, answer)  # one line, not a dump

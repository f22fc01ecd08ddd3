"""The benchmark's quick mode runs (as in CI) and prints machine-readable lines (no timing asserted)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_bench_quick_mode_prints_parseable_lines():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "bench_placement.py"), "--quick", "--runs", "1"],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = [line for line in out.stdout.splitlines() if line.startswith("bench ")]
    rows = [dict(kv.split("=", 1) for kv in line.split()[1:]) for line in lines]
    solved = [r for r in rows if "layouts_per_s" in r and "batch" in r]
    assert {r["scene"] for r in solved} == {"boxes3", "boxes10", "mug_bowl", "crowded14", "all_relations", "clutter"}
    for r in solved:
        assert float(r["layouts_per_s"]) > 0 and 0.0 <= float(r["valid_rate"]) <= 1.0 and float(r["ms_per_solve"]) > 0
    assert any("compile_s" in r for r in rows) and any("validate_only_per_s" in r for r in rows)
    peers = [r for r in rows if r.get("peer") == "isaaclab_stock"]
    assert {r["scene"] for r in peers} == {"boxes3", "boxes10"}
    assert all(re.fullmatch(r"[0-9.]+", r["valid_rate"]) for r in peers)

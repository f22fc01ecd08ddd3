"""The benchmarks' quick modes run (as in CI) and print machine-readable lines; the sustained timer discards
the warm-up and takes the median of windows (checked on a scripted clock); bench_compare runs both sides
from a folder outside the repo. No speed is asserted."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, "scripts")


def _rows(stdout: str) -> list[dict]:
    return [dict(kv.split("=", 1) for kv in line.split()[1:]) for line in stdout.splitlines()
            if line.startswith("bench ")]


@pytest.mark.slow
def test_bench_quick_mode_prints_parseable_lines(tmp_path):
    out = subprocess.run([sys.executable, os.path.join(SCRIPTS, "bench_placement.py"), "--quick", "--runs", "1"],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    # what the benchmark printed, shown by pytest if an assertion below fails
    print(out.stdout[-8000:])
    print(out.stderr[-4000:], file=sys.stderr)
    assert out.returncode == 0, out.stderr[-2000:]
    code = [line for line in out.stdout.splitlines() if line.startswith("# code=")]
    assert len(code) == 1 and code[0].split()[1] == f"code={ROOT}", code  # measured this checkout
    rows = _rows(out.stdout)
    solved = [r for r in rows if "layouts_per_s" in r and "batch" in r and "peer" not in r and "collision" not in r
              and "stage" not in r]
    assert {r["scene"] for r in solved} == {"boxes3", "boxes10", "mug_bowl", "crowded14", "all_relations", "clutter",
                                           "chain4", "row5", "chain4_yaw", "crowded14_yaw"}
    # MESH scenes: each solved with BBOX and with MESH in the same run, and their ratio
    mesh = {(r["scene"], r["collision"]): r for r in rows if "collision" in r and "layouts_per_s" in r}
    assert set(mesh) == {(s, c) for s in ("mesh_tucked", "kitchen_mesh", "mug_bowl_mesh") for c in ("bbox", "mesh")}
    assert float(mesh[("mesh_tucked", "bbox")]["valid_rate"]) == 0.0  # every target lies inside a box
    assert float(mesh[("mesh_tucked", "mesh")]["valid_rate"]) == 1.0
    ratios = {r["scene"] for r in rows if "mesh_vs_bbox" in r and float(r["mesh_vs_bbox"]) > 0}
    assert ratios == {"mesh_tucked", "kitchen_mesh", "mug_bowl_mesh"}
    chains = {r["scene"]: float(r["valid_rate"]) for r in solved if r["scene"] in ("chain4", "row5", "chain4_yaw")}
    assert min(chains.values()) >= 0.9, chains
    spread = [r for r in rows if "spread_tv" in r]
    assert [r["scene"] for r in spread] == ["boxes3"]
    assert 0.0 <= float(spread[0]["spread_tv"]) <= 1.0 and 0.0 <= float(spread[0]["border_frac"]) <= 1.0
    assert 0.0 <= float(spread[0]["reference_border_frac"]) <= 1.0
    for r in solved:
        assert float(r["layouts_per_s"]) > 0 and 0.0 <= float(r["valid_rate"]) <= 1.0 and float(r["ms_per_solve"]) > 0
        assert float(r["cpu_layouts_per_s"]) > 0 and float(r["spread_pct"]) >= 0
        assert int(r["windows"]) == 1 and int(r["calls"]) >= 1
    assert any("compile_s" in r for r in rows)
    ceilings = [r for r in rows if "validate_only_per_s" in r]
    assert {r["scene"] for r in ceilings} == {r["scene"] for r in solved}
    assert all(float(r["validate_only_per_s"]) > 0 for r in ceilings)
    # issue 21's compile and refill figures
    compile_row, = [r for r in rows if r.get("stage") == "compile"]
    assert int(compile_row["objects"]) == 250 and int(compile_row["pairs"]) == 250 * 249 // 2
    assert float(compile_row["compile_s"]) > 0 and float(compile_row["compile_peak_mb"]) > 0
    rss, = [r for r in rows if r.get("stage") == "compile_rss"]  # 250 boxes: pairs by rule, a few MB
    assert int(rss["objects"]) == 250 and rss["pairs_by_rule"] == "1" and 0 < float(rss["compile_rss_mb"]) < 200
    pairs, = [r for r in rows if r.get("stage") == "pairs"]  # the same layouts with listed pairs and the rule
    assert int(pairs["objects"]) == 128 and float(pairs["listed_ms"]) > 0 and float(pairs["rule_ms"]) > 0
    refill, = [r for r in rows if r.get("stage") == "refill"]
    assert refill["scene"] == "boxes3" and int(refill["batch"]) == int(refill["envs"]) * int(refill["layouts_per_env"])
    # the ratio of the unrounded times, printed to 2 decimals; the times to 3 (quick mode's solve is a few 0.1 ms, so
    # the printed times' rounding alone moves their quotient by a few %)
    rm, sm, ratio = (float(refill[k]) for k in ("refill_ms", "solve_ms", "refill_vs_solve"))
    assert (rm - 5e-4) / (sm + 5e-4) - 5e-3 <= ratio <= (rm + 5e-4) / (sm - 5e-4) + 5e-3, refill
    peers = [r for r in rows if r.get("peer") == "isaaclab_stock"]
    assert {r["scene"] for r in peers} == {"boxes3", "boxes10"}
    for r in peers:
        assert re.fullmatch(r"[0-9.]+", r["valid_rate"])
        # the stock sampler keeps the solver's clearance between 0.12 m cubes in every direction
        assert float(r["min_separation_m"]) >= (0.12 + float(r["clearance_m"])) * math.sqrt(2)
        assert float(r["clearance_m"]) == pytest.approx(0.01)


def test_sustained_discards_the_warm_up_and_takes_the_median_window(monkeypatch):
    sys.path.insert(0, SCRIPTS)
    try:
        import bench_timing
    finally:
        sys.path.remove(SCRIPTS)

    class Clock:  # a scripted clock: each call of the work advances it by the next duration
        def __init__(self, durations):
            self.t, self.durations = 0.0, list(durations)

        def perf_counter(self):
            return self.t

        def process_time(self):
            return self.t / 2  # half of the wall time is this process's CPU time

        def work(self):
            self.t += self.durations.pop(0)

    # 3 slow warm-up calls (1 s each: discarded), then windows of >= 0.375 s: 0.125 s calls x 3, 0.25 s x 2,
    # 0.125 s x 3 (binary fractions: exact sums)
    clock = Clock([1.0, 1.0, 1.0] + [0.125] * 3 + [0.25] * 2 + [0.125] * 3)
    monkeypatch.setattr(bench_timing, "time", clock)
    s = bench_timing.sustained(clock.work, window_s=0.375, windows=3, warmup_s=0.5, min_warmup_calls=3)
    assert not clock.durations, "every scripted call was made"
    assert (s.windows, s.calls) == (3, 8)
    assert (s.median, s.fastest, s.slowest) == (0.125, 0.125, 0.25)
    assert s.spread_pct == pytest.approx(100.0) and s.cpu_median == pytest.approx(0.0625)
    # self-timed: the call reports the seconds of its timed part
    timed = iter([5.0, 0.4, 0.2, 0.2, 0.6])
    s = bench_timing.sustained(lambda: next(timed), window_s=0.4, windows=3, warmup_s=1.0, min_warmup_calls=1,
                               self_timed=True)
    assert (s.calls, s.median, s.slowest) == (4, pytest.approx(0.4), pytest.approx(0.6))
    assert s.cpu_median is None


@pytest.mark.slow
def test_bench_compare_runs_both_sides_from_outside_the_repo(tmp_path):
    cmd = [sys.executable, os.path.join(SCRIPTS, "bench_compare.py"), "--before", ROOT, "--after", ROOT,
           "--rounds", "1", "--quick", "--scenes", "mug_bowl", "--runs", "1", "--window_s", "0.05"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = [dict(kv.split("=", 1) for kv in ln.split()[1:]) for ln in out.stdout.splitlines()
             if ln.startswith("compare ")]
    figures = {r["figure"]: r for r in lines
               if r.get("scene") == "mug_bowl" and r.get("batch") == "128" and "worst" not in r}
    assert {"layouts_per_s", "cpu_layouts_per_s", "validate_only_per_s", "valid_rate"} <= set(figures)
    for r in figures.values():
        before, after, ratio = float(r["before"]), float(r["after"]), float(r["ratio"])
        # the ratio is printed with 3 decimals: equal to after / before to that precision
        assert before > 0 and after > 0 and ratio == pytest.approx(after / before, rel=2e-3, abs=5e-4)
        assert r["rounds"] == "1"
    assert any("worst" in r and r["figure"] == "layouts_per_s" for r in lines)
    # the two sides ran in separate processes, one after the other
    assert re.search(r"# round 1/1 mug_bowl before: .*\n# round 1/1 mug_bowl after: ", out.stdout)


@pytest.mark.slow
def test_bench_compare_refuses_a_folder_that_is_not_a_checkout(tmp_path):
    cmd = [sys.executable, os.path.join(SCRIPTS, "bench_compare.py"), "--before", str(tmp_path), "--after", ROOT]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 2
    assert f"--before {tmp_path} is not a checkout (no isaaclab_arena/ in it)" in out.stderr


@pytest.mark.slow
def test_bench_robot_fill_prints_the_robot_pool_fill_of_each_arm(tmp_path):
    """``bench_robot.py --only fill`` (issue 21's robot pool fill and checker build) run as a user runs it, from a
    folder outside the repo: one parseable line per arm, the spec's 16 envs x 5 layouts, ``ik_reachable`` on."""
    for arm in ("franka_panda", "kuka_iiwa"):
        out = subprocess.run([sys.executable, os.path.join(SCRIPTS, "bench_robot.py"), "--only", "fill",
                              "--embodiment", arm], capture_output=True, text=True, timeout=600, cwd=tmp_path)
        assert out.returncode == 0, out.stderr[-2000:]
        (row,) = [dict(kv.split("=", 1) for kv in line.split() if "=" in kv) for line in out.stdout.splitlines()
                  if line.startswith("bench robot_pool_fill ")]
        assert row["embodiment"] == arm and int(row["batch"]) == 80 and int(row["num_envs"]) == 16
        assert float(row["fill_s"]) > 0 and float(row["first_fill_s"]) > 0 and float(row["checker_build_s"]) > 0
        assert int(row["fallback"]) == 0  # every stored layout passed ik_reachable

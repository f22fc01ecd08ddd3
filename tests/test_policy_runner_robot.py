"""``policy_runner.py`` on the registered robot env: the scripted pick-and-place policy over episodes with
``ik_reachable`` required and disabled in one run (a subprocess started outside the repository), per-episode
records and both success rates printed and saved; ``zero_action`` episodes all end by time-out."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from isaaclab_arena import ARENA_ROOT
import pytest

pytestmark = [pytest.mark.sim, pytest.mark.slow]

RUNNER = os.path.join(ARENA_ROOT, "isaaclab_arena", "evaluation", "policy_runner.py")


def _records(path) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def test_scripted_policy_compares_ik_reachable_required_and_disabled(tmp_path):
    env = dict(os.environ, PYTHONPATH=ARENA_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, RUNNER, "--policy_type", "scripted_pick_and_place", "--num_envs", "4",
                          "--num_episodes", "4", "--placement_seed", "7", "--compare_ik_reachable", "--output_dir",
                          "run", "--no-report", "franka_table_pick_and_place", "--episode_length_s", "6"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1200)
    assert out.returncode == 0, out.stderr[-3000:]
    rates = dict(re.findall(r"^\[compare\] ik_reachable=(required|disabled): success rate (\d\.\d+) ", out.stdout, re.M))
    assert set(rates) == {"required", "disabled"}, out.stdout[-2000:]
    required = json.load(open(tmp_path / "run" / "ik_required" / "eval_summary.json"))
    disabled = json.load(open(tmp_path / "run" / "ik_disabled" / "eval_summary.json"))
    assert "ik_reachable" in required["required_checks"] and "ik_reachable" not in disabled["placement_checks"]
    records = _records(tmp_path / "run" / "ik_required" / "episodes.jsonl")
    assert [r["episode"] for r in records] == [0, 1, 2, 3] and all(r["run"] == "ik_required" for r in records)
    successes = sum(r["success"] for r in records)
    assert float(rates["required"]) == round(required["success_rate"], 3) == round(successes / 4, 3)
    assert successes >= 3, records
    # both runs evaluate episode k on partition k: the same seed, the layouts differ only by the checks applied
    assert all(r["env_id"] == r["episode"] for r in records)


def test_zero_action_episodes_end_by_time_out(tmp_path, capsys):
    from isaaclab_arena.evaluation.policy_runner import main

    summary = main(["--num_envs", "2", "--num_episodes", "3", "--placement_seed", "3", "--episode_length_s", "0.5",
                    "--output_dir", str(tmp_path), "--no-report", "franka_table_pick_and_place",
                    "--episode_length_s", "0.5"])
    assert summary["num_episodes"] == 3 and summary["rates"]["all"]["successes"] == 0 and summary["success_rate"] == 0
    assert summary["terminations"] == {"time_out": 3}
    # every episode counted once, in episode order, each running the full 0.5 s whichever env ran it
    assert [r["episode"] for r in summary["records_list"]] == [0, 1, 2]
    assert all(abs(r["episode_length_s"] - 0.5) < 0.02 for r in summary["records_list"])
    assert "[eval] success rate 0.000 [0.000, 0.561] (0/3)" in capsys.readouterr().out

"""``policy_runner.py`` on the registered robot env: the scripted pick-and-place policy over episodes with
``ik_reachable`` required and disabled in one run (a subprocess started outside the repository), per-episode
success and both success rates printed and saved; ``zero_action`` episodes all end by time-out."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from isaaclab_arena import ARENA_ROOT

RUNNER = os.path.join(ARENA_ROOT, "isaaclab_arena", "evaluation", "policy_runner.py")


def test_scripted_policy_compares_ik_reachable_required_and_disabled(tmp_path):
    env = dict(os.environ, PYTHONPATH=ARENA_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, RUNNER, "--policy_type", "scripted_pick_and_place", "--num_envs", "4",
                          "--num_episodes", "4", "--placement_seed", "7", "--compare_ik_reachable", "--output_dir",
                          "run", "franka_table_pick_and_place", "--episode_length_s", "6"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1200)
    assert out.returncode == 0, out.stderr[-3000:]
    for label in ("ik_required", "ik_disabled"):
        lines = [l for l in out.stdout.splitlines() if l.startswith(f"[episodes {label}] env ")]
        assert len(lines) == 4 and all(re.search(r"episode 0: (success|failure) \(\d+\.\d\d s\)$", l) for l in lines)
    rates = dict(re.findall(r"^\[compare\] ik_reachable=(required|disabled): success_rate=(\d\.\d+)", out.stdout, re.M))
    assert set(rates) == {"required", "disabled"}, out.stdout[-2000:]
    required = json.load(open(tmp_path / "run" / "episodes_ik_required.json"))
    disabled = json.load(open(tmp_path / "run" / "episodes_ik_disabled.json"))
    assert "ik_reachable" in required["required_checks"] and "ik_reachable" not in disabled["checks"]
    assert float(rates["required"]) == required["success_rate"] == required["successes"] / 4
    assert required["successes"] >= 3, required["episodes"]
    assert [(e["env"], e["index"]) for e in required["episodes"]] == [(e, 0) for e in range(4)]


def test_zero_action_episodes_end_by_time_out(tmp_path, capsys):
    from isaaclab_arena.evaluation.policy_runner import main

    summary = main(["--num_envs", "2", "--num_episodes", "3", "--placement_seed", "3", "--episode_length_s", "0.5",
                    "--output_dir", str(tmp_path), "franka_table_pick_and_place", "--episode_length_s", "0.5"])
    assert summary["num_episodes"] == 3 and summary["successes"] == 0 and summary["success_rate"] == 0.0
    # env 0 contributes 2 episodes, env 1 one (env-major, unbiased by duration); each ran the full 0.5 s
    assert [(e["env"], e["index"]) for e in summary["episodes"]] == [(0, 0), (1, 0), (0, 1)]
    assert all(abs(e["duration_s"] - 0.5) < 0.02 for e in summary["episodes"])
    assert "[episodes] success_rate=0.000 (0/3 episodes, 2 envs" in capsys.readouterr().out

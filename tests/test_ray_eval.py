"""``eval_runner.py --ray`` as a user runs it (the launcher, a folder outside the checkout): an experiment on a local
Ray instance collated identical to the sequential run, also when a worker dies mid-task and Ray retries it; a
Ray cluster of a head and a worker node started from the command line; a Ray address that does not answer is
one line with exit status 2."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import textwrap

import pytest

from _outside import arena, refusal

EVAL_RUNNER = "isaaclab_arena/evaluation/eval_runner.py"

pytestmark = [pytest.mark.slow, pytest.mark.distributed]
ENV = "franka_table_pick_and_place"

#: Dies once (SIGKILL of its own worker process) when the test armed it with the file ``kill_me``.
POLICIES = textwrap.dedent('''
    import os, signal
    from isaaclab_arena.evaluation.scripted_pick_and_place import ScriptedPickAndPlacePolicy

    class DieOnce(ScriptedPickAndPlacePolicy):
        def __init__(self, env):
            super().__init__(env)
            self.steps = 0

        def get_action(self, env, observations):
            self.steps += 1
            if self.steps == 120 and os.path.exists("kill_me") and not os.path.exists("killed"):
                open("killed", "w").close()
                os.kill(os.getpid(), signal.SIGKILL)
            return super().get_action(env, observations)
''')

#: The run whose worker dies comes first: its retried task then runs beside the other run's tasks, not alone at the
#: end with the other CPU idle (about 4 s less on 2 CPUs); the collated records still follow the run order.
EXPERIMENT = textwrap.dedent(f'''
    name: ray_check
    defaults: {{environment: {ENV}, num_envs: 2, env_spacing: 0, num_episodes: 4, placement_seed: 7,
               env_args: {{episode_length_s: 4}}}}
    runs:
      - name: dies_once
        policy: {{type: my_ray_policies.DieOnce}}
      - name: scripted
        policy: {{type: scripted_pick_and_place}}
''')


def _records(path) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("ray_eval")
    (d / "my_ray_policies.py").write_text(POLICIES)
    (d / "exp.yaml").write_text(EXPERIMENT)
    seq = arena(d, EVAL_RUNNER, "--experiment", "exp.yaml", "--output_dir", "sequential", "--no-progress",
                timeout=1800)
    assert seq.returncode == 0, seq.stderr[-3000:]
    return d


@pytest.mark.sim
def test_ray_experiment_is_collated_identical_to_the_sequential_run_after_a_worker_dies(work):
    (work / "kill_me").write_text("")
    out = arena(work, EVAL_RUNNER, "--experiment", "exp.yaml", "--output_dir", "on_ray", "--ray", "--shard_episodes",
                "2", timeout=1800)
    assert out.returncode == 0, out.stderr[-3000:]
    assert (work / "killed").exists()  # a worker really died and its task was retried
    seq, ray_ = _records(work / "sequential" / "episodes.jsonl"), _records(work / "on_ray" / "episodes.jsonl")
    assert [(r["run"], r["episode"]) for r in ray_] == [(run, k) for run in ("dies_once", "scripted") for k in range(4)]
    assert seq == ray_
    for run in ("scripted", "dies_once"):
        a = json.load(open(work / "sequential" / run / "eval_summary.json"))
        b = json.load(open(work / "on_ray" / run / "eval_summary.json"))
        assert a["rates"] == b["rates"] and b["ray_tasks"] == 2
    assert "[ray] 4 tasks for 2 runs" in out.stdout


@pytest.mark.sim
def test_ray_cluster_with_a_worker_node_started_from_the_command_line(work):
    ray_cli = os.path.join(os.path.dirname(subprocess.run(
        [os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts", "ensure_env.sh")],
        capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]), "ray")
    port = _free_port()
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    start = [ray_cli, "start", "--disable-usage-stats"]
    try:
        head = subprocess.run([*start, "--head", "--include-dashboard=false", f"--port={port}", "--num-cpus=1",
                               "--node-ip-address=127.0.0.1"],
                              capture_output=True, text=True, timeout=600, env=env)
        assert head.returncode == 0, head.stderr[-2000:]
        node = subprocess.run([*start, f"--address=127.0.0.1:{port}", "--num-cpus=1", "--node-ip-address=127.0.0.1"],
                              capture_output=True, text=True, timeout=600, env=env)
        assert node.returncode == 0, node.stderr[-2000:]
        out = arena(work, EVAL_RUNNER, "--experiment", "exp.yaml", "--runs", "scripted", "--output_dir", "cluster",
                    "--ray", "--ray_address", f"127.0.0.1:{port}", "--shard_episodes", "2", timeout=1800)
        assert out.returncode == 0, out.stderr[-3000:]
        assert "on 2 CPUs (cluster 127.0.0.1" in out.stdout
        assert _records(work / "cluster" / "episodes.jsonl") == \
            [r for r in _records(work / "sequential" / "episodes.jsonl") if r["run"] == "scripted"]
    finally:
        subprocess.run([ray_cli, "stop", "--force"], capture_output=True, timeout=120, env=env)


@pytest.mark.sim
def test_a_ray_address_that_does_not_answer_is_refused(work):
    out = arena(work, EVAL_RUNNER, "--experiment", "exp.yaml", "--output_dir", "noray", "--ray", "--ray_address",
                f"127.0.0.1:{_free_port()}", timeout=900)
    line = refusal(out)
    assert "no Ray head answers" in line and "ray start --head" in line
    assert not (work / "noray").exists()

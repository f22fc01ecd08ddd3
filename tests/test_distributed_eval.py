"""``policy_runner.py --distributed`` under torchrun, run as a user runs it (the launcher, a folder outside the
checkout): the same records as one process, a rank killed with SIGKILL and restarted by torchrun resumes with
nothing duplicated or lost, and refusals (outside torchrun, a resume with another world size) are one line with
exit status 2."""

from __future__ import annotations

import json
import textwrap

import pytest

from _outside import POLICY_RUNNER, arena, refusal


pytestmark = [pytest.mark.slow, pytest.mark.distributed]

ENV = "franka_table_pick_and_place"
COMMON = ["--policy_type", "scripted_pick_and_place", "--num_envs", "2", "--env_spacing", "0", "--num_episodes", "6",
          "--placement_seed", "7", "--no-report", "--no-progress"]
ENV_ARGS = [ENV, "--episode_length_s", "5"]

#: Rank 1 kills itself (SIGKILL) once, mid-run; the restarted rank finds the marker and runs on.
KILL_ONCE = textwrap.dedent('''
    import os, signal
    from isaaclab_arena.evaluation.scripted_pick_and_place import ScriptedPickAndPlacePolicy

    class KillOnce(ScriptedPickAndPlacePolicy):
        def __init__(self, env, at_step=330):
            super().__init__(env)
            self.at_step, self.steps = int(at_step), 0

        def get_action(self, env, observations):
            self.steps += 1
            if os.environ.get("RANK") == "1" and self.steps == self.at_step and not os.path.exists("killed_once"):
                open("killed_once", "w").close()
                os.kill(os.getpid(), signal.SIGKILL)
            return super().get_action(env, observations)
''')


def _records(path) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def _torchrun(cwd, nproc: int, *runner_args, restarts: int = 0):
    """torchrun of the policy runner: runner flags, ``--distributed``, then the environment and its flags."""
    return arena(cwd, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
                 f"--max-restarts={restarts}", POLICY_RUNNER, *runner_args, "--distributed", *ENV_ARGS, timeout=1800)


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("dist_eval")
    (d / "kill_policies.py").write_text(KILL_ONCE)
    single = arena(d, POLICY_RUNNER, *COMMON, "--output_dir", "single", *ENV_ARGS, timeout=1800)
    assert single.returncode == 0, single.stderr[-3000:]
    return d


@pytest.mark.sim
def test_two_ranks_give_the_single_process_records(work):
    out = _torchrun(work, 2, *COMMON, "--output_dir", "two")
    assert out.returncode == 0, out.stderr[-3000:]
    single, two = _records(work / "single" / "episodes.jsonl"), _records(work / "two" / "episodes.jsonl")
    assert [r["episode"] for r in two] == list(range(6))
    assert single == two
    summary = json.load(open(work / "two" / "eval_summary.json"))
    assert summary["world_size"] == 2 and summary["backend"] == "gloo"
    assert "torch.distributed.run --nproc_per_node=2" in summary["reproduce"]
    shards = sorted(p.name for p in (work / "two" / "shards").iterdir())
    assert shards == ["manifest.json", "rank0-of-2.jsonl", "rank1-of-2.jsonl"]
    assert [r["episode"] for r in _records(work / "two" / "shards" / "rank1-of-2.jsonl")] == [1, 3, 5]
    # a resume of that job with another world size is refused in one line
    again = _torchrun(work, 1, *COMMON, "--output_dir", "two")
    line = refusal(again)
    assert "world_size was 2" in line and "has 1" in line, line


@pytest.mark.sim
def test_a_killed_rank_resumes_with_nothing_duplicated_or_lost(work):
    args = [a if a != "scripted_pick_and_place" else "kill_policies.KillOnce" for a in COMMON]
    out = _torchrun(work, 2, *args, "--output_dir", "killed", restarts=1)
    assert out.returncode == 0, out.stderr[-3000:]
    assert (work / "killed_once").exists()  # rank 1 really died once
    assert "resuming" in out.stdout + out.stderr
    records = _records(work / "killed" / "episodes.jsonl")
    assert sorted(r["episode"] for r in records) == list(range(6))  # no duplicate, no gap
    single = _records(work / "single" / "episodes.jsonl")
    # the same layouts and, with one intra-op thread, the same outcomes as the uninterrupted single process
    assert [dict(r, policy=None) for r in records] == [dict(r, policy=None) for r in single]


@pytest.mark.sim
def test_distributed_outside_torchrun_is_refused(work):
    out = arena(work, POLICY_RUNNER, "--distributed", *COMMON, "--output_dir", "nope", *ENV_ARGS)
    line = refusal(out)
    assert "torchrun" in line and "torch.distributed.run" in line
    assert not (work / "nope").exists()


@pytest.mark.sim
def test_two_nodes_of_one_process_each_with_a_c10d_rendezvous(work):
    """Multi-node as on a cluster, on this machine: two launchers, one per 'node', meeting at a c10d endpoint."""
    import socket

    from _outside import arena_popen

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    nodes = [arena_popen(work, "-m", "torch.distributed.run", "--nnodes=2", f"--node_rank={i}", "--nproc_per_node=1",
                         "--rdzv_backend=c10d", f"--rdzv_endpoint=127.0.0.1:{port}", "--rdzv_id=arena_two_nodes",
                         f"--rdzv_conf=is_host={int(i == 0)}",
                         POLICY_RUNNER, *COMMON, "--output_dir", "nodes", "--distributed", *ENV_ARGS)
             for i in (0, 1)]
    try:
        outs = [n.communicate(timeout=1800) for n in nodes]
    finally:
        for n in nodes:
            if n.poll() is None:
                n.kill()
    assert [n.returncode for n in nodes] == [0, 0], [o[1][-2000:] for o in outs]
    assert _records(work / "nodes" / "episodes.jsonl") == _records(work / "single" / "episodes.jsonl")
    assert json.load(open(work / "nodes" / "eval_summary.json"))["world_size"] == 2

"""Evaluating policies as a user does (``policy_runner.py`` / ``eval_runner.py`` through the launcher, from a folder
outside the checkout): plugin policies from the user's folder, per-episode records and summaries checked against
the simulator's own success signal, identical records for 4 and 16 envs on one recorded layout file, remote
policies served from a second process, experiments of two runs collated, and one-line refusals that write
nothing."""

from __future__ import annotations

import json
import textwrap
import time

import pytest

from _outside import POLICY_RUNNER, arena, arena_popen, refusal

ENV = "franka_table_pick_and_place"
EVAL_RUNNER = "isaaclab_arena/evaluation/eval_runner.py"
SERVER = "isaaclab_arena/evaluation/policy_server.py"

#: A deterministic plugin policy of the user's own: the scripted pick-and-place policy, slowed (gain 3).
PLUGIN = textwrap.dedent('''
    import torch
    from isaaclab_arena.evaluation.scripted_pick_and_place import ScriptedPickAndPlacePolicy

    class SlowScripted(ScriptedPickAndPlacePolicy):
        def __init__(self, env, gain=3.0):
            super().__init__(env, position_gain=float(gain))

    class Zeros:
        """Observations only: runs locally and on a policy server alike."""
        def __init__(self, env, scale=0.0):
            from isaaclab_arena.evaluation.policy import EnvInfo
            self.info = EnvInfo.of(env)
            self.scale = float(scale)
        def reset(self, env_ids=None):
            pass
        def get_action(self, env, observations):
            obs = observations["policy"]
            act = torch.zeros(self.info.num_envs, self.info.action_dim, device=obs.device)
            act[:, 0] = self.scale * obs[:, 0]
            return act

    class WrongShape:
        def __init__(self, env):
            self.n = env.unwrapped.num_envs
        def reset(self, env_ids=None):
            pass
        def get_action(self, env, observations):
            return torch.zeros(self.n, 6)
''')


def _records(path) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="module")
def user_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("eval_user")
    (d / "my_policies.py").write_text(PLUGIN)
    return d


@pytest.fixture(scope="module")
def recorded(user_dir):
    """A layout file of the robot scene (16 solved layouts, written as a recording is)."""
    import argparse

    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.evaluation.episode_layouts import solve_episode_layouts
    from isaaclab_arena_environments.registered import get_registered_environment

    add_args, build = get_registered_environment(ENV)
    parser = argparse.ArgumentParser()
    add_args(parser)
    builder = ArenaEnvBuilder(build(parser.parse_args([])), ArenaEnvBuilderCfg(num_envs=1, placement_seed=11))
    table = solve_episode_layouts(builder, 16)
    path = user_dir / "robot_layouts.jsonl"
    table.layouts.write_episode_jsonl(path, source="solver")
    return path


@pytest.mark.sim
@pytest.mark.slow
def test_plugin_policy_from_the_users_folder_records_every_episode(user_dir):
    out = arena(user_dir, POLICY_RUNNER, "--policy_type", "my_policies.SlowScripted", "--policy_arg", "gain=3.0",
                "--num_envs", "4", "--num_episodes", "6", "--placement_seed", "7", "--output_dir", "plugin", ENV,
                "--episode_length_s", "6")
    assert out.returncode == 0, out.stderr[-3000:]
    records = _records(user_dir / "plugin" / "episodes.jsonl")
    assert [r["episode"] for r in records] == list(range(6))
    assert all(r["policy"] == "my_policies.SlowScripted" and r["placement_seed"] == 7 for r in records)
    assert [r["env_id"] for r in records] == list(range(6))  # episode k: partition k of the solved table
    for r in records:
        assert r["success"] == (r["termination"] == "success")
        assert set(r["poses_at_reset"]) >= {"pick_up_object", "bowl", "robot"}
        obj, robot = r["poses_at_reset"]["pick_up_object"], r["poses_at_reset"]["robot"]
        dist = ((obj[0] - robot[0]) ** 2 + (obj[1] - robot[1]) ** 2) ** 0.5
        assert abs(r["factors"]["object_distance_from_robot_m"] - dist) < 1e-5
        assert r["episode_length_steps"] <= 360 and (r["termination"] != "time_out" or r["episode_length_steps"] == 360)
    summary = json.load(open(user_dir / "plugin" / "eval_summary.json"))
    k = sum(r["success"] for r in records)
    assert summary["rates"]["all"]["successes"] == k and summary["num_episodes"] == 6
    lo, hi = summary["rates"]["all"]["wilson_95"]
    assert lo <= k / 6 <= hi
    assert "--placement_seed 7" in summary["reproduce"] and "my_policies.SlowScripted" in summary["reproduce"]
    assert (user_dir / "plugin" / "report.html").is_file()
    lines = [ln for ln in out.stdout.splitlines() if ln.strip()]
    assert len(lines) <= 15, out.stdout  # short console output; Isaac Lab's tables only with --verbose
    assert not any("Active" in ln and "Terms" in ln for ln in lines)
    # the same command again: byte-identical records (deterministic policy, same layouts)
    again = arena(user_dir, POLICY_RUNNER, "--policy_type", "my_policies.SlowScripted", "--policy_arg", "gain=3.0",
                  "--num_envs", "4", "--num_episodes", "6", "--placement_seed", "7", "--output_dir", "plugin2",
                  "--no-report", "--no-progress", ENV, "--episode_length_s", "6")
    assert again.returncode == 0, again.stderr[-3000:]
    assert (user_dir / "plugin" / "episodes.jsonl").read_bytes() == (user_dir / "plugin2" / "episodes.jsonl").read_bytes()


@pytest.mark.sim
@pytest.mark.slow
def test_identical_records_for_4_and_16_envs_on_recorded_layouts(user_dir, recorded):
    for n in (4, 16):
        out = arena(user_dir, POLICY_RUNNER, "--policy_type", "scripted_pick_and_place", "--num_envs", str(n),
                    "--env_spacing", "0", "--num_episodes", "16", "--placement_layouts", recorded.name,
                    "--output_dir", f"rec{n}", "--no-report", "--no-progress", ENV, "--episode_length_s", "5",
                    timeout=1500)
        assert out.returncode == 0, out.stderr[-3000:]
    four, sixteen = (_records(user_dir / f"rec{n}" / "episodes.jsonl") for n in (4, 16))
    assert four == sixteen
    assert [r["layout"]["line"] for r in four] == list(range(1, 17))
    assert all(r["layout"]["source"] == "recorded" for r in four)
    assert any(r["success"] for r in four)


@pytest.mark.sim
@pytest.mark.slow
def test_remote_policy_served_from_a_second_process_gives_the_local_records(user_dir, recorded):
    # the runs take their layouts from the recording (what a layout is does not matter here; it spares each run
    # the solve), and the server starts up while the local run runs
    server = arena_popen(user_dir, SERVER, "--policy_type", "my_policies.Zeros", "--policy_arg", "scale=0.5",
                         "--port", "0", "--token", "s3cret")
    try:
        local = arena(user_dir, POLICY_RUNNER, "--policy_type", "my_policies.Zeros", "--policy_arg", "scale=0.5",
                      "--num_envs", "2", "--num_episodes", "2", "--placement_layouts", recorded.name, "--output_dir",
                      "local", "--no-report", ENV, "--episode_length_s", "0.5")
        assert local.returncode == 0, local.stderr[-3000:]
        port = None
        t0 = time.time()
        while port is None and time.time() - t0 < 120:
            line = server.stdout.readline()
            if "serving" in line:
                port = line.strip().rsplit(":", 1)[-1]
        assert port is not None, server.stderr.read()[-3000:] if server.poll() is not None else "no ready line"
        remote = arena(user_dir, POLICY_RUNNER, "--policy_type", "remote", "--remote_port", port, "--remote_token",
                       "s3cret", "--num_envs", "2", "--num_episodes", "2", "--placement_layouts", recorded.name,
                       "--output_dir", "remote", "--no-report", ENV, "--episode_length_s", "0.5")
        assert remote.returncode == 0, remote.stderr[-3000:]
        a, b = _records(user_dir / "local" / "episodes.jsonl"), _records(user_dir / "remote" / "episodes.jsonl")
        assert [dict(r, policy=None) for r in a] == [dict(r, policy=None) for r in b]
        bad = arena(user_dir, POLICY_RUNNER, "--policy_type", "remote", "--remote_port", port, "--remote_token", "nope",
                    "--num_episodes", "1", "--placement_layouts", recorded.name, "--output_dir", "badtoken", ENV)
        assert "token" in refusal(bad)
        assert not (user_dir / "badtoken" / "episodes.jsonl").exists()
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.sim
@pytest.mark.slow
def test_experiment_with_two_runs_is_collated(user_dir):
    (user_dir / "exp.yaml").write_text(textwrap.dedent(f'''
        name: two_policies
        defaults: {{environment: {ENV}, num_envs: 2, num_episodes: 2, placement_seed: 7,
                   env_args: {{episode_length_s: 4}}}}
        runs:
          - name: scripted
            policy: {{type: scripted_pick_and_place}}
          - name: zeros
            policy: {{type: my_policies.Zeros}}
            factors: [object_x_m, object_distance_from_robot_m]
    '''))
    out = arena(user_dir, EVAL_RUNNER, "--experiment", "exp.yaml", "--output_dir", "exp_out", timeout=1500)
    assert out.returncode == 0, out.stderr[-3000:]
    root = user_dir / "exp_out"
    summary = json.load(open(root / "experiment_summary.json"))
    assert [r["run"] for r in summary["comparison"]] == ["scripted", "zeros"]
    both = _records(root / "episodes.jsonl")
    assert [(r["run"], r["episode"]) for r in both] == [("scripted", 0), ("scripted", 1), ("zeros", 0), ("zeros", 1)]
    for run in ("scripted", "zeros"):
        assert _records(root / run / "episodes.jsonl") == [r for r in both if r["run"] == run]
    assert set(both[2]["factors"]) == {"object_x_m", "object_distance_from_robot_m"}
    # the same layouts for both runs (same spec and seed): episode k has the same poses in either run
    assert both[0]["poses_at_reset"] == both[2]["poses_at_reset"]
    assert all(not r["success"] for r in both[2:])  # zero actions never succeed
    assert (root / "report.html").is_file()


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("case", ["bad_class", "wrong_shape", "unknown_env", "unknown_policy", "unknown_factor",
                                  "missing_checkpoint", "wrong_size_checkpoint", "unreachable_server"])
def test_bad_input_is_one_line_and_writes_nothing(user_dir, case, request):
    out_dir = user_dir / f"bad_{case}"
    # the refusals that come once the env is built run on recorded layouts: they do not depend on where the layouts
    # come from, and the command then spends no time solving them
    layouts = request.getfixturevalue("recorded").name if case in ("wrong_shape", "wrong_size_checkpoint",
                                                                   "unreachable_server") else None
    if case == "bad_class":
        out = arena(user_dir, POLICY_RUNNER, "--policy_type", "no_such_module.Policy", "--num_episodes", "2",
                    "--output_dir", out_dir.name, ENV)
        assert "no_such_module" in refusal(out) and "does not import" in refusal(out)
    elif case == "wrong_shape":
        out = arena(user_dir, POLICY_RUNNER, "--policy_type", "my_policies.WrongShape", "--num_envs", "2",
                    "--num_episodes", "2", "--placement_layouts", layouts, "--output_dir", out_dir.name, ENV)
        line = refusal(out)
        assert "(2, 6)" in line and "(2, 7)" in line, line
    elif case == "wrong_size_checkpoint":  # an actor for 12 observations; the Franka env has 39
        import torch

        torch.save({"actor_state_dict": {"mlp.0.weight": torch.randn(8, 12), "mlp.0.bias": torch.zeros(8),
                                         "mlp.2.weight": torch.randn(7, 8), "mlp.2.bias": torch.zeros(7)}},
                   user_dir / "small.pt")
        out = arena(user_dir, POLICY_RUNNER, "--policy_type", "rsl_rl", "--checkpoint_path", "small.pt",
                    "--num_envs", "2", "--num_episodes", "2", "--placement_layouts", layouts, "--output_dir",
                    out_dir.name, ENV)
        line = refusal(out)
        assert "12 observations" in line and "39 observations" in line, line
    elif case == "unreachable_server":
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]  # nothing listens there (the runner waits --remote_timeout_s for it in vain)
        out = arena(user_dir, POLICY_RUNNER, "--policy_type", "remote", "--remote_port", str(port),
                    "--remote_timeout_s", "0.5", "--num_envs", "2", "--num_episodes", "2", "--placement_layouts",
                    layouts, "--output_dir", out_dir.name, ENV)
        line = refusal(out)
        assert "not answering" in line and str(port) in line, line
    elif case == "missing_checkpoint":
        out = arena(user_dir, POLICY_RUNNER, "--policy_type", "rsl_rl", "--checkpoint_path", "nope.pt",
                    "--num_episodes", "2", "--output_dir", out_dir.name, ENV)
        assert "nope.pt" in refusal(out)
    else:
        run = {"unknown_env": "{environment: no_such_env, policy: {type: zero_action}}",
               "unknown_policy": f"{{environment: {ENV}, policy: {{type: pkg.Nope}}}}",
               "unknown_factor": f"{{environment: {ENV}, policy: {{type: zero_action}}, factors: [wind_speed]}}"}[case]
        (user_dir / f"{case}.yaml").write_text(f"name: {case}\nruns:\n  - {{name: a, {run[1:-1]}}}\n")
        out = arena(user_dir, EVAL_RUNNER, "--experiment", f"{case}.yaml", "--output_dir", out_dir.name)
        line = refusal(out)
        assert {"unknown_env": "no_such_env", "unknown_policy": "pkg.Nope", "unknown_factor": "wind_speed"}[case] in line
        assert "runs[0]" in line
    assert not (out_dir / "episodes.jsonl").exists() and not (out_dir / "eval_summary.json").exists()


class SuccessProbe:
    """Wraps the scripted policy and reads the simulator's success term and episode counters at every step."""

    def __init__(self, env, **settings):
        from isaaclab_arena.evaluation.scripted_pick_and_place import ScriptedPickAndPlacePolicy

        self.inner = ScriptedPickAndPlacePolicy(env)
        self.u = env.unwrapped
        self.prev_len = None
        self.ended: list[tuple[bool, int]] = []

    def reset(self, env_ids=None):
        self.inner.reset(env_ids)

    def _observe(self):
        length = self.u.episode_length_buf.clone()
        if self.prev_len is not None:  # an env whose counter went back to 0 ended its episode last step
            success = self.u.termination_manager.get_term("success")
            for e in (length < self.prev_len + 1).nonzero().flatten().tolist():
                self.ended.append((bool(success[e]), int(self.prev_len[e]) + 1))
        self.prev_len = length

    def get_action(self, env, observations):
        self._observe()
        return self.inner.get_action(env, observations)

    def close(self):  # the runner closes the policy after the last step: see that step's endings too
        self._observe()


@pytest.mark.sim
def test_records_agree_with_the_simulators_success_signal(tmp_path, monkeypatch):
    import argparse

    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.evaluation import policy as policy_module
    from isaaclab_arena.evaluation.episodes import EvaluationSettings, evaluate
    from isaaclab_arena_environments.registered import get_registered_environment

    probes = []

    def probe(env, **settings):
        probes.append(SuccessProbe(env))
        return probes[-1]

    monkeypatch.setattr(policy_module, "load_policy_class", lambda name: probe)
    add_args, build = get_registered_environment(ENV)
    parser = argparse.ArgumentParser()
    add_args(parser)
    builder = ArenaEnvBuilder(build(parser.parse_args(["--episode_length_s", "5"])),
                              ArenaEnvBuilderCfg(num_envs=2, placement_seed=3, gym_id="test_eval_probe"))
    summary = evaluate(builder, EvaluationSettings(policy_type="probe", num_episodes=4, output_dir=str(tmp_path),
                                                   progress=False, report=False))
    records = summary["records_list"]
    assert len(records) == 4 and summary["num_episodes"] == 4
    mine = sorted((r["success"], r["episode_length_steps"]) for r in records)
    # every record's outcome is one the simulator signalled (the probe may see extra episodes started after the 4th)
    for outcome in mine:
        assert outcome in probes[0].ended, (outcome, probes[0].ended)
    assert summary["rates"]["all"]["successes"] == sum(s for s, _ in mine)
    assert _records(tmp_path / "episodes.jsonl") == records

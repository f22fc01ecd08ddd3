"""rsl_rl on the registered Franka pick-and-place env: reward terms measured on a live kit-less env, a short
training run of ``train_rsl_rl.py`` (a subprocess started outside the repository) whose checkpoint
``RslRlPolicy`` runs deterministically, and the refusals (wrong sizes, not a checkpoint, bad flags)."""

from __future__ import annotations

import math
import os
import re

import pytest
import torch

from _outside import arena, refusal

TASK = "franka_table_pick_and_place"
TRAIN = "isaaclab_arena/scripts/train_rsl_rl.py"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A checkpoint of 2 PPO iterations (4 envs, 8 steps per env each), trained by the script from a folder
    outside the repository."""
    cwd = tmp_path_factory.mktemp("train")
    out = arena(cwd, TRAIN, "--task", TASK, "--num_envs", 4, "--max_iterations", 2, "--num_steps_per_env", 8,
                "--placement_seed", 3, "--seed", 5, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("[train] iteration ")]
    assert len(lines) == 2 and all(re.search(r"mean_reward=\S+ mean_step_reward=-?\d", ln) for ln in lines), out.stdout
    path = cwd / "outputs" / "rsl_rl" / TASK / "model_1.pt"
    assert path.is_file(), sorted(os.listdir(path.parent))
    return path


def _mean_action(state: dict, obs: torch.Tensor, clip: float = 1.0) -> torch.Tensor:
    """The actor's mean action computed from the state dict alone: normalise, linear + ELU layers, clip."""
    x = (obs - state["obs_normalizer._mean"]) / (state["obs_normalizer._std"] + 1e-2)
    idx = sorted(int(k.split(".")[1]) for k in state if re.fullmatch(r"mlp\.\d+\.weight", k))
    for j, i in enumerate(idx):
        x = x @ state[f"mlp.{i}.weight"].T + state[f"mlp.{i}.bias"]
        if j < len(idx) - 1:
            x = torch.nn.functional.elu(x)
    return x.clamp(-clip, clip)


@pytest.mark.sim
@pytest.mark.slow
def test_rewards_on_live_env_and_checkpoint_policy(checkpoint):
    """One kit-less env (2 envs): the scripted policy reaches, grasps, lifts and places; each reward term is read
    from the reward manager per step. Then the trained checkpoint runs on the same env."""
    from isaaclab_arena.evaluation.policy import EnvInfo, check_action
    from isaaclab_arena.evaluation.rsl_rl_policy import RslRlPolicy
    from isaaclab_arena.evaluation.scripted_pick_and_place import GRASP, LIFT, LOWER, ScriptedPickAndPlacePolicy
    from isaaclab_arena.rl.envs import make_builder, rl_env_session

    builder = make_builder(TASK, [], num_envs=2, placement_seed=7)
    with rl_env_session(builder) as env:
        u = env.unwrapped
        rm = u.reward_manager
        names = list(rm.active_terms)
        assert names == ["reaching", "lifting", "placing", "success", "action_rate", "joint_vel"]
        weights = builder.arena_env.task.reward_weights
        col = {n: i for i, n in enumerate(names)}
        obs, _ = env.reset()
        scripted = ScriptedPickAndPlacePolicy(env)
        scripted.reset(None)
        rows, phases, succ, rewards = [], [], [], []
        # success needs the cube let go, the hand away and the cube still for success_hold_s (0.5 s), so give the
        # policy the whole episode (8 s) and stop once both envs have succeeded
        for _ in range(int(u.max_episode_length)):
            action = scripted.get_action(env, obs)
            phases.append(scripted.phase.clone())
            obs, rew, terminated, truncated, _ = env.step(action)
            rows.append(rm._step_reward.clone() / torch.tensor([rm.get_term_cfg(n).weight for n in names]))
            succ.append(u.termination_manager.get_term("success").clone())
            rewards.append(rew.clone())
            done = terminated | truncated
            if bool(done.any()):
                scripted.reset(done.nonzero().flatten())
            if bool(torch.stack(succ).any(dim=0).all()):
                break
        vals, phase, succ = torch.stack(rows), torch.stack(phases), torch.stack(succ)  # (T, E, terms), (T, E)
        first_done = [int(succ[:, e].nonzero()[0]) if bool(succ[:, e].any()) else len(rows) for e in range(2)]
        assert all(t < len(rows) for t in first_done), "the scripted policy should succeed in both envs"
        for e in range(2):
            v, p = vals[: first_done[e] + 1, e], phase[: first_done[e] + 1, e]
            # reaching: far at the start, near when the gripper closes on the object
            at_grasp = v[p == GRASP, col["reaching"]]
            assert v[0, col["reaching"]] < 0.3 and at_grasp.min() > 0.8 and at_grasp.min() > v[0, col["reaching"]]
            # lifting and placing: exactly 0 while the object rests; > 0 once it is carried
            assert v[0, col["lifting"]] == 0 and v[0, col["placing"]] == 0
            assert float(v[p < GRASP, col["lifting"]].abs().max()) == 0.0
            carried = (p > LIFT) & (p <= LOWER)
            assert float(v[carried, col["lifting"]].min()) > 0 and float(v[carried, col["lifting"]].max()) <= 1.0
            # placing grows as the object is carried over the destination
            lift_start = v[p == LIFT, col["placing"]][:3].mean()
            assert float(v[p == LOWER, col["placing"]].max()) > float(lift_start) + 0.1
            # success pays its weight once (the term is 1 / step_dt on that step), nothing before
            assert float(v[: first_done[e], col["success"]].abs().max()) == 0.0
            assert math.isclose(float(v[first_done[e], col["success"]]) * u.step_dt, 1.0, rel_tol=1e-5)
            # penalties are >= 0 terms with negative weights
            assert float(v[:, col["action_rate"]].min()) >= 0 and float(v[:, col["joint_vel"]].min()) >= 0
        assert weights.action_rate < 0 and weights.joint_vel < 0
        # the env's reward is the weighted sum times the step duration
        total = (vals[-1] * torch.tensor([rm.get_term_cfg(n).weight for n in names])).sum(-1) * u.step_dt
        assert torch.allclose(total, rewards[-1], rtol=1e-4, atol=1e-6)

        # the trained checkpoint, on the live env and from an EnvInfo alone
        policy = RslRlPolicy(env, checkpoint_path=str(checkpoint), task=TASK)
        info = EnvInfo.of(env)
        a1 = check_action(policy.get_action(env, obs), info, "rsl_rl")
        a2 = policy.get_action(env, obs)
        assert a1.shape == (2, 7) and a1.dtype == torch.float32 and torch.equal(a1, a2)
        state = torch.load(checkpoint, map_location="cpu", weights_only=True)["actor_state_dict"]
        assert torch.allclose(a1.cpu(), _mean_action(state, obs["policy"].cpu()), atol=1e-5)
        served = RslRlPolicy(EnvInfo(num_envs=2, action_dim=7, device=info.device,
                                     observation_shapes={"policy": (2, 39)}), checkpoint_path=str(checkpoint))
        assert torch.equal(served.get_action(None, obs), a1)
        obs, *_ = env.step(a1)
        assert torch.isfinite(obs["policy"]).all()


@pytest.mark.slow
def test_checkpoint_of_wrong_size_or_not_a_checkpoint_is_refused(tmp_path):
    from isaaclab_arena.evaluation.policy import EnvInfo, PolicyError
    from isaaclab_arena.evaluation.rsl_rl_policy import RslRlPolicy

    info = EnvInfo(num_envs=3, action_dim=7, observation_shapes={"policy": (3, 39)})
    small = {"actor_state_dict": {"mlp.0.weight": torch.randn(8, 12), "mlp.0.bias": torch.zeros(8),
                                  "mlp.2.weight": torch.randn(7, 8), "mlp.2.bias": torch.zeros(7)}}
    torch.save(small, tmp_path / "small.pt")
    with pytest.raises(PolicyError) as err:
        RslRlPolicy(info, checkpoint_path=str(tmp_path / "small.pt"))
    msg = str(err.value)
    assert "\n" not in msg and "12 observations" in msg and "39 observations" in msg, msg
    wide = {"actor_state_dict": {**small["actor_state_dict"], "mlp.0.weight": torch.randn(8, 39),
                                 "mlp.2.weight": torch.randn(5, 8), "mlp.2.bias": torch.zeros(5)}}
    torch.save(wide, tmp_path / "wide.pt")
    with pytest.raises(PolicyError, match=r"5 actions.*7 actions"):
        RslRlPolicy(info, checkpoint_path=str(tmp_path / "wide.pt"))
    # a model of the right size without the normaliser runs (built from the EnvInfo alone)
    ok = {"actor_state_dict": {"mlp.0.weight": torch.randn(8, 39), "mlp.0.bias": torch.zeros(8),
                               "mlp.2.weight": torch.randn(7, 8), "mlp.2.bias": torch.zeros(7),
                               "distribution.std_param": torch.ones(7)}}
    torch.save(ok, tmp_path / "ok.pt")
    act = RslRlPolicy(info, checkpoint_path=str(tmp_path / "ok.pt")).get_action(None, {"policy": torch.randn(3, 39)})
    assert act.shape == (3, 7) and act.dtype == torch.float32
    (tmp_path / "text.pt").write_text("not a checkpoint")
    torch.save({"something": torch.zeros(2)}, tmp_path / "other.pt")
    for name, pattern in (("missing.pt", "no such file"), ("text.pt", "not an rsl_rl checkpoint"),
                          ("other.pt", "not an rsl_rl OnPolicyRunner checkpoint")):
        with pytest.raises(PolicyError, match=pattern) as err:
            RslRlPolicy(info, checkpoint_path=str(tmp_path / name))
        assert "\n" not in str(err.value)

    class Evil:  # an object that needs unpickling: weights_only refuses it, nothing runs
        def __reduce__(self):
            return (os.system, ("echo hacked > " + str(tmp_path / "hacked"),))

    torch.save({"actor_state_dict": Evil()}, tmp_path / "evil.pt")
    with pytest.raises(PolicyError, match="not an rsl_rl checkpoint"):
        RslRlPolicy(info, checkpoint_path=str(tmp_path / "evil.pt"))
    assert not (tmp_path / "hacked").exists()


@pytest.mark.slow
def test_agent_cfg_and_reward_weights_refuse_bad_values():
    from isaaclab_arena.rl import agent_cfg_for
    from isaaclab_arena.tasks import PickAndPlaceRewardWeights

    cfg = agent_cfg_for(TASK)
    assert cfg.class_name == "OnPolicyRunner" and cfg.obs_groups["actor"] == ["policy"]
    with pytest.raises(KeyError) as err:
        agent_cfg_for("nope")
    assert "nope" in err.value.args[0] and TASK in err.value.args[0] and "\n" not in err.value.args[0]
    assert PickAndPlaceRewardWeights(lifting=0).weights()["lifting"] == 0.0
    for bad in ({"reaching": float("nan")}, {"placing": float("inf")}, {"reaching_std_m": 0.0},
                {"lifting": "high"}, {"success": True}):
        with pytest.raises(ValueError, match="PickAndPlaceRewardWeights"):
            PickAndPlaceRewardWeights(**bad)


@pytest.mark.slow
@pytest.mark.parametrize("argv, expected", [
    (["--task", "nope"], "--task 'nope' is not a registered environment; registered:"),
    (["--task", TASK, "--num_envs", "0"], "--num_envs must be a positive integer, got 0"),
    (["--task", TASK, "--max_iterations", "-3"], "--max_iterations must be a positive integer, got -3"),
    (["--task", TASK, "--distributed"], "--distributed runs one process per rank under torchrun"),
])
def test_train_script_refuses_bad_input_in_one_line(tmp_path, argv, expected):
    line = refusal(arena(tmp_path, TRAIN, *argv, timeout=300))
    assert expected in line, line


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.distributed
def test_training_on_two_ranks_on_the_cpu_uses_gloo(tmp_path):
    """torchrun with two CPU ranks: stock rsl_rl would start NCCL and ask for CUDA; the script's runner uses gloo,
    both ranks train and rank 0 saves the checkpoint."""
    out = arena(tmp_path, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", TRAIN, "--task", TASK,
                "--num_envs", 2, "--max_iterations", 2, "--num_steps_per_env", 8, "--placement_seed", 3,
                "--distributed", timeout=1200)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("[train] iteration ")]
    assert len(lines) == 2, out.stdout  # rank 0 reports; rank 1 trains silently
    assert (tmp_path / "outputs" / "rsl_rl" / TASK / "model_1.pt").is_file()
    # rank 0's checkpoint is an ordinary rsl_rl checkpoint of the env's sizes (39 observations, 7 actions)
    state = torch.load(tmp_path / "outputs" / "rsl_rl" / TASK / "model_1.pt", weights_only=True)["actor_state_dict"]
    weights = [state[k] for k in sorted(state) if k.startswith("mlp.") and k.endswith(".weight")]
    assert weights[0].shape[1] == 39 and weights[-1].shape[0] == 7


@pytest.mark.sim
@pytest.mark.slow
def test_the_trained_checkpoint_is_evaluated_through_the_runner(checkpoint, tmp_path):
    """The 2-iteration checkpoint through ``policy_runner.py --policy_type rsl_rl``: one record per episode, and the
    same records twice (the actor's mean action: deterministic)."""
    import json

    runs = []
    for name in ("a", "b"):
        out = arena(tmp_path, "isaaclab_arena/evaluation/policy_runner.py", "--policy_type", "rsl_rl",
                    "--checkpoint_path", str(checkpoint), "--num_envs", 2, "--num_episodes", 2, "--placement_seed", 3,
                    "--output_dir", name, "--no-report", TASK, "--episode_length_s", 0.5, timeout=900)
        assert out.returncode == 0, out.stderr[-3000:]
        with open(tmp_path / name / "episodes.jsonl") as f:
            runs.append([json.loads(line) for line in f])
    assert runs[0] == runs[1]
    assert [r["episode"] for r in runs[0]] == [0, 1]
    assert all(r["policy"] == "rsl_rl" and r["termination"] in ("time_out", "success") for r in runs[0])

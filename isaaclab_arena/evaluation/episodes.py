"""Runs a policy for a number of episodes in a task env and reports per-episode success and the success rate.

An episode ends when the task's ``success`` termination fires (success) or at the time-out (failure); the env
then resets that env (a fresh pooled layout when ``resolve_on_reset``). ``num_episodes`` are taken env-major
and unbiased by duration: env ``e`` contributes its first ``num_episodes // num_envs`` episodes, plus one when
``e < num_episodes % num_envs``; the run stops once every env has finished its share. Kit-less, CPU or GPU.
"""

from __future__ import annotations

import json
import math
import os
import time

import torch

from isaaclab_arena.evaluation.policy_types import POLICY_TYPES


def episode_quota(num_episodes: int, num_envs: int) -> torch.Tensor:
    """(num_envs,) episodes each env contributes."""
    quota = torch.full((num_envs,), num_episodes // num_envs, dtype=torch.long)
    quota[: num_episodes % num_envs] += 1
    return quota


def make_policy(policy_type: str, env, builder):
    """``(policy(obs) -> actions, reset(env_ids))`` for ``policy_type``."""
    u = env.unwrapped
    if policy_type == "zero_action":
        dim = u.action_manager.total_action_dim
        zeros = torch.zeros(u.num_envs, dim, device=u.device)
        return (lambda obs: zeros), (lambda ids: None)
    if policy_type == "scripted_pick_and_place":
        from isaaclab_arena.evaluation.scripted_pick_and_place import ScriptedPickAndPlacePolicy

        task = builder.arena_env.task
        if task is None:
            raise ValueError(f"--policy_type scripted_pick_and_place needs a PickAndPlaceTask; environment "
                             f"'{builder.arena_env.name}' has no task")
        tcp = builder.arena_env.embodiment.description.tcp_link
        policy = ScriptedPickAndPlacePolicy(env, task, builder.member_indices, tcp_link=tcp)
        return policy, policy.reset
    raise ValueError(f"unknown policy_type {policy_type!r}; accepted: {', '.join(POLICY_TYPES)}")


def run_episodes(builder, policy_type: str, num_episodes: int, output_dir: str | None = None, label: str = "",
                 max_steps: int | None = None) -> dict:
    """Creates the env, runs ``num_episodes`` episodes (see the module docstring), closes it; returns and prints
    ``{"episodes": [{env, index, success, steps}], "successes", "success_rate", ...}``.

    ``max_steps`` (default: the episode length times the env's share, plus one episode) bounds the run; envs
    that did not finish their share by then count their open episodes as failures.
    """
    from isaaclab.app import launch_simulation

    if isinstance(num_episodes, bool) or not isinstance(num_episodes, int) or num_episodes <= 0:
        raise ValueError(f"--num_episodes must be a positive integer, got {num_episodes!r}")
    env_cfg = builder.compose_manager_cfg()
    tag = f"[episodes{' ' + label if label else ''}]"
    with launch_simulation(env_cfg, {"headless": True, "device": builder.cfg.device}):
        env = builder.make_registered(env_cfg)
        try:
            u = env.unwrapped
            n = u.num_envs
            quota = episode_quota(num_episodes, n).to(u.device)
            done_count = torch.zeros(n, dtype=torch.long, device=u.device)
            steps_in = torch.zeros(n, dtype=torch.long, device=u.device)
            obs, _ = env.reset()
            policy, reset = make_policy(policy_type, env, builder)
            episodes: list[dict] = []
            limit = max_steps or int(u.max_episode_length) * (int(quota.max()) + 1)
            t0, steps = time.perf_counter(), 0
            while bool((done_count < quota).any()) and steps < limit:
                obs, _, terminated, truncated, _ = env.step(policy(obs))
                steps += 1
                steps_in += 1
                ended = (terminated | truncated).nonzero().flatten()
                if ended.numel():
                    counted = ended[done_count[ended] < quota[ended]]
                    for e in counted.tolist():  # a few episode records per step, not a hot loop
                        episodes.append({"env": e, "index": int(done_count[e]), "success": bool(terminated[e]),
                                         "steps": int(steps_in[e])})
                    done_count[ended] += 1
                    steps_in[ended] = 0
                    reset(ended)
            for e in (done_count < quota).nonzero().flatten().tolist():  # cut off by max_steps: failures
                episodes += [{"env": e, "index": int(k), "success": False, "steps": int(steps_in[e])}
                             for k in range(int(done_count[e]), int(quota[e]))]
            wall = time.perf_counter() - t0
            episodes.sort(key=lambda r: (r["index"], r["env"]))
            dt = float(u.step_dt)
            for r in episodes:
                r["duration_s"] = round(r["steps"] * dt, 3)
                print(f"{tag} env {r['env']} episode {r['index']}: {'success' if r['success'] else 'failure'} "
                      f"({r['duration_s']:.2f} s)", flush=True)
            successes = sum(r["success"] for r in episodes)
            rate = successes / len(episodes)
            summary = {"env": builder.arena_env.name, "policy_type": policy_type, "label": label,
                       "num_envs": n, "num_episodes": len(episodes), "successes": successes,
                       "success_rate": rate, "episodes": episodes, "env_steps": steps * n,
                       "env_steps_per_s": round(steps * n / wall, 1) if wall > 0 else math.nan}
            if builder.placer is not None:
                summary["placement"] = builder.placer.summary()
                summary["checks"] = list(builder.placer.check_names)
                summary["required_checks"] = list(builder.placer.required_check_names)
            print(f"{tag} success_rate={rate:.3f} ({successes}/{len(episodes)} episodes, {n} envs, "
                  f"{summary['env_steps_per_s']} env-steps/s)", flush=True)
        finally:
            env.close()
    if output_dir:
        os.makedirs(output_dir, exist_ok=True)
        path = os.path.join(output_dir, f"episodes{'_' + label if label else ''}.json")
        with open(path + ".tmp", "w") as f:
            json.dump(summary, f, indent=1)
        os.replace(path + ".tmp", path)
        summary["path"] = path
    return summary

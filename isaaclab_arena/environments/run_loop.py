"""Shared run loop of the runners: launch kit-less, create the env, reset, step, report what was placed."""

from __future__ import annotations

import json
import os
import time

import torch


def placed_poses(env, names: list[str]) -> dict[str, torch.Tensor]:
    """Env-local root poses ``(num_envs, 7)`` (xyz metres + xyzw) read back from the simulator."""
    u = env.unwrapped
    out = {}
    for n in names:
        data = u.scene[n].data
        pos = data.root_pos_w.torch - u.scene.env_origins
        out[n] = torch.cat([pos, data.root_quat_w.torch], dim=-1).detach().cpu().clone()
    return out


def format_poses(title: str, poses: dict[str, torch.Tensor], max_envs: int = 4) -> str:
    lines = [title]
    for name, p in poses.items():
        cells = [f"env{i}: ({p[i, 0]:+.3f}, {p[i, 1]:+.3f}, {p[i, 2]:+.3f})" for i in range(min(max_envs, p.shape[0]))]
        more = f" ... (+{p.shape[0] - max_envs} envs)" if p.shape[0] > max_envs else ""
        lines.append(f"  {name:<16s} " + "  ".join(cells) + more)
    return "\n".join(lines)


def zero_actions(env) -> torch.Tensor:
    u = env.unwrapped
    dim = u.action_manager.total_action_dim if hasattr(u, "action_manager") else 0
    return torch.zeros(u.num_envs, dim, device=u.device)


def run(builder, num_steps: int, output_dir: str | None, pictures: bool = True, policy=None) -> dict:
    """Launches (kit-less), creates the env, resets, steps ``num_steps`` times; prints and returns a summary."""
    from isaaclab.app import launch_simulation

    t0 = time.perf_counter()
    env_cfg = builder.compose_manager_cfg()
    t_compose = time.perf_counter() - t0
    names = builder.pose_source.object_names if builder.pose_source is not None else []
    summary: dict = {"env": builder.arena_env.name, "num_envs": builder.cfg.num_envs,
                     "env_spacing": builder.env_spacing, "physics": builder.physics,
                     "device": builder.cfg.device, "compose_s": round(t_compose, 3)}
    with launch_simulation(env_cfg, {"headless": True, "device": builder.cfg.device}):
        env = builder.make_registered(env_cfg)
        try:
            env.reset()
            after_reset = placed_poses(env, names)
            print(format_poses("[arena] placed after reset (env-local x, y, z in m):", after_reset), flush=True)
            if pictures and output_dir and builder.placer is not None:
                from isaaclab_arena.environments.placement_pictures import write_layout_picture

                failed: dict = {}
                path = write_layout_picture(builder.placer, os.path.join(output_dir, "layouts.png"), report=failed)
                print(f"[arena] layout picture: {path}" + (f" (failed checks highlighted in envs {sorted(failed)})"
                                                          if failed else ""))
                summary["picture"] = path
                summary["picture_failed_checks"] = {str(k): v for k, v in failed.items()}
            act = zero_actions(env)
            t1 = time.perf_counter()
            for _ in range(num_steps):
                env.step(policy(env) if policy is not None else act)
            dt = time.perf_counter() - t1
            final = placed_poses(env, names)
            print(format_poses(f"[arena] after {num_steps} steps (env-local x, y, z in m):", final), flush=True)
            sps = num_steps * env.unwrapped.num_envs / dt if dt > 0 and num_steps else 0.0
            print(f"[arena] {num_steps} steps x {env.unwrapped.num_envs} envs in {dt:.2f} s ({sps:.0f} env-steps/s)")
            summary.update(steps=num_steps, env_steps_per_s=round(sps, 1),
                           after_reset={k: v.tolist() for k, v in after_reset.items()},
                           final={k: v.tolist() for k, v in final.items()})
            if builder.placer is not None:
                summary["placement"] = builder.placer.summary()
        finally:
            env.close()
    if output_dir:
        os.makedirs(output_dir, exist_ok=True)
        path = os.path.join(output_dir, "run_summary.json")
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(summary, f, indent=1)
        os.replace(tmp, path)
        print(f"[arena] summary: {path}")
    return summary

"""Helpers shared by test modules: build a real kit-less env from a tabletop YAML and read root poses back in
env-local world frame (the pooled-env tests), and run code in a fresh interpreter."""

from __future__ import annotations

import os
import subprocess
import sys

import torch

from isaaclab_arena import ARENA_ROOT

TABLETOP = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "tabletop")
#: World Z of the tabletop examples' table top, metres.
TOP_Z = 0.75


def local_pose(env, name):
    """(num_envs, 7) root pose of ``name`` read from the simulator: env-local position (m), xyzw quaternion."""
    u = env.unwrapped
    return torch.cat([u.scene[name].data.root_pos_w.torch - u.scene.env_origins, u.scene[name].data.root_quat_w.torch], -1).clone()


def build_pooled_env(spec, num_envs, tmp, **cfg):
    """(builder, env, ctx) for ``TABLETOP/spec`` on the CPU, placement seed 7; the caller exits ``ctx``."""
    from isaaclab.app import launch_simulation

    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg

    arena_env = ArenaEnvGraphSpec.from_yaml(os.path.join(TABLETOP, spec)).to_arena_env()
    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=num_envs, env_spacing=2.5, placement_seed=7,
                                                            output_dir=str(tmp), gym_id=f"test_pooled_{spec}", **cfg))
    env_cfg = builder.compose_manager_cfg()
    ctx = launch_simulation(env_cfg, {"headless": True, "device": "cpu"})
    ctx.__enter__()
    env = builder.make_registered(env_cfg)
    return builder, env, ctx


def fresh_interpreter_last_line(code: str, timeout: float = 300) -> str:
    """Runs ``code`` with ``python -c`` in a fresh interpreter from the repository root (nothing imported yet);
    asserts it exits 0 (showing the end of its stderr otherwise) and returns the last line it printed."""
    out = subprocess.run([sys.executable, "-c", code], cwd=ARENA_ROOT, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip().splitlines()[-1]

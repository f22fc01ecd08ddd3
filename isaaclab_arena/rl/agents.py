"""rsl_rl agent (PPO runner) configs of the registered Arena environments.

:data:`AGENT_CFGS` maps a registered environment name to a function returning a fresh
``RslRlOnPolicyRunnerCfg`` (``isaaclab_rl.rsl_rl``); :func:`agent_cfg_for` returns it, refusing an unknown name
with one line listing the known ones. The actor reads observation group ``policy`` (the critic too), through
an empirical observation normaliser; its output is a Gaussian whose mean is the deterministic action.

``franka_table_pick_and_place``: 7 actions (``ik_rel``: TCP displacement in metres and rotation vector in
radians in the robot base frame, then the gripper command), 39 observations.
"""

from __future__ import annotations

from typing import Callable

from isaaclab_rl.rsl_rl import (
    RslRlMLPModelCfg,
    RslRlOnPolicyRunnerCfg,
    RslRlPpoAlgorithmCfg,
)


def _franka_table_pick_and_place() -> RslRlOnPolicyRunnerCfg:
    """PPO for the Franka pick-and-place env (like Isaac Lab's Franka lift agent, adapted to IK-relative actions:
    a small initial action spread, since an action of 1 asks the TCP to move 1 m in one step)."""
    return RslRlOnPolicyRunnerCfg(
        seed=42,
        device="cpu",
        num_steps_per_env=24,
        max_iterations=1500,
        save_interval=50,
        experiment_name="franka_table_pick_and_place",
        obs_groups={"actor": ["policy"], "critic": ["policy"]},
        clip_actions=1.0,
        actor=RslRlMLPModelCfg(
            hidden_dims=[256, 128, 64], activation="elu", obs_normalization=True,
            distribution_cfg=RslRlMLPModelCfg.GaussianDistributionCfg(init_std=0.3, std_type="scalar")),
        critic=RslRlMLPModelCfg(hidden_dims=[256, 128, 64], activation="elu", obs_normalization=True),
        algorithm=RslRlPpoAlgorithmCfg(
            num_learning_epochs=5, num_mini_batches=4, learning_rate=1e-4, schedule="adaptive", gamma=0.98,
            lam=0.95, entropy_coef=0.006, desired_kl=0.01, max_grad_norm=1.0, value_loss_coef=1.0,
            use_clipped_value_loss=True, clip_param=0.2),
    )


#: Registered environment name -> function returning its agent config.
AGENT_CFGS: dict[str, Callable[[], RslRlOnPolicyRunnerCfg]] = {
    "franka_table_pick_and_place": _franka_table_pick_and_place,
}


def agent_cfg_for(task_name: str) -> RslRlOnPolicyRunnerCfg:
    """A fresh ``RslRlOnPolicyRunnerCfg`` of the registered environment ``task_name`` (migrated for the
    installed rsl_rl: the deprecated model fields removed). Raises ``KeyError`` with one line listing the
    environments that have an agent config."""
    make = AGENT_CFGS.get(task_name)
    if make is None:
        raise KeyError(f"no rsl_rl agent config for task '{task_name}'; known: {', '.join(sorted(AGENT_CFGS))}")
    cfg = make()
    from isaaclab_rl.rsl_rl.utils import handle_deprecated_rsl_rl_cfg
    import importlib.metadata

    return handle_deprecated_rsl_rl_cfg(cfg, importlib.metadata.version("rsl-rl-lib"))


__all__ = ["AGENT_CFGS", "agent_cfg_for"]

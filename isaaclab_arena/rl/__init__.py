"""Reinforcement learning with rsl_rl on registered Arena environments.

* :mod:`isaaclab_arena.rl.agents`: the ``RslRlOnPolicyRunnerCfg`` of each registered environment
  (:func:`~isaaclab_arena.rl.agents.agent_cfg_for`);
* :mod:`isaaclab_arena.rl.envs`: building a registered environment for training;
* ``isaaclab_arena/scripts/train_rsl_rl.py``: training; ``evaluation/rsl_rl_policy.py``: running a checkpoint.

Importing this package is cheap (no torch, no Isaac Lab).
"""

from __future__ import annotations


def agent_cfg_for(task_name: str):
    """See :func:`isaaclab_arena.rl.agents.agent_cfg_for`."""
    from isaaclab_arena.rl.agents import agent_cfg_for as _agent_cfg_for

    return _agent_cfg_for(task_name)


__all__ = ["agent_cfg_for"]

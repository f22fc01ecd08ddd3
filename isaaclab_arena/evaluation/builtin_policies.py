"""Built-in policies that need nothing but the env's sizes (``--policy_type zero_action``)."""

from __future__ import annotations

import torch

from isaaclab_arena.evaluation.policy import ArenaPolicy, EnvInfo


class ZeroActionPolicy(ArenaPolicy):
    """Every action zero: ``(num_envs, action_dim)`` float32 zeros on the env's device (a do-nothing baseline)."""

    def __init__(self, env, **settings):
        super().__init__(env, **settings)
        info = EnvInfo.of(env)
        self._zeros = torch.zeros(info.num_envs, info.action_dim, device=info.device)

    def get_action(self, env, observations) -> torch.Tensor:
        return self._zeros

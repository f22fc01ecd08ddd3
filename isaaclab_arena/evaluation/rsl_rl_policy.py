"""``RslRlPolicy``: runs the actor of a checkpoint saved by rsl_rl's ``OnPolicyRunner`` (``--policy_type rsl_rl``).

    scripts/arena_python.sh isaaclab_arena/evaluation/policy_runner.py --policy_type rsl_rl \\
        --checkpoint_path outputs/rsl_rl/franka_table_pick_and_place/model_299.pt --num_episodes 32 \\
        franka_table_pick_and_place

The checkpoint is read with ``torch.load(weights_only=True)`` (tensors and plain containers only; nothing is
unpickled). The actor (rsl_rl's ``MLPModel``: observation normaliser when the checkpoint has one, MLP, Gaussian
head) is rebuilt from the env's dimensions (:class:`~isaaclab_arena.evaluation.policy.EnvInfo`: the actor's
observation groups and ``action_dim``), the layer sizes stored in the checkpoint and the task's agent config
(``isaaclab_arena.rl.agents``: activation, observation groups, action clipping); so it runs with a live env or
with an ``EnvInfo`` on a policy server. Actions are the Gaussian's mean (deterministic, inference mode),
clipped like training clipped them (the agent config's ``clip_actions``), float32 on the env's device.
"""

from __future__ import annotations

import os
import re

import torch

from isaaclab_arena.evaluation.policy import EnvInfo, PolicyError

#: What a checkpoint's actor is built with when no task is named (the defaults of ``isaaclab_arena.rl.agents``).
DEFAULT_ACTOR = {"activation": "elu", "obs_groups": ["policy"], "clip_actions": 1.0}


def _actor_settings(task: str | None) -> dict:
    if task is None:
        return dict(DEFAULT_ACTOR)
    from isaaclab_arena.rl.agents import AGENT_CFGS, agent_cfg_for

    if task not in AGENT_CFGS:
        raise PolicyError(f"rsl_rl policy: no agent config for task '{task}'; known: {', '.join(sorted(AGENT_CFGS))}")
    cfg = agent_cfg_for(task)
    return {"activation": cfg.actor.activation, "obs_groups": list(cfg.obs_groups.get("actor", ["policy"])),
            "clip_actions": cfg.clip_actions}


def load_actor_state(path) -> dict:
    """The ``actor_state_dict`` of an rsl_rl checkpoint at ``path`` (loaded with ``weights_only=True`` on the
    CPU); a missing file, a file torch cannot read safely or one without an actor raise :class:`PolicyError`."""
    if not path:
        raise PolicyError("rsl_rl policy: give the checkpoint with --checkpoint_path <model_N.pt> (policy setting "
                          "checkpoint_path)")
    path = os.path.abspath(os.path.expanduser(str(path)))
    if not os.path.isfile(path):
        raise PolicyError(f"rsl_rl policy: checkpoint {path}: no such file")
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - any unreadable file is the same refusal
        raise PolicyError(f"rsl_rl policy: {path} is not an rsl_rl checkpoint (torch.load with weights_only=True "
                          f"refused it: {type(err).__name__}); give a model_<it>.pt written by train_rsl_rl.py") from None
    state = data.get("actor_state_dict") if isinstance(data, dict) else None
    if not isinstance(state, dict) or not any(re.fullmatch(r"mlp\.\d+\.weight", k) for k in state):
        raise PolicyError(f"rsl_rl policy: {path} is not an rsl_rl OnPolicyRunner checkpoint (no actor_state_dict "
                          "with MLP layers)")
    return state


def mlp_layers(state: dict) -> list[tuple[int, torch.Tensor, torch.Tensor]]:
    """``[(index, weight, bias)]`` of the actor's linear layers, in order."""
    idx = sorted(int(m.group(1)) for k in state if (m := re.fullmatch(r"mlp\.(\d+)\.weight", k)))
    return [(i, state[f"mlp.{i}.weight"], state[f"mlp.{i}.bias"]) for i in idx]


class RslRlPolicy:
    """The deterministic actor of an rsl_rl checkpoint (see the module docstring).

    Args:
        env: The gym env or an :class:`EnvInfo` (dimensions and device only are read).
        checkpoint_path: ``model_<it>.pt`` written by ``OnPolicyRunner`` (``train_rsl_rl.py``).
        task: Registered environment whose agent config built the actor (activation, observation groups, action
            clipping); None: ``franka_table_pick_and_place``'s defaults (ELU, group ``policy``, clip 1.0).
    """

    def __init__(self, env, checkpoint_path: str | None = None, task: str | None = None):
        from rsl_rl.models import MLPModel
        from tensordict import TensorDict

        self.env_info = info = EnvInfo.of(env)
        settings = _actor_settings(task)
        state = load_actor_state(checkpoint_path)
        self.checkpoint_path = os.path.abspath(str(checkpoint_path))
        groups = settings["obs_groups"]
        missing = [g for g in groups if g not in info.observation_shapes]
        if missing:
            raise PolicyError(f"rsl_rl policy: the env has no observation group '{missing[0]}' (groups: "
                              f"{sorted(info.observation_shapes)})")
        obs_dim = sum(int(info.observation_shapes[g][-1]) for g in groups)
        layers = mlp_layers(state)
        ckpt_obs, ckpt_act = int(layers[0][1].shape[1]), int(layers[-1][1].shape[0])
        if ckpt_obs != obs_dim or ckpt_act != info.action_dim:
            raise PolicyError(f"rsl_rl policy: checkpoint {self.checkpoint_path} has {ckpt_obs} observations and "
                              f"{ckpt_act} actions; the env has {obs_dim} observations (groups {groups}) and "
                              f"{info.action_dim} actions")
        hidden = [int(w.shape[0]) for _, w, _ in layers[:-1]]
        if "distribution.std_param" in state:
            dist = {"class_name": "GaussianDistribution", "init_std": 1.0, "std_type": "scalar"}
        elif "distribution.log_std_param" in state:
            dist = {"class_name": "GaussianDistribution", "init_std": 1.0, "std_type": "log"}
        else:
            dist = None
        example = TensorDict({g: torch.zeros(1, int(info.observation_shapes[g][-1])) for g in groups}, batch_size=[1])
        self.groups = groups
        self.clip = settings["clip_actions"]
        try:
            model = MLPModel(example, {"actor": groups}, "actor", info.action_dim, hidden_dims=hidden,
                             activation=settings["activation"], obs_normalization="obs_normalizer._mean" in state,
                             distribution_cfg=dist)
            model.load_state_dict(state, strict=True)
        except (RuntimeError, ValueError, KeyError) as err:
            raise PolicyError(f"rsl_rl policy: checkpoint {self.checkpoint_path} does not fit an MLP actor with "
                              f"hidden sizes {hidden}: {str(err).splitlines()[0][:300]}") from None
        self.model = model.to(info.device).eval()
        self.device = torch.device(info.device)

    def reset(self, env_ids: torch.Tensor | None = None) -> None:
        """The actor is feed-forward: nothing to reset."""

    @torch.inference_mode()
    def actions_from(self, obs: torch.Tensor | dict) -> torch.Tensor:
        """(N, action_dim) float32 mean actions for observations (``{group: (N, dim)}`` or the group tensor)."""
        from tensordict import TensorDict

        if isinstance(obs, torch.Tensor):
            obs = {self.groups[0]: obs}
        n = next(iter(obs.values())).shape[0]
        td = TensorDict({g: obs[g].to(self.device, torch.float32) for g in self.groups}, batch_size=[n])
        out = self.model(td)
        if self.clip is not None:
            out = torch.clamp(out, -self.clip, self.clip)
        return out.to(torch.float32)

    def get_action(self, env, observations) -> torch.Tensor:
        """(num_envs, action_dim) float32 actions on the env's device (the actor's mean)."""
        missing = [g for g in self.groups if g not in observations]
        if missing:
            raise PolicyError(f"rsl_rl policy: observations have no group '{missing[0]}' (got {sorted(observations)})")
        return self.actions_from(observations).clone()


__all__ = ["DEFAULT_ACTOR", "RslRlPolicy", "load_actor_state", "mlp_layers"]

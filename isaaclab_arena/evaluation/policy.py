"""The policy protocol of the Arena runners, the built-in policies' names, and the loading of plugin policies.

A policy is any class with this shape (subclassing :class:`ArenaPolicy` is optional)::

    class MyPolicy:
        def __init__(self, env, **settings): ...
        def reset(self, env_ids: torch.Tensor | None = None) -> None: ...
        def get_action(self, env, observations) -> torch.Tensor: ...

* ``__init__(env, **settings)``: ``env`` is the running gym env when the policy runs in the runner's process, or
  an :class:`EnvInfo` (``num_envs``, ``action_dim``, ``device``, ``observation_shapes``, ``step_dt``) when it is
  served by ``policy_server.py`` in another process; :meth:`EnvInfo.of` gives the same description in both cases,
  so a policy that only needs observations runs in both places. ``settings`` are the policy's own keyword
  settings (``--policy_arg key=value``, an experiment's ``policy.settings``; ``checkpoint_path`` when
  ``--checkpoint_path`` is given).
* ``reset(env_ids)``: the envs in ``env_ids`` (a 1-D int64 tensor; None: all) start new episodes.
* ``get_action(env, observations)``: ``observations`` is what the env returned (``{"policy": (num_envs, obs_dim)
  tensor, ...}``); returns a ``(num_envs, action_dim)`` ``torch.float32`` tensor on the env's device. Anything
  else is refused by :func:`check_action` with one line naming the expected and the received shape, dtype and
  device.

``--policy_type`` takes a built-in name (:data:`BUILTIN_POLICIES`) or a dotted class path
``package.module.Class`` (also ``package.module:Class``), imported from the working directory or the
environment (:func:`load_policy_class`).
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from dataclasses import dataclass, field

import torch

#: Built-in policy names -> ``module:Class`` (imported only when chosen).
BUILTIN_POLICIES = {
    "zero_action": "isaaclab_arena.evaluation.builtin_policies:ZeroActionPolicy",
    "scripted_pick_and_place": "isaaclab_arena.evaluation.scripted_pick_and_place:ScriptedPickAndPlacePolicy",
    "rsl_rl": "isaaclab_arena.evaluation.rsl_rl_policy:RslRlPolicy",
    "remote": "isaaclab_arena.evaluation.remote_policy:RemotePolicy",
}


class PolicyError(ValueError):
    """A policy cannot be loaded or returned something the env cannot take (one line; the runners exit 2)."""


@dataclass(frozen=True)
class EnvInfo:
    """What a policy may know about the env without holding it (the same locally and on a policy server).

    Attributes:
        num_envs: Parallel envs (rows of observations and actions).
        action_dim: Columns of the action tensor.
        device: Torch device of observations and actions (``"cpu"``, ``"cuda:0"``).
        observation_shapes: ``{group: shape}`` of the observation tensors, rows included (``(num_envs, 39)``).
        step_dt: Env step duration, seconds.
    """

    num_envs: int
    action_dim: int
    device: str = "cpu"
    observation_shapes: dict = field(default_factory=dict)
    step_dt: float = 0.0

    @staticmethod
    def of(env) -> "EnvInfo":
        """The description of a gym env, a ``ManagerBasedRLEnv`` or an ``EnvInfo`` (returned as is)."""
        if isinstance(env, EnvInfo):
            return env
        u = getattr(env, "unwrapped", env)
        shapes = {}
        manager = getattr(u, "observation_manager", None)
        if manager is not None:
            for group, shape in manager.group_obs_dim.items():
                dims = tuple(shape) if isinstance(shape, (tuple, list)) and all(isinstance(d, int) for d in shape) \
                    else None
                if dims is not None:
                    shapes[group] = (int(u.num_envs), *dims)
        return EnvInfo(num_envs=int(u.num_envs), action_dim=int(u.action_manager.total_action_dim),
                       device=str(u.device), observation_shapes=shapes, step_dt=float(u.step_dt))


class ArenaPolicy:
    """Optional base class of policies (see the module docstring for the protocol)."""

    def __init__(self, env, **settings):
        if settings:
            raise PolicyError(f"{type(self).__name__} takes no settings, got {sorted(settings)}")
        self.env_info = EnvInfo.of(env)

    def reset(self, env_ids: torch.Tensor | None = None) -> None:
        """The envs ``env_ids`` start new episodes (None: all)."""

    def get_action(self, env, observations) -> torch.Tensor:
        raise NotImplementedError


def policy_name(policy_type: str) -> str:
    """The name a policy has in records: the built-in name or the dotted class path as given."""
    return policy_type


def load_policy_class(policy_type: str):
    """The class ``policy_type`` names: a built-in name or ``package.module.Class`` / ``package.module:Class``.

    Modules are imported from the working directory first, then the environment. Raises :class:`PolicyError`
    (one line) when the name does not import or is not a class with ``get_action`` and ``reset``.
    """
    if not isinstance(policy_type, str) or not policy_type.strip():
        raise PolicyError(f"--policy_type must be a built-in policy ({', '.join(BUILTIN_POLICIES)}) or a dotted class "
                          f"path package.module.Class, got {policy_type!r}")
    target = BUILTIN_POLICIES.get(policy_type, policy_type)
    if ":" in target:
        module_name, _, attr = target.partition(":")
    elif "." in target:
        module_name, _, attr = target.rpartition(".")
    else:
        raise PolicyError(f"--policy_type {policy_type!r}: not a built-in policy ({', '.join(BUILTIN_POLICIES)}) and "
                          "not a dotted class path package.module.Class")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)  # a policy module in the working directory, as the docs promise
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise PolicyError(f"--policy_type {policy_type!r}: module '{module_name}' does not import ({err}); give "
                          f"package.module.Class importable from {cwd} or the environment, or a built-in "
                          f"({', '.join(BUILTIN_POLICIES)})") from None
    cls = getattr(module, attr, None)
    if cls is None:
        raise PolicyError(f"--policy_type {policy_type!r}: module '{module_name}' has no attribute '{attr}'")
    if not inspect.isclass(cls) or not callable(getattr(cls, "get_action", None)) \
            or not callable(getattr(cls, "reset", None)):
        raise PolicyError(f"--policy_type {policy_type!r}: '{attr}' is not a policy class (a class with "
                          "get_action(env, observations) and reset(env_ids); see docs/EVALUATION.md)")
    return cls


def make_policy(policy_type: str, env, settings: dict | None = None):
    """Loads ``policy_type`` and constructs it with ``(env, **settings)``; a constructor that refuses the
    settings is reported in one line naming the policy."""
    cls = load_policy_class(policy_type)
    settings = dict(settings or {})
    try:
        return cls(env, **settings)
    except TypeError as err:
        if "argument" in str(err):  # unexpected / missing keyword of the constructor
            raise PolicyError(f"--policy_type {policy_type}: {err}; settings given: {sorted(settings) or 'none'} "
                              "(--policy_arg key=value, or the experiment's policy.settings)") from None
        raise


def check_action(action, info: EnvInfo, policy_type: str) -> torch.Tensor:
    """Returns ``action`` when it is a ``(num_envs, action_dim)`` float32 tensor on the env's device; else raises
    :class:`PolicyError` naming the expected and the received shape, dtype and device."""
    want = (info.num_envs, info.action_dim)
    if not isinstance(action, torch.Tensor):
        raise PolicyError(f"policy {policy_type}: get_action returned {type(action).__name__}; expected a "
                          f"torch.Tensor of shape {want} (num_envs, action_dim), float32, on {info.device}")
    got_dev = str(action.device)
    ok_dev = torch.device(got_dev) == torch.device(info.device)
    if tuple(action.shape) != want or action.dtype != torch.float32 or not ok_dev:
        raise PolicyError(f"policy {policy_type}: get_action returned shape {tuple(action.shape)} "
                          f"{str(action.dtype).replace('torch.', '')} on {got_dev}; expected shape {want} "
                          f"(num_envs, action_dim) float32 on {info.device}")
    return action


__all__ = ["ArenaPolicy", "BUILTIN_POLICIES", "EnvInfo", "PolicyError", "check_action", "load_policy_class",
           "make_policy"]

"""Reset event term writing root poses of placed objects into a running Isaac Lab env.

Poses handed to the term are **env-local** (metres, xyzw quaternion); the term adds ``env.scene.env_origins``
and writes world poses with the batched Isaac Lab 3.0 APIs (``write_root_pose_to_sim_index`` /
``write_root_velocity_to_sim_index``), zeroing root velocities. One call per scene entity covers every
resetting env: there is no per-env Python loop.

The pose source is pluggable: anything with ``object_names`` and ``poses_for_reset(env_ids) -> (n, k, 7)``.
Sources are registered under a string key (:func:`register_pose_source`) so the term's params stay plain data.
"""

from __future__ import annotations

import itertools
from typing import Protocol

import torch

from isaaclab.managers import ManagerTermBase

_POSE_SOURCES: dict[str, "PoseSource"] = {}
_KEYS = itertools.count()


class PoseSource(Protocol):
    """Supplies env-local root poses (x, y, z, qx, qy, qz, qw) for the envs being reset."""

    object_names: list[str]

    def poses_for_reset(self, env_ids: torch.Tensor) -> torch.Tensor:
        """Returns ``(len(env_ids), len(object_names), 7)`` env-local poses; may advance internal queues."""
        ...

    def peek(self, env_ids: torch.Tensor) -> torch.Tensor:
        """The poses the next reset of ``env_ids`` would get, without consuming anything."""
        ...


class FixedPoseSource:
    """The same env-local pose for an object at every reset (``initial_pose`` of fixed-pose objects).

    Args:
        object_names: Scene keys, in order.
        poses: ``(k, 7)`` (same in every env) or ``(num_envs, k, 7)`` env-local poses.
    """

    def __init__(self, object_names: list[str], poses: torch.Tensor):
        poses = torch.as_tensor(poses, dtype=torch.float32)
        if poses.ndim not in (2, 3) or poses.shape[-1] != 7 or poses.shape[-2] != len(object_names):
            raise ValueError(f"FixedPoseSource: poses must be (k, 7) or (num_envs, k, 7) for {len(object_names)} "
                             f"objects, got {tuple(poses.shape)}")
        self.object_names = list(object_names)
        self.poses = poses

    def poses_for_reset(self, env_ids: torch.Tensor) -> torch.Tensor:
        if self.poses.ndim == 2:
            return self.poses.to(env_ids.device).unsqueeze(0).expand(env_ids.shape[0], -1, -1)
        return self.poses.to(env_ids.device)[env_ids]

    def peek(self, env_ids: torch.Tensor) -> torch.Tensor:
        return self.poses_for_reset(env_ids)


class CombinedPoseSource:
    """Concatenates several sources along the object axis (e.g. fixed-pose objects plus solver-placed ones)."""

    def __init__(self, sources: list[PoseSource]):
        self.sources = list(sources)
        self.object_names = [n for s in self.sources for n in s.object_names]

    def poses_for_reset(self, env_ids: torch.Tensor) -> torch.Tensor:
        return torch.cat([s.poses_for_reset(env_ids).to(env_ids.device) for s in self.sources], dim=1)

    def peek(self, env_ids: torch.Tensor) -> torch.Tensor:
        return torch.cat([s.peek(env_ids).to(env_ids.device) for s in self.sources], dim=1)


def register_pose_source(source: PoseSource, key: str | None = None) -> str:
    """Stores ``source`` under a key for :class:`ArenaPoseResetTerm`; returns the key."""
    key = key or f"arena_pose_source_{next(_KEYS)}"
    _POSE_SOURCES[key] = source
    return key


def get_pose_source(key: str) -> PoseSource:
    try:
        return _POSE_SOURCES[key]
    except KeyError:
        raise KeyError(f"no pose source registered under '{key}'; known: {sorted(_POSE_SOURCES)}") from None


def unregister_pose_source(key: str) -> None:
    _POSE_SOURCES.pop(key, None)


def env_ids_to_tensor(env_ids, num_envs: int, device) -> torch.Tensor:
    """Event terms may get a ``slice`` (Isaac Lab 3.0) or an index tensor; returns int64 indices on ``device``."""
    if env_ids is None:
        env_ids = slice(None)
    if isinstance(env_ids, slice):
        return torch.arange(num_envs, device=device, dtype=torch.long)[env_ids]
    return torch.as_tensor(env_ids, device=device).to(torch.long).reshape(-1)


def _is_kinematic(asset) -> bool:
    spawn = getattr(getattr(asset, "cfg", None), "spawn", None)
    cfgs = list(getattr(spawn, "assets_cfg", None) or [spawn])
    for c in cfgs:
        props = getattr(c, "rigid_props", None)
        if props is not None and getattr(props, "kinematic_enabled", False):
            return True
    return False


class ArenaPoseResetTerm(ManagerTermBase):
    """Isaac Lab reset event term (``EventTermCfg(func=ArenaPoseResetTerm, mode="reset", params={"source_key": k})``).

    Writes each object's root pose (env-local pose + env origin) and a zero root velocity for the resetting
    envs, batched over envs.
    """

    def __init__(self, cfg, env):
        super().__init__(cfg, env)
        self.source = get_pose_source(cfg.params["source_key"])
        self.assets = [env.scene[name] for name in self.source.object_names]
        # Kinematic bodies take poses but no velocities (PhysX rejects velocity writes on them).
        self.dynamic = [not _is_kinematic(a) for a in self.assets]
        self._zero_vel = torch.zeros(env.num_envs, 6, device=env.device)
        self.last_env_ids: torch.Tensor | None = None

    def __call__(self, env, env_ids, source_key: str):
        ids = env_ids_to_tensor(env_ids, env.num_envs, env.device)
        n = ids.shape[0]
        if n == 0 or not self.assets:
            return
        poses = self.source.poses_for_reset(ids).to(env.device, torch.float32)
        world = poses.clone()
        world[..., :3] += env.scene.env_origins[ids].unsqueeze(1)
        vel = self._zero_vel[:n]
        for j, asset in enumerate(self.assets):
            asset.write_root_pose_to_sim_index(root_pose=world[:, j].contiguous(), env_ids=ids)
            if self.dynamic[j]:
                asset.write_root_velocity_to_sim_index(root_velocity=vel, env_ids=ids)
        self.last_env_ids = ids

"""Reset event term writing root poses of placed objects into a running Isaac Lab env.

Poses handed to the term are **env-local** (metres, xyzw quaternion); the term adds ``env.scene.env_origins``
and writes world poses, zeroing root velocities, batched over the resetting envs (no per-env Python loop).
On OV PhysX (CPU) one PhysX tensor binding spans the roots of every written object, so a reset is two indexed
writes whatever the object count (:mod:`isaaclab_arena.environments.ovphysx_root_writer`); elsewhere, or with
``batched_writes=False``, it calls the public ``write_root_pose_to_sim_index`` /
``write_root_velocity_to_sim_index`` once per object (:class:`PerAssetRootWriter`).

The pose source is a term parameter: anything with ``object_names`` and ``poses_for_reset(env_ids) -> (n, k, 7)``
(:class:`PoseSource`), wrapped in :class:`PoseSourceRef` so Isaac Lab's config copies hand the term the live
source rather than a copy (:func:`arena_pose_reset_term_cfg` builds the term config).
"""

from __future__ import annotations

from typing import Protocol

import torch

from isaaclab.managers import EventTermCfg, ManagerTermBase

from isaaclab_arena.environments.ovphysx_root_writer import make_batched_root_writer


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

    def fallback_mask(self) -> torch.Tensor | None:
        """(num_envs,) bool of the sources that can hold fallbacks (pooled placement), OR-ed; None when none can."""
        masks = [s.fallback_mask() for s in self.sources if callable(getattr(s, "fallback_mask", None))]
        masks = [m for m in masks if m is not None]
        if not masks:
            return None
        out = masks[0].clone()
        for m in masks[1:]:
            out |= m.to(out.device)
        return out


class PoseSourceRef:
    """A term parameter that carries a live :class:`PoseSource` by reference.

    Isaac Lab copies term configs deeply (``configclass`` construction, ``ManagerBase.__init__``); a pose source
    holds live state (the pooled placer's queues, the replay cursor) that must stay the one the builder and the
    caller see, so copying this wrapper returns the wrapper itself. It has no ``__dict__``, so config walkers
    (``validate``, ``to_dict``) do not descend into the source.
    """

    __slots__ = ("source",)

    def __init__(self, source: PoseSource):
        if not hasattr(source, "object_names") or not callable(getattr(source, "poses_for_reset", None)):
            raise TypeError(f"PoseSourceRef needs a pose source (object_names, poses_for_reset(env_ids)), "
                            f"got {source!r}")
        self.source = source

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __repr__(self) -> str:
        return f"PoseSourceRef({type(self.source).__name__} of {list(self.source.object_names)})"


#: ``env.extras`` key of the (num_envs,) bool tensor saying which envs were last reset into a best-loss fallback
#: layout (one that fails a required placement check; ``ObjectPlacerParams.allow_best_loss_fallbacks``), updated by
#: every reset of a pooled-placement env, so that training and evaluation code can tell those layouts apart.
FALLBACK_EXTRAS_KEY = "placement_fallback"


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


class PerAssetRootWriter:
    """Writes root poses / zero velocities with Isaac Lab's public batched APIs, one call per asset
    (``write_root_pose_to_sim_index`` / ``write_root_velocity_to_sim_index``); works on every backend."""

    name = "per_asset"

    def __init__(self, assets, dynamic: list[bool], num_envs: int, device):
        self.assets, self.dynamic = assets, dynamic
        self._zero_vel = torch.zeros(num_envs, 6, device=device)

    def write(self, ids: torch.Tensor, world: torch.Tensor) -> None:
        vel = self._zero_vel[: ids.shape[0]]
        for j, asset in enumerate(self.assets):
            asset.write_root_pose_to_sim_index(root_pose=world[:, j].contiguous(), env_ids=ids)
            if self.dynamic[j]:
                asset.write_root_velocity_to_sim_index(root_velocity=vel, env_ids=ids)


class ArenaPoseResetTerm(ManagerTermBase):
    """Isaac Lab reset event term: writes each object's root pose (env-local pose + env origin) and a zero root
    velocity for the resetting envs, batched over envs.

    Params (see :func:`arena_pose_reset_term_cfg`): ``pose_source`` (a :class:`PoseSourceRef`), bound at
    construction (the written assets and the writer's bindings follow its ``object_names``);
    ``batched_writes`` (default True) allows the OV PhysX batched writer. A source that can hand out best-loss
    fallbacks (pooled placement) has its mask put in ``env.extras[FALLBACK_EXTRAS_KEY]`` after each reset.

    Attributes:
        source: The pose source the term draws from.
        writer: The root writer in use (``writer.name``: ``ovphysx_batched`` or ``per_asset``).
    """

    def __init__(self, cfg, env):
        super().__init__(cfg, env)
        ref = cfg.params.get("pose_source")
        if not isinstance(ref, PoseSourceRef):
            raise TypeError(f"ArenaPoseResetTerm: params['pose_source'] must be a PoseSourceRef (the live source, kept "
                            f"through Isaac Lab's config copies), got {type(ref).__name__}; "
                            f"use arena_pose_reset_term_cfg(source)")
        self.source = ref.source
        self.assets = [env.scene[name] for name in self.source.object_names]
        # Kinematic bodies take poses but no velocities (PhysX rejects velocity writes on them).
        self.dynamic = [not _is_kinematic(a) for a in self.assets]
        self.writer = None
        if cfg.params.get("batched_writes", True) and str(env.device) == "cpu":
            self.writer = make_batched_root_writer(env, self.assets, self.dynamic)
        if self.writer is None:
            self.writer = PerAssetRootWriter(self.assets, self.dynamic, env.num_envs, env.device)
        members = list(cfg.params.get("pool_members") or ())
        self.parking = None  # object pools: parked members out of the simulation (environments/object_pools.py)
        if members:
            from isaaclab_arena.environments.object_pools import PoolParking

            self.parking = PoolParking(env, self.assets, list(self.source.object_names), members)

    def __call__(self, env, env_ids, pose_source: PoseSourceRef, batched_writes: bool = True,
                 pool_members: tuple = ()):
        ids = env_ids_to_tensor(env_ids, env.num_envs, env.device)
        if ids.shape[0] == 0 or not self.assets:
            return
        poses = self.source.poses_for_reset(ids).to(env.device, torch.float32)
        if self.parking is not None:
            self.parking.prepare(ids)
        world = poses.clone()
        world[..., :3] += env.scene.env_origins[ids].unsqueeze(1)
        self.writer.write(ids, world)
        if self.parking is not None:
            self.parking.apply(env, ids, poses, world)
        mask = getattr(self.source, "fallback_mask", None)
        mask = mask() if callable(mask) else None
        if mask is not None:  # which envs now hold a best-loss fallback layout (FALLBACK_EXTRAS_KEY)
            env.extras[FALLBACK_EXTRAS_KEY] = mask.to(env.device).clone()


def arena_pose_reset_term_cfg(source: PoseSource, batched_writes: bool = True, pool_members=()) -> EventTermCfg:
    """The reset event term config drawing poses from ``source`` (``EventTermCfg(mode="reset")``);
    ``pool_members``: scene keys of object-pool members (their parked poses take them out of the simulation)."""
    return EventTermCfg(func=ArenaPoseResetTerm, mode="reset",
                        params={"pose_source": PoseSourceRef(source), "batched_writes": batched_writes,
                                "pool_members": tuple(pool_members)})

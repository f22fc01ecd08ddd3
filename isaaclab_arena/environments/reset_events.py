"""Reset event term writing root poses of placed objects into a running Isaac Lab env.

Poses handed to the term are **env-local** (metres, xyzw quaternion); the term adds ``env.scene.env_origins``
and writes world poses with the batched Isaac Lab 3.0 APIs (``write_root_pose_to_sim_index`` /
``write_root_velocity_to_sim_index``), zeroing root velocities: one call per scene entity covers every
resetting env, there is no per-env Python loop. On OV PhysX (CPU) one PhysX tensor binding spans the roots
of every written object, so a reset is two indexed writes whatever the object count
(:class:`OvPhysxBatchedRootWriter`; ``params["batched_writes"]=False`` selects the per-asset API).

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


class OvPhysxBatchedRootWriter:
    """OV PhysX fast path: one PhysX tensor binding over the roots of *all* written objects, so a reset
    is one indexed pose write and one indexed velocity write whatever the object count.

    Binding rows are object-major (row ``j * num_envs + env``; Isaac Lab's own bindings use the env id as
    the simulator index). After writing, each asset's cached root pose / velocity buffers are updated the
    way Isaac Lab's own ``write_root_*_to_sim_index`` does (cached rows set, derived buffers invalidated,
    body accelerations zeroed), so ``asset.data`` stays consistent. Built by :meth:`try_create`, which
    returns None on any other backend (the term then uses :class:`PerAssetRootWriter`).
    """

    name = "ovphysx_batched"

    def __init__(self, physx, scene, assets, dynamic: list[bool], num_envs: int, device):
        import isaaclab_ov.tensor_types as TT

        self.assets, self.dynamic, self.num_envs = assets, dynamic, num_envs
        paths = [self._env_paths(scene, a) for a in assets]
        self.pose_binding = physx.create_tensor_binding(prim_paths=[p for ps in paths for p in ps],
                                                        tensor_type=TT.RIGID_BODY_POSE, raise_if_empty=True)
        dyn_paths = [p for ps, d in zip(paths, dynamic) if d for p in ps]
        self.vel_binding = (physx.create_tensor_binding(prim_paths=dyn_paths, tensor_type=TT.RIGID_BODY_VELOCITY,
                                                        raise_if_empty=True) if dyn_paths else None)
        n, nd = len(assets), sum(dynamic)
        if tuple(self.pose_binding.shape) != (n * num_envs, 7):
            raise RuntimeError(f"pose binding shape {tuple(self.pose_binding.shape)} != ({n * num_envs}, 7)")
        self.pose_buf = torch.zeros(n * num_envs, 7, dtype=torch.float32, device=device)
        self.pose_buf[:, 6] = 1.0
        self.vel_buf = torch.zeros(nd * num_envs, 6, dtype=torch.float32, device=device)
        self._obj = torch.arange(n, dtype=torch.long, device=device)
        self._dyn_obj = torch.arange(nd, dtype=torch.long, device=device)
        import warp as wp

        self._pose_cache = [wp.to_torch(a.data._root_link_pose_w.data) for a in assets]
        self._vel_cache = [wp.to_torch(a.data._root_com_vel_w.data) if d else None for a, d in zip(assets, dynamic)]
        self._acc_cache = [wp.to_torch(a.data._body_com_acc_w.data) if d and hasattr(a.data, "_body_com_acc_w")
                           else None for a, d in zip(assets, dynamic)]

    @staticmethod
    def _env_paths(scene, asset) -> list[str]:
        """The asset's root prim in every env, in env order (``{ENV_REGEX_NS}/<name>`` resolved)."""
        ns, path = scene.env_regex_ns, asset.cfg.prim_path
        rel = path[len(ns):] if path.startswith(ns) else None
        if rel is None or any(c in rel for c in "*[]()|^$+?"):
            raise RuntimeError(f"prim path {path!r} is not a plain path under {ns!r}")
        return [f"{p}{rel}" for p in scene.env_prim_paths]

    @classmethod
    def try_create(cls, env, assets, dynamic: list[bool]):
        """The fast writer when every asset is an OV PhysX rigid object on the CPU or a GPU, else None."""
        try:
            if not assets or any(type(a).__module__.split(".")[0] != "isaaclab_ov" for a in assets):
                return None
            physx = assets[0]._root_view._physx
            return cls(physx, env.scene, assets, dynamic, env.num_envs, env.device)
        except Exception as err:  # any internal mismatch: fall back to the public per-asset API
            import logging

            logging.getLogger(__name__).info(f"OV PhysX batched root writes unavailable ({err}); writing per asset")
            return None

    def write(self, ids: torch.Tensor, world: torch.Tensor) -> None:
        from isaaclab_ov.physics import OvPhysxManager

        N = self.num_envs
        ids = ids.to(self.pose_buf.device, torch.long)
        rows = (self._obj.unsqueeze(1) * N + ids.unsqueeze(0)).reshape(-1)      # object-major
        self.pose_buf[rows] = world.to(self.pose_buf.device, torch.float32).transpose(0, 1).reshape(-1, 7)
        self.pose_binding.write(self.pose_buf, indices=rows.to(torch.int32))
        if self.vel_binding is not None:
            vrows = (self._dyn_obj.unsqueeze(1) * N + ids.unsqueeze(0)).reshape(-1)
            self.vel_binding.write(self.vel_buf, indices=vrows.to(torch.int32))
        ids_dev = ids.to(self._pose_cache[0].device)
        for j, asset in enumerate(self.assets):
            self._pose_cache[j][ids_dev] = world[:, j].to(self._pose_cache[j].device)
            asset.data._reset_pose()
            if self.dynamic[j]:
                self._vel_cache[j][ids_dev] = 0.0
                if self._acc_cache[j] is not None:
                    self._acc_cache[j][ids_dev] = 0.0
                asset.data._reset_velocity()
        OvPhysxManager._scene_data_backend.transforms_timestamp += 1


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
        self.writer = None
        if cfg.params.get("batched_writes", True) and str(env.device) == "cpu":
            self.writer = OvPhysxBatchedRootWriter.try_create(env, self.assets, self.dynamic)
        if self.writer is None:
            self.writer = PerAssetRootWriter(self.assets, self.dynamic, env.num_envs, env.device)
        self.last_env_ids: torch.Tensor | None = None

    def __call__(self, env, env_ids, source_key: str, batched_writes: bool = True):
        ids = env_ids_to_tensor(env_ids, env.num_envs, env.device)
        n = ids.shape[0]
        if n == 0 or not self.assets:
            return
        poses = self.source.poses_for_reset(ids).to(env.device, torch.float32)
        world = poses.clone()
        world[..., :3] += env.scene.env_origins[ids].unsqueeze(1)
        self.writer.write(ids, world)
        self.last_env_ids = ids

"""OV PhysX fast path for the reset term: one PhysX tensor binding over the roots of every written object.

A reset is then one indexed pose write and one indexed velocity write whatever the object count. The writer
uses Isaac Lab internals that are not public API: the asset's root view's PhysX instance, the cached data
buffers ``_root_link_pose_w`` / ``_root_com_vel_w`` / ``_body_com_acc_w`` with their ``_reset_pose()`` /
``_reset_velocity()`` invalidation, and ``OvPhysxManager._scene_data_backend.transforms_timestamp``. These were
checked against the Isaac Lab versions in :data:`VERIFIED_VERSIONS` only. On any other installed version, or
when building the bindings fails, :func:`make_batched_root_writer` returns None (the reset term then writes
with the public per-asset API) and says so once per reason with a ``RuntimeWarning`` naming the reason and the
installed versions.

Poses handed to :meth:`OvPhysxBatchedRootWriter.write` are **world** poses (metres, xyzw quaternion).
"""

from __future__ import annotations

import importlib.metadata
import warnings

import torch

#: Distribution -> versions (prefixes of the installed version string) the private writes were verified on.
#: ``isaaclab_ov`` ships inside the ``isaaclab`` distribution; ``ovphysx`` provides the tensor bindings.
VERIFIED_VERSIONS: dict[str, tuple[str, ...]] = {"isaaclab": ("3.0.0",), "ovphysx": ("0.6.4",)}

_said: set[str] = set()


def installed_versions() -> dict[str, str]:
    """Installed version of each distribution of :data:`VERIFIED_VERSIONS` (``"missing"`` when absent)."""
    out = {}
    for dist in VERIFIED_VERSIONS:
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "missing"
    return out


def version_mismatch(versions: dict[str, str] | None = None) -> str | None:
    """Why the installed versions are not the verified ones (one line), or None when they are."""
    versions = installed_versions() if versions is None else versions
    bad = [f"{d} {versions.get(d, 'missing')} (verified: {', '.join(ok)})" for d, ok in VERIFIED_VERSIONS.items()
           if not any(versions.get(d, "missing") == v or versions.get(d, "").startswith(v + ".") for v in ok)]
    return "; ".join(bad) or None


def warn_fallback(reason: str) -> None:
    """Says once per ``reason`` (a ``RuntimeWarning``) that resets use the public per-asset API."""
    if reason in _said:
        return
    _said.add(reason)
    v = installed_versions()
    warnings.warn(f"OV PhysX batched root writes disabled, resets write per asset with the public API: {reason} "
                  f"[installed isaaclab {v['isaaclab']}, ovphysx {v['ovphysx']}]", RuntimeWarning, stacklevel=3)


def make_batched_root_writer(env, assets, dynamic: list[bool], versions: dict[str, str] | None = None):
    """The batched writer when every asset is an OV PhysX rigid object, else None.

    Args:
        env: The Isaac Lab env (its ``scene``, ``num_envs`` and ``device``).
        assets: Scene rigid objects written by the reset term, in order.
        dynamic: Per asset, False for kinematic bodies (pose only, no velocity write).
        versions: Installed versions to check (default: :func:`installed_versions`).

    Returns None silently on other backends (the per-asset API is their normal path); on OV PhysX with
    unverified versions or a failure building the bindings, returns None after :func:`warn_fallback`.
    """
    if not assets or any(type(a).__module__.split(".")[0] != "isaaclab_ov" for a in assets):
        return None
    mismatch = version_mismatch(versions)
    if mismatch is not None:
        warn_fallback(f"unverified versions: {mismatch}")
        return None
    try:
        return OvPhysxBatchedRootWriter(env.scene, assets, dynamic, env.num_envs, env.device)
    except Exception as err:  # noqa: BLE001 - any internal mismatch: the public API is always correct
        warn_fallback(f"{type(err).__name__}: {err}")
        return None


def env_prim_paths(scene, asset) -> list[str]:
    """The asset's root prim in every env, in env order (``{ENV_REGEX_NS}/<name>`` resolved)."""
    ns, path = scene.env_regex_ns, asset.cfg.prim_path
    rel = path[len(ns):] if path.startswith(ns) else None
    if rel is None or any(c in rel for c in "*[]()|^$+?"):
        raise RuntimeError(f"prim path {path!r} is not a plain path under {ns!r}")
    return [f"{p}{rel}" for p in scene.env_prim_paths]


class OvPhysxBatchedRootWriter:
    """Root pose / zero-velocity writes for all objects through two PhysX tensor bindings.

    Binding rows are object-major (row ``j * num_envs + env``). After writing, each asset's cached root pose /
    velocity rows are set, its derived buffers invalidated and its body accelerations zeroed, as Isaac Lab's
    own ``write_root_pose_to_sim_index`` / ``write_root_velocity_to_sim_index`` do, so ``asset.data`` stays
    consistent with the simulator.

    Args:
        scene: The env's ``InteractiveScene``.
        assets: OV PhysX rigid objects, in order.
        dynamic: Per asset, False for kinematic bodies (no velocity binding row).
        num_envs: Number of envs.
        device: Torch device of the env.
    """

    name = "ovphysx_batched"

    def __init__(self, scene, assets, dynamic: list[bool], num_envs: int, device):
        import isaaclab_ov.tensor_types as TT
        import warp as wp
        from isaaclab_ov.physics import OvPhysxManager

        self.assets, self.dynamic, self.num_envs = list(assets), list(dynamic), num_envs
        self._manager = OvPhysxManager
        if not hasattr(OvPhysxManager._scene_data_backend, "transforms_timestamp"):
            raise RuntimeError("OvPhysxManager._scene_data_backend has no transforms_timestamp")
        physx = self.assets[0]._root_view._physx
        paths = [env_prim_paths(scene, a) for a in self.assets]
        self.pose_binding = physx.create_tensor_binding(prim_paths=[p for ps in paths for p in ps],
                                                        tensor_type=TT.RIGID_BODY_POSE, raise_if_empty=True)
        dyn_paths = [p for ps, d in zip(paths, self.dynamic) if d for p in ps]
        self.vel_binding = (physx.create_tensor_binding(prim_paths=dyn_paths, tensor_type=TT.RIGID_BODY_VELOCITY,
                                                        raise_if_empty=True) if dyn_paths else None)
        n, nd = len(self.assets), sum(self.dynamic)
        if tuple(self.pose_binding.shape) != (n * num_envs, 7):
            raise RuntimeError(f"pose binding shape {tuple(self.pose_binding.shape)} != ({n * num_envs}, 7)")
        self.pose_buf = torch.zeros(n * num_envs, 7, dtype=torch.float32, device=device)
        self.pose_buf[:, 6] = 1.0
        self.vel_buf = torch.zeros(nd * num_envs, 6, dtype=torch.float32, device=device)
        self._obj = torch.arange(n, dtype=torch.long, device=device)
        self._dyn_obj = torch.arange(nd, dtype=torch.long, device=device)
        self._pose_cache = [wp.to_torch(a.data._root_link_pose_w.data) for a in self.assets]
        self._vel_cache = [wp.to_torch(a.data._root_com_vel_w.data) if d else None
                           for a, d in zip(self.assets, self.dynamic)]
        self._acc_cache = [wp.to_torch(a.data._body_com_acc_w.data) if d and hasattr(a.data, "_body_com_acc_w")
                           else None for a, d in zip(self.assets, self.dynamic)]
        for a in self.assets:
            if not all(callable(getattr(a.data, m, None)) for m in ("_reset_pose", "_reset_velocity")):
                raise RuntimeError(f"{type(a.data).__name__} has no _reset_pose/_reset_velocity")

    def write(self, ids: torch.Tensor, world: torch.Tensor) -> None:
        """Writes ``world`` (len(ids), num_objects, 7) root poses and zero velocities for envs ``ids``."""
        N = self.num_envs
        ids = ids.to(self.pose_buf.device, torch.long)
        rows = (self._obj.unsqueeze(1) * N + ids.unsqueeze(0)).reshape(-1)  # object-major
        self.pose_buf[rows] = world.to(self.pose_buf.device, torch.float32).transpose(0, 1).reshape(-1, 7)
        self.pose_binding.write(self.pose_buf, indices=rows.to(torch.int32))
        if self.vel_binding is not None:
            vrows = (self._dyn_obj.unsqueeze(1) * N + ids.unsqueeze(0)).reshape(-1)
            self.vel_binding.write(self.vel_buf, indices=vrows.to(torch.int32))
        ids_dev = ids.to(self._pose_cache[0].device)
        for j, asset in enumerate(self.assets):  # per object (not per env): cache rows + invalidation
            self._pose_cache[j][ids_dev] = world[:, j].to(self._pose_cache[j].device)
            asset.data._reset_pose()
            if self.dynamic[j]:
                self._vel_cache[j][ids_dev] = 0.0
                if self._acc_cache[j] is not None:
                    self._acc_cache[j][ids_dev] = 0.0
                asset.data._reset_velocity()
        self._manager._scene_data_backend.transforms_timestamp += 1

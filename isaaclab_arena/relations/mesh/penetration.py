"""Batched sphere-set versus mesh queries for B candidates, on ``cpu`` or ``cuda:0`` (torch in, torch out).

``MeshPairQuery(cover, target, device)`` answers, for B candidate poses of a subject (its sphere cover) and
of a target (its mesh), the deepest penetration (the ``no_overlap`` verdict is ``depth <= 0``), the push
that separates them and the deepest sphere, one warp thread per candidate through the same ``@wp.func``
the solver calls (``sdf.sphere_set_penetration``). ``mesh_signed_distance`` queries points directly.
Poses are (B, 7) rows ``x, y, z, qx, qy, qz, qw`` in the env-local world frame (metres, xyzw); a (7,) or
(1, 7) target pose is shared by every candidate.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as np
import torch
import warp as wp

from isaaclab_arena.relations.mesh.geometry_tables import MeshGeometry, pack_mesh_tables
from isaaclab_arena.relations.mesh.logs import MESH_SDF, log_once
from isaaclab_arena.relations.mesh.sdf import MeshTables, mesh_sdf, sphere_set_penetration
from isaaclab_arena.relations.mesh.sphere_cover import SphereCover
from isaaclab_arena.relations.mesh.target_mesh import TargetMesh


@wp.kernel
def _pair_kernel(M: MeshTables, gs: int, gt: int, ps: wp.array(dtype=wp.vec3), qs: wp.array(dtype=wp.quat),
                 pt: wp.array(dtype=wp.vec3), qt: wp.array(dtype=wp.quat), t_stride: int, clearance: float,
                 stop_above: float, depth: wp.array(dtype=float), push: wp.array(dtype=wp.vec3), deepest: wp.array(dtype=int),
                 bad: wp.array(dtype=int)):
    b = wp.tid()
    j = b * t_stride
    d, p, k, ok = sphere_set_penetration(M, gs, ps[b], qs[b], gt, pt[j], qt[j], clearance, stop_above)
    depth[b] = d
    push[b] = p
    deepest[b] = -1
    if k >= 0:
        deepest[b] = k - M.sph_start[gs]
    if ok == 0:
        wp.atomic_add(bad, 0, 1)


@wp.kernel
def _sdf_kernel(M: MeshTables, pts: wp.array(dtype=wp.vec3), sd: wp.array(dtype=float),
                grad: wp.array(dtype=wp.vec3), bad: wp.array(dtype=int)):
    i = wp.tid()
    d, g, ok = mesh_sdf(M, 0, pts[i], M.reach[0])
    sd[i] = d
    grad[i] = g
    if ok == 0:
        wp.atomic_add(bad, 0, 1)


@dataclass
class Penetration:
    """Per candidate: ``depth`` (B,) metres (> 0 overlapping), ``push`` (B, 3) world, ``deepest`` (B,)."""

    depth: torch.Tensor
    push: torch.Tensor
    deepest: torch.Tensor


def _torch_stream(device: str):
    """Runs warp work on torch's current CUDA stream (ordered with the torch ops around it); no-op on CPU."""
    if device.startswith("cuda"):
        return wp.ScopedStream(wp.stream_from_torch(torch.cuda.current_stream(torch.device(device))))
    return contextlib.nullcontext()


def _device(device) -> str:
    return str(wp.get_device(str(device)))


def _split_poses(poses: torch.Tensor, name: str, device: str):
    poses = torch.as_tensor(poses, dtype=torch.float32, device=device)
    if poses.ndim == 1:
        poses = poses[None]
    if poses.ndim != 2 or poses.shape[1] != 7:
        raise ValueError(f"{name} must be (B, 7) rows x, y, z, qx, qy, qz, qw; got shape {tuple(poses.shape)}")
    pos = wp.from_torch(poses[:, :3].contiguous(), dtype=wp.vec3)
    quat = wp.from_torch(poses[:, 3:].contiguous(), dtype=wp.quat)
    return pos, quat, poses.shape[0]


class MeshPairQuery:
    """Sphere cover of a subject against the mesh of a target, for batches of candidate poses."""

    def __init__(self, cover: SphereCover, target: TargetMesh, device: str = "cpu"):
        self.device = _device(device)
        self.target = target
        self._handle = pack_mesh_tables([MeshGeometry("subject", cover, None), MeshGeometry(target.name, None, target)],
                                        np.full((1, 1), -1), self.device)

    def __call__(self, subject_pose, target_pose, clearance: float = 0.0, check: bool = True,
                 stop_above: float = 1.0e9) -> Penetration:
        """Penetration for each of B candidates (see the module docstring for the pose layout).

        ``stop_above``: a candidate stops at its first sphere deeper than this (``depth`` and ``push`` are
        then partial; ``depth > stop_above`` still holds). The default measures every sphere.
        ``check`` reads the unreliable-query counter back (a device sync on CUDA) and logs ``[MeshSDF]``
        once per target when any query found no closest point or a non-finite distance.
        """
        torch_device = torch.device(self.device)
        ps, qs, b = _split_poses(subject_pose, "subject_pose", torch_device)
        pt, qt, bt = _split_poses(target_pose, "target_pose", torch_device)
        if bt not in (1, b):
            raise ValueError(f"target_pose must have 1 or {b} rows (one per candidate), got {bt}")
        depth = torch.empty(b, dtype=torch.float32, device=torch_device)
        push = torch.empty((b, 3), dtype=torch.float32, device=torch_device)
        deepest = torch.empty(b, dtype=torch.int32, device=torch_device)
        bad = torch.zeros(1, dtype=torch.int32, device=torch_device)
        with _torch_stream(self.device):
            wp.launch(_pair_kernel, dim=b, device=self.device,
                      inputs=[self._handle.tables, 0, 1, ps, qs, pt, qt, 1 if bt == b else 0, float(clearance),
                              float(stop_above)],
                      outputs=[wp.from_torch(depth), wp.from_torch(push, dtype=wp.vec3), wp.from_torch(deepest),
                               wp.from_torch(bad)])
        if check and int(bad.item()) > 0:
            log_once(MESH_SDF, f"query:{self.target.name}", f"asset '{self.target.name}': {int(bad.item())} of {b} "
                     "candidates had a signed-distance query that found no closest point or gave a non-finite distance")
        return Penetration(depth, push, deepest.long())


def max_penetration(cover: SphereCover, target: TargetMesh, subject_pose, target_pose, clearance: float = 0.0,
                    device: str | None = None) -> Penetration:
    """One-off :class:`MeshPairQuery` on the device of ``subject_pose`` (or ``device``)."""
    dev = device or (str(subject_pose.device) if isinstance(subject_pose, torch.Tensor) else "cpu")
    return MeshPairQuery(cover, target, dev)(subject_pose, target_pose, clearance)


def mesh_signed_distance(target: TargetMesh, points, device: str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """(sd (N,), gradient (N, 3)) of points in the target's root frame: metres, negative inside."""
    dev = _device(device)
    pts = torch.as_tensor(points, dtype=torch.float32, device=torch.device(dev)).reshape(-1, 3).contiguous()
    n = pts.shape[0]
    sd = torch.empty(n, dtype=torch.float32, device=pts.device)
    grad = torch.empty((n, 3), dtype=torch.float32, device=pts.device)
    bad = torch.zeros(1, dtype=torch.int32, device=pts.device)
    if n:
        handle = pack_mesh_tables([MeshGeometry(target.name, None, target)], np.full((1, 1), -1), dev)
        with _torch_stream(dev):
            wp.launch(_sdf_kernel, dim=n, device=dev, inputs=[handle.tables, wp.from_torch(pts, dtype=wp.vec3)],
                      outputs=[wp.from_torch(sd), wp.from_torch(grad, dtype=wp.vec3), wp.from_torch(bad)])
        if int(bad.item()) > 0:
            log_once(MESH_SDF, f"query:{target.name}", f"asset '{target.name}': {int(bad.item())} of {n} points had a "
                     "signed-distance query that found no closest point or gave a non-finite distance")
    return sd, grad

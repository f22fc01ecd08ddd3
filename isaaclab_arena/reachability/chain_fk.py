"""Batched forward kinematics of a :class:`UrdfChain` in torch (any device, float32 or float64).

Used to measure the residuals of IK solutions after they are clamped to the joint limits, so a verdict
is about a configuration the robot can actually take.
"""

from __future__ import annotations

import numpy as np
import torch

from isaaclab_arena.reachability.urdf_chain import UrdfChain
from isaaclab_arena.utils.pose_math import matrix_from_quat as quat_xyzw_to_matrix  # noqa: F401 - the one home


class ChainFK:
    """Tool-frame pose in the chain's base frame for a batch of joint vectors.

    Args:
        chain: The serial chain.
        device: Torch device.
        dtype: Torch float type.
    """

    def __init__(self, chain: UrdfChain, device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32):
        self.chain = chain
        self.device, self.dtype = torch.device(device), dtype
        self._origins = torch.tensor(np.stack([j.origin for j in chain.joints]), device=self.device, dtype=dtype)
        self._axes = torch.tensor(np.stack([j.axis for j in chain.joints]), device=self.device, dtype=dtype)
        movable = [j.type in ("revolute", "prismatic", "continuous") for j in chain.joints]
        self._coord = np.cumsum(movable) - 1  # coordinate index of each movable joint
        self._kinds = [j.type for j in chain.joints]

    def forward(self, q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``q`` (N, n_coords) joint positions (rad or m) -> tool position (N, 3) m, rotation (N, 3, 3)."""
        position, rotation, _ = self._forward(q, jacobian=False)
        return position, rotation

    def forward_with_jacobian(self, q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """:meth:`forward` plus the geometric Jacobian (N, 6, n_coords) of the tool in the base frame: rows 0-2
        the tool origin's velocity (m per rad or m), rows 3-5 its angular velocity (rad per rad; base axes)."""
        return self._forward(q, jacobian=True)

    def _forward(self, q: torch.Tensor, jacobian: bool):
        q = q.to(self.device, self.dtype)
        n = q.shape[0]
        transform = torch.eye(4, device=self.device, dtype=self.dtype).expand(n, 4, 4)
        axes, origins, sliding = [], [], []
        for i, kind in enumerate(self._kinds):
            transform = transform @ self._origins[i]
            if kind == "fixed":
                continue
            if jacobian:  # the joint's axis and origin in the base frame (its own motion does not move them)
                axes.append(transform[:, :3, :3] @ self._axes[i])
                origins.append(transform[:, :3, 3])
                sliding.append(kind == "prismatic")
            motion = torch.eye(4, device=self.device, dtype=self.dtype).repeat(n, 1, 1)
            angle = q[:, self._coord[i]]
            axis = self._axes[i]
            if kind == "prismatic":
                motion[:, :3, 3] = angle[:, None] * axis
            else:
                motion[:, :3, :3] = axis_angle_matrix(axis, angle)
            transform = transform @ motion
        position, rotation = transform[:, :3, 3], transform[:, :3, :3]
        if not jacobian:
            return position, rotation, None
        axis = torch.stack(axes, -1)  # (N, 3, C)
        lever = position[:, :, None] - torch.stack(origins, -1)
        slide = torch.tensor(sliding, device=self.device)
        linear = torch.where(slide, axis, torch.linalg.cross(axis, lever, dim=1))
        angular = torch.where(slide, torch.zeros_like(axis), axis)
        return position, rotation, torch.cat([linear, angular], 1)


def axis_angle_matrix(axis: torch.Tensor, angle: torch.Tensor) -> torch.Tensor:
    """Rotation matrices (N, 3, 3) about the unit ``axis`` (3,) by ``angle`` (N,) radians (Rodrigues)."""
    x, y, z = axis[0], axis[1], axis[2]
    k = torch.stack([torch.stack([0 * x, -z, y]), torch.stack([z, 0 * x, -x]), torch.stack([-y, x, 0 * x])])
    s, c = torch.sin(angle)[:, None, None], torch.cos(angle)[:, None, None]
    eye = torch.eye(3, device=axis.device, dtype=axis.dtype)
    return eye + s * k + (1 - c) * (k @ k)


def matrix_to_quat_xyzw(m: torch.Tensor) -> torch.Tensor:
    """Rotation matrices (..., 3, 3) -> unit quaternions (..., 4) xyzw (Shepperd's method, batched).

    Each row uses the largest of the four squared components as pivot, so half-turns (w = 0, e.g. a tool
    pointing straight down) keep the relative signs of x, y, z.
    """
    m00, m11, m22 = m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]
    s21, s02, s10 = m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1]
    a10, a02, a21 = m[..., 1, 0] + m[..., 0, 1], m[..., 0, 2] + m[..., 2, 0], m[..., 2, 1] + m[..., 1, 2]
    four = torch.stack([1 + m00 + m11 + m22, 1 + m00 - m11 - m22, 1 - m00 + m11 - m22, 1 - m00 - m11 + m22], -1)
    pivot = four.argmax(-1, keepdim=True)
    r = torch.sqrt(torch.clamp(four.gather(-1, pivot)[..., 0], min=1e-12))  # 2 * |pivot component|
    candidates = torch.stack([
        torch.stack([s21, s02, s10, r * r], -1),  # pivot w; every row is (x, y, z, w) * 2r
        torch.stack([r * r, a10, a02, s21], -1),
        torch.stack([a10, r * r, a21, s02], -1),
        torch.stack([a02, a21, r * r, s10], -1),
    ], -2)
    q = candidates.gather(-2, pivot[..., None].expand(*pivot.shape[:-1], 1, 4))[..., 0, :] / (2 * r[..., None])
    q = q / q.norm(dim=-1, keepdim=True)
    return torch.where(q[..., 3:] < 0, -q, q)


def rotation_angle_between(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Angle (radians, [0, pi]) of the rotation taking ``a`` to ``b``; both (..., 3, 3)."""
    cos = ((a.transpose(-1, -2) @ b).diagonal(dim1=-2, dim2=-1).sum(-1) - 1) * 0.5
    return torch.arccos(torch.clamp(cos, -1.0, 1.0))


def rot_z(angle: torch.Tensor) -> torch.Tensor:
    """Rotations (..., 3, 3) about +Z by ``angle`` (...) radians."""
    c, s = torch.cos(angle), torch.sin(angle)
    zero, one = torch.zeros_like(angle), torch.ones_like(angle)
    return torch.stack([c, -s, zero, s, c, zero, zero, zero, one], -1).reshape(*angle.shape, 3, 3)


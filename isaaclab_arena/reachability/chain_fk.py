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
        # fixed transforms folded together (UrdfChain.folded_transforms: the one before each movable joint and the
        # one after the last) as (rotation (3, 3), translation (3,)) pairs, float64 on the host first
        folded, tail = chain.folded_transforms()
        folded = folded + [tail]
        steps = []
        for j in chain.movable:
            axis = np.asarray(j.axis, dtype=np.float64)
            k = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
            steps.append((j.type == "prismatic", axis, k, k @ k))

        def t(a):
            return torch.tensor(np.asarray(a), device=self.device, dtype=dtype)

        self._fixed = [(t(f[:3, :3]), t(f[:3, 3]), bool(np.allclose(f[:3, :3], np.eye(3), atol=0.0))) for f in folded]
        self._steps = [(slide, t(axis), t(k), t(k2)) for slide, axis, k, k2 in steps]
        self._eye = torch.eye(3, device=self.device, dtype=dtype)

    def forward(self, q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``q`` (N, n_coords) joint positions (rad or m) -> tool position (N, 3) m, rotation (N, 3, 3).

        Carried joint by joint, a few batched ops per joint: the fixed transforms between movable joints are
        folded at construction, and a revolute joint's rotation is ``I + sin(a) K + (1 - cos(a)) K^2`` with its
        axis' cross-product matrix ``K`` precomputed."""
        q = q.to(self.device, self.dtype)
        n = q.shape[0]
        rotation, position = None, torch.zeros(n, 3, device=self.device, dtype=self.dtype)

        def apply_fixed(rotation, position, fixed):
            r_fixed, t_fixed, identity = fixed
            if rotation is None:  # the base frame: identity so far
                return r_fixed.expand(n, 3, 3), position + t_fixed
            position = position + rotation @ t_fixed
            return (rotation if identity else rotation @ r_fixed), position

        for c, (slide, axis, k, k2) in enumerate(self._steps):
            rotation, position = apply_fixed(rotation, position, self._fixed[c])
            a = q[:, c]
            if slide:  # along the joint's axis in the base frame (its own motion does not move it)
                position = position + a[:, None] * (rotation @ axis)
            else:
                s, one_minus_c = torch.sin(a)[:, None, None], (1 - torch.cos(a))[:, None, None]
                rotation = small_matmul(rotation, self._eye + s * k + one_minus_c * k2)
        rotation, position = apply_fixed(rotation, position, self._fixed[-1])
        if rotation.shape[0] != n or rotation.stride(0) == 0:
            rotation = rotation.expand(n, 3, 3).contiguous()
        return position, rotation


def small_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` for batches of small matrices (..., m, k) @ (..., k, p) as one broadcast product and sum:
    on the CPU, torch's batched matmul spends far longer per tiny matrix than this (a 3 x 3 product of 720
    rotations: about 0.4 ms by ``bmm``, a few tens of microseconds here)."""
    return (a.unsqueeze(-1) * b.unsqueeze(-3)).sum(-2)


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
    cos = ((a * b).sum((-1, -2)) - 1) * 0.5  # trace(a^T b), elementwise
    return torch.arccos(torch.clamp(cos, -1.0, 1.0))


def rot_z(angle: torch.Tensor) -> torch.Tensor:
    """Rotations (..., 3, 3) about +Z by ``angle`` (...) radians."""
    c, s = torch.cos(angle), torch.sin(angle)
    zero, one = torch.zeros_like(angle), torch.ones_like(angle)
    return torch.stack([c, -s, zero, s, c, zero, zero, zero, one], -1).reshape(*angle.shape, 3, 3)


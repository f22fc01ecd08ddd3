"""Batched pose arithmetic on torch tensors: xyz (metres) + xyzw quaternions, any leading shape.

Built on ``isaaclab.utils.math`` (xyzw in Isaac Lab 3.0); ``quat_mul`` / ``quat_apply`` / ``quat_conjugate`` are
Isaac Lab's, re-exported here for the names this module has always offered.
"""

from __future__ import annotations

import math

import torch
from isaaclab.utils.math import quat_apply, quat_conjugate, quat_mul

__all__ = ["is_upright_quarter_turn", "quat_angle_deg", "quat_apply", "quat_conjugate", "quat_mul", "relative_pose",
           "world_aabb"]


def quat_angle_deg(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Rotation angle between two xyzw orientations, degrees in [0, 180] (sign of q ignored)."""
    an = a / torch.linalg.vector_norm(a, dim=-1, keepdim=True).clamp_min(1e-12)
    bn = b / torch.linalg.vector_norm(b, dim=-1, keepdim=True).clamp_min(1e-12)
    an, bn = torch.broadcast_tensors(an, bn)  # Isaac Lab's quat_mul takes equal shapes
    rel = quat_mul(quat_conjugate(an), bn)
    s = torch.linalg.vector_norm(rel[..., :3], dim=-1)
    return torch.rad2deg(2.0 * torch.atan2(s, rel[..., 3].abs()))


def relative_pose(root: torch.Tensor, child: torch.Tensor) -> torch.Tensor:
    """child expressed in root's frame: root^-1 * child, both (..., 7)."""
    qinv = quat_conjugate(root[..., 3:])
    pos = quat_apply(qinv, child[..., :3] - root[..., :3])
    return torch.cat([pos, quat_mul(qinv, child[..., 3:])], dim=-1)


_CORNER_SIGNS = torch.tensor([[i & 1, (i >> 1) & 1, (i >> 2) & 1] for i in range(8)], dtype=torch.float32)


def world_aabb(poses: torch.Tensor, local_min: torch.Tensor, local_max: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """World-axis-aligned bounds of local boxes under poses.

    Args:
        poses: (..., 7) env-local poses.
        local_min, local_max: (..., 3) local box corners (broadcast against poses), metres.

    Returns:
        (min, max), each (..., 3), env-local metres.
    """
    signs = _CORNER_SIGNS.to(device=poses.device, dtype=poses.dtype)
    lo, hi = local_min.to(poses.dtype), local_max.to(poses.dtype)
    corners = lo[..., None, :] + signs * (hi - lo)[..., None, :]  # (..., 8, 3)
    q = poses[..., None, 3:].expand(*corners.shape[:-1], 4)
    world = quat_apply(q, corners) + poses[..., None, :3]
    return world.amin(dim=-2), world.amax(dim=-2)


def is_upright_quarter_turn(q: torch.Tensor, atol_rad: float = 1e-3) -> torch.Tensor:
    """(...,) True where the xyzw rotation is a multiple of 90 degrees about Z with no tilt."""
    qn = q / torch.linalg.vector_norm(q, dim=-1, keepdim=True).clamp_min(1e-12)
    tilt = 2.0 * torch.asin(torch.linalg.vector_norm(qn[..., :2], dim=-1).clamp(max=1.0))
    yaw = 2.0 * torch.atan2(qn[..., 2], qn[..., 3])
    quarter = torch.round(yaw / (math.pi / 2)) * (math.pi / 2)
    return (tilt <= atol_rad) & ((yaw - quarter).abs() <= atol_rad)

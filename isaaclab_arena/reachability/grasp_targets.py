"""Top-down grasp targets for a batch of robot base poses and object positions (torch, any device).

A top-down grasp puts the tool frame (TCP) ``grasp_z_offset_m`` above the object position with the tool
z-axis pointing straight down (world -Z) and the tool x-axis turned toward the object as seen from the
base (azimuth of the object around the base, plus the robot's home yaw offset), so the wrist keeps its
home roll. Positions are env-local metres, quaternions xyzw.
"""

from __future__ import annotations

import torch

from isaaclab_arena.reachability.chain_fk import quat_xyzw_to_matrix, rot_z

#: 180 degrees about X: the tool z-axis points to world -Z.
_FLIP_X = ((1.0, 0.0, 0.0), (0.0, -1.0, 0.0), (0.0, 0.0, -1.0))


def top_down_grasp_targets(base_pose: torch.Tensor, object_positions: torch.Tensor, grasp_z_offset_m: float,
                           yaw_offset_rad: float = 0.0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Grasp targets in each robot's base frame.

    Args:
        base_pose: (B, 7) robot root pose per candidate, env-local: x, y, z (m), qx, qy, qz, qw.
        object_positions: (B, K, 3) object positions, env-local metres.
        grasp_z_offset_m: Height of the TCP above the object position, metres.
        yaw_offset_rad: Tool yaw relative to the base-to-object azimuth, radians.

    Returns:
        ``(position_b, rotation_b, azimuth_b)``: TCP target positions (B, K, 3) metres and rotations
        (B, K, 3, 3) in the base frame, and the object azimuth around the base (B, K) radians in the base
        frame (used to seed the IK).
    """
    if base_pose.ndim != 2 or base_pose.shape[-1] != 7:
        raise ValueError(f"base_pose must be (B, 7) [x, y, z, qx, qy, qz, qw], got {tuple(base_pose.shape)}")
    if object_positions.ndim != 3 or object_positions.shape[-1] != 3 or object_positions.shape[0] != base_pose.shape[0]:
        raise ValueError(f"object_positions must be (B, K, 3) with B = {base_pose.shape[0]}, got "
                         f"{tuple(object_positions.shape)}")
    dtype = object_positions.dtype
    base_pos = base_pose[:, None, :3].to(dtype)
    base_rot = quat_xyzw_to_matrix(base_pose[:, 3:].to(dtype))[:, None]  # (B, 1, 3, 3)
    target_w = object_positions.clone()
    target_w[..., 2] = target_w[..., 2] + grasp_z_offset_m
    delta_w = target_w - base_pos
    azimuth_w = torch.atan2(delta_w[..., 1], delta_w[..., 0])
    flip = torch.tensor(_FLIP_X, dtype=dtype, device=object_positions.device)
    rotation_w = rot_z(azimuth_w + yaw_offset_rad) @ flip  # (B, K, 3, 3)
    base_rot_t = base_rot.transpose(-1, -2)
    position_b = (base_rot_t @ delta_w[..., None])[..., 0]
    rotation_b = base_rot_t @ rotation_w
    azimuth_b = torch.atan2(position_b[..., 1], position_b[..., 0])
    return position_b, rotation_b, azimuth_b

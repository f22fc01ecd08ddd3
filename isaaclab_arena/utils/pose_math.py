"""The placement core's one home for quaternion math: xyzw quaternions (Isaac Lab's convention), unit length
assumed (no normalisation), any leading shape, numpy arrays or torch tensors (the result has the input's type).

The core (``assets``, ``relations``, ``utils``) may not import Isaac Lab (``tests/test_core_boundary.py``); it,
``reachability``, ``adapters``, ``export`` and ``debug`` use this module. The packages that run with Isaac Lab
(``environments/``, ``evaluation/``, ``offline_placement/``) use ``isaaclab.utils.math`` instead (xyzw in Isaac
Lab 3.0, like this module), whose functions of the same names these agree with (``tests/test_pose_math_home.py``).
No other module writes a quaternion product, a rotation by a quaternion or a quaternion-to-matrix conversion by
hand (checked by the same test).
"""

from __future__ import annotations

import math

import numpy as np
import torch


def _stack(parts: list, like):
    return torch.stack(parts, -1) if isinstance(like, torch.Tensor) else np.stack(parts, -1)


def _cross(a: tuple, b: tuple) -> tuple:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def quat_conjugate(q):
    """(..., 4) xyzw -> its conjugate (the inverse of a unit quaternion)."""
    return _stack([-q[..., 0], -q[..., 1], -q[..., 2], q[..., 3]], q)


def quat_mul(a, b):
    """Hamilton product ``a * b`` of xyzw quaternions (..., 4); leading shapes broadcast."""
    ax, ay, az, aw = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bx, by, bz, bw = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return _stack([
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
        aw * bw - ax * bx - ay * by - az * bz,
    ], a)


def quat_apply(q, v):
    """Vectors ``v`` (..., 3) rotated by xyzw quaternions ``q`` (..., 4); leading shapes broadcast."""
    xyz = (q[..., 0], q[..., 1], q[..., 2])
    w = q[..., 3]
    vv = (v[..., 0], v[..., 1], v[..., 2])
    t = tuple(2.0 * c for c in _cross(xyz, vv))
    u = _cross(xyz, t)
    return _stack([vv[i] + w * t[i] + u[i] for i in range(3)], v)


def matrix_from_quat(q):
    """(..., 4) xyzw -> (..., 3, 3) rotation matrices (column vectors: ``R @ v`` rotates ``v``)."""
    x, y, z, w = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    m = _stack([
        1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w),
        2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
        2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y),
    ], q)
    return m.reshape(tuple(q.shape[:-1]) + (3, 3))


def yaw_from_quat(q):
    """(...,) heading about Z (radians, (-pi, pi]) of xyzw quaternions (..., 4); exact for upright rotations."""
    x, y, z, w = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    atan2 = torch.atan2 if isinstance(q, torch.Tensor) else np.arctan2
    return atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def quat_from_euler_xyz(roll_rad: float, pitch_rad: float, yaw_rad: float) -> tuple[float, float, float, float]:
    """xyzw quaternion of extrinsic X (roll), then Y (pitch), then Z (yaw) rotations, radians (scalars)."""
    cr, sr = math.cos(roll_rad / 2), math.sin(roll_rad / 2)
    cp, sp = math.cos(pitch_rad / 2), math.sin(pitch_rad / 2)
    cy, sy = math.cos(yaw_rad / 2), math.sin(yaw_rad / 2)
    return (
        sr * cp * cy - cr * sp * sy,
        cr * sp * cy + sr * cp * sy,
        cr * cp * sy - sr * sp * cy,
        cr * cp * cy + sr * sp * sy,
    )

"""Rigid poses: position in metres, rotation as an (x, y, z, w) unit quaternion (Isaac Lab's convention)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from isaaclab_arena.utils import checks, pose_math
from isaaclab_arena.utils.pose_math import quat_from_euler_xyz  # noqa: F401 - public path (utils.pose)


def _check_finite(values, what: str) -> None:
    for v in values:
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(float(v)):
            raise ValueError(f"{what} must be finite numbers, got {list(values)!r}")


def quat_multiply(a: tuple[float, ...], b: tuple[float, ...]) -> tuple[float, float, float, float]:
    """Hamilton product a * b of two xyzw quaternions (``pose_math.quat_mul`` on plain tuples)."""
    return tuple(float(v) for v in pose_math.quat_mul(np.asarray(a, np.float64), np.asarray(b, np.float64)))


def quat_rotate(q: tuple[float, ...], v: tuple[float, ...]) -> tuple[float, float, float]:
    """Rotates vector v by the xyzw quaternion q (``pose_math.quat_apply`` on plain tuples)."""
    return tuple(float(c) for c in pose_math.quat_apply(np.asarray(q, np.float64), np.asarray(v, np.float64)))


@dataclass(frozen=True)
class Pose:
    """A rigid pose in a stated frame (env-local world unless said otherwise).

    Attributes:
        position_xyz: Translation in metres.
        rotation_xyzw: Unit quaternion (x, y, z, w); identity is (0, 0, 0, 1).
    """

    position_xyz: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rotation_xyzw: tuple[float, float, float, float] = field(default=(0.0, 0.0, 0.0, 1.0))

    def __post_init__(self):
        pos = tuple(float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v for v in self.position_xyz)
        rot = tuple(float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v for v in self.rotation_xyzw)
        if len(pos) != 3:
            raise ValueError(f"Pose.position_xyz needs 3 values (metres), got {len(pos)}: {pos!r}")
        if len(rot) != 4:
            raise ValueError(f"Pose.rotation_xyzw needs 4 values (x, y, z, w), got {len(rot)}: {rot!r}")
        _check_finite(pos, "Pose.position_xyz")
        _check_finite(rot, "Pose.rotation_xyzw")
        norm = math.sqrt(sum(v * v for v in rot))
        if abs(norm - 1.0) > 1e-4:
            raise ValueError(f"Pose.rotation_xyzw must be a unit quaternion (x, y, z, w), got norm {norm:.6f}: {rot!r}")
        object.__setattr__(self, "position_xyz", pos)
        object.__setattr__(self, "rotation_xyzw", tuple(v / norm for v in rot))

    @staticmethod
    def identity() -> "Pose":
        return Pose()

    def compose(self, child: "Pose") -> "Pose":
        """Returns self * child: the child pose (expressed in this pose's frame) in this pose's parent frame."""
        p = quat_rotate(self.rotation_xyzw, child.position_xyz)
        pos = tuple(a + b for a, b in zip(self.position_xyz, p))
        return Pose(pos, quat_multiply(self.rotation_xyzw, child.rotation_xyzw))

    def yaw_rad(self) -> float:
        """Heading about world Z in radians (exact for upright rotations)."""
        return float(pose_math.yaw_from_quat(np.asarray(self.rotation_xyzw, np.float64)))

    def is_upright_quarter_turn(self, atol_rad: float = 1e-3) -> bool:
        """True when the rotation is a multiple of 90 degrees about world Z with no tilt."""
        x, y, _, _ = self.rotation_xyzw
        tilt = 2.0 * math.asin(min(1.0, math.sqrt(x * x + y * y)))
        if tilt > atol_rad:
            return False
        yaw = self.yaw_rad()
        quarter = round(yaw / (math.pi / 2)) * (math.pi / 2)
        return abs(yaw - quarter) <= atol_rad

    def to_dict(self) -> dict:
        return {"position_xyz": list(self.position_xyz), "rotation_xyzw": list(self.rotation_xyzw)}


def parse_pose(value, owner: str, field: str = "initial_pose") -> Pose | None:
    """A ``Pose`` from YAML data ``{position_xyz: [x, y, z], rotation_xyzw: [x, y, z, w]}`` (metres, xyzw;
    rotation optional, identity by default); a ``Pose`` or None passes. Errors name ``owner`` and ``field``."""
    if value is None or isinstance(value, Pose):
        return value
    if not isinstance(value, dict):
        raise ValueError(f"{owner}: {field} must be a mapping {{position_xyz: [x, y, z], rotation_xyzw: [x, y, z, w]}}, "
                         f"got {value!r}")
    unknown = [k for k in value if k not in ("position_xyz", "rotation_xyzw")]
    if unknown:
        raise ValueError(f"{owner}: {field} has unknown key {unknown[0]!r}; accepted keys: position_xyz, rotation_xyzw")
    if "position_xyz" not in value:
        raise ValueError(f"{owner}: {field} needs position_xyz: [x, y, z] (metres); rotation_xyzw is optional")
    pos = checks.vector(value["position_xyz"], owner, f"{field}.position_xyz", 3)
    rot = checks.vector(value.get("rotation_xyzw", (0.0, 0.0, 0.0, 1.0)), owner, f"{field}.rotation_xyzw", 4)
    try:
        return Pose(pos, rot)
    except ValueError as err:
        raise ValueError(f"{owner}: {field}: {err}") from None

"""Relations the solver does not turn into objectives: the anchor marker, the reachability marker and
the pose modifiers applied after solving (radians, metres)."""

from __future__ import annotations

from isaaclab_arena.relations.relation_base import RelationBase, number


class IsAnchor(RelationBase):
    """Indicates that this object is an anchor (unmovable) for relation solving."""

    yaml_kind = "is_anchor"


class RequiresReachability(RelationBase):
    """Marks an object the robot must be able to reach (checked by ``ik_reachable`` when available)."""

    yaml_kind = "requires_reachability"


class RotateAroundSolution(RelationBase):
    """Fixed roll/pitch/yaw (radians) applied on top of the solved pose; not seen by the solver."""

    yaml_kind = "rotate_around_solution"

    def __init__(self, roll_rad: float = 0.0, pitch_rad: float = 0.0, yaw_rad: float = 0.0):
        self.roll_rad = number(roll_rad, "RotateAroundSolution", "roll_rad")
        self.pitch_rad = number(pitch_rad, "RotateAroundSolution", "pitch_rad")
        self.yaw_rad = number(yaw_rad, "RotateAroundSolution", "yaw_rad")

    def params(self):
        return {"roll_rad": self.roll_rad, "pitch_rad": self.pitch_rad, "yaw_rad": self.yaw_rad}

    def quaternion_xyzw(self) -> tuple[float, float, float, float]:
        from isaaclab_arena.utils.pose import quat_from_euler_xyz

        return quat_from_euler_xyz(self.roll_rad, self.pitch_rad, self.yaw_rad)


class RandomAroundSolution(RelationBase):
    """Uniform offsets around the solved pose, half-ranges in metres and radians (direct ObjectPlacer use)."""

    yaml_kind = "random_around_solution"

    def __init__(self, x_half_m: float = 0.0, y_half_m: float = 0.0, z_half_m: float = 0.0,
                 roll_half_rad: float = 0.0, pitch_half_rad: float = 0.0, yaw_half_rad: float = 0.0):
        name = "RandomAroundSolution"
        self.x_half_m = number(x_half_m, name, "x_half_m", minimum=0.0)
        self.y_half_m = number(y_half_m, name, "y_half_m", minimum=0.0)
        self.z_half_m = number(z_half_m, name, "z_half_m", minimum=0.0)
        self.roll_half_rad = number(roll_half_rad, name, "roll_half_rad", minimum=0.0)
        self.pitch_half_rad = number(pitch_half_rad, name, "pitch_half_rad", minimum=0.0)
        self.yaw_half_rad = number(yaw_half_rad, name, "yaw_half_rad", minimum=0.0)

    def params(self):
        return {"x_half_m": self.x_half_m, "y_half_m": self.y_half_m, "z_half_m": self.z_half_m,
                "roll_half_rad": self.roll_half_rad, "pitch_half_rad": self.pitch_half_rad,
                "yaw_half_rad": self.yaw_half_rad}

    @property
    def has_xy_offset(self) -> bool:
        return self.x_half_m > 0.0 or self.y_half_m > 0.0

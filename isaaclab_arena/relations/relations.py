"""Spatial relations, orientation relations and placement modifiers (user-facing model).

Every length is in metres and every angle in radians. Positions and limits are in the env-local world
frame (the frame of one environment before its env origin is added).
"""

from __future__ import annotations

import math
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar, Sequence

if TYPE_CHECKING:
    from isaaclab_arena.assets.asset import PlaceableAsset


class Side(str, Enum):
    """Axis direction for spatial relationships."""

    POSITIVE_X = "positive_x"
    NEGATIVE_X = "negative_x"
    POSITIVE_Y = "positive_y"
    NEGATIVE_Y = "negative_y"

    @property
    def axis_index(self) -> int:
        """0 for the X sides, 1 for the Y sides."""
        return 0 if self in (Side.POSITIVE_X, Side.NEGATIVE_X) else 1

    @property
    def sign(self) -> float:
        return 1.0 if self in (Side.POSITIVE_X, Side.POSITIVE_Y) else -1.0


class Axis(str, Enum):
    """World axis for single-axis relations."""

    X = "x"
    Y = "y"
    Z = "z"

    @property
    def index(self) -> int:
        return {"x": 0, "y": 1, "z": 2}[self.value]


def _coerce_enum(enum_cls, value, relation: str, param: str):
    if isinstance(value, enum_cls):
        return value
    if isinstance(value, str):
        try:
            return enum_cls(value.lower())
        except ValueError:
            pass
    accepted = ", ".join(repr(m.value) for m in enum_cls)
    raise ValueError(f"{relation}: {param}={value!r} is not a valid {enum_cls.__name__}; accepted: {accepted}")


def _number(value, relation: str, param: str, *, optional: bool = False, minimum: float | None = None,
            strict_minimum: bool = False, maximum: float | None = None) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{relation}: {param} must be a number{' or None' if optional else ''}, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{relation}: {param} must be finite, got {value!r}")
    if minimum is not None:
        if strict_minimum and value <= minimum:
            raise ValueError(f"{relation}: {param} must be > {minimum:g}, got {value:g}")
        if not strict_minimum and value < minimum:
            raise ValueError(f"{relation}: {param} must be >= {minimum:g}, got {value:g}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{relation}: {param} must be <= {maximum:g}, got {value:g}")
    return value


def _flag(value, relation: str, param: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{relation}: {param} must be true or false, got {value!r}")
    return value


def _limits(value, relation: str, param: str) -> tuple[float | None, float | None]:
    if value is None:
        return (None, None)
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != 2:
        raise ValueError(f"{relation}: {param} must be a (minimum, maximum) pair, either may be None; got {value!r}")
    lo = _number(value[0], relation, f"{param}[0]", optional=True)
    hi = _number(value[1], relation, f"{param}[1]", optional=True)
    if lo is not None and hi is not None and lo > hi:
        raise ValueError(f"{relation}: {param} minimum {lo:g} is above its maximum {hi:g}")
    return (lo, hi)


class RelationBase:
    """Anything attached with ``add_relation()``: spatial relations, orientation relations, markers, modifiers."""

    yaml_kind: ClassVar[str] = ""
    #: True for relations the solver turns into positional objectives.
    is_spatial: ClassVar[bool] = False

    def params(self) -> dict[str, Any]:
        """Constructor parameters other than ``parent``, as plain values (enums as their strings)."""
        return {}

    @property
    def parent(self) -> "PlaceableAsset | None":
        return None

    def describe(self) -> str:
        ref = f"{self.parent.name}" if self.parent is not None else ""
        return f"{self.yaml_kind}({ref})"

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        ref = f"{self.parent.name!r}" if self.parent is not None else ""
        return f"{type(self).__name__}({ref}{', ' if ref and args else ''}{args})"

    def __eq__(self, other) -> bool:
        if type(self) is not type(other):
            return False
        mine = self.parent.name if self.parent is not None else None
        theirs = other.parent.name if other.parent is not None else None
        return mine == theirs and self.params() == other.params()

    def __hash__(self):
        return hash((type(self).__name__, tuple(sorted(self.params().items(), key=lambda kv: kv[0])).__repr__()))


class Relation(RelationBase):
    """A relation between the subject (the asset it is added to) and a parent (reference) asset."""

    def __init__(self, parent: "PlaceableAsset", relation_loss_weight: float = 1.0):
        # duck-typed: the relations module does not import the asset model (assets import relations)
        if not all(hasattr(parent, a) for a in ("name", "add_relation", "get_bounding_box")):
            raise TypeError(f"{type(self).__name__}: parent must be a placeable asset, got {parent!r}")
        self._parent = parent
        self.relation_loss_weight = _number(relation_loss_weight, type(self).__name__, "relation_loss_weight", minimum=0.0)

    @property
    def parent(self) -> "PlaceableAsset":
        return self._parent


class IsAnchor(RelationBase):
    """Indicates that this object is an anchor (unmovable) for relation solving."""

    yaml_kind = "is_anchor"


class On(Relation):
    """Places the subject on top of the parent, footprint inside the parent's (optionally inset) extent."""

    yaml_kind = "on"
    is_spatial = True

    def __init__(self, parent, relation_loss_weight: float = 1.0, clearance_m: float = 0.01,
                 edge_margin_m: float = 0.05, overlap: bool = False):
        super().__init__(parent, relation_loss_weight)
        self.clearance_m = _number(clearance_m, "On", "clearance_m", minimum=0.0)
        self.edge_margin_m = _number(edge_margin_m, "On", "edge_margin_m", minimum=0.0)
        self.overlap = _flag(overlap, "On", "overlap")

    def params(self):
        return {"relation_loss_weight": self.relation_loss_weight, "clearance_m": self.clearance_m,
                "edge_margin_m": self.edge_margin_m, "overlap": self.overlap}


class ClutterOn(Relation):
    """Release pose above a support before physics: central ``spread`` region, ``clearance_m`` above its top."""

    yaml_kind = "clutter_on"
    is_spatial = True

    def __init__(self, parent, spread: float = 0.2, clearance_m: float = 0.01, gap_m: float = 0.03,
                 random_yaw: bool = True, edge_margin_m: float = 0.0, relation_loss_weight: float = 1.0):
        super().__init__(parent, relation_loss_weight)
        self.spread = _number(spread, "ClutterOn", "spread", minimum=0.0, strict_minimum=True, maximum=1.0)
        self.clearance_m = _number(clearance_m, "ClutterOn", "clearance_m", minimum=0.0)
        self.gap_m = _number(gap_m, "ClutterOn", "gap_m", minimum=0.0)
        self.random_yaw = _flag(random_yaw, "ClutterOn", "random_yaw")
        self.edge_margin_m = _number(edge_margin_m, "ClutterOn", "edge_margin_m", minimum=0.0)

    def params(self):
        return {"spread": self.spread, "clearance_m": self.clearance_m, "gap_m": self.gap_m,
                "random_yaw": self.random_yaw, "edge_margin_m": self.edge_margin_m,
                "relation_loss_weight": self.relation_loss_weight}


class NextTo(Relation):
    """Places the subject beside the parent on ``side`` with a gap of ``distance_m`` (within ``tolerance_m``)."""

    yaml_kind = "next_to"
    is_spatial = True

    def __init__(self, parent, side: Side | str = Side.POSITIVE_X, relation_loss_weight: float = 1.0,
                 distance_m: float = 0.05, cross_position_ratio: float | None = None, tolerance_m: float = 0.01):
        super().__init__(parent, relation_loss_weight)
        self.side = _coerce_enum(Side, side, "NextTo", "side")
        self.distance_m = _number(distance_m, "NextTo", "distance_m", minimum=0.0)
        self.cross_position_ratio = _number(cross_position_ratio, "NextTo", "cross_position_ratio", optional=True,
                                            minimum=-1.0, maximum=1.0)
        self.tolerance_m = _number(tolerance_m, "NextTo", "tolerance_m", minimum=0.0)

    def params(self):
        return {"side": self.side.value, "relation_loss_weight": self.relation_loss_weight,
                "distance_m": self.distance_m, "cross_position_ratio": self.cross_position_ratio,
                "tolerance_m": self.tolerance_m}

    def describe(self) -> str:
        return f"next_to({self.parent.name}, {self.side.value})"


class NotNextTo(Relation):
    """Forbids the half-plane past the parent's ``side`` edge, within the parent's perpendicular footprint."""

    yaml_kind = "not_next_to"
    is_spatial = True

    def __init__(self, parent, relation_loss_weight: float = 1.0, side: Side | str = Side.POSITIVE_X,
                 tolerance_m: float = 0.01):
        super().__init__(parent, relation_loss_weight)
        self.side = _coerce_enum(Side, side, "NotNextTo", "side")
        self.tolerance_m = _number(tolerance_m, "NotNextTo", "tolerance_m", minimum=0.0)

    def params(self):
        return {"relation_loss_weight": self.relation_loss_weight, "side": self.side.value,
                "tolerance_m": self.tolerance_m}

    def describe(self) -> str:
        return f"not_next_to({self.parent.name}, {self.side.value})"


class AtPosition(RelationBase):
    """Pins selected env-local world coordinates of the subject's origin; None leaves an axis free."""

    yaml_kind = "at_position"
    is_spatial = True

    def __init__(self, x: float | None = None, y: float | None = None, z: float | None = None,
                 relation_loss_weight: float = 1.0):
        self.x = _number(x, "AtPosition", "x", optional=True)
        self.y = _number(y, "AtPosition", "y", optional=True)
        self.z = _number(z, "AtPosition", "z", optional=True)
        if self.x is None and self.y is None and self.z is None:
            raise ValueError("AtPosition: set at least one of x, y, z (metres); all three are None")
        self.relation_loss_weight = _number(relation_loss_weight, "AtPosition", "relation_loss_weight", minimum=0.0)

    def params(self):
        return {"x": self.x, "y": self.y, "z": self.z, "relation_loss_weight": self.relation_loss_weight}


class AlignWith(Relation):
    """Aligns bounding-box centres along one world axis within ``tolerance_m``, offset by ``offset_m``."""

    yaml_kind = "align_with"
    is_spatial = True

    def __init__(self, parent, axis: Axis | str, offset_m: float = 0.0, tolerance_m: float = 0.02,
                 relation_loss_weight: float = 1.0):
        super().__init__(parent, relation_loss_weight)
        self.axis = _coerce_enum(Axis, axis, "AlignWith", "axis")
        self.offset_m = _number(offset_m, "AlignWith", "offset_m")
        self.tolerance_m = _number(tolerance_m, "AlignWith", "tolerance_m", minimum=0.0)

    def params(self):
        return {"axis": self.axis.value, "offset_m": self.offset_m, "tolerance_m": self.tolerance_m,
                "relation_loss_weight": self.relation_loss_weight}

    def describe(self) -> str:
        return f"align_with({self.parent.name}, {self.axis.value})"


class PositionLimitsBox(RelationBase):
    """Keeps the subject's origin inside an env-local world-axis box; None leaves a bound open."""

    yaml_kind = "position_limits_box"
    is_spatial = True

    def __init__(self, x_limits: Sequence[float | None] = (None, None), y_limits: Sequence[float | None] = (None, None),
                 z_limits: Sequence[float | None] = (None, None), relation_loss_weight: float = 1.0):
        self.x_limits = _limits(x_limits, "PositionLimitsBox", "x_limits")
        self.y_limits = _limits(y_limits, "PositionLimitsBox", "y_limits")
        self.z_limits = _limits(z_limits, "PositionLimitsBox", "z_limits")
        self.relation_loss_weight = _number(relation_loss_weight, "PositionLimitsBox", "relation_loss_weight", minimum=0.0)

    def params(self):
        return {"x_limits": list(self.x_limits), "y_limits": list(self.y_limits), "z_limits": list(self.z_limits),
                "relation_loss_weight": self.relation_loss_weight}


class PositionLimitsCylindrical(RelationBase):
    """Keeps the subject's origin within [radius_min, radius_max] (XY distance, metres) of a fixed centre."""

    yaml_kind = "position_limits_cylindrical"
    is_spatial = True

    def __init__(self, center_x: float, center_y: float, radius_min: float | None = None,
                 radius_max: float | None = None, relation_loss_weight: float = 1.0):
        name = "PositionLimitsCylindrical"
        self.center_x = _number(center_x, name, "center_x")
        self.center_y = _number(center_y, name, "center_y")
        self.radius_min = _number(radius_min, name, "radius_min", optional=True, minimum=0.0)
        self.radius_max = _number(radius_max, name, "radius_max", optional=True, minimum=0.0, strict_minimum=True)
        if self.radius_min is None and self.radius_max is None:
            raise ValueError(f"{name}: set radius_min, radius_max or both (metres); both are None")
        if self.radius_min is not None and self.radius_max is not None and self.radius_min > self.radius_max:
            raise ValueError(f"{name}: radius_min {self.radius_min:g} is above radius_max {self.radius_max:g}")
        self.relation_loss_weight = _number(relation_loss_weight, name, "relation_loss_weight", minimum=0.0)

    def params(self):
        return {"center_x": self.center_x, "center_y": self.center_y, "radius_min": self.radius_min,
                "radius_max": self.radius_max, "relation_loss_weight": self.relation_loss_weight}


class FaceTo(Relation):
    """Turns the subject about world Z so that its local +X points at the target's XY position."""

    yaml_kind = "face_to"

    def __init__(self, parent):
        super().__init__(parent, 1.0)

    def params(self):
        return {}


class RequiresReachability(RelationBase):
    """Marks an object the robot must be able to reach (checked by ``ik_reachable`` when available)."""

    yaml_kind = "requires_reachability"


class RotateAroundSolution(RelationBase):
    """Fixed roll/pitch/yaw (radians) applied on top of the solved pose; not seen by the solver."""

    yaml_kind = "rotate_around_solution"

    def __init__(self, roll_rad: float = 0.0, pitch_rad: float = 0.0, yaw_rad: float = 0.0):
        self.roll_rad = _number(roll_rad, "RotateAroundSolution", "roll_rad")
        self.pitch_rad = _number(pitch_rad, "RotateAroundSolution", "pitch_rad")
        self.yaw_rad = _number(yaw_rad, "RotateAroundSolution", "yaw_rad")

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
        self.x_half_m = _number(x_half_m, name, "x_half_m", minimum=0.0)
        self.y_half_m = _number(y_half_m, name, "y_half_m", minimum=0.0)
        self.z_half_m = _number(z_half_m, name, "z_half_m", minimum=0.0)
        self.roll_half_rad = _number(roll_half_rad, name, "roll_half_rad", minimum=0.0)
        self.pitch_half_rad = _number(pitch_half_rad, name, "pitch_half_rad", minimum=0.0)
        self.yaw_half_rad = _number(yaw_half_rad, name, "yaw_half_rad", minimum=0.0)

    def params(self):
        return {"x_half_m": self.x_half_m, "y_half_m": self.y_half_m, "z_half_m": self.z_half_m,
                "roll_half_rad": self.roll_half_rad, "pitch_half_rad": self.pitch_half_rad,
                "yaw_half_rad": self.yaw_half_rad}

    @property
    def has_xy_offset(self) -> bool:
        return self.x_half_m > 0.0 or self.y_half_m > 0.0


#: YAML ``kind`` -> relation class. ``position_limits`` is an alias of ``position_limits_box``.
RELATION_KINDS: dict[str, type[RelationBase]] = {
    cls.yaml_kind: cls
    for cls in (IsAnchor, On, ClutterOn, NextTo, NotNextTo, AtPosition, AlignWith, PositionLimitsBox,
                PositionLimitsCylindrical, FaceTo, RequiresReachability, RotateAroundSolution, RandomAroundSolution)
}
RELATION_KIND_ALIASES: dict[str, str] = {"position_limits": "position_limits_box", "cluttered_on": "clutter_on"}

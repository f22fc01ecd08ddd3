"""What every relation shares: the base classes, the world axes and sides, and parameter checks.

Parameter checks come from ``utils.checks`` (one helper for the whole core); ``limits`` adds the
(minimum, maximum) pairs of position limits. Every length is in metres and every angle in radians. Positions and limits are in the env-local world
frame (the frame of one environment before its env origin is added).
"""

from __future__ import annotations

from enum import Enum
from typing import Any, ClassVar, Protocol, Sequence

from isaaclab_arena.utils.checks import enum_member as coerce_enum
from isaaclab_arena.utils.checks import flag, number, short_repr

__all__ = ["Axis", "ParentAsset", "Relation", "RelationBase", "Side", "coerce_enum", "flag", "limits", "number", "support_length"]


class ParentAsset(Protocol):
    """What a relation needs of its parent (reference) asset; ``assets.asset.PlaceableAsset`` is one. A protocol,
    so that this module does not import the asset model, which imports the relations."""

    name: str

    def add_relation(self, relation: "RelationBase") -> Any: ...

    def get_bounding_box(self) -> Any: ...


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


def limits(value, relation: str, param: str) -> tuple[float | None, float | None]:
    """A (minimum, maximum) pair of optional finite floats with minimum <= maximum."""
    if value is None:
        return (None, None)
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != 2:
        raise ValueError(f"{relation}: {param} must be a (minimum, maximum) pair, either may be None; got "
                         f"{short_repr(value)}")
    lo = number(value[0], relation, f"{param}[0]", optional=True)
    hi = number(value[1], relation, f"{param}[1]", optional=True)
    if lo is not None and hi is not None and lo > hi:
        raise ValueError(f"{relation}: {param} minimum {lo:g} is above its maximum {hi:g}")
    return (lo, hi)


#: Smallest support scale (metres) ``support_length`` measures against, so that small supports keep usable values.
SUPPORT_SCALE_FLOOR_M = 0.5


def _largest_side(asset) -> float | None:
    """Largest side (metres) of ``asset``'s local bounds; None when its bounds cannot be read yet."""
    try:
        box = asset.get_bounding_box()
        return max(float(box.max_point[i]) - float(box.min_point[i]) for i in range(3))
    except Exception:  # noqa: BLE001 - bounds not readable here (e.g. an unresolved reference): checked later
        return None


def support_length(value, parent, relation: str, param: str) -> float:
    """A length (metres, >= 0) measured on or above the support ``parent``: at most the support's largest side
    (at least ``SUPPORT_SCALE_FLOOR_M``). ``On(table, clearance_m=5.0)`` on a 1.2 m table would release the
    object 5 m above it; no placement on that support can mean it."""
    value = number(value, relation, param, minimum=0.0)
    side = _largest_side(parent)
    if side is None:
        return value
    scale = max(side, SUPPORT_SCALE_FLOOR_M)
    if value > scale:
        raise ValueError(f"{relation}: {param}={value:g} m is larger than its support '{parent.name}' (largest side "
                         f"{side:.3f} m; accepted 0 .. {scale:.3f} m)")
    return value


class RelationBase:
    """Anything attached with ``add_relation()``: spatial relations, orientation relations, markers, modifiers."""

    yaml_kind: ClassVar[str] = ""
    #: True for relations the solver turns into positional objectives.
    is_spatial: ClassVar[bool] = False

    def params(self) -> dict[str, Any]:
        """Constructor parameters other than ``parent``, as plain values (enums as their strings)."""
        return {}

    @property
    def parent(self) -> "ParentAsset | None":
        return None

    def describe(self) -> str:
        ref = f"{self.parent.name}" if self.parent is not None else ""
        return f"{self.yaml_kind}({ref})"

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={short_repr(v)}" for k, v in self.params().items())
        ref = f"{short_repr(self.parent.name)}" if self.parent is not None else ""
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

    def __init__(self, parent: "ParentAsset", relation_loss_weight: float = 1.0):
        # duck-typed: the relations modules do not import the asset model (assets import relations)
        if not all(hasattr(parent, a) for a in ("name", "add_relation", "get_bounding_box")):
            raise TypeError(f"{type(self).__name__}: parent must be a placeable asset, got {short_repr(parent)}")
        self._parent = parent
        self.relation_loss_weight = number(relation_loss_weight, type(self).__name__, "relation_loss_weight",
                                           minimum=0.0)

    @property
    def parent(self) -> "ParentAsset":
        return self._parent

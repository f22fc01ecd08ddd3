"""The parts every relation kind module provides, and the helpers they share.

A kind module (``on.py``, ``next_to.py``, ...) holds, together: the user class and its parameters, its
loss strategy (the slope that turns its violation in metres into loss), the named columns of its packed
parameter row, how a relation is packed at compile time, its violation function (shared by the solver's
loss and exit tests and by its check), its target interval (kinds the solver projects onto exactly) or
its penalty depth and push direction (kinds the solver penalises), its cause codes with their texts, and
the name of the check that judges it. ``kinds/__init__.py`` lists the kinds; everything indexed by kind
(dispatch functions, check slots, cause texts) is generated from that list.

Uniform device signatures (``f`` is the relation's packed row, ``p`` the subject's origin, ``clo``/``chi``
its world AABB, ``plo``/``phi`` the parent's world AABB, ``olo``/``ohi`` the subject's bounds relative to
its origin; metres, env-local world frame):

- ``violation(axis, flag, f, p, clo, chi, plo, phi, slack) -> (excess, cause)``: ``excess`` is how far
  the candidate lies outside what the check accepts (<= 0 inside); ``cause`` names the failing part (0 when
  ``excess <= slack``).
- ``interval(axis, flag, f, olo, ohi, plo, phi, at_ratio, room) -> (lo, hi)`` (INTERVAL kinds): the per-axis
  range of the subject's origin that satisfies the relation (+-BIG where free), aimed strictly inside what
  ``violation`` accepts; ``room`` is what the subject's NextTo chain needs (``RoomRow``), for kinds that
  contain the subject (On, PositionLimitsBox).
- ``penalty(axis, flag, f, p, clo, chi, plo, phi) -> (depth, allowance, grad)`` (PENALTY kinds): how deep
  the subject is in the forbidden set at the solver's threshold (<= 0 satisfied), how much of that depth
  the check tolerates, and the direction that reduces it; ``push(T, S, b, subject, parent, p, clo, chi,
  plo, phi, axis, f)`` picks the direction the solver moves the subject (it may consult which objects can
  still move).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Callable

import warp as wp

# the packed row's device types live with the scene tables' (a leaf module); the kinds read them from here
from isaaclab_arena.relations.kernels.rows import MAX_PARAMS, ROW_WIDTH, WEIGHT, ParamRow, RoomRow  # noqa: F401


class KindRole(IntEnum):
    """How the solver meets a relation kind."""

    #: Projected exactly: the subject's origin is clamped into the kind's per-axis interval.
    INTERVAL = 0
    #: Penalised: a loss term the solver descends, with a push direction.
    PENALTY = 1
    #: An orientation set from positions (FaceTo headings), no positional objective.
    HEADING = 2


class CauseCode(IntEnum):
    """A kind's cause codes (0 is no failure) with the text diagnostics print for them.

    Subclasses declare members as ``NAME = code, "text"``.
    """

    def __new__(cls, value: int, text: str = ""):
        member = int.__new__(cls, value)
        member._value_ = value
        member.text = text
        return member


class ParamColumns:
    """Names of the columns of a kind's packed parameter row (at most ``MAX_PARAMS``); the last column of
    every row is its loss weight (``WEIGHT``)."""

    MAX_PARAMS = MAX_PARAMS

    def __init__(self, *names: str):
        if len(names) > self.MAX_PARAMS or len(set(names)) != len(names):
            raise ValueError(f"ParamColumns: at most {self.MAX_PARAMS} distinct names, got {names}")
        self.names = names

    def constants(self):
        """One ``wp.constant`` column index per name, in order (for the kind's device functions)."""
        return tuple(wp.constant(k) for k in range(len(self.names)))

    def row(self, values: dict[str, float], weight: float) -> list[float]:
        """The packed row: the named values in column order, zeros after them, the weight last."""
        unknown = set(values) - set(self.names)
        if unknown:
            raise KeyError(f"unknown parameter columns {sorted(unknown)}; declared: {self.names}")
        out = [float(values.get(n, 0.0)) for n in self.names]
        return out + [0.0] * (self.MAX_PARAMS - len(out)) + [float(weight)]


@dataclass(frozen=True)
class RelationLossStrategy:
    """Base of every strategy: ``slope`` scales the relation's violation (metres) into loss."""

    slope: float = 100.0

    def __post_init__(self):
        for name, value in vars(self).items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{type(self).__name__}: {name} must be a finite number >= 0, got {value!r}")


@dataclass
class PackedRelation:
    """A relation at compile time: the axis and flag columns and the named parameter values."""

    axis: int = 0
    flag: int = 0
    values: dict[str, float] = field(default_factory=dict)


class PackContext:
    """What a kind's ``pack`` may read and declare about one relation (subject ``subject``, parent
    ``parent``: object indices, -1 for none) while the scene is compiled."""

    def __init__(self, compiler, subject: int, parent: int):
        self._compiler = compiler
        self.subject = subject
        self.parent = parent
        self.solver_params = compiler.solver_params
        self.placer_params = compiler.placer_params

    def pin(self, axis: int) -> None:
        """The relation fixes the subject's origin on ``axis`` (no_overlap pushes never move it there)."""
        self._compiler.pinned[self.subject, axis] = True

    def exempt_from_overlap(self) -> None:
        """The subject may touch its parent (supports): the pair is not checked by no_overlap."""
        self._compiler.exempt.add((min(self.subject, self.parent), max(self.subject, self.parent)))

    def random_half_ranges(self) -> tuple[float, float, float]:
        """The subject's RandomAroundSolution position half ranges (x, y, z metres; zeros without one): how
        far the modifier may move its origin after solving."""
        return self._compiler.random_half_ranges(self.subject)

    def limit_pair_clearance(self, metres: float) -> None:
        """The subject and parent may come this close (NextTo gaps smaller than the solver clearance)."""
        key = (min(self.subject, self.parent), max(self.subject, self.parent))
        current = self._compiler.pair_clearance.get(key, self.solver_params.clearance_m)
        self._compiler.pair_clearance[key] = min(current, metres)


@dataclass(frozen=True)
class RelationKind:
    """One relation kind, as the compile stage, the kernels and the diagnostics see it.

    Attributes:
        name: YAML kind.
        relation: The user class.
        role: How the solver meets it.
        columns: Named columns of its packed parameter row.
        pack: ``(relation, PackContext) -> PackedRelation``.
        violation: Device function shared by the loss, the solver's exit tests and the check.
        causes: Cause codes with texts.
        check: Check that judges it (None: an objective only).
        strategy: Its loss strategy class (None: no loss term).
        interval: Device function of INTERVAL kinds.
        penalty: Device function of PENALTY kinds.
        push: Device function of PENALTY kinds that picks the direction the solver pushes the subject
            (the parent is pushed the opposite way), with the solver's state at hand
            (``(T, S, b, subject, parent, p, clo, chi, plo, phi, axis, f) -> direction``).
        has_parent: Whether the relation has a parent asset.
        feasibility: Host function ``(relation, RelationEdges)`` adding the relation's difference constraints on
            one axis to the feasibility pre-check (``relations/compiler/feasibility.py``); None: the kind adds none (say so:
            there is no default, so a new kind cannot be skipped silently).
        feasibility_help: What would make an impossible chain through it possible (quoted in the refusal).
    """

    name: str
    relation: type
    role: KindRole
    columns: ParamColumns
    pack: Callable[[Any, PackContext], PackedRelation]
    violation: Any
    causes: type[CauseCode]
    check: str | None
    strategy: type[RelationLossStrategy] | None
    feasibility: Callable[[Any, Any], None] | None
    feasibility_help: str | None
    interval: Any = None
    penalty: Any = None
    push: Any = None
    has_parent: bool = True

    def cause_text(self, code: int) -> str:
        try:
            return self.causes(code).text
        except ValueError:
            return "violated"

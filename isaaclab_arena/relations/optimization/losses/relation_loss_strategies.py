"""Loss strategies: how each relation kind becomes a solver objective.

A strategy is a small config object: its fields (slopes, margins) parameterise the kernel that evaluates
every relation of its kind for every candidate in one launch. Users replace entries of
``RelationSolverParams.strategies`` to change them, e.g. ``NotNextToLossStrategy(margin_m=0.2)``.
Slopes multiply a violation in metres.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RelationLossStrategy:
    """Base of every strategy: ``slope`` scales the relation's violation (metres) into loss."""

    slope: float = 100.0

    def __post_init__(self):
        import math

        for name, value in vars(self).items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{type(self).__name__}: {name} must be a finite number >= 0, got {value!r}")


@dataclass(frozen=True)
class OnLossStrategy(RelationLossStrategy):
    slope: float = 100.0


@dataclass(frozen=True)
class ClutterOnLossStrategy(RelationLossStrategy):
    slope: float = 100.0


@dataclass(frozen=True)
class NextToLossStrategy(RelationLossStrategy):
    slope: float = 10.0


@dataclass(frozen=True)
class NotNextToLossStrategy(RelationLossStrategy):
    """``margin_m``: how far past the keep-out region the solver pushes a subject (metres)."""

    slope: float = 10.0
    margin_m: float = 0.1


@dataclass(frozen=True)
class AtPositionLossStrategy(RelationLossStrategy):
    slope: float = 100.0


@dataclass(frozen=True)
class AlignWithLossStrategy(RelationLossStrategy):
    slope: float = 100.0


@dataclass(frozen=True)
class PositionLimitsBoxLossStrategy(RelationLossStrategy):
    slope: float = 100.0


@dataclass(frozen=True)
class PositionLimitsCylindricalLossStrategy(RelationLossStrategy):
    slope: float = 100.0


@dataclass(frozen=True)
class NoCollisionLossStrategy(RelationLossStrategy):
    """Pairwise no-overlap term; its large slope makes overlap avoidance dominate."""

    slope: float = 10000.0


def default_strategies() -> dict:
    from isaaclab_arena.relations.relations import (
        AlignWith,
        AtPosition,
        ClutterOn,
        NextTo,
        NotNextTo,
        On,
        PositionLimitsBox,
        PositionLimitsCylindrical,
    )

    return {
        NextTo: NextToLossStrategy(slope=10.0),
        On: OnLossStrategy(slope=100.0),
        ClutterOn: ClutterOnLossStrategy(slope=100.0),
        NotNextTo: NotNextToLossStrategy(slope=10.0, margin_m=0.1),
        AtPosition: AtPositionLossStrategy(slope=100.0),
        AlignWith: AlignWithLossStrategy(slope=100.0),
        PositionLimitsBox: PositionLimitsBoxLossStrategy(slope=100.0),
        PositionLimitsCylindrical: PositionLimitsCylindricalLossStrategy(slope=100.0),
    }

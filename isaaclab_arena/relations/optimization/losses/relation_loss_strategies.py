"""Loss strategies: how each relation kind becomes a solver objective.

A strategy is a small config: its fields (slopes, margins) parameterise the kernel that evaluates every
relation of its kind for every candidate in one launch. Each kind's strategy is defined in its kind module
(``relations/kinds/*.py``); this module is their public import path. Users replace entries of
``RelationSolverParams.strategies`` to change them, e.g. ``NotNextToLossStrategy(margin_m=0.2)``. Slopes
multiply a violation in metres.
"""

from __future__ import annotations

from dataclasses import dataclass

from isaaclab_arena.relations.kinds import KINDS
from isaaclab_arena.relations.kinds.align_with import AlignWithLossStrategy
from isaaclab_arena.relations.kinds.at_position import AtPositionLossStrategy
from isaaclab_arena.relations.kinds.clutter_on import ClutterOnLossStrategy
from isaaclab_arena.relations.kinds.kind import RelationLossStrategy
from isaaclab_arena.relations.kinds.next_to import NextToLossStrategy
from isaaclab_arena.relations.kinds.not_next_to import NotNextToLossStrategy
from isaaclab_arena.relations.kinds.on import OnLossStrategy
from isaaclab_arena.relations.kinds.position_limits_box import PositionLimitsBoxLossStrategy
from isaaclab_arena.relations.kinds.position_limits_cylindrical import PositionLimitsCylindricalLossStrategy

__all__ = ["AlignWithLossStrategy", "AtPositionLossStrategy", "ClutterOnLossStrategy", "NextToLossStrategy",
           "NoCollisionLossStrategy", "NotNextToLossStrategy", "OnLossStrategy", "PositionLimitsBoxLossStrategy",
           "PositionLimitsCylindricalLossStrategy", "RelationLossStrategy", "default_strategies"]


@dataclass(frozen=True)
class NoCollisionLossStrategy(RelationLossStrategy):
    """Pairwise no-overlap term; its large slope makes overlap avoidance dominate."""

    slope: float = 10000.0


def default_strategies() -> dict:
    """Relation class -> its kind's default loss strategy, for every kind that has a loss term."""
    return {k.relation: k.strategy() for k in KINDS if k.strategy is not None}

"""Parking spots of object-pool members (``assets/object_pool.py``): where a parked member waits, and how a pose says it is
parked. A leaf module (torch only), so the solver kernels, layout files and pictures read one definition.

A parked member sits at env-local ``(0, 0, PARK_HEIGHT_M + PARK_SPACING_M * slot)`` metres, identity rotation.
"""

from __future__ import annotations

import torch

#: Height (m, env-local z) of the first parking spot, and the vertical spacing (m) of the following ones.
PARK_HEIGHT_M = 1000.0
PARK_SPACING_M = 10.0
#: An object whose env-local z is above this (m) is parked (solver, checks, pictures, physics).
PARKED_ABOVE_M = 500.0


def park_position(slot: int) -> tuple[float, float, float]:
    """Env-local parking position (m) of pool slot ``slot`` (identity rotation)."""
    return (0.0, 0.0, PARK_HEIGHT_M + PARK_SPACING_M * int(slot))


def is_parked(positions: torch.Tensor) -> torch.Tensor:
    """``(..., 3)`` env-local positions (m) -> ``(...)`` bool: at a parking spot."""
    return positions[..., 2] > PARKED_ABOVE_M

"""Axis-aligned bounding boxes in an asset's local frame (metres)."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class AxisAlignedBoundingBox:
    """Box ``[min_point, max_point]`` in the asset's local (root) frame, metres."""

    min_point: tuple[float, float, float]
    max_point: tuple[float, float, float]

    def __post_init__(self):
        lo = tuple(float(v) for v in self.min_point)
        hi = tuple(float(v) for v in self.max_point)
        if len(lo) != 3 or len(hi) != 3:
            raise ValueError(f"AxisAlignedBoundingBox needs 3-vectors, got {self.min_point!r}, {self.max_point!r}")
        if not all(math.isfinite(v) for v in lo + hi):
            raise ValueError(f"AxisAlignedBoundingBox must be finite, got {lo!r}, {hi!r}")
        if any(a > b for a, b in zip(lo, hi)):
            raise ValueError(f"AxisAlignedBoundingBox min {lo!r} exceeds max {hi!r}")
        object.__setattr__(self, "min_point", lo)
        object.__setattr__(self, "max_point", hi)

    @property
    def size(self) -> tuple[float, float, float]:
        return tuple(b - a for a, b in zip(self.min_point, self.max_point))

    @property
    def center(self) -> tuple[float, float, float]:
        return tuple(0.5 * (a + b) for a, b in zip(self.min_point, self.max_point))

    @staticmethod
    def from_size(size: tuple[float, float, float]) -> "AxisAlignedBoundingBox":
        """A box of ``size`` centred on the local origin."""
        half = tuple(0.5 * float(s) for s in size)
        return AxisAlignedBoundingBox(tuple(-h for h in half), half)

    def scaled(self, scale: tuple[float, float, float]) -> "AxisAlignedBoundingBox":
        lo = tuple(a * s for a, s in zip(self.min_point, scale))
        hi = tuple(b * s for b, s in zip(self.max_point, scale))
        return AxisAlignedBoundingBox(tuple(map(min, lo, hi)), tuple(map(max, lo, hi)))

"""Shared result types of placement validators (pre-physics and post-physics)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class PlacementValidatorReport:
    """One validator's verdict on one layout (one environment / candidate).

    Attributes:
        check: The check name (``PlacementCheck`` value or a custom validator's ``check``).
        passed: True or False; None when the check was skipped (disabled or not applicable).
        reason: Why it failed or was skipped; empty when it passed.
        settings: The validator's settings when the verdict was made (limits in metres, degrees, m/s, rad/s).
    """

    check: str
    passed: bool | None
    reason: str = ""
    settings: dict[str, Any] = field(default_factory=dict)

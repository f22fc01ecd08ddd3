"""Shared validation types: check names, stages, costs, and the one report type of every validator."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class PlacementCheck(str, Enum):
    """Names of the built-in pre-physics placement checks."""

    NO_OVERLAP = "no_overlap"
    CLEARANCE = "clearance"
    ON_RELATION = "on_relation"
    CLUTTER_ON_RELATION = "clutter_on_relation"
    NEXT_TO = "next_to"
    ALIGN_WITH = "align_with"
    AT_POSITION = "at_position"
    POSITION_LIMITS = "position_limits"
    NOT_NEXT_TO = "not_next_to"
    FACE_TO = "face_to"
    IK_REACHABLE = "ik_reachable"


class ValidationStage(str, Enum):
    PRE_PHYSICS = "pre_physics"
    POST_PHYSICS = "post_physics"


class ValidationCost(str, Enum):
    INEXPENSIVE = "inexpensive"
    EXPENSIVE = "expensive"


@dataclass(frozen=True)
class CheckOutcome:
    """What a pre-physics validator's ``validate_batch`` may return instead of bare verdicts: the verdicts and,
    per failing candidate, why (the diagnostics then name the cause instead of "check failed").

    Attributes:
        passed: (B,) bool verdict per candidate, in batch order.
        causes: Cause texts, e.g. ``"'mug' out of the robot's reach"``.
        cause_index: (B,) int index into ``causes`` of each failing candidate's cause; -1 where it passed or
            has no cause.
        violation_m: (B,) float, metres: how far that candidate missed (NaN: no measure), or None.
    """

    passed: Any
    causes: tuple[str, ...] = ()
    cause_index: Any = None
    violation_m: Any = None


@dataclass
class PlacementValidatorReport:
    """One validator's verdict on one layout (post-physics validators return one per env).

    Attributes:
        check: Check name.
        passed: Verdict; None when the check was skipped (disabled or not applicable).
        reason: Why it failed or was skipped ("" when passed).
        settings: The validator's settings, for the record.
        subject: The object the failure is about ("" when none).
        severity: Measured value over its limit (> 1 fails), for ranking rejection reasons.
    """

    check: str
    passed: bool | None
    reason: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    subject: str = ""
    severity: float = 0.0

    def to_dict(self) -> dict:
        return {"check": self.check, "passed": None if self.passed is None else bool(self.passed),
                "reason": self.reason, "settings": dict(self.settings)}

"""Shared validation types: check names, stages, validator reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class PlacementCheck(str, Enum):
    """Names of the built-in placement checks."""

    NO_OVERLAP = "no_overlap"
    ON_RELATION = "on_relation"
    CLUTTER_ON_RELATION = "clutter_on_relation"
    NEXT_TO = "next_to"
    NOT_NEXT_TO = "not_next_to"
    ALIGN_WITH = "align_with"
    FACE_TO = "face_to"
    IK_REACHABLE = "ik_reachable"


class ValidationStage(str, Enum):
    PRE_PHYSICS = "pre_physics"
    POST_PHYSICS = "post_physics"


class ValidationCost(str, Enum):
    INEXPENSIVE = "inexpensive"
    EXPENSIVE = "expensive"


@dataclass
class PlacementValidatorReport:
    """One validator's verdict on one layout (post-physics validators return one per env).

    Attributes:
        check: Check name.
        passed: Verdict.
        reason: Why it failed ("" when passed).
        settings: The validator's settings, for the record.
    """

    check: str
    passed: bool
    reason: str = ""
    settings: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"check": self.check, "passed": bool(self.passed), "reason": self.reason, "settings": dict(self.settings)}

"""The one validator protocol, shared by pre-physics checks (solved candidate batches) and post-physics
checks (measured scene state after settling): a unique check name, a stage, settings and reports."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from isaaclab_arena.relations.validation.types import PlacementValidatorReport, ValidationStage


def plain(value):
    """``value`` as plain dicts, lists and scalars (for reports and JSON)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


class PlacementValidator:
    """Common base: a unique ``check`` name, the ``stage`` it runs in, its settings and its reports."""

    check: ClassVar[str] = ""
    stage: ClassVar[ValidationStage] = ValidationStage.PRE_PHYSICS

    def settings(self) -> dict[str, Any]:
        """The validator's settings: its dataclass fields, if it is a dataclass."""
        if dataclasses.is_dataclass(self):
            return {f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self)}
        return {}

    def report(self, passed: bool | None, reason: str = "", subject: str = "",
               severity: float = 0.0) -> PlacementValidatorReport:
        return PlacementValidatorReport(check=self.check, passed=None if passed is None else bool(passed),
                                        reason=reason, settings=self.settings(), subject=subject,
                                        severity=float(severity))

"""Console summary of why the recorder rejected layouts: one ``Rejected <count>: <check>: <detail>`` line per reason.

Post-physics rejections are grouped by check and offending object (the report's ``subject``); the detail
shown is that of the worst layout in the group (largest measured / limit), so a pose-shift line names the
object, its measured translation and rotation and the limits. Reports without a subject group by their
exact reason. Solver rejections use the reasons ``solver validation failed`` (detail: the failed required
checks) and ``missing required solver checks`` (detail: the missing checks).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

from isaaclab_arena.relations.validation.types import PlacementValidatorReport

SOLVER_VALIDATION_FAILED = "solver validation failed"
MISSING_REQUIRED_SOLVER_CHECKS = "missing required solver checks"


@dataclass
class _Group:
    check: str
    detail: str
    count: int = 0
    severity: float = float("-inf")
    first_seen: int = 0


@dataclass
class RejectionSummary:
    """Counts of rejection reasons over a recording.

    Attributes:
        attempted: Layouts that were attempted.
        rejected: Layouts rejected for at least one reason (a layout failing two checks counts once here and
            once under each reason).
    """

    attempted: int = 0
    rejected: int = 0
    _groups: dict[tuple[str, str], _Group] = field(default_factory=dict)

    def _add(self, check: str, key: str, detail: str, severity: float = 0.0) -> None:
        group = self._groups.get((check, key))
        if group is None:
            group = self._groups[(check, key)] = _Group(check, detail, first_seen=len(self._groups))
        group.count += 1
        if severity > group.severity:
            group.severity, group.detail = severity, detail

    def add_solver_failure(self, failed_checks: Sequence[str]) -> None:
        """One layout that failed required pre-physics checks."""
        detail = ", ".join(sorted(failed_checks)) or "required checks failed"
        self._add(SOLVER_VALIDATION_FAILED, detail, detail)
        self.rejected += 1

    def add_missing_required(self, missing_checks: Sequence[str]) -> None:
        """One layout whose required pre-physics results are unavailable."""
        detail = ", ".join(sorted(missing_checks))
        self._add(MISSING_REQUIRED_SOLVER_CHECKS, detail, detail)
        self.rejected += 1

    def add_reports(self, reports: Iterable[PlacementValidatorReport]) -> bool:
        """Adds one layout's post-physics reports; returns True when any failed (the layout is rejected)."""
        failed = [r for r in reports if r.passed is False]
        for r in failed:
            subject = getattr(r, "subject", "") or ""
            key = subject if subject else r.reason
            self._add(r.check, key, r.reason or "failed", float(getattr(r, "severity", 0.0) or 0.0))
        if failed:
            self.rejected += 1
        return bool(failed)

    @property
    def counts(self) -> dict[str, int]:
        """Rejections per check / reason name (summed over objects)."""
        out: dict[str, int] = {}
        for g in self._groups.values():
            out[g.check] = out.get(g.check, 0) + g.count
        return out

    def lines(self) -> list[str]:
        """``Rejected <count>: <check>: <detail>``, most frequent first, then first seen."""
        groups = sorted(self._groups.values(), key=lambda g: (-g.count, g.first_seen))
        return [f"Rejected {g.count}: {g.check}: {g.detail}" for g in groups]

    def __str__(self) -> str:
        return "\n".join(self.lines())

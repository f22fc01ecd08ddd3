"""Post-physics placement checks run on a ``SettledBatch`` after the recorder's settling pass.

Built-in checks (every one has ``enabled: bool = True``; a disabled or inapplicable check reports
``passed=None`` with the reason):

===========================  ===============================================================================
``physics_settled``          final linear / angular speed of every root, robot included (0.1 m/s, 0.1 rad/s)
``pose_shift``               root translation / rotation from its expected resting pose (the release pose lowered
                             by the On release gaps, ``expected_rest.py``), ClutterOn roots excluded (2 mm, 2 deg)
``articulation_link_shift``  link motion relative to its root of articulated task objects, robots excluded
``support_containment``      final clutter bounds inside the support footprint (plus ``containment_margin_m``)
                             and no lower than ``resting_height_tolerance_m`` below the minimum resting height
===========================  ===============================================================================

The built-in checks live in ``post_physics_checks.py``. A custom check is a dataclass subclass of ``PostPhysicsPlacementValidator`` with ``check: ClassVar[str]``
and ``validate(batch) -> list[PlacementValidatorReport]`` (one per ``batch.env_ids`` entry, same order),
built with ``self.report(passed=..., reason=...)``. The built-ins compute every env's verdict in batched
torch; only failing envs get a message.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Iterable

import torch

from isaaclab_arena.offline_placement.settled_batch import SettledBatch
from isaaclab_arena.relations.validation.types import PlacementValidatorReport, ValidationStage
from isaaclab_arena.relations.validation.validator import PlacementValidator, plain


class PostPhysicsConfigError(ValueError):
    """Post-physics validator settings that cannot be used (names the check and the setting)."""


def positive_setting(value, check: str, name: str, allow_zero: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or \
            value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise PostPhysicsConfigError(f"settle.validators.{check}.{name} must be a finite number {bound}, got {value!r}")
    return float(value)


@dataclass
class PostPhysicsPlacementValidator(PlacementValidator):
    """Base of checks on measured scene state after settling.

    Subclasses are dataclasses; their fields are their settings (Hydra: ``settle.validators.<check>.<field>``).
    """

    check: ClassVar[str] = ""
    stage: ClassVar[ValidationStage] = ValidationStage.POST_PHYSICS
    enabled: bool = True
    """Run this check; a disabled check is recorded as skipped."""

    def __post_init__(self):
        if not isinstance(self.enabled, bool):
            raise PostPhysicsConfigError(f"settle.validators.{self.check}.enabled must be true or false, "
                                         f"got {self.enabled!r}")

    # -- to override -------------------------------------------------------------------------------
    def validate(self, batch: SettledBatch) -> list[PlacementValidatorReport]:
        """One report per ``batch.env_ids`` entry, in order."""
        raise NotImplementedError(f"{type(self).__name__}.validate")

    def is_applicable(self, batch: SettledBatch) -> tuple[bool, str]:
        """(applies, reason when it does not)."""
        return True, ""

    def applies_to_scene(self, has_clutter: bool, has_articulated_task_objects: bool) -> bool:
        """Static applicability, used to check a recording configuration before sampling."""
        return True

    # -- helpers -----------------------------------------------------------------------------------
    def skipped(self, batch: SettledBatch, reason: str) -> list[PlacementValidatorReport]:
        return [self.report(passed=None, reason=reason) for _ in batch.env_ids]

    def run(self, batch: SettledBatch) -> list[PlacementValidatorReport]:
        """Runs the check (or records it as skipped) and checks the reports' count, type and check name."""
        name = type(self).__name__
        if not self.enabled:
            return self.skipped(batch, "skipped: disabled")
        applies, why = self.is_applicable(batch)
        if not applies:
            return self.skipped(batch, f"skipped: not applicable ({why})")
        reports = self.validate(batch)
        if not isinstance(reports, (list, tuple)) or len(reports) != len(batch.env_ids):
            got = len(reports) if isinstance(reports, (list, tuple)) else type(reports).__name__
            raise PostPhysicsConfigError(f"post-physics check '{self.check}' ({name}) returned {got} reports for "
                                         f"{len(batch.env_ids)} env ids; return one report per batch.env_ids entry")
        for r in reports:
            if not isinstance(r, PlacementValidatorReport):
                raise PostPhysicsConfigError(f"post-physics check '{self.check}' ({name}) returned {r!r}; build each "
                                             "report with self.report(passed=..., reason=...)")
            if r.check != self.check:
                raise PostPhysicsConfigError(f"post-physics check '{self.check}' ({name}) returned a report for "
                                             f"'{r.check}'")
        return list(reports)

    def _reports(self, batch: SettledBatch, failed: torch.Tensor, messages: dict[int, tuple[str, str, float]]):
        """Reports from a (B,) failure mask and ``{row: (subject, reason, severity)}`` for failing rows."""
        out = []
        for row, bad in enumerate(failed.tolist()):
            if bad:
                subject, reason, severity = messages[row]
                out.append(self.report(passed=False, reason=reason, subject=subject, severity=severity))
            else:
                out.append(self.report(passed=True))
        return out


def worst(score: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row: the index of the largest score (non-finite counts as largest) and its value."""
    s = torch.where(torch.isnan(score), torch.full_like(score, float("inf")), score)
    values, indices = s.max(dim=-1)
    return indices, values


def fmt(v: float) -> str:
    return f"{v:.4g}"


@dataclass
class PostPhysicsResults:
    """Verdicts of every post-physics check on one settled batch.

    Attributes:
        env_ids: Env ids in report order.
        reports: ``{check: [report per env]}``.
        accepted: (B,) bool: no enabled, applicable check failed.
    """

    env_ids: list[int]
    reports: dict[str, list[PlacementValidatorReport]]
    accepted: torch.Tensor

    def reports_for(self, row: int) -> list[PlacementValidatorReport]:
        return [reps[row] for reps in self.reports.values()]

    def failed_reports(self, row: int) -> list[PlacementValidatorReport]:
        return [r for r in self.reports_for(row) if r.passed is False]

    def post_physics_block(self, row: int) -> dict[str, Any]:
        """The ``validation.post_physics`` block of one layout: overall verdict plus every check's report."""
        checks = {r.check: {"passed": r.passed, "reason": r.reason, "settings": plain(r.settings)}
                  for r in self.reports_for(row)}
        ran = [c["passed"] for c in checks.values() if c["passed"] is not None]
        block: dict[str, Any] = {"passed": (all(ran) if ran else None), "checks": checks}
        if not ran:
            block["reason"] = "every post-physics check was skipped"
        return block


def run_post_physics_validators(validators: Iterable[PostPhysicsPlacementValidator],
                                batch: SettledBatch) -> PostPhysicsResults:
    """Runs every validator on the batch (one settling pass shared by all).

    Raises:
        PostPhysicsConfigError: duplicate check names, or no enabled check applies to this batch.
    """
    validators = list(validators)
    names = [v.check for v in validators]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise PostPhysicsConfigError(f"post-physics checks {dup} are configured more than once")
    reports = {v.check: v.run(batch) for v in validators}
    ran = [c for c, reps in reports.items() if any(r.passed is not None for r in reps)]
    if not ran:
        raise PostPhysicsConfigError("no enabled post-physics check applies to this scene (checks: "
                                     f"{names}); at least one applicable post-physics check must remain enabled")
    failed = torch.zeros(len(batch.env_ids), dtype=torch.bool)
    for reps in reports.values():
        failed |= torch.tensor([r.passed is False for r in reps], dtype=torch.bool)
    return PostPhysicsResults(list(batch.env_ids), reports, ~failed)


def not_settled_block(reason: str = "not settled: no physics was run for this layout") -> dict[str, Any]:
    """``validation.post_physics`` for layouts that never went through settling (e.g. source "solver")."""
    return {"passed": None, "reason": reason, "checks": {}}

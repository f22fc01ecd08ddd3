"""Validate stage: ``PlacementValidationRunner`` turns a solved batch into ``PlacementValidationResults``.

Pass 1 takes the built-in checks' verdicts from the solve stage's evaluation and runs the custom
inexpensive validators on every candidate; pass 2 runs the expensive checks only on the candidates that
passed every required inexpensive check (the others count as not evaluated and failed). Nothing is
written to the batch.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import torch

from isaaclab_arena.relations.kinds import CHECK_SLOTS
from isaaclab_arena.relations.solving.placement_candidate import PlacementCandidateBatch
from isaaclab_arena.relations.validation.pre_physics import PrePhysicsPlacementValidator
from isaaclab_arena.relations.validation.registry import registered_validators
from isaaclab_arena.relations.validation.results import PlacementValidationResults
from isaaclab_arena.relations.validation.types import CheckOutcome, PlacementCheck, ValidationCost, ValidationStage

#: Checks that may be named in enabled/required_checks although no validator of the placer provides them here
#: (their validator comes with an optional extension and applies only with what it needs).
OPTIONAL_CHECKS = {PlacementCheck.IK_REACHABLE.value: "no reachability validator applies (it needs an embodiment "
                                                      "with a kinematic model in reachability_config.embodiment)"}


def _coerce_verdicts(check: str, out, n: int, device) -> torch.Tensor:
    t = out if isinstance(out, torch.Tensor) else torch.as_tensor(list(out), dtype=torch.bool)
    t = t.to(device=device, dtype=torch.bool).reshape(-1)
    if t.numel() != n:
        raise ValueError(f"validator '{check}' returned {t.numel()} verdicts for a batch of {n} candidates; it must "
                         "return one bool per candidate, in batch order")
    return t


def _coerce_outcome(check: str, out, n: int, device) -> tuple[torch.Tensor, tuple | None]:
    """(verdicts (n,) bool, causes) of what ``validate_batch`` returned: bare verdicts (causes None) or a
    ``CheckOutcome`` (causes = (texts, (n,) long index, (n,) float violation metres))."""
    if not isinstance(out, CheckOutcome):
        return _coerce_verdicts(check, out, n, device), None
    ok = _coerce_verdicts(check, out.passed, n, device)
    if out.cause_index is None:
        return ok, None
    index = torch.as_tensor(out.cause_index, device=device).long().reshape(-1)
    miss = (torch.full((n,), float("nan"), device=device) if out.violation_m is None
            else torch.as_tensor(out.violation_m, device=device).float().reshape(-1))
    if index.numel() != n or miss.numel() != n:
        raise ValueError(f"validator '{check}' returned causes for {index.numel()} / violations for {miss.numel()} "
                         f"candidates of a batch of {n}; CheckOutcome needs one per candidate")
    if index.numel() and int(index.max()) >= len(out.causes):
        raise ValueError(f"validator '{check}' returned cause index {int(index.max())} but only "
                         f"{len(out.causes)} cause texts")
    index = torch.where(ok, torch.full_like(index, -1), index)
    return ok, (tuple(out.causes), index, miss)


class PlacementValidationRunner:
    """Runs a fixed set of checks (chosen once) over candidate batches.

    Args:
        builtin: Enabled built-in checks (names from ``kinds.CHECK_SLOTS``).
        validators: Enabled registered validator instances, each with a unique ``check``.
        required_checks: Names of the checks that must pass (a subset of the enabled ones).
    """

    def __init__(self, builtin, validators: list[PrePhysicsPlacementValidator], required_checks):
        self.builtin = [c for c in CHECK_SLOTS if c in set(builtin)]
        self.validators = list(validators)
        self.custom = [v for v in self.validators if v.cost != ValidationCost.EXPENSIVE]
        self.expensive = [v for v in self.validators if v.cost == ValidationCost.EXPENSIVE]
        self.checks = tuple(self.builtin + [v.check for v in self.custom + self.expensive])
        req = set(required_checks)
        self.required = tuple(c for c in self.checks if c in req)
        self._req_mask = sum(1 << CHECK_SLOTS.index(c) for c in self.builtin if c in req)
        self._opt_mask = sum(1 << CHECK_SLOTS.index(c) for c in self.builtin if c not in req)

    @classmethod
    def from_params(cls, placer_params, extra_validators: dict | None = None) -> "PlacementValidationRunner":
        """Every built-in check, every pre-physics validator of ``extra_validators`` (check name -> class: what
        the placer's extensions add) and of the registry (``@register_validator``) that is available and applies,
        filtered by ``enabled_checks``; ``required_checks`` (None: all enabled). Unknown names raise
        ``ValueError`` listing the checks."""
        candidates = {**registered_validators(ValidationStage.PRE_PHYSICS), **(extra_validators or {})}
        registry = {k: v for k, v in candidates.items() if v.is_available() and v.applies_to(placer_params)}
        known = list(CHECK_SLOTS) + list(registry)
        enabled = placer_params.enabled_checks
        required = placer_params.required_checks
        for field_name, names in (("enabled_checks", enabled), ("required_checks", required)):
            for name in names or []:
                if name not in known and name not in OPTIONAL_CHECKS:
                    raise ValueError(f"ObjectPlacerParams.{field_name}: unknown check '{name}'; available checks: "
                                     f"{sorted(known)} (import the module defining a custom validator before "
                                     "constructing ObjectPlacer)")
        chosen = known if enabled is None else [c for c in enabled if c in known]
        for name in (enabled or []):
            if name not in known:
                warnings.warn(f"placement check '{name}' is enabled but not available: {OPTIONAL_CHECKS[name]}; "
                              "it does not run", stacklevel=3)
        req = chosen if required is None else [c for c in required if c in chosen]
        builtin = [c for c in chosen if c in CHECK_SLOTS]
        return cls(builtin, [registry[c](placer_params) for c in chosen if c in registry], req)

    def validate(self, batch: PlacementCandidateBatch, collision_objects=None) -> PlacementValidationResults:
        """The verdicts of an evaluated ``batch`` (``RelationSolver.solve`` / ``evaluate_poses`` output)."""
        base = PlacementValidationResults(self.checks, self.required, tuple(self.builtin), batch.builtin_verdicts,
                                          batch.builtin_fail_bits, self._req_mask, self._opt_mask)
        if not (self.custom or self.expensive):
            return base
        b = len(batch)
        dev = batch.positions.device
        req = set(self.required)
        verdicts: dict[str, torch.Tensor] = {}
        evaluated: dict[str, torch.Tensor | None] = {}
        req_extra = torch.zeros(b, dtype=torch.int32, device=dev)
        opt_extra = torch.zeros(b, dtype=torch.int32, device=dev)

        causes: dict[str, tuple] = {}

        def record(check: str, ok: torch.Tensor, where: torch.Tensor | None, why: tuple | None) -> None:
            verdicts[check] = ok
            evaluated[check] = where
            if why is not None:
                causes[check] = why
            (req_extra if check in req else opt_extra).add_(~ok)

        for v in self.custom:
            ok, why = _coerce_outcome(v.check, v.validate_batch(batch, collision_objects), b, dev)
            record(v.check, ok, None, why)
        if self.expensive:
            gate = (base.required_failures + req_extra) == 0
            idx = torch.nonzero(gate).flatten()
            sub = batch.select(idx) if idx.numel() else None
            for v in self.expensive:
                ok = torch.zeros(b, dtype=torch.bool, device=dev)
                why = None
                if sub is not None:
                    ok_sub, why_sub = _coerce_outcome(v.check, v.validate_batch(sub, collision_objects), idx.numel(), dev)
                    ok[idx] = ok_sub
                    if why_sub is not None:  # scattered to the whole batch: no cause where it did not run
                        index = torch.full((b,), -1, dtype=torch.long, device=dev)
                        miss = torch.full((b,), float("nan"), device=dev)
                        index[idx], miss[idx] = why_sub[1], why_sub[2]
                        why = (why_sub[0], index, miss)
                record(v.check, ok, gate, why)
        return replace(base, extra_verdicts=verdicts, extra_evaluated=evaluated, extra_required_failures=req_extra,
                       extra_optional_failures=opt_extra, extra_causes=causes)

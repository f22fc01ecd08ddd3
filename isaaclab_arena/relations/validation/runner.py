"""Validate stage: ``PlacementValidationRunner`` runs the enabled checks in two passes.

Pass 1 runs every inexpensive check on every candidate; pass 2 runs the expensive checks only on the
candidates that passed every required inexpensive check (the others count as not evaluated and
failed). Results replace each candidate's check results in the batch.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import torch

from isaaclab_arena.relations.validation.pre_physics import PrePhysicsPlacementValidator
from isaaclab_arena.relations.validation.registry import registered_validators
from isaaclab_arena.relations.validation.types import PlacementCheck, ValidationCost

#: Checks that may be named in enabled/required_checks although they are not registered here
#: (their validator registers only when an optional dependency is installed).
OPTIONAL_CHECKS = {PlacementCheck.IK_REACHABLE.value: "cuRobo (isaaclab_arena_curobo) is not installed"}


@dataclass
class PlacementValidationResults:
    """Verdicts of one validated batch.

    Attributes:
        checks: Enabled checks, in the order they ran.
        required: The enabled checks that must pass.
        verdicts: check -> (B,) bool; False where not evaluated.
        evaluated: check -> (B,) bool, where the check ran.
        required_failures / optional_failures: (B,) int32 counts of failed checks.
        passed: (B,) bool, every required check passed.
    """

    checks: list[str]
    required: list[str]
    verdicts: dict[str, torch.Tensor]
    evaluated: dict[str, torch.Tensor]
    required_failures: torch.Tensor
    optional_failures: torch.Tensor
    passed: torch.Tensor
    _counts: dict | None = field(default=None, repr=False)

    def for_candidate(self, b: int) -> dict[str, bool]:
        return {c: bool(self.verdicts[c][b]) for c in self.checks}

    def counts(self) -> dict[str, tuple[int, int]]:
        """check -> (passed, evaluated) over the batch."""
        if self._counts is None:
            self._counts = {c: (int((self.verdicts[c] & self.evaluated[c]).sum()), int(self.evaluated[c].sum()))
                            for c in self.checks}
        return self._counts


def _coerce_verdicts(check: str, out, n: int, device) -> torch.Tensor:
    t = out if isinstance(out, torch.Tensor) else torch.as_tensor(list(out), dtype=torch.bool)
    t = t.to(device=device, dtype=torch.bool).reshape(-1)
    if t.numel() != n:
        raise ValueError(f"validator '{check}' returned {t.numel()} verdicts for a batch of {n} candidates; it must "
                         "return one bool per candidate, in batch order")
    return t


class PlacementValidationRunner:
    """Runs a fixed list of validators (built once) over candidate batches.

    Args:
        validators: Validator instances, each with a unique ``check``.
        required_checks: Names of the checks that must pass (a subset of the validators' checks).
    """

    def __init__(self, validators: list[PrePhysicsPlacementValidator], required_checks):
        self.validators = list(validators)
        names = [v.check for v in self.validators]
        self.required = [c for c in names if c in set(required_checks)]
        from isaaclab_arena.relations.validation.checks import KernelCheckValidator

        self.inexpensive = [v for v in self.validators if v.cost != ValidationCost.EXPENSIVE]
        self.expensive = [v for v in self.validators if v.cost == ValidationCost.EXPENSIVE]
        # the built-in checks come from one kernel: read their verdict slots together
        self.kernel = [v for v in self.inexpensive if type(v).validate_batch is KernelCheckValidator.validate_batch]
        self.custom = [v for v in self.inexpensive if v not in self.kernel]
        self.checks = [v.check for v in self.kernel + self.custom + self.expensive]
        req = set(self.required)
        self._slots = [v.kernel_slot for v in self.kernel]
        self._req_cols = [k for k, v in enumerate(self.kernel) if v.check in req]
        self._opt_cols = [k for k, v in enumerate(self.kernel) if v.check not in req]
        self._dev_index: dict = {}
        modes = [0] * 7
        for v in self.kernel:
            modes[v.kernel_slot] = 2 if v.check in req else 1
        #: Per built-in check slot: 2 required, 1 optional, 0 not enabled (what the solve kernel counts).
        self.slot_modes = tuple(modes)

    def _index(self, device) -> tuple:
        idx = self._dev_index.get(device)
        if idx is None:
            idx = tuple(torch.tensor(x, dtype=torch.long, device=device)
                        for x in (self._slots, self._req_cols, self._opt_cols))
            self._dev_index[device] = idx
        return idx

    @classmethod
    def from_params(cls, placer_params) -> "PlacementValidationRunner":
        """Every registered, available check, filtered by ``enabled_checks``; ``required_checks`` (None:
        all enabled). Unknown names raise ``ValueError`` listing the registered checks."""
        registry = {k: v for k, v in registered_validators().items() if v.is_available()}
        enabled = placer_params.enabled_checks
        required = placer_params.required_checks
        for field_name, names in (("enabled_checks", enabled), ("required_checks", required)):
            for name in names or []:
                if name not in registry and name not in OPTIONAL_CHECKS:
                    raise ValueError(f"ObjectPlacerParams.{field_name}: unknown check '{name}'; registered checks: "
                                     f"{sorted(registry)} (import the module defining a custom validator before "
                                     "constructing ObjectPlacer)")
        chosen = list(registry) if enabled is None else [c for c in enabled if c in registry]
        for name in (enabled or []):
            if name not in registry:
                warnings.warn(f"placement check '{name}' is enabled but not available: {OPTIONAL_CHECKS[name]}; "
                              "it does not run", stacklevel=3)
        req = chosen if required is None else [c for c in required if c in chosen]
        return cls([registry[c](placer_params) for c in chosen], req)

    def run(self, batch, collision_objects=None) -> PlacementValidationResults:
        """Validates ``batch`` and stores the results on it (``check_results``, ``passed``, ...)."""
        b = len(batch)
        dev = batch.positions.device
        verdicts: dict[str, torch.Tensor] = {}
        evaluated: dict[str, torch.Tensor] = {}
        everywhere = torch.ones(b, dtype=torch.bool, device=dev)
        req = set(self.required)
        if self.kernel:
            from isaaclab_arena.relations.validation.kernel_checks import kernel_verdicts

            ok_all = kernel_verdicts(batch)
            for v in self.kernel:
                verdicts[v.check] = ok_all[:, v.kernel_slot]
                evaluated[v.check] = everywhere
            counted = batch._kernel_counts
            if counted is not None and counted[0] == self.slot_modes:
                req_fail, opt_fail = counted[1], counted[2]
                if self.custom or self.expensive:
                    req_fail, opt_fail = req_fail.clone(), opt_fail.clone()
            else:
                slots, req_cols, opt_cols = self._index(dev)
                req_fail = (~ok_all[:, slots[req_cols]]).sum(1, dtype=torch.int32)
                opt_fail = (~ok_all[:, slots[opt_cols]]).sum(1, dtype=torch.int32)
        else:
            req_fail = torch.zeros(b, dtype=torch.int32, device=dev)
            opt_fail = torch.zeros(b, dtype=torch.int32, device=dev)

        def record(check: str, ok: torch.Tensor, where: torch.Tensor) -> None:
            verdicts[check] = ok
            evaluated[check] = where
            (req_fail if check in req else opt_fail).add_(~ok)

        for v in self.custom:
            record(v.check, _coerce_verdicts(v.check, v.validate_batch(batch, collision_objects), b, dev), everywhere)
        if self.expensive:
            gate = req_fail == 0
            idx = torch.nonzero(gate).flatten()
            sub = batch.select(idx) if idx.numel() else None
            for v in self.expensive:
                ok = torch.zeros(b, dtype=torch.bool, device=dev)
                if sub is not None:
                    ok[idx] = _coerce_verdicts(v.check, v.validate_batch(sub, collision_objects), idx.numel(), dev)
                record(v.check, ok, gate)
        counted = batch._kernel_counts
        if counted is not None and counted[0] == self.slot_modes and not (self.custom or self.expensive):
            passed = counted[3]
        else:
            passed = req_fail == 0
        res = PlacementValidationResults(self.checks, self.required, verdicts, evaluated, req_fail, opt_fail, passed)
        batch.check_results = verdicts
        batch.required_failures = req_fail
        batch.optional_failures = opt_fail
        batch.passed = passed
        batch.validation = res
        batch._candidates = None
        return res

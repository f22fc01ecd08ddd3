"""Values the validate stage returns: the verdicts of one batch, and a batch paired with them."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
import torch

from isaaclab_arena.relations.kinds import CHECK_SLOTS
from isaaclab_arena.relations.solving.placement_candidate import (
    PlacementCandidate,
    PlacementCandidateBatch,
    candidate_views,
)


_POPCOUNT: dict[tuple, torch.Tensor] = {}


def _on_host(t: torch.Tensor) -> bool:
    """Whether the verdicts of ``t``'s batch are read through numpy (CPU tensors; tests switch it off to check the
    torch branch a GPU takes)."""
    return t.device.type == "cpu"


def _popcount_table(mask: int, width: int, device) -> torch.Tensor:
    """(2**width,) int32: the number of set bits of ``i & mask`` for every i (cached per mask and device)."""
    key = (mask, width, str(device))
    table = _POPCOUNT.get(key)
    if table is None:
        bits = torch.arange(1 << width, device=device)
        table = _POPCOUNT[key] = torch.stack([((bits & mask) >> s) & 1 for s in range(width)]).sum(0).to(torch.int32)
    return table


@dataclass(frozen=True)
class PlacementValidationResults:
    """Verdicts of one validated batch of B candidates.

    The built-in checks' verdicts come from the solve stage's evaluation as one (B, K) table and a failed-slot
    bit field; what the runner added (custom and expensive validators) is kept per check. Everything derived
    (per-check verdicts, failure counts, ``passed``) is computed on first use.

    Attributes:
        checks: Enabled checks, in the order they ran.
        required: The enabled checks that must pass.
        builtin_checks: The enabled built-in checks.
        builtin_verdicts: (B, K) bool verdict per built-in check slot (``kinds.CHECK_SLOTS``).
        builtin_fail_bits: (B,) int32: bit s set when built-in slot s failed.
        builtin_required_mask / builtin_optional_mask: Slot bits of the enabled required / optional built-ins.
        extra_verdicts: check -> (B,) bool of the other validators; False where not evaluated.
        extra_evaluated: check -> (B,) bool where it ran (None: everywhere).
        extra_required_failures / extra_optional_failures: (B,) int32 failures among them (None: none ran).
        extra_causes: check -> (cause texts, (B,) long index into them or -1, (B,) float violation metres or
            NaN) of the validators that returned a ``CheckOutcome``.
    """

    checks: tuple[str, ...]
    required: tuple[str, ...]
    builtin_checks: tuple[str, ...]
    builtin_verdicts: torch.Tensor
    builtin_fail_bits: torch.Tensor
    builtin_required_mask: int
    builtin_optional_mask: int
    extra_verdicts: dict[str, torch.Tensor] = field(default_factory=dict)
    extra_evaluated: dict[str, torch.Tensor | None] = field(default_factory=dict)
    extra_required_failures: torch.Tensor | None = None
    extra_optional_failures: torch.Tensor | None = None
    extra_causes: dict[str, tuple] = field(default_factory=dict)

    @cached_property
    def verdicts(self) -> dict[str, torch.Tensor]:
        """check -> (B,) bool; False where not evaluated."""
        cols = self.builtin_verdicts.unbind(1)
        out = {c: cols[CHECK_SLOTS.index(c)] for c in self.builtin_checks}
        out.update(self.extra_verdicts)
        return out

    def verdict_table(self, checks) -> torch.Tensor:
        """(B, len(checks)) bool: column k is ``verdicts[checks[k]]`` (a pool stores a slot's verdicts as one row).
        The built-in columns are taken from the (B, K) table in one gather (numpy on the CPU, as ``passed``)."""
        checks = list(checks)
        slots = [CHECK_SLOTS.index(c) if c in self.builtin_checks else -1 for c in checks]
        table = self.builtin_verdicts
        if checks and min(slots) >= 0:
            if _on_host(table):
                return torch.from_numpy(table.numpy()[:, slots])
            return table.index_select(1, torch.tensor(slots, device=table.device))
        if not checks:
            return torch.zeros(table.shape[0], 0, dtype=torch.bool, device=table.device)
        return torch.stack([self.verdicts[c] for c in checks], 1)

    @property
    def evaluated(self) -> dict[str, torch.Tensor | None]:
        """check -> (B,) bool where it ran (None: everywhere)."""
        return {**dict.fromkeys(self.builtin_checks), **self.extra_evaluated}

    def _failures(self, mask: int, extra: torch.Tensor | None) -> torch.Tensor:
        table = _popcount_table(mask, len(CHECK_SLOTS), self.builtin_fail_bits.device)
        if _on_host(table):  # one thread (see ``passed``)
            counts = torch.from_numpy(table.numpy()[self.builtin_fail_bits.numpy()])
        else:
            counts = table.index_select(0, self.builtin_fail_bits.long())
        return counts if extra is None else counts + extra

    @cached_property
    def required_failures(self) -> torch.Tensor:
        """(B,) int32 failed required checks."""
        return self._failures(self.builtin_required_mask, self.extra_required_failures)

    @cached_property
    def optional_failures(self) -> torch.Tensor:
        """(B,) int32 failed enabled-but-optional checks."""
        return self._failures(self.builtin_optional_mask, self.extra_optional_failures)

    @cached_property
    def num_passed(self) -> int:
        """How many candidates passed every required check (one host read)."""
        passed = self.passed
        return int(np.count_nonzero(passed.numpy())) if _on_host(passed) else int(passed.sum())

    @cached_property
    def passed(self) -> torch.Tensor:
        """(B,) bool: every required check passed."""
        if self.extra_required_failures is not None:
            return self.required_failures == 0
        bits = self.builtin_fail_bits
        if _on_host(bits):  # one thread (torch's parallel ops leave their threads spinning: copy_into)
            return torch.from_numpy((bits.numpy() & self.builtin_required_mask) == 0)
        return (bits & self.builtin_required_mask) == 0

    def evaluated_mask(self, check: str) -> torch.Tensor:
        """(B,) bool: where ``check`` ran."""
        mask = self.extra_evaluated.get(check)
        return torch.ones_like(self.passed) if mask is None else mask

    def for_candidate(self, b: int) -> dict[str, bool]:
        return {c: bool(self.verdicts[c][b]) for c in self.checks}

    @cached_property
    def _counts(self) -> dict[str, tuple[int, int]]:
        # one host copy for every check; a built-in check is evaluated for every candidate
        B = self.builtin_verdicts.shape[0]
        out: dict[str, tuple[int, int]] = {}
        if self.builtin_checks:
            slots = [CHECK_SLOTS.index(c) for c in self.builtin_checks]
            verdicts = self.builtin_verdicts
            if _on_host(verdicts):  # one thread (see ``passed``), and no (B, K) copy
                if not self.builtin_fail_bits.numpy().any():  # every candidate passed every built-in check
                    passed = [B] * len(slots)
                else:  # bools as bytes summed per column (np.count_nonzero over an axis is 3x slower)
                    passed = verdicts.numpy().view(np.uint8).sum(axis=0)[slots].tolist()
            else:
                passed = verdicts[:, slots].sum(0).tolist()
            out.update({c: (p, B) for c, p in zip(self.builtin_checks, passed)})
        extra = [c for c in self.checks if c not in out]
        if extra:
            rows = torch.stack([torch.stack([(self.verdicts[c] & self.evaluated_mask(c)).sum(),
                                             self.evaluated_mask(c).sum()]) for c in extra]).tolist()
            out.update({c: (p, e) for c, (p, e) in zip(extra, rows)})
        return {c: out[c] for c in self.checks}

    def counts(self) -> dict[str, tuple[int, int]]:
        """check -> (passed, evaluated) over the batch."""
        return self._counts

    def select(self, index: torch.Tensor) -> "PlacementValidationResults":
        def pick(t):
            return None if t is None else t[index]

        return replace(self, builtin_verdicts=self.builtin_verdicts[index],
                       builtin_fail_bits=self.builtin_fail_bits[index],
                       extra_verdicts={c: v[index] for c, v in self.extra_verdicts.items()},
                       extra_evaluated={c: pick(v) for c, v in self.extra_evaluated.items()},
                       extra_required_failures=pick(self.extra_required_failures),
                       extra_optional_failures=pick(self.extra_optional_failures),
                       extra_causes={c: (t, i[index], m[index]) for c, (t, i, m) in self.extra_causes.items()})


@dataclass(frozen=True)
class ValidatedBatch:
    """A solved batch and its verdicts, as the placer and the pool use them (ranking, storage, diagnostics).

    Attributes:
        solved: The solved candidates (poses and what the solver measured of them).
        validation: Their verdicts.
    """

    solved: PlacementCandidateBatch
    validation: PlacementValidationResults

    def __len__(self) -> int:
        return len(self.solved)

    @property
    def problem(self):
        return self.solved.problem

    @property
    def object_names(self) -> list[str]:
        return self.solved.object_names

    @property
    def env_ids(self) -> torch.Tensor:
        return self.solved.env_ids

    @property
    def draw_ids(self) -> torch.Tensor:
        return self.solved.draw_ids

    @property
    def positions(self) -> torch.Tensor:
        """(B, n, 3) env-local origins, metres."""
        return self.solved.positions

    @property
    def rotations(self) -> torch.Tensor:
        """(B, n, 4) xyzw."""
        return self.solved.rotations

    @property
    def bounds(self) -> tuple[torch.Tensor, torch.Tensor]:
        """World-aligned bounds (lo, hi), each (B, n, 3), metres."""
        return self.solved.bounds

    @property
    def loss(self) -> torch.Tensor:
        return self.solved.loss

    @property
    def iterations(self) -> torch.Tensor:
        return self.solved.iterations

    @property
    def position_history(self) -> torch.Tensor | None:
        return self.solved.position_history

    @property
    def check_results(self) -> dict[str, torch.Tensor]:
        """check -> (B,) bool verdicts."""
        return self.validation.verdicts

    @property
    def passed(self) -> torch.Tensor:
        return self.validation.passed

    @property
    def required_failures(self) -> torch.Tensor:
        return self.validation.required_failures

    @property
    def optional_failures(self) -> torch.Tensor:
        return self.validation.optional_failures

    def select(self, index: torch.Tensor) -> "ValidatedBatch":
        return ValidatedBatch(self.solved.select(index), self.validation.select(index))

    @cached_property
    def candidates(self) -> list[PlacementCandidate]:
        """Per-candidate views with their check results."""
        return candidate_views(self.solved, self.validation.verdicts)

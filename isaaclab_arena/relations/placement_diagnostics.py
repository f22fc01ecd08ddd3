"""Placement diagnostics: what each pool fill's candidate batches did and why checks rejected them.

Per batch: candidates validated, candidates that passed every required check, per-check run/pass counts
(``<check>=<passed>/<evaluated>``; expensive checks run only on survivors, so ``evaluated`` may be < N),
rejection causes (check, object, relation, what failed, a measured violation) with counts, and the envs
that fell back to best-loss layouts. Printed after each batch in the spec's console form and written as
JSON (``placement_diagnostics.json``) under the run's output directory. Imports no simulator.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field

import torch


@dataclass
class RejectionCause:
    """One kind of rejection: which check, on which object / relation, how often, one measured example."""

    check: str
    cause: str
    count: int
    example_violation: float | None = None
    example_env: int | None = None


@dataclass
class BatchDiagnostics:
    fill_index: int
    batch_index: int
    num_candidates: int
    num_passed_required: int
    checks: dict[str, dict[str, int]]  # check -> {"passed": p, "evaluated": e}
    rejections: list[RejectionCause] = field(default_factory=list)
    envs: list[int] = field(default_factory=list)

    def console_lines(self) -> list[str]:
        per_check = ", ".join(f"{c}={v['passed']}/{v['evaluated']}" for c, v in self.checks.items())
        lines = [f"[placement] Validated {self.num_candidates} candidate layout(s); passed per check: {per_check}"]
        for r in self.rejections:
            ex = "" if r.example_violation is None else f" (e.g. violation {r.example_violation:.4g} in env {r.example_env})"
            lines.append(f"  {r.check}: {r.cause}: {r.count} rejected{ex}")
        return lines


@dataclass
class FillDiagnostics:
    fill_index: int
    reason: str  # "creation" or "reset_refill"
    envs: list[int]
    layouts_per_env: int
    batches: list[BatchDiagnostics] = field(default_factory=list)
    fallback_envs: list[int] = field(default_factory=list)
    fallback_slots: int = 0
    available_per_env: list[int] = field(default_factory=list)


class PlacementDiagnostics:
    """Collects fills and batches; prints after each batch; writes JSON under ``output_dir``."""

    FILE_NAME = "placement_diagnostics.json"

    def __init__(self, output_dir: str | None = None, verbose: bool = True):
        self.output_dir = output_dir
        self.verbose = verbose
        self.fills: list[FillDiagnostics] = []

    @property
    def path(self) -> str | None:
        return None if self.output_dir is None else os.path.join(self.output_dir, self.FILE_NAME)

    def begin_fill(self, reason: str, envs: list[int], layouts_per_env: int) -> FillDiagnostics:
        fill = FillDiagnostics(len(self.fills), reason, list(envs), layouts_per_env)
        self.fills.append(fill)
        return fill

    def record_batch(self, fill: FillDiagnostics, batch, env_ids: torch.Tensor, required: list[str]) -> BatchDiagnostics:
        """Summarises one ``PlacementCandidateBatch`` (check verdicts, passed mask, optional violations)."""
        n = int(batch.passed.shape[0])
        evaluated_masks = getattr(batch, "check_evaluated", None) or {}
        checks = {}
        for name, verdict in batch.check_results.items():
            ev = evaluated_masks.get(name)
            ev = torch.ones(n, dtype=torch.bool, device=verdict.device) if ev is None else ev.to(torch.bool)
            checks[name] = {"passed": int((verdict.to(torch.bool) & ev).sum()), "evaluated": int(ev.sum())}
        diag = BatchDiagnostics(fill.fill_index, len(fill.batches), n, int(batch.passed.sum()), checks,
                                self._rejections(batch, env_ids, evaluated_masks), sorted(set(env_ids.tolist())))
        fill.batches.append(diag)
        if self.verbose:
            print("\n".join(diag.console_lines()), flush=True)
        return diag

    @staticmethod
    def _rejections(batch, env_ids: torch.Tensor, evaluated_masks: dict) -> list[RejectionCause]:
        """Rejection causes: the placer's per-cause details when it gives them, else one line per failed check."""
        details = getattr(batch, "rejection_details", None)
        out: list[RejectionCause] = []
        if details:  # list of (check, cause, candidate_index, violation)
            grouped: dict[tuple[str, str], list] = {}
            for check, cause, idx, violation in details:
                grouped.setdefault((check, cause), []).append((idx, violation))
            for (check, cause), items in grouped.items():
                idx, worst = max(items, key=lambda t: (t[1] if t[1] is not None else -1.0))
                out.append(RejectionCause(check, cause, len(items), None if worst is None else float(worst),
                                          int(env_ids[idx])))
            return out
        violations = dict(getattr(batch, "violations", None) or {})
        depth = getattr(batch, "overlap_depth", None)
        if depth is not None and "no_overlap" not in violations:
            violations["no_overlap"] = depth.detach().cpu()  # metres of the most-penetrating pair
        excess = getattr(batch, "relation_excess", None)
        if excess is not None and excess.ndim == 2 and excess.shape[1] > 0:
            worst = excess.detach().cpu().max(dim=1).values  # metres beyond what the relation check accepts
            for check in batch.check_results:
                violations.setdefault(check, worst)
        for check, verdict in batch.check_results.items():
            ev = evaluated_masks.get(check)
            failed = ~verdict.to(torch.bool)
            if ev is not None:
                failed &= ev.to(torch.bool)
            count = int(failed.sum())
            if count == 0:
                continue
            v = violations.get(check)
            example, env = None, None
            failed = failed.cpu()
            if v is not None:
                v = v.detach().cpu().float()
                vals = torch.where(failed, v, torch.full_like(v, -float("inf")))
                i = int(vals.argmax())
                example, env = float(vals[i]), int(env_ids[i])
            else:
                env = int(env_ids[int(failed.nonzero()[0])])
            out.append(RejectionCause(check, "check failed", count, example, env))
        return out

    def end_fill(self, fill: FillDiagnostics, fallback_envs: list[int], fallback_slots: int,
                 available_per_env: list[int]) -> None:
        fill.fallback_envs = sorted(fallback_envs)
        fill.fallback_slots = int(fallback_slots)
        fill.available_per_env = list(available_per_env)
        if fallback_envs and self.verbose:
            print(f"[placement] best-loss fallback used for {fallback_slots} layout slot(s) in env(s) "
                  f"{fill.fallback_envs}: they fail at least one required check", flush=True)
        self.write()

    def to_dict(self) -> dict:
        return {"fills": [asdict(f) for f in self.fills]}

    def write(self) -> str | None:
        """Writes the JSON atomically (temp file + rename); returns its path, or None without an output dir."""
        if self.path is None:
            return None
        os.makedirs(self.output_dir, exist_ok=True)
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.to_dict(), f, indent=1)
        os.replace(tmp, self.path)
        return self.path

"""Placement diagnostics: what each pool fill's candidate batches did and why checks rejected them.

Per batch: candidates validated, candidates that passed every required check, per-check run/pass counts
(``<check>=<passed>/<evaluated>``; expensive checks run only on survivors, so ``evaluated`` may be < N),
rejection causes with counts and one measured violation each, and the envs that fell back to best-loss
layouts. A cause names the object, the relation and what failed (``'bowl' next_to(mug, positive_x): on the
wrong side``) and carries no measured value, so identical causes count together; the violation is how far
(metres) the worst candidate of that cause lies beyond what the check accepts.

Printed after each batch in the spec's console form::

    [placement] Validated <N> candidate layout(s); passed per check: <check>=<passed>/<evaluated>, ...
      <check>: <cause>: <count> rejected (e.g. by <v> m, env <e>)

and written as JSON (``placement_diagnostics.json``, atomically) under the run's output directory.
Causes are grouped with batched torch ops (one ``unique`` per batch); the only Python loop is over the
distinct causes. Imports no simulator.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field

import torch


@dataclass
class RejectionCause:
    """One kind of rejection: which check, what failed (object, relation, failure), how often, and the
    worst measured violation (metres) with the env of that candidate."""

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
            ex = "" if r.example_violation is None else f"by {r.example_violation:.3f} m, "
            env = "" if r.example_env is None else f"env {r.example_env}"
            lines.append(f"  {r.check}: {r.cause}: {r.count} rejected (e.g. {ex}{env})")
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


def _evaluated_masks(batch) -> dict:
    res = getattr(batch, "validation", None)
    if res is not None and getattr(res, "evaluated", None):
        return res.evaluated
    return getattr(batch, "check_evaluated", None) or {}


def _group_max(keys: torch.Tensor, values: torch.Tensor):
    """Distinct ``keys`` with their counts and, per key, the index (into ``keys``) of its largest value."""
    uniq, inv, counts = torch.unique(keys, return_inverse=True, return_counts=True)
    best = torch.full((uniq.numel(),), -float("inf"), dtype=values.dtype)
    best = best.scatter_reduce(0, inv, values, reduce="amax")
    is_best = values == best[inv]
    pos = torch.arange(keys.numel())
    arg = torch.full((uniq.numel(),), keys.numel(), dtype=torch.long)
    arg = arg.scatter_reduce(0, inv[is_best], pos[is_best], reduce="amin")
    return uniq, counts, best, arg


def _relation_causes(batch, env_ids: torch.Tensor, failed: dict[str, torch.Tensor]) -> list[RejectionCause]:
    """Causes of the kernel-backed checks, from the per-relation excess/cause tables and the worst pair."""
    problem = getattr(batch, "problem", None)
    out: list[RejectionCause] = []
    handled: set[str] = set()
    if problem is None:
        return out
    from isaaclab_arena.relations.validation.diagnostics import CAUSES
    from isaaclab_arena.relations.validation.kernel_checks import kernel_verdicts

    kernel_verdicts(batch)
    env_ids = env_ids.cpu()
    if "no_overlap" in failed and batch.overlap_depth is not None:
        handled.add("no_overlap")
        bad = failed["no_overlap"] & (batch.overlap_depth.cpu() > problem.tables.slack)
        idx = bad.nonzero().flatten()
        if idx.numel():
            uniq, counts, best, arg = _group_max(batch.overlap_pair.cpu().long()[idx],
                                                 batch.overlap_depth.cpu().float()[idx])
            for k, n, v, a in zip(uniq.tolist(), counts.tolist(), best.tolist(), arg.tolist()):
                a_name, b_name = problem.pair_names(k)
                out.append(RejectionCause("no_overlap", f"'{a_name}' overlaps '{b_name}'", n, v,
                                          int(env_ids[idx[a]])))
    if problem.num_relations and batch.relation_cause is not None:
        cause = batch.relation_cause.cpu().long()
        excess = batch.relation_excess.cpu().float()
        checks = [rel.check for rel in problem.relations]
        # a relation's failure counts only where its check failed (and ran) for that candidate
        col_failed = torch.zeros_like(cause, dtype=torch.bool)
        for r, check in enumerate(checks):
            if check in failed:
                col_failed[:, r] = failed[check]
                handled.add(check)
        b_idx, r_idx = ((cause != 0) & col_failed).nonzero(as_tuple=True)
        if b_idx.numel():
            code = cause[b_idx, r_idx]
            width = int(code.max()) + 1
            uniq, counts, best, arg = _group_max(r_idx * width + code, excess[b_idx, r_idx])
            for key, n, v, a in zip(uniq.tolist(), counts.tolist(), best.tolist(), arg.tolist()):
                rel = problem.relations[key // width]
                text = CAUSES.get(type(rel.relation), {}).get(key % width, "violated")
                out.append(RejectionCause(rel.check, f"{rel.description}: {text}", n, max(v, 0.0),
                                          int(env_ids[b_idx[a]])))
    batch._diag_handled = handled
    return out


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
        """Summarises one validated ``PlacementCandidateBatch`` (verdicts, evaluated masks, causes)."""
        n = int(batch.passed.shape[0])
        evaluated_masks = _evaluated_masks(batch)
        names = list(batch.check_results)
        # verdicts and evaluated masks are stacked on the batch's device and copied to the host once
        # (a device batch costs one transfer per batch, not two per check)
        dev = batch.passed.device
        ok = torch.stack([batch.check_results[c].detach().to(dev, torch.bool) for c in names]
                         + [batch.passed.detach().to(dev, torch.bool)]).cpu()
        ev = torch.ones(len(names), n, dtype=torch.bool, device=dev)
        for i, c in enumerate(names):
            if evaluated_masks.get(c) is not None:
                ev[i] = evaluated_masks[c].detach().to(dev, torch.bool)
        ev = ev.cpu()
        num_passed = int(ok[-1].sum())
        ok = ok[:-1]
        passed_counts = (ok & ev).sum(1).tolist()
        evaluated_counts = ev.sum(1).tolist()
        checks = {c: {"passed": p, "evaluated": e} for c, p, e in zip(names, passed_counts, evaluated_counts)}
        failed = {c: ~ok[i] & ev[i] for i, c in enumerate(names)}
        env_ids = env_ids.cpu()
        diag = BatchDiagnostics(fill.fill_index, len(fill.batches), n, num_passed, checks,
                                self._rejections(batch, env_ids, failed), env_ids.unique().tolist())
        fill.batches.append(diag)
        if self.verbose:
            print("\n".join(diag.console_lines()), flush=True)
        return diag

    @staticmethod
    def _rejections(batch, env_ids: torch.Tensor, failed: dict[str, torch.Tensor]) -> list[RejectionCause]:
        """Named causes for the built-in checks; one ``check failed`` line for checks without cause tables
        (custom and expensive validators), with the env of the first failing candidate."""
        out = _relation_causes(batch, env_ids, failed)
        handled = getattr(batch, "_diag_handled", set())
        env_ids = env_ids.cpu()
        for check, bad in failed.items():
            count = int(bad.sum())
            if count == 0 or check in handled and any(r.check == check for r in out):
                continue
            out.append(RejectionCause(check, "check failed", count, None, int(env_ids[int(bad.nonzero()[0])])))
        order = list(failed)
        out.sort(key=lambda r: (order.index(r.check) if r.check in order else len(order), -r.count))
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

"""Placement diagnostics: why candidates failed, per candidate and per batch, and what each pool fill did.

A rejection has a cause that names the object, the relation and the failure (``'bowl' next_to(mug,
positive_x): on the wrong side``; the text comes from the relation kind's cause codes) without measured
values, so identical causes count together, and a violation: how far (metres) the candidate lies beyond
what the check accepts. Built-in checks get named causes from the solve stage's per-relation tables and
worst overlapping pair; custom and expensive validators get one ``check failed`` cause.

After each batch one summary is printed::

    [placement] Validated <N> candidate layout(s); passed per check: <check>=<passed>/<evaluated>, ...
      <check>: <cause>: <count> rejected (e.g. by <v> m, env <e>)

``PlacementDiagnostics`` collects the fills' batches and fallbacks and writes them as JSON
(``placement_diagnostics.json``, atomically) under the run's output directory. A long run refills at many resets:
the first fill, the first ``KEEP_SHORT_FILLS`` fills that stayed short and the last ``KEEP_RECENT_FILLS`` fills are
kept whole, earlier ones are summed into ``earlier_fills`` (counts), so memory and the JSON rewritten after each
fill stay bounded. Causes are grouped with
batched torch ops (one ``unique`` per batch); the only Python loop is over the distinct causes.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from isaaclab_arena.relations.diagnostics.failure_explanation import (  # noqa: F401 - re-exported (the explanation's home)
    PAIR_CHECKS,
    ClosestMiss,
    FailureTally,
    explanation_text,
    placement_advice,
)
from isaaclab_arena.relations.validation.results import ValidatedBatch


@dataclass(frozen=True)
class RejectionRecord:
    """One reason one candidate failed one check."""

    candidate: int
    env_id: int
    check: str
    cause: str
    violation_m: float

    @property
    def violation(self) -> str:
        return f"by {self.violation_m:.3f} m"


@dataclass
class RejectionCause:
    """One kind of rejection: which check, what failed (object, relation, failure), how often, and the worst
    measured violation (metres) with the env of that candidate."""

    check: str
    cause: str
    count: int
    example_violation: float | None = None
    example_env: int | None = None

    def line(self) -> str:
        ex = "" if self.example_violation is None else f"by {self.example_violation:.3f} m, "
        env = "" if self.example_env is None else f"env {self.example_env}"
        return f"  {self.check}: {self.cause}: {self.count} rejected (e.g. {ex}{env})"


def _failed_masks(vb: ValidatedBatch) -> dict[str, torch.Tensor]:
    """check -> (B,) bool on the host: the check ran and failed."""
    v = vb.validation
    return {c: (~v.verdicts[c] & v.evaluated_mask(c)).cpu() for c in v.checks}


def _pair_failures(vb: ValidatedBatch, failed: dict[str, torch.Tensor]) -> dict[str, tuple]:
    """check -> (candidate idx, pair, depth) of the failing candidates of each pair check; host tensors."""
    b = vb.solved
    out = {}
    for check, (pair_field, depth_field, _) in PAIR_CHECKS.items():
        bad, depth = failed.get(check), getattr(b, depth_field)
        if bad is None or depth is None:
            continue
        idx = (bad & (depth.cpu() > b.problem.slack)).nonzero().flatten()
        out[check] = (idx, getattr(b, pair_field).cpu().long()[idx], depth.cpu().float()[idx])
    return out


def _relation_failures(vb: ValidatedBatch, failed: dict[str, torch.Tensor]):
    """(candidate idx, relation idx, cause code, excess) of every relation whose check failed for that
    candidate; host tensors (None without relations)."""
    b = vb.solved
    problem = b.problem
    if not problem.num_relations or b.relation_cause is None:
        return None
    cause = b.relation_cause.cpu().long()
    col_failed = torch.zeros_like(cause, dtype=torch.bool)
    for r, rel in enumerate(problem.relations):  # a relation counts only where its check failed
        if rel.check in failed:
            col_failed[:, r] = failed[rel.check]
    bi, ri = ((cause != 0) & col_failed).nonzero(as_tuple=True)
    return bi, ri, cause[bi, ri], b.relation_excess.cpu().float()[bi, ri]


def _pair_text(problem, check: str, k: int) -> str:
    a, b = problem.pair_names(k)
    return PAIR_CHECKS[check][2].format(a=a, b=b)


def _group_max(keys: torch.Tensor, values: torch.Tensor):
    """Distinct ``keys`` with their counts and, per key, the largest value and the index (into ``keys``) of it."""
    uniq, inv, counts = torch.unique(keys, return_inverse=True, return_counts=True)
    best = torch.full((uniq.numel(),), -float("inf"), dtype=values.dtype).scatter_reduce(0, inv, values, reduce="amax")
    is_best = values == best[inv]
    pos = torch.arange(keys.numel())
    arg = torch.full((uniq.numel(),), keys.numel(), dtype=torch.long)
    arg = arg.scatter_reduce(0, inv[is_best], pos[is_best], reduce="amin")
    return uniq, counts, best, arg


def rejection_causes(vb: ValidatedBatch) -> list[RejectionCause]:
    """Every distinct rejection cause of a validated batch with its count and worst example, in check order."""
    problem = vb.problem
    env_ids = vb.env_ids.cpu()
    failed = _failed_masks(vb)
    rel = _relation_failures(vb, failed)
    out: list[RejectionCause] = []
    named: set[str] = set()
    for check, (idx, pairs, depth) in _pair_failures(vb, failed).items():
        if idx.numel():
            named.add(check)
            uniq, counts, best, arg = _group_max(pairs, depth)
            for k, n, v, a in zip(uniq.tolist(), counts.tolist(), best.tolist(), arg.tolist()):
                out.append(RejectionCause(check, _pair_text(problem, check, k), n, v, int(env_ids[idx[a]])))
    if rel is not None and rel[0].numel():
        bi, ri, code, excess = rel
        width = int(code.max()) + 1
        uniq, counts, best, arg = _group_max(ri * width + code, excess)
        for key, n, v, a in zip(uniq.tolist(), counts.tolist(), best.tolist(), arg.tolist()):
            cr = problem.relations[key // width]
            named.add(cr.check)
            out.append(RejectionCause(cr.check, f"{cr.description}: {cr.kind.cause_text(key % width)}", n,
                                      max(v, 0.0), int(env_ids[bi[a]])))
    for check, (texts, index, miss) in vb.validation.extra_causes.items():  # validators naming their causes
        if check not in failed:
            continue
        idx = (failed[check] & (index.cpu() >= 0)).nonzero().flatten()
        if idx.numel():
            named.add(check)
            score = miss.cpu().float()[idx].nan_to_num(nan=-1.0)
            uniq, counts, best, arg = _group_max(index.cpu()[idx], score)
            for c, n, v, a in zip(uniq.tolist(), counts.tolist(), best.tolist(), arg.tolist()):
                out.append(RejectionCause(check, texts[c], n, None if v < 0 else v, int(env_ids[idx[a]])))
    for check, bad in failed.items():
        count = int(bad.sum())
        if count and check not in named:
            out.append(RejectionCause(check, "check failed", count, None, int(env_ids[int(bad.nonzero()[0])])))
    order = list(vb.validation.checks)
    out.sort(key=lambda r: (order.index(r.check) if r.check in order else len(order), -r.count))
    return out


def rejection_records(vb: ValidatedBatch) -> list[RejectionRecord]:
    """Every (candidate, check, cause, violation) of a validated batch (host loop over failures: for the
    few best candidates of ``ObjectPlacer.place``, not for whole pools)."""
    problem = vb.problem
    env = vb.env_ids.cpu().tolist()
    failed = _failed_masks(vb)
    rel = _relation_failures(vb, failed)
    out: list[RejectionRecord] = []
    for check, fails in _pair_failures(vb, failed).items():
        for b, k, d in zip(*(t.tolist() for t in fails)):
            out.append(RejectionRecord(b, env[b], check, _pair_text(problem, check, k), d))
    if rel is not None:
        for b, r, c, x in zip(*(t.tolist() for t in rel)):
            cr = problem.relations[r]
            out.append(RejectionRecord(b, env[b], cr.check, f"{cr.description}: {cr.kind.cause_text(c)}", x))
    for check, (texts, index, miss) in vb.validation.extra_causes.items():
        if check in failed:
            for b in (failed[check] & (index.cpu() >= 0)).nonzero().flatten().tolist():
                out.append(RejectionRecord(b, env[b], check, texts[int(index[b])], float(miss[b])))
    named = {(r.candidate, r.check) for r in out}
    for check, bad in failed.items():
        for b in bad.nonzero().flatten().tolist():
            if (b, check) not in named:
                out.append(RejectionRecord(b, env[b], check, "check failed", float("nan")))
    return out


#: Rejection causes a batch's console block lists (a crowded scene has one per distinct pair).
CONSOLE_MAX_CAUSES = 8


@dataclass
class BatchDiagnostics:
    fill_index: int
    batch_index: int
    num_candidates: int
    num_passed_required: int
    checks: dict[str, dict[str, int]]  # check -> {"passed": p, "evaluated": e}, the checks this scene uses
    rejections: list[RejectionCause] = field(default_factory=list)
    envs: list[int] = field(default_factory=list)
    not_used: list[str] = field(default_factory=list)  # built-in checks with nothing to judge in this scene

    def console_lines(self) -> list[str]:
        per_check = ", ".join(f"{c}={v['passed']}/{v['evaluated']}" for c, v in self.checks.items())
        unused = f"; not used: {', '.join(self.not_used)}" if self.not_used else ""
        lines = [f"[placement] Validated {self.num_candidates} candidate layout(s); passed per check: {per_check}"
                 f"{unused}"]
        shown, extra = self.rejections[:CONSOLE_MAX_CAUSES], len(self.rejections) - CONSOLE_MAX_CAUSES
        more = [f"  ... and {extra} more cause(s) (placement_diagnostics.json)"] if extra > 0 else []
        return lines + [r.line() for r in shown] + more

    def outline(self) -> tuple:
        """What the console block says apart from its figures: the checks evaluated, those that rejected
        candidates and the causes. Batches of one fill with the same outline print once (``record_batch``)."""
        failing = tuple(sorted(c for c, v in self.checks.items() if v["passed"] < v["evaluated"]))
        return tuple(self.checks), failing, tuple(sorted({(r.check, r.cause) for r in self.rejections}))


def batch_diagnostics(vb: ValidatedBatch, fill_index: int = 0, batch_index: int = 0) -> BatchDiagnostics:
    """The summary of one validated batch (one host copy of the verdicts). Built-in checks with nothing to judge in
    the scene (not in ``problem.checks_present``) are listed as ``not_used`` instead of as passed."""
    counts = vb.validation.counts()
    builtin = set(vb.validation.builtin_checks)
    present = vb.problem.checks_present if vb.problem is not None and vb.problem.checks_present else set(counts)
    not_used = [c for c in counts if c in builtin and c not in present]
    checks = {c: {"passed": p, "evaluated": e} for c, (p, e) in counts.items() if c not in not_used}
    # a batch in which every evaluated check passed has no rejection cause: the per-check scan is skipped
    causes = rejection_causes(vb) if any(p < e for p, e in counts.values()) else []
    return BatchDiagnostics(fill_index, batch_index, len(vb), vb.validation.num_passed, checks, causes,
                            _distinct_envs(vb.env_ids), not_used)


def _distinct_envs(env_ids: torch.Tensor) -> list[int]:
    """The distinct env ids (>= 0) of a batch, ascending (on the CPU by counting, without a sort)."""
    if env_ids.device.type == "cpu" and env_ids.numel():
        return np.flatnonzero(np.bincount(env_ids.numpy())).tolist()
    return env_ids.unique().cpu().tolist()


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
    explanation: str = ""  # closest misses of the envs that stayed short (empty when every env filled)
    advice: str = ""  # the knob or change that would most likely help (empty when every env filled)
    closest_misses: list[dict] = field(default_factory=list)  # ClosestMiss entries of the short envs


#: Fills kept whole besides the first: the most recent ones, and the first ones that stayed short (explained).
KEEP_RECENT_FILLS = 32
KEEP_SHORT_FILLS = 8


class PlacementDiagnostics:
    """Collects fills and batches; prints after each batch; writes JSON under ``output_dir``.

    Attributes:
        fills: The fills kept whole (see the module docstring), in fill order; ``fill_index`` counts every fill.
        earlier_fills: Sums over the fills no longer kept whole: ``fills``, ``batches``, ``candidates``,
            ``passed`` (every required check), ``fallback_slots``.
    """

    FILE_NAME = "placement_diagnostics.json"

    def __init__(self, output_dir: str | None = None, verbose: bool = True):
        self.output_dir = output_dir
        self.verbose = verbose
        self.fills: list[FillDiagnostics] = []
        self.num_fills = 0
        self.earlier_fills = {"fills": 0, "batches": 0, "candidates": 0, "passed": 0, "fallback_slots": 0}
        self._printed: dict[int, tuple] = {}  # fill -> outline of the batch block printed last
        self._alike: dict[int, tuple] = {}  # fill -> (batches, candidates, passed) held back since (same outline)

    @property
    def path(self) -> str | None:
        return None if self.output_dir is None else os.path.join(self.output_dir, self.FILE_NAME)

    def begin_fill(self, reason: str, envs: list[int], layouts_per_env: int) -> FillDiagnostics:
        fill = FillDiagnostics(self.num_fills, reason, list(envs), layouts_per_env)
        self.num_fills += 1
        self.fills.append(fill)
        return fill

    def record_batch(self, fill: FillDiagnostics, vb: ValidatedBatch, preface: list[str] | tuple = ()) -> BatchDiagnostics:
        """Keeps the batch's figures; prints its block (``preface``: e.g. the solver's line of that batch first)
        unless the previous block of this fill had the same outline, in which case it is counted and
        ``end_fill`` says how many were alike. Every batch stays in the JSON."""
        diag = batch_diagnostics(vb, fill.fill_index, len(fill.batches))
        fill.batches.append(diag)
        if self.verbose:
            outline = diag.outline()
            if self._printed.get(fill.fill_index) == outline:
                k, cands, passed = self._alike.get(fill.fill_index, (0, 0, 0))
                self._alike[fill.fill_index] = (k + 1, cands + diag.num_candidates, passed + diag.num_passed_required)
            else:
                self._say_alike(fill)
                self._printed[fill.fill_index] = outline
                print("\n".join([*preface, *diag.console_lines()]), flush=True)
        return diag

    def _say_alike(self, fill: FillDiagnostics) -> None:
        k, cands, passed = self._alike.pop(fill.fill_index, (0, 0, 0))
        if k:
            where = f" (each in {self.path})" if self.path else ""
            print(f"[placement] ... {k} more batch(es) like the one above: {cands} candidates, {passed} passed "
                  f"every required check{where}", flush=True)

    def end_fill(self, fill: FillDiagnostics, fallback_envs: list[int], fallback_slots: int,
                 available_per_env: list[int], explanation: str = "", advice: str = "",
                 misses: list[ClosestMiss] | None = None) -> None:
        if self.verbose:
            self._say_alike(fill)
        fill.fallback_envs = sorted(fallback_envs)
        fill.fallback_slots = int(fallback_slots)
        fill.available_per_env = list(available_per_env)
        fill.explanation = explanation
        fill.advice = advice
        fill.closest_misses = [asdict(m) for m in (misses or [])]
        if fallback_envs and self.verbose:
            print(f"[placement] best-loss fallback used for {fallback_slots} layout slot(s) in env(s) "
                  f"{fill.fallback_envs}: they fail at least one required check; {explanation}", flush=True)
        self._printed.pop(fill.fill_index, None)
        self._alike.pop(fill.fill_index, None)
        self._forget_old_fills()
        self.write()

    def _forget_old_fills(self) -> None:
        """Sums the fills beyond what is kept whole (module docstring) into ``earlier_fills``."""
        if len(self.fills) <= 1 + KEEP_RECENT_FILLS:
            return
        short = [f.fill_index for f in self.fills[1:] if f.explanation][:KEEP_SHORT_FILLS]
        keep = {self.fills[0].fill_index, *short, *(f.fill_index for f in self.fills[-KEEP_RECENT_FILLS:])}
        kept = []
        for f in self.fills:
            if f.fill_index in keep:
                kept.append(f)
                continue
            e = self.earlier_fills
            e["fills"] += 1
            e["batches"] += len(f.batches)
            e["candidates"] += sum(b.num_candidates for b in f.batches)
            e["passed"] += sum(b.num_passed_required for b in f.batches)
            e["fallback_slots"] += f.fallback_slots
        self.fills = kept

    def to_dict(self) -> dict:
        out = {"fills": [asdict(f) for f in self.fills]}
        if self.earlier_fills["fills"]:
            out["earlier_fills"] = dict(self.earlier_fills)
        return out

    def write(self) -> str | None:
        """Writes the JSON atomically (temp file + rename); returns its path, or None without an output dir."""
        if self.path is None:
            return None
        from isaaclab_arena.utils.atomic_files import written_whole

        with written_whole(self.path) as f:
            json.dump(self.to_dict(), f, indent=1)
        return self.path

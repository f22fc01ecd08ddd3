"""Placement diagnostics: why candidates failed, per candidate and per batch, and what each pool fill did.

A rejection has a cause that names the object, the relation and the failure (``'bowl' next_to(mug,
positive_x): on the wrong side``; the text comes from the relation kind's cause codes) without measured
values, so identical causes count together, and a violation: how far (metres) the candidate lies beyond
what the check accepts. Built-in checks get named causes from the solve stage's per-relation tables and
worst overlapping pair; custom and expensive validators get one ``check failed`` cause.

After each batch one summary is printed::

    [placement] Validated <N> candidate layout(s); passed per check: <check>=<passed>/<evaluated>, ...
      <check>: <cause>: <count> rejected (e.g. by <v> m, env <e>)

``PlacementDiagnostics`` collects every fill's batches and fallbacks and writes them as JSON
(``placement_diagnostics.json``, atomically) under the run's output directory. Causes are grouped with
batched torch ops (one ``unique`` per batch); the only Python loop is over the distinct causes.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field

import torch

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


#: Pair checks: the batch fields holding each candidate's worst pair and its depth, and the cause text.
PAIR_CHECKS = {"no_overlap": ("overlap_pair", "overlap_depth", "'{a}' overlaps '{b}'"),
               "clearance": ("clearance_pair", "clearance_depth", "'{a}' and '{b}' closer than their clearance")}


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


# ---------------------------------------------------------------------------------- failed envs explained
@dataclass(frozen=True)
class ClosestMiss:
    """Why envs got no valid layout: one required relation (or no_overlap pair, or check) that failed, with the
    closest any of their candidates came to meeting it.

    Attributes:
        check: The check that failed.
        cause: Object, relation and failure (the cause of its closest failing candidate).
        violation_m: Smallest violation any candidate had, metres (0.0: some candidate met it; None: the check
            gives no measure). For no_overlap: the smallest depth of the pair where it was a candidate's
            deepest overlap.
        failed: Candidates that failed it.
        candidates: Candidates considered.
        env_id: Env of the closest failing candidate.
    """

    check: str
    cause: str
    violation_m: float | None
    failed: int
    candidates: int
    env_id: int

    def line(self) -> str:
        if self.violation_m is None:
            how = ""
        elif self.failed == self.candidates:
            how = f", never met: closest by {self.violation_m:.3f} m"
        else:
            how = f", met by {self.candidates - self.failed}"
        return f"{self.check}: {self.cause} (failed in {self.failed}/{self.candidates} candidates{how}, env {self.env_id})"


def explanation_text(misses: list[ClosestMiss], kept: list[str]) -> str:
    """One text for a failed env or fill (``ObjectPlacer.place`` results and the pool's error say the same)."""
    if not misses:
        return "no failing required check was recorded"
    text = ("relations in conflict (the closest any candidate came, largest first): "
            + "; ".join(m.line() for m in misses))
    if kept:
        text += ". Met by every candidate (the solver enforces these first): " + ", ".join(kept)
    return text


class FailureTally:
    """Per env: for every relation, no_overlap pair and required check, how many candidates failed it and the
    smallest violation (metres) any candidate had. ``add`` is batched torch on the batch's device (no host
    sync); ``explain`` reads the host once, on the failure path."""

    def __init__(self):
        self.problem = None

    def _allocate(self, vb: ValidatedBatch) -> None:
        p, dev = vb.problem, vb.env_ids.device
        E, R, P = p.num_envs, p.num_relations, max(len(p.pairs), 1)
        self.problem, self.required = p, tuple(vb.validation.required)
        inf = float("inf")
        self.seen = torch.zeros(E, dtype=torch.long, device=dev)
        self.rel_min = torch.full((E, R), inf, device=dev)        # min over candidates of max(excess, 0)
        self.rel_fail_min = torch.full((E, R), inf, device=dev)   # min excess over failing candidates
        self.rel_fail_cause = torch.zeros((E, R), dtype=torch.long, device=dev)
        self.rel_fail = torch.zeros((E, R), dtype=torch.long, device=dev)
        self.pair_min = {c: torch.full((E, P), inf, device=dev) for c in PAIR_CHECKS}
        self.pair_fail = {c: torch.zeros((E, P), dtype=torch.long, device=dev) for c in PAIR_CHECKS}
        self.check_fail = torch.zeros((E, len(self.required)), dtype=torch.long, device=dev)
        # column of each relation's check among the required ones (the last, always False, when not required)
        col = [self.required.index(r.check) if r.check in self.required else len(self.required) for r in p.relations]
        self.rel_check = torch.tensor(col, dtype=torch.long, device=dev)
        # validators naming their causes (CheckOutcome): check -> texts, (E, C) failures and smallest miss
        self.cause_texts: dict[str, tuple[str, ...]] = {}
        self.cause_fail: dict[str, torch.Tensor] = {}
        self.cause_min: dict[str, torch.Tensor] = {}

    def add(self, vb: ValidatedBatch, mask: torch.Tensor | None = None) -> None:
        """Counts the candidates of ``vb`` where ``mask`` (B,) is set (None: all)."""
        if self.problem is None:
            self._allocate(vb)
        b = vb.solved
        keep = torch.ones(len(vb), dtype=torch.bool, device=vb.env_ids.device) if mask is None else mask
        env = vb.env_ids[keep]
        if env.numel() == 0:
            return
        self.seen.index_add_(0, env, torch.ones_like(env))
        v = vb.validation
        failed = {c: (~v.verdicts[c] & v.evaluated_mask(c))[keep] for c in self.required}
        table = torch.stack([failed[c] for c in self.required] + [torch.zeros_like(env, dtype=torch.bool)], 1)
        self.check_fail.index_add_(0, env, table[:, :-1].long())
        if self.problem.num_relations and b.relation_excess is not None:
            excess, cause = b.relation_excess[keep].float(), b.relation_cause[keep].long()
            fails = table[:, self.rel_check] & (cause != 0)  # a relation fails only where its required check did
            idx = env.unsqueeze(1).expand_as(excess)
            self.rel_min.scatter_reduce_(0, idx, excess.clamp(min=0.0), reduce="amin")
            self.rel_fail.scatter_add_(0, idx, fails.long())
            fail_ex = torch.where(fails, excess, torch.full_like(excess, float("inf")))
            self.rel_fail_min.scatter_reduce_(0, idx, fail_ex, reduce="amin")
            hit = fails & (fail_ex == self.rel_fail_min[env])
            bi, ri = hit.nonzero(as_tuple=True)
            self.rel_fail_cause[env[bi], ri] = cause[bi, ri]
        for check, (pair_field, depth_field, _) in PAIR_CHECKS.items():
            depth = getattr(b, depth_field, None)
            if check not in failed or depth is None:
                continue
            bad = failed[check] & (depth[keep] > self.problem.slack)
            e, pair = env[bad], getattr(b, pair_field)[keep][bad].long()
            flat = e * self.pair_min[check].shape[1] + pair
            self.pair_fail[check].view(-1).index_add_(0, flat, torch.ones_like(flat))
            self.pair_min[check].view(-1).scatter_reduce_(0, flat, depth[keep][bad].float(), reduce="amin")
        self._add_causes(v, env, keep, failed)

    def _add_causes(self, v, env: torch.Tensor, keep: torch.Tensor, failed: dict[str, torch.Tensor]) -> None:
        for check, (texts, index, miss) in v.extra_causes.items():
            if check not in failed:
                continue
            E = self.seen.shape[0]
            if len(texts) > len(self.cause_texts.get(check, ())):  # (re)size to the longest list of texts
                old_fail, old_min = self.cause_fail.get(check), self.cause_min.get(check)
                self.cause_fail[check] = torch.zeros((E, len(texts)), dtype=torch.long, device=env.device)
                self.cause_min[check] = torch.full((E, len(texts)), float("inf"), device=env.device)
                if old_fail is not None:
                    self.cause_fail[check][:, :old_fail.shape[1]] = old_fail
                    self.cause_min[check][:, :old_min.shape[1]] = old_min
                self.cause_texts[check] = tuple(texts)
            idx, m = index[keep], miss[keep].float()
            bad = failed[check] & (idx >= 0)
            flat = env[bad] * len(self.cause_texts[check]) + idx[bad]
            self.cause_fail[check].view(-1).index_add_(0, flat, torch.ones_like(flat))
            self.cause_min[check].view(-1).scatter_reduce_(0, flat, m[bad].nan_to_num(nan=float("inf")), reduce="amin")

    def explain(self, envs) -> tuple[list[ClosestMiss], list[str]]:
        """The closest misses over the candidates of ``envs`` (largest first) and the required relations that
        touch the same objects and held in every candidate."""
        if self.problem is None:
            return [], []
        p = self.problem
        sel = torch.as_tensor(list(envs), dtype=torch.long, device=self.seen.device)
        n = int(self.seen[sel].sum())
        out, touched, named = [], set(), set()
        rel_fail = self.rel_fail[sel].sum(0).tolist()
        if any(rel_fail):
            rel_min, rel_min_env = self.rel_min[sel].min(0)
            fmin, fenv = self.rel_fail_min[sel].min(0)
            cause = self.rel_fail_cause[sel].gather(0, fenv.unsqueeze(0))[0].tolist()
            rel_min, fenv = rel_min.tolist(), sel[fenv].tolist()
            for r, count in enumerate(rel_fail):
                if count:
                    cr = p.relations[r]
                    named.add(cr.check)
                    touched.update({cr.subject, cr.parent} - {None})
                    out.append(ClosestMiss(cr.check, f"{cr.description}: {cr.kind.cause_text(cause[r])}",
                                           max(rel_min[r], 0.0), count, n, fenv[r]))
        for check, (_, _, text) in PAIR_CHECKS.items():
            pair_fail = self.pair_fail[check][sel].sum(0).tolist()
            if not any(pair_fail):
                continue
            pmin, penv = self.pair_min[check][sel].min(0)
            pmin, penv = pmin.tolist(), sel[penv].tolist()
            for k, count in enumerate(pair_fail):
                if count:
                    a, b = p.pair_names(k)
                    named.add(check)
                    touched.update({a, b})
                    out.append(ClosestMiss(check, text.format(a=a, b=b), pmin[k], count, n, penv[k]))
        for check, texts in self.cause_texts.items():
            fails = self.cause_fail[check][sel].sum(0).tolist()
            cmin, cenv = self.cause_min[check][sel].min(0)
            for c, count in enumerate(fails):
                if count:
                    named.add(check)
                    miss = float(cmin[c])
                    out.append(ClosestMiss(check, texts[c], None if miss == float("inf") else miss, count, n,
                                           int(sel[int(cenv[c])])))
        check_fail = self.check_fail[sel]
        for k, c in enumerate(self.required):
            count = int(check_fail[:, k].sum())
            if count and c not in named:
                out.append(ClosestMiss(c, "check failed", None, count, n, int(sel[int(check_fail[:, k].argmax())])))
        out.sort(key=lambda m: (m.violation_m is None, -(m.violation_m or 0.0), -m.failed))
        kept = [cr.description for r, cr in enumerate(p.relations)
                if cr.check in self.required and not rel_fail[r] and (cr.subject in touched or cr.parent in touched)]
        return out, kept


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
        return lines + [r.line() for r in self.rejections]


def batch_diagnostics(vb: ValidatedBatch, fill_index: int = 0, batch_index: int = 0) -> BatchDiagnostics:
    """The summary of one validated batch (one host copy of the verdicts). Built-in checks with nothing to judge in
    the scene (not in ``problem.checks_present``) are listed as ``not_used`` instead of as passed."""
    counts = vb.validation.counts()
    builtin = set(vb.validation.builtin_checks)
    present = vb.problem.checks_present if vb.problem is not None and vb.problem.checks_present else set(counts)
    not_used = [c for c in counts if c in builtin and c not in present]
    checks = {c: {"passed": p, "evaluated": e} for c, (p, e) in counts.items() if c not in not_used}
    return BatchDiagnostics(fill_index, batch_index, len(vb), int(vb.passed.sum()), checks, rejection_causes(vb),
                            vb.env_ids.unique().cpu().tolist(), not_used)


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

    def record_batch(self, fill: FillDiagnostics, vb: ValidatedBatch) -> BatchDiagnostics:
        diag = batch_diagnostics(vb, fill.fill_index, len(fill.batches))
        fill.batches.append(diag)
        if self.verbose:
            print("\n".join(diag.console_lines()), flush=True)
        return diag

    def end_fill(self, fill: FillDiagnostics, fallback_envs: list[int], fallback_slots: int,
                 available_per_env: list[int], explanation: str = "") -> None:
        fill.fallback_envs = sorted(fallback_envs)
        fill.fallback_slots = int(fallback_slots)
        fill.available_per_env = list(available_per_env)
        fill.explanation = explanation
        if fallback_envs and self.verbose:
            print(f"[placement] best-loss fallback used for {fallback_slots} layout slot(s) in env(s) "
                  f"{fill.fallback_envs}: they fail at least one required check; {explanation}", flush=True)
        self.write()

    def to_dict(self) -> dict:
        return {"fills": [asdict(f) for f in self.fills]}

    def write(self) -> str | None:
        """Writes the JSON atomically (temp file + rename); returns its path, or None without an output dir."""
        if self.path is None:
            return None
        from isaaclab_arena.utils.atomic_files import temp_beside

        # a unique temporary name: several processes writing into one folder never share a temporary file
        fd, tmp = temp_beside(self.path, suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(self.to_dict(), f, indent=1)
            os.replace(tmp, self.path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return self.path

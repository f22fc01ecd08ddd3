"""Why envs got no valid layout: the closest misses over a fill's candidates, their text and the advice.

``FailureTally`` counts, per env, how many candidates failed each relation, no_overlap / clearance pair and
required check, and the smallest violation (metres) any had (batched torch, no host sync; the pairs only where a
candidate's worst pair failed, so its memory grows with the candidates, not with envs x pairs); ``explain`` turns
the counts of some envs into ``ClosestMiss`` entries, ``explanation_text`` into the one sentence that the
pool's error, ``ObjectPlacer.place`` results and the run summaries share, and ``placement_advice`` into the
knob that would most likely help. Long lists are cut (``EXPLAIN_MAX_MISSES``): a crowded scene has thousands
of pairs, and every entry stays in ``PlacementResult.rejections`` and ``placement_diagnostics.json``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from isaaclab_arena.relations.validation.results import ValidatedBatch

#: Pair checks: the batch fields holding each candidate's worst pair and its depth, and the cause text.
PAIR_CHECKS = {"no_overlap": ("overlap_pair", "overlap_depth", "'{a}' overlaps '{b}'"),
               "clearance": ("clearance_pair", "clearance_depth", "'{a}' and '{b}' closer than their clearance")}
#: Entries an explanation names (the first of each check, then the largest); the rest are counted.
EXPLAIN_MAX_MISSES = 6
#: Relations met by every candidate that an explanation names.
EXPLAIN_MAX_KEPT = 8


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

    @property
    def is_pair(self) -> bool:
        """A no_overlap / clearance pair: ``failed`` counts the candidates where this pair was the deepest one
        (a candidate overlapping in several pairs counts once, under its deepest), so it is not a count of the
        candidates where the pair failed and ``candidates - failed`` is not a count of candidates that met it."""
        return self.check in PAIR_CHECKS

    @property
    def never_met(self) -> bool:
        """No candidate met it (for a pair: every candidate's deepest failure was this pair)."""
        return self.failed == self.candidates

    def line(self) -> str:
        if self.is_pair:
            how = "" if self.violation_m is None else f", smallest such depth {self.violation_m:.3f} m"
            return (f"{self.check}: {self.cause} (the deepest failing pair in {self.failed}/{self.candidates} "
                    f"candidates{how}, env {self.env_id})")
        if self.violation_m is None:
            how = ""
        elif self.never_met:
            how = f", never met: closest by {self.violation_m:.3f} m"
        else:
            how = f", met by {self.candidates - self.failed}"
        return f"{self.check}: {self.cause} (failed in {self.failed}/{self.candidates} candidates{how}, env {self.env_id})"


def explanation_text(misses: list[ClosestMiss], kept: list[str]) -> str:
    """One text for a failed env or fill (``ObjectPlacer.place`` results and the pool's error say the same): the
    first miss of each check and then the largest, at most ``EXPLAIN_MAX_MISSES``, the rest counted per check."""
    if not misses:
        return "no failing required check was recorded"
    first: dict[str, int] = {}
    for k, m in enumerate(misses):
        first.setdefault(m.check, k)
    pick = list(first.values())[:EXPLAIN_MAX_MISSES]
    pick = sorted(pick + [k for k in range(len(misses)) if k not in pick][:EXPLAIN_MAX_MISSES - len(pick)])
    text = ("relations in conflict (the closest any candidate came, largest first): "
            + "; ".join(misses[k].line() for k in pick))
    rest: dict[str, int] = {}
    for k, m in enumerate(misses):
        if k not in pick:
            rest[m.check] = rest.get(m.check, 0) + 1
    if rest:
        counts = ", ".join(f"{n} more {c}" + (" pair(s)" if c in PAIR_CHECKS else " failure(s)") for c, n in rest.items())
        text += f"; and {counts} (every entry: PlacementResult.rejections, placement_diagnostics.json)"
    if kept:
        more = f" and {len(kept) - EXPLAIN_MAX_KEPT} more" if len(kept) > EXPLAIN_MAX_KEPT else ""
        text += ". Met by every candidate (the solver enforces these first): " + ", ".join(kept[:EXPLAIN_MAX_KEPT]) + more
    return text


def placement_advice(misses: list[ClosestMiss], kept: list[str], check_totals: dict[str, tuple[int, int]],
                     max_placement_attempts: int, layouts_per_env: int = 1) -> str:
    """The knob or change that would most likely help a fill that stayed short, in one sentence.

    Args:
        misses: The closest misses of the short envs (``FailureTally.explain``).
        kept: Required relations met by every candidate of those envs.
        check_totals: Required check -> (candidates that failed it, candidates) over those envs.
        max_placement_attempts: The placer's solve batches per fill (``placer_params.max_placement_attempts``).
        layouts_per_env: ``min_unique_layouts_per_env``.
    """
    if not misses and not any(f for f, _ in check_totals.values()):
        return (f"not enough candidates: raise placer_params.max_placement_attempts "
                f"(now {max_placement_attempts}, try {2 * max_placement_attempts})")
    never = [m for m in misses if m.never_met and not m.is_pair]
    if never:
        m = never[0]
        if kept:
            return (f"no candidate met {m.cause}, while every candidate met {', '.join(kept[:3])}"
                    f"{' ...' if len(kept) > 3 else ''}: these relations contradict each other; relax or remove one")
        return f"no candidate met {m.cause}: relax it (its distances or margins) or remove it"
    crowded = [c for c in PAIR_CHECKS if c in check_totals and check_totals[c][1] and
               check_totals[c][0] == check_totals[c][1]]
    if crowded:
        c = crowded[0]
        what = "overlapped" if c == "no_overlap" else "came closer than their clearance"
        return (f"every candidate {what} somewhere ({c} failed in all {check_totals[c][1]}): the scene is too "
                f"crowded; use fewer or smaller objects, a larger support"
                + (", or a smaller clearance" if c == "clearance" else ""))
    more = (f"raise placer_params.max_placement_attempts (now {max_placement_attempts}, "
            f"try {2 * max_placement_attempts})")
    failing = {c for c, (f, _) in check_totals.items() if f}
    if failing and failing <= set(PAIR_CHECKS):  # only crowding: room helps as much as attempts
        return (f"objects overlapped in some candidates but not all ({', '.join(sorted(failing))}): {more}, or make "
                f"room (fewer or smaller objects, a larger support)")
    fewer = (f" or lower min_unique_layouts_per_env (now {layouts_per_env})" if layouts_per_env > 1 else "")
    return f"each failing check was met by some candidates, so more attempts should fill it: {more}{fewer}"


class PairMisses:
    """One pair check's tally: per (env, pair) that a candidate's worst pair failed, how many candidates and the
    smallest depth (metres). Sparse: ``keys`` (env * P + pair, increasing, distinct), ``counts`` and ``depths``, of
    the (env, pair) entries met (at most one per candidate), where a dense (num_envs, P) table would hold every pair
    of a 1,000-object scene (500,000) in every env."""

    def __init__(self, num_pairs: int, device):
        self.num_pairs = num_pairs
        self.keys = torch.zeros(0, dtype=torch.long, device=device)
        self.counts = torch.zeros(0, dtype=torch.long, device=device)
        self.depths = torch.zeros(0, device=device)

    def add(self, env: torch.Tensor, pair: torch.Tensor, depth: torch.Tensor) -> None:
        """Counts one failing candidate per entry: ``env``, ``pair`` (int64) and ``depth`` (metres), each (N,)."""
        if env.numel() == 0:
            return
        keys = torch.cat([self.keys, env * self.num_pairs + pair])
        counts = torch.cat([self.counts, torch.ones_like(env)])
        depths = torch.cat([self.depths, depth.float()])
        self.keys, slot = torch.unique(keys, sorted=True, return_inverse=True)
        self.counts = torch.zeros_like(self.keys).index_add_(0, slot, counts)
        self.depths = torch.full(self.keys.shape, float("inf"), device=keys.device).scatter_reduce_(
            0, slot, depths, reduce="amin")

    def over(self, sel: torch.Tensor, num_envs: int) -> tuple[list[int], list[int], list[float], list[int]]:
        """Per pair failed in the envs ``sel`` (in increasing pair order): (pairs, candidates that failed it - an
        env listed twice counts twice -, smallest depth, the env of that depth: the first of ``sel`` to have it)."""
        times = torch.bincount(sel, minlength=num_envs)
        env, pair = self.keys // self.num_pairs, self.keys % self.num_pairs
        mine = times[env] > 0
        env, pair, counts, depths = env[mine], pair[mine], self.counts[mine], self.depths[mine]
        if env.numel() == 0:
            return [], [], [], []
        pairs, slot = torch.unique(pair, sorted=True, return_inverse=True)
        total = torch.zeros_like(pairs).index_add_(0, slot, counts * times[env])
        best = torch.full(pairs.shape, float("inf"), device=pairs.device).scatter_reduce_(0, slot, depths,
                                                                                          reduce="amin")
        first = torch.full((num_envs,), len(sel), dtype=torch.long, device=sel.device).scatter_reduce_(
            0, sel, torch.arange(len(sel), device=sel.device), reduce="amin")  # env -> its first place in sel
        place = torch.where(depths == best[slot], first[env], torch.full_like(env, len(sel)))
        at = torch.full_like(pairs, len(sel)).scatter_reduce_(0, slot, place, reduce="amin")
        return pairs.tolist(), total.tolist(), best.tolist(), sel[at].tolist()


class FailureTally:
    """Per env: for every relation, no_overlap pair and required check, how many candidates failed it and the
    smallest violation (metres) any candidate had. ``add`` is batched torch on the batch's device (no host
    sync); ``explain`` reads the host once, on the failure path. Relations and checks are dense (num_envs, R)
    tables; pairs are ``PairMisses`` (the pairs some candidate's worst pair failed)."""

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
        self.pair_misses = {c: PairMisses(P, dev) for c in PAIR_CHECKS}
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
            self.pair_misses[check].add(env[bad], getattr(b, pair_field)[keep][bad].long(), depth[keep][bad])
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

    def check_totals(self, envs) -> dict[str, tuple[int, int]]:
        """Required check -> (candidates of ``envs`` that failed it, candidates of ``envs`` counted): exact per
        check, whatever else those candidates failed."""
        if self.problem is None:
            return {}
        sel = torch.as_tensor(list(envs), dtype=torch.long, device=self.seen.device)
        n = int(self.seen[sel].sum())
        fails = self.check_fail[sel].sum(0).tolist()
        return {c: (int(f), n) for c, f in zip(self.required, fails)}

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
            for k, count, depth, env in zip(*self.pair_misses[check].over(sel, len(self.seen))):
                a, b = p.pair_names(k)
                named.add(check)
                touched.update({a, b})
                out.append(ClosestMiss(check, text.format(a=a, b=b), depth, count, n, env))
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



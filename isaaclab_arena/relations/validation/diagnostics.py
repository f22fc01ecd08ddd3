"""Turns per-candidate, per-relation violations into rejection records and summary lines.

A record is (check, cause, violation): the cause names the object, the relation and the failure
(``'plate' next_to(box, positive_x): on the wrong side``) without measured values, so identical causes
count together; the violation is how far (metres) the candidate lies beyond what the check accepts.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import torch

from isaaclab_arena.relations.relations import (
    AlignWith,
    AtPosition,
    ClutterOn,
    FaceTo,
    NextTo,
    NotNextTo,
    On,
    PositionLimitsBox,
    PositionLimitsCylindrical,
)
from isaaclab_arena.relations.validation.kernel_checks import kernel_verdicts

#: Cause code (as written by kernels/violations.py) -> text, per relation class.
CAUSES: dict[type, dict[int, str]] = {
    On: {1: "footprint outside the support (edge_margin_m inset)", 2: "below the support top",
         3: "above the support top (more than clearance_m + on_relation_z_tolerance_m)"},
    ClutterOn: {1: "outside the release region", 2: "too little clearance above the support"},
    NextTo: {1: "on the wrong side", 2: "outside the parent's extent along the cross axis",
             3: "closer than distance_m", 4: "farther than distance_m + tolerance_m"},
    NotNextTo: {1: "inside the keep-out region"},
    AlignWith: {1: "misaligned beyond tolerance_m"},
    AtPosition: {1: "off the requested coordinates"},
    PositionLimitsBox: {1: "outside the position limits"},
    PositionLimitsCylindrical: {1: "inside radius_min", 2: "outside radius_max"},
    FaceTo: {1: "at the target's XY position (no defined heading)"},
}


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


def rejection_records(batch, only_failed_checks: bool = True) -> list[RejectionRecord]:
    """Every (candidate, check, cause, violation) of a validated batch, from the check kernel's
    per-relation excess and cause tables and its worst overlapping pair."""
    kernel_verdicts(batch)
    problem = batch.problem
    env = batch.env_ids.cpu().tolist()
    out: list[RejectionRecord] = []
    enabled = set(batch.check_results) if batch.check_results else None
    if batch.overlap_depth is not None and (enabled is None or "no_overlap" in enabled):
        bad = torch.nonzero(batch.overlap_depth > problem.tables.slack).flatten().cpu().tolist()
        pairs = batch.overlap_pair.cpu().tolist()
        depth = batch.overlap_depth.cpu().tolist()
        for b in bad:
            a, c = problem.pair_names(pairs[b])
            out.append(RejectionRecord(b, env[b], "no_overlap", f"'{a}' overlaps '{c}'", depth[b]))
    if problem.num_relations:
        idx = torch.nonzero(batch.relation_cause != 0).cpu().tolist()
        excess = batch.relation_excess
        for b, r in idx:
            rel = problem.relations[r]
            check = rel.check
            if check is None or (enabled is not None and check not in enabled):
                continue
            text = CAUSES.get(type(rel.relation), {}).get(int(batch.relation_cause[b, r]), "violated")
            out.append(RejectionRecord(b, env[b], check, f"{rel.description}: {text}", float(excess[b, r])))
    return out


def summary_lines(batch) -> list[str]:
    """``[placement] Validated <N> candidate layout(s); passed per check: <check>=<passed>/<evaluated>, ...``
    then one indented line per rejection cause with its count and one example violation."""
    res = batch.validation
    counts = res.counts() if res is not None else {}
    parts = ", ".join(f"{c}={p}/{e}" for c, (p, e) in counts.items())
    lines = [f"[placement] Validated {len(batch)} candidate layout(s); passed per check: {parts}"]
    recs = rejection_records(batch)
    tally = Counter((r.check, r.cause) for r in recs)
    example = {}
    for r in recs:
        example.setdefault((r.check, r.cause), r)
    for (check, cause), n in tally.most_common():
        lines.append(f"  {check}: {cause} x{n} (e.g. {example[(check, cause)].violation})")
    return lines

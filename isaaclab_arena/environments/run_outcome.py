"""How a run's placement went, told once at the end: a short summary block for failed and fallback runs.

A run whose pool could not be filled (``allow_best_loss_fallbacks=False``), or that filled envs with best-loss
layouts failing a required check (fallbacks on, the default), ends with one block on the console, printed last
so that it is what the user reads::

    [arena] ==== placement FAILED: 2 of 2 envs got no valid layout ==========================
    [arena]   failed: not_next_to: 'bowl' not_next_to(mug, positive_x): inside the keep-out region (...)
    [arena]   try:    no candidate met ..., while every candidate met ...: relax or remove one
    [arena]   files:  picture <path>, summary <path>, diagnostics <path>, debug view <path>
    [arena] ==========================================================================================

The same facts are in ``run_summary.json`` under ``placement_outcome`` (``status``: ``ok`` / ``fallback`` /
``failed``, the envs, the closest misses, the advice). Everything comes from the pool's fill diagnostics
(``PlacementDiagnostics``); nothing is recomputed here.
"""

from __future__ import annotations

RULE_WIDTH = 100


def placement_outcome(placer) -> dict | None:
    """``{"status", "envs", "num_envs", "failed", "explanation", "advice", "closest_misses"}`` of a pooled
    placer's fills (the first fill that stayed short); None when nothing was solved."""
    if placer is None:
        return None
    fills = placer.diagnostics.fills
    short = [f for f in fills if f.explanation]
    if not short:
        return {"status": "ok", "envs": [], "num_envs": placer.num_envs}
    f = short[0]
    failed = bool(getattr(placer, "unfilled_envs", None)) and not f.fallback_envs
    envs = list(placer.unfilled_envs) if failed else sorted(placer.fallback_envs)
    checks = sorted({m["check"] for m in f.closest_misses})
    return {"status": "failed" if failed else "fallback", "envs": envs, "num_envs": placer.num_envs,
            "failed_checks": checks, "explanation": f.explanation, "advice": f.advice,
            "closest_misses": f.closest_misses, "fill": f.fill_index, "reason": f.reason}


def _short(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def summary_block(outcome: dict, files: dict[str, str | None]) -> str:
    """The console block of a failed or fallback run (see the module doc); ``files``: label -> path (None:
    not written)."""
    n, k = outcome["num_envs"], len(outcome["envs"])
    if outcome["status"] == "failed":
        head = f"placement FAILED: {k} of {n} envs got no valid layout (allow_best_loss_fallbacks is off)"
    else:
        head = f"placement FELL BACK: {k} of {n} envs use best-loss layouts failing a required check"
    misses = outcome.get("closest_misses") or []
    lines = [f"==== {head} ".ljust(RULE_WIDTH, "=")]
    shown = misses[:3]
    for i, m in enumerate(shown):
        label = "failed: " if i == 0 else "        "
        lines.append(f"  {label}{_short(m['check'] + ': ' + m['cause'])} (in {m['failed']}/{m['candidates']} "
                     f"candidates)")
    if len(misses) > len(shown):
        lines.append(f"          ... and {len(misses) - len(shown)} more (see the diagnostics)")
    if outcome.get("advice"):
        lines.append(f"  try:    {_short(outcome['advice'], 400)}")
    written = [f"{label} {path}" for label, path in files.items() if path]
    if written:
        lines.append("  files:  " + written[0])
        lines += [f"          {w}" for w in written[1:]]
    lines.append("=" * RULE_WIDTH)
    return "\n".join(f"[arena] {ln}" for ln in lines)

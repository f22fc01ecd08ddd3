"""Success rates with 95 % Wilson score intervals, overall and for clean and best-loss fallback layouts.

The Wilson interval of ``k`` successes in ``n`` trials at ``z`` (1.96 for 95 %) is
``(p + z^2/2n -/+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)`` with ``p = k/n``; it stays inside [0, 1] and is
sensible for ``k = 0`` and ``k = n``, unlike the normal approximation.
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping

#: z of a two-sided 95 % interval.
Z95 = 1.959963984540054


def wilson_interval(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """(low, high) Wilson score interval of a success rate; (0.0, 1.0) when there are no trials."""
    if trials <= 0:
        return 0.0, 1.0
    if not 0 <= successes <= trials:
        raise ValueError(f"wilson_interval: successes must be in [0, {trials}], got {successes}")
    p = successes / trials
    z2 = z * z
    centre = p + z2 / (2 * trials)
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials))
    den = 1 + z2 / trials
    return max(0.0, (centre - half) / den), min(1.0, (centre + half) / den)


def rate_block(successes: int, episodes: int) -> dict:
    """``{"episodes", "successes", "success_rate", "wilson_95": [low, high]}`` (rate None without episodes)."""
    low, high = wilson_interval(successes, episodes)
    return {"episodes": episodes, "successes": successes,
            "success_rate": successes / episodes if episodes else None,
            "wilson_95": [round(low, 6), round(high, 6)]}


def success_summary(records: Iterable[Mapping]) -> dict:
    """Rate blocks of episode records (``success``, ``fallback``): ``{"all", "clean", "fallback"}``."""
    records = list(records)
    clean = [r for r in records if not r.get("fallback")]
    fallback = [r for r in records if r.get("fallback")]
    return {name: rate_block(sum(bool(r["success"]) for r in part), len(part))
            for name, part in (("all", records), ("clean", clean), ("fallback", fallback))}


def format_rate(block: Mapping) -> str:
    """``0.750 [0.409, 0.929] (6/8)`` of a rate block; ``- (0 episodes)`` when empty."""
    if not block["episodes"]:
        return "- (0 episodes)"
    lo, hi = block["wilson_95"]
    return f"{block['success_rate']:.3f} [{lo:.3f}, {hi:.3f}] ({block['successes']}/{block['episodes']})"


__all__ = ["Z95", "format_rate", "rate_block", "success_summary", "wilson_interval"]

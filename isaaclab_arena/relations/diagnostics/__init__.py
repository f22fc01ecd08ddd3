"""Explain stage: why candidates failed (``placement_diagnostics``: per candidate, per batch, per pool fill)
and why an env got no valid layout (``failure_explanation``: the closest misses and the advice)."""

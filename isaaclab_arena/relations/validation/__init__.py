"""Placement validation: the check registry, pre-physics validators, the two-pass runner, diagnostics."""

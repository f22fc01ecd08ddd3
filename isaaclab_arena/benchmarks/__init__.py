"""Benchmark scenes (``scenes``) shared by ``scripts/bench_*.py`` and the tests that measure the solver."""

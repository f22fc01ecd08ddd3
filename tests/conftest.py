"""Markers of the test suite, registered so ``-m`` selects them without warnings, and enforced
(tests/_marker_enforcement.py): ``sim`` (starts a simulation, here or in a child process), ``slow`` (starts
child processes, or benchmark-like), ``distributed`` (torchrun / Ray). The fast loop for contributors:
``scripts/arena_python.sh -m pytest -q -m "not sim and not slow" tests``."""

from _marker_enforcement import pytest_addoption, pytest_configure, pytest_unconfigure  # noqa: F401 (pytest hooks)

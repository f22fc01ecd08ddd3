"""Markers of the test suite, registered so ``-m`` selects them without warnings, and enforced
(tests/_marker_enforcement.py): ``sim`` (starts a simulation, here or in a child process), ``slow`` (starts
child processes, or benchmark-like), ``distributed`` (torchrun / Ray). The fast loop for contributors:
``scripts/arena_python.sh -m pytest -q -m "not sim and not slow" tests``.

The suite runs on 2 pytest-xdist workers by default (``scripts/arena_python.sh -m pytest -q tests`` as the
README gives it; ``tests/_xdist_setup.py``): ``-n 0`` or ``-p no:xdist`` runs it in one process, ``-n N`` on N."""

from _marker_enforcement import pytest_addoption, pytest_configure, pytest_unconfigure  # noqa: F401 (pytest hooks)
from _bytecode import compile_checkout_bytecode
from _xdist_setup import pytest_cmdline_main  # noqa: F401 (pytest hook)

from isaaclab_arena.utils.runner_gc import collect_rarely  # noqa: E402

collect_rarely()  # the controller and every worker, as the runners do (utils/runner_gc.py): ~4 % of a sim file


def pytest_sessionstart(session):
    compile_checkout_bytecode()  # the bytecode cache of the checkout, which PYTHONDONTWRITEBYTECODE=1 keeps empty

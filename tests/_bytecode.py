"""PYTHONDONTWRITEBYTECODE=1 (set on the CPU machines of this project) keeps Python from caching the bytecode of the
checkout's modules, so every command a test starts compiled the ~180 project modules it imports again: 0.15 s of a
policy runner's start-up (cProfile: 178 ``compile`` calls from imports), in each of the suite's ~260 processes. The
session writes that cache once, before any test runs, as Python itself does where the variable is unset; Python
reads a cached module only while its source is unchanged, so nothing stale is ever run."""

from __future__ import annotations

import compileall
import os
import sys

from isaaclab_arena import ARENA_ROOT

#: the checkout's folders whose modules the suite's commands import
PACKAGES = ("isaaclab_arena", "isaaclab_arena_environments", "isaaclab_arena_curobo", "scripts", "tests")


def compile_checkout_bytecode() -> None:
    """Caches the bytecode of :data:`PACKAGES` (``__pycache__``, ignored by git) when the environment keeps Python
    from doing so; in the controller only (a worker would repeat it)."""
    if not sys.dont_write_bytecode or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    for name in PACKAGES:
        compileall.compile_dir(os.path.join(ARENA_ROOT, name), quiet=1)

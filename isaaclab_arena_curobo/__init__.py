"""Optional IK reachability for isaaclab_arena, backed by cuRobo.

The ``ik_reachable`` check registers only when cuRobo imports and the embodiment has a cuRobo config.
cuRobo is not part of the kit-less CPU environment, so on such machines this package reports itself
unavailable and the check is not registered (placement stays geometry-only).
"""

from __future__ import annotations

import importlib.util


def is_curobo_available() -> bool:
    """True when the ``curobo`` package can be imported in this environment."""
    return importlib.util.find_spec("curobo") is not None

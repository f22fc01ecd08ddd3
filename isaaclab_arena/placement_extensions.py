"""The default optional backends of a placer: what ``ObjectPlacer(params)`` (``extensions=None``) gets.

One place that lists them, with plain imports (no module names in strings): the ``ik_reachable`` check
(``reachability/extension.py``), the cuRobo IK backend when the ``isaaclab_arena_curobo`` package imports
(``isaaclab_arena_curobo/extension.py``), and the Rerun debug view (``debug/extension.py``; rerun is imported
only when a view opens). A caller that wants another set passes its own list: ``ObjectPlacer(params,
extensions=[REACHABILITY])``, ``extensions=[]`` for the built-in checks alone.
"""

from __future__ import annotations

from isaaclab_arena.debug.extension import DEBUG_VIEW
from isaaclab_arena.reachability.extension import REACHABILITY
from isaaclab_arena.relations.extensions import PlacementExtension


def optional_curobo() -> tuple[PlacementExtension, ...]:
    """``(CUROBO,)`` when the ``isaaclab_arena_curobo`` package imports, else ``()``."""
    try:
        from isaaclab_arena_curobo.extension import CUROBO
    except ImportError:
        return ()
    return (CUROBO,)


def default_extensions() -> tuple[PlacementExtension, ...]:
    """The default set, in the order their setups run: reachability, cuRobo (where it imports), debug view."""
    return (REACHABILITY, *optional_curobo(), DEBUG_VIEW)

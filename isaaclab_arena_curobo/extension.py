"""The cuRobo extension: a ``PlacementExtension`` whose ``setup`` registers the ``curobo`` IK backend
(``backend.py``) for the ``ik_reachable`` check. Hand it to ``ObjectPlacer(params, extensions=[...])`` beside
``isaaclab_arena.reachability.extension.REACHABILITY`` (the check it serves); the default set
(``isaaclab_arena.placement_extensions.default_extensions``) includes it whenever this package imports."""

from __future__ import annotations

from isaaclab_arena.relations.extensions import PlacementExtension
from isaaclab_arena_curobo.backend import BACKEND_NAME, register_backend

#: Registers the ``curobo`` IK backend (used on CUDA where cuRobo imports; elsewhere the builtin backend checks
#: and one line says why).
CUROBO = PlacementExtension(BACKEND_NAME, setup=register_backend)

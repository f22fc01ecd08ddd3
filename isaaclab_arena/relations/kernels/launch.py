"""The kernels of one solve, in launch order on one argument list. Scenes with OBB / MESH pairs or MESH
support terms launch the general variants of the kernels that evaluate those (init, iterate, finalize); box scenes keep
the smaller kernels the CPU compiler inlines."""

from __future__ import annotations

from isaaclab_arena.relations.kernels.solve_finalize import finalize_kernel, finalize_kernel_general
from isaaclab_arena.relations.kernels.solve_init import init_kernel, init_kernel_general
from isaaclab_arena.relations.kernels.solve_iterate import iterate_kernel, iterate_kernel_general
from isaaclab_arena.relations.kernels.solve_prepare import prepare_kernel
from isaaclab_arena.relations.kernels.tables import is_box_scene

#: Generate (initial candidates), optimise, finalize: a solve of fresh candidates.
FRESH = (init_kernel, iterate_kernel, finalize_kernel)
#: The same for scenes with OBB / MESH pairs or MESH support terms (their initial draws score those too).
FRESH_GENERAL = (init_kernel_general, iterate_kernel_general, finalize_kernel_general)
#: Prepare given candidates (bounds, projection), optimise, finalize: a solve of existing candidates.
GIVEN = (prepare_kernel, iterate_kernel, finalize_kernel)
GIVEN_GENERAL = (prepare_kernel, iterate_kernel_general, finalize_kernel_general)


def fresh(tables) -> tuple:
    """The kernels of a fresh solve of a problem whose ``SceneTables`` are ``tables``."""
    return FRESH if is_box_scene(tables) else FRESH_GENERAL


def given(tables) -> tuple:
    """The kernels of a solve of given candidates of a problem whose ``SceneTables`` are ``tables``."""
    return GIVEN if is_box_scene(tables) else GIVEN_GENERAL

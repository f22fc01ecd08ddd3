"""The kernels of one solve, in launch order on one argument list."""

from __future__ import annotations

from isaaclab_arena.relations.kernels.solve_finalize import finalize_kernel
from isaaclab_arena.relations.kernels.solve_init import init_kernel, init_kernel_general
from isaaclab_arena.relations.kernels.solve_iterate import iterate_kernel
from isaaclab_arena.relations.kernels.solve_prepare import prepare_kernel

#: Generate (initial candidates), optimise, finalize: a solve of fresh candidates.
FRESH = (init_kernel, iterate_kernel, finalize_kernel)
#: The same for scenes with OBB / MESH pairs or MESH support terms (their initial draws score those too).
FRESH_GENERAL = (init_kernel_general, iterate_kernel, finalize_kernel)


def fresh(tables) -> tuple:
    """The kernels of a fresh solve of a problem whose ``SceneTables`` are ``tables``."""
    return FRESH if tables.n_box_pairs == tables.n_pairs and tables.n_support == 0 else FRESH_GENERAL


#: Prepare given candidates (bounds, projection), optimise, finalize: a solve of existing candidates.
GIVEN = (prepare_kernel, iterate_kernel, finalize_kernel)

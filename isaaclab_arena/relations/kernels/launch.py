"""The kernels of one solve, in launch order on one argument list."""

from __future__ import annotations

from isaaclab_arena.relations.kernels.solve_finalize import finalize_kernel
from isaaclab_arena.relations.kernels.solve_init import init_kernel
from isaaclab_arena.relations.kernels.solve_iterate import iterate_kernel
from isaaclab_arena.relations.kernels.solve_prepare import prepare_kernel

#: Generate (initial candidates), optimise, finalize: a solve of fresh candidates.
FRESH = (init_kernel, iterate_kernel, finalize_kernel)
#: Prepare given candidates (bounds, projection), optimise, finalize: a solve of existing candidates.
GIVEN = (prepare_kernel, iterate_kernel, finalize_kernel)

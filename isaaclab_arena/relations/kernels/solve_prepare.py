"""Bounds and projection intervals of given positions, before solving an existing batch."""

from __future__ import annotations

import warp as wp

from isaaclab_arena.relations.kernels.poses import solver_offsets
from isaaclab_arena.relations.kernels.projection import project
from isaaclab_arena.relations.kernels.settings import SolveSettings
from isaaclab_arena.relations.kernels.tables import (
    OI_ORDER,
    OI_RANDOM,
    CandidateState,
    SceneTables,
    SolveOutputs,
)
from isaaclab_arena.relations.kinds.dispatch import track_kind_sources


@wp.kernel(enable_backward=False)
def prepare_kernel(
    # Model:
    T: SceneTables,
    # Data in/out (state of candidate b):
    S: CandidateState,
    # Data in:
    P: SolveSettings,
    env_ids: wp.array(dtype=wp.int64),
    draw_ids: wp.array(dtype=wp.int64),
    # Data out:
    O: SolveOutputs,
    # Candidates [tid * rows, min((tid + 1) * rows, count)) per thread (``launch.py``):
    rows: int,
    count: int,
):
    """The candidate's own positions and rotations: bounds refit, origins projected onto the relation
    intervals, Adam moments cleared (solving from given candidates)."""
    b0 = wp.tid() * rows
    for b in range(b0, wp.min(b0 + rows, count)):
        e = int(env_ids[b])
        n = T.n_mov
        zero = wp.vec3(0.0)
        O.iters[b] = 0
        wp.atomic_add(O.pending, 0, 1)
        for i in range(n):
            lo, hi = solver_offsets(S.rot[b, i], T.local_lo[e, i], T.local_hi[e, i], T.obj_f[i], T.obj_i[i][OI_RANDOM])
            S.olo[b, i] = lo
            S.ohi[b, i] = hi
        st_none = wp.uint32(0)  # no redraw here
        for k in range(n):
            st_none = project(T, S, b, e, T.obj_i[k][OI_ORDER], 0, 0, st_none, 0)  # given rotations
        for i in range(n):
            S.m[b, i] = zero
            S.v[b, i] = zero


track_kind_sources(__name__)

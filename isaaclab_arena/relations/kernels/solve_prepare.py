"""Bounds and projection intervals of given positions, before solving an existing batch."""

from __future__ import annotations

import warp as wp

from isaaclab_arena.relations.kernels.solve import SolveSettings, project, solver_offsets
from isaaclab_arena.relations.kernels.tables import OI_ORDER, OI_RANDOM, CandidateState, SceneTables, SolveOutputs


@wp.kernel(enable_backward=False)
def prepare_kernel(T: SceneTables, S: CandidateState, P: SolveSettings, env_ids: wp.array(dtype=wp.int64),
                   draw_ids: wp.array(dtype=wp.int64), O: SolveOutputs):
    """Bounds and projection intervals of given positions (solving from an existing batch)."""
    b = wp.tid()
    e = int(env_ids[b])
    n = T.n_mov
    zero = wp.vec3(0.0)
    # the candidate's own positions and rotations: refit bounds, project onto the relation intervals
    O.iters[b] = 0
    wp.atomic_add(O.pending, 0, 1)
    for i in range(n):
        lo, hi = solver_offsets(S.rot[b, i], T.local_lo[e, i], T.local_hi[e, i], T.obj_f[i], T.obj_i[i][OI_RANDOM])
        S.olo[b, i] = lo
        S.ohi[b, i] = hi
    for k in range(n):
        project(T, S, b, e, T.obj_i[k][OI_ORDER], 0)
    for i in range(n):
        S.m[b, i] = zero
        S.v[b, i] = zero

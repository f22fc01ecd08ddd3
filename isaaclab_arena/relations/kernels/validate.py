"""The inexpensive-check kernel: one thread per candidate evaluates every relation and pair of given poses."""

from __future__ import annotations

import warp as wp

from isaaclab_arena.relations.kernels.evaluate import evaluate_candidate
from isaaclab_arena.relations.kernels.geometry import rotated_offsets
from isaaclab_arena.relations.kernels.tables import (
    CandidateState,
    SceneTables,
    SolveOutputs,
)
from isaaclab_arena.relations.kinds.dispatch import track_kind_sources


@wp.kernel(enable_backward=False)
def validate_kernel(
    # Model:
    T: SceneTables,
    # Data in (x, rot), scratch (olo, ohi):
    S: CandidateState,
    # Data in:
    env_ids: wp.array(dtype=wp.int64),
    # Data out:
    O: SolveOutputs,
):
    """Refits each object's bounds to its rotation, then writes per-relation excess/cause, the worst
    overlapping pair, one verdict per check slot and the loss of the layout (``O``'s solver-only fields
    are unused)."""
    b = wp.tid()
    e = int(env_ids[b])
    for i in range(T.n_mov):
        lo, hi = rotated_offsets(S.rot[b, i], T.local_lo[e, i], T.local_hi[e, i])
        S.olo[b, i] = lo
        S.ohi[b, i] = hi
    O.loss[b] = evaluate_candidate(T, S, b, e, 1, O)


track_kind_sources(__name__)

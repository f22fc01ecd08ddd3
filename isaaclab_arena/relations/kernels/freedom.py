"""Which way a movable object may still move within the interval its last projection used."""

from __future__ import annotations

import warp as wp

from isaaclab_arena.relations.kernels.tables import CandidateState, SceneTables


@wp.func
def can_move(T: SceneTables, S: CandidateState, b: int, k: int, a: int, direction: float) -> bool:
    """Whether object k may move along axis a in ``direction`` without leaving its projection interval
    (fixed objects never move)."""
    if k >= T.n_mov:
        return False
    x = S.x[b, k][a]
    if direction > 0.0:
        return x < S.ihi[b, k][a] - 1.0e-6
    return x > S.ilo[b, k][a] + 1.0e-6

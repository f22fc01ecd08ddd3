"""Projection intervals that are the same in every candidate of an env, computed once per compiled scene.

An object flagged ``STATIC_INTERVAL`` (``compiler/compile_problem.py``: unrotated, so that its bounds are the
scene's local bounds; every relation it is projected onto has a fixed parent or none) has one projection
interval per env: ``projection.object_interval`` reads only the object's bounds, its parents' bounds and the
room table. The solve kernels read it from ``T.static_iv`` (``projection.project``) instead of computing it
for every draw and every solver iteration. The table is made by that same function, so the layouts are bit for
bit the ones computed per candidate. Metres, env-local world frame.
"""

from __future__ import annotations

import warp as wp

from isaaclab_arena.relations.kernels.projection import object_interval
from isaaclab_arena.relations.kernels.tables import (
    FLAG_STATIC_INTERVAL,
    OI_FLAGS,
    CandidateState,
    ObjectColumn,
    ObjectFlag,
    SceneTables,
    sweep_scratch,
)
from isaaclab_arena.relations.kinds.dispatch import track_kind_sources

track_kind_sources(__name__)


@wp.kernel(enable_backward=False)
def static_interval_kernel(T: SceneTables, S: CandidateState, out: wp.array3d(dtype=wp.vec3)):
    """Object i's interval in env e, as ``project`` computes it with ``at_ratio`` 0 (out[e, i, 0:2]: lo, hi)
    and 1 (out[e, i, 2:4]); objects not flagged are left as they are."""
    e, i = wp.tid()
    if (T.obj_i[i][OI_FLAGS] & FLAG_STATIC_INTERVAL) == 0:
        return
    r = int(0)
    while r < 2:  # a dynamic loop: one call site (the ratio point of a NextTo is the only use of at_ratio)
        lo, hi = object_interval(T, S, e, e, i, r)
        out[e, i, 2 * r] = lo
        out[e, i, 2 * r + 1] = hi
        r += 1


def static_intervals(T: SceneTables, obj_i, num_envs: int, device: str) -> wp.array:
    """``T.static_iv`` of a scene whose tables ``T`` are complete but for it: (E, n_mov, 4) when an object
    is flagged ``STATIC_INTERVAL`` in the host rows ``obj_i``, else a (1, 1, 4) placeholder."""
    flagged = [int(row[ObjectColumn.FLAGS]) & ObjectFlag.STATIC_INTERVAL for row in obj_i]
    if not any(flagged):
        return wp.zeros((1, 1, 4), dtype=wp.vec3, device=device)
    n = T.n_mov
    out = wp.zeros((num_envs, n, 4), dtype=wp.vec3, device=device)
    S = CandidateState()
    S.x = wp.zeros((num_envs, n), dtype=wp.vec3, device=device)  # read only for parent-less rows (unused there)
    S.olo, S.ohi = T.local_lo, T.local_hi  # (E, n_all): an unrotated object's bounds, row e for env e
    S.m = S.v = S.g = S.ilo = S.ihi = wp.zeros((1, 1), dtype=wp.vec3, device=device)  # not read
    S.rot = wp.zeros((1, 1), dtype=wp.quat, device=device)
    sweep_scratch(S, T, 1, device)
    T.static_iv = out  # the struct's field must hold an array while it is passed
    wp.launch(static_interval_kernel, dim=(num_envs, n), inputs=[T, S, out], device=device)
    return out

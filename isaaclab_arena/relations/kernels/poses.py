"""Solver bounds of rotated objects and FaceTo headings."""

from __future__ import annotations

import warp as wp

from isaaclab_arena.relations.kernels.geometry import parked, rotated_offsets, yaw_quat
from isaaclab_arena.relations.kernels.tables import (
    OF_RANDOM_POS,
    OF_RANDOM_ROT,
    OI_RANDOM,
    RI_CHILD,
    RI_PARENT,
    CandidateState,
    SceneTables,
    obj_bounds,
    vec10f,
)
from isaaclab_arena.relations.kinds.dispatch import FACE_TO


@wp.func
def solver_offsets(q: wp.quat, llo: wp.vec3, lhi: wp.vec3, of: vec10f, random_on: int):
    """Bounds the solver uses: the rotated box, grown to cover every pose RandomAroundSolution may later
    draw (position half ranges; for rotation ranges the circumscribed circle, or sphere when roll/pitch
    vary), so a solved layout stays valid after the modifier."""
    lo, hi = rotated_offsets(q, llo, lhi)
    if random_on != 0:
        c = 0.5 * (lo + hi)
        h = 0.5 * (hi - lo)
        if of[OF_RANDOM_ROT] > 0.0 or of[OF_RANDOM_ROT + 1] > 0.0:
            r = wp.length(h)
            h = wp.vec3(r, r, r)
        elif of[OF_RANDOM_ROT + 2] > 0.0:
            r = wp.sqrt(h[0] * h[0] + h[1] * h[1])
            h = wp.vec3(r, r, h[2])
        h = h + wp.vec3(of[OF_RANDOM_POS], of[OF_RANDOM_POS + 1], of[OF_RANDOM_POS + 2])
        lo = c - h
        hi = c + h
    return lo, hi


@wp.func
def face_to_update(T: SceneTables, S: CandidateState, b: int, e: int):
    """Heading of every FaceTo subject: local +X toward the target's XY centre; bounds refit."""
    for r in range(T.kind_start[FACE_TO], T.kind_start[FACE_TO + 1]):
        ri = T.rel_i[r]
        i = ri[RI_CHILD]
        p = S.x[b, i]
        if parked(p):
            continue
        tlo, thi = obj_bounds(T, S, b, e, ri[RI_PARENT])
        dx = 0.5 * (tlo[0] + thi[0]) - p[0]
        dy = 0.5 * (tlo[1] + thi[1]) - p[1]
        if dx * dx + dy * dy > 1.0e-12:
            q = yaw_quat(wp.atan2(dy, dx))
            S.rot[b, i] = q
            lo, hi = solver_offsets(q, T.local_lo[e, i], T.local_hi[e, i], T.obj_f[i], T.obj_i[i][OI_RANDOM])
            S.olo[b, i] = lo
            S.ohi[b, i] = hi

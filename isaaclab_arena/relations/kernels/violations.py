"""One violation function per relation kind, shared by the solver (loss, exit test) and the checks.

Each ``*_violation`` returns ``(excess, cause)``: ``excess`` is how far (metres) the candidate lies
outside the set the check accepts (<= 0 inside it; the check passes when ``excess <= slack``), and
``cause`` a small code naming which part failed (0 when none; codes are spelled out in
``validation/diagnostics.py``). The solver's loss is ``weight * max(0, excess)`` per relation. The
``*_interval`` functions give, for the interval-shaped relations, the per-axis range of the subject's
origin that satisfies the relation (the solver projects onto it). Bounds are world AABBs (lo, hi) of
the rotated objects; ``olo``/``ohi`` are a subject's bounds relative to its origin.
"""

from __future__ import annotations

import warp as wp

from isaaclab_arena.relations.kernels.geometry import BIG, box_overlaps, vmin3
from isaaclab_arena.relations.kernels.tables import (
    KIND_ALIGN,
    KIND_AT,
    KIND_CLUTTER,
    KIND_CYLINDER,
    KIND_FACE_TO,
    KIND_LIMITS,
    KIND_NEXT_TO,
    KIND_NOT_NEXT_TO,
    KIND_ON,
    CandidateState,
    SceneTables,
    vec8f,
)

SHRINK = wp.constant(1.0e-5)  # projection targets lie this far inside an interval when it is wide enough


@wp.func
def obj_bounds(T: SceneTables, S: CandidateState, b: int, e: int, k: int):
    """World AABB of object k in candidate b (env e)."""
    if k < T.n_mov:
        p = S.x[b, k]
        return p + S.olo[b, k], p + S.ohi[b, k]
    return T.fixed_lo[e, k - T.n_mov], T.fixed_hi[e, k - T.n_mov]


@wp.func
def flagged(excess: float, slack: float, cause: int):
    """(excess, cause) when the excess is beyond the check's slack, else (excess, 0)."""
    if excess > slack:
        return excess, cause
    return excess, 0


@wp.func
def shrunk(lo: float, hi: float):
    """[lo, hi] moved inward by SHRINK on both ends when it stays non-empty."""
    if hi - lo > 2.0 * SHRINK:
        return lo + SHRINK, hi - SHRINK
    return lo, hi


# ----------------------------------------------------------------------------------------------- On
@wp.func
def on_interval(olo: wp.vec3, ohi: wp.vec3, plo: wp.vec3, phi: wp.vec3, clear: float, margin: float, overlap: int):
    lo = wp.vec3(-BIG)
    hi = wp.vec3(BIG)
    for a in range(2):
        if overlap != 0:
            l, h = shrunk(plo[a] - ohi[a], phi[a] - olo[a])
        else:
            l, h = shrunk(plo[a] + margin - olo[a], phi[a] - margin - ohi[a])
        lo[a] = l
        hi[a] = h
    z = phi[2] + clear - olo[2]
    lo[2] = z
    hi[2] = z
    return lo, hi


@wp.func
def on_violation(clo: wp.vec3, chi: wp.vec3, plo: wp.vec3, phi: wp.vec3, clear: float, margin: float, overlap: int,
                 ztol: float, slack: float):
    """Footprint inside the parent inset by margin (overlap: intersecting on X and Y); bottom in
    (top - ztol, top + clear + ztol]. Causes: 1 footprint, 2 below the band, 3 above the band."""
    fp = float(-BIG)
    for a in range(2):
        if overlap != 0:
            fp = wp.max(fp, wp.max(plo[a] - chi[a], clo[a] - phi[a]))
        else:
            fp = wp.max(fp, wp.max(plo[a] + margin - clo[a], chi[a] - (phi[a] - margin)))
    below = (phi[2] - ztol) - clo[2]
    above = clo[2] - (phi[2] + clear + ztol)
    if fp > slack:
        return fp, 1
    if below > slack:
        return below, 2
    if above > slack:
        return above, 3
    return wp.max(fp, wp.max(below, above)), 0


# ---------------------------------------------------------------------------------------- ClutterOn
@wp.func
def clutter_region(plo: wp.vec3, phi: wp.vec3, spread: float, margin: float):
    """Release region (XY of the returned lo/hi): central ``spread`` of the support, inset by margin."""
    c = 0.5 * (plo + phi)
    h = 0.5 * spread * (phi - plo)
    return c - h + wp.vec3(margin, margin, 0.0), c + h - wp.vec3(margin, margin, 0.0)


@wp.func
def clutter_interval(olo: wp.vec3, ohi: wp.vec3, plo: wp.vec3, phi: wp.vec3, spread: float, clear: float,
                     margin: float):
    rlo, rhi = clutter_region(plo, phi, spread, margin)
    lo = wp.vec3(-BIG)
    hi = wp.vec3(BIG)
    for a in range(2):
        l, h = shrunk(rlo[a] - olo[a], rhi[a] - ohi[a])
        lo[a] = l
        hi[a] = h
    lo[2] = phi[2] + clear - olo[2] + SHRINK
    return lo, hi


@wp.func
def clutter_footprint(clo: wp.vec3, chi: wp.vec3, plo: wp.vec3, phi: wp.vec3, spread: float, margin: float) -> float:
    """How far (m) the subject's footprint [clo, chi] reaches outside the release region (<= 0 inside)."""
    rlo, rhi = clutter_region(plo, phi, spread, margin)
    fp = float(-BIG)
    for a in range(2):
        fp = wp.max(fp, wp.max(rlo[a] - clo[a], chi[a] - rhi[a]))
    return fp


@wp.func
def clutter_violation(clo: wp.vec3, chi: wp.vec3, plo: wp.vec3, phi: wp.vec3, spread: float, clear: float,
                      margin: float, slack: float):
    """Footprint inside the release region; bottom at least clear above the support top (slack only
    on the clearance, never below the top). Causes: 1 outside the region, 2 too little clearance."""
    fp = clutter_footprint(clo, chi, plo, phi, spread, margin)
    low = wp.max((phi[2] + clear) - clo[2], phi[2] - clo[2] + slack)
    if fp > slack:
        return fp, 1
    if low > slack:
        return low, 2
    return wp.max(fp, low), 0


# ------------------------------------------------------------------------------------------- NextTo
@wp.func
def next_to_interval(olo: wp.vec3, ohi: wp.vec3, plo: wp.vec3, phi: wp.vec3, axis: int, sign: float, dist: float,
                     tol: float, ratio: float, has_ratio: int, at_ratio: int):
    """Origin range putting the gap in [dist, dist + tol] (aimed inside by a small band) and the
    subject's centre within the parent's cross extent (at the ratio point when ``at_ratio``)."""
    lo = wp.vec3(-BIG)
    hi = wp.vec3(BIG)
    band = wp.min(0.25 * tol, 1.0e-3)
    g_lo = dist + band
    g_hi = dist + tol - band
    if sign > 0.0:
        lo[axis] = phi[axis] + g_lo - olo[axis]
        hi[axis] = phi[axis] + g_hi - olo[axis]
    else:
        lo[axis] = plo[axis] - g_hi - ohi[axis]
        hi[axis] = plo[axis] - g_lo - ohi[axis]
    c = 1 - axis
    co = 0.5 * (olo[c] + ohi[c])
    if has_ratio != 0 and at_ratio != 0:
        t = 0.5 * (plo[c] + phi[c]) + ratio * 0.5 * (phi[c] - plo[c]) - co
        lo[c] = t
        hi[c] = t
    else:
        l, h = shrunk(plo[c] - co, phi[c] - co)
        lo[c] = l
        hi[c] = h
    return lo, hi


@wp.func
def next_to_violation(clo: wp.vec3, chi: wp.vec3, plo: wp.vec3, phi: wp.vec3, axis: int, sign: float, dist: float,
                      tol: float, slack: float):
    """Side and cross position within tol; gap in [dist, dist + tol] (never closer than dist).
    Causes: 1 wrong side, 2 off the parent's cross extent, 3 closer than dist, 4 farther than dist + tol."""
    cc = 0.5 * (clo + chi)
    if sign > 0.0:
        side = phi[axis] - cc[axis]
        gap = clo[axis] - phi[axis]
    else:
        side = cc[axis] - plo[axis]
        gap = plo[axis] - chi[axis]
    c = 1 - axis
    cross = wp.max(plo[c] - cc[c], cc[c] - phi[c])
    e1 = side - tol
    e2 = cross - tol
    e3 = dist - gap
    e4 = gap - dist - tol
    if e1 > slack:
        return e1, 1
    if e2 > slack:
        return e2, 2
    if e3 > slack:
        return e3, 3
    if e4 > slack:
        return e4, 4
    return wp.max(wp.max(e1, e2), wp.max(e3, e4)), 0


# ---------------------------------------------------------------------------------------- NotNextTo
@wp.func
def not_next_to_raw(clo: wp.vec3, chi: wp.vec3, plo: wp.vec3, phi: wp.vec3, axis: int, sign: float, margin: float):
    """Depth (m) of the subject inside the keep-out region: past the parent's ``side`` face and within
    the parent's perpendicular footprint grown by ``margin`` (the NotNextToLossStrategy margin_m).
    Returns (depth, d depth / d subject position); depth <= 0 means cleared."""
    if sign > 0.0:
        past = chi[axis] - phi[axis]
    else:
        past = plo[axis] - clo[axis]
    c = 1 - axis
    lat1 = chi[c] - (plo[c] - margin)
    lat2 = (phi[c] + margin) - clo[c]
    grad = wp.vec3(0.0)
    depth = past
    if past <= wp.min(lat1, lat2):
        grad[axis] = sign
    elif lat1 <= lat2:
        depth = lat1
        grad[c] = 1.0
    else:
        depth = lat2
        grad[c] = -1.0
    return depth, grad


@wp.func
def not_next_to_violation(clo: wp.vec3, chi: wp.vec3, plo: wp.vec3, phi: wp.vec3, axis: int, sign: float,
                          margin: float, tol: float, slack: float):
    """Keep-out cleared within tol. Cause 1: inside the keep-out region."""
    depth, grad = not_next_to_raw(clo, chi, plo, phi, axis, sign, margin)
    e = depth - tol
    return flagged(e, slack, 1)


# ---------------------------------------------------------------------------------------- AlignWith
@wp.func
def align_interval(olo: wp.vec3, ohi: wp.vec3, plo: wp.vec3, phi: wp.vec3, axis: int, off: float, tol: float):
    lo = wp.vec3(-BIG)
    hi = wp.vec3(BIG)
    band = wp.min(0.25 * tol, 1.0e-3)
    pc = 0.5 * (plo[axis] + phi[axis])
    co = 0.5 * (olo[axis] + ohi[axis])
    lo[axis] = pc + off - tol + band - co
    hi[axis] = pc + off + tol - band - co
    return lo, hi


@wp.func
def align_violation(clo: wp.vec3, chi: wp.vec3, plo: wp.vec3, phi: wp.vec3, axis: int, off: float, tol: float,
                    slack: float):
    """Centre error along axis within tol. Cause 1: misaligned."""
    err = wp.abs(0.5 * (clo[axis] + chi[axis]) - 0.5 * (plo[axis] + phi[axis]) - off) - tol
    return flagged(err, slack, 1)


# ------------------------------------------------------------------------------ AtPosition / limits
@wp.func
def at_violation(p: wp.vec3, mask: wp.vec3, val: wp.vec3, slack: float):
    """Origin off the requested coordinates. Cause 1."""
    e = float(-BIG)
    for a in range(3):
        if mask[a] > 0.0:
            e = wp.max(e, wp.abs(p[a] - val[a]))
    return flagged(e, slack, 1)


@wp.func
def limits_violation(p: wp.vec3, lo: wp.vec3, hi: wp.vec3, slack: float):
    """Origin outside the box limits. Cause 1."""
    e = float(-BIG)
    for a in range(3):
        e = wp.max(e, wp.max(lo[a] - p[a], p[a] - hi[a]))
    return flagged(e, slack, 1)


@wp.func
def cylinder_raw(p: wp.vec3, center: wp.vec2, rmin: float, rmax: float):
    """(depth, gradient, cause): depth > 0 inside radius_min (cause 1) or outside radius_max (cause 2)."""
    dx = p[0] - center[0]
    dy = p[1] - center[1]
    r = wp.sqrt(dx * dx + dy * dy)
    d = wp.vec3(1.0, 0.0, 0.0)
    if r > 1.0e-9:
        d = wp.vec3(dx / r, dy / r, 0.0)
    e_in = float(-BIG)
    e_out = float(-BIG)
    if rmin >= 0.0:
        e_in = rmin - r
    if rmax >= 0.0:
        e_out = r - rmax
    if e_in >= e_out:
        return e_in, -d, 1
    return e_out, d, 2


@wp.func
def cylinder_violation(p: wp.vec3, center: wp.vec2, rmin: float, rmax: float, slack: float):
    e, grad, cause = cylinder_raw(p, center, rmin, rmax)
    return flagged(e, slack, cause)


# ------------------------------------------------------------------------------------------- FaceTo
@wp.func
def face_to_violation(p: wp.vec3, tlo: wp.vec3, thi: wp.vec3, slack: float):
    """Subject origin at the target's XY centre (no defined heading). Cause 1."""
    tc = 0.5 * (tlo + thi)
    dx = tc[0] - p[0]
    dy = tc[1] - p[1]
    e = 1.0e-6 - wp.sqrt(dx * dx + dy * dy)
    if e > 0.0:
        return e, 1
    return e, 0


# ---------------------------------------------------------------------------------------- no_overlap
@wp.func
def overlap_depth(lo_i: wp.vec3, hi_i: wp.vec3, lo_j: wp.vec3, hi_j: wp.vec3, clearance: float) -> float:
    """Penetration depth of two AABBs grown by clearance/2 each (<= 0: apart or touching)."""
    return vmin3(box_overlaps(lo_i, hi_i, lo_j, hi_j, clearance))


# ---------------------------------------------------------------------------------------- dispatch
@wp.func
def relation_interval(kind: int, axis: int, flag: int, f: vec8f, olo: wp.vec3, ohi: wp.vec3, plo: wp.vec3,
                      phi: wp.vec3, at_ratio: int):
    """Per-axis origin interval of one interval-shaped relation row (+-BIG where unconstrained)."""
    lo = wp.vec3(-BIG)
    hi = wp.vec3(BIG)
    if kind == KIND_ON:
        lo, hi = on_interval(olo, ohi, plo, phi, f[0], f[1], flag)
    elif kind == KIND_CLUTTER:
        lo, hi = clutter_interval(olo, ohi, plo, phi, f[0], f[1], f[3])
    elif kind == KIND_NEXT_TO:
        lo, hi = next_to_interval(olo, ohi, plo, phi, axis, f[0], f[1], f[2], f[3], flag, at_ratio)
    elif kind == KIND_ALIGN:
        lo, hi = align_interval(olo, ohi, plo, phi, axis, f[0], f[1])
    elif kind == KIND_AT:
        for a in range(3):
            if f[a] > 0.0:
                lo[a] = f[3 + a]
                hi[a] = f[3 + a]
    elif kind == KIND_LIMITS:
        lo = wp.vec3(f[0], f[1], f[2])
        hi = wp.vec3(f[3], f[4], f[5])
    return lo, hi


@wp.func
def relation_violation(kind: int, axis: int, flag: int, f: vec8f, p: wp.vec3, clo: wp.vec3, chi: wp.vec3,
                       plo: wp.vec3, phi: wp.vec3, ztol: float, slack: float):
    """(excess, cause) of one relation row; the shared definition behind its loss and its check."""
    ex = float(0.0)
    cause = int(0)
    if kind == KIND_ON:
        ex, cause = on_violation(clo, chi, plo, phi, f[0], f[1], flag, ztol, slack)
    elif kind == KIND_CLUTTER:
        ex, cause = clutter_violation(clo, chi, plo, phi, f[0], f[1], f[3], slack)
    elif kind == KIND_NEXT_TO:
        ex, cause = next_to_violation(clo, chi, plo, phi, axis, f[0], f[1], f[2], slack)
    elif kind == KIND_NOT_NEXT_TO:
        ex, cause = not_next_to_violation(clo, chi, plo, phi, axis, f[0], f[2], f[1], slack)
    elif kind == KIND_ALIGN:
        ex, cause = align_violation(clo, chi, plo, phi, axis, f[0], f[1], slack)
    elif kind == KIND_AT:
        ex, cause = at_violation(p, wp.vec3(f[0], f[1], f[2]), wp.vec3(f[3], f[4], f[5]), slack)
    elif kind == KIND_LIMITS:
        ex, cause = limits_violation(p, wp.vec3(f[0], f[1], f[2]), wp.vec3(f[3], f[4], f[5]), slack)
    elif kind == KIND_CYLINDER:
        ex, cause = cylinder_violation(p, wp.vec2(f[0], f[1]), f[2], f[3], slack)
    elif kind == KIND_FACE_TO:
        ex, cause = face_to_violation(p, plo, phi, slack)
    return ex, cause

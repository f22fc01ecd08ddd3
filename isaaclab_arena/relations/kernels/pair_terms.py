"""Pair terms beyond axis-aligned boxes: boxes rotated about Z (OBB) and MESH sphere-set / mesh queries, and
the MESH support terms (an On footprint over its fixed support's mesh).

The compile stage puts the axis-aligned pairs first (``[0, n_box_pairs)``: the fast path of ``penalties.py``
and ``evaluate.py``, unchanged); the others (``pair_m[k][MODE]`` not 0) come here from a second loop. Every function returns the pair's
penetration depth in metres (> 0 overlapping, clearance included) and a direction that moves ``i`` away from
``j`` (world frame). Frames: env-local world; local boxes, spheres and meshes in their asset's root frame.
"""

from __future__ import annotations

import warp as wp

from isaaclab_arena.relations.kernels.geometry import BIG, box_overlaps
from isaaclab_arena.relations.kernels.projection import carrier
from isaaclab_arena.relations.kernels.tables import (
    PF_AXES,
    PI_MODE,
    PI_TARGET,
    PM_INSIDE,
    PM_MESH_IJ,
    PM_MESH_JI,
    PM_OBB,
    CandidateState,
    SceneTables,
    obj_bounds,
)
from isaaclab_arena.relations.mesh.sdf import MeshTables, has_mesh_pair, point_inside, sphere_set_penetration

#: A direction shorter than this is no direction (metres of push).
TINY = wp.constant(1.0e-9)


@wp.func
def object_pose(n_mov: int, x: wp.array2d(dtype=wp.vec3), rot: wp.array2d(dtype=wp.quat),
                fixed_pose: wp.array(dtype=wp.transform), b: int, k: int):
    """(origin, xyzw rotation) of object k in candidate b (fixed objects: their fixed pose). Called as
    ``object_pose(T.n_mov, S.x, S.rot, T.fixed_pose, b, k)``: the helpers of this module that are called from
    several sites take the arrays they read, not the tables and state (which warp copies by value per call)."""
    if k < n_mov:
        return x[b, k], rot[b, k]
    tf = fixed_pose[k - n_mov]
    return wp.transform_get_translation(tf), wp.transform_get_rotation(tf)


@wp.func
def obb_frame(n_mov: int, local_lo: wp.array2d(dtype=wp.vec3), local_hi: wp.array2d(dtype=wp.vec3),
              x: wp.array2d(dtype=wp.vec3), rot: wp.array2d(dtype=wp.quat), fixed_pose: wp.array(dtype=wp.transform),
              b: int, e: int, k: int):
    """(world centre, half extents, cos yaw, sin yaw) of object k's local box turned about Z by its yaw."""
    lo = local_lo[e, k]
    hi = local_hi[e, k]
    p, q = object_pose(n_mov, x, rot, fixed_pose, b, k)
    cs = 1.0 - 2.0 * (q[1] * q[1] + q[2] * q[2])
    sn = 2.0 * (q[0] * q[1] + q[2] * q[3])
    r = wp.sqrt(cs * cs + sn * sn)
    if r > 1.0e-12:
        cs = cs / r
        sn = sn / r
    return p + wp.quat_rotate(q, 0.5 * (lo + hi)), 0.5 * (hi - lo), cs, sn


@wp.func
def sat_radius(h: wp.vec3, cs: float, sn: float, nx: float, ny: float) -> float:
    """Half width of a box (half extents h, yaw cos/sin) projected on the XY unit axis (nx, ny)."""
    return h[0] * wp.abs(nx * cs + ny * sn) + h[1] * wp.abs(-nx * sn + ny * cs)


@wp.func
def obb_pair(T: SceneTables, S: CandidateState, b: int, e: int, i: int, j: int, clearance: float):
    """Separating-axis test of the boxes of i and j turned about Z, each grown by clearance / 2 (as
    ``box_overlaps``). Returns (depth, xy overlap, xy direction moving i away from j, z overlap, z sign):
    depth = the least overlap over the four box axes and Z (<= 0: apart or touching)."""
    ci, hi, csi, sni = obb_frame(T.n_mov, T.local_lo, T.local_hi, S.x, S.rot, T.fixed_pose, b, e, i)
    cj, hj, csj, snj = obb_frame(T.n_mov, T.local_lo, T.local_hi, S.x, S.rot, T.fixed_pose, b, e, j)
    d = ci - cj
    best = float(BIG)
    axis = wp.vec3(0.0)
    for a in range(4):
        nx = csi
        ny = sni
        if a == 1:
            nx = -sni
            ny = csi
        elif a == 2:
            nx = csj
            ny = snj
        elif a == 3:
            nx = -snj
            ny = csj
        proj = nx * d[0] + ny * d[1]
        o = sat_radius(hi, csi, sni, nx, ny) + sat_radius(hj, csj, snj, nx, ny) - wp.abs(proj) + clearance
        if o < best:
            best = o
            s = float(1.0)
            if proj < 0.0:
                s = -1.0
            axis = wp.vec3(s * nx, s * ny, 0.0)
    oz = hi[2] + hj[2] - wp.abs(d[2]) + clearance
    sz = float(1.0)
    if d[2] < 0.0:
        sz = -1.0
    return wp.min(best, oz), best, axis, oz, sz


@wp.func
def mesh_pair(T: SceneTables, S: CandidateState, b: int, e: int, i: int, j: int, pm: wp.vec2i, clearance: float,
              stop: float):
    """MESH depth of pair (i, j) with ``pair_m`` row pm: the deepest sphere of i in j's mesh (MESH_IJ) or of j
    in i's mesh (MESH_JI), clearance included (exact down to -NEAR_BAND), and with INSIDE how deep the other
    object's anchor point lies in the sphere side's mesh. Returns (depth, push moving i away from j, available, ok):
    ``available`` is 0 when neither direction has geometry in env e (the caller falls back to boxes)."""
    M = T.mesh[0]
    gi = M.geom[e, i]
    gj = M.geom[e, j]
    gt = gj
    if pm[PI_TARGET] >= 0:
        gt = pm[PI_TARGET]
    pi, qi = object_pose(T.n_mov, S.x, S.rot, T.fixed_pose, b, i)
    pj, qj = object_pose(T.n_mov, S.x, S.rot, T.fixed_pose, b, j)
    depth = float(-BIG)
    push = wp.vec3(0.0)
    ok = int(1)
    avail = int(0)
    if (pm[PI_MODE] & PM_MESH_IJ) != 0 and has_mesh_pair(M, gi, gt) != 0:
        d, p, k, good = sphere_set_penetration(M, gi, pi, qi, gt, pj, qj, clearance, stop)
        depth = d
        push = p
        ok = good
        avail = 1
    if (pm[PI_MODE] & PM_MESH_JI) != 0 and has_mesh_pair(M, gj, gi) != 0 and depth <= stop:
        d2, p2, k2, good2 = sphere_set_penetration(M, gj, pj, qj, gi, pi, qi, clearance, stop)
        depth = wp.max(depth, d2)
        push = push - p2
        ok = wp.min(ok, good2)
        avail = 1
    if (pm[PI_MODE] & PM_INSIDE) != 0 and avail != 0 and depth <= stop:
        # the other object's surface point inside the sphere side's mesh: one object wholly inside the other
        if (pm[PI_MODE] & PM_MESH_IJ) != 0:
            d3, out3, good3 = point_inside(M, gj, pj, qj, gi, pi, qi)
            if d3 > 0.0:
                depth = wp.max(depth, d3 + clearance)
                push = push - out3 * d3
            ok = wp.min(ok, good3)
        else:
            d3, out3, good3 = point_inside(M, gi, pi, qi, gj, pj, qj)
            if d3 > 0.0:
                depth = wp.max(depth, d3 + clearance)
                push = push + out3 * d3
            ok = wp.min(ok, good3)
    if ok == 0:
        wp.atomic_add(M.bad, 0, 1)
    return depth, push, avail, ok


@wp.func
def box_direction(o: wp.vec3, lo_i: wp.vec3, hi_i: wp.vec3, lo_j: wp.vec3, hi_j: wp.vec3, allowed: wp.vec3) -> wp.vec3:
    """Unit world axis of least overlap among the allowed ones, signed to move box i away from box j."""
    best = float(BIG)
    out = wp.vec3(0.0)
    for a in range(3):
        if allowed[a] > 0.0 and o[a] < best:
            best = o[a]
            s = float(1.0)
            if (lo_i[a] + hi_i[a]) - (lo_j[a] + hi_j[a]) < 0.0:
                s = -1.0
            out = wp.vec3(0.0)
            out[a] = s
    return out


@wp.func
def pair_term(T: SceneTables, S: CandidateState, b: int, e: int, k: int, clearance: float, stop: float,
              allowed: wp.vec3):
    """(depth, direction moving i away from j) of pair k, whose mode is not 0: OBB or MESH (clearance
    included). ``allowed`` (1 per world axis a push may use) shapes the direction; the depth never depends
    on it. A MESH pair without geometry in env e, and any zero direction, falls back to the boxes."""
    ij = T.pair_i[k]
    i = ij[0]
    j = ij[1]
    pm = T.pair_m[k]
    mode = pm[PI_MODE]
    depth = float(-BIG)
    dirn = wp.vec3(0.0)
    done = int(0)
    if (mode & (PM_MESH_IJ | PM_MESH_JI)) != 0:
        d, push, avail, ok = mesh_pair(T, S, b, e, i, j, pm, clearance, stop)
        if avail != 0:
            depth = d
            dirn = wp.cw_mul(push, allowed)
            done = 1
    elif (mode & PM_OBB) != 0:
        d, oxy, axis, oz, sz = obb_pair(T, S, b, e, i, j, clearance)
        depth = d
        xy_ok = allowed[0] > 0.0 or allowed[1] > 0.0
        if allowed[2] > 0.0 and (oz < oxy or not xy_ok):
            dirn = wp.vec3(0.0, 0.0, sz)
        elif xy_ok:
            dirn = wp.cw_mul(axis, allowed)
        done = 1
    lo_i, hi_i = obj_bounds(T, S, b, e, i)
    lo_j, hi_j = obj_bounds(T, S, b, e, j)
    if done == 0:  # boxes
        o = box_overlaps(lo_i, hi_i, lo_j, hi_j, clearance)
        depth = wp.min(wp.min(o[0], o[1]), o[2])
        dirn = box_direction(o, lo_i, hi_i, lo_j, hi_j, allowed)
    elif wp.length(dirn) <= TINY:  # e.g. a purely vertical push on a pinned pair: apart along the boxes
        o = box_overlaps(lo_i, hi_i, lo_j, hi_j, clearance)
        dirn = box_direction(o, lo_i, hi_i, lo_j, hi_j, allowed)
    n = wp.length(dirn)
    if n > TINY:
        dirn = dirn / n
    return depth, dirn


@wp.func
def push_pair(T: SceneTables, S: CandidateState, b: int, i: int, j: int, dirn: wp.vec3):
    """Adds the solver push of an overlapping general pair to S.g along ``dirn`` (unit, moving i away from
    j): i and a movable j move apart; an object that cannot move along the dominant axis of ``dirn`` passes
    the push to the movable parent that carries it (as the box pairs do)."""
    a = int(0)
    if wp.abs(dirn[1]) > wp.abs(dirn[a]):
        a = 1
    if wp.abs(dirn[2]) > wp.abs(dirn[a]):
        a = 2
    sg = float(1.0)
    if dirn[a] < 0.0:
        sg = -1.0
    push = dirn * T.pair_w
    ci = carrier(T, S, b, i, j, a, sg)
    if ci < 0:
        ci = i
    S.g[b, ci] = S.g[b, ci] - push
    if j < T.n_mov:
        cj = carrier(T, S, b, j, i, a, -sg)
        if cj < 0:
            cj = j
        S.g[b, cj] = S.g[b, cj] + push


@wp.func
def allowed_axes(T: SceneTables, k: int) -> wp.vec3:
    pf = T.pair_f[k]
    return wp.vec3(pf[PF_AXES], pf[PF_AXES + 1], pf[PF_AXES + 2])


@wp.func
def support_distance(M: MeshTables, g: int, q: wp.vec3, probe: float):
    """Signed distance (m, negative inside) of local point q, ``probe`` below the support's top, to support
    mesh g, and its gradient (local): the unsigned distance of a closest-point query, the sign from a vertical
    ray cast down from ``probe`` + 1 cm above q (q is inside when the first surface the ray meets lies within
    that height: solid from the top down to q). Cheaper than a winding number and exact for such probes."""
    mesh = M.mesh_id[g]
    qn = wp.mesh_query_point_no_sign(mesh, q, M.reach[g])
    if not qn.result:
        return M.reach[g], wp.vec3(0.0), 0
    cp = wp.mesh_eval_position(mesh, qn.face, qn.u, qn.v)
    d = q - cp
    dist = wp.length(d)
    up = probe + 0.01
    s = float(1.0)
    hit = wp.mesh_query_ray(mesh, q + wp.vec3(0.0, 0.0, up), wp.vec3(0.0, 0.0, -1.0), up + 1.0e-6)
    if hit.result:
        s = -1.0
    grad = wp.vec3(0.0)
    if dist > 1.0e-9:
        grad = d * (s / dist)
    return s * dist, grad, 1


@wp.func
def support_term(T: SceneTables, S: CandidateState, b: int, e: int, s: int):
    """MESH support term s: how far (m) the subject's footprint outline lies off its fixed support's mesh.

    Each footprint point of the subject (its collision mesh's lowest outline, turned with the subject) is
    probed ``probe`` metres below the support's top (its world AABB top) at the point's XY: inside the
    support's mesh (signed distance < 0) there is support under it. Returns (excess, direction, subject,
    margin, row): the largest signed distance over the points (<= 0: every point supported; > 0 e.g. over a
    sink cut-out), the XY direction (unit) in which that excess grows (moving against it finds support),
    the subject, the solver's margin (m: the solver aims that far inside) and the On relation's row
    (``rel_i``). The support must stay upright (yaw only): its vertical is the world's."""
    M = T.mesh[0]
    row = M.sup_i[s]
    c = row[0]
    p = row[1]
    probe = M.sup_f[s][0]
    margin = M.sup_f[s][1]
    gc = M.geom[e, c]
    gp = M.geom[e, p]
    excess = float(-BIG)
    grow = wp.vec3(0.0)
    if gc < 0 or gp < 0:
        return excess, grow, c, margin, row[2]
    plo, phi = obj_bounds(T, S, b, e, p)
    xc, qc = object_pose(T.n_mov, S.x, S.rot, T.fixed_pose, b, c)
    xp, qp = object_pose(T.n_mov, S.x, S.rot, T.fixed_pose, b, p)
    ok = int(1)
    for f in range(M.foot_start[gc], M.foot_start[gc + 1]):
        w = xc + wp.quat_rotate(qc, M.foot[f])
        q = wp.vec3(w[0], w[1], phi[2] - probe)
        sd, grad, good = support_distance(M, gp, wp.quat_rotate_inv(qp, q - xp), probe)
        ok = wp.min(ok, good)
        if sd > excess:
            excess = sd
        if sd > -margin:
            g = wp.quat_rotate(qp, grad)
            grow = grow + (sd + margin) * wp.vec3(g[0], g[1], 0.0)
    if ok == 0:
        wp.atomic_add(M.bad, 0, 1)
    n = wp.length(grow)
    if n > TINY:
        grow = grow / n
    return excess, grow, c, margin, row[2]

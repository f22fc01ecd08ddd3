"""Sphere-set versus mesh queries a kernel thread can call (``@wp.func``), and the tables they read.

Geometry rows ``g`` describe one collision geometry each (an asset's mesh, or one member of an object
set): its target mesh (a warp ``Mesh`` id, 0 when it has none) and its sphere cover (rows
``[sph_start[g], sph_start[g + 1])`` of ``sph``; none when the range is empty). ``geom[e, k]`` gives the
geometry of scene object ``k`` in env ``e`` (-1 when it has none), so heterogeneous envs work unchanged.

Frames and units: spheres and meshes are in their asset's root frame; poses are (position, xyzw
quaternion) in the env-local world frame; lengths in metres. Signed distances are negative inside.
"""

from __future__ import annotations

import warp as wp

#: Distance below which the closest point is too near to give a direction; the face normal is used.
NEAR_EPS = wp.constant(1.0e-7)
#: Depths are exact down to -NEAR_BAND (metres of clearance left); farther spheres report -NEAR_BAND.
NEAR_BAND = wp.constant(0.01)


@wp.struct
class MeshTables:
    mesh_id: wp.array(dtype=wp.uint64)  # (G,) warp Mesh id, 0 = no target mesh
    reach: wp.array(dtype=float)  # (G,) query distance that finds the closest point from near the mesh
    mesh_lo: wp.array(dtype=wp.vec3)  # (G,) local bounds of the target mesh
    mesh_hi: wp.array(dtype=wp.vec3)
    grid_lo: wp.array(dtype=wp.vec3)  # (G,) corner of the distance grid (local)
    grid_h: wp.array(dtype=float)  # (G,) its cell size
    grid_n: wp.array(dtype=wp.vec3i)  # (G,) its cells per axis
    grid_start: wp.array(dtype=int)  # (G,) first cell of geometry g in ``grid``
    grid: wp.array(dtype=float)  # packed cells (x fastest): signed distance of each cell's centre
    sph: wp.array(dtype=wp.vec4)  # (S_total,) local centre x, y, z and radius
    sph_start: wp.array(dtype=int)  # (G + 1,) sphere rows of each geometry
    bound: wp.array(dtype=wp.vec4)  # (G,) local centre and radius of a sphere around all its spheres
    geom: wp.array2d(dtype=int)  # (E, n_objects) geometry row of object k in env e, -1 none
    anchor: wp.array(dtype=wp.vec3)  # (G,) a point of each geometry's surface (local): containment tests
    foot: wp.array(dtype=wp.vec3)  # footprint outline points (local) of the geometries, packed
    foot_start: wp.array(dtype=int)  # (G + 1,) foot rows of each geometry
    sup_i: wp.array(dtype=wp.vec4i)  # support terms: subject, fixed parent, relation row (rel_i), 0
    sup_f: wp.array(dtype=wp.vec2)  # per support term: probe depth below the support top, solver margin (m)
    bad: wp.array(dtype=int)  # (1,) count of unreliable queries in solver kernels ([MeshSDF])


@wp.func
def box_gap(p: wp.vec3, lo: wp.vec3, hi: wp.vec3) -> float:
    """Distance from ``p`` to the box [lo, hi] (0 inside)."""
    dx = wp.max(wp.max(lo[0] - p[0], p[0] - hi[0]), 0.0)
    dy = wp.max(wp.max(lo[1] - p[1], p[1] - hi[1]), 0.0)
    dz = wp.max(wp.max(lo[2] - p[2], p[2] - hi[2]), 0.0)
    return wp.sqrt(dx * dx + dy * dy + dz * dz)


@wp.func
def grid_bounds(M: MeshTables, g: int, p: wp.vec3):
    """(low, high) bounds of the signed distance at local point ``p`` from target ``g``'s distance grid:
    the centre value of p's cell, minus / plus the distance from that centre to ``p``. Outside the grid
    (which wraps the mesh with one cell of margin) the point is outside: (its gap to the mesh box, BIG)."""
    u = (p - M.grid_lo[g]) / M.grid_h[g]
    n = M.grid_n[g]
    i = int(wp.floor(u[0]))
    j = int(wp.floor(u[1]))
    k = int(wp.floor(u[2]))
    if i < 0 or j < 0 or k < 0 or i >= n[0] or j >= n[1] or k >= n[2]:
        return box_gap(p, M.mesh_lo[g], M.mesh_hi[g]), 1.0e9
    centre = M.grid_lo[g] + M.grid_h[g] * wp.vec3(float(i) + 0.5, float(j) + 0.5, float(k) + 0.5)
    r = wp.length(p - centre) + 1.0e-6
    sd = M.grid[M.grid_start[g] + i + n[0] * (j + n[1] * k)]
    return sd - r, sd + r


@wp.func
def mesh_sdf(M: MeshTables, g: int, p: wp.vec3, near: float):
    """Signed distance of local point ``p`` to target ``g``'s mesh, its gradient and a validity flag.

    Returns ``(sd, grad, ok)``: ``sd`` is exact (negative inside, by winding number) when ``sd < near``;
    a point outside and farther than ``near`` returns ``sd = near`` (a lower bound) and a zero gradient.
    ``grad`` is the unit direction in which ``sd`` grows (local frame). ``ok`` is 0 when no closest point
    was found or the result is not finite. Cost: nothing when the distance grid already shows the point
    farther than ``near``; one closest-point query when it fixes the sign; a winding-number query (the
    expensive one) only when the point's cell straddles the surface.
    """
    low, high = grid_bounds(M, g, p)
    if low >= near:
        return near, wp.vec3(0.0), 1
    mesh = M.mesh_id[g]
    s = float(0.0)
    face = int(-1)
    u = float(0.0)
    v = float(0.0)
    if low > 0.0 or high < 0.0:
        s = 1.0
        max_dist = near
        if high < 0.0:
            s = -1.0
            max_dist = M.reach[g]
        qn = wp.mesh_query_point_no_sign(mesh, p, max_dist)
        if not qn.result:
            if s > 0.0:
                return near, wp.vec3(0.0), 1
            return near, wp.vec3(0.0), 0
        face = qn.face
        u = qn.u
        v = qn.v
    else:
        qw = wp.mesh_query_point_sign_winding_number(mesh, p, M.reach[g])
        if not qw.result:
            return near, wp.vec3(0.0), 0
        s = qw.sign
        face = qw.face
        u = qw.u
        v = qw.v
    cp = wp.mesh_eval_position(mesh, face, u, v)
    d = p - cp
    dist = wp.length(d)
    grad = wp.mesh_eval_face_normal(mesh, face)
    if dist > NEAR_EPS:
        grad = d * (s / dist)
    sd = s * dist
    ok = int(1)
    if not wp.isfinite(sd):
        ok = 0
    if sd >= near:
        return near, wp.vec3(0.0), ok
    return sd, grad, ok


@wp.func
def has_mesh_pair(M: MeshTables, gs: int, gt: int) -> int:
    """1 when subject geometry ``gs`` has spheres and target geometry ``gt`` has a mesh (else boxes)."""
    if gs < 0 or gt < 0:
        return 0
    if M.mesh_id[gt] == wp.uint64(0):
        return 0
    if M.sph_start[gs + 1] <= M.sph_start[gs]:
        return 0
    return 1


@wp.func
def point_inside(M: MeshTables, gp: int, pp: wp.vec3, qp: wp.quat, gt: int, pt: wp.vec3, qt: wp.quat):
    """How deep (m, > 0 inside) the anchor point of geometry ``gp`` posed at (pp, qp) lies inside target ``gt``
    posed at (pt, qt), and the world direction in which it gets out (0 when outside). An anchor is a point of
    its object's surface, so a positive depth means the two objects intersect; with the sphere test of the
    other direction this catches an object wholly inside the other. Returns (depth, out, ok)."""
    w = pp + wp.quat_rotate(qp, M.anchor[gp])
    sd, grad, ok = mesh_sdf(M, gt, wp.quat_rotate_inv(qt, w - pt), NEAR_BAND)
    return -sd, wp.quat_rotate(qt, grad), ok


@wp.func
def sphere_set_penetration(M: MeshTables, gs: int, ps: wp.vec3, qs: wp.quat, gt: int, pt: wp.vec3, qt: wp.quat,
                           clearance: float, stop_above: float):
    """Penetration of subject ``gs`` posed at (ps, qs) into target ``gt`` posed at (pt, qt), world frame.

    Returns ``(depth, push, deepest, ok)``:
      - ``depth``: max over spheres of ``radius + clearance - signed distance`` (metres); > 0 means a sphere
        is closer than ``clearance`` to the target or inside it. Exact down to ``-NEAR_BAND``; a sphere
        farther out counts as ``-NEAR_BAND``. When the subject's bounding sphere is more than ``NEAR_BAND``
        from the target's box, minus that gap is returned without querying the mesh (values at or below
        ``-NEAR_BAND`` only say that at least that much clearance is left).
      - ``push``: sum over penetrating spheres of ``depth_k * gradient_k`` (world): moving the subject
        along it separates the pair; the loss ``sum_k depth_k^2 / 2`` has gradient ``-push`` in ``ps``.
      - ``deepest``: sphere row of the deepest sphere (-1 when none was queried).
      - ``ok``: 0 when a query was unreliable (no closest point, non-finite distance).
    ``stop_above``: return as soon as one sphere's depth exceeds it (a pass/fail check passes 0.0 and reads
    only ``depth > 0``; the solver passes a large value to get the full ``push``).
    Call only when :func:`has_mesh_pair` is 1.
    """
    b = M.bound[gs]
    bc = wp.quat_rotate_inv(qt, ps + wp.quat_rotate(qs, wp.vec3(b[0], b[1], b[2])) - pt)
    gap = box_gap(bc, M.mesh_lo[gt], M.mesh_hi[gt]) - b[3] - clearance
    if gap > NEAR_BAND:
        return -gap, wp.vec3(0.0), -1, 1
    depth = float(-1.0e9)
    push = wp.vec3(0.0)
    deepest = int(-1)
    ok = int(1)
    for k in range(M.sph_start[gs], M.sph_start[gs + 1]):
        s = M.sph[k]
        c = wp.quat_rotate_inv(qt, ps + wp.quat_rotate(qs, wp.vec3(s[0], s[1], s[2])) - pt)
        sd, grad, good = mesh_sdf(M, gt, c, s[3] + clearance + NEAR_BAND)
        ok = wp.min(ok, good)
        dk = s[3] + clearance - sd
        if dk > depth:
            depth = dk
            deepest = k
        if dk > 0.0:
            push = push + wp.quat_rotate(qt, grad) * dk
            if dk > stop_above:
                return depth, push, deepest, ok
    return depth, push, deepest, ok

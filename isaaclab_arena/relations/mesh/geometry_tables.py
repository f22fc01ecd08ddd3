"""Host side of MESH collision: per-asset geometry (sphere cover + target mesh) packed into ``MeshTables``.

``MeshGeometry.build(name, vertices, faces)`` fits the sphere cover and prepares the target mesh of one
asset; ``no_mesh(name, reason)`` reports an asset without a collision mesh (``[NoCollision]`` once) so the
caller keeps its pairs on boxes. ``pack_mesh_tables`` lays a list of geometries out as the warp struct the
kernels read (see ``sdf.py``) and keeps the warp meshes alive as long as the returned handle.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import warp as wp

from isaaclab_arena.relations.mesh.logs import NO_COLLISION, log_once
from isaaclab_arena.relations.mesh.sdf import MeshTables
from isaaclab_arena.relations.mesh.sphere_cover import DEFAULT_NUM_SPHERES, SphereCover, fit_sphere_cover
from isaaclab_arena.relations.mesh.target_mesh import TargetMesh, prepare_target


@dataclass
class MeshGeometry:
    """One asset's MESH-mode geometry in its root frame (metres): spheres as a subject, mesh as a target."""

    name: str
    cover: SphereCover | None
    target: TargetMesh | None
    foot: np.ndarray | None = None  # (K, 3) footprint outline points (root frame) for support terms
    anchor: np.ndarray | None = None  # (3,) a point of the surface (root frame): containment tests

    def bulge(self) -> float:
        """How far (m) the sphere cover reaches outside the target mesh at most: max over spheres of radius +
        signed distance of the centre (0 without both)."""
        if self.cover is None or self.target is None:
            return 0.0
        sd = self.target.exact_signed_distance(self.cover.centers)
        return float(max(0.0, np.max(self.cover.radii + sd)))

    @classmethod
    def build(cls, name: str, vertices, faces, num_spheres: int = DEFAULT_NUM_SPHERES, seed: int = 0,
              allow_open_mesh: bool = False, as_subject: bool = True, as_target: bool = True) -> "MeshGeometry":
        """Sphere cover (when ``as_subject``) and target mesh (when ``as_target``) of one collision mesh."""
        target = prepare_target(name, vertices, faces, allow_open_mesh) if as_target else None
        cover = fit_sphere_cover(vertices, faces, num_spheres, seed) if as_subject else None
        return cls(name, cover, target)


def no_mesh(name: str, reason: str) -> None:
    """Reports that asset ``name`` has no collision mesh: its pairs stay on boxes (``[NoCollision]`` once)."""
    log_once(NO_COLLISION, name, f"asset '{name}' has no collision mesh ({reason}); its collision pairs use "
             "its bounding box")


@dataclass
class MeshTablesHandle:
    """``tables`` (the warp struct) plus the warp arrays and meshes it points to, kept alive together."""

    tables: MeshTables
    keep: list
    device: str


def pack_mesh_tables(geometries: list[MeshGeometry | None], geom_index, device: str = "cpu",
                     support_rows=(), support_f=()) -> MeshTablesHandle:
    """Packs geometries (row g = ``geometries[g]``; None = no mesh, no spheres) into ``MeshTables``.

    Args:
        geometries: One entry per geometry row.
        geom_index: (E, n_objects) int array: geometry row of object k in env e, -1 for none.
        device: Warp device of the tables (``cpu`` or ``cuda:0``).
        support_rows: (subject, fixed parent, relation row, 0) per support term (``sup_i``).
        support_f: (probe depth m, solver margin m) per support term (``sup_f``).
    """
    g_count = len(geometries)
    mesh_id = np.zeros(g_count, dtype=np.uint64)
    reach = np.zeros(g_count, dtype=np.float32)
    lo = np.zeros((g_count, 3), dtype=np.float32)
    hi = np.zeros((g_count, 3), dtype=np.float32)
    bound = np.zeros((g_count, 4), dtype=np.float32)
    start = np.zeros(g_count + 1, dtype=np.int32)
    grid_lo = np.zeros((g_count, 3), dtype=np.float32)
    grid_h = np.ones(g_count, dtype=np.float32)
    grid_n = np.zeros((g_count, 3), dtype=np.int32)
    grid_start = np.zeros(g_count, dtype=np.int32)
    spheres, cells, keep, feet = [], [], [], []
    anchors = np.zeros((max(g_count, 1), 3), dtype=np.float32)
    foot_start = np.zeros(g_count + 1, dtype=np.int32)
    n_cells = 0
    for g, geo in enumerate(geometries):
        n = 0
        nf = 0
        if geo is not None and geo.foot is not None and len(geo.foot):
            feet.append(np.asarray(geo.foot, dtype=np.float32))
            nf = len(geo.foot)
        foot_start[g + 1] = foot_start[g] + nf
        if geo is not None and geo.anchor is not None:
            anchors[g] = geo.anchor
        if geo is not None and geo.target is not None:
            mesh = geo.target.warp_mesh(device)
            keep.append(mesh)
            mesh_id[g] = mesh.id
            reach[g] = geo.target.reach
            lo[g], hi[g] = geo.target.lo, geo.target.hi
            glo, gh, gn, gcells = geo.target.sdf_grid()
            grid_lo[g], grid_h[g], grid_n[g], grid_start[g] = glo, gh, gn, n_cells
            cells.append(gcells)
            n_cells += len(gcells)
        if geo is not None and geo.cover is not None:
            spheres.append(geo.cover.spheres)
            centre, radius = geo.cover.bounding_sphere()
            bound[g] = (*centre, radius)
            n = geo.cover.num_spheres
        start[g + 1] = start[g] + n
    sph = np.concatenate(spheres) if spheres else np.zeros((1, 4), dtype=np.float32)
    gi = np.asarray(geom_index, dtype=np.int32)
    if gi.ndim != 2 or (gi.size and (gi.max() >= g_count or gi.min() < -1)):
        raise ValueError(f"geom_index must be (E, n_objects) with rows in [-1, {g_count}), got shape {gi.shape}")
    t = MeshTables()
    t.mesh_id = wp.array(mesh_id, dtype=wp.uint64, device=device)
    t.reach = wp.array(reach, dtype=float, device=device)
    t.mesh_lo = wp.array(lo, dtype=wp.vec3, device=device)
    t.mesh_hi = wp.array(hi, dtype=wp.vec3, device=device)
    t.grid_lo = wp.array(grid_lo, dtype=wp.vec3, device=device)
    t.grid_h = wp.array(grid_h, dtype=float, device=device)
    t.grid_n = wp.array(grid_n, dtype=wp.vec3i, device=device)
    t.grid_start = wp.array(grid_start, dtype=int, device=device)
    t.grid = wp.array(np.concatenate(cells) if cells else np.zeros(1, dtype=np.float32), dtype=float, device=device)
    t.sph = wp.array(sph, dtype=wp.vec4, device=device)
    t.sph_start = wp.array(start, dtype=int, device=device)
    t.bound = wp.array(bound, dtype=wp.vec4, device=device)
    t.geom = wp.array(gi, dtype=int, device=device)
    t.anchor = wp.array(anchors, dtype=wp.vec3, device=device)
    t.foot = wp.array(np.concatenate(feet) if feet else np.zeros((1, 3), np.float32), dtype=wp.vec3, device=device)
    t.foot_start = wp.array(foot_start, dtype=int, device=device)
    rows = np.asarray(support_rows, dtype=np.int32).reshape(-1, 4)
    t.sup_i = wp.array(rows if len(rows) else np.zeros((1, 4), np.int32), dtype=wp.vec4i, device=device)
    sf = np.asarray(support_f, dtype=np.float32).reshape(-1, 2)
    t.sup_f = wp.array(sf if len(sf) else np.zeros((1, 2), np.float32), dtype=wp.vec2, device=device)
    t.bad = wp.zeros(1, dtype=int, device=device)
    keep += [t.mesh_id, t.reach, t.mesh_lo, t.mesh_hi, t.grid_lo, t.grid_h, t.grid_n, t.grid_start, t.grid, t.sph,
             t.sph_start, t.bound, t.geom, t.anchor, t.foot, t.foot_start, t.sup_i, t.sup_f, t.bad]
    return MeshTablesHandle(t, keep, device)

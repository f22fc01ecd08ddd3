"""Collision meshes as targets of signed-distance queries: checked, repaired, uploaded as warp ``Mesh``es.

A target mesh lives in its asset's root frame (metres). Sign comes from the winding number, which is
robust for closed surfaces and for several closed shells that overlap (convex parts of one collider).
A surface that is not closed has no inside, so by default its convex hull stands in for it (logged
``[MeshSDF]`` once); ``allow_open_mesh=True`` keeps the open surface and logs that its signs are unreliable.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
import warp as wp

from isaaclab_arena.relations.mesh import disk_cache
from isaaclab_arena.relations.mesh.logs import MESH_SDF, log_once
from isaaclab_arena.utils.lazy_import import trimesh  # imported on first use (0.5 s with scipy and networkx)

#: The distance grid has this many cells along the mesh's longest side (plus one cell of margin all round),
#: or cells of MAX_CELL_M when those are larger (big meshes: a kitchen), as long as the grid stays under
#: MAX_GRID_CELLS cells.
GRID_CELLS = 32
_SOURCE = disk_cache.source_digest(__file__)
MAX_CELL_M = 0.02
MAX_GRID_CELLS = 400_000


@wp.kernel
def _sdf_grid_kernel(mesh: wp.uint64, reach: float, lo: wp.vec3, h: float, nx: int, ny: int,
                     cells: wp.array(dtype=float)):
    """Cell (i, j, k) -> signed distance of its centre (winding-number sign, negative inside)."""
    c = wp.tid()
    i = c % nx
    j = (c // nx) % ny
    k = c // (nx * ny)
    p = lo + h * wp.vec3(float(i) + 0.5, float(j) + 0.5, float(k) + 0.5)
    q = wp.mesh_query_point_sign_winding_number(mesh, p, reach)
    value = float(0.0)  # 0 (no information) if no closest point was found
    if q.result:
        value = q.sign * wp.length(p - wp.mesh_eval_position(mesh, q.face, q.u, q.v))
    cells[c] = value


@dataclass
class TargetMesh:
    """The mesh a target's signed distance is measured to (root frame, metres).

    Attributes:
        name: Asset name (used in log lines and errors).
        vertices: (V, 3) float64 vertices actually queried (the hull when ``uses_hull``).
        faces: (F, 3) int64 triangles.
        watertight: Whether the extracted surface was closed (:func:`is_closed`).
        uses_hull: The convex hull replaced an open surface.
        reliable: Signs can be trusted (closed surface or its hull).
    """

    name: str
    vertices: np.ndarray
    faces: np.ndarray
    watertight: bool
    uses_hull: bool
    reliable: bool
    _warp: dict = field(default_factory=dict, repr=False)

    @property
    def lo(self) -> np.ndarray:
        return self.vertices.min(0)

    @property
    def hi(self) -> np.ndarray:
        return self.vertices.max(0)

    @property
    def reach(self) -> float:
        """Query distance that always finds the closest point from anywhere near the mesh (metres)."""
        return float(2.0 * np.linalg.norm(self.hi - self.lo) + 1.0)

    def sdf_grid(self) -> tuple[np.ndarray, float, np.ndarray, np.ndarray]:
        """``(lo, h, n, cells)``: a grid of cubes of side ``h`` from corner ``lo`` with ``n`` cells per axis
        around the mesh; ``cells`` (float32, x fastest) holds the signed distance of each cell's centre.
        A signed distance changes by at most the distance moved, so a cell bounds the signed distance of
        every point in it; queries use that to skip the mesh where the answer is already known. Computed
        once on the CPU with winding-number queries."""
        grid = self._warp.get("grid")
        key = "grid_" + hashlib.sha1(self.vertices.tobytes() + self.faces.tobytes()
                                     + f"{GRID_CELLS}:{MAX_CELL_M}:{MAX_GRID_CELLS}:{_SOURCE}".encode()).hexdigest()
        if grid is None:
            hit = disk_cache.load(key)
            if hit is not None and {"lo", "h", "n", "cells"} <= set(hit):
                grid = self._warp["grid"] = (hit["lo"], float(hit["h"]), hit["n"], hit["cells"])
        if grid is None:
            extent = self.hi - self.lo
            h = min(float(extent.max()) / GRID_CELLS, MAX_CELL_M)
            while np.prod(np.ceil((extent + 2.0 * h) / h)) > MAX_GRID_CELLS:
                h *= 1.25
            lo = self.lo - h
            n = np.ceil((extent + 2.0 * h) / h).astype(np.int64)
            cells = wp.zeros(int(np.prod(n)), dtype=float, device="cpu")
            wp.launch(_sdf_grid_kernel, dim=cells.shape[0], device="cpu",
                      inputs=[self.warp_mesh("cpu").id, self.reach, wp.vec3(*lo), h, int(n[0]), int(n[1])],
                      outputs=[cells])
            grid = self._warp["grid"] = (lo, h, n, cells.numpy())
            disk_cache.store(key, lo=lo, h=np.float64(h), n=n, cells=grid[3])
        return grid

    def exact_signed_distance(self, points) -> np.ndarray:
        """Signed distances (metres, negative inside) of (N, 3) root-frame points: one winding-number query
        each on the CPU, no grid (setup-time use, e.g. fitting sphere covers)."""
        pts = np.ascontiguousarray(np.asarray(points, dtype=np.float32).reshape(-1, 3))
        out = wp.zeros(len(pts), dtype=float, device="cpu")
        if len(pts):
            wp.launch(_exact_sdf_kernel, dim=len(pts), device="cpu",
                      inputs=[self.warp_mesh("cpu").id, self.reach, wp.array(pts, dtype=wp.vec3, device="cpu")],
                      outputs=[out])
        return out.numpy().astype(np.float64)

    def warp_mesh(self, device: str = "cpu") -> wp.Mesh:
        """The warp ``Mesh`` on ``device`` (built once per device, winding-number sign enabled)."""
        key = str(wp.get_device(device))
        mesh = self._warp.get(key)
        if mesh is None:
            points = wp.array(self.vertices.astype(np.float32), dtype=wp.vec3, device=device)
            indices = wp.array(self.faces.astype(np.int32).ravel(), dtype=wp.int32, device=device)
            mesh = self._warp[key] = wp.Mesh(points=points, indices=indices, support_winding_number=True)
        return mesh


@wp.kernel
def _exact_sdf_kernel(mesh: wp.uint64, reach: float, pts: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    q = wp.mesh_query_point_sign_winding_number(mesh, pts[i], reach)
    value = float(reach)
    if q.result:
        value = q.sign * wp.length(pts[i] - wp.mesh_eval_position(mesh, q.face, q.u, q.v))
    out[i] = value


def is_closed(faces) -> bool:
    """True when every edge is crossed as often in one direction as in the other: the surface is closed
    (one or several closed shells, which may touch or overlap, with consistent winding), so its winding
    number is a whole number everywhere off the surface. A hole or a flipped triangle makes it False."""
    f = np.asarray(faces, dtype=np.int64)
    a = f.ravel()
    b = np.roll(f, -1, axis=1).ravel()
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    key = lo * (int(f.max()) + 1) + hi
    sign = np.where(a < b, 1, -1)
    uniq, inv = np.unique(key, return_inverse=True)
    return bool(np.all(np.bincount(inv, weights=sign, minlength=len(uniq)) == 0))


_prepared: "OrderedDict[tuple, TargetMesh]" = OrderedDict()
#: Prepared targets kept per process (by content), so a scene compiled again reuses their warp meshes and grids.
PREPARED_CACHE = 32


def prepare_target(name: str, vertices, faces, allow_open_mesh: bool = False) -> TargetMesh:
    """Checks a collision mesh and returns the :class:`TargetMesh` to query.

    Vertices closer than trimesh's merge tolerance are merged first (seams of exported meshes). A mesh
    that is still not closed (:func:`is_closed`) is replaced by its convex hull unless ``allow_open_mesh`` (then its
    signs are unreliable); both cases log ``[MeshSDF]`` once per asset. Raises ``ValueError`` naming the
    asset for an empty or flat mesh.
    """
    v = np.ascontiguousarray(vertices, dtype=np.float64)
    f = np.ascontiguousarray(faces, dtype=np.int64)
    if v.ndim != 2 or v.shape[1] != 3 or f.ndim != 2 or f.shape[1] != 3 or len(f) == 0:
        raise ValueError(f"asset '{name}': a collision mesh needs (V, 3) vertices and (F, 3) faces, got "
                         f"{v.shape} and {f.shape}")
    key = (name, hashlib.sha1(v.tobytes() + f.tobytes()).hexdigest(), bool(allow_open_mesh))
    hit = _prepared.get(key)
    if hit is not None:
        _prepared.move_to_end(key)
        return hit
    target = _prepare(name, v, f, allow_open_mesh)
    _prepared[key] = target
    while len(_prepared) > PREPARED_CACHE:
        _prepared.popitem(last=False)
    return target


def _prepare(name: str, v: np.ndarray, f: np.ndarray, allow_open_mesh: bool) -> TargetMesh:
    if not np.all(np.isfinite(v)):
        raise ValueError(f"asset '{name}': the collision mesh has non-finite vertices")
    mesh = trimesh.Trimesh(v, f, process=True)
    extent = mesh.bounds[1] - mesh.bounds[0] if len(mesh.faces) else np.zeros(3)
    if len(mesh.faces) == 0 or np.min(extent) <= 0.0:
        raise ValueError(f"asset '{name}': the collision mesh is empty or flat (extent {extent.tolist()} m); "
                         "a target mesh must enclose a volume")
    watertight = is_closed(mesh.faces)
    if watertight:
        return TargetMesh(name, np.asarray(mesh.vertices), np.asarray(mesh.faces), True, False, True)
    if allow_open_mesh:
        log_once(MESH_SDF, f"open:{name}", f"asset '{name}': the collision mesh is not watertight and "
                 "allow_open_mesh is set, so inside/outside signs near it are unreliable")
        return TargetMesh(name, np.asarray(mesh.vertices), np.asarray(mesh.faces), False, False, False)
    hull = mesh.convex_hull
    log_once(MESH_SDF, f"hull:{name}", f"asset '{name}': the collision mesh is not watertight; its convex hull "
             "is used as the target (set allow_open_mesh to keep the open surface)")
    return TargetMesh(name, np.asarray(hull.vertices), np.asarray(hull.faces), False, True, True)

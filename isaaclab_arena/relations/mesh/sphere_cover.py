"""Sphere covering of a movable subject's collision mesh (float64 numpy + trimesh, run once per asset).

The subject is represented in MESH mode by up to ``num_spheres`` spheres in its root frame (metres) whose
union contains every point of its surface: each sphere covers a patch of surface triangles and contains all
three corners of every triangle of its patch, so (a ball being convex) it contains those triangles whole.
Tightness comes from where each centre sits: among a few candidates (the patch's smallest enclosing ball and
points pushed inward along the patch normal) the one whose sphere reaches least far outside the mesh wins.

Deterministic: the same mesh, ``num_spheres`` and ``seed`` give the same spheres (numpy's seeded generator,
a fixed number of Lloyd iterations, no threads). A fit takes seconds, so covers are cached by content: in
memory, and on disk (``disk_cache.py``), keyed by this module's source too.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

import numpy as np

from isaaclab_arena.relations.mesh import disk_cache
from isaaclab_arena.relations.mesh.target_mesh import TargetMesh
from isaaclab_arena.utils.lazy_import import trimesh  # imported on first use (0.5 s with scipy and networkx)

DEFAULT_NUM_SPHERES = 30
_LLOYD_ITERATIONS = 30
_DEPTH_STEPS = 8
_SEARCH_ITERATIONS = 12
_REFINE_ROUNDS = 4
_SLACK_M = 1.0e-6  # radius added so float32 kernels still see every corner inside its sphere


@dataclass(frozen=True)
class SphereCover:
    """Spheres in the subject's root frame: ``centers`` (S, 3) and ``radii`` (S,), metres, float64."""

    centers: np.ndarray
    radii: np.ndarray
    seed: int

    @property
    def num_spheres(self) -> int:
        return int(len(self.radii))

    @property
    def spheres(self) -> np.ndarray:
        """(S, 4) float32 rows ``x, y, z, radius`` (the layout of the kernels' sphere table)."""
        return np.c_[self.centers, self.radii].astype(np.float32)

    def bounding_sphere(self) -> tuple[np.ndarray, float]:
        """(centre, radius) of a sphere containing every sphere of the cover (root frame, metres)."""
        c = 0.5 * ((self.centers - self.radii[:, None]).min(0) + (self.centers + self.radii[:, None]).max(0))
        return c, float((np.linalg.norm(self.centers - c, axis=1) + self.radii).max())


@dataclass(frozen=True)
class CoverStats:
    """How well a cover fits its mesh (see :func:`cover_stats`)."""

    coverage: float  # fraction of surface samples inside the union of spheres (1.0 = all)
    max_gap_m: float  # largest distance of a surface sample outside every sphere (0.0 when covered)
    bulge_m: float  # how far the union reaches outside the mesh at most, metres
    union_volume_m3: float
    box_volume_m3: float

    @property
    def volume_ratio(self) -> float:
        """Volume of the union of spheres over the volume of the mesh's axis-aligned box."""
        return self.union_volume_m3 / self.box_volume_m3


# ---------------------------------------------------------------------------------- float64 helpers
def winding_numbers(points: np.ndarray, vertices: np.ndarray, faces: np.ndarray, chunk: int = 256) -> np.ndarray:
    """Generalised winding number of each point (float64; ~1 inside a closed shell, ~0 outside, summed over
    overlapping shells), from the solid angle of every triangle (Van Oosterom and Strackee)."""
    tri = vertices[faces]  # (F, 3, 3)
    out = np.empty(len(points))
    for s in range(0, len(points), chunk):
        d = tri[None, :, :, :] - points[s:s + chunk, None, None, :]  # (P, F, 3, 3)
        a, b, c = d[:, :, 0], d[:, :, 1], d[:, :, 2]
        la, lb, lc = (np.linalg.norm(v, axis=-1) for v in (a, b, c))
        num = np.einsum("pfi,pfi->pf", a, np.cross(b, c))
        den = la * lb * lc + (a * b).sum(-1) * lc + (b * c).sum(-1) * la + (c * a).sum(-1) * lb
        out[s:s + chunk] = np.arctan2(num, den).sum(1) / (2.0 * np.pi)
    return out


def signed_distances(mesh: trimesh.Trimesh, points: np.ndarray) -> np.ndarray:
    """Distance to the nearest triangle, negative inside (winding number >= 0.5), metres, float64."""
    _, dist, _ = trimesh.proximity.closest_point(mesh, points)
    inside = winding_numbers(points, np.asarray(mesh.vertices), np.asarray(mesh.faces)) >= 0.5
    return np.where(inside, -dist, dist)


def _enclosing_ball_centre(points: np.ndarray, iterations: int = 100) -> np.ndarray:
    """Centre of a near-smallest ball around ``points`` (Badoiu-Clarkson steps toward the farthest point)."""
    c = points.mean(0)
    for i in range(1, iterations + 1):
        far = points[np.argmax(((points - c) ** 2).sum(1))]
        c = c + (far - c) / (i + 1)
    return c


def _sq_dists(x: np.ndarray, c: np.ndarray) -> np.ndarray:
    """(N, K) squared distances between rows of x and rows of c."""
    return np.maximum((x * x).sum(1)[:, None] - 2.0 * x @ c.T + (c * c).sum(1)[None], 0.0)


def _kmeans(features: np.ndarray, weights: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Cluster labels of area-weighted k-means (k-means++ seeding from ``rng``, fixed Lloyd iterations)."""
    n = len(features)
    centres = np.empty((k, features.shape[1]))
    centres[0] = features[rng.choice(n, p=weights / weights.sum())]
    d2 = ((features - centres[0]) ** 2).sum(1)
    for i in range(1, k):
        p = weights * d2
        idx = rng.choice(n, p=p / p.sum()) if p.sum() > 0 else int(rng.integers(n))
        centres[i] = features[idx]
        d2 = np.minimum(d2, ((features - features[idx]) ** 2).sum(1))
    labels = np.zeros(n, dtype=np.int64)
    for _ in range(_LLOYD_ITERATIONS):
        labels = np.argmin(_sq_dists(features, centres), axis=1)
        w = np.bincount(labels, weights=weights, minlength=k)
        for d in range(features.shape[1]):
            s = np.bincount(labels, weights=weights * features[:, d], minlength=k)
            centres[:, d] = np.where(w > 0, s / np.maximum(w, 1e-300), centres[:, d])
    return labels


# ---------------------------------------------------------------------------------------- fitting
def _radii(patch_pts: list[np.ndarray], centres: np.ndarray) -> np.ndarray:
    return np.array([np.sqrt(((p - c) ** 2).sum(1).max()) for p, c in zip(patch_pts, centres)])


def _place_centres(sdf, diag, patch_pts, anchors, normals, prev):
    """Centre of each patch's sphere with the least reach outside the mesh, and that reach (bulge, m).

    Candidates: the patch's smallest enclosing ball, points pushed inward along its mean normal and the
    previous round's centre; then a pattern search along the six axes while the bulge shrinks.
    """
    cands, owner = [], []
    for j, pts in enumerate(patch_pts):
        cj = [_enclosing_ball_centre(pts)]
        if normals[j] is not None:
            cj += [anchors[j] - normals[j] * d for d in np.linspace(0.0, 0.5 * diag, _DEPTH_STEPS)[1:]]
        if prev is not None:
            cj.append(prev[j])
        cands += cj
        owner += [j] * len(cj)
    cands, owner = np.array(cands), np.array(owner)
    bulge = _radii([patch_pts[j] for j in owner], cands) + sdf(cands)
    n = len(patch_pts)
    centres = np.array([cands[owner == j][np.argmin(bulge[owner == j])] for j in range(n)])
    best = np.array([bulge[owner == j].min() for j in range(n)])
    step = np.full(n, diag / 20.0)
    moves = np.vstack([np.eye(3), -np.eye(3)])
    for _ in range(_SEARCH_ITERATIONS):
        trial = (centres[:, None, :] + step[:, None, None] * moves[None]).reshape(-1, 3)
        tb = (_radii([p for p in patch_pts for _ in range(6)], trial) + sdf(trial)).reshape(n, 6)
        arg = np.argmin(tb, axis=1)
        better = tb[np.arange(n), arg] < best - 1e-12
        centres[better] = trial.reshape(n, 6, 3)[better, arg[better]]
        best[better] = tb[better, arg[better]]
        step[~better] *= 0.5
    return centres, best


def fit_sphere_cover(vertices, faces, num_spheres: int = DEFAULT_NUM_SPHERES, seed: int = 0) -> SphereCover:
    """Up to ``num_spheres`` spheres whose union contains the whole surface of the mesh (root frame, m).

    Args:
        vertices: (V, 3) mesh vertices in the subject's root frame, metres.
        faces: (F, 3) triangle indices.
        num_spheres: Most spheres to use (>= 1); fewer when the mesh has fewer surface triangles or a
            sphere turns out to lie inside another one.
        seed: Seed of the patch clustering; the same mesh and seed give the same spheres.
    """
    if isinstance(num_spheres, bool) or not isinstance(num_spheres, (int, np.integer)) or num_spheres < 1:
        raise ValueError(f"num_spheres must be a positive integer, got {num_spheres!r}")
    v = np.ascontiguousarray(vertices, dtype=np.float64)
    f = np.ascontiguousarray(faces, dtype=np.int64)
    if v.ndim != 2 or v.shape[1] != 3 or f.ndim != 2 or f.shape[1] != 3 or len(f) == 0:
        raise ValueError(f"fit_sphere_cover needs (V, 3) vertices and (F, 3) faces, got {v.shape} and {f.shape}")
    key = hashlib.sha1(v.tobytes() + f.tobytes() + f"{int(num_spheres)}:{int(seed)}:{_SOURCE}".encode()).hexdigest()
    centers, radii = _fit_cached(key, v.tobytes(), f.tobytes(), int(num_spheres), int(seed))
    return SphereCover(centers.copy(), radii.copy(), int(seed))


_SOURCE = disk_cache.source_digest(__file__)


@functools.lru_cache(maxsize=64)
def _fit_cached(key: str, vbytes: bytes, fbytes: bytes, num_spheres: int, seed: int):
    hit = disk_cache.load("cover_" + key)
    if hit is not None and "centers" in hit and "radii" in hit:
        return hit["centers"], hit["radii"]
    centers, radii = _fit(vbytes, fbytes, num_spheres, seed)
    disk_cache.store("cover_" + key, centers=centers, radii=radii)
    return centers, radii


def _fit(vbytes: bytes, fbytes: bytes, num_spheres: int, seed: int):
    mesh = trimesh.Trimesh(np.frombuffer(vbytes, dtype=np.float64).reshape(-1, 3),
                           np.frombuffer(fbytes, dtype=np.int64).reshape(-1, 3), process=True)
    target = TargetMesh("subject", np.asarray(mesh.vertices), np.asarray(mesh.faces), True, False, True)
    diag = float(np.linalg.norm(mesh.bounds[1] - mesh.bounds[0]))
    # small triangles, so that a patch of them can be held tightly by one sphere
    sv, sf = trimesh.remesh.subdivide_to_size(mesh.vertices, mesh.faces, max_edge=diag / 20.0, max_iter=12)
    tri = sv[sf]
    cross = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    area = 0.5 * np.linalg.norm(cross, axis=1)
    keep = area > 0
    sf, tri, cross, area = sf[keep], tri[keep], cross[keep], area[keep]
    cent = tri.mean(1)
    labels = _kmeans(cent, area, min(num_spheres, len(sf)), np.random.default_rng(seed))
    best_cost, result, prev = np.inf, None, None
    for _ in range(_REFINE_ROUNDS):
        ids = np.unique(labels)
        masks = [labels == j for j in ids]
        patch_pts = [sv[np.unique(sf[m])] for m in masks]
        anchors = [(cent[m] * area[m, None]).sum(0) / area[m].sum() for m in masks]
        normals = []
        for m in masks:
            n = cross[m].sum(0)  # area-weighted mean normal, times 2
            normals.append(n / np.linalg.norm(n) if np.linalg.norm(n) > 1e-12 else None)
        prev_k = prev if prev is not None and len(prev) == len(ids) else None
        centres, bulge = _place_centres(target.exact_signed_distance, diag, patch_pts, anchors, normals, prev_k)
        radii = _radii(patch_pts, centres)
        cost = float((radii ** 3).sum())  # proportional to the spheres' total volume
        if cost < best_cost:
            best_cost, result = cost, (centres.copy(), radii.copy())
        # each triangle moves to the sphere that needs the least reach outside the mesh to hold it
        reach = np.sqrt(np.max([_sq_dists(tri[:, c], centres) for c in range(3)], axis=0))  # (T, K)
        new_labels = np.argmin(reach + (bulge - radii)[None], axis=1)
        if np.array_equal(new_labels, labels):
            break
        labels, prev = new_labels, centres
    centers, radii = result
    radii = radii * (1.0 + 1e-9) + _SLACK_M
    # drop spheres that another sphere contains (largest first keeps the result order-independent)
    kept = []
    for i in np.argsort(-radii, kind="stable"):
        if not any(np.linalg.norm(centers[i] - centers[j]) + radii[i] <= radii[j] for j in kept):
            kept.append(i)
    kept.sort()
    return centers[kept], radii[kept]


# ----------------------------------------------------------------------------------------- quality
def cover_stats(cover: SphereCover, vertices, faces, num_samples: int = 20000, seed: int = 1) -> CoverStats:
    """Measures a cover against its mesh with seeded samples (float64).

    ``coverage`` and ``max_gap_m`` from ``num_samples`` surface points; ``bulge_m`` as the largest
    ``radius + signed distance of the centre`` over the spheres (an upper bound of how far the union
    reaches outside the surface); volumes by Monte Carlo in the box around the mesh and the spheres.
    """
    mesh = trimesh.Trimesh(np.asarray(vertices, float), np.asarray(faces, np.int64), process=True)
    rng = np.random.default_rng(seed)
    surf, _ = trimesh.sample.sample_surface(mesh, num_samples, seed=int(rng.integers(1 << 31)))
    gap = (np.linalg.norm(surf[:, None, :] - cover.centers[None], axis=-1) - cover.radii[None]).min(1)
    bulge = float((cover.radii + signed_distances(mesh, cover.centers)).max())
    lo, hi = mesh.bounds
    box_volume = float(np.prod(hi - lo))
    slo = np.minimum(lo, (cover.centers - cover.radii[:, None]).min(0))
    shi = np.maximum(hi, (cover.centers + cover.radii[:, None]).max(0))
    pts = slo + rng.random((200000, 3)) * (shi - slo)
    inside = np.zeros(len(pts), dtype=bool)
    for c, r in zip(cover.centers, cover.radii):
        inside |= ((pts - c) ** 2).sum(1) <= r * r
    union = float(inside.mean() * np.prod(shi - slo))
    return CoverStats(float((gap <= 0.0).mean()), float(max(gap.max(), 0.0)), bulge, union, box_volume)

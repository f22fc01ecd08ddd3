"""The opening of a pick-and-place destination: where a placed object must rest, in the destination's frame.

:func:`destination_opening` reads a destination's geometry once (plain float64 numpy, no simulator) and returns
an :class:`Opening` in the destination's local (root) frame, metres:

* **Round** destinations (a footprint whose collision mesh has no vertex beyond the inscribed circle of its
  square bounding box: a cylinder, a bowl, a mug) get a **disc** opening around the footprint's centre;
  everything else a **rectangle**.
* **Open** destinations (a ray cast straight down at the footprint's centre meets the mesh at least
  ``MIN_DEPTH_M`` below the top: a hollow bowl, a bin, a mug) have their opening measured from the mesh: rays
  cast sideways from the centre, ``PROBE_BELOW_RIM_M`` below the rim, find the inner walls (the disc's radius
  is the nearest inner wall; the rectangle's sides the nearest wall along +-x and +-y); the opening's floor is
  where the downward ray met the mesh (the inner floor).
* **Closed-top** destinations (a solid proxy such as the cylinder "bowl", a box, a tabletop) have no inner wall
  to measure: the opening is the footprint shrunk by ``wall_margin_m`` on every side (the disc's radius is the
  footprint's outer radius less the margin), and its floor is the top (the object rests on it). A procedural
  shape (cuboid, sphere, capsule, cylinder, cone: convex) is closed-top by construction and read from its fields.
* Destinations without a readable collision mesh: the bounding box's footprint shrunk by ``wall_margin_m``, a
  rectangle, floor at the box's bottom (whether the top is open is unknown, so any height up to the rim counts).

The rim is the top of the destination's bounding box. The task's success terms
(``environments/task_terms.py``) test the placed object against this opening, batched over envs in torch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: A downward ray at the footprint's centre meeting the mesh at least this far below the top: an open container.
MIN_DEPTH_M = 0.005
#: Height below the rim at which the inner walls are probed (at most a quarter of the container's depth).
PROBE_BELOW_RIM_M = 0.005
#: Directions of the sideways rays that find the inner walls.
PROBE_DIRECTIONS = 32
#: A footprint is round when its sides differ by at most this fraction and no vertex lies farther than
#: (1 + ROUND_TOLERANCE) x its half-width from the centre (a square's corners lie sqrt(2) x out).
ROUND_TOLERANCE = 0.02


@dataclass(frozen=True)
class Opening:
    """Where a placed object's centre must be, in the destination's local (root) frame; metres.

    Attributes:
        round: True: a disc of ``radius_m`` around ``centre_xy``; False: the rectangle ``[lo_xy, hi_xy]``.
        centre_xy: Centre of the opening (x, y).
        radius_m: The disc's radius (round only; 0 for a rectangle).
        lo_xy: The rectangle's lower corner (x, y) (for a disc: its bounding square).
        hi_xy: The rectangle's upper corner (x, y).
        rim_z: Height of the rim (the top of the destination's bounding box).
        floor_z: Lowest height the object's bottom may have: the inner floor of an open container, the top of a
            closed one, the bottom of the bounding box when the geometry is unknown.
        source: How it was found: ``"inner walls"`` (measured on the mesh), ``"closed top"`` (mesh with a closed
            top: footprint less the wall margin), ``"bounding box"`` (no mesh: box less the wall margin).
    """

    round: bool
    centre_xy: tuple[float, float]
    radius_m: float
    lo_xy: tuple[float, float]
    hi_xy: tuple[float, float]
    rim_z: float
    floor_z: float
    source: str

    def contains_xy(self, xy) -> np.ndarray:
        """(N,) bool: points (N, 2) (destination frame, metres) inside the opening (boundary included)."""
        xy = np.atleast_2d(np.asarray(xy, dtype=np.float64))
        if self.round:
            return np.linalg.norm(xy - np.asarray(self.centre_xy), axis=-1) <= self.radius_m
        return np.all((xy >= np.asarray(self.lo_xy)) & (xy <= np.asarray(self.hi_xy)), axis=-1)


def _ray_hits(v: np.ndarray, f: np.ndarray, origins: np.ndarray, dirs: np.ndarray, chunk: int = 8192) -> np.ndarray:
    """(R,) distance along each ray (origins, unit dirs (R, 3)) to its nearest triangle hit, inf if none
    (Moller-Trumbore, both faces, float64; faces taken ``chunk`` at a time)."""
    if f.shape[0] > chunk:
        return np.min([_ray_hits(v, f[i:i + chunk], origins, dirs, chunk) for i in range(0, f.shape[0], chunk)], axis=0)
    a, b, c = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    e1, e2 = b - a, c - a                                               # (F, 3)
    p = np.cross(dirs[:, None, :], e2[None])                            # (R, F, 3)
    det = np.einsum("fk,rfk->rf", e1, p)
    ok = np.abs(det) > 1e-14
    inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
    s = origins[:, None, :] - a[None]
    u = np.einsum("rfk,rfk->rf", s, p) * inv
    q = np.cross(s, e1[None])
    w = np.einsum("rk,rfk->rf", dirs, q) * inv
    t = np.einsum("fk,rfk->rf", e2, q) * inv
    eps = 1e-9
    hit = ok & (u >= -eps) & (w >= -eps) & (u + w <= 1 + eps) & (t > 1e-9)
    return np.where(hit, t, np.inf).min(axis=1) if f.shape[0] else np.full(origins.shape[0], np.inf)


def _collision_mesh(asset) -> tuple[np.ndarray, np.ndarray] | None:
    """(vertices, faces) of the asset's colliders in its root frame (metres), or None when unreadable."""
    from isaaclab_arena.assets import geometry_reader as gr

    try:
        spawn_cfg = getattr(asset, "spawn_cfg", None)
        parent = getattr(asset, "parent_asset", None)
        if spawn_cfg is not None:
            v, f = gr.collision_mesh_of_spawn_cfg(spawn_cfg, f"asset '{asset.name}'")
        elif parent is not None and getattr(parent, "usd_path", None):
            v, f = gr.prim_collision_mesh(parent.usd_path, asset.relative_prim_path(), f"asset '{asset.name}'")
        else:
            return None
    except (ValueError, TypeError, KeyError, FileNotFoundError, ImportError, RuntimeError):
        return None
    v, f = np.asarray(v, dtype=np.float64).reshape(-1, 3), np.asarray(f, dtype=np.int64).reshape(-1, 3)
    return (v, f) if len(v) and len(f) else None


def _shrunk(round_: bool, centre, half, radius, rim, floor, margin, source) -> Opening:
    h = np.maximum(np.asarray(half) - margin, 0.0)
    c = np.asarray(centre)
    r = max(radius - margin, 0.0) if round_ else 0.0
    lo, hi = (c - r, c + r) if round_ else (c - h, c + h)
    return Opening(bool(round_), tuple(map(float, c)), float(r), tuple(map(float, lo)), tuple(map(float, hi)),
                   float(rim), float(floor), source)


def opening_from_mesh(lo, hi, vertices: np.ndarray | None, faces: np.ndarray | None, wall_margin_m: float) -> Opening:
    """The :class:`Opening` of a destination with local bounds ``[lo, hi]`` (3-vectors, metres) and collision mesh
    ``(vertices (V, 3), faces (F, 3))`` in the same frame (None: unknown geometry); see the module docstring."""
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    centre, half = 0.5 * (lo[:2] + hi[:2]), 0.5 * (hi[:2] - lo[:2])
    rim, base = float(hi[2]), float(lo[2])
    if vertices is None or faces is None:
        return _shrunk(False, centre, half, 0.0, rim, base, wall_margin_m, "bounding box")
    radial = np.linalg.norm(vertices[:, :2] - centre, axis=-1)
    outer = float(half.max())
    round_ = bool(abs(half[0] - half[1]) <= ROUND_TOLERANCE * outer and radial.max() <= (1 + ROUND_TOLERANCE) * outer)
    top = np.array([[centre[0], centre[1], rim + 0.01]])
    down = _ray_hits(vertices, faces, top, np.array([[0.0, 0.0, -1.0]]))[0]
    floor = base if not np.isfinite(down) else rim + 0.01 - down
    depth = rim - floor
    if depth < MIN_DEPTH_M:
        return _shrunk(round_, centre, half, float(radial.max()), rim, rim, wall_margin_m, "closed top")
    z = rim - min(PROBE_BELOW_RIM_M, 0.25 * depth)
    ang = np.arange(PROBE_DIRECTIONS) * (2 * np.pi / PROBE_DIRECTIONS)  # multiple of 4: +x, +y, -x, -y included
    dirs = np.stack([np.cos(ang), np.sin(ang), np.zeros_like(ang)], -1)
    origins = np.tile([centre[0], centre[1], z], (PROBE_DIRECTIONS, 1))
    dist = _ray_hits(vertices, faces, origins, dirs)
    if round_:
        r = float(np.min(dist)) if np.isfinite(dist).all() else float(radial.max()) - wall_margin_m
        return Opening(True, tuple(map(float, centre)), r, tuple(map(float, centre - r)), tuple(map(float, centre + r)),
                       rim, float(floor), "inner walls")
    q = PROBE_DIRECTIONS // 4
    side = [dist[0], dist[q], dist[2 * q], dist[3 * q]]  # +x, +y, -x, -y; an open side: the box less the margin
    side = [d if np.isfinite(d) else h - wall_margin_m for d, h in zip(side, (half[0], half[1], half[0], half[1]))]
    lo_xy = (centre[0] - side[2], centre[1] - side[3])
    hi_xy = (centre[0] + side[0], centre[1] + side[1])
    return Opening(False, tuple(map(float, centre)), 0.0, tuple(map(float, lo_xy)), tuple(map(float, hi_xy)), rim,
                   float(floor), "inner walls")


def _procedural_shape_radius(asset) -> float | None:
    """For an asset spawned as a procedural shape (``geometry_reader.shape_bounds`` reads it: a cuboid, sphere,
    capsule, cylinder or cone), the radius (m) of its round footprint, 0.0 for a footprint that is not round (a
    cuboid, or a capsule, cylinder or cone along X or Y); None for anything else (USD files, object sets)."""
    from isaaclab_arena.assets.geometry_reader import shape_bounds

    spawn_cfg = getattr(asset, "spawn_cfg", None)
    if spawn_cfg is None or shape_bounds(spawn_cfg) is None:
        return None
    name = type(spawn_cfg).__name__
    if "Sphere" in name or ("Cuboid" not in name and str(getattr(spawn_cfg, "axis", "Z")).upper() == "Z"):
        return float(spawn_cfg.radius)
    return 0.0


def destination_opening(asset, wall_margin_m: float) -> Opening:
    """The :class:`Opening` of ``asset`` (an Object or ObjectReference; bounds from ``get_bounding_box()``, mesh
    from its colliders when readable), in its local root frame, metres.

    A procedural shape is convex, so its top is closed: its footprint less the margin, floor at the top, read from
    its fields without building its mesh (which loads trimesh, about 0.5 s of a policy evaluation's start on the
    2-core CPU). The mesh rule finds the same on every such shape but a cone on its side, whose slanted side its
    downward ray at the footprint's centre meets below the top (an open container, it would conclude)."""
    box = asset.get_bounding_box()
    radius = _procedural_shape_radius(asset)
    if radius is not None:
        lo, hi = np.asarray(box.min_point, dtype=np.float64), np.asarray(box.max_point, dtype=np.float64)
        return _shrunk(radius > 0.0, 0.5 * (lo[:2] + hi[:2]), 0.5 * (hi[:2] - lo[:2]), radius, float(hi[2]),
                       float(hi[2]), wall_margin_m, "closed top")
    mesh = _collision_mesh(asset)
    v, f = mesh if mesh is not None else (None, None)
    return opening_from_mesh(box.min_point, box.max_point, v, f, wall_margin_m)


__all__ = ["Opening", "destination_opening", "opening_from_mesh"]

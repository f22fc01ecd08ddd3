"""Top-down silhouettes of collision meshes for the layout pictures (``placement_pictures.py``).

Objects whose pairs were checked on their meshes (MESH collision) are drawn as the shadow of their collision
mesh seen from above (every triangle projected onto XY, filled as one shape), with their box dashed around
it; a MESH background is drawn as its upward-facing triangles shaded by height (a sink is lighter than the
counter, a stove darker), lowest first. Env-local metres, X right, Y up.
"""

from __future__ import annotations

import numpy as np
import torch
from isaaclab.utils.math import matrix_from_quat


def mesh_outlines(pool) -> dict:
    """``{asset name: (vertices, faces)}`` of the assets whose collision meshes the placer used (root frames,
    metres), from the pool's compiled problem; empty when no pair was MESH."""
    try:
        problem = pool.placer.compile(pool.assets, pool.num_envs, str(pool.device))
    except Exception:  # noqa: BLE001 - a picture never fails a run
        return {}
    geo = getattr(problem, "pair_geometry", None)
    return dict(getattr(geo, "outlines", {}) or {})


def posed(vertices, pos, quat) -> np.ndarray:
    rot = matrix_from_quat(torch.tensor([float(v) for v in quat], dtype=torch.float64)).numpy()
    return np.asarray(vertices, np.float64) @ rot.T + np.asarray(pos, np.float64)


def draw_silhouette(ax, vertices, faces, pos, quat, color, alpha: float = 0.55, zorder: float = 2.0):
    """The object's shadow from above: its triangles projected onto XY, filled as one shape (no edges)."""
    from matplotlib.patches import PathPatch
    from matplotlib.path import Path

    v = posed(vertices, pos, quat)[:, :2]
    tri = v[np.asarray(faces)]
    a, b = tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]
    area = a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]
    keep = np.abs(area) > 1e-12
    tri, area = tri[keep], area[keep]
    tri[area < 0] = tri[area < 0][:, ::-1]  # every triangle counter-clockwise: the nonzero fill rule then fills
    # their union (a closed mesh's top and bottom faces would cancel each other out)
    codes = np.tile([Path.MOVETO, Path.LINETO, Path.LINETO, Path.CLOSEPOLY], len(tri))
    pts = np.concatenate([tri, tri[:, :1]], axis=1).reshape(-1, 2)
    ax.add_patch(PathPatch(Path(pts, codes), fc=color, ec="none", alpha=alpha, zorder=zorder))


def draw_background(ax, vertices, faces, pos, quat, zorder: float = 0.5):
    """A background's upward-facing triangles seen from above, shaded by height (lower is lighter)."""
    from matplotlib.collections import PolyCollection

    v = posed(vertices, pos, quat)
    tri = v[np.asarray(faces)]
    normal = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    up = normal[:, 2] > 1e-12
    tri = tri[up]
    if not len(tri):
        return
    z = tri[:, :, 2].mean(1)
    order = np.argsort(z)
    span = max(float(z.max() - z.min()), 1e-9)
    shade = 0.97 - 0.3 * (z[order] - z.min()) / span
    ax.add_collection(PolyCollection(tri[order][:, :, :2], facecolors=np.c_[shade, shade, shade],
                                     edgecolors="none", zorder=zorder))

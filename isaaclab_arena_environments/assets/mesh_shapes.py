"""Geometry of the concave example assets, built with trimesh and numpy (no USD here).

Every builder returns plain ``trimesh.Trimesh`` objects in the asset's root frame: Z up, metres, origin at
the centre of the asset's footprint on its lowest face (z = 0 is where it stands). ``generate_mesh_usd.py``
writes them into the shipped ``.usda`` files.

- Bowl: a hollow bowl revolved from a wall profile; rim radius 0.08 m, height 0.06 m.
- Mug: a hollow cylinder (radius 0.04 m, height 0.10 m) with a handle on its +X side.
- Dynamic bodies need convex colliders: ``*_convex_parts`` cut the wall into angular sectors (and height
  bands for the curved bowl) and return the convex hull of each piece, so the union of the parts follows the
  visual surface within the sagitta of one piece (under 2 mm).
"""

from __future__ import annotations

import numpy as np
import trimesh

#: Bowl: rim radius, height, radius of the flat foot, wall thickness, floor thickness (metres).
BOWL_RIM_RADIUS = 0.08
BOWL_HEIGHT = 0.06
BOWL_FOOT_RADIUS = 0.045
BOWL_WALL = 0.006
BOWL_FLOOR = 0.008

#: Mug: outer radius, height, wall and floor thickness (metres).
MUG_RADIUS = 0.04
MUG_HEIGHT = 0.10
MUG_WALL = 0.005
MUG_FLOOR = 0.008
#: Handle on +X: centre line is an arc of radius MUG_HANDLE_RADIUS about (MUG_HANDLE_X, 0, MUG_HANDLE_Z);
#: cross-section MUG_HANDLE_THICK (radial) by MUG_HANDLE_WIDTH (along Y).
MUG_HANDLE_X = 0.046
MUG_HANDLE_Z = 0.055
MUG_HANDLE_RADIUS = 0.026
MUG_HANDLE_THICK = 0.008
MUG_HANDLE_WIDTH = 0.014

SECTORS = 16  # angular pieces of a revolved wall
REVOLVE_SECTIONS = 48  # facets of a revolved visual surface


# ---------------------------------------------------------------------------------------------- bowl
def _bowl_wall(n: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """(outer, inner) wall profiles as (n, 2) arrays of (radius, z), from the bottom to the rim."""
    th = np.linspace(0.0, 0.5 * np.pi, n)
    rise = BOWL_RIM_RADIUS - BOWL_FOOT_RADIUS
    outer = np.c_[BOWL_FOOT_RADIUS + rise * np.sin(th), BOWL_HEIGHT * (1.0 - np.cos(th))]
    inner = np.c_[BOWL_FOOT_RADIUS - BOWL_WALL + rise * np.sin(th), BOWL_FLOOR + (BOWL_HEIGHT - BOWL_FLOOR) * (1.0 - np.cos(th))]
    return outer, inner


def bowl_visual() -> trimesh.Trimesh:
    """Closed (watertight) bowl surface: foot, outer wall, rim, inner wall, inner floor."""
    outer, inner = _bowl_wall()
    profile = np.vstack([[0.0, 0.0], outer, inner[::-1], [0.0, BOWL_FLOOR]])
    return trimesh.creation.revolve(profile, sections=REVOLVE_SECTIONS)


def _ring(radius: float, z: float, phis: np.ndarray) -> np.ndarray:
    return np.c_[radius * np.cos(phis), radius * np.sin(phis), np.full(len(phis), z)]


def _sector_hulls(outer: np.ndarray, inner: np.ndarray, bands: list[tuple[int, int]]) -> list[trimesh.Trimesh]:
    """Convex hulls of a revolved wall cut into SECTORS angular pieces and the given profile index bands."""
    parts = []
    for i in range(SECTORS):
        phis = np.linspace(2.0 * np.pi * i / SECTORS, 2.0 * np.pi * (i + 1) / SECTORS, 4)
        for j0, j1 in bands:
            pts = [_ring(r, z, phis) for r, z in np.vstack([outer[j0:j1 + 1], inner[j0:j1 + 1]])]
            parts.append(trimesh.convex.convex_hull(np.vstack(pts)))
    return parts


def _disc(radius: float, z0: float, z1: float) -> trimesh.Trimesh:
    phis = np.linspace(0.0, 2.0 * np.pi, REVOLVE_SECTIONS, endpoint=False)
    return trimesh.convex.convex_hull(np.vstack([_ring(radius, z0, phis), _ring(radius, z1, phis)]))


def bowl_convex_parts() -> list[trimesh.Trimesh]:
    """Floor disc plus 16 sectors x 4 height bands of the wall, each a convex hull (65 parts)."""
    outer, inner = _bowl_wall()
    floor = _disc(BOWL_FOOT_RADIUS, 0.0, BOWL_FLOOR)  # the whole foot, under the wall's first band too
    return [floor] + _sector_hulls(outer, inner, [(0, 3), (3, 6), (6, 9), (9, 11)])


# ----------------------------------------------------------------------------------------------- mug
def _handle_path(n_arc: int = 9) -> np.ndarray:
    """Centre line of the handle in the XZ plane, (k, 2) of (x, z): into the wall, round the arc, back."""
    th = np.linspace(0.5 * np.pi, -0.5 * np.pi, n_arc)
    arc = np.c_[MUG_HANDLE_X + MUG_HANDLE_RADIUS * np.cos(th), MUG_HANDLE_Z + MUG_HANDLE_RADIUS * np.sin(th)]
    wall_x = MUG_RADIUS - 0.5 * MUG_WALL  # the ends stop in the middle of the wall, not in the hollow
    return np.vstack([[wall_x, arc[0, 1]], arc, [wall_x, arc[-1, 1]]])


def _handle_sections() -> np.ndarray:
    """(k, 4, 3) corners of the handle's rectangular cross-section at every point of its centre line."""
    path = _handle_path()
    k = len(path)
    tangents = np.gradient(path, axis=0)
    tangents /= np.linalg.norm(tangents, axis=1, keepdims=True)
    normals = np.c_[tangents[:, 1], -tangents[:, 0]]  # in-plane normal (x, z)
    out = np.zeros((k, 4, 3))
    h, w = 0.5 * MUG_HANDLE_THICK, 0.5 * MUG_HANDLE_WIDTH
    for c, (sn, sy) in enumerate(((-1, -1), (1, -1), (1, 1), (-1, 1))):
        xz = path + sn * h * normals
        out[:, c] = np.c_[xz[:, 0], np.full(k, sy * w), xz[:, 1]]
    return out


def mug_handle() -> trimesh.Trimesh:
    """Closed tube of rectangular cross-section swept along the handle path, capped at both ends."""
    sec = _handle_sections()
    k = len(sec)
    verts = sec.reshape(-1, 3)
    faces = []
    for s in range(k - 1):
        for c in range(4):
            a, b = s * 4 + c, s * 4 + (c + 1) % 4
            faces += [[a, b, b + 4], [a, b + 4, a + 4]]
    last = (k - 1) * 4
    faces += [[0, 2, 1], [0, 3, 2], [last, last + 1, last + 2], [last, last + 2, last + 3]]
    mesh = trimesh.Trimesh(verts, np.array(faces), process=True)
    trimesh.repair.fix_normals(mesh)
    return mesh


def mug_body() -> trimesh.Trimesh:
    profile = np.array([[0.0, 0.0], [MUG_RADIUS, 0.0], [MUG_RADIUS, MUG_HEIGHT], [MUG_RADIUS - MUG_WALL, MUG_HEIGHT],
                        [MUG_RADIUS - MUG_WALL, MUG_FLOOR], [0.0, MUG_FLOOR]])
    return trimesh.creation.revolve(profile, sections=REVOLVE_SECTIONS)


def mug_visual() -> trimesh.Trimesh:
    """Body and handle as one mesh of two closed shells (the handle's ends are sunk into the wall)."""
    return trimesh.util.concatenate([mug_body(), mug_handle()])


def mug_convex_parts() -> list[trimesh.Trimesh]:
    """Floor disc, 16 wall sectors and one hull per handle segment (28 parts)."""
    outer = np.array([[MUG_RADIUS, 0.0], [MUG_RADIUS, MUG_HEIGHT]])
    inner = np.array([[MUG_RADIUS - MUG_WALL, 0.0], [MUG_RADIUS - MUG_WALL, MUG_HEIGHT]])
    parts = [_disc(MUG_RADIUS - MUG_WALL, 0.0, MUG_FLOOR)] + _sector_hulls(outer, inner, [(0, 1)])
    sec = _handle_sections()
    parts += [trimesh.convex.convex_hull(np.vstack([sec[s], sec[s + 1]])) for s in range(len(sec) - 1)]
    return parts


# ------------------------------------------------------------------------------------- boxes and slabs
def box(lo, hi) -> trimesh.Trimesh:
    """Axis-aligned box between corners ``lo`` and ``hi`` (metres)."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    return trimesh.creation.box(extents=hi - lo, transform=trimesh.transformations.translation_matrix(0.5 * (lo + hi)))


def slab_with_hole(outer_lo, outer_hi, hole_lo, hole_hi, z0: float, z1: float) -> trimesh.Trimesh:
    """A closed slab between heights z0 < z1 over the XY rectangle ``outer`` minus the XY rectangle ``hole``.

    Built directly from the eight corners of the two rectangles (no polygon triangulator needed): the
    ring between them is four quads on the top and bottom faces, plus the outer and inner side walls.
    """
    (ox0, oy0), (ox1, oy1) = outer_lo, outer_hi
    (hx0, hy0), (hx1, hy1) = hole_lo, hole_hi
    if not (ox0 < hx0 < hx1 < ox1 and oy0 < hy0 < hy1 < oy1):
        raise ValueError("slab_with_hole: the hole must lie strictly inside the outer rectangle")
    ring_o = [(ox0, oy0), (ox1, oy0), (ox1, oy1), (ox0, oy1)]
    ring_h = [(hx0, hy0), (hx1, hy0), (hx1, hy1), (hx0, hy1)]
    verts = [(x, y, z) for z in (z0, z1) for x, y in ring_o + ring_h]  # bottom: 0-3 outer, 4-7 hole; top: +8
    faces = []
    for c in range(4):
        n = (c + 1) % 4
        o0, o1, h0, h1 = c, n, 4 + c, 4 + n
        faces += [[8 + o0, 8 + o1, 8 + h1], [8 + o0, 8 + h1, 8 + h0]]  # top ring, facing +Z
        faces += [[o0, h1, o1], [o0, h0, h1]]  # bottom ring, facing -Z
        faces += [[o0, o1, 8 + o1], [o0, 8 + o1, 8 + o0]]  # outer wall, facing out
        faces += [[h0, 8 + h1, h1], [h0, 8 + h0, 8 + h1]]  # hole wall, facing into the hole
    mesh = trimesh.Trimesh(np.array(verts, float), np.array(faces), process=True)
    trimesh.repair.fix_normals(mesh)
    return mesh


def open_box(lo, hi, wall: float) -> trimesh.Trimesh:
    """An open-top container inside the box [lo, hi]: walls and floor ``wall`` thick, as one closed surface
    (outer bottom and walls, the rim, the inner walls and the inner floor)."""
    (x0, y0, z0), (x1, y1, z1) = np.asarray(lo, float), np.asarray(hi, float)
    ring_o = [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]
    ring_i = [(x0 + wall, y0 + wall), (x1 - wall, y0 + wall), (x1 - wall, y1 - wall), (x0 + wall, y1 - wall)]
    zf = z0 + wall
    # 0-3 outer bottom, 4-7 outer top, 8-11 inner top, 12-15 inner floor
    verts = [(x, y, z0) for x, y in ring_o] + [(x, y, z1) for x, y in ring_o]
    verts += [(x, y, z1) for x, y in ring_i] + [(x, y, zf) for x, y in ring_i]
    faces = [[0, 2, 1], [0, 3, 2], [12, 13, 14], [12, 14, 15]]  # bottom (-Z), inner floor (+Z)
    for c in range(4):
        n = (c + 1) % 4
        faces += [[c, n, 4 + n], [c, 4 + n, 4 + c]]  # outer wall
        faces += [[4 + c, 4 + n, 8 + n], [4 + c, 8 + n, 8 + c]]  # rim
        faces += [[8 + c, 8 + n, 12 + n], [8 + c, 12 + n, 12 + c]]  # inner wall
    mesh = trimesh.Trimesh(np.array(verts, float), np.array(faces), process=True)
    trimesh.repair.fix_normals(mesh)
    return mesh

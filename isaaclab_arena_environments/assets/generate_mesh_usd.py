"""Authors the concave example assets with trimesh and pxr. Run once; the ``.usda`` outputs are committed.

    scripts/arena_python.sh -m isaaclab_arena_environments.assets.generate_mesh_usd

Frames and units: Z up, metres (metersPerUnit = 1), root at the centre of the footprint on the lowest face.

- ``bowl.usda`` (``/Bowl``) and ``mug.usda`` (``/Mug``): dynamic bodies once spawned with a rigid body.
  ``visual`` is the closed render mesh (no collider); ``collision/part_NNN`` are convex pieces
  (``PhysicsMeshCollisionAPI`` approximation ``convexHull``), invisible, whose union follows the visual.
- ``shelf.usda`` (``/Shelf``): two boards on four corner legs with a back panel between the boards; the
  space under the lower board is open, so objects standing on the table can be tucked under it. Box
  colliders (``Cube`` prims), dynamic once spawned with a rigid body.
- ``kitchen_counter.usda`` (``/KitchenCounter``): a static background. ``counter_top`` is a slab with a sink
  cut-out (triangle-mesh collider, approximation ``none``), ``sink`` the basin under the cut-out (triangle
  mesh), ``cabinet`` and ``apron/*`` the body below (``Cube``), ``stove`` a cooktop block on the counter
  (``stove/body`` a ``convexHull`` mesh, ``stove/burner_N`` ``Cylinder`` colliders).
"""

from __future__ import annotations

import os

import numpy as np
import trimesh
from pxr import Gf, UsdGeom, UsdPhysics, Vt

from isaaclab_arena_environments.assets import mesh_shapes as shapes
from isaaclab_arena_environments.assets.generate_usd import USD_DIR, _box, _new_stage, _save

BOWL_COLOR = (0.85, 0.3, 0.2)
MUG_COLOR = (0.9, 0.9, 0.85)
SHELF_COLOR = (0.62, 0.45, 0.28)
STONE_COLOR = (0.78, 0.78, 0.74)
STEEL_COLOR = (0.6, 0.62, 0.65)
CABINET_COLOR = (0.35, 0.42, 0.5)
STOVE_COLOR = (0.15, 0.15, 0.16)
BURNER_COLOR = (0.35, 0.1, 0.08)

#: Shelf: footprint (x depth, y width), board thickness, board heights (bottom faces), leg side (metres).
SHELF_DEPTH = 0.24
SHELF_WIDTH = 0.40
SHELF_BOARD = 0.015
SHELF_BOARD_Z = (0.15, 0.30)
SHELF_LEG = 0.02

#: Kitchen counter (env-local frame of the background, which stands on the floor at z = 0).
COUNTER_LO = (-0.8, -0.35)
COUNTER_HI = (0.8, 0.35)
COUNTER_TOP_Z = 0.90
COUNTER_SLAB = 0.04
SINK_HOLE_LO = (-0.55, -0.175)
SINK_HOLE_HI = (-0.10, 0.175)
SINK_DEPTH = 0.18  # from the underside of the slab down to the basin's floor top
SINK_WALL = 0.01
CABINET_TOP_Z = COUNTER_TOP_Z - COUNTER_SLAB - SINK_DEPTH - SINK_WALL  # the basin rests on the cabinet
STOVE_LO = (0.25, -0.28)
STOVE_HI = (0.75, 0.28)
STOVE_HEIGHT = 0.08
BURNER_RADIUS = 0.07
BURNER_HEIGHT = 0.01


def _mesh(stage, path: str, mesh: trimesh.Trimesh, color, approximation: str | None = None,
          visible: bool = True) -> None:
    """A ``Mesh`` prim from a trimesh (triangles, metres); a collider with ``approximation`` when given."""
    prim = UsdGeom.Mesh.Define(stage, path)
    verts = np.asarray(mesh.vertices, dtype=np.float64)
    prim.CreatePointsAttr(Vt.Vec3fArray.FromNumpy(verts.astype(np.float32)))
    prim.CreateFaceVertexCountsAttr(Vt.IntArray([3] * len(mesh.faces)))
    prim.CreateFaceVertexIndicesAttr(Vt.IntArray.FromNumpy(np.asarray(mesh.faces, dtype=np.int32).ravel()))
    prim.CreateSubdivisionSchemeAttr(UsdGeom.Tokens.none)
    prim.CreateExtentAttr([Gf.Vec3f(*map(float, verts.min(0))), Gf.Vec3f(*map(float, verts.max(0)))])
    prim.CreateDisplayColorAttr([Gf.Vec3f(*color)])
    if not visible:
        prim.CreateVisibilityAttr(UsdGeom.Tokens.invisible)
    if approximation is not None:
        UsdPhysics.CollisionAPI.Apply(prim.GetPrim())
        UsdPhysics.MeshCollisionAPI.Apply(prim.GetPrim()).CreateApproximationAttr(approximation)


def _convex_body(name: str, root: str, visual: trimesh.Trimesh, parts: list[trimesh.Trimesh], color,
                 usd_dir: str) -> str:
    path = os.path.join(usd_dir, f"{name}.usda")
    stage, _ = _new_stage(path, root)
    _mesh(stage, f"/{root}/visual", visual, color)
    UsdGeom.Xform.Define(stage, f"/{root}/collision")
    for i, part in enumerate(parts):
        _mesh(stage, f"/{root}/collision/part_{i:03d}", part, color, UsdPhysics.Tokens.convexHull, visible=False)
    return _save(stage, path)


def write_bowl(usd_dir: str = USD_DIR) -> str:
    return _convex_body("bowl", "Bowl", shapes.bowl_visual(), shapes.bowl_convex_parts(), BOWL_COLOR, usd_dir)


def write_mug(usd_dir: str = USD_DIR) -> str:
    return _convex_body("mug", "Mug", shapes.mug_visual(), shapes.mug_convex_parts(), MUG_COLOR, usd_dir)


def write_shelf(usd_dir: str = USD_DIR) -> str:
    """``/Shelf``: ``board_0`` (lower), ``board_1`` (top), ``leg_0..3``, ``back`` (between the boards, at +X)."""
    path = os.path.join(usd_dir, "shelf.usda")
    stage, _ = _new_stage(path, "Shelf")
    dx, dy, t, leg = 0.5 * SHELF_DEPTH, 0.5 * SHELF_WIDTH, SHELF_BOARD, SHELF_LEG
    for i, z in enumerate(SHELF_BOARD_Z):
        _box(stage, f"/Shelf/board_{i}", (0.0, 0.0, z + 0.5 * t), (SHELF_DEPTH, SHELF_WIDTH, t), SHELF_COLOR)
    for i, (mx, my) in enumerate(((1, 1), (1, -1), (-1, 1), (-1, -1))):
        centre = (mx * (dx - 0.5 * leg), my * (dy - 0.5 * leg), 0.5 * SHELF_BOARD_Z[0])
        _box(stage, f"/Shelf/leg_{i}", centre, (leg, leg, SHELF_BOARD_Z[0]), SHELF_COLOR)
    back_h = SHELF_BOARD_Z[1] - SHELF_BOARD_Z[0] - t
    _box(stage, "/Shelf/back", (dx - 0.5 * t, 0.0, SHELF_BOARD_Z[0] + t + 0.5 * back_h),
         (t, SHELF_WIDTH, back_h), SHELF_COLOR)
    return _save(stage, path)


def _cylinder(stage, path: str, centre, radius: float, height: float, color) -> None:
    cyl = UsdGeom.Cylinder.Define(stage, path)
    cyl.CreateRadiusAttr(radius)
    cyl.CreateHeightAttr(height)
    cyl.CreateAxisAttr(UsdGeom.Tokens.z)
    cyl.CreateExtentAttr([Gf.Vec3f(-radius, -radius, -0.5 * height), Gf.Vec3f(radius, radius, 0.5 * height)])
    cyl.AddTranslateOp().Set(Gf.Vec3d(*centre))
    cyl.CreateDisplayColorAttr([Gf.Vec3f(*color)])
    UsdPhysics.CollisionAPI.Apply(cyl.GetPrim())


def write_kitchen_counter(usd_dir: str = USD_DIR) -> str:
    path = os.path.join(usd_dir, "kitchen_counter.usda")
    stage, _ = _new_stage(path, "KitchenCounter")
    r = "/KitchenCounter"
    slab_z0 = COUNTER_TOP_Z - COUNTER_SLAB
    slab = shapes.slab_with_hole(COUNTER_LO, COUNTER_HI, SINK_HOLE_LO, SINK_HOLE_HI, slab_z0, COUNTER_TOP_Z)
    _mesh(stage, f"{r}/counter_top", slab, STONE_COLOR, UsdPhysics.Tokens.none)
    w = SINK_WALL
    sink = shapes.open_box((SINK_HOLE_LO[0] - w, SINK_HOLE_LO[1] - w, CABINET_TOP_Z),
                           (SINK_HOLE_HI[0] + w, SINK_HOLE_HI[1] + w, slab_z0), w)
    _mesh(stage, f"{r}/sink", sink, STEEL_COLOR, UsdPhysics.Tokens.none)
    (x0, y0), (x1, y1) = COUNTER_LO, COUNTER_HI
    _box(stage, f"{r}/cabinet", (0.5 * (x0 + x1), 0.5 * (y0 + y1), 0.5 * CABINET_TOP_Z),
         (x1 - x0, y1 - y0, CABINET_TOP_Z), CABINET_COLOR)
    UsdGeom.Xform.Define(stage, f"{r}/apron")
    h, zc, a = slab_z0 - CABINET_TOP_Z, 0.5 * (slab_z0 + CABINET_TOP_Z), 0.02
    for name, centre, size in (("front", (0.5 * (x0 + x1), y0 + 0.5 * a, zc), (x1 - x0, a, h)),
                               ("back", (0.5 * (x0 + x1), y1 - 0.5 * a, zc), (x1 - x0, a, h)),
                               ("left", (x0 + 0.5 * a, 0.5 * (y0 + y1), zc), (a, y1 - y0 - 2 * a, h)),
                               ("right", (x1 - 0.5 * a, 0.5 * (y0 + y1), zc), (a, y1 - y0 - 2 * a, h))):
        _box(stage, f"{r}/apron/{name}", centre, size, CABINET_COLOR)
    UsdGeom.Xform.Define(stage, f"{r}/stove")
    (sx0, sy0), (sx1, sy1) = STOVE_LO, STOVE_HI
    z0, z1, c = COUNTER_TOP_Z, COUNTER_TOP_Z + STOVE_HEIGHT, 0.02  # a frustum: the top is chamfered by c
    corners = [(x, y, z0) for x in (sx0, sx1) for y in (sy0, sy1)]
    corners += [(x, y, z1) for x in (sx0 + c, sx1 - c) for y in (sy0 + c, sy1 - c)]
    _mesh(stage, f"{r}/stove/body", trimesh.convex.convex_hull(np.array(corners)), STOVE_COLOR,
          UsdPhysics.Tokens.convexHull)
    mx, my = 0.5 * (sx0 + sx1), 0.5 * (sy0 + sy1)
    for i, (ox, oy) in enumerate(((-1, -1), (-1, 1), (1, -1), (1, 1))):
        centre = (mx + ox * 0.11, my + oy * 0.13, z1 + 0.5 * BURNER_HEIGHT)
        _cylinder(stage, f"{r}/stove/burner_{i}", centre, BURNER_RADIUS, BURNER_HEIGHT, BURNER_COLOR)
    return _save(stage, path)


def write_all(usd_dir: str = USD_DIR) -> list[str]:
    """Writes the four files into ``usd_dir`` (the shipped folder by default); returns their paths."""
    return [write_bowl(usd_dir), write_mug(usd_dir), write_shelf(usd_dir), write_kitchen_counter(usd_dir)]


def main() -> None:
    for p in write_all():
        print(f"wrote {p}")


if __name__ == "__main__":
    main()

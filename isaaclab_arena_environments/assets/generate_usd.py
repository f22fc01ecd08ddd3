"""Authors the project's static USD assets with pxr (table background, open bin, floor slab). Run once; outputs are committed.

    scripts/arena_python.sh -m isaaclab_arena_environments.assets.generate_usd

Frames and units: Z up, metres (metersPerUnit = 1). Every collider is a ``Cube`` prim of size 1 scaled to its
extent, with ``PhysicsCollisionAPI`` and no rigid-body API (static unless a spawner adds one).
"""

from __future__ import annotations

import os

from pxr import Gf, Usd, UsdGeom, UsdPhysics

USD_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "usd")

#: Table background: a 1.2 m (x) by 0.8 m (y) tabletop whose top is at z = 0.75 m, on four legs.
TABLE_TOP_SIZE = (1.2, 0.8, 0.04)
TABLE_TOP_Z = 0.75
TABLE_LEG_SIZE = 0.05
TABLE_COLOR = (0.55, 0.38, 0.22)

#: Open bin: outer footprint 0.30 m x 0.20 m, 0.10 m high, walls and floor 0.01 m thick.
BIN_SIZE = (0.30, 0.20, 0.10)
BIN_WALL = 0.01
BIN_COLOR = (0.2, 0.35, 0.6)

#: Floor slab: 2.4 m x 2.4 m, 0.02 m thick, its top face at z = 0 (the ground plane's height).
FLOOR_SIZE = (2.4, 2.4, 0.02)
FLOOR_COLOR = (0.42, 0.42, 0.45)


def _new_stage(path: str, root_name: str):
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    root = UsdGeom.Xform.Define(stage, f"/{root_name}")
    stage.SetDefaultPrim(root.GetPrim())
    return stage, root


def _box(stage, path: str, center, size, color) -> None:
    """A static box collider: unit Cube, translated to ``center`` and scaled to ``size`` (metres)."""
    cube = UsdGeom.Cube.Define(stage, path)
    cube.CreateSizeAttr(1.0)
    cube.AddTranslateOp().Set(Gf.Vec3d(*center))
    cube.AddScaleOp().Set(Gf.Vec3f(*size))
    cube.CreateDisplayColorAttr([Gf.Vec3f(*color)])
    half = [0.5, 0.5, 0.5]
    cube.CreateExtentAttr([Gf.Vec3f(*[-h for h in half]), Gf.Vec3f(*half)])
    UsdPhysics.CollisionAPI.Apply(cube.GetPrim())


def _save(stage, path: str) -> str:
    """Writes the stage atomically (temp file, then rename) so no half file is ever left."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp.usda"
    stage.GetRootLayer().Export(tmp)
    os.replace(tmp, path)
    return path


def write_table(path: str | None = None) -> str:
    """``/TableBackground`` with ``table`` (the tabletop collider) and ``legs/leg_0..3``."""
    path = path or os.path.join(USD_DIR, "table_background.usda")
    stage, _ = _new_stage(path, "TableBackground")
    sx, sy, sz = TABLE_TOP_SIZE
    _box(stage, "/TableBackground/table", (0.0, 0.0, TABLE_TOP_Z - 0.5 * sz), TABLE_TOP_SIZE, TABLE_COLOR)
    UsdGeom.Xform.Define(stage, "/TableBackground/legs")
    leg_h = TABLE_TOP_Z - sz
    inset = 0.5 * TABLE_LEG_SIZE + 0.03
    for i, (mx, my) in enumerate(((1, 1), (1, -1), (-1, 1), (-1, -1))):
        center = (mx * (0.5 * sx - inset), my * (0.5 * sy - inset), 0.5 * leg_h)
        _box(stage, f"/TableBackground/legs/leg_{i}", center, (TABLE_LEG_SIZE, TABLE_LEG_SIZE, leg_h), TABLE_COLOR)
    return _save(stage, path)


def write_bin(path: str | None = None) -> str:
    """``/Bin``: ``floor`` and four walls; the root frame is the centre of the bin's outer box."""
    path = path or os.path.join(USD_DIR, "bin.usda")
    stage, _ = _new_stage(path, "Bin")
    bx, by, bz = BIN_SIZE
    t = BIN_WALL
    _box(stage, "/Bin/floor", (0.0, 0.0, -0.5 * bz + 0.5 * t), (bx, by, t), BIN_COLOR)
    wall_h = bz - t
    zc = -0.5 * bz + t + 0.5 * wall_h
    _box(stage, "/Bin/wall_pos_x", (0.5 * bx - 0.5 * t, 0.0, zc), (t, by, wall_h), BIN_COLOR)
    _box(stage, "/Bin/wall_neg_x", (-0.5 * bx + 0.5 * t, 0.0, zc), (t, by, wall_h), BIN_COLOR)
    _box(stage, "/Bin/wall_pos_y", (0.0, 0.5 * by - 0.5 * t, zc), (bx - 2 * t, t, wall_h), BIN_COLOR)
    _box(stage, "/Bin/wall_neg_y", (0.0, -0.5 * by + 0.5 * t, zc), (bx - 2 * t, t, wall_h), BIN_COLOR)
    return _save(stage, path)


def write_floor(path: str | None = None) -> str:
    """``/Floor`` with ``slab``: a static box whose top face is the root frame's z = 0 (a support for ``On``)."""
    path = path or os.path.join(USD_DIR, "floor.usda")
    stage, _ = _new_stage(path, "Floor")
    _box(stage, "/Floor/slab", (0.0, 0.0, -0.5 * FLOOR_SIZE[2]), FLOOR_SIZE, FLOOR_COLOR)
    return _save(stage, path)


def main() -> None:
    for p in (write_table(), write_bin(), write_floor()):
        print(f"wrote {p}")


if __name__ == "__main__":
    main()

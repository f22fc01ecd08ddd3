"""Procedural reference scenes of the solver benchmark and tests (boxes on a table; metres).

Every object is plain geometry (an ``Object`` with an explicit bounding box and no spawner config), so the
scenes need neither Isaac Lab nor USD.

The table is a 1.2 x 0.8 m box whose top is at z = 0.75 m, centred on the env origin, marked IsAnchor.
The bin of the container scene is a 0.4 x 0.3 x 0.15 m box (its bounds are the support: releases are
above its rim, physics settles them inside).
"""

from __future__ import annotations

from isaaclab_arena.assets.asset import Object
from isaaclab_arena.assets.bounding_box import AxisAlignedBoundingBox
from isaaclab_arena.relations.relations import (
    AlignWith,
    ClutterOn,
    AtPosition,
    FaceTo,
    IsAnchor,
    NextTo,
    NotNextTo,
    On,
    PositionLimitsBox,
    PositionLimitsCylindrical,
    RandomAroundSolution,
    RotateAroundSolution,
    Side,
)
from isaaclab_arena.utils.pose import Pose

TABLE_SIZE = (1.2, 0.8, 0.75)
BIN_SIZE = (0.4, 0.3, 0.15)
CROWDED_SIZES = [(0.05, 0.05, 0.08), (0.08, 0.08, 0.10), (0.12, 0.06, 0.05), (0.16, 0.16, 0.06),
                 (0.20, 0.10, 0.04), (0.06, 0.12, 0.09), (0.10, 0.10, 0.12)]


def cuboid(name: str, size, initial_pose: Pose | None = None) -> Object:
    """A plain-geometry box of ``size`` (x, y, z metres) centred on its origin: explicit bounds, no spawner."""
    return Object(name, bounding_box=AxisAlignedBoundingBox.from_size(tuple(size)), initial_pose=initial_pose)


def table(name: str = "table") -> Object:
    t = cuboid(name, TABLE_SIZE, Pose((0.0, 0.0, TABLE_SIZE[2] / 2)))
    t.add_relation(IsAnchor())
    return t


def on_table(t: Object, name: str, size, *relations) -> Object:
    """A cuboid ``name`` On ``t`` (default On) with extra ``relations``."""
    o = cuboid(name, size)
    o.add_relation(On(t))
    for rel in relations:
        o.add_relation(rel)
    return o


def clutter_scene(n: int = 6, spread: float = 0.4, support: Object | None = None, **clutter) -> list:
    """``n`` boxes cycling through ``CROWDED_SIZES``, each ClutterOn(table) (or ``support``), random yaw."""
    t = support if support is not None else table()
    out = [t]
    for k in range(n):
        o = cuboid(f"clutter{k}", CROWDED_SIZES[k % len(CROWDED_SIZES)])
        o.add_relation(ClutterOn(t, spread=spread, **clutter))
        out.append(o)
    return out


def bin_clutter_scene(n: int = 4, **clutter) -> list:
    """A bin anchor (``BIN_SIZE``, on the floor) with ``n`` cubes of 0.05 m ClutterOn it (spread 0.5)."""
    b = cuboid("bin", BIN_SIZE, Pose((0.0, 0.0, BIN_SIZE[2] / 2)))
    b.add_relation(IsAnchor())
    out = [b]
    clutter.setdefault("spread", 0.5)
    for k in range(n):
        o = cuboid(f"cube{k}", (0.05, 0.05, 0.05))
        o.add_relation(ClutterOn(b, **clutter))
        out.append(o)
    return out


def boxes_scene(n: int, size=(0.12, 0.12, 0.12)) -> list:
    """``n`` cubes On the table (boxes3, boxes10)."""
    t = table()
    return [t] + [on_table(t, f"box{k}", size) for k in range(n)]


def crowded_scene(n: int = 14) -> list:
    """``n`` boxes cycling through ``CROWDED_SIZES`` On the table (crowded14)."""
    t = table()
    return [t] + [on_table(t, f"box{k}", CROWDED_SIZES[k % len(CROWDED_SIZES)]) for k in range(n)]


def mug_bowl_scene() -> list:
    """A mug On the table and a bowl On the table, NextTo(mug, positive_x, 0.05 m)."""
    t = table()
    mug = on_table(t, "mug", (0.08, 0.08, 0.10))
    bowl = on_table(t, "bowl", (0.16, 0.16, 0.06), NextTo(mug, side=Side.POSITIVE_X, distance_m=0.05))
    return [t, mug, bowl]


def all_relations_scene() -> list:
    """Every remaining relation kind at least once: NotNextTo, AtPosition, AlignWith, PositionLimitsBox,
    PositionLimitsCylindrical, FaceTo, RotateAroundSolution, RandomAroundSolution, On(overlap=True),
    NextTo with cross_position_ratio, and a passive obstacle."""
    t = table()
    obstacle = cuboid("obstacle", (0.10, 0.10, 0.20), Pose((0.45, 0.25, 0.85)))
    plate = on_table(t, "plate", (0.20, 0.20, 0.02), AtPosition(x=-0.3, y=0.0))
    cup = cuboid("cup", (0.07, 0.07, 0.09))
    cup.add_relation(On(plate, edge_margin_m=0.01))
    jar = on_table(t, "jar", (0.08, 0.08, 0.14),
                   NextTo(plate, side=Side.NEGATIVE_Y, distance_m=0.04, cross_position_ratio=0.0))
    box = on_table(t, "box", (0.10, 0.06, 0.06), AlignWith(plate, axis="y", offset_m=0.1, tolerance_m=0.02),
                   NotNextTo(plate, side=Side.NEGATIVE_X), PositionLimitsBox(x_limits=(None, 0.2)))
    camera = on_table(t, "camera", (0.06, 0.04, 0.05),
                      PositionLimitsCylindrical(center_x=0.3, center_y=0.0, radius_min=0.05, radius_max=0.2),
                      FaceTo(plate))
    board = cuboid("board", (0.16, 0.10, 0.02))
    board.add_relation(On(t, overlap=True))
    board.add_relation(PositionLimitsBox(x_limits=(0.5, None), y_limits=(-0.4, -0.1)))
    board.add_relation(RotateAroundSolution(yaw_rad=1.5707963))
    ball = on_table(t, "ball", (0.05, 0.05, 0.05), RandomAroundSolution(yaw_half_rad=0.5))
    return [t, obstacle, plate, cup, jar, box, camera, board, ball]


def next_to_chain_scene(n: int = 4) -> list:
    """A chain of ``n`` boxes On the table, each NextTo the previous one on +X (5 cm gap) at a cross-position
    ratio of 0.5 (chain4)."""
    t = table()
    sizes = [(0.12, 0.10, 0.08), (0.08, 0.14, 0.06), (0.10, 0.08, 0.10), (0.06, 0.06, 0.12), (0.14, 0.12, 0.05)]
    out = [t, on_table(t, "link0", sizes[0])]
    for k in range(1, n):
        out.append(on_table(t, f"link{k}", sizes[k % len(sizes)],
                            NextTo(out[-1], side=Side.POSITIVE_X, distance_m=0.05, cross_position_ratio=0.5)))
    return out


def aligned_row_scene(n: int = 5) -> list:
    """A row of ``n`` boxes On the table inside x in [-0.5, 0.5], y in [-0.3, 0.3]: each NextTo the previous one
    on +X (4 cm gap) and AlignWith it along Y (row5)."""
    t = table()
    limits = PositionLimitsBox(x_limits=(-0.5, 0.5), y_limits=(-0.3, 0.3))
    out = [t, on_table(t, "row0", (0.10, 0.10, 0.08), limits)]
    for k in range(1, n):
        out.append(on_table(t, f"row{k}", (0.10, 0.08 + 0.01 * (k % 3), 0.08), limits,
                            NextTo(out[-1], side=Side.POSITIVE_X, distance_m=0.04),
                            AlignWith(out[-1], axis="y", tolerance_m=0.01)))
    return out


SCENES = {
    "boxes3": lambda: boxes_scene(3),
    "boxes10": lambda: boxes_scene(10),
    "mug_bowl": mug_bowl_scene,
    "crowded14": lambda: crowded_scene(14),
    "all_relations": all_relations_scene,
    "clutter": clutter_scene,
    "clutter_bin": bin_clutter_scene,
    "chain4": next_to_chain_scene,
    "row5": aligned_row_scene,
}
#: Placer settings a scene is benchmarked with beyond the defaults (chain4_yaw, crowded14_yaw: random yaw, so
#: that their boxes are checked turned: oriented boxes, separating axes).
SCENE_PLACER_PARAMS = {"chain4_yaw": {"random_yaw_init": True}, "crowded14_yaw": {"random_yaw_init": True}}
SCENES["chain4_yaw"] = next_to_chain_scene
SCENES["crowded14_yaw"] = lambda: crowded_scene(14)

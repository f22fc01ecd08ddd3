"""Randomly generated placement scenes covering every relation kind (shared by the float64 re-check and the
feasibility pre-check tests). Plain-geometry boxes (metres) on a table anchor of random size; each scene is a
pure function of its seed."""

from __future__ import annotations

import math

import numpy as np

from isaaclab_arena.relations.relations import (
    AlignWith,
    AtPosition,
    ClutterOn,
    FaceTo,
    IsAnchor,
    NextTo,
    NotNextTo,
    On,
    PositionLimitsBox,
    PositionLimitsCylindrical,
    RotateAroundSolution,
)
from isaaclab_arena.benchmarks.scenes import cuboid
from isaaclab_arena.utils.pose import Pose

#: What each generated object gets besides its support; every kind appears in each run of consecutive seeds.
KINDS = ("next_to", "next_to_ratio", "not_next_to", "align_with", "stack", "at_position", "limits_box",
         "limits_cylindrical", "face_to", "rotate", "on_overlap", "clutter")
SIDES = ("positive_x", "negative_x", "positive_y", "negative_y")


def random_scene(seed: int, scale: float = 1.0):
    """(assets, random_yaw_init, what the scene uses: entries of ``KINDS`` and "random_yaw"). ``scale`` multiplies object sizes and gaps (> 1: more crowded,
    some scenes impossible)."""
    rng = np.random.default_rng(seed)
    tx, ty = float(rng.uniform(0.9, 1.4)), float(rng.uniform(0.6, 1.0))
    t = cuboid("table", (tx, ty, 0.75), Pose((0.0, 0.0, 0.375)))
    t.add_relation(IsAnchor())
    assets = [t]
    if rng.random() < 0.5:  # a passive obstacle in a corner of the table
        assets.append(cuboid("obstacle", (0.1, 0.1, 0.2), Pose((tx / 2 - 0.08, ty / 2 - 0.08, 0.85))))
    n = int(rng.integers(3, 6))
    kinds = [KINDS[(3 * seed + i) % len(KINDS)] for i in range(n)]
    prev, prev_size, used = None, None, []
    room = np.array([tx / 2 - 0.15, ty / 2 - 0.15])
    for i, kind in enumerate(kinds):
        size = rng.uniform((0.04, 0.04, 0.03), (0.13, 0.13, 0.12)) * np.array([scale, scale, 1.0])
        if kind == "stack" and prev is not None:
            size[:2] = prev_size[:2] * rng.uniform(0.3, 0.7)
        o = cuboid(f"o{i}", tuple(float(v) for v in size))
        assets.append(o)
        if prev is not None or kind not in ("next_to", "next_to_ratio", "not_next_to", "align_with", "stack"):
            used.append(kind)
        if kind == "clutter":
            o.add_relation(ClutterOn(t, spread=float(rng.uniform(0.4, 0.8))))
            continue
        if kind == "stack" and prev is not None:
            o.add_relation(On(prev, edge_margin_m=0.005))
        else:
            o.add_relation(On(t, overlap=kind == "on_overlap"))
        gap = float(rng.uniform(0.02, 0.08)) * scale
        side = SIDES[int(rng.integers(4))]
        centre = rng.uniform(-room, room)
        if kind in ("next_to", "next_to_ratio") and prev is not None:
            ratio = float(rng.uniform(-0.8, 0.8)) if kind == "next_to_ratio" else None
            o.add_relation(NextTo(prev, side=side, distance_m=gap, cross_position_ratio=ratio))
        elif kind == "not_next_to" and prev is not None:
            o.add_relation(NotNextTo(prev, side=side))
        elif kind == "align_with" and prev is not None:
            o.add_relation(AlignWith(prev, axis=("x", "y")[int(rng.integers(2))], offset_m=float(rng.uniform(-0.1, 0.1)),
                                     tolerance_m=0.02))
        elif kind == "at_position":
            o.add_relation(AtPosition(x=float(centre[0]), y=float(centre[1])))
        elif kind == "limits_box":
            o.add_relation(PositionLimitsBox(x_limits=(float(centre[0]) - 0.15, float(centre[0]) + 0.15),
                                             y_limits=(float(centre[1]) - 0.15, None)))
        elif kind == "limits_cylindrical":
            o.add_relation(PositionLimitsCylindrical(center_x=float(centre[0]), center_y=float(centre[1]),
                                                     radius_min=0.05, radius_max=0.3))
        elif kind == "face_to":
            o.add_relation(FaceTo(prev if prev is not None else t))
        elif kind == "rotate":
            o.add_relation(RotateAroundSolution(yaw_rad=float(rng.uniform(-math.pi, math.pi))))
        if kind != "on_overlap":
            prev, prev_size = o, size
    yaw = seed % 3 == 1
    return assets, yaw, used + (["random_yaw"] if yaw else [])

"""Footprint budget: the objects On one support must fit it by area, checked before the compile builds its
no_overlap pair tables (``compile_placement_problem`` runs it after sorting the scene).

The objects that stand directly On one support, at heights that must overlap, and that must not overlap each
other, need at least the sum of their smallest footprint areas inside the support's room (its box inset by the
edge margin). Every figure is a bound in the direction that keeps a refusal right (a proof, like the
feasibility pre-check in ``feasibility.py``, whose rotation model it shares): footprints are lower bounds over
the rotations an object may take and are shrunk by the checks' slack, the room is an upper bound grown by it.
Lengths are metres, areas m², env-local world frame.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from isaaclab_arena.relations.compiler.feasibility import EPS_M, _check_required, _turning, _Turning
from isaaclab_arena.relations.compiler.placement_restrictions import PlacementConfigError
from isaaclab_arena.relations.relations import ClutterOn, On
from isaaclab_arena.utils.pose_math import matrix_from_quat

#: Thresholds tried when choosing the objects of one support whose heights must overlap (at most this many).
FOOTPRINT_HEIGHT_LEVELS = 256


@dataclass(frozen=True)
class _Footprint:
    """One object directly On a support, as the footprint budget counts it: the least XY area (m²) and
    height (m) its no_overlap box can have, its largest extent (m), and its On clearance and edge margin."""

    name: str
    area: float
    height: float
    diag: float
    clearance: float
    margin: float


def _member_extents(asset) -> list[np.ndarray]:
    """The local box extents (x, y, z metres) of ``asset``, one per RigidObjectSet member."""
    members = getattr(asset, "objects", None) if hasattr(asset, "member_indices_per_env") else None
    boxes = [m.get_bounding_box() for m in members] if members else [asset.get_bounding_box()]
    return [np.asarray(b.max_point, np.float64) - np.asarray(b.min_point, np.float64) for b in boxes]


def footprint_floor(extent, turning: _Turning) -> tuple[float, float]:
    """(area m², height m): lower bounds of the XY area and the Z extent of the box the no_overlap check uses
    for an object of local ``extent`` turned as ``turning`` allows, at every rotation it may take.

    A BBOX pair is measured on the object's box turned about Z (an OBB) or on the axis-aligned box around the
    turned box; either contains the turned box, whose XY projection has area sum_k A_k |R[2, k]| (A_k: the
    area of the faces normal to local axis k) and whose Z extent is sum_k e_k |R[2, k]|. A world-Z yaw leaves
    row 2 of R unchanged, so an upright box keeps its own e_x * e_y footprint at every yaw. A roll/pitch range
    (any rotation): the smallest face area and the smallest side (the projection's |R[2, k]| sum to >= 1).
    """
    e = np.asarray(extent, np.float64)
    faces = np.array([e[1] * e[2], e[0] * e[2], e[0] * e[1]])
    if turning.any:
        return float(faces.min()), float(e.min())
    z = np.abs(matrix_from_quat(np.asarray(turning.base, np.float64))[2])
    if turning.yaw_hi > turning.yaw_lo and not (z[0] <= 1e-12 and z[1] <= 1e-12):
        return float(faces.min()), float(e.min())  # a drawn yaw on a tilted base: bounds for any rotation
    return float(faces @ z), float(e @ z)


def _support_extent(asset, turning: _Turning | None) -> tuple[float, float, bool]:
    """(largest world X extent, largest world Y extent, exact) of a support's box: a fixed support's world AABB
    (exact); a placed support's AABB at its base rotation, or, when it turns, the bound of every heading
    (its XY diagonal; its 3D diagonal under roll/pitch)."""
    wx = wy = 0.0
    for e in _member_extents(asset):
        if turning is None:  # fixed: its world pose's rotation
            rot = matrix_from_quat(np.asarray(asset.get_world_pose().rotation_xyzw, np.float64))
        elif turning.any:
            d = float(np.linalg.norm(e))
            wx, wy = max(wx, d), max(wy, d)
            continue
        else:
            rot = matrix_from_quat(np.asarray(turning.base, np.float64))
        world = np.abs(rot) @ e  # extents of the AABB around the turned box
        if turning is not None and turning.yaw_hi > turning.yaw_lo:
            d = float(math.hypot(world[0], world[1]))
            world = np.array([d, d, world[2]])
        wx, wy = max(wx, float(world[0])), max(wy, float(world[1]))
    members = hasattr(asset, "member_indices_per_env")
    return wx, wy, turning is None and not members


def _level_sets(objs: list[_Footprint], ztol: float, slack: float):
    """Subsets of ``objs`` whose heights must overlap pairwise by more than ``slack`` (so no_overlap must part
    them in XY): for a threshold H, the objects at least H tall whose On band (bottom within
    [top - ztol, top + clearance + ztol]) ends below H - 2 ztol - 3 slack. Yields index arrays."""
    h = np.array([o.height for o in objs])
    top = np.array([o.clearance for o in objs]) + 2.0 * ztol + 3.0 * slack
    levels = np.unique(h)
    if levels.size > FOOTPRINT_HEIGHT_LEVELS:
        levels = np.unique(np.quantile(levels, np.linspace(0.0, 1.0, FOOTPRINT_HEIGHT_LEVELS), method="lower"))
    for H in levels:
        yield np.nonzero((h >= H) & (top < H))[0]


def footprint_budget_violations(movables, fixed, placer_params) -> list[str]:
    """One line per support whose direct On children cannot all fit by area (empty: every support passes).

    Counted on a support: the placed objects with a required, non-``overlap`` On relation to it, in BBOX
    collision mode (a MESH object may tuck under or beside another's box), when ``on_relation`` and
    ``no_overlap`` are both required; an object also On / ClutterOn another counted object (an exempt pair)
    is left out, so are ClutterOn releases (they may be stacked above each other). Objects at other height
    levels (stacked on another object) are not the support's children; among the children, only a set whose
    heights must overlap is counted (``_level_sets``). The room is the support's box inset by the smallest
    edge margin of the counted objects. Every figure is a bound in the direction that keeps a refusal right:
    footprints shrunk and the room grown by the checks' slack. A single object larger than the room is left
    to the feasibility pre-check, which names its relation.
    """
    if not (_check_required("on_relation", placer_params) and _check_required("no_overlap", placer_params)):
        return []
    from isaaclab_arena.assets.collision_mode import CollisionMode
    from isaaclab_arena.relations.compiler.collision_geometry import effective_mode

    default_mode = placer_params.solver_params.collision_mode
    placed = {a.name for a in movables}
    turning = {a.name: _turning(a, placer_params.random_yaw_init) for a in movables}
    supports = {a.name: a for a in list(movables) + list(fixed)}
    children: dict[str, dict] = {}  # support -> {child name: (child, its first On relation to the support)}
    for a in movables:
        if effective_mode(a, default_mode) != CollisionMode.BBOX:
            continue
        for rel in a.get_relations_of(On):
            if not rel.overlap and rel.parent.name in supports:
                children.setdefault(rel.parent.name, {}).setdefault(a.name, (a, rel))
    out, cache = [], {}
    s, ztol = EPS_M, placer_params.on_relation_z_tolerance_m
    for name, kids in children.items():
        if len(kids) < 2:
            continue
        members = set(kids)
        objs = []
        for a, rel in kids.values():
            resting_on = {r.parent.name for r in a.get_relations_of(On) + a.get_relations_of(ClutterOn)}
            if (resting_on & members) - {a.name}:  # exempt from no_overlap with another counted object
                continue
            extents = _member_extents(a)
            floors = []
            for e in extents:  # scenes repeat their sizes
                key = (tuple(e.tolist()), turning[a.name])
                if key not in cache:
                    cache[key] = footprint_floor(e, turning[a.name])
                floors.append(cache[key])
            diag = max(math.sqrt(float(e @ e)) for e in extents)
            area = max(0.0, min(f[0] for f in floors) - 2.0 * s * diag)
            objs.append(_Footprint(a.name, area, min(f[1] for f in floors), diag, rel.clearance_m,
                                   rel.edge_margin_m))
        if len(objs) < 2:
            continue
        support = supports[name]
        wx, wy, exact = _support_extent(support, turning.get(name) if name in placed else None)
        worst = None
        for idx in _level_sets(objs, ztol, s):
            if idx.size < 2:
                continue
            margin = min(objs[k].margin for k in idx)
            rx, ry = max(wx - 2.0 * margin + 2.0 * s, 0.0), max(wy - 2.0 * margin + 2.0 * s, 0.0)
            need, room = math.fsum(objs[k].area for k in idx), rx * ry
            if need <= room or max(objs[k].area for k in idx) > room:
                continue
            ratio = need / room if room > 0.0 else math.inf
            if worst is None or ratio > worst[0]:
                worst = (ratio, int(idx.size), need, room, rx, ry, margin)
        if worst is None:
            continue
        ratio, count, need, room, rx, ry, margin = worst
        times = f"{ratio:.2f}x" if ratio < 1.1 else f"{ratio:.1f}x"
        out.append(f"the {count} objects On '{name}' need at least {need:.3f} m² of footprint (no_overlap between "
                   f"them) but its free area is {'' if exact else 'at most '}{room:.3f} m² ({rx:.3f} x {ry:.3f} m "
                   f"inside the {margin:g} m edge margins; {times}); use a larger support, fewer objects or smaller "
                   "ones")
    return out


def check_footprint_budget(movables, fixed, placer_params) -> None:
    """Raises ``PlacementConfigError`` (one line) when the objects On one support cannot fit it by area
    (``footprint_budget_violations``); run before the compile builds its pair tables."""
    found = footprint_budget_violations(movables, fixed, placer_params)
    if found:
        more = f" (and {len(found) - 1} other support(s) too)" if len(found) > 1 else ""
        raise PlacementConfigError(found[0] + more)

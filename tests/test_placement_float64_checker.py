"""An independent float64 checker (numpy, written from the relations reference, not from the kernels)
never rejects a layout the solver calls valid, and does reject hand-broken ones. It covers every
relation kind: the checked ones (On, ClutterOn, NextTo, NotNextTo, AlignWith, FaceTo, no_overlap) and
the solver objectives (AtPosition, PositionLimitsBox, PositionLimitsCylindrical), which a solved layout
must also meet."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest
import torch

from isaaclab_arena.assets.asset import Background
from isaaclab_arena.relations.object_placer import ObjectPlacer
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.relations.relations import (
    AlignWith,
    AtPosition,
    ClutterOn,
    FaceTo,
    NextTo,
    NotNextTo,
    On,
    PositionLimitsBox,
    PositionLimitsCylindrical,
)
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams
from isaaclab_arena.benchmarks.scenes import SCENES, on_table, table

from _random_scenes import KINDS as RANDOM_KINDS, random_scene

TOL = 2e-6
OBJECTIVE_TOL = 1e-4  # objectives (no check) are met to this, metres
Z_TOL = 5e-3
NOT_NEXT_TO_MARGIN = 0.1


def rot_matrix(q):
    x, y, z, w = (float(v) for v in q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]], dtype=np.float64)


def world_box(asset, pos, quat):
    bb = asset.get_bounding_box()
    corners = np.array(list(itertools.product(*zip(bb.min_point, bb.max_point))), dtype=np.float64)
    pts = corners @ rot_matrix(quat).T + np.asarray(pos, dtype=np.float64)
    return pts.min(0), pts.max(0)


def yaw_only(quat) -> bool:
    return abs(float(quat[0])) < 1e-6 and abs(float(quat[1])) < 1e-6


def pair_depth(a, pa, qa, b, pb, qb) -> float:
    """Penetration depth (m, <= 0 apart or touching) of two assets' boxes at their poses, float64: boxes that
    only turn about Z are tested as rotated rectangles (separating axes: each box's two edge directions) plus
    their Z extent; an object with roll/pitch or RandomAroundSolution uses the axis-aligned box around its
    rotated box (the reference: roll/pitch keep the AABB)."""
    if not (yaw_only(qa) and yaw_only(qb)) or a.random_around_solution is not None or (
            b.random_around_solution is not None):
        (alo, ahi), (blo, bhi) = world_box(a, pa, qa), world_box(b, pb, qb)
        return min(min(ahi[k], bhi[k]) - max(alo[k], blo[k]) for k in range(3))
    boxes = []
    for asset, pos, quat in ((a, pa, qa), (b, pb, qb)):
        bb = asset.get_bounding_box()
        lo, hi = np.asarray(bb.min_point, np.float64), np.asarray(bb.max_point, np.float64)
        r = rot_matrix(quat)
        boxes.append((r @ ((lo + hi) / 2) + np.asarray(pos, np.float64), (hi - lo) / 2, r[:2, :2]))
    (ca, ha, ra), (cb, hb, rb) = boxes
    depth = ha[2] + hb[2] - abs(ca[2] - cb[2])
    for axis in (ra[:, 0], ra[:, 1], rb[:, 0], rb[:, 1]):
        radius = sum(half[k] * abs(axis @ r[:, k]) for half, r in ((ha, ra), (hb, rb)) for k in range(2))
        depth = min(depth, radius - abs(axis @ (ca[:2] - cb[:2])))
    return depth


def check_layout(assets, positions: dict, rotations: dict, objective_tol: float = OBJECTIVE_TOL,
                 clearance_m: float | None = None) -> list[str]:
    """Failures (empty: valid) of one layout, float64. AtPosition and the position limits are met within
    ``objective_tol``; with ``clearance_m``, every pair of placed objects (not an On / ClutterOn pair) is
    also kept that far apart along some axis (a NextTo pair: min(clearance_m, distance_m))."""
    boxes = {}
    for a in assets:
        if a.name in positions:
            boxes[a.name] = world_box(a, positions[a.name], rotations[a.name])
        elif a.is_anchor or (a.initial_pose is not None and not a.get_relations()):
            p = a.get_world_pose()
            boxes[a.name] = world_box(a, p.position_xyz, p.rotation_xyzw)
    fails = []
    exempt = set()
    pair_clearance = {}
    for a in assets:
        if a.name not in positions:
            continue
        lo, hi = boxes[a.name]
        for rel in a.get_relations():
            if isinstance(rel, On):
                exempt.add(frozenset((a.name, rel.parent.name)))
                plo, phi = boxes[rel.parent.name]
                for k in range(2):
                    if rel.overlap:
                        bad = hi[k] < plo[k] - TOL or lo[k] > phi[k] + TOL
                    else:
                        bad = lo[k] < plo[k] + rel.edge_margin_m - TOL or hi[k] > phi[k] - rel.edge_margin_m + TOL
                    if bad:
                        fails.append(f"on {a.name} axis {k}")
                if not (phi[2] - Z_TOL - TOL < lo[2] <= phi[2] + rel.clearance_m + Z_TOL + TOL):
                    fails.append(f"on {a.name} z {lo[2]} top {phi[2]}")
            elif isinstance(rel, NextTo):
                key = frozenset((a.name, rel.parent.name))
                pair_clearance[key] = min(pair_clearance.get(key, np.inf), rel.distance_m)
                plo, phi = boxes[rel.parent.name]
                k, s = rel.side.axis_index, rel.side.sign
                c = (lo + hi) / 2
                gap = lo[k] - phi[k] if s > 0 else plo[k] - hi[k]
                side_miss = phi[k] - c[k] if s > 0 else c[k] - plo[k]
                cross_miss = max(plo[1 - k] - c[1 - k], c[1 - k] - phi[1 - k])
                if side_miss > rel.tolerance_m + TOL or cross_miss > rel.tolerance_m + TOL:
                    fails.append(f"next_to side {a.name}")
                if gap < rel.distance_m - TOL or gap > rel.distance_m + rel.tolerance_m + TOL:
                    fails.append(f"next_to gap {a.name} {gap}")
            elif isinstance(rel, NotNextTo):
                plo, phi = boxes[rel.parent.name]
                k, s = rel.side.axis_index, rel.side.sign
                past = hi[k] - phi[k] if s > 0 else plo[k] - lo[k]
                lateral = min(hi[1 - k] - (plo[1 - k] - NOT_NEXT_TO_MARGIN), (phi[1 - k] + NOT_NEXT_TO_MARGIN) - lo[1 - k])
                if min(past, lateral) > rel.tolerance_m + TOL:
                    fails.append(f"not_next_to {a.name}")
            elif isinstance(rel, AlignWith):
                plo, phi = boxes[rel.parent.name]
                k = rel.axis.index
                err = (lo[k] + hi[k]) / 2 - (plo[k] + phi[k]) / 2 - rel.offset_m
                if abs(err) > rel.tolerance_m + TOL:
                    fails.append(f"align_with {a.name}")
            elif isinstance(rel, ClutterOn):
                exempt.add(frozenset((a.name, rel.parent.name)))
                plo, phi = boxes[rel.parent.name]
                c, h = (plo + phi) / 2, rel.spread * (phi - plo) / 2 - rel.edge_margin_m
                for k in range(2):
                    if lo[k] < c[k] - h[k] - TOL or hi[k] > c[k] + h[k] + TOL:
                        fails.append(f"clutter_on {a.name} axis {k}")
                if lo[2] < phi[2] + rel.clearance_m - 1e-6 or lo[2] < phi[2]:
                    fails.append(f"clutter_on {a.name} z {lo[2]} top {phi[2]}")
            elif isinstance(rel, AtPosition):
                for k, v in enumerate((rel.x, rel.y, rel.z)):
                    if v is not None and abs(positions[a.name][k] - v) > objective_tol:
                        fails.append(f"at_position {a.name} axis {k}")
            elif isinstance(rel, PositionLimitsBox):
                for k, (vmin, vmax) in enumerate((rel.x_limits, rel.y_limits, rel.z_limits)):
                    p = positions[a.name][k]
                    if (vmin is not None and p < vmin - objective_tol) or (vmax is not None and p > vmax + objective_tol):
                        fails.append(f"position_limits_box {a.name} axis {k}")
            elif isinstance(rel, PositionLimitsCylindrical):
                r = np.hypot(positions[a.name][0] - rel.center_x, positions[a.name][1] - rel.center_y)
                if (rel.radius_min is not None and r < rel.radius_min - objective_tol) or (
                        rel.radius_max is not None and r > rel.radius_max + objective_tol):
                    fails.append(f"position_limits_cylindrical {a.name} r {r}")
            elif isinstance(rel, FaceTo):
                tlo, thi = boxes[rel.parent.name]
                d = np.hypot((tlo[0] + thi[0]) / 2 - positions[a.name][0], (tlo[1] + thi[1]) / 2 - positions[a.name][1])
                if d < 1e-6:
                    fails.append(f"face_to {a.name}")
    by_name = {a.name: a for a in assets}

    def pose(name):
        if name in positions:
            return positions[name], rotations[name]
        p = by_name[name].get_world_pose()
        return p.position_xyz, p.rotation_xyzw

    colliders = [a.name for a in assets if a.name in boxes and not isinstance(a, Background)]
    for m, n in itertools.combinations(colliders, 2):
        if m not in positions and n not in positions:
            continue
        if frozenset((m, n)) in exempt:
            continue
        depth = pair_depth(by_name[m], *pose(m), by_name[n], *pose(n))
        if depth > TOL:
            fails.append(f"overlap {m} {n} {depth}")
        if clearance_m is not None and m in positions and n in positions:
            need = min(clearance_m, pair_clearance.get(frozenset((m, n)), np.inf))
            if depth + need > TOL:  # the largest gap along an axis is -depth
                fails.append(f"clearance {m} {n} gap {-depth} < {need}")
    return fails


@pytest.mark.parametrize("scene,yaw", [("boxes10", False), ("mug_bowl", True), ("crowded14", False),
                                       ("crowded14", True), ("all_relations", False), ("clutter", False),
                                       ("clutter_bin", False)])
def test_checker_never_rejects_a_valid_layout(scene, yaw):
    assets = SCENES[scene]()
    pl = ObjectPlacer(ObjectPlacerParams(placement_seed=21, random_yaw_init=yaw))
    n = 96
    batch = pl.place_batch(assets, torch.arange(n) % 8, torch.arange(n) // 8, num_envs=8)
    valid = torch.nonzero(batch.passed).flatten().tolist()
    assert len(valid) >= 0.9 * n
    for cand in (batch.candidates[b] for b in valid):
        assert check_layout(assets, cand.positions, cand.rotations) == []


def test_checker_is_not_vacuous():
    assets = SCENES["mug_bowl"]()
    pl = ObjectPlacer(ObjectPlacerParams(placement_seed=1))
    cand = pl.place_batch(assets, [0], [0], num_envs=1).candidates[0]
    assert check_layout(assets, cand.positions, cand.rotations) == []
    moved = dict(cand.positions)
    moved["bowl"] = (moved["mug"][0] + 0.05, moved["mug"][1], moved["bowl"][2])
    fails = check_layout(assets, moved, cand.rotations)
    assert any(f.startswith("next_to gap") for f in fails) and any(f.startswith("overlap") for f in fails)


def test_checker_rejects_broken_clutter_and_missed_objectives():
    clutter = SCENES["clutter_bin"]()
    cand = ObjectPlacer(ObjectPlacerParams(placement_seed=1)).place_batch(clutter, [0], [0], num_envs=1).candidates[0]
    assert check_layout(clutter, cand.positions, cand.rotations) == []
    low = dict(cand.positions)
    low["cube0"] = (low["cube0"][0], low["cube0"][1], 0.15 + 0.025 - 1e-3)  # 1 mm into the rim clearance
    wide = dict(cand.positions)
    wide["cube1"] = (0.09, wide["cube1"][1], wide["cube1"][2])  # central half of 0.4 m: |x| + 0.025 <= 0.1
    assert any(f.startswith("clutter_on cube0 z") for f in check_layout(clutter, low, cand.rotations))
    assert any(f.startswith("clutter_on cube1 axis 0") for f in check_layout(clutter, wide, cand.rotations))
    scene = SCENES["all_relations"]()
    cand = ObjectPlacer(ObjectPlacerParams(placement_seed=1)).place_batch(scene, [0], [0], num_envs=1).candidates[0]
    assert check_layout(scene, cand.positions, cand.rotations) == []
    moved = dict(cand.positions)
    moved["plate"] = (-0.25, 0.0, moved["plate"][2])  # AtPosition x=-0.3
    moved["camera"] = (0.3, 0.0, moved["camera"][2])  # inside radius_min around (0.3, 0)
    moved["board"] = (0.4, moved["board"][1], moved["board"][2])  # x_limits (0.5, None)
    fails = check_layout(scene, moved, cand.rotations)
    for prefix in ("at_position plate", "position_limits_cylindrical camera", "position_limits_box board"):
        assert any(f.startswith(prefix) for f in fails), (prefix, fails)


# ------------------------------------------------------------------------------ randomly generated scenes
NEW_CHECKS = ("position_limits", "at_position", "clearance")
@functools.lru_cache(maxsize=None)
def solved_random_scene(seed: int):
    """(assets, what it uses, the candidates marked valid) of random scene ``seed``: 8 envs x 8 draws."""
    assets, yaw, used = random_scene(seed)
    pl = ObjectPlacer(ObjectPlacerParams(placement_seed=seed, random_yaw_init=yaw,
                                         solver_params=RelationSolverParams(verbose=False)))
    batch = pl.place_batch(assets, torch.arange(64) % 8, torch.arange(64) // 8, num_envs=8)
    valid = [batch.candidates[b] for b in torch.nonzero(batch.passed).flatten().tolist()]
    return assets, tuple(used), valid, pl.params.solver_params.clearance_m


RANDOM_SEEDS = range(12)


@pytest.mark.parametrize("seed", RANDOM_SEEDS)
def test_random_scene_valid_layouts_pass_every_relation_in_float64(seed):
    assets, used, valid, _ = solved_random_scene(seed)
    for cand in valid:
        fails = [f for f in check_layout(assets, cand.positions, cand.rotations, objective_tol=np.inf)]
        assert fails == [], (seed, used, cand.env_id, cand.sample_id, fails)


@pytest.mark.parametrize("seed", RANDOM_SEEDS)
def test_random_scene_valid_layouts_meet_limits_positions_and_clearance_in_float64(seed):
    assets, used, valid, clearance = solved_random_scene(seed)
    for cand in valid:
        fails = check_layout(assets, cand.positions, cand.rotations, objective_tol=TOL, clearance_m=clearance)
        assert fails == [], (seed, used, cand.env_id, cand.sample_id, fails)


def test_random_scenes_cover_every_relation_kind():
    """The re-check is not vacuous: most candidates are valid, and every kind is in a scene with valid ones."""
    covered, valid_total = set(), 0
    for seed in RANDOM_SEEDS:
        _, used, valid, _ = solved_random_scene(seed)
        valid_total += len(valid)
        if valid:
            covered.update(used)
    assert covered == set(RANDOM_KINDS) | {"random_yaw"}, sorted(set(RANDOM_KINDS) | {"random_yaw"} - covered)
    assert valid_total >= 0.75 * 64 * len(RANDOM_SEEDS), valid_total


def test_checker_rejects_limits_positions_and_clearance_at_the_check_slack():
    t = table()
    a = on_table(t, "a", (0.1, 0.1, 0.1), PositionLimitsBox(x_limits=(None, 0.0)), AtPosition(y=0.2))
    b = on_table(t, "b", (0.1, 0.1, 0.1), PositionLimitsCylindrical(center_x=0.3, center_y=0.0, radius_max=0.05))
    c = on_table(t, "c", (0.1, 0.1, 0.1), NextTo(b, side="positive_x", distance_m=0.004, tolerance_m=0.01))
    rot = {n: (0.0, 0.0, 0.0, 1.0) for n in "abc"}
    z = 0.75 + 0.01 + 0.05
    good = {"a": (0.0, 0.2, z), "b": (0.3, 0.0, z), "c": (0.404, 0.0, z)}  # c is 4 mm from b: its NextTo gap
    assert check_layout([t, a, b, c], good, rot, objective_tol=TOL, clearance_m=0.01) == []
    for name, pos, prefix in (("a", (1e-5, 0.2, z), "position_limits_box a"), ("a", (0.0, 0.2 + 1e-5, z), "at_position a"),
                              ("b", (0.35 + 1e-5, 0.0, z), "position_limits_cylindrical b")):
        fails = check_layout([t, a, b, c], {**good, name: pos}, rot, objective_tol=TOL, clearance_m=0.01)
        assert any(f.startswith(prefix) for f in fails), (prefix, fails)
    # 9 mm apart (no NextTo between them): no overlap, but inside the 1 cm clearance
    near = {**good, "a": (0.3 - 0.109, 0.0, z)}
    fails = check_layout([t, a, b, c], near, rot, objective_tol=np.inf, clearance_m=0.01)
    assert fails and all(f.startswith("clearance a b") for f in fails), fails
    assert check_layout([t, a, b, c], near, rot, objective_tol=np.inf) == []

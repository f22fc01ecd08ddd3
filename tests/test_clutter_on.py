"""ClutterOn: release poses on a table, in a bin and on a relation-placed
tray; every parameter changes the outcome; the clutter_on_relation check rejects hand-built violating
releases with the amount. Lengths in metres, env-local world frame."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from isaaclab_arena.assets.collision_mode import CollisionMode
from isaaclab_arena.relations.object_placer import ObjectPlacer
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.relations.compiler.placement_restrictions import PlacementConfigError
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams
from isaaclab_arena.relations.relations import AtPosition, ClutterOn, On, RotateAroundSolution
from isaaclab_arena.benchmarks.scenes import BIN_SIZE, TABLE_SIZE, bin_clutter_scene, clutter_scene, cuboid, table
from isaaclab_arena.relations.diagnostics.placement_diagnostics import rejection_records

TOP = TABLE_SIZE[2]
ENVS = 16


def place_batch(assets, envs=ENVS, draws=2, **kw):
    kw.setdefault("placement_seed", 3)
    pl = ObjectPlacer(ObjectPlacerParams(**kw))
    e = torch.arange(envs * draws) % envs
    d = torch.arange(envs * draws) // envs
    return pl.place_batch(assets, e, d, num_envs=envs)


def boxes(batch):
    """(lo, hi) world AABBs (B, n, 3) of the released objects, float64."""
    lo, hi = batch.bounds
    return lo.double(), hi.double()


def region(spread, margin, support=TABLE_SIZE):
    hx, hy = 0.5 * spread * support[0] - margin, 0.5 * spread * support[1] - margin
    return hx, hy


def assert_inside(batch, hx, hy, cx=0.0, cy=0.0):
    lo, hi = boxes(batch)
    assert float((cx - hx - lo[..., 0]).max()) <= 1e-5 and float((hi[..., 0] - cx - hx).max()) <= 1e-5
    assert float((cy - hy - lo[..., 1]).max()) <= 1e-5 and float((hi[..., 1] - cy - hy).max()) <= 1e-5


def reach(batch, cx=0.0, cy=0.0):
    """Farthest footprint extent from the region centre along x and y."""
    lo, hi = boxes(batch)
    return (float(torch.maximum(hi[..., 0] - cx, cx - lo[..., 0]).max()),
            float(torch.maximum(hi[..., 1] - cy, cy - lo[..., 1]).max()))


def _turned_gap(batch, i: int, j: int) -> torch.Tensor:
    """(B,) largest gap (m) between the boxes of objects i and j along their own edge directions (the boxes
    turn about Z only: random yaw), float64: the separating axes the no_overlap / clearance checks use."""
    names = batch.object_names
    sizes = [torch.tensor(batch.solved.problem.local_hi[0, k].tolist(), dtype=torch.float64)
             - torch.tensor(batch.solved.problem.local_lo[0, k].tolist(), dtype=torch.float64) for k in (i, j)]
    assert len(names) > max(i, j)
    q = batch.rotations.double()
    yaw = [torch.atan2(2 * (q[:, k, 3] * q[:, k, 2] + q[:, k, 0] * q[:, k, 1]), 1 - 2 * (q[:, k, 1] ** 2 + q[:, k, 2] ** 2))
           for k in (i, j)]
    lo, hi = boxes(batch)
    d = (0.5 * (lo[:, i] + hi[:, i]) - 0.5 * (lo[:, j] + hi[:, j]))[:, :2]
    best = torch.full((q.shape[0],), -1e9, dtype=torch.float64)
    axes = [(torch.cos(y), torch.sin(y)) for y in yaw] + [(-torch.sin(y), torch.cos(y)) for y in yaw]
    for nx, ny in axes:
        r = sum(0.5 * sz[0] * torch.abs(nx * torch.cos(y) + ny * torch.sin(y))
                + 0.5 * sz[1] * torch.abs(-nx * torch.sin(y) + ny * torch.cos(y)) for sz, y in zip(sizes, yaw))
        best = torch.maximum(best, torch.abs(nx * d[:, 0] + ny * d[:, 1]) - r)
    return best


def neighbour_separation(batch):
    """Per candidate and pair: the largest gap along some axis (negative = intersecting): the world axes of
    the rotated AABBs (the release stacking separates those) or the boxes' own edge directions (the solver's
    clearance, which tests boxes turned about Z as such)."""
    lo, hi = boxes(batch)
    n = lo.shape[1]
    seps = []
    for i in range(n):
        for j in range(i + 1, n):
            gap = torch.maximum(lo[:, j] - hi[:, i], lo[:, i] - hi[:, j])  # (B, 3)
            seps.append(torch.maximum(gap.max(dim=1).values, _turned_gap(batch, i, j)))
    return torch.stack(seps, 1)


# ------------------------------------------------------------------------------------------- solving
def test_table_releases_fit_the_central_region_clear_the_top_and_stack():
    batch = place_batch(clutter_scene(8, spread=0.4))
    assert bool(batch.passed.all())
    assert_inside(batch, *region(0.4, 0.0))
    lo, hi = boxes(batch)
    assert float(lo[..., 2].min()) >= TOP + 0.01 - 1e-6
    # overlapping release footprints are raised, not rejected: some releases sit on others
    assert float(lo[..., 2].max()) > TOP + 0.1
    # gap_m (0.03 default > solver clearance 0.01) between neighbouring release bounds
    assert float(neighbour_separation(batch).min()) >= 0.03 - 1e-5


def test_spread_changes_the_release_region():
    narrow = place_batch(clutter_scene(3, spread=0.2))
    wide = place_batch(clutter_scene(3, spread=0.8))
    assert bool(narrow.passed.all()) and bool(wide.passed.all())
    assert_inside(narrow, *region(0.2, 0.0))
    assert_inside(wide, *region(0.8, 0.0))
    assert reach(wide)[0] > region(0.2, 0.0)[0] + 0.1  # the wide region is used


def test_clearance_m_sets_the_lowest_release():
    for clearance in (0.0, 0.05):
        batch = place_batch(clutter_scene(3, spread=0.8, clearance_m=clearance))
        lo, _ = boxes(batch)
        assert bool(batch.passed.all())
        assert float(lo[..., 2].min()) >= TOP + clearance - 1e-6
        assert float(lo[..., 2].min()) <= TOP + clearance + 1e-4  # the lowest releases sit at the clearance


def test_gap_m_and_the_solver_clearance_separate_neighbours():
    tight = place_batch(clutter_scene(6, spread=0.3, gap_m=0.0), solver_params=RelationSolverParams(clearance_m=0.0))
    gap = place_batch(clutter_scene(6, spread=0.3, gap_m=0.08))
    by_solver = place_batch(clutter_scene(6, spread=0.3, gap_m=0.0),
                            solver_params=RelationSolverParams(clearance_m=0.06))
    for b in (tight, gap, by_solver):
        assert bool(b.passed.all())
    assert float(neighbour_separation(gap).min()) >= 0.08 - 1e-5
    assert float(neighbour_separation(by_solver).min()) >= 0.06 - 1e-5  # the larger of gap_m and clearance_m
    assert float(neighbour_separation(tight).min()) < 0.03
    # a larger gap stacks higher
    assert float(boxes(gap)[1][..., 2].max()) > float(boxes(tight)[1][..., 2].max()) + 0.05


def test_edge_margin_m_insets_the_region():
    plain = place_batch(clutter_scene(4, spread=0.6))
    inset = place_batch(clutter_scene(4, spread=0.6, edge_margin_m=0.08))
    assert bool(inset.passed.all())
    assert_inside(inset, *region(0.6, 0.08))
    assert reach(plain)[0] > region(0.6, 0.08)[0] + 0.01


def test_random_yaw_rotates_and_the_rotated_footprint_fits():
    t = table()
    stick = cuboid("stick", (0.30, 0.03, 0.03))  # fits the 0.36 x 0.24 m region only at some headings
    stick.add_relation(ClutterOn(t, spread=0.3))
    batch = place_batch([t, stick], envs=32, draws=1)
    assert bool(batch.passed.all())  # each try draws a fresh heading until the footprint fits
    assert_inside(batch, *region(0.3, 0.0))
    q = batch.rotations[:, 0]
    yaws = torch.atan2(2 * q[:, 3] * q[:, 2], 1 - 2 * q[:, 2] ** 2)
    assert len({round(float(y), 3) for y in yaws}) == 32
    fixed = place_batch([t, _clutter_copy(stick, t, random_yaw=False)], envs=8, draws=1)
    assert torch.allclose(fixed.rotations[:, 0], torch.tensor([0.0, 0.0, 0.0, 1.0]).expand(8, 4))


def _clutter_copy(obj, support, **kw):
    c = cuboid(obj.name, obj.get_bounding_box().size)
    c.add_relation(ClutterOn(support, spread=0.3, **kw))
    return c


def test_random_yaw_on_top_of_rotate_around_solution_keeps_its_tilt():
    t = table()
    lying = cuboid("lying", (0.04, 0.04, 0.16))
    lying.add_relation(ClutterOn(t, spread=0.5))
    lying.add_relation(RotateAroundSolution(roll_rad=math.pi / 2))  # lies on its side
    batch = place_batch([t, lying], envs=16, draws=1)
    assert bool(batch.passed.all())
    from isaaclab_arena.utils.pose_math import matrix_from_quat

    r = matrix_from_quat(batch.rotations[:, 0].double())
    world_z_in_body = r[:, 2, :]  # row 2 of R = R^T e_z: the body's local +Y points up, as rolled
    assert torch.allclose(world_z_in_body, torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64).expand(16, 3),
                          atol=1e-5)
    assert float(r[:, 0, 2].std()) > 0.1  # headings differ
    lo, hi = boxes(batch)
    assert torch.allclose(hi[:, 0, 2] - lo[:, 0, 2], torch.full((16,), 0.04, dtype=torch.float64), atol=1e-5)


def test_roll_or_pitch_needs_bbox_collision():
    t = table()
    lying = cuboid("lying", (0.04, 0.04, 0.16))
    lying.collision_mode = CollisionMode.MESH
    lying.add_relation(ClutterOn(t, spread=0.5))
    lying.add_relation(RotateAroundSolution(pitch_rad=0.3))
    with pytest.raises(PlacementConfigError, match="roll or pitch on a ClutterOn object requires collision_mode='bbox'"):
        ObjectPlacer().place([t, lying])


def test_bin_releases_are_above_the_rim_inside_the_central_region():
    batch = place_batch(bin_clutter_scene(4))
    assert bool(batch.passed.all())
    assert_inside(batch, *region(0.5, 0.0, BIN_SIZE))
    lo, _ = boxes(batch)
    assert float(lo[..., 2].min()) >= BIN_SIZE[2] + 0.01 - 1e-6  # above the rim; physics drops them inside
    assert float(neighbour_separation(batch).min()) >= 0.03 - 1e-5


def test_relation_placed_tray_carries_its_clutter():
    t = table()
    tray = cuboid("tray", (0.3, 0.2, 0.02))
    tray.add_relation(On(t))
    tray.add_relation(AtPosition(x=0.35, y=-0.15))
    cups = []
    for k in range(3):
        c = cuboid(f"cup{k}", (0.05, 0.05, 0.06))
        c.add_relation(ClutterOn(tray, spread=0.8))
        cups.append(c)
    batch = place_batch([t, tray] + cups)
    assert bool(batch.passed.all())
    lo, hi = batch.bounds
    tray_top = float(hi[0, 0, 2])
    assert tray_top == pytest.approx(TOP + 0.01 + 0.02, abs=1e-5)
    cup_lo, cup_hi = lo[:, 1:].double(), hi[:, 1:].double()
    assert float(cup_lo[..., 2].min()) >= tray_top + 0.01 - 1e-6
    hx, hy = 0.4 * 0.3, 0.4 * 0.2
    assert float((0.35 - hx - cup_lo[..., 0]).max()) <= 1e-5 and float((cup_hi[..., 0] - 0.35 - hx).max()) <= 1e-5
    assert float((-0.15 - hy - cup_lo[..., 1]).max()) <= 1e-5 and float((cup_hi[..., 1] + 0.15 - hy).max()) <= 1e-5


def test_clutter_too_large_for_its_region_is_refused_before_solving():
    t = table()
    big = cuboid("big", (0.30, 0.30, 0.05))  # the central 20 % of the table is 0.24 x 0.16 m
    big.add_relation(ClutterOn(t))
    with pytest.raises(PlacementConfigError, match=r"'big' \(0.300 x 0.300 m footprint\) does not fit the central "
                                                   r"spread=0.2 release region of 0.240 x 0.160 m"):
        ObjectPlacer().place([t, big])
    fixed = cuboid("fixed", (0.20, 0.10, 0.05))
    fixed.add_relation(ClutterOn(t, random_yaw=False))
    fixed.add_relation(RotateAroundSolution(yaw_rad=math.pi / 2))  # 0.2 m along y > 0.16 m
    with pytest.raises(PlacementConfigError, match="'fixed' is 0.200 m along y .as rotated by its RotateAround"):
        ObjectPlacer().place([t, fixed])


# ------------------------------------------------------------------------------------ the check
def _one_cube(clearance=0.01, **kw):
    t = table()
    c = cuboid("c", (0.04, 0.04, 0.04))
    c.add_relation(ClutterOn(t, spread=0.2, clearance_m=clearance, random_yaw=False, **kw))
    return [t, c]


def _check(assets, z_bottom, x=0.0, **kw):
    batch = ObjectPlacer(ObjectPlacerParams(**kw)).validate_poses(assets, {"c": (x, 0.0, z_bottom + 0.02)})
    recs = [r for r in rejection_records(batch) if r.check == "clutter_on_relation"]
    return bool(batch.check_results["clutter_on_relation"][0]), recs


def test_check_rejects_a_footprint_outside_the_region_with_the_amount():
    ok, recs = _check(_one_cube(), TOP + 0.05, x=0.11)  # right edge 0.13 > 0.12
    assert not ok and "'c' clutter_on(table): outside the release region" == recs[0].cause
    assert recs[0].violation_m == pytest.approx(0.01, abs=1e-5)
    ok, recs = _check(_one_cube(edge_margin_m=0.02), TOP + 0.05, x=0.09)  # inside 0.12, outside 0.12 - 0.02
    assert not ok and recs[0].violation_m == pytest.approx(0.01, abs=1e-5)
    assert _check(_one_cube(edge_margin_m=0.02), TOP + 0.05, x=0.07)[0]


def test_check_clearance_has_1um_slack_and_no_z_tolerance():
    assert _check(_one_cube(0.01), TOP + 0.01 - 0.5e-6)[0]  # within 1 um of the clearance
    ok, recs = _check(_one_cube(0.01), TOP + 0.01 - 0.003)  # 3 mm short: On's 5 mm z tolerance does not apply
    assert not ok and "too little clearance" in recs[0].cause
    assert recs[0].violation_m == pytest.approx(0.003, abs=2e-6)
    assert not _check(_one_cube(0.01), TOP + 0.007, on_relation_z_tolerance_m=0.05)[0]
    assert _check(_one_cube(0.01), TOP + 2.0)[0]  # no upper limit, no contact required


def test_check_never_accepts_penetration_below_the_top():
    assert _check(_one_cube(0.0), TOP)[0]  # resting exactly on the top
    ok, recs = _check(_one_cube(0.0), TOP - 4e-6)  # the slack does not reach below the top
    assert not ok and recs[0].violation_m == pytest.approx(5e-6, abs=1e-6)


def test_independent_float64_check_of_solved_clutter():
    """A float64 recomputation of the rules for every solved release (table, bin)."""
    for assets, support in ((clutter_scene(8, spread=0.4), TABLE_SIZE), (bin_clutter_scene(4), BIN_SIZE)):
        batch = place_batch(assets)
        rel = assets[1].get_relations_of(ClutterOn)[0]
        lo, hi = boxes(batch)
        lo, hi = lo.numpy().astype(np.float64), hi.numpy().astype(np.float64)
        hx, hy = region(rel.spread, rel.edge_margin_m, support)
        good = batch.passed.numpy()
        assert good.all()
        assert (lo[..., 0] >= -hx - 2e-6).all() and (hi[..., 0] <= hx + 2e-6).all()
        assert (lo[..., 1] >= -hy - 2e-6).all() and (hi[..., 1] <= hy + 2e-6).all()
        assert (lo[..., 2] >= support[2] + rel.clearance_m - 1e-6).all()


def test_clutter_layout_independent_of_batch_size():
    scene = clutter_scene(6, spread=0.3)
    many = place_batch(scene, envs=8, draws=4)
    one = ObjectPlacer(ObjectPlacerParams(placement_seed=3)).place_batch(scene, [5], [3], num_envs=8)
    k = 3 * 8 + 5
    assert torch.equal(one.positions[0], many.positions[k]) and torch.equal(one.rotations[0], many.rotations[k])

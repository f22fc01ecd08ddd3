"""Every relation kind and check: a solved layout satisfies it, a hand-built layout violating it is
rejected with the violation amount (metres)."""

from __future__ import annotations

import math

import pytest
import torch

from isaaclab_arena.relations.object_placer import ObjectPlacer
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams
from isaaclab_arena.relations.relations import (
    AlignWith,
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
from isaaclab_arena.benchmarks.scenes import cuboid, on_table, table
from isaaclab_arena.relations.diagnostics.placement_diagnostics import rejection_records
from isaaclab_arena.utils.pose import Pose

TOP = 0.75


def placer(**kw) -> ObjectPlacer:
    kw.setdefault("placement_seed", 11)
    kw.setdefault("max_placement_attempts", 4)
    return ObjectPlacer(ObjectPlacerParams(**kw))


def solve(assets, num_envs=4, **kw):
    res = placer(**kw).place(assets, num_envs=num_envs)
    assert all(r.success for r in res), [r.rejections for r in res if not r.success]
    return res


def reject(assets, positions, rotations=None, **kw):
    """Validates one hand-built layout; returns (check verdicts, rejection records)."""
    pl = placer(**kw)
    batch = pl.validate_poses(assets, positions, rotations)
    return {c: bool(v[0]) for c, v in batch.check_results.items()}, rejection_records(batch)


def one(records, check):
    found = [r for r in records if r.check == check]
    assert found, f"no {check} rejection in {records}"
    return found[0]


# ------------------------------------------------------------------------------------------------ On
def test_on_solved_rests_on_top_inside_margin():
    t = table()
    box = cuboid("box", (0.1, 0.2, 0.05))
    box.add_relation(On(t, clearance_m=0.01, edge_margin_m=0.05))
    for r in solve([t, box]):
        x, y, z = r.positions["box"]
        assert abs(z - 0.025 - (TOP + 0.01)) < 1e-5
        assert -0.6 + 0.05 + 0.05 - 1e-6 <= x <= 0.6 - 0.05 - 0.05 + 1e-6
        assert -0.4 + 0.05 + 0.1 - 1e-6 <= y <= 0.4 - 0.05 - 0.1 + 1e-6


def test_on_rejects_footprint_outside_and_floating():
    t = table()
    box = on_table(t, "box", (0.1, 0.1, 0.1))
    # x centre 0.5: right edge at 0.55 > 0.6 - 0.05 = 0.55 + 0.02 beyond -> 0.02 m outside
    ok, recs = reject([t, box], {"box": (0.52, 0.0, TOP + 0.05 + 0.01)})
    assert not ok["on_relation"]
    r = one(recs, "on_relation")
    assert "footprint outside the support" in r.cause and r.violation_m == pytest.approx(0.02, abs=1e-5)
    # 3 cm above the band top (top + clearance + z tol 5 mm)
    ok, recs = reject([t, box], {"box": (0.0, 0.0, TOP + 0.05 + 0.01 + 0.005 + 0.03)})
    r = one(recs, "on_relation")
    assert "above the support top" in r.cause and r.violation_m == pytest.approx(0.03, abs=1e-5)
    ok, recs = reject([t, box], {"box": (0.0, 0.0, TOP + 0.05 - 0.02)})
    r = one(recs, "on_relation")
    assert "below the support top" in r.cause and r.violation_m == pytest.approx(0.015, abs=1e-5)
    ok, _ = reject([t, box], {"box": (0.0, 0.0, TOP + 0.05 + 0.01)})
    assert ok["on_relation"] and ok["no_overlap"]


def test_on_overlap_allows_overhang_but_not_leaving():
    t = table()
    box = cuboid("box", (0.2, 0.2, 0.05))
    box.add_relation(On(t, overlap=True))
    ok, _ = reject([t, box], {"box": (0.65, 0.0, TOP + 0.035)})  # overhangs by 0.15 m, still intersecting
    assert ok["on_relation"]
    ok, recs = reject([t, box], {"box": (0.75, 0.0, TOP + 0.035)})  # left edge 0.65 > 0.6
    r = one(recs, "on_relation")
    assert r.violation_m == pytest.approx(0.05, abs=1e-5)
    for res in solve([t, box]):
        assert -0.7 <= res.positions["box"][0] <= 0.7


def test_on_chain_cup_on_plate():
    t = table()
    plate = on_table(t, "plate", (0.3, 0.3, 0.02))
    cup = cuboid("cup", (0.08, 0.08, 0.1))
    cup.add_relation(On(plate, edge_margin_m=0.02))
    for r in solve([t, plate, cup]):
        px, py, pz = r.positions["plate"]
        cx, cy, cz = r.positions["cup"]
        assert abs(cz - 0.05 - (pz + 0.01 + 0.01)) < 1e-5
        assert abs(cx - px) <= 0.15 - 0.02 - 0.04 + 1e-5 and abs(cy - py) <= 0.15 - 0.02 - 0.04 + 1e-5


# ------------------------------------------------------------------------------------------- NextTo
@pytest.mark.parametrize("side", list(Side))
def test_next_to_every_side(side):
    t = table()
    a = on_table(t, "a", (0.1, 0.1, 0.1))
    b = on_table(t, "b", (0.06, 0.08, 0.05))
    b.add_relation(NextTo(a, side=side, distance_m=0.04, tolerance_m=0.01))
    for r in solve([t, a, b]):
        ax_, bx = r.positions["a"], r.positions["b"]
        k = side.axis_index
        half_b = (0.03, 0.04)[k]
        gap = side.sign * (bx[k] - ax_[k]) - 0.05 - half_b
        assert 0.04 - 1e-5 <= gap <= 0.05 + 1e-5
        assert abs(bx[1 - k] - ax_[1 - k]) <= 0.05 + 1e-5


def test_next_to_cross_ratio_centres():
    t = table()
    a = on_table(t, "a", (0.2, 0.2, 0.1))
    b = on_table(t, "b", (0.06, 0.06, 0.05))
    b.add_relation(NextTo(a, side="positive_y", cross_position_ratio=0.5))
    for r in solve([t, a, b]):
        assert r.positions["b"][0] == pytest.approx(r.positions["a"][0] + 0.05, abs=1e-4)


def test_next_to_rejects_wrong_side_closer_and_farther():
    t = table()
    a = on_table(t, "a", (0.1, 0.1, 0.1))
    b = on_table(t, "b", (0.1, 0.1, 0.1))
    b.add_relation(NextTo(a, side=Side.POSITIVE_X, distance_m=0.05, tolerance_m=0.01))
    z = TOP + 0.06
    ok, recs = reject([t, a, b], {"a": (0.0, 0.0, z), "b": (-0.25, 0.0, z)})
    r = one(recs, "next_to")
    assert "on the wrong side" in r.cause and "'b' next_to(a, positive_x)" in r.cause
    assert r.violation_m == pytest.approx(0.25 + 0.05 - 0.01, abs=1e-5)
    ok, recs = reject([t, a, b], {"a": (0.0, 0.0, z), "b": (0.13, 0.0, z)})  # gap 0.03
    r = one(recs, "next_to")
    assert "closer than distance_m" in r.cause and r.violation_m == pytest.approx(0.02, abs=1e-5)
    ok, recs = reject([t, a, b], {"a": (0.0, 0.0, z), "b": (0.2, 0.0, z)})  # gap 0.10
    r = one(recs, "next_to")
    assert "farther" in r.cause and r.violation_m == pytest.approx(0.04, abs=1e-5)
    ok, recs = reject([t, a, b], {"a": (0.0, 0.0, z), "b": (0.155, 0.3, z)})
    assert "cross axis" in one(recs, "next_to").cause
    ok, _ = reject([t, a, b], {"a": (0.0, 0.0, z), "b": (0.155, 0.02, z)})
    assert ok["next_to"]


# ---------------------------------------------------------------------------------------- NotNextTo
def _not_next_to_scene(margin=None):
    t = table()
    a = on_table(t, "a", (0.1, 0.1, 0.1))
    a.add_relation(AtPosition(x=0.0, y=0.0))
    b = on_table(t, "b", (0.1, 0.1, 0.1))
    b.add_relation(NotNextTo(a, side=Side.POSITIVE_X))
    b.add_relation(PositionLimitsBox(x_limits=(0.2, None)))
    return [t, a, b]


def test_not_next_to_solved_clears_keep_out():
    for r in solve(_not_next_to_scene()):
        # past the +X face the subject must be laterally outside a's footprint grown by 0.1 m
        assert abs(r.positions["b"][1]) >= 0.05 + 0.1 + 0.05 - 0.01 - 1e-5


def test_not_next_to_rejects_inside_region():
    z = TOP + 0.06
    ok, recs = reject(_not_next_to_scene(), {"a": (0.0, 0.0, z), "b": (0.3, 0.1, z)})
    r = one(recs, "not_next_to")
    # lateral depth: (0.05 + 0.1) - (0.1 - 0.05) = 0.1, minus tolerance 0.01
    assert "keep-out" in r.cause and r.violation_m == pytest.approx(0.09, abs=1e-5)
    ok, _ = reject(_not_next_to_scene(), {"a": (0.0, 0.0, z), "b": (0.3, 0.21, z)})
    assert ok["not_next_to"]


def test_replaced_not_next_to_strategy_changes_result():
    from isaaclab_arena.relations.optimization.losses.relation_loss_strategies import NotNextToLossStrategy
    from isaaclab_arena.relations.relation_solver_params import RelationSolverParams

    sp = RelationSolverParams()
    sp.strategies[NotNextTo] = NotNextToLossStrategy(margin_m=0.15)
    z = TOP + 0.06
    layout = {"a": (0.0, 0.0, z), "b": (0.3, 0.21, z)}
    ok_default, _ = reject(_not_next_to_scene(), layout)
    ok_wide, recs = reject(_not_next_to_scene(), layout, solver_params=sp)
    assert ok_default["not_next_to"] and not ok_wide["not_next_to"]
    res = placer(solver_params=sp).place(_not_next_to_scene(), num_envs=4)
    for r in res:
        assert r.success
        assert abs(r.positions["b"][1]) >= 0.05 + 0.15 + 0.05 - 0.01 - 1e-5


# ------------------------------------------------------------------- AtPosition, limits, AlignWith
def test_at_position_and_box_limits():
    t = table()
    a = on_table(t, "a", (0.1, 0.1, 0.1))
    a.add_relation(AtPosition(x=0.2, y=-0.1))
    b = on_table(t, "b", (0.1, 0.1, 0.1))
    b.add_relation(PositionLimitsBox(x_limits=(-0.3, -0.1), y_limits=(0.1, None)))
    for r in solve([t, a, b]):
        assert r.positions["a"][:2] == pytest.approx((0.2, -0.1), abs=1e-6)
        assert -0.3 - 1e-6 <= r.positions["b"][0] <= -0.1 + 1e-6 and r.positions["b"][1] >= 0.1 - 1e-6
    # the at_position and position_limits checks reject a miss, naming the relation and the metres; the loss
    # grows with it
    pl = placer()
    far = pl.validate_poses([t, a, b], {"a": (0.0, -0.1, TOP + 0.06), "b": (0.0, 0.2, TOP + 0.06)})
    near = pl.validate_poses([t, a, b], {"a": (0.2, -0.1, TOP + 0.06), "b": (-0.2, 0.2, TOP + 0.06)})
    assert not bool(far.passed[0]) and float(far.loss[0]) == pytest.approx(100 * 0.2 + 100 * 0.1, rel=1e-4)
    assert not bool(far.check_results["at_position"][0]) and not bool(far.check_results["position_limits"][0])
    assert bool(near.passed[0]) and float(near.loss[0]) == 0.0
    ok, recs = reject([t, a, b], {"a": (0.0, -0.1, TOP + 0.06), "b": (0.0, 0.2, TOP + 0.06)})
    assert one(recs, "at_position").cause == "'a' at_position(): off the requested coordinates"
    assert one(recs, "at_position").violation_m == pytest.approx(0.2, abs=1e-6)
    assert one(recs, "position_limits").cause == "'b' position_limits_box(): outside the position limits"
    assert one(recs, "position_limits").violation_m == pytest.approx(0.1, abs=1e-6)


def test_cylindrical_limits():
    t = table()
    a = on_table(t, "a", (0.05, 0.05, 0.05))
    a.add_relation(PositionLimitsCylindrical(center_x=0.1, center_y=0.1, radius_min=0.1, radius_max=0.15))
    for r in solve([t, a], num_envs=8):
        x, y, _ = r.positions["a"]
        assert 0.1 - 1e-5 <= math.hypot(x - 0.1, y - 0.1) <= 0.15 + 1e-5
    z = TOP + 0.035
    ok, recs = reject([t, a], {"a": (0.1, 0.15, z)})  # 5 cm from the centre: inside radius_min
    assert not ok["position_limits"]
    assert one(recs, "position_limits").cause == "'a' position_limits_cylindrical(): inside radius_min"
    assert one(recs, "position_limits").violation_m == pytest.approx(0.05, abs=1e-5)
    ok, recs = reject([t, a], {"a": (0.3, 0.1, z)})  # 20 cm: outside radius_max
    assert one(recs, "position_limits").cause == "'a' position_limits_cylindrical(): outside radius_max"
    assert ok["position_limits"] is False and reject([t, a], {"a": (0.22, 0.1, z)})[0]["position_limits"]


def test_clearance_check_keeps_placed_pairs_apart_but_lets_objects_touch_anchors():
    t = table()
    a = on_table(t, "a", (0.1, 0.1, 0.1))
    b = on_table(t, "b", (0.1, 0.1, 0.1))
    z = TOP + 0.06
    # 5 mm apart: no overlap, but closer than the default 1 cm clearance
    ok, recs = reject([t, a, b], {"a": (0.0, 0.0, z), "b": (0.105, 0.0, z)})
    assert ok["no_overlap"] and not ok["clearance"]
    assert one(recs, "clearance").cause == "'a' and 'b' closer than their clearance"
    assert one(recs, "clearance").violation_m == pytest.approx(0.005, abs=1e-6)
    assert reject([t, a, b], {"a": (0.0, 0.0, z), "b": (0.111, 0.0, z)})[0]["clearance"]
    # a clearance of 0 accepts touching; a NextTo pair only needs its own gap (3 cm < 5 cm clearance)
    assert reject([t, a, b], {"a": (0.0, 0.0, z), "b": (0.1, 0.0, z)},
                  solver_params=RelationSolverParams(clearance_m=0.0))[0]["clearance"]
    c = on_table(t, "c", (0.1, 0.1, 0.1), NextTo(a, side=Side.POSITIVE_X, distance_m=0.03))
    ok, _ = reject([t, a, c], {"a": (0.0, 0.0, z), "c": (0.131, 0.0, z)},
                   solver_params=RelationSolverParams(clearance_m=0.05))
    assert ok["clearance"] and ok["next_to"]
    # every solved layout keeps the clearance between placed objects
    for r in solve([t, a, b], num_envs=8):
        gap = abs(r.positions["a"][0] - r.positions["b"][0]) - 0.1
        gap_y = abs(r.positions["a"][1] - r.positions["b"][1]) - 0.1
        assert max(gap, gap_y) >= 0.01 - 1e-6


def test_align_with_solved_and_rejected():
    t = table()
    a = on_table(t, "a", (0.1, 0.1, 0.1))
    b = on_table(t, "b", (0.1, 0.1, 0.1))
    b.add_relation(AlignWith(a, axis="x", offset_m=0.2, tolerance_m=0.02))
    for r in solve([t, a, b]):
        assert abs(r.positions["b"][0] - r.positions["a"][0] - 0.2) <= 0.02 + 1e-5
    z = TOP + 0.06
    ok, recs = reject([t, a, b], {"a": (-0.2, 0.0, z), "b": (0.05, 0.2, z)})
    r = one(recs, "align_with")
    assert r.violation_m == pytest.approx(0.05 - 0.02, abs=1e-5)


# ------------------------------------------------------------------------------------ no_overlap
def test_no_overlap_movables_anchor_and_passive_obstacle():
    t = table()
    wall = cuboid("wall", (0.1, 0.8, 0.3), Pose((0.0, 0.0, TOP + 0.15)))  # passive obstacle splitting the table
    boxes = []
    for k in range(4):
        b = cuboid(f"b{k}", (0.15, 0.15, 0.1))
        b.add_relation(On(t))
        boxes.append(b)
    res = solve([t, wall] + boxes, num_envs=6)
    for r in res:
        for k in range(4):
            assert abs(r.positions[f"b{k}"][0]) >= 0.05 + 0.075 - 1e-5  # clear of the wall
        for i in range(4):
            for j in range(i + 1, 4):
                pi, pj = r.positions[f"b{i}"], r.positions[f"b{j}"]
                assert max(abs(pi[0] - pj[0]), abs(pi[1] - pj[1])) >= 0.15 - 1e-5
    z = TOP + 0.06
    ok, recs = reject([t, wall] + boxes, {"b0": (0.3, 0.0, z), "b1": (0.4, 0.05, z), "b2": (-0.3, 0.2, z),
                                          "b3": (0.1, -0.2, z)})
    assert not ok["no_overlap"]
    r = one(recs, "no_overlap")
    assert r.cause == "'b0' overlaps 'b1'" and r.violation_m == pytest.approx(0.05, abs=1e-5)  # worst pair
    ok, recs = reject([t, wall] + boxes, {"b0": (0.3, 0.0, z), "b1": (0.5, 0.2, z), "b2": (-0.3, 0.2, z),
                                          "b3": (0.1, -0.2, z)})
    r = one(recs, "no_overlap")
    assert r.cause == "'b3' overlaps 'wall'" and r.violation_m == pytest.approx(0.025, abs=1e-5)


def test_on_pair_is_exempt_but_stacked_neighbours_are_not():
    t = table()
    plate = on_table(t, "plate", (0.3, 0.3, 0.02))
    cup = cuboid("cup", (0.08, 0.08, 0.1))
    cup.add_relation(On(plate))
    ok, _ = reject([t, plate, cup], {"plate": (0.0, 0.0, TOP + 0.02), "cup": (0.0, 0.0, TOP + 0.03 + 0.06)})
    assert ok["no_overlap"] and ok["on_relation"]
    ok, recs = reject([t, plate, cup], {"plate": (0.0, 0.0, TOP + 0.02), "cup": (0.0, 0.0, TOP + 0.06)})
    assert not ok["on_relation"]


# ----------------------------------------------------------------------------- orientation + modifiers
def test_face_to_heading_and_rejection():
    t = table()
    target = on_table(t, "target", (0.1, 0.1, 0.1))
    cam = on_table(t, "cam", (0.2, 0.04, 0.05))
    cam.add_relation(FaceTo(target))
    for r in solve([t, target, cam], random_yaw_init=True):
        q = r.rotations["cam"]
        yaw = Pose((0, 0, 0), q).yaw_rad()
        dx = r.positions["target"][0] - r.positions["cam"][0]
        dy = r.positions["target"][1] - r.positions["cam"][1]
        assert abs(math.remainder(yaw - math.atan2(dy, dx), 2 * math.pi)) < 1e-4
        assert abs(q[0]) < 1e-6 and abs(q[1]) < 1e-6
    z = TOP + 0.06
    ok, recs = reject([t, target, cam], {"target": (0.0, 0.0, z), "cam": (0.0, 0.0, TOP + 0.035)})
    r = one(recs, "face_to")
    assert not ok["face_to"] and "'cam' face_to(target): at the target's XY position" in r.cause
    assert r.violation_m == pytest.approx(1e-6, abs=1e-7)  # how far short of a defined heading (1 um)
    ok, _ = reject([t, target, cam], {"target": (0.0, 0.0, z), "cam": (0.2, 0.0, TOP + 0.035)})
    assert ok["face_to"]


def test_rotate_around_solution_is_base_rotation_with_refit_bounds():
    t = table()
    long = on_table(t, "long", (0.6, 0.1, 0.05))
    long.add_relation(RotateAroundSolution(yaw_rad=math.pi / 2))
    for r in solve([t, long], num_envs=8):
        q = r.rotations["long"]
        assert abs(Pose((0, 0, 0), q).yaw_rad() - math.pi / 2) < 1e-5
        # rotated: 0.6 m along y must fit the 0.8 m table inside the 0.05 m margins
        assert abs(r.positions["long"][1]) <= 0.4 - 0.05 - 0.3 + 1e-5


def test_rotate_around_solution_roll_refits_height():
    t = table()
    lying = on_table(t, "lying", (0.04, 0.2, 0.06))
    lying.add_relation(RotateAroundSolution(roll_rad=math.pi / 2))  # local y (0.2 m) becomes world z
    for r in solve([t, lying], num_envs=4, random_yaw_init=True):
        assert r.positions["lying"][2] == pytest.approx(TOP + 0.01 + 0.1, abs=1e-5)
        q = r.rotations["lying"]
        up = 2 * (q[1] * q[2] + q[3] * q[0])  # world z of the body's local +y
        assert up == pytest.approx(1.0, abs=1e-5)  # the random yaw keeps the roll


def test_random_yaw_init_rotates_and_stays_valid():
    t = table()
    boxes = []
    for k in range(3):
        b = cuboid(f"b{k}", (0.2, 0.05, 0.05))
        b.add_relation(On(t))
        boxes.append(b)
    res = solve([t] + boxes, num_envs=8, random_yaw_init=True)
    yaws = {round(Pose((0, 0, 0), r.rotations["b0"]).yaw_rad(), 3) for r in res}
    assert len(yaws) == 8


def _random_around_scene(x_half=0.05, y_half=0.03, yaw_half=0.8):
    t = table()
    b = cuboid("b", (0.1, 0.1, 0.1))
    b.add_relation(On(t, edge_margin_m=0.0))
    b.add_relation(RandomAroundSolution(x_half_m=x_half, y_half_m=y_half, yaw_half_rad=yaw_half))
    b.add_relation(AtPosition(x=0.45, y=0.2))  # near the corner: the solver leaves room for the offsets
    return [t, b]


def test_random_around_solution_offsets_within_half_ranges_after_solving():
    res = solve(_random_around_scene(), num_envs=32)
    dx = [r.positions["b"][0] - 0.45 for r in res]  # AtPosition fixes the solved x, y exactly
    dy = [r.positions["b"][1] - 0.2 for r in res]
    yaw = [Pose((0, 0, 0), r.rotations["b"]).yaw_rad() for r in res]
    assert max(map(abs, dx)) <= 0.05 + 1e-6 and max(map(abs, dy)) <= 0.03 + 1e-6
    assert max(map(abs, yaw)) <= 0.8 + 1e-5
    assert max(dx) - min(dx) > 0.05 and max(dy) - min(dy) > 0.03 and max(yaw) - min(yaw) > 0.8  # spread out
    assert all(r.positions["b"][2] == pytest.approx(TOP + 0.01 + 0.05, abs=1e-5) for r in res)  # z half 0
    same = solve(_random_around_scene(), num_envs=32)
    assert [r.positions for r in same] == [r.positions for r in res]  # seeded
    other = solve(_random_around_scene(), num_envs=32, placement_seed=12)
    assert [r.positions for r in other] != [r.positions for r in res]
    # without the modifier the same scene solves to the AtPosition point exactly
    for r in solve(_random_around_scene(0.0, 0.0, 0.0), num_envs=4):
        assert r.positions["b"][:2] == pytest.approx((0.45, 0.2), abs=1e-6)


def test_anchor_never_moves_and_object_reference_pose_used():
    t = table()
    t.set_initial_pose(Pose((1.0, 2.0, 0.375), (0.0, 0.0, 0.7071068, 0.7071068)))  # quarter turn: 0.8 x 1.2
    b = on_table(t, "b", (0.1, 0.1, 0.1))
    pl = placer()
    res = pl.place([t, b], num_envs=4)
    for r in res:
        x, y, _ = r.positions["b"]
        assert 1.0 - 0.4 + 0.1 - 1e-5 <= x <= 1.0 + 0.4 - 0.1 + 1e-5
        assert 2.0 - 0.6 + 0.1 - 1e-5 <= y <= 2.0 + 0.6 - 0.1 + 1e-5
    assert "table" not in res[0].positions
    assert t.initial_pose.position_xyz == (1.0, 2.0, 0.375)


def test_is_anchor_only_scene_places_nothing_but_passes():
    t = table()
    t2 = cuboid("shelf", (0.3, 0.3, 0.3), Pose((2.0, 0.0, 0.15)))
    t2.add_relation(IsAnchor())
    res = placer().place([t, t2], num_envs=2)
    assert [r.success for r in res] == [True, True] and res[0].positions == {}


def test_batch_tensors_contract():
    t = table()
    b = on_table(t, "b", (0.1, 0.1, 0.1))
    pl = placer()
    batch = pl.place_batch([t, b], torch.tensor([0, 1, 1]), torch.tensor([0, 0, 1]), num_envs=2)
    assert batch.object_names == ["b"]
    assert batch.positions.shape == (3, 1, 3) and batch.positions.dtype == torch.float32
    assert batch.rotations.shape == (3, 1, 4) and batch.loss.shape == (3,)
    assert set(batch.check_results) >= {"no_overlap", "on_relation", "next_to", "face_to"}
    assert batch.passed.dtype == torch.bool and batch.required_failures.shape == (3,)
    lo, hi = batch.bounds
    assert torch.allclose(hi - lo, torch.full((3, 1, 3), 0.1), atol=1e-6)


# ------------------------------------------------------------------------------------------ ClutterOn
def _clutter_scene(n=4):
    from isaaclab_arena.relations.relations import ClutterOn

    t = table()
    objs = [t]
    for k in range(n):
        o = cuboid(f"c{k}", (0.06, 0.04, 0.05))
        o.add_relation(ClutterOn(t, spread=0.2, clearance_m=0.01, gap_m=0.03))
        objs.append(o)
    return objs


def test_clutter_on_release_region_raised_above_neighbours():
    res = solve(_clutter_scene(), num_envs=4)
    for r in res:
        for name, (x, y, z) in r.positions.items():
            yaw = Pose((0, 0, 0), r.rotations[name]).yaw_rad()
            hx = 0.03 * abs(math.cos(yaw)) + 0.02 * abs(math.sin(yaw))
            hy = 0.03 * abs(math.sin(yaw)) + 0.02 * abs(math.cos(yaw))
            assert abs(x) + hx <= 0.12 + 1e-5 and abs(y) + hy <= 0.08 + 1e-5  # central 20 % of 1.2 x 0.8
            assert z - 0.025 >= TOP + 0.01 - 1e-6
    assert any(max(p[2] for p in r.positions.values()) > TOP + 0.1 for r in res)  # some releases stacked


def test_clutter_on_rejects_outside_region_and_too_low():
    objs = _clutter_scene(1)
    ok, recs = reject(objs, {"c0": (0.2, 0.0, TOP + 0.05)})
    r = one(recs, "clutter_on_relation")
    assert "outside the release region" in r.cause and r.violation_m == pytest.approx(0.2 + 0.03 - 0.12, abs=1e-5)
    ok, recs = reject(objs, {"c0": (0.0, 0.0, TOP + 0.025 + 0.005)})
    r = one(recs, "clutter_on_relation")
    assert "too little clearance" in r.cause and r.violation_m == pytest.approx(0.005, abs=1e-5)
    ok, _ = reject(objs, {"c0": (0.0, 0.0, TOP + 0.5)})  # no upper limit, no contact needed
    assert ok["clutter_on_relation"]


def test_clutter_check_passes_trivially_without_clutter():
    t = table()
    b = on_table(t, "b", (0.1, 0.1, 0.1))
    ok, _ = reject([t, b], {"b": (0.0, 0.0, TOP + 0.06)})
    assert ok["clutter_on_relation"] and ok["next_to"] and ok["not_next_to"] and ok["face_to"]


def test_face_to_near_support_edge_keeps_turned_footprint_inside_inset():
    """A long FaceTo subject held at the table's +Y edge, facing a target placed after it (NextTo on its
    -Y side, as the dense example's mug and bowl): the heading is re-evaluated while solving, so the
    turned footprint (the rotated box's AABB) ends inside the table inset by edge_margin_m on every
    candidate; the same pose moved 1 cm past the inset is rejected by on_relation."""
    t = table()
    cam = cuboid("cam", (0.2, 0.04, 0.05))
    cam.add_relation(On(t, edge_margin_m=0.02))
    # y >= 0.25: the cam faces the target below it, so its turned footprint spans 0.2 m along Y and its origin
    # can only lie in [0.25, 0.28]
    cam.add_relation(PositionLimitsBox(y_limits=(0.25, None)))
    target = on_table(t, "target", (0.06, 0.06, 0.06), NextTo(cam, side=Side.NEGATIVE_Y, distance_m=0.05))
    cam.add_relation(FaceTo(target))
    assets = [t, cam, target]
    pl = placer()
    n = 256
    problem = pl.compile(assets, n)
    batch = pl.place_problem(problem, torch.arange(n), torch.zeros(n, dtype=torch.long))
    assert bool(batch.check_results["on_relation"].all()) and bool(batch.passed.all())
    p = batch.positions[:, problem.object_names.index("cam")].double()
    q = batch.rotations[:, problem.object_names.index("cam")].double()
    tp = batch.positions[:, problem.object_names.index("target")].double()
    yaw = torch.atan2(2 * (q[:, 3] * q[:, 2] + q[:, 0] * q[:, 1]), 1 - 2 * (q[:, 1] ** 2 + q[:, 2] ** 2))
    err = torch.remainder(yaw - torch.atan2(tp[:, 1] - p[:, 1], tp[:, 0] - p[:, 0]) + math.pi, 2 * math.pi) - math.pi
    assert float(err.abs().max()) < 1e-4  # faces the target's XY centre
    c, s = yaw.cos().abs(), yaw.sin().abs()
    hx, hy = 0.1 * c + 0.02 * s, 0.1 * s + 0.02 * c  # half extents of the turned 0.2 x 0.04 footprint
    assert float(s.min()) > 0.5  # turned toward -Y: the turned footprint is what must fit
    assert float((p[:, 1] + hy).max()) <= 0.4 - 0.02 + 1e-5
    assert float((p[:, 0] + hx).max()) <= 0.6 - 0.02 + 1e-5 and float((p[:, 0] - hx).min()) >= -0.6 + 0.02 - 1e-5
    # rejection: the candidate closest to the edge, moved 1 cm past the inset on +Y
    k = int(torch.argmax(p[:, 1] + hy))
    dy = (0.4 - 0.02) - float(p[k, 1] + hy[k]) + 0.01
    pos = {"cam": (float(p[k, 0]), float(p[k, 1]) + dy, float(p[k, 2])),
           "target": (float(tp[k, 0]), float(tp[k, 1]) + dy, float(tp[k, 2]))}
    ok, recs = reject(assets, pos, {"cam": tuple(float(v) for v in q[k])})
    assert not ok["on_relation"]
    rec = one(recs, "on_relation")
    assert "'cam' on(table): footprint outside the support" in rec.cause
    assert rec.violation_m == pytest.approx(0.01, abs=2e-4)

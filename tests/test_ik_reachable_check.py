"""The ``ik_reachable`` placement check (no simulator): an expensive pre-physics check that runs only on the
candidates that passed every required inexpensive check, at every ``RequiresReachability`` object, with the
robot base pose solved for that candidate; applies only with an embodiment; prints ``ik_reachable=p/e``.

Verdicts are re-checked in float64 with an independent IK (Pinocchio, ``reachability_reference.py``) from the
solved poses: every "reachable" verdict's joint positions reach the grasp within both thresholds (Pinocchio FK,
joint limits), and every "unreachable" verdict is one the reference cannot reach either, except within 2 mm
of its boundary."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from reachability_reference import PinocchioReach, rotation_angle, top_down_target

from isaaclab_arena.assets.asset import Object
from isaaclab_arena.assets.bounding_box import AxisAlignedBoundingBox as Box
from isaaclab_arena.embodiments import make_embodiment
from isaaclab_arena.relations.object_placer import ObjectPlacer
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams, ReachabilityConfig
from isaaclab_arena.relations.diagnostics.placement_diagnostics import batch_diagnostics
from isaaclab_arena.relations.relations import IsAnchor, NextTo, On, RequiresReachability, RotateAroundSolution, Side
from isaaclab_arena.relations.validation.pre_physics import PrePhysicsPlacementValidator
from isaaclab_arena.relations.validation.registry import register_validator, unregister_validator
from isaaclab_arena.utils.pose import Pose

POS_THR, ROT_THR, Z_OFF = 0.01, 0.1, 0.02
B = 48


def _scene(robot_pose=None):
    floor = Object("floor", bounding_box=Box((-1.2, -1.2, -0.02), (1.2, 1.2, 0.0)),
                   initial_pose=Pose((0.0, 0.0, 0.0))).add_relation(IsAnchor())
    table = Object("table", bounding_box=Box((-0.6, -0.4, -0.04), (0.6, 0.4, 0.0)),
                   initial_pose=Pose((0.0, 0.0, 0.75))).add_relation(IsAnchor())
    robot = make_embodiment("franka_panda", "franka", {"initial_pose": robot_pose} if robot_pose else {})
    if robot_pose is None:
        robot.add_relation(On(floor)).add_relation(NextTo(table, side=Side.NEGATIVE_Y, distance_m=0.05))
        robot.add_relation(RotateAroundSolution(yaw_rad=math.pi / 2))
    cube = Object("cube", bounding_box=Box((-0.02,) * 3, (0.02,) * 3)).add_relation(On(table))
    cube.add_relation(RequiresReachability())
    bowl = Object("bowl", bounding_box=Box((-0.08, -0.08, -0.03), (0.08, 0.08, 0.03))).add_relation(On(table))
    return [floor, table, robot, cube, bowl], robot


def _placer(robot, **kw):
    return ObjectPlacer(ObjectPlacerParams(placement_seed=11, reachability_config=ReachabilityConfig(embodiment=robot),
                                           **kw))


@pytest.fixture(scope="module")
def placed():
    from isaaclab_arena.reachability.ik_validator import object_reachability

    assets, robot = _scene()
    placer = _placer(robot)
    vb = placer.place_batch(assets, torch.zeros(B, dtype=torch.long), torch.arange(B), num_envs=1)
    names, reach, result = object_reachability(placer.params, vb.problem, vb.positions, vb.rotations)
    return {"vb": vb, "names": names, "reach": reach, "result": result, "robot": robot}


@pytest.mark.slow
def test_check_runs_as_an_expensive_check_with_an_embodiment(placed):
    from isaaclab_arena.reachability.ik_validator import IKReachableValidator

    vb = placed["vb"]
    assert IKReachableValidator.cost.value == "expensive" and IKReachableValidator.check == "ik_reachable"
    assert vb.validation.checks[-1] == "ik_reachable" and "ik_reachable" in vb.validation.required
    passed, evaluated = vb.validation.counts()["ik_reachable"]
    assert evaluated == B and 0 < passed < B  # the table's far side is out of reach, the near side is not
    line = batch_diagnostics(vb).console_lines()[0]
    assert f"ik_reachable={passed}/{evaluated}" in line
    assert placed["names"] == ["cube"]
    torch.testing.assert_close(vb.check_results["ik_reachable"], placed["reach"].all(-1))
    assert torch.equal(vb.passed, vb.check_results["ik_reachable"])  # every inexpensive check passed here


def test_check_does_not_apply_without_an_embodiment():
    assets, _ = _scene()
    placer = ObjectPlacer(ObjectPlacerParams(placement_seed=11))
    assert "ik_reachable" not in placer.runner.checks
    with pytest.warns(UserWarning, match="'ik_reachable' is enabled but not available: no reachability validator "
                                         "applies"):
        ObjectPlacer(ObjectPlacerParams(enabled_checks=["no_overlap", "ik_reachable"])).runner


@pytest.mark.slow
def test_reachable_verdicts_hold_in_float64_with_pinocchio(placed):
    vb, result = placed["vb"], placed["result"]
    ref = PinocchioReach(seeds=1)
    k_robot, k_cube = vb.object_names.index("franka"), vb.object_names.index("cube")
    pos, rot = vb.positions.double().numpy(), vb.rotations.double().numpy()
    checked = 0
    for b in range(B):
        if not bool(placed["reach"][b, 0]):
            continue
        q = result.joint_pos[b, 0].double().numpy()
        assert np.all(q >= ref.lower - 1e-9) and np.all(q <= ref.upper + 1e-9)
        p_t, r_t = top_down_target(pos[b, k_robot], rot[b, k_robot], pos[b, k_cube], Z_OFF)
        p, r = ref.fk(q)
        assert np.linalg.norm(p - p_t) <= POS_THR and rotation_angle(r, r_t) <= ROT_THR, b
        checked += 1
    assert checked > 5


@pytest.mark.slow
def test_unreachable_verdicts_agree_with_pinocchio_outside_2mm(placed):
    vb = placed["vb"]
    ref = PinocchioReach()
    k_robot, k_cube = vb.object_names.index("franka"), vb.object_names.index("cube")
    pos, rot = vb.positions.double().numpy(), vb.rotations.double().numpy()
    disagree, near = [], 0
    for b in range(B):
        if bool(placed["reach"][b, 0]):
            continue
        p_t, r_t = top_down_target(pos[b, k_robot], rot[b, k_robot], pos[b, k_cube], Z_OFF)
        if ref.reachable(p_t, r_t, POS_THR, ROT_THR):
            # forgiven only within 2 mm of the reference's boundary: a neighbour 2 mm away is unreachable
            neighbours = [p_t + d for d in np.vstack([np.eye(3), -np.eye(3)]) * 0.002]
            if any(not ref.reachable(n, r_t, POS_THR, ROT_THR) for n in neighbours):
                near += 1
            else:
                disagree.append(b)
    print(f"\n[ik_reachable] unreachable verdicts: {B - int(placed['reach'].sum())}, disagreements with "
          f"Pinocchio within 2 mm of its boundary: {near}, elsewhere: {len(disagree)}")
    assert disagree == []


@pytest.mark.slow
def test_the_solved_base_is_checked_not_a_configured_one(placed):
    """The same object positions checked from the robot's default pose (at the env origin, facing +X) give
    other verdicts: the check reads each candidate's solved base."""
    from isaaclab_arena.reachability.backends import ik_backend_for

    vb, robot = placed["vb"], placed["robot"]
    default = robot.get_world_pose()
    base = torch.tensor([[*default.position_xyz, *default.rotation_xyzw]]).expand(B, 7)
    cube = vb.positions[:, vb.object_names.index("cube")][:, None]
    config = ReachabilityConfig(embodiment=robot)
    at_default = ik_backend_for(robot).check_config(base, cube, config).all_reachable
    assert not torch.equal(at_default, vb.check_results["ik_reachable"])


def test_fixed_robot_uses_its_fixed_pose():
    assets, robot = _scene(robot_pose=Pose((0.0, -0.65, 0.75), (0.0, 0.0, math.sin(math.pi / 4), math.cos(math.pi / 4))))
    vb = _placer(robot).place_batch(assets, torch.zeros(32, dtype=torch.long), torch.arange(32), num_envs=1)
    assert "franka" in vb.problem.fixed_names
    cube = vb.positions[:, vb.object_names.index("cube")].double()
    near = (cube[:, :2] - torch.tensor([0.0, -0.65], dtype=torch.float64)).norm(dim=-1)
    verdict = vb.check_results["ik_reachable"]
    assert bool(verdict[near < 0.45].all()) and not bool(verdict[near > 0.95].any())
    assert bool((near < 0.45).any()) and bool((near > 0.95).any())


class _EvenDrawsOnly(PrePhysicsPlacementValidator):
    check = "test_even_draws"

    def validate_batch(self, batch, collision_objects):
        return batch.draw_ids % 2 == 0


def test_runs_only_on_candidates_that_passed_the_required_inexpensive_checks():
    register_validator(_EvenDrawsOnly)
    try:
        assets, robot = _scene()
        vb = _placer(robot).place_batch(assets, torch.zeros(16, dtype=torch.long), torch.arange(16), num_envs=1)
        even = torch.arange(16) % 2 == 0
        assert torch.equal(vb.validation.evaluated_mask("ik_reachable"), even)
        assert not bool(vb.check_results["ik_reachable"][~even].any())
        assert vb.validation.counts()["ik_reachable"][1] == 8
        # the gate is the required checks only: made optional, the custom check no longer gates
        optional = _placer(robot, required_checks=["no_overlap", "on_relation", "next_to", "ik_reachable"])
        vb2 = optional.place_batch(assets, torch.zeros(16, dtype=torch.long), torch.arange(16), num_envs=1)
        assert bool(vb2.validation.evaluated_mask("ik_reachable").all())
    finally:
        unregister_validator("test_even_draws")


def test_marked_object_the_placer_cannot_locate_is_refused():
    from isaaclab_arena.relations.compiler.placement_restrictions import PlacementConfigError

    assets, robot = _scene()
    loose = Object("loose", bounding_box=Box((-0.02,) * 3, (0.02,) * 3)).add_relation(RequiresReachability())
    with pytest.raises(PlacementConfigError, match="asset 'loose', relation requires_reachability\\(\\): the object is "
                                                   "neither placed by relations nor fixed by an initial_pose"):
        _placer(robot).place_batch([*assets, loose], torch.zeros(2, dtype=torch.long), torch.arange(2), num_envs=1)


@pytest.mark.slow
def test_rejections_name_the_unreachable_object_and_its_ik_miss(placed):
    """Each rejected candidate is explained as the object out of reach, with the IK's remaining position error
    (metres) of that candidate; the pool's closest-miss text says the same."""
    from isaaclab_arena.relations.diagnostics.placement_diagnostics import FailureTally, rejection_causes, rejection_records

    vb, result = placed["vb"], placed["result"]
    failed = ~vb.check_results["ik_reachable"]
    assert 0 < int(failed.sum()) < B
    texts, index, miss = vb.validation.extra_causes["ik_reachable"]
    assert texts == ("'cube' out of reach of 'franka' (top-down grasp; IK position error)",)
    assert torch.equal(index >= 0, failed)  # a cause exactly where the check failed
    err = result.position_error_m[:, 0].double()
    torch.testing.assert_close(miss[failed].double(), err[failed].to(miss.device), rtol=0, atol=1e-6)
    causes = [c for c in rejection_causes(vb) if c.check == "ik_reachable"]
    assert len(causes) == 1 and causes[0].cause == texts[0] and causes[0].count == int(failed.sum())
    assert causes[0].example_violation == pytest.approx(float(err[failed].max()), abs=1e-6)
    assert "check failed" not in causes[0].line()
    records = [r for r in rejection_records(vb) if r.check == "ik_reachable"]
    assert sorted(r.candidate for r in records) == failed.nonzero().flatten().tolist()
    assert all(r.cause == texts[0] and r.violation_m > 0.0 for r in records)
    tally = FailureTally()
    tally.add(vb)
    misses, _ = tally.explain([0])
    ik = [m for m in misses if m.check == "ik_reachable"]
    assert len(ik) == 1 and ik[0].cause == texts[0] and ik[0].failed == int(failed.sum())
    assert ik[0].violation_m == pytest.approx(float(err[failed].min()), abs=1e-6)

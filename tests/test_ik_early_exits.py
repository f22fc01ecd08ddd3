"""The IK check's early exits (issue 21): the reach bounds that refuse targets without IK, the stage-1 early
look and the polish that stops a problem once reached. Each must only save work: no target a configuration
reaches is refused by the bounds (checked on forward kinematics of random configurations, in float64 numpy), the
bounds do refuse targets the chain-length sphere lets through, and the early exits never turn a verdict
"reached" into "refused" against the full solve.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

ARMS = ("franka_panda", "kuka_iiwa")


@pytest.fixture(scope="module", params=ARMS)
def checker(request):
    from isaaclab_arena.embodiments import make_embodiment
    from isaaclab_arena.reachability import IKReachabilityChecker

    return IKReachabilityChecker(make_embodiment(request.param).reachability_robot, device="cpu")


def _fk64(chain, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TCP position (N, 3) and rotation (N, 3, 3) of (N, C) joint positions, float64 numpy, joint by joint."""
    n = q.shape[0]
    t = np.repeat(np.eye(4)[None], n, 0)
    c = 0
    for joint in chain.joints:
        t = t @ joint.origin
        if joint.type in ("revolute", "continuous"):
            x, y, z = joint.axis
            k = np.array([[0, -z, y], [z, 0, -x], [-y, x, 0]])
            s, co = np.sin(q[:, c])[:, None, None], np.cos(q[:, c])[:, None, None]
            turn = np.repeat(np.eye(4)[None], n, 0)
            turn[:, :3, :3] = np.eye(3) + s * k + (1 - co) * (k @ k)
            t = t @ turn
            c += 1
    return t[:, :3, 3], t[:, :3, :3]


def _check_counting_solver_problems(checker, base, objects):
    """(problems handed to the solver per call, result) of ``checker.check(base, objects)`` at zero grasp offset."""
    seen = []
    original = checker._solve_and_measure
    checker._solve_and_measure = lambda pos, *a: seen.append(pos.shape[0]) or original(pos, *a)
    try:
        result = checker.check(base, objects, grasp_z_offset_m=0.0)
    finally:
        del checker._solve_and_measure
    return seen, result


def _random_turn(rng, n: int, angle: float) -> np.ndarray:
    """(n, 3, 3) rotations by exactly ``angle`` radians about random axes."""
    axis = rng.normal(size=(n, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    k = np.zeros((n, 3, 3))
    k[:, 0, 1], k[:, 0, 2], k[:, 1, 2] = -axis[:, 2], axis[:, 1], -axis[:, 0]
    k = k - k.transpose(0, 2, 1)
    return np.eye(3) + math.sin(angle) * k + (1 - math.cos(angle)) * (k @ k)


def test_no_pose_a_configuration_takes_is_refused_by_the_reach_bounds(checker):
    """Every TCP pose of 4,000 random configurations (joint limits ignored: the bounds are geometric), and the
    same poses moved by the thresholds (1 cm, 0.1 rad), lie within the bounds; the bounds are tight."""
    import dataclasses

    rng = np.random.default_rng(3)
    c = len(checker.joint_names)
    q = rng.uniform(-math.pi, math.pi, size=(4000, c))
    pos, rot = _fk64(checker.chain, q)
    # the outer spheres (the inner wrist bound holds within the joint limits only: its own test below)
    bounds = dataclasses.replace(checker.reach_bounds, wrist_min_radius_m=0.0)
    exact = bounds.excess_m(torch.tensor(pos), torch.tensor(rot), 0.0)
    assert float(exact.max()) <= 1e-9
    # a target within the thresholds of a reached pose: its bound excess stays within the position threshold
    step = rng.normal(size=(4000, 3))
    step = 0.01 * step / np.linalg.norm(step, axis=1, keepdims=True)
    moved = bounds.excess_m(torch.tensor(pos + step), torch.tensor(rot @ _random_turn(rng, 4000, 0.1)), 0.1)
    assert float(moved.max()) <= 0.01 + 1e-9
    # and tight: some configuration comes within 1 cm of it (the sum of the link offsets, 7 cm beyond what the
    # Franka's zig-zag elbow can stretch to, would fail here)
    assert float(exact.max()) >= -0.01


def test_no_pose_within_the_joint_limits_is_refused_by_the_inner_wrist_bound(checker):
    """Within the joint limits the wrist never comes nearer the centre than ``wrist_min_radius_m`` (20,000 random
    configurations, float64, and each joint at its limits), so no pose they take is refused, thresholds
    included; the bound is tight (a configuration comes within 2 mm); the iiwa has one (its elbow's range), the
    Franka none (several joints between its shoulder and wrist change their distance)."""
    rng = np.random.default_rng(5)
    chain = checker.chain
    lower, upper = chain.lower, chain.upper
    q = rng.uniform(lower, upper, size=(20000, len(lower)))
    q[:64] = np.where(rng.random((64, len(lower))) < 0.5, lower, upper)  # corners of the limits
    pos, rot = _fk64(chain, q)
    bounds = checker.reach_bounds
    assert float(bounds.excess_m(torch.tensor(pos), torch.tensor(rot), 0.0).max()) <= 1e-9
    step = rng.normal(size=pos.shape)
    step = 0.01 * step / np.linalg.norm(step, axis=1, keepdims=True)
    moved = bounds.excess_m(torch.tensor(pos + step), torch.tensor(rot @ _random_turn(rng, len(pos), 0.1)), 0.1)
    assert float(moved.max()) <= 0.01 + 1e-9
    wrist = pos - np.einsum("nij,j->ni", rot, bounds.wrist_to_tcp)
    nearest = float(np.linalg.norm(wrist - bounds.centre, axis=1).min())
    assert nearest >= bounds.wrist_min_radius_m - 1e-9
    if "iiwa" in str(checker.robot.urdf_path):
        assert bounds.wrist_min_radius_m == pytest.approx(0.4104, abs=1e-4)  # sqrt(.42^2 + .4^2 - .42 * .4)
        assert nearest - bounds.wrist_min_radius_m <= 0.002
    else:
        assert bounds.wrist_min_radius_m == 0.0


def test_the_least_distance_matches_a_dense_scan():
    from isaaclab_arena.reachability.reach_bounds import _least_distance

    rng = np.random.default_rng(8)
    for _ in range(200):
        v1, v2, axis = rng.normal(size=3), rng.normal(size=3), rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        lo, hi = sorted(rng.uniform(-4.0, 4.0, size=2))
        q = np.linspace(lo, hi, 20001)
        k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
        turned = (v2 + np.sin(q)[:, None] * (k @ v2) + (1 - np.cos(q))[:, None] * (k @ k @ v2))
        scan = np.linalg.norm(v1 + turned, axis=1).min()
        exact = _least_distance(v1, v2, axis, lo, hi)
        assert exact <= scan + 1e-12 and scan - exact <= 1e-6


def test_targets_near_the_shoulder_are_refused_without_ik_on_the_iiwa():
    """Top-down grasps whose wrist would lie nearer the shoulder than the elbow's range lets it come: refused by
    the bounds with an excess beyond the position threshold, and the solver never sees them."""
    from isaaclab_arena.embodiments import make_embodiment
    from isaaclab_arena.reachability import IKReachabilityChecker
    from isaaclab_arena.reachability.grasp_targets import top_down_grasp_targets

    checker = IKReachabilityChecker(make_embodiment("kuka_iiwa").reachability_robot, device="cpu")
    bounds = checker.reach_bounds
    base = torch.tensor([[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]])
    # objects whose grasp puts the wrist 0.15-0.3 m from the shoulder: straight below it, a little forward
    wrist_above = float(np.linalg.norm(bounds.wrist_to_tcp))
    objects = torch.tensor([[[x, 0.0, float(bounds.centre[2]) - wrist_above - 0.2] for x in (0.05, 0.1, 0.15)]])
    pos_b, rot_b, _ = top_down_grasp_targets(base, objects, 0.0, checker.yaw_offset_rad)
    excess = bounds.excess_m(pos_b[0], rot_b[0], 0.1)
    assert bool((excess > 0.01).all())
    seen, result = _check_counting_solver_problems(checker, base, objects)
    assert sum(seen) == 0 and not bool(result.reachable.any())


def test_the_wrist_bound_refuses_targets_the_chain_length_sphere_lets_through(checker):
    """Top-down grasps at the shoulder's height, farther than the wrist can go but inside the chain-length
    sphere, are refused without IK (the solver never sees them) with their bound as position error."""
    from isaaclab_arena.reachability.grasp_targets import top_down_grasp_targets

    bounds = checker.reach_bounds
    centre = bounds.centre
    wrist_reach = bounds.wrist_radius_m + 0.01 + 0.1 * np.linalg.norm(bounds.wrist_to_tcp)
    reach = np.linspace(wrist_reach + 0.03, bounds.tcp_radius_m - 0.03, 5)
    objects = torch.tensor([[[float(r), 0.0, float(centre[2])] for r in reach]], dtype=torch.float32)
    base = torch.tensor([[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]])
    pos_b, rot_b, _ = top_down_grasp_targets(base, objects, 0.0, checker.yaw_offset_rad)
    tcp_only = (pos_b[0] - torch.tensor(centre, dtype=torch.float32)).norm(dim=-1) - bounds.tcp_radius_m
    assert bool((tcp_only < 0).all())  # the chain-length sphere alone would send these to the solver
    seen, result = _check_counting_solver_problems(checker, base, objects)
    assert sum(seen) == 0  # no problem reached the solver
    assert not bool(result.reachable.any())
    expected = bounds.excess_m(pos_b[0], rot_b[0], 0.1)
    assert torch.allclose(result.position_error_m[0], expected)
    assert bool((result.position_error_m > 0.01).all()) and bool(result.rotation_error_rad.isnan().all())


def test_early_exits_never_refuse_what_the_full_solve_reaches(checker, monkeypatch):
    """The same 512 candidates with every early stop turned off (stages 1 and 2 run all their iterations instead of
    stopping a problem once it is within a tenth of the thresholds, and the polish of stage 3 runs every start):
    every grasp the full solve reaches is reached with the early exits too, and every grasp reached with them is
    within both thresholds by float64 FK of the returned joints."""
    import functools

    import isaaclab_arena.reachability.ik_reachability as ik

    g = torch.Generator().manual_seed(11)
    n = 512
    yaw = (torch.rand(n, generator=g) * 2 - 1) * 0.3
    base = torch.zeros(n, 7)
    base[:, 0], base[:, 2] = -0.8, 0.75
    base[:, 5], base[:, 6] = torch.sin(yaw / 2), torch.cos(yaw / 2)
    objects = torch.stack([(torch.rand(n, generator=g) * 2 - 1) * 0.6, (torch.rand(n, generator=g) * 2 - 1) * 0.4,
                           torch.full((n,), 0.80)], -1)[:, None]
    early = checker.check(base, objects)

    monkeypatch.setattr(ik, "CONVERGED_SCORE", None)
    monkeypatch.setattr(checker._polish, "polish", functools.partial(checker._polish.polish, stop_score=None))
    full = checker.check(base, objects)

    assert bool((early.reachable | ~full.reachable).all()), "an early exit refused a grasp the full solve reaches"
    assert int(full.reachable.sum()) >= n // 4  # the sample holds reachable grasps at all
    reached = early.reachable[:, 0].numpy()
    q = early.joint_pos[:, 0].double().numpy()[reached]
    assert bool((q >= checker.chain.lower - 1e-6).all() and (q <= checker.chain.upper + 1e-6).all())
    pos, rot = _fk64(checker.chain, q)
    from isaaclab_arena.reachability.grasp_targets import top_down_grasp_targets

    pos_b, rot_b, _ = top_down_grasp_targets(base, objects, 0.02, checker.yaw_offset_rad)
    target_p, target_r = pos_b[:, 0].double().numpy()[reached], rot_b[:, 0].double().numpy()[reached]
    assert float(np.linalg.norm(pos - target_p, axis=1).max()) <= 0.01 + 1e-5
    cos = (np.einsum("nij,nij->n", rot, target_r) - 1) / 2
    assert float(np.arccos(np.clip(cos, -1, 1)).max()) <= 0.1 + 1e-4


_NO_NEWTON = """
import sys, torch
from isaaclab_arena.embodiments import make_embodiment
from isaaclab_arena.reachability import IKReachabilityChecker
checker = IKReachabilityChecker(make_embodiment("franka_panda").reachability_robot, device="cpu")
calls = []
original = checker._solve_and_measure
checker._solve_and_measure = lambda pos, *a: calls.append(pos.shape[0]) or original(pos, *a)
g = torch.Generator().manual_seed(3)
n = 256
base = torch.zeros(n, 7)
base[:, 6] = 1.0
objects = torch.stack([(torch.rand(n, generator=g) * 2 - 1) * 1.0, (torch.rand(n, generator=g) * 2 - 1) * 1.0,
                       0.3 + torch.rand(n, generator=g) * 1.1], -1)[:, None]  # all around the arm, near and far
result = checker.check(base, objects)
print(len(calls), int(result.reachable.sum()), int((~result.reachable).sum()), "newton" in sys.modules)
"""


@pytest.mark.slow
def test_a_check_through_every_stage_never_imports_newton():
    """The IK is the project's own kernel in every stage: a check of 256 candidates near and beyond the reach
    boundary (stage 1, then stage 2 for the unreached ones) in a fresh interpreter leaves newton unimported (its
    import cost every robot process about 1.5 s when stages 1 and 2 ran newton.ik's LM)."""
    from _helpers import fresh_interpreter_last_line

    calls, reached, refused, newton = fresh_interpreter_last_line(_NO_NEWTON).split()
    assert int(calls) == 2 and int(reached) > 0 and int(refused) > 0 and newton == "False"

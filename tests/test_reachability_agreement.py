"""Reachability verdicts of the newton.ik checker against an independent IK (Pinocchio + projected DLS in
float64 numpy, ``reachability_reference.py``) on 256 targets: 192 random ones around randomly placed and
turned robots (batched as B = 96 candidates x K = 2 objects) and 64 borderline ones placed 1-12 mm either
side of the outer workspace boundary found by bisection with the reference.

Disagreements are reported. A disagreement is forgiven only within 2 mm of the reference's boundary (a
neighbour 2 mm away along an axis, or along the bisection ray, gets the other reference verdict); any
other one fails the test. Every "reachable" verdict is re-checked in float64 with Pinocchio's FK on the
returned joint positions (inside the joint limits, within both thresholds).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from reachability_reference import READY, PinocchioReach, top_down_target

POS_THR, ROT_THR, Z_OFF = 0.01, 0.1, 0.02
SHOULDER_Z = 0.333  # panda_joint2 height above the base, metres
BORDER_OFFSETS_MM = (-12.0, -6.0, -3.0, -1.0, 1.0, 3.0, 6.0, 12.0)


def _quat_z(yaw):
    return np.stack([np.zeros_like(yaw), np.zeros_like(yaw), np.sin(yaw / 2), np.cos(yaw / 2)], -1)


def _ref_verdict(ref, base_pos, base_quat, obj):
    p, r = top_down_target(base_pos, base_quat, obj, Z_OFF)
    return ref.solve(p, r, POS_THR, ROT_THR)[0] <= 1.0


def _rot_z(yaw):
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


@pytest.fixture(scope="module")
def problem():
    """Targets, the reference verdicts and the (near-boundary) ray geometry of the borderline ones."""
    ref = PinocchioReach()
    rng = np.random.default_rng(7)
    # 96 candidates x 2 objects, random bases (position, yaw) and objects around them
    b = 96
    base_pos = rng.uniform([-0.3, -0.3, 0.5], [0.3, 0.3, 0.9], (b, 3))
    base_quat = _quat_z(rng.uniform(-math.pi, math.pi, b))
    objects = base_pos[:, None] + rng.uniform([-1.0, -1.0, -0.6], [1.0, 1.0, 0.9], (b, 2, 3))
    random_ref = np.array([[_ref_verdict(ref, base_pos[i], base_quat[i], objects[i, k]) for k in range(2)]
                           for i in range(b)])
    # borderline: 8 rays from the shoulder of a robot at the origin (yaw 0); bisect the reference's outer
    # boundary, then targets at fixed offsets either side of it
    rays, border = [], []
    origin, identity = np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0])
    shoulder = np.array([0.0, 0.0, SHOULDER_Z])
    for azimuth, elevation in [(0.0, 0.0), (0.6, -0.3), (-0.9, 0.2), (1.4, -0.6), (-1.8, -0.1), (2.3, 0.35),
                               (-2.6, -0.45), (0.3, 0.6)]:
        d = np.array([math.cos(elevation) * math.cos(azimuth), math.cos(elevation) * math.sin(azimuth),
                      math.sin(elevation)])
        lo, hi = 0.35, 1.2
        assert _ref_verdict(ref, origin, identity, shoulder + lo * d - [0, 0, Z_OFF])
        assert not _ref_verdict(ref, origin, identity, shoulder + hi * d - [0, 0, Z_OFF])
        for _ in range(11):  # ~0.4 mm
            mid = 0.5 * (lo + hi)
            if _ref_verdict(ref, origin, identity, shoulder + mid * d - [0, 0, Z_OFF]):
                lo = mid
            else:
                hi = mid
        boundary = 0.5 * (lo + hi)
        for off in BORDER_OFFSETS_MM:
            border.append(shoulder + (boundary + off / 1000.0) * d - [0, 0, Z_OFF])
            rays.append((d, off))
    border = np.array(border)
    border_ref = np.array([_ref_verdict(ref, origin, identity, t) for t in border])
    return {"ref": ref, "base_pos": base_pos, "base_quat": base_quat, "objects": objects, "random_ref": random_ref,
            "border": border, "border_ref": border_ref, "rays": rays}


@pytest.fixture(scope="module")
def checker():
    from isaaclab_arena.embodiments import make_embodiment
    from isaaclab_arena.reachability import IKReachabilityChecker

    return IKReachabilityChecker(make_embodiment("franka_panda").reachability_robot, device="cpu")


def _near_boundary(ref, base_pos, base_quat, obj, verdict, step=0.002):
    """True when the reference verdict flips within ``step`` of ``obj`` along an axis."""
    for axis in range(3):
        for sign in (-1.0, 1.0):
            probe = np.array(obj, dtype=np.float64)
            probe[axis] += sign * step
            if _ref_verdict(ref, base_pos, base_quat, probe) != verdict:
                return True
    return False


def test_verdicts_agree_with_pinocchio_outside_2mm_of_the_boundary(problem, checker):
    ref = problem["ref"]
    base = torch.tensor(np.concatenate([problem["base_pos"], problem["base_quat"]], 1), dtype=torch.float32)
    res = checker.check(base, torch.tensor(problem["objects"], dtype=torch.float32), Z_OFF, POS_THR, ROT_THR)
    ours = res.reachable.numpy()
    nb = len(problem["border"])
    border_base = torch.tensor([[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]]).repeat(nb, 1)
    res_b = checker.check(border_base, torch.tensor(problem["border"][:, None], dtype=torch.float32), Z_OFF, POS_THR,
                          ROT_THR)
    ours_b = res_b.reachable[:, 0].numpy()
    total = ours.size + nb
    assert total >= 256

    forgiven, failures = [], []
    for i, k in zip(*np.nonzero(ours != problem["random_ref"])):
        ref_v = bool(problem["random_ref"][i, k])
        case = (f"random target {i},{k}: ours={bool(ours[i, k])} reference={ref_v} "
                f"pos_err={res.position_error_m[i, k]:.4f} m rot_err={res.rotation_error_rad[i, k]:.3f} rad")
        near = _near_boundary(ref, problem["base_pos"][i], problem["base_quat"][i], problem["objects"][i, k], ref_v)
        (forgiven if near else failures).append(case)
    for j in np.nonzero(ours_b != problem["border_ref"])[0]:
        d, off = problem["rays"][j]
        case = (f"border target {j} ({off:+.0f} mm): ours={bool(ours_b[j])} reference={bool(problem['border_ref'][j])} "
                f"pos_err={res_b.position_error_m[j, 0]:.4f} m")
        origin, identity = np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0])
        near = abs(off) <= 2.0 or _near_boundary(ref, origin, identity, problem["border"][j], bool(problem["border_ref"][j]))
        (forgiven if near else failures).append(case)
    print(f"\n[reachability] {total} targets, {len(forgiven) + len(failures)} disagreements with Pinocchio, "
          f"{len(failures)} outside 2 mm of the boundary")
    for case in forgiven + failures:
        print("  ", case)
    assert not failures, failures
    # the sample is informative: both verdicts occur in both sets
    assert 0.15 < problem["random_ref"].mean() < 0.85
    assert problem["border_ref"].any() and not problem["border_ref"].all()


def test_reachable_verdicts_hold_in_float64_with_pinocchio_fk(problem, checker):
    ref = problem["ref"]
    base = torch.tensor(np.concatenate([problem["base_pos"], problem["base_quat"]], 1), dtype=torch.float32)
    res = checker.check(base, torch.tensor(problem["objects"], dtype=torch.float32), Z_OFF, POS_THR, ROT_THR)
    q = res.joint_pos.double().numpy()
    checked = 0
    for i, k in zip(*np.nonzero(res.reachable.numpy())):
        assert np.all(q[i, k] >= ref.lower - 1e-6) and np.all(q[i, k] <= ref.upper + 1e-6), q[i, k]
        p_t, r_t = top_down_target(problem["base_pos"][i], problem["base_quat"][i], problem["objects"][i, k], Z_OFF)
        p, r = ref.fk(q[i, k])
        pos_err = np.linalg.norm(p - p_t)
        rot_err = math.acos(max(-1.0, min(1.0, (np.trace(r.T @ r_t) - 1) / 2)))
        assert pos_err <= POS_THR + 1e-5 and rot_err <= ROT_THR + 1e-4, (i, k, pos_err, rot_err)
        assert abs(pos_err - float(res.position_error_m[i, k])) < 1e-4
        checked += 1
    assert checked > 20


def test_unreachable_targets_are_rejected(checker):
    """Bad cases: beyond the arm's reach, straight above the base at shoulder height (the arm cannot fold
    that far within its joint limits), and above its reach are refused; the home TCP pose is accepted."""
    base = torch.tensor([[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]]).repeat(4, 1)
    home_tcp = (0.307, 0.0, 0.485 - Z_OFF)
    objects = torch.tensor([[home_tcp], [(1.4, 0.0, 0.3)], [(0.0, 0.0, 0.3)], [(0.0, 0.0, 1.3)]])
    res = checker.check(base, objects, Z_OFF, POS_THR, ROT_THR)
    assert res.reachable[:, 0].tolist() == [True, False, False, False]
    assert res.position_error_m[0, 0] < 1e-3
    assert torch.all(res.position_error_m[1:, 0] > POS_THR)


def test_verdicts_are_deterministic_and_follow_the_base_pose(checker):
    """Same inputs -> same verdicts; moving a robot and its object together changes nothing; moving the
    robot away from the object makes it unreachable."""
    obj = torch.tensor([[[0.45, 0.1, 0.1]]])
    base = torch.tensor([[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]])
    a = checker.check(base, obj)
    b = checker.check(base, obj)
    assert a.reachable.item() and torch.equal(a.joint_pos, b.joint_pos)
    yaw = 1.0
    rz = torch.tensor(_rot_z(yaw), dtype=torch.float32)
    moved_base = torch.tensor([[2.0, -1.0, 0.3, 0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2)]])
    moved_obj = (rz @ obj[0, 0]) + moved_base[0, :3]
    c = checker.check(moved_base, moved_obj[None, None])
    assert c.reachable.item()
    assert abs(c.position_error_m.item() - a.position_error_m.item()) < 1e-3
    far = checker.check(torch.tensor([[-1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]]), obj)
    assert not far.reachable.item()


def test_mask_skips_objects(checker):
    base = torch.tensor([[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]]).repeat(2, 1)
    objects = torch.tensor([[[0.4, 0.0, 0.1], [3.0, 0.0, 0.0]], [[3.0, 0.0, 0.0], [0.4, 0.1, 0.2]]])
    res = checker.check(base, objects, mask=torch.tensor([[True, False], [False, True]]))
    assert res.evaluated.tolist() == [[True, False], [False, True]]
    assert res.reachable.tolist() == [[True, True], [True, True]]  # the far objects were not asked about
    assert math.isnan(res.position_error_m[0, 1].item())
    full = checker.check(base, objects)
    assert full.all_reachable.tolist() == [False, False]


def test_home_seed_is_franka_ready_pose(checker):
    """The checker seeds from the embodiment's home pose, the one the simulated robot starts in."""
    assert checker.joint_names == [f"panda_joint{i}" for i in range(1, 8)]
    assert np.allclose(checker._home.numpy(), READY, atol=1e-6)

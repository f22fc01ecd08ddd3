"""The IK check's limit polish (``reachability/limit_polish.py``, one warp kernel): every configuration it returns
is inside the joint limits, the errors it reports are those of float64 forward kinematics of that configuration,
it reaches targets a configuration inside the limits reaches from nearby starts (revolute and sliding joints),
reports unreachable targets as missed, and stopping at the first reached start never changes a verdict."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

from isaaclab_arena.reachability.limit_polish import LimitPolish
from isaaclab_arena.reachability.urdf_chain import ChainJoint, UrdfChain

ARMS = ("franka_panda", "kuka_iiwa")
THRESHOLDS = (0.01, 0.1)


@functools.lru_cache(maxsize=None)
def _arm_chain(name: str) -> UrdfChain:
    from isaaclab_arena.embodiments import make_embodiment
    from isaaclab_arena.reachability.urdf_chain import load_urdf_chain

    robot = make_embodiment(name).reachability_robot
    return load_urdf_chain(robot.urdf_path, robot.base_link, robot.tcp_link)


def _slider_chain() -> UrdfChain:
    """Base -> turn about z -> turn about y (0.3 m up) -> slide along x (0.2 m out) -> turn about x -> TCP 0.1 m
    further along x: a chain with a sliding joint, built directly (no URDF file)."""

    def at(x, y, z):
        t = np.eye(4)
        t[:3, 3] = (x, y, z)
        return t

    joints = (
        ChainJoint("turn_z", "revolute", at(0, 0, 0.1), np.array([0.0, 0.0, 1.0]), -2.5, 2.5),
        ChainJoint("turn_y", "revolute", at(0, 0, 0.3), np.array([0.0, 1.0, 0.0]), -1.5, 1.5),
        ChainJoint("slide_x", "prismatic", at(0.2, 0, 0), np.array([1.0, 0.0, 0.0]), 0.0, 0.4),
        ChainJoint("turn_x", "revolute", at(0.05, 0, 0), np.array([1.0, 0.0, 0.0]), -2.0, 2.0),
        ChainJoint("tcp", "fixed", at(0.1, 0, 0), np.array([1.0, 0.0, 0.0]), 0.0, 0.0),
    )
    return UrdfChain("base", "tcp", joints, "")


def _fk64(chain: UrdfChain, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TCP position (N, 3) and rotation (N, 3, 3) of (N, C) joint positions: float64 numpy, joint by joint."""
    n = q.shape[0]
    t = np.repeat(np.eye(4)[None], n, 0)
    c = 0
    for joint in chain.joints:
        t = t @ joint.origin
        if joint.type == "fixed":
            continue
        move = np.repeat(np.eye(4)[None], n, 0)
        if joint.type == "prismatic":
            move[:, :3, 3] = q[:, c, None] * np.asarray(joint.axis)[None]
        else:
            x, y, z = joint.axis
            k = np.array([[0, -z, y], [z, 0, -x], [-y, x, 0]])
            s, co = np.sin(q[:, c])[:, None, None], np.cos(q[:, c])[:, None, None]
            move[:, :3, :3] = np.eye(3) + s * k + (1 - co) * (k @ k)
        t = t @ move
        c += 1
    return t[:, :3, 3], t[:, :3, :3]


def _errors64(chain, q, target_p, target_r):
    p, r = _fk64(chain, q)
    cos = (np.einsum("nij,nij->n", r, target_r) - 1) / 2
    return np.linalg.norm(p - target_p, axis=1), np.arccos(np.clip(cos, -1, 1))


def _polish(chain, target_p, target_r, starts, **kw):
    lower = torch.tensor(chain.lower, dtype=torch.float32)
    upper = torch.tensor(chain.upper, dtype=torch.float32)
    q, pe, re = LimitPolish(chain, lower, upper, "cpu").polish(
        torch.tensor(target_p, dtype=torch.float32), torch.tensor(target_r, dtype=torch.float32),
        torch.tensor(starts, dtype=torch.float32), THRESHOLDS, **kw)
    return q.double().numpy(), pe.double().numpy(), re.double().numpy()


def _problems(chain, n, seed, noise_rad=0.3, starts=3):
    """Targets reached by random configurations inside the limits (kept 0.1 from them), and ``starts`` starts per
    target: the configuration moved by ``noise_rad`` per joint (clamped), as a near miss's starts would be."""
    rng = np.random.default_rng(seed)
    lo, hi = chain.lower, chain.upper
    q = lo + 0.1 + rng.random((n, lo.size)) * (hi - lo - 0.2)
    target_p, target_r = _fk64(chain, q)
    s = np.clip(q[:, None] + rng.normal(0, noise_rad, (n, starts, lo.size)), lo, hi)
    return q, target_p, target_r, s


def _assert_honest(chain, q, pe, re, target_p, target_r):
    """Inside the limits, and the reported errors are float64 FK's of the returned configuration."""
    assert bool((q >= chain.lower - 1e-6).all() and (q <= chain.upper + 1e-6).all())
    pe64, re64 = _errors64(chain, q, target_p, target_r)
    assert float(np.abs(pe - pe64).max()) < 2e-5
    assert float(np.abs(re - re64).max()) < 2e-3  # arccos near 0 amplifies float32 rounding of the trace


@pytest.mark.parametrize("arm", ARMS)
def test_reaches_targets_from_near_starts_and_reports_float64_errors(arm):
    chain = _arm_chain(arm)
    _, target_p, target_r, starts = _problems(chain, 200, seed=1)
    q, pe, re = _polish(chain, target_p, target_r, starts)
    _assert_honest(chain, q, pe, re, target_p, target_r)
    reached = np.maximum(pe / THRESHOLDS[0], re / THRESHOLDS[1]) <= 1
    assert reached.mean() >= 0.9, f"{arm}: only {reached.mean():.2f} of reachable targets reached from near starts"


def test_a_start_at_the_solution_is_returned_as_is():
    chain = _arm_chain("kuka_iiwa")
    q0, target_p, target_r, _ = _problems(chain, 20, seed=2)
    q, pe, re = _polish(chain, target_p, target_r, q0[:, None])
    assert np.allclose(q, q0, atol=1e-6)
    assert float(pe.max()) < 1e-5 and float(re.max()) < 2e-3


@pytest.mark.parametrize("arm", ARMS)
def test_joints_pushed_past_their_limits_are_held_inside(arm):
    """Targets reached only with the fourth joint 0.4 rad past its upper limit, started at that limit: every
    iterate is clamped and the joint is held, so the result stays inside the limits whatever it reaches."""
    chain = _arm_chain(arm)
    rng = np.random.default_rng(3)
    lo, hi = chain.lower, chain.upper
    q = lo + 0.1 + rng.random((60, lo.size)) * (hi - lo - 0.2)
    q[:, 3] = hi[3] + 0.4
    target_p, target_r = _fk64(chain, q)
    starts = np.clip(q, lo, hi)[:, None]
    out, pe, re = _polish(chain, target_p, target_r, starts)
    _assert_honest(chain, out, pe, re, target_p, target_r)
    assert bool((out[:, 3] <= hi[3] + 1e-6).all())


def test_a_joint_at_its_limit_is_held_and_the_others_take_up_the_motion():
    """Targets of configurations with the Franka's fourth joint at its upper limit, started there with the other
    joints moved: a step that would push it further holds it and is solved again without its column, so 10
    iterations reach 98 % (clamping the full step instead reaches 76 %)."""
    chain = _arm_chain("franka_panda")
    rng = np.random.default_rng(3)
    lo, hi = chain.lower, chain.upper
    q = lo + 0.1 + rng.random((300, lo.size)) * (hi - lo - 0.2)
    q[:, 3] = hi[3]
    target_p, target_r = _fk64(chain, q)
    starts = np.clip(q + rng.normal(0, 0.3, q.shape), lo, hi)
    starts[:, 3] = hi[3]
    out, pe, re = _polish(chain, target_p, target_r, starts[:, None], iterations=10)
    _assert_honest(chain, out, pe, re, target_p, target_r)
    assert (np.maximum(pe / THRESHOLDS[0], re / THRESHOLDS[1]) <= 1).mean() >= 0.95


def test_unreachable_targets_are_reported_as_missed():
    chain = _arm_chain("franka_panda")
    q0, target_p, target_r, starts = _problems(chain, 10, seed=4)
    far = target_p + np.array([3.0, 0.0, 0.0])
    q, pe, re = _polish(chain, far, target_r, starts)
    _assert_honest(chain, q, pe, re, far, target_r)
    assert bool((pe > 1.5).all())


def test_a_sliding_joint_chain():
    chain = _slider_chain()
    q0, target_p, target_r, starts = _problems(chain, 100, seed=5, noise_rad=0.15, starts=1)
    q, pe, re = _polish(chain, target_p, target_r, starts)
    _assert_honest(chain, q, pe, re, target_p, target_r)
    reached = np.maximum(pe / THRESHOLDS[0], re / THRESHOLDS[1]) <= 1
    assert reached.mean() >= 0.9
    # the slide moved from where it started to the length of the configuration that made the target
    assert float(np.median(np.abs(starts[reached, 0, 2] - q0[reached, 2]))) > 0.05
    assert float(np.median(np.abs(q[reached, 2] - q0[reached, 2]))) < 5e-3


@pytest.mark.parametrize("arm", ARMS)
def test_stopping_at_the_first_reached_start_changes_no_verdict(arm):
    """A stopped polish's iterates are a prefix of the full polish's (starts in turn, each from its own start),
    so the full one's best score is never worse, and both reach the same problems."""
    chain = _arm_chain(arm)
    _, target_p, target_r, starts = _problems(chain, 120, seed=6, noise_rad=0.8, starts=4)
    rng = np.random.default_rng(7)  # half the targets moved by 2-60 cm: some still reachable, some not
    shift = rng.normal(size=(60, 3))
    target_p[:60] += shift / np.linalg.norm(shift, axis=1, keepdims=True) * rng.uniform(0.02, 0.6, (60, 1))
    q_s, pe_s, re_s = _polish(chain, target_p, target_r, starts)
    q_f, pe_f, re_f = _polish(chain, target_p, target_r, starts, stop_score=None)
    score_s = np.maximum(pe_s / THRESHOLDS[0], re_s / THRESHOLDS[1])
    score_f = np.maximum(pe_f / THRESHOLDS[0], re_f / THRESHOLDS[1])
    assert bool((score_f <= score_s + 1e-6).all())
    assert np.array_equal(score_s <= 1, score_f <= 1)
    assert 0 < int((score_s <= 1).sum()) < score_s.size  # the sample holds reached and missed problems
    # the full polish goes on after the first reached iterate (and finds better ones); the stopped one does not
    reached = score_s <= 1
    assert float(np.median(score_f[reached])) < 0.5 * float(np.median(score_s[reached]))


def test_no_problems():
    chain = _arm_chain("franka_panda")
    q, pe, re = _polish(chain, np.zeros((0, 3)), np.zeros((0, 3, 3)), np.zeros((0, 2, 7)))
    assert q.shape == (0, 7) and pe.shape == (0,) and re.shape == (0,)


@pytest.mark.parametrize("starts_shape", [(3, 0, 7), (3, 2, 6), (2, 2, 7)],
                         ids=["no start", "six joints for seven", "two problems for three targets"])
def test_mismatched_shapes_are_refused_with_what_was_expected(starts_shape):
    chain = _arm_chain("franka_panda")
    lower = torch.tensor(chain.lower, dtype=torch.float32)
    upper = torch.tensor(chain.upper, dtype=torch.float32)
    polish = LimitPolish(chain, lower, upper, "cpu")
    with pytest.raises(ValueError, match=r"expected pos \(P, 3\).*starts \(P, S >= 1, 7\)"):
        polish.polish(torch.zeros(3, 3), torch.eye(3).expand(3, 3, 3), torch.zeros(starts_shape), THRESHOLDS)

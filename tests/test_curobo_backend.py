"""The optional cuRobo backend of ``ik_reachable`` (``isaaclab_arena_curobo``), read against cuRobo's documented API.

cuRobo cannot be installed here (CUDA build), so the tests that run the adapter use ``tests/curobo_standin.py``:
cuRobo's documented IK API (class and field names, tensor shapes, units; ``rotation_error`` as cuRobo defines it,
``|sin(theta / 2)|``) driven by Pinocchio forward kinematics of the URDF its robot configuration names, installed
as the ``curobo`` modules. Verdicts are re-checked with the project's independent Pinocchio reference
(``reachability_reference.py``) where they claim a reach.

Covered: the rotation-error conversion (a grasp 0.15 rad off is refused at the 0.1 rad threshold; read as
radians, cuRobo's raw 0.075 passed), joint names from the robot configuration, the backend choice (cuRobo only
on a CUDA device with cuRobo importable, else the builtin backend and one line saying why), and joint limits from the
embodiment's URDF (a grasp reachable only inside the shipped URDF's limits, refused by cuRobo's bundled ones).
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import os

import numpy as np
import pytest
import torch

import curobo_standin
from isaaclab_arena.embodiments import make_embodiment
from isaaclab_arena.reachability.backends import backend_name_for, ik_backend_for
from isaaclab_arena.relations.object_placer_params import ReachabilityConfig
from reachability_reference import ARM, PinocchioReach, rotation_angle, top_down_target

ORIGIN = torch.tensor([[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]])
#: A top-down grasp 0.10 m ahead of and 0.41 m below the arm's base (object at z -0.43, TCP 0.02 above it):
#: reached with joints 2 and 5 beyond cuRobo's bundled Franka limits, inside the shipped URDF's.
BAND_OBJECT = [0.10, 0.0, -0.43]


@pytest.fixture
def standin(tmp_path, monkeypatch):
    """cuRobo's documented API as the ``curobo`` modules, with a bundled-like Franka config in ``tmp_path``."""
    import isaaclab_arena_curobo

    robot = make_embodiment("franka_panda")
    curobo_standin.write_bundled_franka(str(tmp_path), robot.reachability_robot.urdf_path)
    module = curobo_standin.install(monkeypatch, str(tmp_path))
    isaaclab_arena_curobo.register_backend()  # what its extension's setup does; the checker cache starts empty
    yield module
    isaaclab_arena_curobo.register_backend()  # drops the checkers built on the stand-in


def _backend_lines(capsys) -> list[str]:
    """The backend choice's lines printed since the last call (warp's start-up banner left out)."""
    return [line for line in capsys.readouterr().out.splitlines() if line.startswith("[placement] ik_reachable:")]


def _simulate_cuda(monkeypatch):
    from isaaclab_arena_curobo import backend

    monkeypatch.setattr(backend, "is_cuda_device", lambda device: True)


def _fk_check(result, base, objects, config, b, k):
    """The returned joints of (b, k), measured by the Pinocchio reference: (position error m, angle rad)."""
    ref = PinocchioReach()
    q = result.joint_pos[b, k].double().numpy()
    assert result.joint_names == ARM
    p_t, r_t = top_down_target(base[b, :3].double().numpy(), base[b, 3:].double().numpy(),
                               objects[b, k].double().numpy(), config.grasp_z_offset_m)
    p, r = ref.fk(q)
    assert np.all(q >= ref.lower - 1e-5) and np.all(q <= ref.upper + 1e-5)
    return float(np.linalg.norm(p - p_t)), rotation_angle(r, r_t)


def test_rotation_error_conversion_is_exact():
    from isaaclab_arena_curobo import curobo_rotation_error_to_rad, rad_to_curobo_rotation_error

    rng = np.random.default_rng(0)
    for theta in (0.0, 0.05, 0.1, 0.15, 1.0, 2.5, math.pi):
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        q1 = rng.normal(size=4)
        q1 /= np.linalg.norm(q1)
        rel = np.array([math.cos(theta / 2), *(math.sin(theta / 2) * axis)])
        w1, v1, w2, v2 = q1[0], q1[1:], rel[0], rel[1:]
        q2 = np.array([w1 * w2 - v1 @ v2, *(w1 * v2 + w2 * v1 + np.cross(v1, v2))])  # q1 * rel: theta away
        e = curobo_standin.quaternion_distance(q1, q2)  # cuRobo's rotation error
        assert e == pytest.approx(math.sin(theta / 2), abs=1e-12)
        assert float(curobo_rotation_error_to_rad(torch.tensor(e, dtype=torch.float64))) == \
            pytest.approx(theta, abs=1e-6)
        assert rad_to_curobo_rotation_error(theta) == pytest.approx(e, abs=1e-12)
    # the old reading: 0.1 of cuRobo's units is 0.2003 rad; 0.15 rad is 0.0749 and passed a 0.1 "rad" threshold
    old_reading = float(curobo_rotation_error_to_rad(torch.tensor(0.1, dtype=torch.float64)))
    assert old_reading == pytest.approx(0.20034, abs=1e-5)
    assert math.sin(0.15 / 2) < 0.1


def test_without_curobo_the_builtin_backend_checks_the_robot_and_one_line_says_why(capsys):
    import isaaclab_arena_curobo
    from isaaclab_arena.embodiments.embodiment import Embodiment
    from isaaclab_arena.reachability.ik_reachability import IKReachabilityChecker

    assert importlib.util.find_spec("curobo") is None  # not installable here
    isaaclab_arena_curobo.register_backend()  # what its extension's setup does (importing registers nothing)
    assert not isaaclab_arena_curobo.is_curobo_available()
    robot = make_embodiment("franka_panda")
    assert robot.curobo_config == "franka.yml" and backend_name_for(robot) == "curobo"  # preferred, when it can run
    capsys.readouterr()
    assert isinstance(ik_backend_for(robot, "cpu"), IKReachabilityChecker)
    lines = _backend_lines(capsys)
    assert len(lines) == 1, lines
    assert lines[0].startswith("[placement] ik_reachable: 'robot' is checked by the builtin IK backend, not curobo: ")
    assert "cuRobo is not installed (no module named 'curobo')" in lines[0] and "runs on 'cpu'" in lines[0]
    assert isinstance(ik_backend_for(robot, "cpu"), IKReachabilityChecker)
    assert _backend_lines(capsys) == []  # once per robot and device
    assert isaaclab_arena_curobo.unusable_reason("cuda:0").startswith("cuRobo is not installed")
    plain = Embodiment("other", dataclasses.replace(robot.description, curobo_config=None))
    assert backend_name_for(plain) == "builtin"
    assert isinstance(ik_backend_for(plain, "cpu"), IKReachabilityChecker)
    assert _backend_lines(capsys) == []  # no cuRobo config: nothing skipped, nothing said


def test_cpu_placement_uses_the_builtin_backend_even_with_curobo(standin, capsys):
    from isaaclab_arena.reachability.ik_reachability import IKReachabilityChecker
    from isaaclab_arena_curobo import is_curobo_available, unusable_reason

    assert is_curobo_available()
    assert unusable_reason("cuda:1") is None
    robot = make_embodiment("franka_panda")
    capsys.readouterr()
    assert isinstance(ik_backend_for(robot, "cpu"), IKReachabilityChecker)
    assert _backend_lines(capsys) == ["[placement] ik_reachable: 'robot' is checked by the builtin IK backend, not "
                                      "curobo: cuRobo needs a CUDA device and the placement runs on 'cpu'"]
    assert standin.CALLS == []


def test_cuda_placement_uses_curobo(standin, monkeypatch, capsys):
    """On a CUDA device (simulated: this machine has none) with cuRobo importable, cuRobo checks the robot."""
    from isaaclab_arena_curobo import backend

    built = []

    class Recorder:
        def __init__(self, embodiment, device):
            built.append((embodiment.name, device))

    monkeypatch.setattr(backend, "CuroboIKChecker", Recorder)
    capsys.readouterr()
    checker = ik_backend_for(make_embodiment("franka_panda"), "cuda:0")
    assert isinstance(checker, Recorder) and built == [("robot", "cuda:0")]
    assert _backend_lines(capsys) == []


def test_adapter_gives_curobo_end_effector_goals_and_radian_verdicts(standin):
    from isaaclab_arena_curobo import CuroboIKChecker

    robot = make_embodiment("franka_panda")
    checker = CuroboIKChecker(robot, "cpu")
    yaw = math.pi / 2
    base = torch.tensor([[1.0, 2.0, 0.5, 0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2)]])
    # world targets: 0.4 m and 1.0 m in front of the turned base (its +X is world +Y), 0.1 m below it
    objects = torch.tensor([[[1.0, 2.4, 0.38], [1.0, 3.0, 0.38]]])
    config = ReachabilityConfig(embodiment=robot, ik_position_threshold_m=0.01, ik_rotation_threshold_rad=0.1)
    result = checker.check_config(base, objects, config)
    position, quaternion, solver_config, raw = standin.CALLS[-1]
    assert solver_config.position_threshold == 0.01
    assert solver_config.rotation_threshold == pytest.approx(math.sin(0.05))  # 0.1 rad in cuRobo's units
    assert solver_config.robot_config.kinematics.kinematics_config.ee_link == "panda_hand"
    # grasp 2 cm above the object: TCP at base-frame (0.4, 0, -0.1); the hand is 0.105 m above the TCP
    torch.testing.assert_close(position, torch.tensor([[0.4, 0.0, -0.1 + 0.105], [1.0, 0.0, -0.1 + 0.105]]),
                               atol=1e-5, rtol=0)
    w, x, y, z = quaternion[0].tolist()  # wxyz unit quaternion mapping z to -z (top-down)
    assert abs(w * w + x * x + y * y + z * z - 1) < 1e-5 and abs(1 - 2 * (x * x + y * y) + 1) < 1e-5
    assert result.reachable.tolist() == [[True, False]]
    assert result.position_error_m[0, 1].item() > 0.1  # 1.0 m ahead: out of reach
    torch.testing.assert_close(result.rotation_error_rad, 2 * torch.asin(raw.rotation_error.reshape(1, 2)))
    pos_err, angle = _fk_check(result, base, objects, config, 0, 0)
    assert pos_err <= 0.01 and angle <= 0.1
    assert angle == pytest.approx(result.rotation_error_rad[0, 0].item(), abs=1e-3)


def test_joint_names_come_from_the_robot_config(standin):
    from curobo.wrap.reacher.ik_solver import IKSolver

    from isaaclab_arena_curobo import CuroboIKChecker

    robot = make_embodiment("franka_panda")
    checker = CuroboIKChecker(robot, "cpu")
    config = ReachabilityConfig(embodiment=robot)
    result = checker.check_config(ORIGIN, torch.tensor([[[0.45, 0.0, 0.0]]]), config)
    assert not hasattr(IKSolver, "joint_names")  # not part of the documented API the adapter relies on
    assert result.joint_names == checker.robot_config.kinematics.kinematics_config.joint_names == ARM
    assert tuple(result.joint_pos.shape) == (1, 1, 7) and result.reachable.tolist() == [[True]]


@pytest.mark.parametrize("threshold_rad, reachable", [(0.1, False), (0.2, True)])
def test_rotation_error_is_judged_in_radians(standin, threshold_rad, reachable):
    """A solution 0.15 rad off (joint 7 turned by 0.15 rad: the TCP stays put, the tool turns about its axis)
    is refused at 0.1 rad and accepted at 0.2 rad. Read as radians, cuRobo's raw error sin(0.075) = 0.075
    passed the 0.1 threshold."""
    from isaaclab_arena_curobo import CuroboIKChecker

    robot = make_embodiment("franka_panda")
    checker = CuroboIKChecker(robot, "cpu")
    curobo_standin.SOLUTION_OFFSET_RAD["panda_joint7"] = 0.15
    objects = torch.tensor([[[0.45, 0.0, 0.0]]])
    config = ReachabilityConfig(embodiment=robot, ik_rotation_threshold_rad=threshold_rad)
    result = checker.check_config(ORIGIN, objects, config)
    raw = standin.CALLS[-1][3]
    assert raw.rotation_error.item() == pytest.approx(math.sin(0.075), abs=1e-5)
    assert result.rotation_error_rad.item() == pytest.approx(0.15, abs=1e-4)
    assert result.position_error_m.item() < 1e-4
    assert result.reachable.tolist() == [[reachable]]
    pos_err, angle = _fk_check(result, ORIGIN, objects, config, 0, 0)
    assert angle == pytest.approx(0.15, abs=1e-4) and pos_err < 1e-4


def test_joint_limits_come_from_the_embodiment_urdf(standin):
    """cuRobo's bundled Franka limits are 0.0698 rad inside the shipped URDF's on every arm joint. The adapter
    hands cuRobo the embodiment's URDF, so both backends judge the shipped limits: a grasp reachable only beyond
    the bundled limits is reachable, as the builtin backend and the Pinocchio reference find it."""
    from curobo.types.base import TensorDeviceType
    from curobo.types.math import Pose
    from curobo.types.robot import RobotConfig
    from curobo.util_file import get_robot_configs_path, join_path, load_yaml
    from curobo.wrap.reacher.ik_solver import IKSolver, IKSolverConfig

    from isaaclab_arena.reachability.ik_reachability import IKReachabilityChecker
    from isaaclab_arena_curobo import CuroboIKChecker, rad_to_curobo_rotation_error

    robot = make_embodiment("franka_panda")
    checker = CuroboIKChecker(robot, "cpu")
    ref = PinocchioReach()
    limits = checker.robot_config.kinematics.get_joint_limits()
    assert limits.joint_names == ARM
    np.testing.assert_allclose(limits.position.double().numpy(), np.stack([ref.lower, ref.upper]), atol=1e-6)
    bundled = np.array([curobo_standin.BUNDLED_FRANKA_LIMITS[n] for n in ARM]).T
    np.testing.assert_allclose(np.stack([ref.lower, ref.upper]) - bundled,
                               np.array([[-0.0698] * 7, [0.0698] * 7]), atol=1e-4)
    assert checker.robot_cfg["kinematics"]["urdf_path"] == os.path.abspath(robot.reachability_robot.urdf_path)
    assert checker.robot_cfg["kinematics"]["lock_joints"] == {"panda_finger_joint1": 0.04, "panda_finger_joint2": 0.04}

    objects = torch.tensor([[BAND_OBJECT]])
    config = ReachabilityConfig(embodiment=robot, ik_position_threshold_m=0.005, ik_rotation_threshold_rad=0.05)
    result = checker.check_config(ORIGIN, objects, config)
    assert result.reachable.tolist() == [[True]]
    q = result.joint_pos[0, 0].double().numpy()
    outside_bundled = [n for n, v in zip(ARM, q) if not
                       curobo_standin.BUNDLED_FRANKA_LIMITS[n][0] <= v <= curobo_standin.BUNDLED_FRANKA_LIMITS[n][1]]
    assert outside_bundled, q  # the solution needs the band between the two limit sets
    pos_err, angle = _fk_check(result, ORIGIN, objects, config, 0, 0)
    assert pos_err <= 0.005 and angle <= 0.05
    # the builtin backend agrees
    builtin = IKReachabilityChecker(robot.reachability_robot, device="cpu").check_config(ORIGIN, objects, config)
    assert builtin.reachable.tolist() == [[True]]

    # cuRobo with its bundled configuration (what the adapter handed it before): the same hand goal is refused
    ta = TensorDeviceType(device=torch.device("cpu"))
    bundled_cfg = RobotConfig.from_dict(load_yaml(join_path(get_robot_configs_path(), "franka.yml"))["robot_cfg"], ta)
    solver = IKSolver(IKSolverConfig.load_from_robot_config(
        bundled_cfg, None, tensor_args=ta, num_seeds=100, position_threshold=0.005,
        rotation_threshold=rad_to_curobo_rotation_error(0.05), self_collision_check=False, use_cuda_graph=False))
    goal_position, goal_quaternion = standin.CALLS[-1][0], standin.CALLS[-1][1]
    refused = solver.solve_batch(Pose(goal_position, goal_quaternion))
    assert refused.success.tolist() == [[False]]
    assert refused.position_error.item() > 0.01 or refused.rotation_error.item() > 0.025


def test_ik_reachable_runs_on_curobo_on_cuda(standin, monkeypatch):
    """The placement's ``ik_reachable`` on a (simulated) CUDA device: one batched cuRobo call for the candidates,
    whose verdicts are the adapter's reading of cuRobo's result."""
    from test_ik_reachable_check import _placer, _scene

    from isaaclab_arena_curobo import CuroboIKChecker

    _simulate_cuda(monkeypatch)
    assets, robot = _scene()
    assert isinstance(ik_backend_for(robot, "cpu"), CuroboIKChecker)
    before = len(standin.CALLS)
    vb = _placer(robot).place_batch(assets, torch.zeros(8, dtype=torch.long), torch.arange(8), num_envs=1)
    assert len(standin.CALLS) == before + 1  # one batched cuRobo call for the 8 candidates
    goals, raw = standin.CALLS[-1][0], standin.CALLS[-1][3]
    assert goals.shape == (8, 3)
    angle = 2 * torch.asin(raw.rotation_error.reshape(8).clamp(0, 1))
    expected = raw.success.reshape(8) & (raw.position_error.reshape(8) <= 0.01) & (angle <= 0.1)
    torch.testing.assert_close(vb.check_results["ik_reachable"], expected)
    assert bool(expected.any()) and not bool(expected.all())

"""Registration of the optional cuRobo backend of ``ik_reachable`` (``isaaclab_arena_curobo``), both branches.

cuRobo cannot be installed here (CUDA build), so the "cuRobo imports" branch uses a stand-in ``curobo`` package
written into a temporary folder with the few names the adapter uses (``IKSolver``, ``IKSolverConfig``, ``Pose``,
``RobotConfig``, ``TensorDeviceType``, ``util_file``); its solver records the goals it is given and reaches
those within 0.7 m of the base. The tests check which backend checks which embodiment, and that the adapter
hands cuRobo the right goals (end-effector link positions with the TCP offset removed, wxyz quaternions)."""

from __future__ import annotations

import dataclasses
import importlib
import math
import sys
import textwrap

import pytest
import torch

from isaaclab_arena.embodiments import make_embodiment
from isaaclab_arena.reachability.backends import backend_name_for, ik_backend_for, unregister_ik_backend
from isaaclab_arena.relations.object_placer_params import ReachabilityConfig

STAND_IN = {
    "curobo/__init__.py": "CALLS = []\n",
    "curobo/wrap/__init__.py": "",
    "curobo/wrap/reacher/__init__.py": "",
    "curobo/wrap/reacher/ik_solver.py": """
        import torch
        import curobo

        class IKSolverConfig:
            @staticmethod
            def load_from_robot_config(robot_cfg, world_cfg, rotation_threshold, position_threshold, num_seeds,
                                       self_collision_check, self_collision_opt, tensor_args, use_cuda_graph):
                return dict(robot_cfg=robot_cfg, rotation_threshold=rotation_threshold,
                            position_threshold=position_threshold, num_seeds=num_seeds)

        class _Result:
            def __init__(self, n, ok):
                self.success = ok.reshape(n, 1)
                self.position_error = torch.where(ok, 0.001, 0.5).reshape(n, 1)
                self.rotation_error = torch.zeros(n, 1)
                self.solution = torch.zeros(n, 1, 7)

        class IKSolver:
            joint_names = [f"panda_joint{i}" for i in range(1, 8)]

            def __init__(self, config):
                self.config = config

            def solve_batch(self, goal):
                curobo.CALLS.append((goal.position.clone(), goal.quaternion.clone(), self.config))
                n = goal.position.shape[0]
                return _Result(n, goal.position.norm(dim=-1) < 0.7)
    """,
    "curobo/types/__init__.py": "",
    "curobo/types/base.py": """
        class TensorDeviceType:
            def __init__(self, device=None):
                self.device = device
    """,
    "curobo/types/math.py": """
        class Pose:
            def __init__(self, position, quaternion):
                self.position, self.quaternion = position, quaternion
    """,
    "curobo/types/robot.py": """
        class RobotConfig:
            @staticmethod
            def from_dict(data, tensor_args=None):
                return ("robot_config", data["kinematics"]["ee_link"])
    """,
    "curobo/util_file.py": """
        def get_robot_configs_path():
            return "/configs"

        def join_path(a, b):
            return a + "/" + b

        def load_yaml(path):
            assert path == "/configs/franka.yml", path
            return {"robot_cfg": {"kinematics": {"base_link": "base_link", "ee_link": "panda_hand"}}}
    """,
}


def _forget_curobo():
    for name in [m for m in sys.modules if m == "curobo" or m.startswith("curobo.")]:
        del sys.modules[name]


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    for rel, text in STAND_IN.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    _forget_curobo()
    monkeypatch.syspath_prepend(str(tmp_path))
    import isaaclab_arena_curobo

    importlib.reload(isaaclab_arena_curobo)
    yield sys.modules["curobo"]
    unregister_ik_backend("curobo")
    _forget_curobo()


def test_without_curobo_nothing_registers_and_newton_checks_the_robot():
    import isaaclab_arena_curobo
    from isaaclab_arena.reachability.ik_reachability import IKReachabilityChecker

    assert importlib.util.find_spec("curobo") is None  # not installable here
    assert importlib.reload(isaaclab_arena_curobo).REGISTERED is False
    robot = make_embodiment("franka_panda")
    assert robot.curobo_config == "franka.yml"
    assert backend_name_for(robot) == "newton"
    assert isinstance(ik_backend_for(robot), IKReachabilityChecker)


def test_with_curobo_the_backend_registers_for_robots_with_a_curobo_config(stand_in):
    from isaaclab_arena.embodiments.embodiment import Embodiment
    from isaaclab_arena_curobo import REGISTERED, CuroboIKChecker

    assert REGISTERED is True
    robot = make_embodiment("franka_panda")
    assert backend_name_for(robot) == "curobo"
    assert isinstance(ik_backend_for(robot, "cpu"), CuroboIKChecker)
    plain = Embodiment("other", dataclasses.replace(robot.description, curobo_config=None))
    assert backend_name_for(plain) == "newton"  # no cuRobo config: the default backend


def test_curobo_adapter_gives_curobo_end_effector_goals(stand_in):
    robot = make_embodiment("franka_panda")
    checker = ik_backend_for(robot, "cpu")
    yaw = math.pi / 2
    base = torch.tensor([[1.0, 2.0, 0.5, 0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2)]])
    # world targets: 0.4 m and 1.0 m in front of the turned base (its +X is world +Y), 0.1 m below it
    objects = torch.tensor([[[1.0, 2.4, 0.38], [1.0, 3.0, 0.38]]])
    config = ReachabilityConfig(embodiment=robot, ik_position_threshold_m=0.01, ik_rotation_threshold_rad=0.1)
    result = checker.check_config(base, objects, config)
    position, quaternion, solver_config = stand_in.CALLS[-1]
    assert solver_config["robot_cfg"] == ("robot_config", "panda_hand")
    assert solver_config["position_threshold"] == 0.01 and solver_config["rotation_threshold"] == 0.1
    # grasp 2 cm above the object: TCP at base-frame (0.4, 0, -0.1); the hand is 0.105 m above the TCP
    torch.testing.assert_close(position, torch.tensor([[0.4, 0.0, -0.1 + 0.105], [1.0, 0.0, -0.1 + 0.105]]),
                               atol=1e-5, rtol=0)
    # top-down (tool z down), tool x toward the object turned by the robot's home yaw: a wxyz unit quaternion
    # whose rotation maps z to -z
    w, x, y, z = quaternion[0].tolist()
    assert abs(w * w + x * x + y * y + z * z - 1) < 1e-5 and abs(1 - 2 * (x * x + y * y) + 1) < 1e-5
    assert result.reachable.tolist() == [[True, False]]
    assert result.position_error_m[0, 1].item() == pytest.approx(0.5)
    assert result.joint_names == [f"panda_joint{i}" for i in range(1, 8)]


def test_ik_reachable_runs_on_curobo_when_registered(stand_in):
    from test_ik_reachable_check import _placer, _scene

    assets, robot = _scene()
    before = len(stand_in.CALLS)
    vb = _placer(robot).place_batch(assets, torch.zeros(8, dtype=torch.long), torch.arange(8), num_envs=1)
    assert len(stand_in.CALLS) == before + 1  # one batched cuRobo call for the 8 candidates
    goals = stand_in.CALLS[-1][0]
    assert goals.shape == (8, 3)
    torch.testing.assert_close(vb.check_results["ik_reachable"], goals.norm(dim=-1) < 0.7)

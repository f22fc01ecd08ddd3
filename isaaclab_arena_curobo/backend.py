"""cuRobo IK behind the ``ik_reachable`` check (cuRobo's ``IKSolver`` / ``IKSolverConfig`` API, v0.7 era).

:class:`CuroboIKChecker` answers the same question as the default builtin checker: can the robot's TCP reach a
top-down grasp ``grasp_z_offset_m`` above each object from each candidate's base pose, within the position and
rotation thresholds of ``ReachabilityConfig``, with its joints inside the limits of the embodiment's URDF.

How: the grasp targets go into each candidate's base frame (``top_down_grasp_targets``, the same targets as the
builtin backend), the TCP targets become targets of cuRobo's end-effector link (the TCP offset
``RobotDescription.curobo_tcp_offset_m`` removed), and one ``IKSolver.solve_batch`` call solves every
(candidate, object) problem. Positions metres; quaternions xyzw here, wxyz in cuRobo's ``Pose``.

What the adapter takes from cuRobo's documented API, and how it fits the project's units:

- **Rotation error.** ``IKResult.rotation_error`` is not an angle. cuRobo documents it as a geodesic
  quaternion distance (its suggested threshold is 0.05), and its pose distance is the norm of the vector part
  of the relative quaternion ``q_goal^-1 * q``: ``e = |sin(theta / 2)|`` for a rotation of ``theta`` radians
  between the goal and the solution (``theta`` in [0, pi]). So ``theta = 2 * asin(min(e, 1))``
  (:func:`curobo_rotation_error_to_rad`), and the project's threshold ``t`` radians is handed to cuRobo as
  ``sin(t / 2)`` (:func:`rad_to_curobo_rotation_error`), which makes cuRobo's ``success`` and the verdict
  judge the same angle. Read as radians, cuRobo's 0.1 accepted rotations up to ``2 * asin(0.1) = 0.2003`` rad.
- **Joint names** come from the kinematics of the robot configuration
  (``RobotConfig.kinematics.kinematics_config.joint_names``: cuRobo's actuated joints, the order of
  ``IKResult.solution``'s last axis), not from the solver (``IKSolver.joint_names`` exists only in some
  cuRobo versions).
- **Joint limits** are the embodiment's: the robot configuration named by ``Embodiment.curobo_config``
  (collision spheres, locked joints, retract pose) is loaded with its ``kinematics.urdf_path`` replaced by the
  embodiment's URDF (and ``base_link`` by its root link), so cuRobo parses the same ``<limit>`` values as the
  builtin backend. Measured for the Franka: cuRobo's bundled ``franka_panda.urdf`` has the shipped URDF's
  *soft* limits (its ``safety_controller`` values), 0.0698 rad inside the shipped hard limits on every arm
  joint (e.g. joint 4 upper -0.0698 against 0.0, joint 6 lower -0.0175 against -0.0873, joint 2 +-1.7628
  against +-1.8326); with the bundled URDF, cuRobo refused grasps that the builtin backend and the simulated
  robot (USD built from the shipped URDF) reach. Every solution is also checked against the URDF's limits
  before it counts as reachable.
- **Device.** cuRobo runs on CUDA only. :func:`unusable_reason` says why it cannot run for a placement
  device (not CUDA, or cuRobo does not import); the backend choice
  (``isaaclab_arena.reachability.backends.ik_backend_for``) then uses the project's builtin backend and prints
  that reason in one line.
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import math
import os
import xml.etree.ElementTree as ET

import torch

BACKEND_NAME = "curobo"

#: The cuRobo module the adapter's solver lives in (its import tells whether cuRobo is installed and usable).
_CUROBO_IK_MODULE = "curobo.wrap.reacher.ik_solver"


def curobo_rotation_error_to_rad(error: torch.Tensor) -> torch.Tensor:
    """cuRobo's ``IKResult.rotation_error`` as an angle in radians.

    cuRobo's rotation error is the norm of the vector part of the relative quaternion between goal and solution,
    ``e = |sin(theta / 2)|``; the angle is ``theta = 2 * asin(min(e, 1))`` in [0, pi] (exact, not a small-angle
    approximation).
    """
    return 2.0 * torch.asin(error.clamp(0.0, 1.0))


def rad_to_curobo_rotation_error(angle_rad: float) -> float:
    """The threshold ``angle_rad`` (radians) in cuRobo's rotation-error units: ``sin(angle / 2)`` (1 from pi on)."""
    angle = float(angle_rad)
    if angle < 0:
        raise ValueError(f"rotation threshold must be >= 0 rad, got {angle_rad}")
    return 1.0 if angle >= math.pi else math.sin(0.5 * angle)


def is_cuda_device(device) -> bool:
    """True when ``device`` (``cpu``, ``cuda``, ``cuda:N``, a ``torch.device``) is a CUDA device."""
    return torch.device(str(device)).type == "cuda"


def curobo_import_error() -> str | None:
    """None when cuRobo's IK module imports, else why not (one line)."""
    try:
        if importlib.util.find_spec("curobo") is None:
            return "no module named 'curobo'"
        importlib.import_module(_CUROBO_IK_MODULE)
    except Exception as exc:  # an installed cuRobo whose compiled kernels do not load fails here too
        return f"{type(exc).__name__}: {exc}".splitlines()[0]
    return None


def is_curobo_available() -> bool:
    """True when cuRobo's IK module imports in this environment."""
    return curobo_import_error() is None


def unusable_reason(device) -> str | None:
    """None when the cuRobo backend can run for a placement on ``device``; else why not (one line)."""
    reasons = []
    missing = curobo_import_error()
    if missing is not None:
        reasons.append(f"cuRobo is not installed ({missing})")
    if not is_cuda_device(device):
        reasons.append(f"cuRobo needs a CUDA device and the placement runs on '{device}'")
    return "; ".join(reasons) or None


def serves(embodiment) -> bool:
    """The cuRobo backend checks embodiments that name a cuRobo robot config and have a URDF (the limits)."""
    return getattr(embodiment, "curobo_config", None) is not None and \
        getattr(embodiment, "reachability_robot", None) is not None


def make_checker(embodiment, device: str):
    """The backend's factory (``register_ik_backend``'s ``make``); ``make_checker.unusable_reason(device)``
    lets the backend choice skip it where cuRobo cannot run."""
    return CuroboIKChecker(embodiment, device)


make_checker.unusable_reason = unusable_reason


def register_backend() -> bool:
    """Registers the ``curobo`` IK backend (its factory says where it cannot run, see :func:`unusable_reason`).

    Registered whether or not cuRobo imports, so that a placement that would use it and cannot says why in one
    line. Returns True.
    """
    from isaaclab_arena.reachability.backends import register_ik_backend

    register_ik_backend(BACKEND_NAME, serves, make_checker)
    return True


def urdf_joint_limits(urdf_path: str) -> dict[str, tuple[float, float]]:
    """``{joint: (lower, upper)}`` of every revolute or prismatic joint of a URDF (its ``<limit>``)."""
    limits = {}
    for joint in ET.parse(urdf_path).getroot().findall("joint"):
        limit = joint.find("limit")
        if joint.get("type") in ("revolute", "prismatic") and limit is not None:
            limits[joint.get("name")] = (float(limit.get("lower")), float(limit.get("upper")))
    return limits


def robot_cfg_with_embodiment_urdf(robot_cfg: dict, embodiment) -> dict:
    """A copy of cuRobo's robot configuration (the ``robot_cfg`` mapping of its YAML) whose kinematics come from
    the embodiment's URDF: ``urdf_path``, ``asset_root_path`` and ``base_link`` replaced, locked joints held at the
    embodiment's default positions (clamped into the URDF's limits), retract entries clamped into them."""
    robot = embodiment.reachability_robot
    cfg = copy.deepcopy(robot_cfg)
    kin = cfg.setdefault("kinematics", {})
    kin["urdf_path"] = os.path.abspath(robot.urdf_path)
    kin["asset_root_path"] = os.path.dirname(os.path.abspath(robot.urdf_path))
    kin["base_link"] = robot.base_link
    limits = urdf_joint_limits(robot.urdf_path)
    defaults = dict(getattr(embodiment.description, "default_joint_pos", {}) or {})

    def clamp(name, value):
        lo, hi = limits.get(name, (-math.inf, math.inf))
        return min(max(float(value), lo), hi)

    if kin.get("lock_joints"):
        kin["lock_joints"] = {n: clamp(n, defaults.get(n, v)) for n, v in kin["lock_joints"].items()}
    cspace = kin.get("cspace") or {}
    if cspace.get("retract_config") is not None and cspace.get("joint_names"):
        cspace["retract_config"] = [clamp(n, v) for n, v in zip(cspace["joint_names"], cspace["retract_config"])]
    return cfg


def _rot_to_quat_wxyz(rot: torch.Tensor) -> torch.Tensor:
    from isaaclab_arena.reachability.chain_fk import matrix_to_quat_xyzw

    q = matrix_to_quat_xyzw(rot)
    return torch.cat([q[..., 3:], q[..., :3]], dim=-1)


class CuroboIKChecker:
    """``check_config(base_pose (B, 7), object_positions (B, K, 3), reachability_config, mask=None)`` with cuRobo.

    Args:
        embodiment: An embodiment with ``curobo_config`` (a file in cuRobo's robot config folder),
            ``reachability_robot`` (its URDF: kinematics and joint limits) and ``description.curobo_tcp_offset_m``.
        device: ``cuda:N`` (cuRobo runs on CUDA; the backend choice never builds this checker on another device).
        num_seeds: IK seeds per problem.
    """

    def __init__(self, embodiment, device: str = "cuda:0", num_seeds: int = 20):
        from curobo.types.base import TensorDeviceType
        from curobo.types.robot import RobotConfig
        from curobo.util_file import get_robot_configs_path, join_path, load_yaml

        from isaaclab_arena.reachability.chain_fk import ChainFK
        from isaaclab_arena.reachability.urdf_chain import load_urdf_chain

        self.device = torch.device(device)
        self.tensor_args = TensorDeviceType(device=self.device)
        data = load_yaml(join_path(get_robot_configs_path(), embodiment.curobo_config))
        self.robot_cfg = robot_cfg_with_embodiment_urdf(data["robot_cfg"], embodiment)
        self.robot_config = RobotConfig.from_dict(self.robot_cfg, self.tensor_args)
        self.joint_names = list(self.robot_config.kinematics.kinematics_config.joint_names)
        self.num_seeds = int(num_seeds)
        self.tcp_offset = torch.tensor(embodiment.description.curobo_tcp_offset_m, dtype=torch.float32,
                                       device=self.device)
        robot = embodiment.reachability_robot
        chain = load_urdf_chain(robot.urdf_path, robot.base_link, robot.tcp_link)
        # the URDF's limits of cuRobo's joints, for the verdict's own check
        urdf_limits = dict(zip(chain.joint_names, zip(chain.lower.tolist(), chain.upper.tolist())))
        unknown = [n for n in self.joint_names if n not in urdf_limits]
        if unknown:
            raise ValueError(f"cuRobo config '{embodiment.curobo_config}' actuates joints {unknown} that are not on "
                             f"the URDF chain {robot.base_link} -> {robot.tcp_link} ({robot.urdf_path})")
        self.lower = torch.tensor([urdf_limits[n][0] for n in self.joint_names], dtype=torch.float32,
                                  device=self.device)
        self.upper = torch.tensor([urdf_limits[n][1] for n in self.joint_names], dtype=torch.float32,
                                  device=self.device)
        # the tool's yaw at home relative to the base-to-object azimuth: the same grasp as the builtin backend
        home = torch.tensor([[robot.home_joint_pos.get(n, 0.5 * (lo + hi)) for n, lo, hi in
                              zip(chain.joint_names, chain.lower, chain.upper)]], dtype=torch.float32)
        _, rot = ChainFK(chain).forward(home)
        self.yaw_offset_rad = float(torch.atan2(rot[0, 1, 0], rot[0, 0, 0]))
        self._solvers: dict[tuple[float, float], object] = {}

    def _solver(self, position_threshold_m: float, rotation_threshold_rad: float):
        from curobo.wrap.reacher.ik_solver import IKSolver, IKSolverConfig

        key = (float(position_threshold_m), float(rotation_threshold_rad))
        if key not in self._solvers:
            config = IKSolverConfig.load_from_robot_config(
                self.robot_config, None, rotation_threshold=rad_to_curobo_rotation_error(key[1]),
                position_threshold=key[0], num_seeds=self.num_seeds, self_collision_check=False,
                self_collision_opt=False, tensor_args=self.tensor_args, use_cuda_graph=False)
            self._solvers[key] = IKSolver(config)
        return self._solvers[key]

    def check_config(self, base_pose: torch.Tensor, object_positions: torch.Tensor, config, mask=None):
        """Reachability of top-down grasps (see the module docstring) as a ``ReachabilityResult``."""
        from curobo.types.math import Pose

        from isaaclab_arena.reachability.grasp_targets import top_down_grasp_targets
        from isaaclab_arena.reachability.ik_reachability import ReachabilityResult

        base_pose = torch.as_tensor(base_pose, dtype=torch.float32, device=self.device)
        object_positions = torch.as_tensor(object_positions, dtype=torch.float32, device=self.device)
        batch, k = object_positions.shape[:2]
        pos_b, rot_b, _ = top_down_grasp_targets(base_pose, object_positions, config.grasp_z_offset_m,
                                                 self.yaw_offset_rad)
        rot = rot_b.reshape(-1, 3, 3)
        ee_pos = pos_b.reshape(-1, 3) - rot @ self.tcp_offset  # the end-effector link, TCP offset removed
        evaluated = torch.ones(batch, k, dtype=torch.bool, device=self.device) if mask is None else \
            torch.as_tensor(mask, dtype=torch.bool, device=self.device).reshape(batch, k)
        dof = len(self.joint_names)
        if ee_pos.shape[0] == 0:
            empty = torch.zeros(batch, k, device=self.device)
            return ReachabilityResult(evaluated.clone(), evaluated, empty, empty.clone(),
                                      torch.zeros(batch, k, dof, device=self.device), list(self.joint_names))
        solver = self._solver(config.ik_position_threshold_m, config.ik_rotation_threshold_rad)
        result = solver.solve_batch(Pose(ee_pos.contiguous(), _rot_to_quat_wxyz(rot).contiguous()))
        pos_err = result.position_error.reshape(batch, k).to(self.device, torch.float32)
        rot_err = curobo_rotation_error_to_rad(result.rotation_error.reshape(batch, k).to(self.device, torch.float32))
        solution = result.solution.to(self.device, torch.float32)
        if solution.shape[-1] != dof:
            raise ValueError(f"cuRobo returned solutions of {solution.shape[-1]} joints; its robot config names "
                             f"{dof}: {self.joint_names}")
        joint_pos = solution.reshape(batch, k, dof)
        tol = 1e-5  # float32 round-off at the limits
        in_limits = ((joint_pos >= self.lower - tol) & (joint_pos <= self.upper + tol)).all(dim=-1)
        ok = result.success.reshape(batch, k).to(self.device, torch.bool) & in_limits
        ok = ok & (pos_err <= config.ik_position_threshold_m) & (rot_err <= config.ik_rotation_threshold_rad)
        reachable = torch.where(evaluated, ok, torch.ones_like(ok))
        nan = torch.full_like(pos_err, math.nan)
        return ReachabilityResult(reachable, evaluated, torch.where(evaluated, pos_err, nan),
                                  torch.where(evaluated, rot_err, nan), joint_pos, list(self.joint_names))

"""A stand-in for cuRobo (tests only): the part of cuRobo's documented API the project's adapter uses, driven by
an independent forward kinematics (Pinocchio, float64) of the URDF the robot configuration names.

cuRobo needs CUDA and compiles its kernels at install time, so it is not installable here. This module is built
from cuRobo's documentation (the v0.7 API reference at curobo.org: ``IKSolverConfig.load_from_robot_config``,
``IKSolver.solve_batch``, ``IKResult``, ``Pose``, ``RobotConfig``, ``TensorDeviceType``, ``util_file``), not
from the adapter, and :func:`install` puts it into ``sys.modules`` as the ``curobo`` package so that the adapter
runs unmodified. What it models, as documented:

- ``RobotConfig.from_dict(data, tensor_args)`` reads the ``kinematics`` section of a robot configuration:
  ``urdf_path`` (relative paths are under the assets folder, ``util_file.get_assets_path()``), ``base_link``,
  ``ee_link``, ``lock_joints`` and ``cspace`` (``joint_names``, ``retract_config``). Joint limits are the URDF's
  ``<limit>`` values; the actuated joints are the movable joints from ``base_link`` to ``ee_link`` that are not
  locked, named in ``RobotConfig.kinematics.kinematics_config.joint_names`` (also
  ``kinematics.get_joint_limits().joint_names``; ``JointLimits.position`` is ``[2, dof]``, rows lower and upper,
  as cuRobo's code and its latest reference have it; one older docstring says ``[dof, 2]``).
- ``IKSolverConfig.load_from_robot_config(robot_cfg, world_model=None, ...)`` takes cuRobo's documented keyword
  arguments only (an unknown one raises ``TypeError``, as Python does for cuRobo's signature);
  ``position_threshold`` is metres, ``rotation_threshold`` is in the units of ``IKResult.rotation_error``.
- ``IKSolver.solve_batch(goal_pose)`` with ``Pose(position (B, 3), quaternion (B, 4) wxyz)`` of the end-effector
  link in the base link's frame, on ``tensor_args.device``, returns an ``IKResult`` with ``success``
  ``(B, return_seeds)`` bool, ``position_error`` (metres, L2) and ``rotation_error`` ``(B, return_seeds)``,
  ``solution`` ``(B, return_seeds, dof)`` and ``js_solution`` (a ``JointState`` with ``joint_names``).
  ``rotation_error`` is cuRobo's quaternion distance: the norm of the vector part of ``q_goal^-1 * q``, i.e.
  ``|sin(theta / 2)|`` for an angle ``theta`` between goal and solution, not radians. ``success`` is
  ``position_error <= position_threshold and rotation_error <= rotation_threshold`` (joint limits always held).
- ``IKSolver`` has no ``joint_names`` here: that property is documented only in later v0.7 releases, while the
  robot configuration's kinematics name the joints in every release the adapter targets.

The solver is a projected damped-least-squares IK from the retract pose and pseudo-random seeds inside the
limits (cuRobo's own optimiser is not modelled, only its interface and units). Two test levers, neither part of
cuRobo: :data:`CALLS` records every ``solve_batch`` call, and :data:`SOLUTION_OFFSET_RAD` moves named joints of
each returned solution before its errors are measured (a solver that stops short of the goal).

:func:`write_bundled_franka` writes a robot configuration folder shaped like cuRobo's bundled Franka
(``franka.yml``: end effector ``panda_hand``, root ``base_link``, fingers locked at 0.04 / -0.04, retract
``[0, -1.3, 0, -2.5, 0, 1.0, 0, 0.04, -0.04]``) whose URDF is the project's shipped Franka with the arm limits
of cuRobo's bundled ``franka_panda.urdf`` (:data:`BUNDLED_FRANKA_LIMITS`: the shipped URDF's ``safety_controller``
soft limits, 0.0698 rad inside its hard limits).
"""

from __future__ import annotations

import copy
import importlib.machinery
import math
import os
import sys
import time
import types
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

#: Every ``IKSolver.solve_batch`` call: ``(goal position, goal quaternion wxyz, IKSolverConfig, IKResult)``.
CALLS: list[tuple] = []
#: Test lever: ``{joint name: radians}`` added to every returned solution (then clamped into the limits).
SOLUTION_OFFSET_RAD: dict[str, float] = {}
#: Arm joint limits of cuRobo's bundled ``franka_panda.urdf`` (radians).
BUNDLED_FRANKA_LIMITS = {
    "panda_joint1": (-2.8973, 2.8973), "panda_joint2": (-1.7628, 1.7628), "panda_joint3": (-2.8973, 2.8973),
    "panda_joint4": (-3.0718, -0.0698), "panda_joint5": (-2.8973, 2.8973), "panda_joint6": (-0.0175, 3.7525),
    "panda_joint7": (-2.8973, 2.8973),
}
_ARM = [f"panda_joint{i}" for i in range(1, 8)]
_FINGERS = ["panda_finger_joint1", "panda_finger_joint2"]
_PATHS = {"configs": "/nonexistent/configs", "assets": "/nonexistent/assets"}


# ---------------------------------------------------------------------------------------------- curobo.types
@dataclass
class TensorDeviceType:
    device: torch.device = field(default_factory=lambda: torch.device("cuda", 0))
    dtype: torch.dtype = torch.float32

    def to_device(self, data):
        return torch.as_tensor(data, device=self.device, dtype=self.dtype)


class Pose:
    def __init__(self, position: torch.Tensor | None = None, quaternion: torch.Tensor | None = None,
                 rotation=None, batch: int = 1, n_goalset: int = 1, name: str = "ee_link",
                 normalize_rotation: bool = True):
        if position is None or quaternion is None or position.shape[-1] != 3 or quaternion.shape[-1] != 4:
            raise ValueError("Pose needs position (..., 3) and quaternion (..., 4) wxyz")
        self.position, self.quaternion, self.rotation, self.name = position, quaternion, rotation, name
        self.n_goalset = n_goalset
        self.batch = position.shape[0] if position.ndim > 1 else 1


@dataclass
class JointState:
    position: torch.Tensor
    velocity: torch.Tensor | None = None
    acceleration: torch.Tensor | None = None
    joint_names: list[str] | None = None
    jerk: torch.Tensor | None = None

    @staticmethod
    def from_position(position: torch.Tensor, joint_names: list[str] | None = None) -> "JointState":
        return JointState(position, joint_names=joint_names)


@dataclass
class JointLimits:
    joint_names: list[str]
    position: torch.Tensor  # [2, dof]: lower, upper
    velocity: torch.Tensor | None = None
    acceleration: torch.Tensor | None = None
    jerk: torch.Tensor | None = None
    effort: torch.Tensor | None = None
    tensor_args: TensorDeviceType = field(default_factory=TensorDeviceType)


@dataclass
class CSpaceConfig:
    joint_names: list[str]
    retract_config: torch.Tensor | None = None
    cspace_distance_weight: torch.Tensor | None = None
    null_space_weight: torch.Tensor | None = None


@dataclass
class KinematicsTensorConfig:
    joint_names: list[str]
    joint_limits: JointLimits
    n_dof: int
    base_link: str
    ee_link: str
    cspace: CSpaceConfig | None = None
    lock_jointstate: JointState | None = None
    link_names: list[str] = field(default_factory=list)


@dataclass
class CudaRobotModelConfig:
    tensor_args: TensorDeviceType
    link_names: list[str]
    kinematics_config: KinematicsTensorConfig
    _fk: Any = None  # the stand-in's Pinocchio kinematics (not cuRobo API)

    def get_joint_limits(self) -> JointLimits:
        return self.kinematics_config.joint_limits

    @property
    def cspace(self) -> CSpaceConfig | None:
        return self.kinematics_config.cspace

    @property
    def dof(self) -> int:
        return self.kinematics_config.n_dof


class _PinocchioArm:
    """Forward kinematics of ``base_link -> ee_link`` of a URDF, non-actuated joints locked (float64)."""

    def __init__(self, urdf_path: str, base_link: str, ee_link: str, lock: dict[str, float],
                 order: list[str] | None):
        import pinocchio as pin

        self.pin = pin
        root = ET.parse(urdf_path).getroot()
        children = {j.find("child").get("link") for j in root.findall("joint")}
        roots = [lk.get("name") for lk in root.findall("link") if lk.get("name") not in children]
        if roots != [base_link]:
            raise ValueError(f"stand-in: base_link '{base_link}' must be the root link of {urdf_path} (roots: {roots})")
        by_child = {j.find("child").get("link"): j for j in root.findall("joint")}
        chain, link = [], ee_link
        while link != base_link:
            if link not in by_child:
                raise ValueError(f"stand-in: ee_link '{ee_link}' does not descend from '{base_link}' in {urdf_path}")
            chain.append(by_child[link])
            link = by_child[link].find("parent").get("link")
        movable = [j.get("name") for j in reversed(chain) if j.get("type") in ("revolute", "prismatic", "continuous")]
        actuated = [n for n in movable if n not in lock]
        if order:
            actuated = [n for n in order if n in actuated] + [n for n in actuated if n not in order]
        full = pin.buildModelFromUrdf(urdf_path)
        q_lock = pin.neutral(full)
        for name, value in lock.items():
            if full.existJointName(name):
                q_lock[full.joints[full.getJointId(name)].idx_q] = value
        locked = [full.getJointId(n) for n in full.names[1:] if n not in actuated]
        self.model = pin.buildReducedModel(full, locked, q_lock)
        self.data = self.model.createData()
        model_order = [n for n in self.model.names[1:]]
        self.perm = [model_order.index(n) for n in actuated]  # actuated order -> model coordinates
        self.joint_names = actuated
        self.frame = self.model.getFrameId(ee_link)
        self.lower = self.model.lowerPositionLimit[self.perm].copy()
        self.upper = self.model.upperPositionLimit[self.perm].copy()

    def _q(self, q: np.ndarray) -> np.ndarray:
        qm = np.zeros(self.model.nq)
        qm[self.perm] = q
        return qm

    def fk(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self.pin.framesForwardKinematics(self.model, self.data, self._q(q))
        m = self.data.oMf[self.frame]
        return m.translation.copy(), m.rotation.copy()

    def jacobian(self, q: np.ndarray) -> np.ndarray:
        jac = self.pin.computeFrameJacobian(self.model, self.data, self._q(q), self.frame,
                                            self.pin.LOCAL_WORLD_ALIGNED)
        return jac[:, self.perm]


@dataclass
class RobotConfig:
    kinematics: CudaRobotModelConfig
    tensor_args: TensorDeviceType = field(default_factory=TensorDeviceType)

    @staticmethod
    def from_dict(data_dict_in: dict, tensor_args: TensorDeviceType | None = None) -> "RobotConfig":
        tensor_args = tensor_args or TensorDeviceType()
        data = copy.deepcopy(data_dict_in)
        data = data.get("robot_cfg", data)
        kin = data["kinematics"]
        urdf = os.path.join(get_assets_path(), kin["urdf_path"])  # an absolute urdf_path stays as it is
        if not os.path.isfile(urdf):
            raise FileNotFoundError(f"stand-in: URDF not found: {urdf}")
        cspace = kin.get("cspace") or {}
        lock = {k: float(v) for k, v in (kin.get("lock_joints") or {}).items()}
        arm = _PinocchioArm(urdf, kin["base_link"], kin["ee_link"], lock, cspace.get("joint_names"))
        position = torch.tensor(np.stack([arm.lower, arm.upper]), dtype=tensor_args.dtype, device=tensor_args.device)
        limits = JointLimits(list(arm.joint_names), position, tensor_args=tensor_args)
        retract = None
        if cspace.get("retract_config") is not None:
            by_name = dict(zip(cspace["joint_names"], cspace["retract_config"]))
            retract = tensor_args.to_device([by_name.get(n, 0.0) for n in arm.joint_names])
        config = KinematicsTensorConfig(
            joint_names=list(arm.joint_names), joint_limits=limits, n_dof=len(arm.joint_names),
            base_link=kin["base_link"], ee_link=kin["ee_link"],
            cspace=CSpaceConfig(list(arm.joint_names), retract),
            lock_jointstate=JointState(tensor_args.to_device(list(lock.values())), joint_names=list(lock)),
            link_names=[kin["ee_link"]])
        return RobotConfig(CudaRobotModelConfig(tensor_args, [kin["ee_link"]], config, _fk=arm), tensor_args)

    @property
    def cspace(self) -> CSpaceConfig | None:
        return self.kinematics.cspace


# ------------------------------------------------------------------------------------------- curobo.util_file
def get_robot_configs_path() -> str:
    return _PATHS["configs"]


def get_assets_path() -> str:
    return _PATHS["assets"]


def join_path(path1: str, path2: str) -> str:
    return os.path.join(path1, path2)


def load_yaml(file_path: str) -> dict:
    import yaml

    with open(file_path) as f:
        return yaml.safe_load(f)


# ------------------------------------------------------------------------------ curobo.wrap.reacher.ik_solver
@dataclass
class IKSolverConfig:
    robot_config: RobotConfig
    solver: Any
    num_seeds: int
    position_threshold: float
    rotation_threshold: float
    rollout_fn: Any
    ik_nn_seeder: str | None = None
    world_coll_checker: Any = None
    sample_rejection_ratio: int = 50
    tensor_args: TensorDeviceType = field(default_factory=TensorDeviceType)
    use_cuda_graph: bool = True
    seed: int = 1531

    @staticmethod
    def load_from_robot_config(robot_cfg, world_model=None, tensor_args: TensorDeviceType | None = None,
                               num_seeds: int = 100, position_threshold: float = 0.005,
                               rotation_threshold: float = 0.05, world_coll_checker=None,
                               base_cfg_file: str = "base_cfg.yml", particle_file: str = "particle_ik.yml",
                               gradient_file: str = "gradient_ik.yml", use_cuda_graph: bool | None = None,
                               self_collision_check: bool = True, self_collision_opt: bool = True,
                               grad_iters: int | None = None, use_particle_opt: bool = True,
                               collision_checker_type=None, sync_cuda_time: bool | None = None,
                               use_gradient_descent: bool = False, collision_cache=None,
                               n_collision_envs: int | None = None, ee_link_name: str | None = None,
                               use_es: bool | None = None, es_learning_rate: float = 0.1,
                               use_fixed_samples: bool | None = None, store_debug: bool = False,
                               regularization: bool = True, collision_activation_distance: float | None = None,
                               high_precision: bool = False, seed: int = 1531) -> "IKSolverConfig":
        tensor_args = tensor_args or TensorDeviceType()
        if isinstance(robot_cfg, str):
            robot_cfg = load_yaml(join_path(get_robot_configs_path(), robot_cfg))["robot_cfg"]
        if isinstance(robot_cfg, dict):
            robot_cfg = RobotConfig.from_dict(robot_cfg, tensor_args)
        return IKSolverConfig(robot_cfg, None, int(num_seeds), float(position_threshold), float(rotation_threshold),
                              None, world_coll_checker=world_coll_checker, tensor_args=tensor_args,
                              use_cuda_graph=bool(use_cuda_graph) if use_cuda_graph is not None else True, seed=seed)


@dataclass
class IKResult:
    js_solution: JointState
    goal_pose: Pose
    solution: torch.Tensor
    seed: torch.Tensor | None
    success: torch.Tensor
    position_error: torch.Tensor
    rotation_error: torch.Tensor
    error: torch.Tensor
    solve_time: float
    debug_info: Any = None
    goalset_index: torch.Tensor | None = None


def quaternion_distance(q_goal_wxyz: np.ndarray, q_wxyz: np.ndarray) -> float:
    """cuRobo's rotation error: norm of the vector part of ``q_goal^-1 * q`` (= |sin(theta / 2)|)."""
    w1, v1 = q_goal_wxyz[0], -np.asarray(q_goal_wxyz[1:])  # conjugate of the goal
    w2, v2 = q_wxyz[0], np.asarray(q_wxyz[1:])
    return float(np.linalg.norm(w1 * v2 + w2 * v1 + np.cross(v1, v2)))


def _matrix_to_wxyz(r: np.ndarray) -> np.ndarray:
    import pinocchio as pin

    q = pin.Quaternion(r)
    return np.array([q.w, q.x, q.y, q.z])


def _wxyz_to_matrix(q: np.ndarray) -> np.ndarray:
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


class IKSolver:
    def __init__(self, config: IKSolverConfig):
        self.config = config
        self.position_threshold = config.position_threshold
        self.rotation_threshold = config.rotation_threshold
        self.num_seeds = config.num_seeds
        self.tensor_args = config.tensor_args
        self.robot_config = config.robot_config
        self._arm: _PinocchioArm = config.robot_config.kinematics._fk
        arm = self._arm
        retract = config.robot_config.kinematics.cspace.retract_config
        first = retract.double().cpu().numpy() if retract is not None else 0.5 * (arm.lower + arm.upper)
        rng = np.random.default_rng(config.seed)
        self._seeds = [np.clip(first, arm.lower, arm.upper)] + \
            list(rng.uniform(arm.lower, arm.upper, (max(config.num_seeds - 1, 0), len(arm.joint_names))))

    def _measure(self, q, p_goal, q_goal):
        p, r = self._arm.fk(q)
        pos = float(np.linalg.norm(p - p_goal))
        rot = quaternion_distance(q_goal, _matrix_to_wxyz(r))
        return pos, rot, pos <= self.position_threshold and rot <= self.rotation_threshold

    def _solve_one(self, p_goal: np.ndarray, q_goal: np.ndarray, iterations: int = 200):
        import pinocchio as pin

        arm, r_goal = self._arm, _wxyz_to_matrix(q_goal)
        weights = np.array([1.0, 1.0, 1.0, 0.1, 0.1, 0.1])
        best = None
        for seed in self._seeds:
            q, stalled, seed_best = seed.copy(), 0, math.inf
            for _ in range(iterations):
                p, r = arm.fk(q)
                err = np.concatenate([p_goal - p, pin.log3(r_goal @ r.T)])
                pos, rot, ok = self._measure(q, p_goal, q_goal)
                score = pos / self.position_threshold + rot / max(self.rotation_threshold, 1e-12)
                if best is None or (ok, -score) > (best[3], -best[4]):
                    best = (q.copy(), pos, rot, ok, score)
                stalled = 0 if score < seed_best - 1e-6 else stalled + 1
                seed_best = min(seed_best, score)
                if np.linalg.norm(err) < 1e-9 or stalled > 25:
                    break
                jac = arm.jacobian(q) * weights[:, None]
                e = err * weights
                q = np.clip(q + jac.T @ np.linalg.solve(jac @ jac.T + 1e-4 * np.eye(6), e), arm.lower, arm.upper)
            if best[3]:
                break
        q = best[0]
        if SOLUTION_OFFSET_RAD:
            offset = np.array([SOLUTION_OFFSET_RAD.get(n, 0.0) for n in arm.joint_names])
            q = np.clip(q + offset, arm.lower, arm.upper)
        pos, rot, ok = self._measure(q, p_goal, q_goal)
        return q, pos, rot, ok

    def solve_batch(self, goal_pose: Pose, retract_config=None, seed_config=None, return_seeds: int = 1,
                    num_seeds: int | None = None, use_nn_seed: bool = True, newton_iters: int | None = None,
                    link_poses=None) -> IKResult:
        start = time.perf_counter()
        ta = self.tensor_args
        position, quaternion = goal_pose.position, goal_pose.quaternion
        for what, t, cols in (("position", position, 3), ("quaternion", quaternion, 4)):
            if t.ndim != 2 or t.shape[-1] != cols:
                raise ValueError(f"stand-in: Pose.{what} must be (batch, {cols}), got {tuple(t.shape)}")
            if t.device != torch.device(ta.device) or t.dtype != ta.dtype:
                raise ValueError(f"stand-in: Pose.{what} on {t.device}/{t.dtype}, the solver's tensor_args are "
                                 f"{ta.device}/{ta.dtype}")
        norms = quaternion.double().norm(dim=-1)
        if not bool(((norms - 1).abs() < 1e-4).all()):
            raise ValueError(f"stand-in: goal quaternions must be unit (wxyz), norms {norms.tolist()}")
        rows = [self._solve_one(p, q) for p, q in zip(position.double().cpu().numpy(),
                                                       quaternion.double().cpu().numpy())]
        b, dof = len(rows), len(self._arm.joint_names)
        solution = torch.tensor(np.array([r[0] for r in rows]).reshape(b, 1, dof), dtype=ta.dtype, device=ta.device)
        pos = torch.tensor([[r[1]] for r in rows], dtype=ta.dtype, device=ta.device).reshape(b, 1)
        rot = torch.tensor([[r[2]] for r in rows], dtype=ta.dtype, device=ta.device).reshape(b, 1)
        success = torch.tensor([[r[3]] for r in rows], dtype=torch.bool, device=ta.device).reshape(b, 1)
        result = IKResult(JointState(solution, joint_names=list(self._arm.joint_names)), goal_pose, solution, None,
                          success, pos, rot, pos + rot, time.perf_counter() - start)
        CALLS.append((position.clone(), quaternion.clone(), self.config, result))
        return result


# ----------------------------------------------------------------------------------------------- installation
def _module(name: str, **attrs) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    mod.__spec__ = importlib.machinery.ModuleSpec(name, None)  # importlib.util.find_spec reads it
    return mod


def modules() -> dict[str, types.ModuleType]:
    """The stand-in's ``curobo`` modules, by their cuRobo names."""
    return {
        "curobo": _module("curobo", CALLS=CALLS),
        "curobo.types": _module("curobo.types"),
        "curobo.types.base": _module("curobo.types.base", TensorDeviceType=TensorDeviceType),
        "curobo.types.math": _module("curobo.types.math", Pose=Pose),
        "curobo.types.state": _module("curobo.types.state", JointState=JointState),
        "curobo.types.robot": _module("curobo.types.robot", RobotConfig=RobotConfig, JointState=JointState),
        "curobo.cuda_robot_model": _module("curobo.cuda_robot_model"),
        "curobo.cuda_robot_model.types": _module("curobo.cuda_robot_model.types", JointLimits=JointLimits,
                                                 CSpaceConfig=CSpaceConfig,
                                                 KinematicsTensorConfig=KinematicsTensorConfig),
        "curobo.cuda_robot_model.cuda_robot_model": _module("curobo.cuda_robot_model.cuda_robot_model",
                                                            CudaRobotModelConfig=CudaRobotModelConfig),
        "curobo.util_file": _module("curobo.util_file", get_robot_configs_path=get_robot_configs_path,
                                    get_assets_path=get_assets_path, join_path=join_path, load_yaml=load_yaml),
        "curobo.wrap": _module("curobo.wrap"),
        "curobo.wrap.reacher": _module("curobo.wrap.reacher"),
        "curobo.wrap.reacher.ik_solver": _module("curobo.wrap.reacher.ik_solver", IKSolver=IKSolver,
                                                 IKSolverConfig=IKSolverConfig, IKResult=IKResult),
    }


def install(monkeypatch, content_root: str) -> types.ModuleType:
    """Puts the stand-in into ``sys.modules`` as ``curobo`` (undone by ``monkeypatch``), with its robot configs in
    ``content_root/configs/robot`` and assets in ``content_root/assets``; returns the ``curobo`` module."""
    for name in [m for m in sys.modules if m == "curobo" or m.startswith("curobo.")]:
        monkeypatch.delitem(sys.modules, name)
    mods = modules()
    for name, mod in mods.items():
        if any(other.startswith(name + ".") for other in mods):
            mod.__path__ = []  # a package: its submodules resolve
            mod.__spec__.submodule_search_locations = []
        monkeypatch.setitem(sys.modules, name, mod)
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(mods[parent], child, mod)
    monkeypatch.setitem(_PATHS, "configs", os.path.join(content_root, "configs", "robot"))
    monkeypatch.setitem(_PATHS, "assets", os.path.join(content_root, "assets"))
    CALLS.clear()
    SOLUTION_OFFSET_RAD.clear()
    return mods["curobo"]


def write_bundled_franka(content_root: str, shipped_urdf: str) -> str:
    """Writes ``configs/robot/franka.yml`` and ``assets/robot/franka_description/franka_panda.urdf`` under
    ``content_root``, shaped like cuRobo's bundled Franka (see the module docstring); returns the URDF's path."""
    import yaml

    tree = ET.parse(shipped_urdf)
    root = tree.getroot()
    for joint in root.findall("joint"):
        if joint.get("name") in BUNDLED_FRANKA_LIMITS:
            lo, hi = BUNDLED_FRANKA_LIMITS[joint.get("name")]
            joint.find("limit").set("lower", str(lo))
            joint.find("limit").set("upper", str(hi))
    for tag in ("visual", "collision"):  # cuRobo's kinematics need no meshes
        for link in root.findall("link"):
            for el in link.findall(tag):
                link.remove(el)
    base = ET.Element("link", name="base_link")
    fixed = ET.Element("joint", name="panda_fixed", type="fixed")
    ET.SubElement(fixed, "origin", xyz="0 0 0", rpy="0 0 0")
    ET.SubElement(fixed, "parent", link="base_link")
    ET.SubElement(fixed, "child", link="panda_link0")
    root.insert(0, fixed)
    root.insert(0, base)
    urdf = os.path.join(content_root, "assets", "robot", "franka_description", "franka_panda.urdf")
    os.makedirs(os.path.dirname(urdf), exist_ok=True)
    tree.write(urdf)
    config = {"robot_cfg": {"kinematics": {
        "urdf_path": "robot/franka_description/franka_panda.urdf",
        "asset_root_path": "robot/franka_description",
        "base_link": "base_link",
        "ee_link": "panda_hand",
        "lock_joints": {"panda_finger_joint1": 0.04, "panda_finger_joint2": -0.04},
        "cspace": {"joint_names": _ARM + _FINGERS,
                   "retract_config": [0.0, -1.3, 0.0, -2.5, 0.0, 1.0, 0.0, 0.04, -0.04]},
    }}}
    path = os.path.join(content_root, "configs", "robot", "franka.yml")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        yaml.safe_dump(config, f, sort_keys=False)
    return urdf

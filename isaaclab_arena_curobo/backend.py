"""cuRobo IK behind the ``ik_reachable`` check (cuRobo's ``IKSolver`` / ``IKSolverConfig`` API).

:class:`CuroboIKChecker` answers the same question as the default newton checker: can the robot's TCP reach a
top-down grasp ``grasp_z_offset_m`` above each object from each candidate's base pose, within the position and
rotation thresholds, with its joints inside their limits (cuRobo keeps solutions inside the limits of its robot
config). How: the grasp targets go into each candidate's base frame (``top_down_grasp_targets``, the same
targets as the newton backend), the TCP targets become targets of cuRobo's end-effector link (the TCP offset
``RobotDescription.curobo_tcp_offset_m`` removed), and one ``IKSolver.solve_batch`` call solves every
(candidate, object) problem. The verdict is cuRobo's ``success`` with the position error (metres) and the
rotation error within the thresholds of ``ReachabilityConfig``. Positions metres, quaternions: xyzw here,
wxyz in cuRobo's ``Pose``.
"""

from __future__ import annotations

import importlib.util
import math

import torch

BACKEND_NAME = "curobo"


def is_curobo_available() -> bool:
    """True when the ``curobo`` package can be imported in this environment."""
    try:
        return importlib.util.find_spec("curobo") is not None
    except (ImportError, ValueError):
        return False


def serves(embodiment) -> bool:
    """The cuRobo backend checks embodiments that name a cuRobo robot config."""
    return getattr(embodiment, "curobo_config", None) is not None


def register_if_available() -> bool:
    """Registers the ``curobo`` IK backend when cuRobo imports; returns whether it did."""
    if not is_curobo_available():
        return False
    try:
        import curobo.wrap.reacher.ik_solver  # noqa: F401  (the API the adapter uses)
    except ImportError:
        return False
    from isaaclab_arena.reachability.backends import register_ik_backend

    register_ik_backend(BACKEND_NAME, serves, CuroboIKChecker)
    return True


def _rot_to_quat_wxyz(rot: torch.Tensor) -> torch.Tensor:
    from isaaclab_arena.reachability.chain_fk import matrix_to_quat_xyzw

    q = matrix_to_quat_xyzw(rot)
    return torch.cat([q[..., 3:], q[..., :3]], dim=-1)


class CuroboIKChecker:
    """``check_config(base_pose (B, 7), object_positions (B, K, 3), reachability_config, mask=None)`` with cuRobo.

    Args:
        embodiment: An embodiment with ``curobo_config`` (a file in cuRobo's robot config folder) and
            ``description.curobo_tcp_offset_m``.
        device: ``cuda:N`` (cuRobo runs on CUDA).
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
        self.robot_config = RobotConfig.from_dict(data["robot_cfg"], self.tensor_args)
        self.num_seeds = int(num_seeds)
        self.tcp_offset = torch.tensor(embodiment.description.curobo_tcp_offset_m, dtype=torch.float32,
                                       device=self.device)
        robot = embodiment.reachability_robot
        # the tool's yaw at home relative to the base-to-object azimuth: the same grasp as the newton backend
        chain = load_urdf_chain(robot.urdf_path, robot.base_link, robot.tcp_link)
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
                self.robot_config, None, rotation_threshold=key[1], position_threshold=key[0],
                num_seeds=self.num_seeds, self_collision_check=False, self_collision_opt=False,
                tensor_args=self.tensor_args, use_cuda_graph=False)
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
        if ee_pos.shape[0] == 0:
            empty = torch.zeros(batch, k, device=self.device)
            return ReachabilityResult(evaluated.clone(), evaluated, empty, empty.clone(),
                                      torch.zeros(batch, k, 0, device=self.device), [])
        solver = self._solver(config.ik_position_threshold_m, config.ik_rotation_threshold_rad)
        result = solver.solve_batch(Pose(ee_pos.contiguous(), _rot_to_quat_wxyz(rot).contiguous()))
        pos_err = result.position_error.reshape(batch, k).to(self.device, torch.float32)
        rot_err = result.rotation_error.reshape(batch, k).to(self.device, torch.float32)
        ok = result.success.reshape(batch, k).to(self.device, torch.bool)
        ok = ok & (pos_err <= config.ik_position_threshold_m) & (rot_err <= config.ik_rotation_threshold_rad)
        reachable = torch.where(evaluated, ok, torch.ones_like(ok))
        nan = torch.full_like(pos_err, math.nan)
        joint_pos = result.solution.reshape(batch, k, -1).to(self.device, torch.float32)
        names = list(getattr(solver, "joint_names", []) or [])
        return ReachabilityResult(reachable, evaluated, torch.where(evaluated, pos_err, nan),
                                  torch.where(evaluated, rot_err, nan), joint_pos, names)

"""Isaac Lab reward terms of a ``PickAndPlaceTask`` (manager style: ``RewardTermCfg(func, weight, params)``).

:func:`add_task_rewards` adds to a manager-based env config's ``rewards`` (weights from the task's
``reward_weights``, :class:`~isaaclab_arena.tasks.pick_and_place.PickAndPlaceRewardWeights`; a zero weight
leaves its term out):

* ``reaching`` (robot): ``1 - tanh(d / reaching_std_m)``, ``d`` the TCP-to-object-centre distance (m);
* ``lifting``: the object's centre height above its height at the episode's start over ``lift_height_m``,
  capped at 1; 0 below ``min_lift_m`` and, with a robot, while the TCP is farther than ``grasp_radius_m``
  from the object;
* ``placing``: ``1 - tanh(e / placing_std_m)`` while the object is lifted, ``e`` the distance (m) from the
  object's centre to where it would rest in the destination's opening (on the opening's floor at its centre:
  the same opening success tests, ``task_terms.DestinationOpenings``);
* ``success``: ``1 / step_dt`` on the step the task's ``success`` termination fires (the reward manager
  multiplies by ``step_dt``, so its weight is the reward of one success); success itself is defined once, in
  ``task_terms.SuccessConditions`` / ``PickAndPlaceSuccess``;
* ``action_rate`` (robot): ``sum((a_t - a_{t-1})^2)`` over the action vector;
* ``joint_vel`` (robot): ``sum(qd^2)`` over the robot's joints, (rad/s)^2.

Positions are env-local (world minus the env origin), metres. Every term returns a ``(num_envs,)`` float
tensor computed batched over the envs. The start height of the object is the height measured at the first
reward computation of an episode (one env step after its reset, before any grasp can lift it).
"""

from __future__ import annotations

import torch

from isaaclab.managers import ManagerTermBase, RewardTermCfg, SceneEntityCfg
from isaaclab.utils.math import matrix_from_quat

from isaaclab_arena.environments.task_terms import DestinationOpenings, TaskPoses, TaskRef, robot_tcp_cfg

#: Terms that need the robot (added only when the env has an embodiment).
ROBOT_TERMS = ("reaching", "action_rate", "joint_vel")


class _TaskGeometry(ManagerTermBase):
    """Shared state of the object-based terms: the task's poses, the object's start height, the robot's TCP."""

    def __init__(self, cfg, env):
        super().__init__(cfg, env)
        task = cfg.params["task"].task
        self.weights = task.reward_weights
        self.poses = TaskPoses(env, task, cfg.params.get("members") or {})
        self.openings = DestinationOpenings(task.destination_location, env.num_envs, cfg.params.get("members") or {},
                                            task.success_wall_margin_m, env.device)
        self.obj_centre_local = 0.5 * (self.poses.obj_lo + self.poses.obj_hi)
        self.obj_half_height = 0.5 * (self.poses.obj_hi - self.poses.obj_lo)[:, 2]
        self.start_z = torch.full((env.num_envs,), float("nan"), device=env.device)
        tcp = cfg.params.get("tcp_cfg")
        self.robot = None
        if tcp is not None:
            self.robot = env.scene[tcp.name]
            self.tcp_id = self.robot.find_bodies(tcp.body_names[0])[0][0]

    def reset(self, env_ids=None) -> None:
        if env_ids is None:
            self.start_z[:] = float("nan")
        else:
            self.start_z[env_ids] = float("nan")

    def object_centre(self) -> torch.Tensor:
        """(num_envs, 3) env-local centre of the object's box, metres."""
        obj = self.poses.object_pose()
        return obj[:, :3] + (matrix_from_quat(obj[:, 3:]) @ self.obj_centre_local[..., None])[..., 0]

    def tcp_position(self) -> torch.Tensor:
        """(num_envs, 3) env-local TCP position, metres."""
        return self.robot.data.body_link_pose_w.torch[:, self.tcp_id, :3] - self._env.scene.env_origins

    def lift(self, centre: torch.Tensor) -> torch.Tensor:
        """(num_envs,) height of the object's centre above its episode-start height, metres (start height recorded
        at the first call of an episode)."""
        z = centre[:, 2]
        fresh = torch.isnan(self.start_z)
        self.start_z = torch.where(fresh, z, self.start_z)
        return z - self.start_z

    def destination_target(self) -> torch.Tensor:
        """(num_envs, 3) where the object's centre is when it rests upright at the centre of the destination's
        opening, on the opening's floor (the top of a closed destination), env-local, metres."""
        floor = self.openings.floor_centre(self.poses.destination_pose())
        return floor + torch.stack([torch.zeros_like(self.obj_half_height), torch.zeros_like(self.obj_half_height),
                                    self.obj_half_height], dim=-1)


class ReachingReward(_TaskGeometry):
    """``1 - tanh(|tcp - object centre| / reaching_std_m)`` in [0, 1] (needs ``tcp_cfg``)."""

    def __call__(self, env, task, members=None, tcp_cfg=None) -> torch.Tensor:
        d = torch.linalg.norm(self.tcp_position() - self.object_centre(), dim=-1)
        return 1.0 - torch.tanh(d / self.weights.reaching_std_m)


class LiftingReward(_TaskGeometry):
    """Lift above the start height over ``lift_height_m``, capped at 1; 0 below ``min_lift_m`` or (with a robot)
    while the TCP is farther than ``grasp_radius_m`` from the object."""

    def __call__(self, env, task, members=None, tcp_cfg=None) -> torch.Tensor:
        w = self.weights
        centre = self.object_centre()
        h = self.lift(centre)
        held = h > w.min_lift_m
        if self.robot is not None:
            held = held & (torch.linalg.norm(self.tcp_position() - centre, dim=-1) < w.grasp_radius_m)
        return torch.where(held, torch.clamp(h / w.lift_height_m, max=1.0), torch.zeros_like(h))


class PlacingReward(_TaskGeometry):
    """``1 - tanh(|object centre - destination target| / placing_std_m)`` while lifted above ``min_lift_m``."""

    def __call__(self, env, task, members=None, tcp_cfg=None) -> torch.Tensor:
        centre = self.object_centre()
        lifted = self.lift(centre) > self.weights.min_lift_m
        e = torch.linalg.norm(centre - self.destination_target(), dim=-1)
        return torch.where(lifted, 1.0 - torch.tanh(e / self.weights.placing_std_m), torch.zeros_like(e))


def success_bonus(env) -> torch.Tensor:
    """(num_envs,) ``1 / step_dt`` where the ``success`` termination fired this step, else 0 (terminations are
    computed before rewards in ``ManagerBasedRLEnv.step``)."""
    fired = env.termination_manager.get_term("success")
    return fired.float() / env.step_dt


def action_rate(env) -> torch.Tensor:
    """(num_envs,) ``sum((a_t - a_{t-1})^2)`` over the action vector (action units squared)."""
    am = env.action_manager
    return torch.sum(torch.square(am.action - am.prev_action), dim=1)


def joint_vel(env, asset_cfg: SceneEntityCfg) -> torch.Tensor:
    """(num_envs,) ``sum(qd^2)`` over the robot's joints, (rad/s)^2."""
    return torch.sum(torch.square(env.scene[asset_cfg.name].data.joint_vel.torch), dim=1)


def add_task_rewards(env_cfg, task, members: dict | None = None, embodiment=None) -> list[str]:
    """Adds the reward terms of ``task`` (a ``PickAndPlaceTask``) with non-zero weights to ``env_cfg.rewards``;
    the robot terms only when the env has a robot (``embodiment``, or a ``robot`` scene entity with a
    ``tcp_pose`` observation). Returns the names of the added terms."""
    from isaaclab_arena.embodiments.embodiment import ROBOT_SCENE_KEY

    weights = task.reward_weights.weights()
    tcp = robot_tcp_cfg(env_cfg, embodiment)
    base = {"task": TaskRef(task), "members": dict(members or {}), "tcp_cfg": tcp}
    terms = {"reaching": (ReachingReward, base), "lifting": (LiftingReward, base), "placing": (PlacingReward, base),
             "success": (success_bonus, {}),
             "action_rate": (action_rate, {}),
             "joint_vel": (joint_vel, {"asset_cfg": SceneEntityCfg(ROBOT_SCENE_KEY)})}
    added = []
    for name, (func, params) in terms.items():
        if weights[name] == 0.0 or (tcp is None and name in ROBOT_TERMS):
            continue
        setattr(env_cfg.rewards, name, RewardTermCfg(func=func, weight=weights[name], params=dict(params)))
        added.append(name)
    return added


__all__ = ["LiftingReward", "PlacingReward", "ROBOT_TERMS", "ReachingReward", "action_rate", "add_task_rewards",
           "joint_vel", "robot_tcp_cfg", "success_bonus"]

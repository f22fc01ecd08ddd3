"""A scripted pick-and-place policy for ``PickAndPlaceTask`` envs whose robot uses ``action_mode="ik_rel"``.

Per env (batched torch, no loop over envs) a state machine drives the tool frame (TCP), top-down:

``approach`` 12 cm above the object -> ``descend`` to its centre -> ``grasp`` (close, wait) -> ``lift`` 15 cm ->
``carry`` the object over the centre of the destination's opening -> ``lower`` it until its bottom is
``release_height_m`` above the opening's floor (the top of a closed destination) -> ``release`` (open, wait) ->
``retreat`` ``retreat_m`` straight up and hold there, gripper open.

The task's success needs the object released (gripper open, the TCP away from it) and still for a hold time
(``environments/task_terms.py``), so the retreat is what lets an episode succeed: it takes the TCP farther from
the object than the task's ``success_release_distance_m``.

Targets come from the simulator (the policy is privileged: it reads the object's and the destination's poses
like the task's observations do). Each step's action is a TCP displacement in the robot base frame toward the
phase's target (gain ``position_gain``, at most ``max_step_m`` per axis), a rotation vector toward the top-down
grasp orientation (the tool's yaw turned to the object's faces), and the gripper command (< 0 closes). Lengths
in metres, angles in radians; positions env-local.
"""

from __future__ import annotations

import math

import torch

from isaaclab.utils.math import (axis_angle_from_quat, euler_xyz_from_quat, matrix_from_quat, quat_apply_inverse,
                                 quat_conjugate, quat_from_euler_xyz, quat_mul)

from isaaclab_arena.embodiments.embodiment import ROBOT_SCENE_KEY
from isaaclab_arena.environments.task_terms import DestinationOpenings, TaskPoses

PHASES = ("approach", "descend", "grasp", "lift", "carry", "lower", "release", "retreat")
(APPROACH, DESCEND, GRASP, LIFT, CARRY, LOWER, RELEASE, RETREAT) = range(len(PHASES))


def _yaw(q: torch.Tensor) -> torch.Tensor:
    """(N,) heading about world Z of (N, 4) xyzw quaternions, radians."""
    return euler_xyz_from_quat(q)[2]


class ScriptedPickAndPlacePolicy:
    """Callable ``policy(obs) -> actions (num_envs, 7)``; :meth:`reset` restarts the given envs' state machines.

    Args:
        env: The gym env (or its ``ManagerBasedRLEnv``) of a ``PickAndPlaceTask`` with an ``ik_rel`` robot.
        task: The env's ``PickAndPlaceTask``.
        members: ``{object set name: [member per env]}`` (``ArenaEnvBuilder.member_indices``).
        tcp_link: The robot's tool-frame body (None: the builder's embodiment's ``RobotDescription.tcp_link``).
        position_gain: TCP displacement commanded per metre of error (the drives lag; > 1 speeds them up).
        max_step_m: Largest commanded displacement per axis per step, metres.
        release_height_m: Height of the object's bottom above the opening's floor when it is let go, metres.
        retreat_m: How far the TCP rises after the release, metres (more than the task's
            ``success_release_distance_m`` plus the object's half height).
    """

    def __init__(self, env, task=None, members: dict | None = None, tcp_link: str | None = None,
                 position_gain: float = 4.0, max_step_m: float = 0.08, release_height_m: float = 0.015,
                 retreat_m: float = 0.10):
        from isaaclab_arena.evaluation.policy import EnvInfo, PolicyError

        if isinstance(env, EnvInfo):
            raise PolicyError("scripted_pick_and_place reads the simulator's object poses (a privileged policy): it "
                              "runs in the runner's process only and cannot be served remotely")
        builder = getattr(getattr(env, "unwrapped", env), "arena_builder", None)
        if task is None and builder is not None:
            task = builder.arena_env.task
        if task is None:
            name = builder.arena_env.name if builder is not None else "this env"
            raise PolicyError(f"--policy_type scripted_pick_and_place needs a PickAndPlaceTask; environment '{name}' "
                              "has no task")
        if members is None and builder is not None:
            members = builder.member_indices
        if tcp_link is None:  # the robot's own tool frame (RobotDescription.tcp_link), whichever arm it is
            robot = builder.arena_env.embodiment if builder is not None else None
            if robot is None:
                raise PolicyError("scripted_pick_and_place needs the robot's tool frame: give tcp_link (the TCP body "
                                  "name), or build the env with an embodiment (ArenaEnvBuilder)")
            tcp_link = robot.description.tcp_link
        self.env = env.unwrapped if hasattr(env, "unwrapped") else env
        u = self.env
        arm = u.action_manager.get_term("arm") if "arm" in u.action_manager.active_terms else None
        if arm is None or not getattr(getattr(arm.cfg, "controller", None), "use_relative_mode", False) \
                or u.action_manager.total_action_dim != 7:
            raise PolicyError("the scripted pick-and-place policy drives a robot with action_mode='ik_rel' (6 TCP deltas "
                              f"+ gripper); this env's actions have {u.action_manager.total_action_dim} dimensions")
        self.robot = u.scene[ROBOT_SCENE_KEY]
        self.tcp_id = self.robot.find_bodies(tcp_link)[0][0]
        self.poses = TaskPoses(u, task, members or {})
        self.openings = DestinationOpenings(task.destination_location, u.num_envs, members or {},
                                            task.success_wall_margin_m, u.device)
        self.gain, self.max_step = float(position_gain), float(max_step_m)
        self.release_height, self.retreat = float(release_height_m), float(retreat_m)
        n, dev = u.num_envs, u.device
        self.phase = torch.zeros(n, dtype=torch.long, device=dev)
        self.timer = torch.zeros(n, dtype=torch.long, device=dev)
        self.hold = torch.zeros(n, 3, device=dev)     # TCP minus object centre while carrying
        self.anchor = torch.zeros(n, 3, device=dev)   # the lift / retreat target fixed when the phase starts
        half = 0.5 * (self.poses.obj_hi - self.poses.obj_lo)
        self.half_height = half[:, 2]
        self.turn = torch.where(half[:, 0] <= half[:, 1], math.pi / 2, 0.0)  # fingers close across the narrow side
        self.step_quarter = (half[:, 0] - half[:, 1]).abs() < 1e-6  # square footprint: any quarter turn grips

    def reset(self, env_ids: torch.Tensor | None = None) -> None:
        ids = slice(None) if env_ids is None else env_ids
        self.phase[ids] = APPROACH
        self.timer[ids] = 0

    def _tcp(self) -> torch.Tensor:
        pose = self.robot.data.body_link_pose_w.torch[:, self.tcp_id].clone()
        pose[:, :3] -= self.env.scene.env_origins
        return pose

    def _object_centre(self, obj: torch.Tensor) -> torch.Tensor:
        centre = 0.5 * (self.poses.obj_lo + self.poses.obj_hi)
        return obj[:, :3] + (matrix_from_quat(obj[:, 3:]) @ centre[..., None])[..., 0]

    def _targets(self, tcp, obj, centre, dest) -> tuple[torch.Tensor, torch.Tensor]:
        """(num_envs, 3) TCP target and (num_envs,) gripper command of every env's phase."""
        p = self.phase
        floor = self.openings.floor_centre(dest)  # env-local centre of the opening at its floor
        zero = torch.zeros_like(self.half_height)
        over = floor + torch.stack([zero, zero, self.half_height + 0.10], -1)
        down = floor + torch.stack([zero, zero, self.half_height + self.release_height], -1)
        up = torch.tensor([0.0, 0.0, 0.12], device=tcp.device)
        target = centre + up
        target = torch.where((p == DESCEND)[:, None] | (p == GRASP)[:, None], centre, target)
        target = torch.where(((p == LIFT) | (p == RETREAT))[:, None], self.anchor, target)
        target = torch.where((p == CARRY)[:, None], over + self.hold, target)
        target = torch.where(((p == LOWER) | (p == RELEASE))[:, None], down + self.hold, target)
        closed = (p >= GRASP) & (p <= LOWER)
        return target, torch.where(closed, -1.0, 1.0)

    def _advance(self, err: torch.Tensor, tcp: torch.Tensor, centre: torch.Tensor) -> None:
        p, t = self.phase, self.timer
        t += 1
        late = t > 90  # after 1.5 s (60 Hz) a phase settles for a looser target rather than stall
        go = (((p == APPROACH) & ((err < 0.01) | (late & (err < 0.03)))) | ((p == DESCEND) & ((err < 0.006) | late))
              | ((p == GRASP) & (t > 25)) | ((p == LIFT) & ((err < 0.02) | late))
              | ((p == CARRY) & ((err < 0.015) | (late & (err < 0.03))))
              | ((p == LOWER) & ((err < 0.008) | late)) | ((p == RELEASE) & (t > 20)))
        lift = go & (p == GRASP)
        self.anchor[lift] = tcp[lift, :3] + torch.tensor([0.0, 0.0, 0.15], device=tcp.device)
        carry = go & (p == LIFT)
        self.hold[carry] = tcp[carry, :3] - centre[carry]
        retreat = go & (p == RELEASE)
        self.anchor[retreat] = tcp[retreat, :3] + torch.tensor([0.0, 0.0, self.retreat], device=tcp.device)
        self.phase = torch.clamp(p + go.long(), max=RETREAT)
        self.timer = torch.where(go, torch.zeros_like(t), t)

    def get_action(self, env=None, observations=None) -> torch.Tensor:
        """The policy protocol's call (``evaluation/policy.py``); same as calling the policy."""
        return self(observations)

    def __call__(self, obs=None) -> torch.Tensor:
        tcp = self._tcp()
        obj, dest = self.poses.object_pose(), self.poses.destination_pose()
        centre = self._object_centre(obj)
        target, grip = self._targets(tcp, obj, centre, dest)
        err_vec = target - tcp[:, :3]
        base_quat = self.robot.data.root_quat_w.torch
        move = torch.clamp(self.gain * err_vec, -self.max_step, self.max_step)
        # top-down tool, its yaw turned to the object's faces (the nearest equivalent heading to the current one)
        period = torch.where(self.step_quarter, math.pi / 2, math.pi)
        tcp_yaw = _yaw(quat_mul(tcp[:, 3:], torch.tensor([1.0, 0.0, 0.0, 0.0], device=tcp.device).expand_as(tcp[:, 3:])))
        want = _yaw(obj[:, 3:]) + self.turn
        want = tcp_yaw + torch.remainder(want - tcp_yaw + period / 2, period) - period / 2
        q_des = quat_from_euler_xyz(torch.full_like(want, math.pi), torch.zeros_like(want), want)
        rot = axis_angle_from_quat(quat_mul(q_des, quat_conjugate(tcp[:, 3:])))
        rot = torch.clamp(3.0 * rot, -0.3, 0.3)
        action = torch.cat([quat_apply_inverse(base_quat, move), quat_apply_inverse(base_quat, rot), grip[:, None]], -1)
        self._advance(err_vec.norm(dim=-1), tcp, centre)
        return action

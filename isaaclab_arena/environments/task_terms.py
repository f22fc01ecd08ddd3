"""Isaac Lab terms of a ``PickAndPlaceTask``: success, time-out and observations, measured from the simulator.

:func:`add_task_terms` adds to a manager-based env config

* termination ``success`` (:class:`PickAndPlaceSuccess`, not a time-out): every condition of
  :class:`SuccessConditions` (inside the destination's opening, below its rim, released, still) holds without a
  break for the task's ``success_hold_s``; the existing ``time_out`` term ends the episode after
  ``episode_length_s``;
* observations (group ``policy``): ``object_pose`` and ``destination_pose``, env-local x, y, z (m) and
  qx, qy, qz, qw;
and the builder adds the task's rewards beside them (``environments/task_rewards.py``, weighted by the task's
``reward_weights``; the ``success`` reward reads this termination, so success has one definition).

Frames: *world* is the simulator's frame; *env-local* is world minus the env's origin (poses observed and
written by the project); the *destination frame* is the destination's root frame, in which its bounding box
and its opening (``tasks/destination_opening.py``) are given. Lengths in metres, speeds in m/s, times in
seconds. Every quantity is a batched torch tensor over the envs (no loop over envs).

A destination spawned as a scene entity (an object, an object set) is read from the simulator every step; one
that spawns nothing (an object reference such as a tabletop) is at its fixed pose. Object-set members are
measured with the box and the opening of the member each env holds.
"""

from __future__ import annotations

import math
import re

import torch

from isaaclab.managers import (ManagerTermBase, ObservationGroupCfg, ObservationTermCfg, SceneEntityCfg,
                              TerminationTermCfg)
from isaaclab.utils import configclass
from isaaclab.utils.math import matrix_from_quat


def _local_boxes(asset, num_envs: int, members: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """(num_envs, 3) local box corners of ``asset`` in each env (the env's member for an object set)."""
    objects = getattr(asset, "objects", None)
    if objects is not None and asset.name in members:
        boxes = [objects[i].get_bounding_box() for i in members[asset.name]]
    else:
        boxes = [asset.get_bounding_box()] * num_envs
    lo = torch.tensor([b.min_point for b in boxes], dtype=torch.float32)
    hi = torch.tensor([b.max_point for b in boxes], dtype=torch.float32)
    return lo, hi


def _corners(lo: torch.Tensor, hi: torch.Tensor) -> torch.Tensor:
    """(N, 8, 3) corners of boxes (N, 3)."""
    sel = torch.tensor([[i >> 2 & 1, i >> 1 & 1, i & 1] for i in range(8)], dtype=lo.dtype, device=lo.device)
    return lo[:, None] + sel[None] * (hi - lo)[:, None]


def _z_range(pose: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(N,) lowest and highest world z of boxes (N, 3) at poses (N, 7)."""
    z = (matrix_from_quat(pose[:, 3:])[:, 2:3] @ _corners(lo, hi).transpose(1, 2))[:, 0] + pose[:, 2:3]
    return z.min(dim=1).values, z.max(dim=1).values


class TaskPoses:
    """Env-local poses (num_envs, 7) of the task's assets, read from the simulator (or fixed)."""

    def __init__(self, env, task, members: dict):
        self.env = env
        n = env.num_envs
        self.object_key = task.pick_up_object.get_scene_root_keys()[0]
        dest = task.destination_location
        keys = dest.get_scene_root_keys()
        # a destination read from the simulator: a scene entity with state (rigid objects, object sets); a static
        # one (a background such as the floor, a reference such as a tabletop) stays at its fixed pose
        live = keys and keys[0] in env.scene.keys() and hasattr(env.scene[keys[0]], "data")
        self.dest_key = keys[0] if live else None
        self.dest_fixed = None
        if self.dest_key is None:
            pose = dest.get_world_pose()  # None: spawned at the env origin (a background without initial_pose)
            xyz, q = (pose.position_xyz, pose.rotation_xyzw) if pose is not None else ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))
            self.dest_fixed = torch.tensor([*xyz, *q], device=env.device).expand(n, 7)
        self.obj_lo, self.obj_hi = (t.to(env.device) for t in _local_boxes(task.pick_up_object, n, members))
        self.dest_lo, self.dest_hi = (t.to(env.device) for t in _local_boxes(dest, n, members))

    def _pose(self, key: str) -> torch.Tensor:
        data = self.env.scene[key].data
        return torch.cat([data.root_pos_w.torch - self.env.scene.env_origins, data.root_quat_w.torch], dim=-1)

    def object_pose(self) -> torch.Tensor:
        return self._pose(self.object_key)

    def destination_pose(self) -> torch.Tensor:
        return self.dest_fixed if self.dest_key is None else self._pose(self.dest_key)

    def object_speed(self) -> torch.Tensor:
        return self.env.scene[self.object_key].data.root_lin_vel_w.torch.norm(dim=-1)


_OPENINGS: dict = {}


def _opening(asset, margin: float):
    """The asset's :class:`~isaaclab_arena.tasks.destination_opening.Opening` (computed once per asset and margin)."""
    from isaaclab_arena.tasks.destination_opening import destination_opening

    key = (id(asset), float(margin))
    hit = _OPENINGS.get(key)
    if hit is None or hit[0] is not asset:
        hit = _OPENINGS[key] = (asset, destination_opening(asset, margin))
    return hit[1]


class DestinationOpenings:
    """Each env's destination opening as (num_envs, ...) tensors in the destination frame, metres: ``round``
    (bool), ``centre`` (N, 2), ``radius`` (N,; discs), ``lo`` / ``hi`` (N, 2; rectangles), ``rim`` (N,) and
    ``floor`` (N,) heights. Object-set members: the opening of the member each env holds."""

    def __init__(self, asset, num_envs: int, members: dict, wall_margin_m: float, device):
        objects = getattr(asset, "objects", None)
        if objects is not None and asset.name in members:
            ops = [_opening(objects[i], wall_margin_m) for i in members[asset.name]]
        else:
            ops = [_opening(asset, wall_margin_m)] * num_envs

        def t(values, dtype=torch.float32):
            return torch.tensor(values, dtype=dtype, device=device)

        self.openings = ops
        self.round = t([o.round for o in ops], torch.bool)
        self.centre, self.radius = t([o.centre_xy for o in ops]), t([o.radius_m for o in ops])
        self.lo, self.hi = t([o.lo_xy for o in ops]), t([o.hi_xy for o in ops])
        self.rim, self.floor = t([o.rim_z for o in ops]), t([o.floor_z for o in ops])

    def contains_xy(self, xy: torch.Tensor) -> torch.Tensor:
        """(N,) bool: points (N, 2) in the destination frame (metres) inside each env's opening."""
        in_disc = torch.linalg.norm(xy - self.centre, dim=-1) <= self.radius
        in_rect = ((xy >= self.lo) & (xy <= self.hi)).all(dim=-1)
        return torch.where(self.round, in_disc, in_rect)

    def floor_centre(self, dest_pose: torch.Tensor) -> torch.Tensor:
        """(N, 3) the opening's centre at its floor height, in the frame of ``dest_pose`` (N, 7) (env-local when the
        pose is), metres: where a placed object's bottom centre comes to rest."""
        local = torch.cat([self.centre, self.floor[:, None]], dim=-1)
        return dest_pose[:, :3] + (matrix_from_quat(dest_pose[:, 3:]) @ local[..., None])[..., 0]


def _command_for(joint: str, expr: dict) -> float:
    if joint in expr:
        return float(expr[joint])
    for key, value in expr.items():
        if re.fullmatch(key, joint):
            return float(value)
    raise KeyError(joint)


def robot_tcp_cfg(env_cfg, embodiment=None) -> SceneEntityCfg | None:
    """The robot's TCP as ``SceneEntityCfg(robot key, body_names=[tcp link])``, or None without a robot.

    From ``embodiment`` when given, else from the ``tcp_pose`` observation the embodiment terms add
    (``environments/embodiment_terms.py``)."""
    from isaaclab_arena.embodiments.embodiment import ROBOT_SCENE_KEY

    if embodiment is not None:
        return SceneEntityCfg(ROBOT_SCENE_KEY, body_names=[embodiment.description.tcp_link])
    if getattr(env_cfg.scene, ROBOT_SCENE_KEY, None) is None:
        return None
    term = getattr(getattr(env_cfg.observations, "policy", None), "tcp_pose", None)
    asset = (getattr(term, "params", None) or {}).get("asset_cfg")
    names = getattr(asset, "body_names", None)
    if not names:
        return None
    return SceneEntityCfg(ROBOT_SCENE_KEY, body_names=[names[0] if isinstance(names, (list, tuple)) else names])


def robot_gripper(env_cfg, embodiment=None) -> dict | None:
    """What "released" reads of the robot, or None without a robot: ``{"asset": scene key, "tcp": TCP body,
    "joints": gripper joints, "open": / "closed": their open and closed positions (m or rad)}``.

    From ``embodiment`` when given, else from the env config: the ``gripper`` action
    (``BinaryJointPositionActionCfg``: joints, open and close commands) and the ``tcp_pose`` observation."""
    tcp = robot_tcp_cfg(env_cfg, embodiment)
    if tcp is None:
        return None
    if embodiment is not None:
        d = embodiment.description
        joints = list(d.gripper_joint_names)
        return {"asset": tcp.name, "tcp": tcp.body_names[0], "joints": joints,
                "open": [float(d.gripper_open_pos)] * len(joints),
                "closed": [float(d.gripper_closed_pos)] * len(joints)}
    action = getattr(getattr(env_cfg, "actions", None), "gripper", None)
    if action is None or not getattr(action, "joint_names", None):
        return None
    joints = list(action.joint_names)
    return {"asset": tcp.name, "tcp": tcp.body_names[0], "joints": joints,
            "open": [_command_for(j, action.open_command_expr) for j in joints],
            "closed": [_command_for(j, action.close_command_expr) for j in joints]}


class SuccessConditions:
    """The success conditions of a ``PickAndPlaceTask``, each one (num_envs,) tensor read from the simulator now.

    One definition of each quantity (the termination, the rewards and the tests read these):

    * :meth:`object_in_destination`: the object's box centre and lowest point in the destination frame (m);
    * :meth:`inside_opening`: that centre's (x, y) inside the destination's opening;
    * :meth:`below_rim`: that lowest point within ``success_rim_tolerance_m`` above the rim and not more than
      that below the opening's floor;
    * :meth:`gripper_open_fraction`, :meth:`tcp_distance`, :meth:`released`: every gripper joint at least
      ``success_gripper_open_fraction`` open and the TCP farther than ``success_release_distance_m`` from the
      object's box (True without a robot);
    * :meth:`object_speed`, :meth:`still`: linear speed (world, m/s) below ``success_speed_m_s``.

    Args:
        env: The manager-based env.
        task: Its ``PickAndPlaceTask``.
        members: ``{object set name: [member per env]}``.
        gripper: :func:`robot_gripper`'s dict, or None (no robot).
    """

    def __init__(self, env, task, members: dict, gripper: dict | None):
        self.env, self.task = env, task
        self.poses = TaskPoses(env, task, members)
        self.openings = DestinationOpenings(task.destination_location, env.num_envs, members,
                                            task.success_wall_margin_m, env.device)
        self.robot = None
        if gripper is not None:
            self.robot = env.scene[gripper["asset"]]
            self.tcp_id = self.robot.find_bodies(gripper["tcp"])[0][0]
            ids, names = self.robot.find_joints(gripper["joints"], preserve_order=True)
            self.joint_ids = torch.tensor(ids, dtype=torch.long, device=env.device)
            self.open_pos = torch.tensor(gripper["open"], device=env.device)
            self.closed_pos = torch.tensor(gripper["closed"], device=env.device)

    def object_in_destination(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(N, 3) object box centre and (N,) its lowest corner's height, both in the destination frame (m)."""
        p = self.poses
        obj, dest = p.object_pose(), p.destination_pose()
        r_obj, r_dest_t = matrix_from_quat(obj[:, 3:]), matrix_from_quat(dest[:, 3:]).transpose(1, 2)
        corners = obj[:, None, :3] + _corners(p.obj_lo, p.obj_hi) @ r_obj.transpose(1, 2)     # (N, 8, 3) env-local
        local = (corners - dest[:, None, :3]) @ r_dest_t.transpose(1, 2)                       # destination frame
        return local.mean(dim=1), local[..., 2].min(dim=1).values

    def inside_opening(self, centre: torch.Tensor | None = None) -> torch.Tensor:
        """(N,) bool: the object's box centre (destination frame) inside the opening's disc or rectangle."""
        if centre is None:
            centre = self.object_in_destination()[0]
        return self.openings.contains_xy(centre[:, :2])

    def below_rim(self, bottom: torch.Tensor | None = None) -> torch.Tensor:
        """(N,) bool: ``floor - tol <= bottom <= rim + tol`` (destination frame, m; tol = success_rim_tolerance_m)."""
        if bottom is None:
            bottom = self.object_in_destination()[1]
        tol = self.task.success_rim_tolerance_m
        return (bottom <= self.openings.rim + tol) & (bottom >= self.openings.floor - tol)

    def gripper_open_fraction(self) -> torch.Tensor:
        """(N,) the least open gripper joint's opening, 0 closed .. 1 open (unitless; 1 without a robot)."""
        if self.robot is None:
            return torch.ones(self.env.num_envs, device=self.env.device)
        q = self.robot.data.joint_pos.torch[:, self.joint_ids]
        return ((q - self.closed_pos) / (self.open_pos - self.closed_pos)).min(dim=-1).values

    def tcp_distance(self) -> torch.Tensor:
        """(N,) distance (m) from the TCP to the object's box (0 inside it; inf without a robot)."""
        if self.robot is None:
            return torch.full((self.env.num_envs,), math.inf, device=self.env.device)
        p = self.poses
        obj = p.object_pose()
        tcp = self.robot.data.body_link_pose_w.torch[:, self.tcp_id, :3] - self.env.scene.env_origins
        local = (matrix_from_quat(obj[:, 3:]).transpose(1, 2) @ (tcp - obj[:, :3])[..., None])[..., 0]
        centre, half = 0.5 * (p.obj_lo + p.obj_hi), 0.5 * (p.obj_hi - p.obj_lo)
        return torch.linalg.norm(torch.clamp((local - centre).abs() - half, min=0.0), dim=-1)

    def released(self) -> torch.Tensor:
        """(N,) bool: gripper open (:meth:`gripper_open_fraction` >= success_gripper_open_fraction) and the TCP
        farther than success_release_distance_m from the object's box (True without a robot)."""
        t = self.task
        return (self.gripper_open_fraction() >= t.success_gripper_open_fraction) \
            & (self.tcp_distance() > t.success_release_distance_m)

    def object_speed(self) -> torch.Tensor:
        """(N,) the object's linear speed, m/s (world frame)."""
        return self.poses.object_speed()

    def still(self) -> torch.Tensor:
        """(N,) bool: :meth:`object_speed` below success_speed_m_s."""
        return self.object_speed() < self.task.success_speed_m_s

    def evaluate(self) -> dict[str, torch.Tensor]:
        """``{"inside_opening", "below_rim", "released", "still", "all"}``: (N,) bool each, read now."""
        centre, bottom = self.object_in_destination()
        out = {"inside_opening": self.inside_opening(centre), "below_rim": self.below_rim(bottom),
               "released": self.released(), "still": self.still()}
        out["all"] = out["inside_opening"] & out["below_rim"] & out["released"] & out["still"]
        return out


class PickAndPlaceSuccess(ManagerTermBase):
    """Termination term: (num_envs,) bool, True where every :class:`SuccessConditions` condition has held for
    ``success_hold_s`` without a break.

    The hold is counted per env in env steps: ``held_steps`` grows by one on every call (one per env step) where
    all conditions hold and drops to 0 where one fails, and on the env's reset; success is
    ``held_steps >= required_steps = max(1, ceil(success_hold_s / step_dt))`` (step_dt in seconds). ``conditions``
    keeps the last call's :meth:`SuccessConditions.evaluate` (diagnostics, tests). Params: ``task`` (a
    ``TaskRef``), ``members`` (``{set name: [member per env]}``), ``gripper`` (:func:`robot_gripper` or None)."""

    def __init__(self, cfg, env):
        super().__init__(cfg, env)
        task = cfg.params["task"].task
        self.success = SuccessConditions(env, task, cfg.params.get("members") or {}, cfg.params.get("gripper"))
        self.required_steps = max(1, math.ceil(task.success_hold_s / env.step_dt - 1e-9))
        self.held_steps = torch.zeros(env.num_envs, dtype=torch.long, device=env.device)
        self.conditions: dict[str, torch.Tensor] = {}

    def reset(self, env_ids=None) -> None:
        self.held_steps[slice(None) if env_ids is None else env_ids] = 0

    def __call__(self, env, task, members=None, gripper=None) -> torch.Tensor:
        self.conditions = self.success.evaluate()
        self.held_steps = torch.where(self.conditions["all"], self.held_steps + 1, torch.zeros_like(self.held_steps))
        return self.held_steps >= self.required_steps

class TaskRef:
    """A term parameter carrying the task by reference (Isaac Lab copies term configs deeply)."""

    __slots__ = ("task",)

    def __init__(self, task):
        self.task = task

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __repr__(self) -> str:
        return f"TaskRef({self.task!r})"


class _PoseObservation(ManagerTermBase):
    """Observation term: (num_envs, 7) env-local pose of the task's ``which`` asset (``object`` / ``destination``)."""

    def __init__(self, cfg, env):
        super().__init__(cfg, env)
        self.poses = TaskPoses(env, cfg.params["task"].task, cfg.params.get("members") or {})
        self.which = cfg.params["which"]

    def __call__(self, env, task, which, members=None) -> torch.Tensor:
        return self.poses.object_pose() if self.which == "object" else self.poses.destination_pose()


@configclass
class TaskObservationsCfg:
    """Observation groups of a task env without an embodiment (``policy``)."""

    policy: ObservationGroupCfg = ObservationGroupCfg()


def add_task_terms(env_cfg, task, members: dict | None = None, embodiment=None) -> None:
    """Adds the ``success`` termination and the ``object_pose`` / ``destination_pose`` observations of ``task``
    (a ``PickAndPlaceTask``) to a manager-based env config (the builder sets ``episode_length_s`` and adds the
    reward terms with ``task_rewards.add_task_rewards``). The robot's gripper and TCP come from ``embodiment``,
    else from the embodiment terms already in ``env_cfg`` (:func:`robot_gripper`); add those first."""
    params = {"task": TaskRef(task), "members": dict(members or {})}
    env_cfg.terminations.success = TerminationTermCfg(
        func=PickAndPlaceSuccess, params={**params, "gripper": robot_gripper(env_cfg, embodiment)}, time_out=False)
    group = getattr(env_cfg.observations, "policy", None)
    if group is None:
        env_cfg.observations = TaskObservationsCfg(policy=ObservationGroupCfg(concatenate_terms=True,
                                                                              enable_corruption=False))
        group = env_cfg.observations.policy
    group.object_pose = ObservationTermCfg(func=_PoseObservation, params={**params, "which": "object"})
    group.destination_pose = ObservationTermCfg(func=_PoseObservation, params={**params, "which": "destination"})


def check_task(arena_env):
    """The environment's task after checking it (a ``PickAndPlaceTask`` over assets of this environment, its
    pick-up object a spawned rigid body), or None."""
    from isaaclab_arena.assets.object_type import ObjectType
    from isaaclab_arena.tasks import TASK_KINDS

    task = arena_env.task
    if task is None:
        return None
    if not isinstance(task, tuple(TASK_KINDS.values())):
        raise TypeError(f"environment '{arena_env.name}': task must be one of {sorted(TASK_KINDS)}, got {task!r}")
    assets = {a.name: a for a in arena_env.assets}
    for field, asset in (("pick_up_object", task.pick_up_object), ("destination_location", task.destination_location),
                         ("background_scene", task.background_scene)):
        if asset is not None and assets.get(asset.name) is not asset:
            raise ValueError(f"task {type(task).__name__}: {field} '{asset.name}' is not an asset of environment "
                             f"'{arena_env.name}'; assets: {sorted(assets)}")
    obj = task.pick_up_object
    keys = obj.get_scene_root_keys()
    if getattr(obj, "object_type", None) != ObjectType.RIGID or getattr(obj, "spawn_cfg", 1) is None or len(keys) != 1:
        raise ValueError(f"task {type(task).__name__}: pick_up_object '{obj.name}' must be one spawned rigid body "
                         f"(an object or object set of type rigid), got {type(obj).__name__} of type "
                         f"{getattr(obj, 'object_type', None)}")
    return task

"""Isaac Lab terms of a ``PickAndPlaceTask``: success, time-out and observations, measured from the simulator.

:func:`add_task_terms` adds to a manager-based env config

* termination ``success`` (:class:`PickAndPlaceSuccess`, not a time-out): the pick-up object's box centre is
  inside the destination's footprint (the destination's box in its own frame), the object's lowest corner is
  between the destination's lowest corner and ``success_height_tolerance_m`` above its highest, and the object
  moves slower than ``success_speed_m_s``; the existing ``time_out`` term ends the episode after
  ``episode_length_s``;
* observations (group ``policy``): ``object_pose`` and ``destination_pose``, env-local x, y, z (m) and
  qx, qy, qz, qw;
and the builder adds the task's rewards beside them (``environments/task_rewards.py``, weighted by the task's
``reward_weights``).

A destination spawned as a scene entity (an object, an object set) is read from the simulator every step; one
that spawns nothing (an object reference such as a tabletop) is at its fixed pose. Object-set members are
measured with the box of the member each env holds.
"""

from __future__ import annotations

import torch

from isaaclab.managers import ManagerTermBase, ObservationGroupCfg, ObservationTermCfg, TerminationTermCfg
from isaaclab.utils import configclass


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


def _quat_to_matrix(q: torch.Tensor) -> torch.Tensor:
    x, y, z, w = q.unbind(-1)
    return torch.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w),
                        2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
                        2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1).reshape(*q.shape[:-1], 3, 3)


def _corners(lo: torch.Tensor, hi: torch.Tensor) -> torch.Tensor:
    """(N, 8, 3) corners of boxes (N, 3)."""
    sel = torch.tensor([[i >> 2 & 1, i >> 1 & 1, i & 1] for i in range(8)], dtype=lo.dtype, device=lo.device)
    return lo[:, None] + sel[None] * (hi - lo)[:, None]


def _z_range(pose: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(N,) lowest and highest world z of boxes (N, 3) at poses (N, 7)."""
    z = (_quat_to_matrix(pose[:, 3:])[:, 2:3] @ _corners(lo, hi).transpose(1, 2))[:, 0] + pose[:, 2:3]
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


class PickAndPlaceSuccess(ManagerTermBase):
    """Termination term: (num_envs,) bool, True where the object rests on or in the destination (see the module
    docstring). Params: ``task`` (a ``PickAndPlaceTask``) and ``members`` (``{set name: [member per env]}``)."""

    def __init__(self, cfg, env):
        super().__init__(cfg, env)
        task = cfg.params["task"].task
        self.poses = TaskPoses(env, task, cfg.params.get("members") or {})
        self.height_tol = task.success_height_tolerance_m
        self.speed = task.success_speed_m_s

    def __call__(self, env, task, members=None) -> torch.Tensor:
        p = self.poses
        obj, dest = p.object_pose(), p.destination_pose()
        centre_local = 0.5 * (p.obj_lo + p.obj_hi)
        centre = obj[:, :3] + (_quat_to_matrix(obj[:, 3:]) @ centre_local[..., None])[..., 0]
        in_dest = (_quat_to_matrix(dest[:, 3:]).transpose(1, 2) @ (centre - dest[:, :3])[..., None])[..., 0]
        inside = ((in_dest[:, :2] >= p.dest_lo[:, :2]) & (in_dest[:, :2] <= p.dest_hi[:, :2])).all(dim=-1)
        bottom, _ = _z_range(obj, p.obj_lo, p.obj_hi)
        dest_bottom, dest_top = _z_range(dest, p.dest_lo, p.dest_hi)
        height_ok = (bottom >= dest_bottom - self.height_tol) & (bottom <= dest_top + self.height_tol)
        return inside & height_ok & (p.object_speed() < self.speed)


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


def add_task_terms(env_cfg, task, members: dict | None = None) -> None:
    """Adds the ``success`` termination and the ``object_pose`` / ``destination_pose`` observations of ``task``
    (a ``PickAndPlaceTask``) to a manager-based env config (the builder sets ``episode_length_s`` and adds the
    reward terms with ``task_rewards.add_task_rewards``)."""
    params = {"task": TaskRef(task), "members": dict(members or {})}
    env_cfg.terminations.success = TerminationTermCfg(func=PickAndPlaceSuccess, params=params, time_out=False)
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

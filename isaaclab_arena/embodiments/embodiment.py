"""Embodiments: robots as placeable assets.

An :class:`Embodiment` is a :class:`PlaceableAsset` whose runtime scene key is ``"robot"``: a fixed-base arm
on a box stand. Its root frame is the arm's base link (the top of the stand); its placement footprint is
the stand's box only (``placement_bbox_stand_only``), so relations place the stand, not the arm's reach.
What a particular robot is (USD, URDF, joints, home pose, actuators) lives in a :class:`RobotDescription`;
the Isaac Lab configs (articulation, actions, observations, reset) are made from it by
``isaaclab_arena.environments.embodiment_terms``. Lengths in metres, angles in radians, quaternions xyzw.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from isaaclab_arena.assets.asset import PlaceableAsset
from isaaclab_arena.assets.bounding_box import AxisAlignedBoundingBox
from isaaclab_arena.assets.object_type import ObjectType
from isaaclab_arena.reachability.ik_reachability import ReachabilityRobot
from isaaclab_arena.utils.pose import Pose

#: Runtime scene key of a single-root embodiment (Isaac Lab's ``env.scene["robot"]``).
ROBOT_SCENE_KEY = "robot"
#: Action modes an embodiment offers: joint position targets, or a differential-IK TCP pose command
#: (absolute, in the robot base frame; or relative to the current TCP pose).
ACTION_MODES = ("joint_pos", "ik_abs", "ik_rel")


@dataclass(frozen=True)
class ActuatorGroup:
    """Implicit PD drives of a group of joints.

    Attributes:
        joint_names_expr: Regular expressions of the joints.
        stiffness: N*m/rad (revolute) or N/m (prismatic).
        damping: N*m*s/rad or N*s/m.
        effort_limit: N*m or N, one value or ``{joint regex: limit}``.
    """

    joint_names_expr: tuple[str, ...]
    stiffness: float
    damping: float
    effort_limit: float | dict


@dataclass(frozen=True)
class RobotDescription:
    """What an embodiment is made of (one per robot model).

    Attributes:
        robot_name: Registry-style name of the model (``franka_panda``).
        usd_path: USD file spawned into the scene (fixed-base articulation root on its default prim).
        urdf_path: The robot description the USD was built from (the IK reads it).
        root_link: Base link; its frame is the embodiment's root pose.
        root_link_prim: Path of the base link below the spawned prim (the stand is authored under it).
        tcp_link: Tool-centre frame (between the fingertips): IK, observations and task-space actions.
        arm_joint_names: Arm joints, base to tip.
        gripper_joint_names: Gripper joints.
        default_joint_pos: Home joint positions ``{joint: rad or m}`` (arm and gripper).
        gripper_open_pos: Gripper joint position when open (m).
        gripper_closed_pos: Gripper joint position when closed (m).
        actuators: Actuator groups by name.
        curobo_config: cuRobo robot configuration (a file name in cuRobo's robot config folder, e.g.
            ``franka.yml``) for the optional cuRobo IK backend (``isaaclab_arena_curobo``); None: no cuRobo model.
        curobo_tcp_offset_m: The TCP in cuRobo's end-effector link frame (x, y, z metres; rotation identity).
    """

    robot_name: str
    usd_path: str
    urdf_path: str
    root_link: str
    root_link_prim: str
    tcp_link: str
    arm_joint_names: tuple[str, ...]
    gripper_joint_names: tuple[str, ...]
    default_joint_pos: dict
    gripper_open_pos: float
    gripper_closed_pos: float
    actuators: dict = field(default_factory=dict)
    curobo_config: str | None = None
    curobo_tcp_offset_m: tuple[float, float, float] = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class StandCfg:
    """The box the robot stands on, in the robot root frame (the arm's base link sits on its top face).

    Attributes:
        size_xy_m: Stand footprint (x, y), metres.
        height_m: Stand height, metres (the root frame is this far above the stand's bottom face).
        center_xy_m: Footprint centre in the root frame, metres.
    """

    size_xy_m: tuple[float, float] = (0.3, 0.3)
    height_m: float = 0.75
    center_xy_m: tuple[float, float] = (0.0, 0.0)

    def __post_init__(self):
        values = [*self.size_xy_m, self.height_m, *self.center_xy_m]
        if len(self.size_xy_m) != 2 or len(self.center_xy_m) != 2 or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values):
            raise ValueError(f"stand: size_xy_m and center_xy_m take 2 finite numbers, height_m one; got "
                             f"size_xy_m={self.size_xy_m!r}, height_m={self.height_m!r}, center_xy_m={self.center_xy_m!r}")
        if min(self.size_xy_m) <= 0 or self.height_m <= 0:
            raise ValueError(f"stand: size_xy_m and height_m must be > 0 metres, got size_xy_m={self.size_xy_m!r}, "
                             f"height_m={self.height_m!r}")

    def bounding_box(self) -> AxisAlignedBoundingBox:
        """The stand's box in the robot root frame (its top face at z = 0)."""
        (sx, sy), (cx, cy) = self.size_xy_m, self.center_xy_m
        return AxisAlignedBoundingBox((cx - sx / 2, cy - sy / 2, -self.height_m), (cx + sx / 2, cy + sy / 2, 0.0))


class Embodiment(PlaceableAsset):
    """A robot on a stand, placeable like an object (scene key ``"robot"``).

    Args:
        name: Asset name (the YAML node id); the runtime scene key is always ``"robot"``.
        description: The robot model.
        stand: The stand under the robot.
        initial_pose: Fixed env-local root pose (the top centre of the stand's base link frame). None puts
            the stand on the floor at the env origin (:meth:`get_world_pose`).
        action_mode: One of :data:`ACTION_MODES`.
        placement_bbox_stand_only: The placement footprint is the stand alone (the only supported value).
        registry_name: Embodiment registry entry this was made from (YAML round-trip).
        registry_params: Parameters given to that entry.
    """

    is_embodiment = True

    def __init__(self, name: str, description: RobotDescription, stand: StandCfg | None = None,
                 initial_pose: Pose | None = None, action_mode: str = "joint_pos",
                 placement_bbox_stand_only: bool = True, registry_name: str | None = None,
                 registry_params: dict | None = None):
        super().__init__(name, ObjectType.ARTICULATION, initial_pose)
        if not isinstance(description, RobotDescription):
            raise TypeError(f"embodiment '{name}': description must be a RobotDescription, got {description!r}")
        if action_mode not in ACTION_MODES:
            raise ValueError(f"embodiment '{name}': action_mode={action_mode!r} is not accepted; use one of "
                             f"{', '.join(ACTION_MODES)}")
        if placement_bbox_stand_only is not True:
            raise ValueError(f"embodiment '{name}': placement_bbox_stand_only={placement_bbox_stand_only!r} is not "
                             "supported; the placement footprint is the stand's box (true)")
        self.description = description
        self.stand = stand if stand is not None else StandCfg()
        if not isinstance(self.stand, StandCfg):
            raise TypeError(f"embodiment '{name}': stand must be a StandCfg, got {self.stand!r}")
        self.action_mode = action_mode
        self.placement_bbox_stand_only = True
        self.registry_name = registry_name
        self.registry_params = dict(registry_params or {})

    # -- placement ---------------------------------------------------------------------------------
    def get_scene_root_keys(self) -> list[str]:
        return [ROBOT_SCENE_KEY]

    @property
    def scene_key(self) -> str:
        return ROBOT_SCENE_KEY

    def get_bounding_box(self) -> AxisAlignedBoundingBox:
        """The stand's box in the root frame (``placement_bbox_stand_only``): the arm above it is not a
        placement obstacle."""
        return self.stand.bounding_box()

    def get_world_pose(self) -> Pose:
        """The fixed env-local root pose: ``initial_pose``, else the stand on the floor at the env origin."""
        if self.initial_pose is not None:
            return self.initial_pose
        return Pose((0.0, 0.0, self.stand.height_m))

    # -- robot -------------------------------------------------------------------------------------
    @property
    def default_joint_pos(self) -> dict:
        """Home joint positions ``{joint name: rad or m}``."""
        return dict(self.description.default_joint_pos)

    @property
    def curobo_config(self) -> str | None:
        """cuRobo robot configuration of this robot, if it has one (``RobotDescription.curobo_config``)."""
        return self.description.curobo_config

    @property
    def reachability_robot(self) -> ReachabilityRobot:
        """The IK's view of this robot (``isaaclab_arena.reachability.IKReachabilityChecker``)."""
        d = self.description
        return ReachabilityRobot(d.urdf_path, d.root_link, d.tcp_link,
                                 {j: d.default_joint_pos[j] for j in d.arm_joint_names})


def pose_param(value, name: str) -> Pose | None:
    """An ``initial_pose`` parameter as a :class:`Pose`: a ``Pose``, ``{position_xyz, rotation_xyzw}`` (env-local
    metres, xyzw) or None."""
    if value is None or isinstance(value, Pose):
        return value
    if isinstance(value, dict) and set(value) <= {"position_xyz", "rotation_xyzw"} and "position_xyz" in value:
        return Pose(tuple(value["position_xyz"]), tuple(value.get("rotation_xyzw", (0.0, 0.0, 0.0, 1.0))))
    raise ValueError(f"embodiment '{name}': initial_pose must be a Pose or {{position_xyz: [x, y, z], "
                     f"rotation_xyzw: [x, y, z, w]}} (env-local metres), got {value!r}")


def stand_robot_factory(description: RobotDescription):
    """The registry factory of a robot on a box stand (what ``register_embodiment`` registers for ``franka_panda``
    and ``kuka_iiwa``): ``factory(instance_name, **params) -> Embodiment`` with the parameters below."""

    def factory(instance_name: str = "robot", stand_height_m: float = 0.75,
                stand_size_xy_m: tuple[float, float] = (0.3, 0.3), initial_pose=None, action_mode: str = "joint_pos",
                placement_bbox_stand_only: bool = True, enable_cameras: bool = False) -> Embodiment:
        """A robot arm with its gripper on a box stand.

        Args:
            instance_name: Asset name (YAML id); the scene key is ``robot``.
            stand_height_m: Stand height, metres: the arm's base is this high above the stand's bottom face.
            stand_size_xy_m: Stand footprint, metres (centred under the base).
            initial_pose: Fixed env-local root pose (``Pose`` or ``{position_xyz, rotation_xyzw}``); None stands
                the robot on the floor at the env origin.
            action_mode: ``joint_pos`` (7 arm joint targets + 1 gripper open/close), ``ik_abs`` or ``ik_rel``
                (differential-IK TCP pose command + gripper).
            placement_bbox_stand_only: Only ``True``: relations see the stand's box.
            enable_cameras: Only ``False``: this embodiment carries no camera.
        """
        if enable_cameras:
            raise ValueError(f"embodiment '{instance_name}' ({description.robot_name}): enable_cameras=true is not "
                             "supported; this embodiment has no camera")
        stand = StandCfg(size_xy_m=tuple(stand_size_xy_m), height_m=stand_height_m)
        return Embodiment(instance_name, description, stand, pose_param(initial_pose, instance_name), action_mode,
                          placement_bbox_stand_only)

    factory.__name__ = factory.__qualname__ = description.robot_name
    return factory

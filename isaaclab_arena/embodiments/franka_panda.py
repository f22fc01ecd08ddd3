"""The Franka Emika Panda on a box stand (``franka_panda``), from the offline-built USD in
``isaaclab_arena_environments/assets/robots/franka_panda`` (pybullet sdist, Apache-2.0)."""

from __future__ import annotations

import math
import os

from isaaclab_arena import ARENA_ROOT
from isaaclab_arena.embodiments.embodiment import ActuatorGroup, Embodiment, RobotDescription, StandCfg
from isaaclab_arena.embodiments.registry import register_embodiment
from isaaclab_arena.utils.pose import Pose

_FOLDER = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "assets", "robots", "franka_panda")
ARM_JOINTS = tuple(f"panda_joint{i}" for i in range(1, 8))
FINGER_JOINTS = ("panda_finger_joint1", "panda_finger_joint2")
#: Franka's "ready" pose: tool pointing straight down 0.31 m in front of the base, 0.49 m above it.
READY_POSE = dict(zip(ARM_JOINTS, (0.0, -math.pi / 4, 0.0, -3 * math.pi / 4, 0.0, math.pi / 2, math.pi / 4)))

FRANKA_PANDA = RobotDescription(
    robot_name="franka_panda",
    usd_path=os.path.join(_FOLDER, "panda.usda"),
    urdf_path=os.path.join(_FOLDER, "panda.urdf"),
    root_link="panda_link0",
    root_link_prim="Geometry/panda_link0",
    tcp_link="panda_grasptarget",  # URDF frame 0.105 m along the hand's z, between the fingertips
    arm_joint_names=ARM_JOINTS,
    gripper_joint_names=FINGER_JOINTS,
    default_joint_pos={**READY_POSE, **{j: 0.04 for j in FINGER_JOINTS}},
    gripper_open_pos=0.04,
    gripper_closed_pos=0.0,
    actuators={
        "arm": ActuatorGroup(("panda_joint[1-7]",), stiffness=400.0, damping=80.0,
                             effort_limit={"panda_joint[1-4]": 87.0, "panda_joint[5-7]": 12.0}),
        "gripper": ActuatorGroup(("panda_finger_joint.*",), stiffness=2000.0, damping=100.0, effort_limit=200.0),
    },
    curobo_config="franka.yml",  # cuRobo's Franka: end effector panda_hand; the TCP is 0.105 m along its z
    curobo_tcp_offset_m=(0.0, 0.0, 0.105),
)


def _pose(value, name: str) -> Pose | None:
    if value is None or isinstance(value, Pose):
        return value
    if isinstance(value, dict) and set(value) <= {"position_xyz", "rotation_xyzw"} and "position_xyz" in value:
        return Pose(tuple(value["position_xyz"]), tuple(value.get("rotation_xyzw", (0.0, 0.0, 0.0, 1.0))))
    raise ValueError(f"embodiment '{name}': initial_pose must be a Pose or {{position_xyz: [x, y, z], "
                     f"rotation_xyzw: [x, y, z, w]}} (env-local metres), got {value!r}")


@register_embodiment("franka_panda")
def franka_panda(instance_name: str = "robot", stand_height_m: float = 0.75,
                 stand_size_xy_m: tuple[float, float] = (0.3, 0.3), initial_pose=None, action_mode: str = "joint_pos",
                 placement_bbox_stand_only: bool = True, enable_cameras: bool = False) -> Embodiment:
    """A Franka Panda (arm + hand) on a box stand.

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
        raise ValueError(f"embodiment '{instance_name}' (franka_panda): enable_cameras=true is not supported; "
                         "this embodiment has no camera")
    stand = StandCfg(size_xy_m=tuple(stand_size_xy_m), height_m=stand_height_m)
    return Embodiment(instance_name, FRANKA_PANDA, stand, _pose(initial_pose, instance_name), action_mode,
                      placement_bbox_stand_only)

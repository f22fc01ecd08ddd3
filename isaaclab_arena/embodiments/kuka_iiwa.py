"""The KUKA LBR iiwa (7 DOF) with a parallel two-finger gripper on a box stand (``kuka_iiwa``), from the
offline-built USD in ``isaaclab_arena_environments/assets/robots/kuka_iiwa`` (arm from the pybullet sdist,
BSD-2-Clause URDF; gripper authored by the project's build step, ``build_kuka_iiwa.py``)."""

from __future__ import annotations

import math
import os

from isaaclab_arena import ARENA_ROOT
from isaaclab_arena.embodiments.embodiment import ActuatorGroup, RobotDescription, stand_robot_factory
from isaaclab_arena.embodiments.registry import register_embodiment

_FOLDER = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "assets", "robots", "kuka_iiwa")
ARM_JOINTS = tuple(f"lbr_iiwa_joint_{i}" for i in range(1, 8))
FINGER_JOINTS = ("iiwa_finger_joint1", "iiwa_finger_joint2")
#: Home: shoulder 0.4 rad forward, elbow -1.6 rad, wrist set so the tool points straight down (joint 6 =
#: pi - q2 + q4); the TCP is then 0.53 m in front of the base and 0.37 m above it, fingers closing along base y.
HOME_POSE = dict(zip(ARM_JOINTS, (0.0, 0.4, 0.0, -1.6, 0.0, math.pi - 0.4 - 1.6, 0.0)))

KUKA_IIWA = RobotDescription(
    robot_name="kuka_iiwa",
    usd_path=os.path.join(_FOLDER, "lbr_iiwa.usda"),
    urdf_path=os.path.join(_FOLDER, "lbr_iiwa.urdf"),
    root_link="lbr_iiwa_link_0",
    root_link_prim="Geometry/lbr_iiwa_link_0",
    tcp_link="iiwa_grasptarget",  # URDF frame 0.085 m along the hand's z, 0.015 m short of the fingertips
    arm_joint_names=ARM_JOINTS,
    gripper_joint_names=FINGER_JOINTS,
    default_joint_pos={**HOME_POSE, **{j: 0.04 for j in FINGER_JOINTS}},
    gripper_open_pos=0.04,
    gripper_closed_pos=0.0,
    actuators={
        "arm": ActuatorGroup(("lbr_iiwa_joint_[1-7]",), stiffness=400.0, damping=80.0,
                             effort_limit={"lbr_iiwa_joint_[1-2]": 176.0, "lbr_iiwa_joint_[3-5]": 110.0,
                                           "lbr_iiwa_joint_[6-7]": 40.0}),
        "gripper": ActuatorGroup(("iiwa_finger_joint.*",), stiffness=2000.0, damping=100.0, effort_limit=100.0),
    },
)


#: The registry factory ``kuka_iiwa(instance_name, stand_height_m, stand_size_xy_m, initial_pose, action_mode, ...)``
#: (:func:`isaaclab_arena.embodiments.embodiment.stand_robot_factory`).
kuka_iiwa = register_embodiment("kuka_iiwa")(stand_robot_factory(KUKA_IIWA))

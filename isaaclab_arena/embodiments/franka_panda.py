"""The Franka Emika Panda on a box stand (``franka_panda``), from the offline-built USD in
``isaaclab_arena_environments/assets/robots/franka_panda`` (pybullet sdist, Apache-2.0)."""

from __future__ import annotations

import math
import os

from isaaclab_arena import ARENA_ROOT
from isaaclab_arena.embodiments.embodiment import ActuatorGroup, RobotDescription, stand_robot_factory
from isaaclab_arena.embodiments.registry import register_embodiment

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


#: The registry factory ``franka_panda(instance_name, stand_height_m, stand_size_xy_m, initial_pose, action_mode, ...)``
#: (:func:`isaaclab_arena.embodiments.embodiment.stand_robot_factory`).
franka_panda = register_embodiment("franka_panda")(stand_robot_factory(FRANKA_PANDA))

"""Isaac Lab configs of an embodiment: its articulation, action terms, observations and joint reset.

:func:`add_embodiment_entity` puts the robot into the scene as entity ``robot``; :func:`add_embodiment_terms` adds

* actions (``Embodiment.action_mode``): ``joint_pos`` -> ``arm`` (:class:`JointPositionActionCfg`, offsets from
  the home pose, radians) + ``gripper`` (:class:`BinaryJointPositionActionCfg`, < 0 closes, >= 0 opens);
  ``ik_abs`` / ``ik_rel`` -> ``arm`` (:class:`DifferentialInverseKinematicsActionCfg`, TCP pose command in the
  robot base frame, xyz + xyzw for ``ik_abs``, xyz + rotation vector deltas for ``ik_rel``) + ``gripper``;
* observations (group ``policy``): ``joint_pos``, ``joint_vel`` (relative to home), ``tcp_pose`` (env-local
  x, y, z, qx, qy, qz, qw of the tool frame);
* an event ``reset_robot_joints`` (mode ``reset``): joint positions, velocities and position targets back to
  home (targets included: a drive left at an old target would pull the arm away), and the root pose back
  to the spawn pose unless the robot's pose comes from a pose source.

Gravity: the robot's links ignore gravity (PhysX ``disableGravity``, MuJoCo ``gravcomp``), as a torque-
controlled arm with gravity compensation does; objects keep theirs.
"""

from __future__ import annotations

import torch

import isaaclab.sim as sim_utils
from isaaclab.actuators import ImplicitActuatorCfg
from isaaclab.assets import ArticulationCfg
from isaaclab.controllers import DifferentialIKControllerCfg
from isaaclab.envs import mdp
from isaaclab.managers import EventTermCfg, ObservationGroupCfg, ObservationTermCfg, SceneEntityCfg
from isaaclab.utils import configclass

from isaaclab_arena.embodiments.embodiment import ROBOT_SCENE_KEY, Embodiment
from isaaclab_arena.environments.embodiment_spawn import RobotOnStandCfg
from isaaclab_arena.utils.pose import Pose


def articulation_cfg(embodiment: Embodiment, pose: Pose | None = None) -> ArticulationCfg:
    """The robot's ``ArticulationCfg`` at ``{ENV_REGEX_NS}/robot``; ``pose`` is its env-local root pose
    (default: :meth:`Embodiment.get_world_pose`)."""
    from isaaclab_newton.sim.schemas import MujocoRigidBodyCfg, NewtonArticulationCfg
    from isaaclab_physx.sim.schemas import PhysxArticulationCfg, PhysxRigidBodyCfg

    d = embodiment.description
    pose = pose or embodiment.get_world_pose()
    box = embodiment.stand.bounding_box()
    spawn = RobotOnStandCfg(
        usd_path=d.usd_path,
        articulation_props=[PhysxArticulationCfg(enabled_self_collisions=False),
                            NewtonArticulationCfg(self_collision_enabled=False)],
        rigid_props={"/.*": [sim_utils.UsdPhysicsRigidBodyCfg(), PhysxRigidBodyCfg(disable_gravity=True),
                             MujocoRigidBodyCfg(gravcomp=1.0)]},
        stand_parent=d.root_link_prim, stand_min=box.min_point, stand_max=box.max_point)
    actuators = {name: ImplicitActuatorCfg(joint_names_expr=list(g.joint_names_expr), stiffness=g.stiffness,
                                           damping=g.damping, effort_limit_sim=g.effort_limit)
                 for name, g in d.actuators.items()}
    return ArticulationCfg(
        prim_path=f"{{ENV_REGEX_NS}}/{ROBOT_SCENE_KEY}", spawn=spawn, actuators=actuators,
        init_state=ArticulationCfg.InitialStateCfg(pos=tuple(pose.position_xyz), rot=tuple(pose.rotation_xyzw),
                                                   joint_pos=dict(d.default_joint_pos)),
        soft_joint_pos_limit_factor=1.0)


def action_terms(embodiment: Embodiment) -> dict:
    """``{"arm": ..., "gripper": ...}`` action term configs for the embodiment's ``action_mode``."""
    d = embodiment.description
    if embodiment.action_mode == "joint_pos":
        arm = mdp.JointPositionActionCfg(asset_name=ROBOT_SCENE_KEY, joint_names=list(d.arm_joint_names),
                                         scale=1.0, use_default_offset=True, preserve_order=True)
    else:
        arm = mdp.DifferentialInverseKinematicsActionCfg(
            asset_name=ROBOT_SCENE_KEY, joint_names=list(d.arm_joint_names), body_name=d.tcp_link,
            controller=DifferentialIKControllerCfg(command_type="pose", use_relative_mode=embodiment.action_mode == "ik_rel",
                                                   ik_method="dls"))
    gripper = mdp.BinaryJointPositionActionCfg(
        asset_name=ROBOT_SCENE_KEY, joint_names=list(d.gripper_joint_names),
        open_command_expr={j: d.gripper_open_pos for j in d.gripper_joint_names},
        close_command_expr={j: d.gripper_closed_pos for j in d.gripper_joint_names})
    return {"arm": arm, "gripper": gripper}


def tcp_pose(env, asset_cfg: SceneEntityCfg) -> torch.Tensor:
    """(num_envs, 7) env-local pose of the tool frame: x, y, z (m), qx, qy, qz, qw."""
    asset = env.scene[asset_cfg.name]
    pose = asset.data.body_link_pose_w.torch[:, asset_cfg.body_ids[0]].clone()
    pose[:, :3] -= env.scene.env_origins
    return pose


@configclass
class EmbodimentObservationsCfg:
    """Observation groups of an embodiment env (``policy``)."""

    policy: ObservationGroupCfg = ObservationGroupCfg()


def observations_cfg(embodiment: Embodiment) -> EmbodimentObservationsCfg:
    """Group ``policy``: ``joint_pos`` and ``joint_vel`` relative to home (rad, rad/s), ``tcp_pose``."""
    robot = SceneEntityCfg(ROBOT_SCENE_KEY)
    group = ObservationGroupCfg(concatenate_terms=True, enable_corruption=False)
    group.joint_pos = ObservationTermCfg(func=mdp.joint_pos_rel, params={"asset_cfg": robot})
    group.joint_vel = ObservationTermCfg(func=mdp.joint_vel_rel, params={"asset_cfg": robot})
    group.tcp_pose = ObservationTermCfg(func=tcp_pose, params={
        "asset_cfg": SceneEntityCfg(ROBOT_SCENE_KEY, body_names=[embodiment.description.tcp_link])})
    return EmbodimentObservationsCfg(policy=group)


def reset_robot_joints(env, env_ids, asset_cfg: SceneEntityCfg, reset_root_pose: bool = True) -> None:
    """Reset term: joints (positions, velocities, position targets) to home; root pose to the spawn pose
    plus the env origin when ``reset_root_pose``."""
    robot = env.scene[asset_cfg.name]
    if reset_root_pose:
        root = robot.data.default_root_pose.torch[env_ids].clone()
        root[:, :3] += env.scene.env_origins[env_ids]
        robot.write_root_pose_to_sim_index(root_pose=root, env_ids=env_ids)
        robot.write_root_velocity_to_sim_index(root_velocity=robot.data.default_root_vel.torch[env_ids].clone(),
                                               env_ids=env_ids)
    q = robot.data.default_joint_pos.torch[env_ids].clone()
    qd = robot.data.default_joint_vel.torch[env_ids].clone()
    robot.write_joint_position_to_sim_index(position=q, env_ids=env_ids)
    robot.write_joint_velocity_to_sim_index(velocity=qd, env_ids=env_ids)
    robot.actuators.target_command.set_position_index(value=q, env_ids=env_ids)
    robot.actuators.target_command.set_velocity_index(value=qd, env_ids=env_ids)


def check_embodiment(arena_env) -> Embodiment | None:
    """The environment's embodiment after checking it: an ``Embodiment``, not both placed by relations and given
    an initial pose, its scene key ``robot`` free; and no ``RequiresReachability`` marker without it."""
    from isaaclab_arena.relations.markers import RequiresReachability

    embodiment = arena_env.embodiment
    if embodiment is None:
        marked = [a.name for a in arena_env.assets if a.get_relations_of(RequiresReachability)]
        if marked:
            task = " (PickAndPlaceTask marks its pick_up_object)" if arena_env.task is not None else ""
            raise ValueError(f"environment '{arena_env.name}': asset '{marked[0]}' is marked RequiresReachability"
                             f"{task}, but the environment has no embodiment to reach it; add an embodiment (YAML "
                             "key 'embodiment: {id, registry_name}', CLI --embodiment) or remove the marker")
        return None
    if not isinstance(embodiment, Embodiment):
        raise TypeError(f"environment '{arena_env.name}': embodiment must be an Embodiment (see "
                        f"isaaclab_arena.embodiments.make_embodiment), got {embodiment!r}")
    if embodiment.has_placement_relations and embodiment.initial_pose is not None:
        raise ValueError(f"embodiment '{embodiment.name}': it is placed by relations and also has an initial_pose "
                         "(params.initial_pose); a relation-placed robot's pose belongs to the placer, so remove "
                         "initial_pose, or remove its relations to stand it at that fixed pose")
    clash = [a.name for a in arena_env.assets if a.name in (ROBOT_SCENE_KEY, embodiment.name)]
    if clash:
        raise ValueError(f"environment '{arena_env.name}': asset name '{clash[0]}' is taken by the embodiment "
                         f"'{embodiment.name}' (scene key '{ROBOT_SCENE_KEY}'); rename the asset")
    return embodiment


def add_embodiment_entity(scene_cfg, embodiment: Embodiment, pose: Pose | None = None) -> None:
    """Adds the robot to a scene config as entity ``robot`` (``pose``: env-local root pose at spawn)."""
    setattr(scene_cfg, ROBOT_SCENE_KEY, articulation_cfg(embodiment, pose))


def add_embodiment_terms(env_cfg, embodiment: Embodiment, reset_root_pose: bool = True) -> None:
    """Adds the embodiment's actions, observations and joint reset event to a manager-based env config."""
    for name, term in action_terms(embodiment).items():
        setattr(env_cfg.actions, name, term)
    env_cfg.observations = observations_cfg(embodiment)
    env_cfg.events.reset_robot_joints = EventTermCfg(
        func=reset_robot_joints, mode="reset",
        params={"asset_cfg": SceneEntityCfg(ROBOT_SCENE_KEY), "reset_root_pose": reset_root_pose})

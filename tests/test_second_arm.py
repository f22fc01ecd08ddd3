"""A second arm (issue 20, item 6): the KUKA LBR iiwa from pybullet's data, with the parallel gripper its build
step authors, works end to end like the Franka.

* Its description and kinematics: registered as ``kuka_iiwa``; the IK checker's forward kinematics equal
  Pinocchio's (float64, from the shipped URDF); the TCP sits between the fingertips.
* Placed by relations from ``robot/kuka_iiwa_pick_and_place.yaml`` (On floor, NextTo the table's -Y side,
  turned to face it), and the same ``IKReachabilityChecker`` decides: an object on the table in front of it is
  accepted (its solution re-checked by Pinocchio in float64), one at the table's far corner refused (proved out
  of reach by the arm's geometry: the wrist centre farther from the shoulder than the two links between them).
* The built USD in a kit-less Isaac Lab env under OV PhysX: spawned, holding its home pose, its tool frame
  where Pinocchio puts it.
* The scripted pick-and-place policy succeeds on it through the evaluation runner (the same task, YAML spec).

Lengths in metres, angles in radians, quaternions xyzw; positions env-local unless said otherwise.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
import torch

from isaaclab_arena import ARENA_ROOT

SPEC = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "robot", "kuka_iiwa_pick_and_place.yaml")
YAW = math.radians(30.0)
BASE = ((-0.8, 0.0, 0.75), (0.0, 0.0, math.sin(YAW / 2), math.cos(YAW / 2)))
NUM_ENVS = 4
DRIFT_BOUND_RAD = 1e-3


def _rot(q) -> np.ndarray:
    x, y, z, w = (float(v) for v in q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _angle(r_a: np.ndarray, r_b: np.ndarray) -> float:
    """Rotation angle between two rotation matrices, radians (||R_a - R_b||_F = 2 sqrt(2) sin(angle / 2): well
    conditioned near 0, unlike the trace formula)."""
    return 2 * math.asin(min(1.0, float(np.linalg.norm(r_a - r_b)) / (2 * math.sqrt(2))))


class _PinArm:
    """Pinocchio (float64) kinematics of a description's shipped URDF: base-frame TCP pose of arm joint values."""

    def __init__(self, description):
        import pinocchio as pin

        self.pin = pin
        self.model = pin.buildModelFromUrdf(description.urdf_path)
        self.data = self.model.createData()
        self.arm = [self.model.getJointId(j) for j in description.arm_joint_names]
        self.tcp = self.model.getFrameId(description.tcp_link)
        self.default = description.default_joint_pos

    def q(self, arm_q) -> np.ndarray:
        q = np.zeros(self.model.nq)
        for name, value in self.default.items():
            q[self.model.idx_qs[self.model.getJointId(name)]] = value
        for jid, value in zip(self.arm, arm_q):
            q[self.model.idx_qs[jid]] = value
        return q

    def fk(self, arm_q) -> tuple[np.ndarray, np.ndarray]:
        self.pin.framesForwardKinematics(self.model, self.data, self.q(arm_q))
        pose = self.data.oMf[self.tcp]
        return pose.translation.copy(), pose.rotation.copy()

    def joint_origin(self, arm_q, index: int) -> np.ndarray:
        self.pin.forwardKinematics(self.model, self.data, self.q(arm_q))
        return self.data.oMi[self.arm[index]].translation.copy()


@pytest.fixture(scope="module")
def iiwa():
    from isaaclab_arena.embodiments import make_embodiment

    return make_embodiment("kuka_iiwa")


@pytest.fixture(scope="module")
def pin_arm(iiwa):
    return _PinArm(iiwa.description)


@pytest.fixture(scope="module")
def checker(iiwa):
    from isaaclab_arena.reachability import IKReachabilityChecker

    return IKReachabilityChecker(iiwa.reachability_robot)


def test_registered_beside_the_franka_with_its_own_description(iiwa):
    from isaaclab_arena.embodiments import list_embodiments

    assert {"franka_panda", "kuka_iiwa"} <= set(list_embodiments())
    d = iiwa.description
    assert d.robot_name == "kuka_iiwa" and os.path.isfile(d.usd_path) and os.path.isfile(d.urdf_path)
    assert d.arm_joint_names == tuple(f"lbr_iiwa_joint_{i}" for i in range(1, 8))
    assert d.gripper_joint_names == ("iiwa_finger_joint1", "iiwa_finger_joint2")
    r = iiwa.reachability_robot
    assert (r.urdf_path, r.base_link, r.tcp_link) == (d.urdf_path, "lbr_iiwa_link_0", "iiwa_grasptarget")


def test_tcp_sits_between_the_fingertips_and_points_down_at_home(iiwa, pin_arm):
    pin, model, data = pin_arm.pin, pin_arm.model, pin_arm.data
    home = [iiwa.description.default_joint_pos[j] for j in iiwa.description.arm_joint_names]
    p, r = pin_arm.fk(home)
    assert r[:, 2] @ np.array([0.0, 0.0, -1.0]) > 1 - 1e-9, "the home pose holds the tool straight down"
    assert 0.4 < p[0] < 0.65 and abs(p[1]) < 1e-9 and 0.2 < p[2] < 0.5, p
    pin.framesForwardKinematics(model, data, pin_arm.q(home))
    fingers = [data.oMf[model.getFrameId(f"iiwa_finger{i}")].translation for i in (1, 2)]
    mid = 0.5 * (fingers[0] + fingers[1])
    # the fingers open symmetrically about the tool axis (0.04 m each at home, along the tool's y)
    assert np.linalg.norm(np.cross(mid - p, r[:, 2])) < 1e-9
    assert abs((fingers[0] - fingers[1]) @ r[:, 1]) == pytest.approx(0.08, abs=1e-9)


def test_checker_forward_kinematics_equal_pinocchio_in_float64(checker, pin_arm):
    rng = np.random.default_rng(0)
    lo, hi = checker.chain.lower, checker.chain.upper
    qs = lo + rng.random((64, len(lo))) * (hi - lo)
    p, r = checker.forward_kinematics(torch.tensor(qs, dtype=torch.float32))
    for k, q in enumerate(qs):
        p_ref, r_ref = pin_arm.fk(q)
        assert np.abs(p[k].double().numpy() - p_ref).max() < 2e-5
        assert _angle(r[k].double().numpy(), r_ref) < 1e-4


@pytest.fixture(scope="module")
def placed():
    """Layouts of the shipped iiwa spec, from a pool built from the loaded spec (ik_reachable required)."""
    from isaaclab_arena.env_spec import ArenaEnvGraphSpec
    from isaaclab_arena.relations.pooled_object_placer import PooledObjectPlacer

    arena_env = ArenaEnvGraphSpec.from_yaml(SPEC).to_arena_env()
    arena_env.placer_params.placement_seed = 11
    pool = PooledObjectPlacer(arena_env.get_placement_assets(), arena_env.placer_params, num_envs=4)
    pool.initialize()
    return arena_env, pool


def test_yaml_places_the_iiwa_by_relations(placed):
    arena_env, pool = placed
    robot = arena_env.embodiment
    assert robot.registry_name == "kuka_iiwa" and robot.description.robot_name == "kuka_iiwa"
    assert "ik_reachable" in pool.required_check_names
    k = pool.check_names.index("ik_reachable")
    clean = ~pool.slot_fallback
    assert bool(clean.any()) and bool(pool.slot_checks[..., k][clean].all())
    poses = pool.poses[clean][:, pool.object_names.index("robot")]  # (n, 7)
    # NextTo(table, negative_y, 5 cm): the 0.3 m stand's +Y face 5 cm from the table's -Y edge (y = -0.4)
    assert torch.all((poses[:, 1] - (-0.4 - 0.05 - 0.15)).abs() < 0.01), poses
    assert torch.all(poses[:, 0].abs() <= 0.6), poses  # beside the table's 1.2 m side
    assert torch.all((poses[:, 2] - 0.75).abs() < 0.03), poses  # On(floor): a 0.75 m stand
    yaw = 2 * torch.atan2(poses[:, 5], poses[:, 6])
    assert torch.all((yaw - math.pi / 2).abs() < 1e-3), yaw  # RotateAroundSolution: facing the table (+Y)


def _wrist_bound(pin_arm, home) -> tuple[np.ndarray, float, float]:
    """Shoulder centre (base frame), the longest shoulder-to-wrist distance any configuration gives, and the
    fixed wrist-to-TCP length along the tool axis, all read from the URDF through Pinocchio."""
    shoulder = pin_arm.joint_origin(home, 1)  # joint 2's origin lies on joint 1's axis: fixed in the base
    placements = pin_arm.model.jointPlacements
    links = sum(np.linalg.norm(placements[pin_arm.arm[i]].translation) for i in (2, 3, 4, 5))
    rng = np.random.default_rng(1)
    lengths = []
    for q in [home, *(rng.uniform(-1.5, 1.5, 7) for _ in range(8))]:
        p, r = pin_arm.fk(q)
        offset = p - pin_arm.joint_origin(q, 5)  # joint 6's origin: the wrist centre
        assert np.linalg.norm(np.cross(offset, r[:, 2])) < 1e-9  # the TCP lies on the tool axis through it
        lengths.append(offset @ r[:, 2])
    assert max(lengths) - min(lengths) < 1e-9
    return shoulder, float(links), float(lengths[0])


def test_reach_check_accepts_the_placed_object_and_refuses_the_far_corner(placed, checker, pin_arm):
    arena_env, pool = placed
    names = pool.object_names
    env, slot = (int(i) for i in (~pool.slot_fallback).nonzero()[0])
    layout = pool.poses[env, slot]
    base = layout[names.index("robot")][None]
    cube = layout[names.index("cube")][:3]
    corner = torch.tensor([0.55 * (1 if float(base[0, 0]) < 0 else -1), 0.35, 0.80])  # the table's far corner
    config = arena_env.placer_params.reachability_config
    result = checker.check_config(base, torch.stack([cube, corner])[None], config)
    assert result.reachable.tolist() == [[True, False]], (result.position_error_m, result.rotation_error_rad)

    # accepted: the checker's own solution, within the URDF's limits, reaches the grasp in float64 (Pinocchio)
    q = result.joint_pos[0, 0].double().numpy()
    assert np.all(q >= checker.chain.lower - 1e-6) and np.all(q <= checker.chain.upper + 1e-6)
    rb = _rot(base[0, 3:])
    target_w = cube.double().numpy() + np.array([0.0, 0.0, config.grasp_z_offset_m])
    p, r = pin_arm.fk(q)
    assert np.linalg.norm(rb @ p + base[0, :3].double().numpy() - target_w) <= config.ik_position_threshold_m
    assert r[:, 2] @ (rb.T @ np.array([0.0, 0.0, -1.0])) > math.cos(config.ik_rotation_threshold_rad)

    # refused: a top-down grasp there puts the wrist centre farther from the shoulder than the links reach
    home = [checker.robot.home_joint_pos[j] for j in checker.joint_names]
    shoulder, links, wrist_to_tcp = _wrist_bound(pin_arm, home)
    target_w = corner.double().numpy() + np.array([0.0, 0.0, config.grasp_z_offset_m])
    target_b = rb.T @ (target_w - base[0, :3].double().numpy())
    wrist = target_b + wrist_to_tcp * (rb.T @ np.array([0.0, 0.0, 1.0]))  # tool axis straight down
    margin = config.ik_position_threshold_m + wrist_to_tcp * math.sin(config.ik_rotation_threshold_rad)
    assert np.linalg.norm(wrist - shoulder) > links + margin


@pytest.mark.sim
def test_built_usd_loads_and_holds_its_home_pose_under_ov_physx(tmp_path, iiwa, pin_arm):
    from isaaclab.app import launch_simulation

    from isaaclab_arena.embodiments import make_embodiment
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.environments.isaaclab_arena_environment import IsaacLabArenaEnvironment
    from isaaclab_arena.utils.pose import Pose
    from isaaclab_arena_environments.assets import library

    robot = make_embodiment("kuka_iiwa", "robot", {"initial_pose": Pose(*BASE)})
    arena_env = IsaacLabArenaEnvironment("kuka_iiwa_on_stand", [library.table_background("table_background")],
                                         embodiment=robot)
    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=NUM_ENVS, env_spacing=3.0,
                                                            output_dir=str(tmp_path), gym_id="test_second_arm"))
    env_cfg = builder.compose_manager_cfg()
    with launch_simulation(env_cfg, {"headless": True, "device": "cpu"}):
        env = builder.make_registered(env_cfg)
        u = env.unwrapped
        art = u.scene["robot"]
        obs, _ = env.reset()
        physics = type(u.sim.cfg.physics).__name__
        joint_names, action_dim = list(art.joint_names), u.action_manager.total_action_dim
        home = art.data.default_joint_pos.torch.clone()
        zero = torch.zeros(NUM_ENVS, action_dim)
        drift = 0.0
        for _ in range(100):
            obs, *_ = env.step(zero)
            drift = max(drift, (art.data.joint_pos.torch - home).abs().max().item())
        tcp = obs["policy"][:, -7:].double().numpy()
        obs_shape = tuple(obs["policy"].shape)
        root = (art.data.root_pos_w.torch - u.scene.env_origins).double().numpy()
        env.close()
    print(f"\n[kuka_iiwa] joint drift over 100 steps (max |q - home|, rad): {drift:.2e}")
    assert physics == "OvPhysxCfg"
    assert joint_names[:7] == list(iiwa.description.arm_joint_names)
    assert sorted(joint_names[7:]) == sorted(iiwa.description.gripper_joint_names)
    assert action_dim == 8 and obs_shape == (NUM_ENVS, 9 + 9 + 7)
    assert np.abs(root - np.array(BASE[0])).max() < 1e-4
    assert drift < DRIFT_BOUND_RAD, f"joint drift {drift:.2e} rad"
    # the USD's kinematics are the URDF's: the simulated tool frame is where Pinocchio puts it
    p_b, r_b = pin_arm.fk([iiwa.description.default_joint_pos[j] for j in iiwa.description.arm_joint_names])
    rb = _rot(BASE[1])
    assert np.abs(tcp[:, :3] - (rb @ p_b + np.array(BASE[0]))).max() < 2e-3, tcp
    assert _angle(rb @ r_b, _rot(tcp[0, 3:])) < 2e-3


@pytest.mark.sim
@pytest.mark.slow
def test_scripted_policy_picks_and_places_with_the_iiwa(tmp_path):
    from isaaclab_arena.env_spec import ArenaEnvGraphSpec
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.evaluation.episodes import EvaluationSettings, evaluate

    arena_env = ArenaEnvGraphSpec.from_yaml(SPEC).to_arena_env()
    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=NUM_ENVS, placement_seed=7,
                                                            output_dir=str(tmp_path), gym_id="test_second_arm_policy"))
    summary = evaluate(builder, EvaluationSettings(policy_type="scripted_pick_and_place", num_episodes=8,
                                                   progress=False, report=False), log=lambda line: None)
    clean = summary["rates"]["clean"]
    print(f"\n[kuka_iiwa] scripted pick-and-place: {summary['rates']['all']['successes']}/{summary['num_episodes']} "
          f"successes; clean {clean['successes']}/{clean['episodes']}; terminations {summary['terminations']}")
    assert summary["num_episodes"] == 8 and clean["episodes"] >= 4
    assert clean["success_rate"] >= 0.5, summary["records_list"]
    assert all(r["poses_at_reset"]["robot"][1] < -0.55 for r in summary["records_list"])  # placed on the -Y side

"""Embodiments without a simulator: the registry and its errors, the stand footprint, poses, the IK's view
of the robot, the kinematic chain and FK against Pinocchio, and the import boundary of the new packages."""

from __future__ import annotations

import ast
import math
import os

import numpy as np
import pytest
import torch

from isaaclab_arena import ARENA_ROOT
from isaaclab_arena.embodiments import Embodiment, StandCfg, UnknownEmbodimentError, list_embodiments, make_embodiment
from isaaclab_arena.utils.pose import Pose


def test_registry_lists_franka_and_builds_it():
    assert "franka_panda" in list_embodiments()
    robot = make_embodiment("franka_panda", "franka", {"stand_height_m": 0.8})
    assert isinstance(robot, Embodiment)
    assert robot.name == "franka" and robot.get_scene_root_keys() == ["robot"]
    assert robot.registry_name == "franka_panda" and robot.registry_params == {"stand_height_m": 0.8}


def test_unknown_registry_name_is_a_clear_error():
    with pytest.raises(UnknownEmbodimentError) as err:
        make_embodiment("franka_pand")
    msg = str(err.value)
    assert "'franka_pand'" in msg and "franka_panda" in msg and "did you mean" in msg


@pytest.mark.parametrize("params, needle", [
    ({"stand_height": 0.8}, "unknown parameter 'stand_height'; accepted parameters: stand_height_m"),
    ({"stand_height_m": 0.0}, "height_m must be > 0"),
    ({"stand_size_xy_m": (0.3,)}, "size_xy_m and center_xy_m take 2 finite numbers"),
    ({"action_mode": "torque"}, "action_mode='torque' is not accepted; use one of joint_pos, ik_abs, ik_rel"),
    ({"enable_cameras": True}, "enable_cameras=true is not supported"),
    ({"placement_bbox_stand_only": False}, "placement_bbox_stand_only=False is not supported"),
    ({"initial_pose": [0, 0, 1]}, "initial_pose must be a Pose or {position_xyz"),
])
def test_bad_parameters_name_the_embodiment_and_what_is_accepted(params, needle):
    with pytest.raises(ValueError) as err:
        make_embodiment("franka_panda", "franka", params)
    assert needle in str(err.value)
    assert "franka" in str(err.value) or "stand" in str(err.value)


def test_footprint_is_the_stand_box_and_default_pose_stands_on_the_floor():
    robot = make_embodiment("franka_panda", "robot", {"stand_height_m": 0.7, "stand_size_xy_m": (0.4, 0.3)})
    box = robot.get_bounding_box()
    assert box.min_point == pytest.approx((-0.2, -0.15, -0.7)) and box.max_point == pytest.approx((0.2, 0.15, 0.0))
    assert robot.get_world_pose().position_xyz == pytest.approx((0.0, 0.0, 0.7))
    placed = make_embodiment("franka_panda", "robot", {"initial_pose": {"position_xyz": [1.0, 2.0, 0.7]}})
    assert placed.get_world_pose() == Pose((1.0, 2.0, 0.7))
    assert StandCfg(center_xy_m=(0.05, 0.0)).bounding_box().min_point[0] == pytest.approx(-0.1)


def test_reachability_robot_comes_from_the_shipped_urdf():
    robot = make_embodiment("franka_panda")
    r = robot.reachability_robot
    assert os.path.isfile(r.urdf_path) and r.urdf_path.endswith("franka_panda/panda.urdf")
    assert (r.base_link, r.tcp_link) == ("panda_link0", "panda_grasptarget")
    assert sorted(r.home_joint_pos) == [f"panda_joint{i}" for i in range(1, 8)]
    assert robot.default_joint_pos["panda_finger_joint1"] == pytest.approx(0.04)


def test_chain_fk_matches_pinocchio_in_float64():
    from reachability_reference import PinocchioReach

    from isaaclab_arena.reachability.chain_fk import ChainFK
    from isaaclab_arena.reachability.urdf_chain import load_urdf_chain

    robot = make_embodiment("franka_panda").reachability_robot
    chain = load_urdf_chain(robot.urdf_path, robot.base_link, robot.tcp_link)
    assert chain.joint_names == [f"panda_joint{i}" for i in range(1, 8)]
    ref = PinocchioReach(seeds=1)
    q = np.random.default_rng(3).uniform(chain.lower, chain.upper, (64, 7))
    pos, rot = ChainFK(chain, "cpu", torch.float64).forward(torch.tensor(q))
    for i in range(len(q)):
        p, r = ref.fk(q[i])
        assert np.abs(pos[i].numpy() - p).max() < 1e-9 and np.abs(rot[i].numpy() - r).max() < 1e-9


def test_chain_errors_name_the_link(tmp_path):
    from isaaclab_arena.reachability.urdf_chain import load_urdf_chain

    urdf = make_embodiment("franka_panda").reachability_robot.urdf_path
    with pytest.raises(ValueError, match="tcp_link 'gripper_tip' is not a link"):
        load_urdf_chain(urdf, "panda_link0", "gripper_tip")
    with pytest.raises(ValueError, match="does not descend from base_link 'panda_hand'"):
        load_urdf_chain(urdf, "panda_hand", "panda_link3")
    with pytest.raises(FileNotFoundError, match="robot description not found"):
        load_urdf_chain(str(tmp_path / "none.urdf"), "a", "b")


def test_quaternions_of_half_turns_keep_their_axis():
    from scipy.spatial.transform import Rotation

    from isaaclab_arena.reachability.chain_fk import matrix_to_quat_xyzw

    rots = Rotation.concatenate([Rotation.random(500, random_state=1),
                                 Rotation.from_rotvec([[math.pi, 0, 0], [0, math.pi, 0], [1.5, 1.5, 1.5],
                                                       [math.pi / math.sqrt(2), -math.pi / math.sqrt(2), 0]])])
    q = matrix_to_quat_xyzw(torch.tensor(rots.as_matrix())).numpy()
    ref = rots.as_quat()
    assert np.minimum(np.abs(q - ref).max(1), np.abs(q + ref).max(1)).max() < 1e-9


def test_grasp_target_shapes_are_checked():
    from isaaclab_arena.reachability.grasp_targets import top_down_grasp_targets

    with pytest.raises(ValueError, match=r"base_pose must be \(B, 7\)"):
        top_down_grasp_targets(torch.zeros(2, 3), torch.zeros(2, 1, 3), 0.02)
    with pytest.raises(ValueError, match=r"object_positions must be \(B, K, 3\) with B = 2"):
        top_down_grasp_targets(torch.zeros(2, 7), torch.zeros(3, 1, 3), 0.02)


def test_env_accepts_a_relation_placed_embodiment_and_refuses_a_clashing_asset_name():
    from isaaclab_arena.environments.embodiment_terms import check_embodiment
    from isaaclab_arena.environments.isaaclab_arena_environment import IsaacLabArenaEnvironment
    from isaaclab_arena.relations.relations import IsAnchor, On
    from isaaclab_arena_environments.assets import library

    table = library.table_background("table")
    table.add_relation(IsAnchor())
    robot = make_embodiment("franka_panda", "franka")
    robot.add_relation(On(table))
    env = IsaacLabArenaEnvironment("e", [table], embodiment=robot)
    assert check_embodiment(env) is robot and env.get_placement_assets() == [table, robot]
    for name in ("robot", "franka"):  # the scene key, and the embodiment's own name
        clash = library.mug(name)
        with pytest.raises(ValueError, match=f"asset name '{name}' is taken by the embodiment 'franka'"):
            check_embodiment(IsaacLabArenaEnvironment("e", [clash], embodiment=make_embodiment("franka_panda", "franka")))
    with pytest.raises(TypeError, match="embodiment must be an Embodiment"):
        check_embodiment(IsaacLabArenaEnvironment("e", [], embodiment="franka_panda"))


@pytest.mark.parametrize("package", ["embodiments", "reachability"])
def test_robot_core_packages_import_no_simulator(package):
    """embodiments/ and reachability/ stay on the core side: no isaaclab, isaacsim, omni or pxr import."""
    folder = os.path.join(ARENA_ROOT, "isaaclab_arena", package)
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(folder, name)) as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for m in modules:
                assert m.split(".")[0] not in ("isaaclab", "isaacsim", "omni", "pxr"), f"{package}/{name} imports {m}"


def test_readme_robot_example_runs_as_written():
    import contextlib
    import io
    import re

    with open(os.path.join(ARENA_ROOT, "README.md")) as f:
        block = next(b for b in re.findall(r"```python\n(.*?)```", f.read(), flags=re.S) if "make_embodiment" in b)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README robot example", "exec"), {})
    assert "tensor([[ True, False]])" in out.getvalue()

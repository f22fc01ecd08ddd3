"""Placement pictures of a robot scene ring every RequiresReachability object: green where the robot reaches a
top-down grasp at it from that layout's solved base, red where not (no simulator)."""

from __future__ import annotations

import numpy as np
import torch
from test_ik_reachable_check import _scene

from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams, ReachabilityConfig
from isaaclab_arena.relations.pooled_object_placer import PooledObjectPlacer
from isaaclab_arena.relations.validation.registry import builtin_checks
import pytest

GREEN, RED = np.array([0.173, 0.627, 0.173]), np.array([0.839, 0.153, 0.157])  # tab:green, tab:red


def _pixels(image: np.ndarray, rgb: np.ndarray) -> int:
    return int((np.abs(image[..., :3] - rgb).max(axis=-1) < 0.03).sum())


@pytest.mark.slow
def test_rings_mark_reachable_green_and_unreachable_red(tmp_path):
    from isaaclab_arena.environments.placement_pictures import reachability_rings, write_layout_picture
    import matplotlib.image

    assets, robot = _scene()
    # ik_reachable runs but is optional, one candidate per env: some layouts keep an unreachable cube
    params = ObjectPlacerParams(placement_seed=11, reachability_config=ReachabilityConfig(embodiment=robot),
                                required_checks=list(builtin_checks()), max_placement_attempts=1,
                                min_unique_layouts_per_env=1)
    pool = PooledObjectPlacer(assets, params, num_envs=8)
    pool.initialize()
    poses = pool.poses[:, 0]
    rings = reachability_rings(pool, poses)
    assert list(rings) == ["cube"]
    xy, ok = rings["cube"]
    torch.testing.assert_close(xy, poses[:, pool.object_names.index("cube"), :2])
    k = pool.check_names.index("ik_reachable")
    assert torch.equal(ok, pool.slot_checks[:, 0, k].cpu())
    assert 0 < int(ok.sum()) < 8, ok  # both verdicts occur
    path = write_layout_picture(pool, str(tmp_path / "layouts.png"))
    image = matplotlib.image.imread(path)
    assert _pixels(image, GREEN) > 20 and _pixels(image, RED) > 20

    # without ik_reachable in use there are no rings (a placer given the robot among its assets runs the check
    # unless the enabled checks leave it out)
    plain = PooledObjectPlacer(assets, ObjectPlacerParams(placement_seed=11, max_placement_attempts=1,
                                                          enabled_checks=list(builtin_checks()),
                                                          min_unique_layouts_per_env=1), num_envs=2)
    plain.initialize()
    assert reachability_rings(plain, plain.poses[:, 0]) == {}


# -- the robot drawn over its stand: arm at home, heading, reach annulus at grasp height (issue 20, item 8) ----------
# The Franka scene of the shipped YAML, solved with a fixed placement seed (no simulator). Independent references:
# Pinocchio FK / projected DLS in float64 (``reachability_reference.py``) and quaternions turned into matrices here.

import math  # noqa: E402
import os  # noqa: E402

import pytest  # noqa: E402
from reachability_reference import READY, PinocchioReach, rotation_angle, top_down_target  # noqa: E402

from isaaclab_arena import ARENA_ROOT  # noqa: E402

SPEC = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "robot", "franka_pick_and_place.yaml")
LINKS = ["panda_link0", "panda_link1", "panda_link2", "panda_link3", "panda_link4", "panda_link5", "panda_link6",
         "panda_link7", "panda_link8", "panda_hand", "panda_grasptarget"]  # base link to TCP on the URDF chain
# the annulus of this scene (docs/ROBOTS.md): TCP grasp height 0.80 m = cube z 0.78 + grasp offset 0.02, base z 0.76
DOCUMENTED_HEIGHT_ABOVE_BASE_M, DOCUMENTED_RADII_M = 0.04, (0.037, 0.832)


def _matrix(q) -> np.ndarray:
    x, y, z, w = np.asarray(q, dtype=np.float64) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _artists(ax, gid: str) -> list:
    return [a for a in [*ax.lines, *ax.patches, *ax.texts] if a.get_gid() == gid]


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    """The solved pool (4 envs, placement seed 7), its drawn layouts and the figure the picture saved."""
    import dataclasses

    import matplotlib.figure

    from isaaclab_arena.env_spec import ArenaEnvGraphSpec
    from isaaclab_arena.environments.placement_pictures import write_layout_picture

    arena_env = ArenaEnvGraphSpec.from_yaml(SPEC).to_arena_env()
    params = dataclasses.replace(arena_env.placer_params, placement_seed=7)
    pool = PooledObjectPlacer(arena_env.get_placement_assets(), params, num_envs=4)
    pool.initialize()
    poses = (pool.current_poses if pool.current_poses is not None else pool.poses[:, 0]).clone()
    figures = []
    real = matplotlib.figure.Figure.savefig
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(matplotlib.figure.Figure, "savefig", lambda fig, *a, **k: (figures.append(fig), real(fig, *a, **k)))
        path = write_layout_picture(pool, str(tmp_path_factory.mktemp("robot") / "layouts.png"))
        turned = poses.clone()
        k = pool.object_names.index("robot")
        turn = torch.tensor([0.0, 0.0, math.sin(math.pi / 4), math.cos(math.pi / 4)])  # +90 degrees about Z
        turned[:, k, 3:] = torch.stack([_quat_mul(turn, q) for q in poses[:, k, 3:]])
        write_layout_picture(pool, str(tmp_path_factory.mktemp("robot") / "turned.png"), poses=turned)
    return {"pool": pool, "poses": poses.double().numpy(), "turned": turned.double().numpy(), "fig": figures[0],
            "fig_turned": figures[1], "path": path, "robot": arena_env.embodiment, "params": params}


def _quat_mul(a, b):
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return torch.stack([aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
                        aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz])


def _panels(fig) -> list:
    return [ax for ax in fig.axes if ax.axison and ax.get_title().startswith("env")]


def _drawn(ax):
    """(arm points (L, 2), heading tail (2,), heading tip (2,), annulus patch) as drawn in one panel."""
    (arm,), (arrow,), (ring,) = _artists(ax, "robot_arm"), _artists(ax, "robot_heading"), _artists(ax, "reach_annulus")
    return arm.get_xydata(), np.asarray(arrow.xyann, float), np.asarray(arrow.xy, float), ring


@pytest.mark.slow
def test_the_arm_is_drawn_from_the_base_through_the_home_pose_link_origins(scene):
    from isaaclab_arena.environments.robot_picture_geometry import home_arm_chain

    assert os.path.getsize(scene["path"]) > 0
    ref = PinocchioReach()
    ref.pin.framesForwardKinematics(ref.model, ref.data, READY)
    links_b = np.stack([ref.data.oMf[ref.model.getFrameId(n)].translation for n in LINKS])  # base frame, float64
    assert list(home_arm_chain(scene["robot"]).link_names) == LINKS
    k = scene["pool"].object_names.index("robot")
    panels = _panels(scene["fig"])
    assert len(panels) == 4
    for e, ax in enumerate(panels):
        arm, _, _, _ = _drawn(ax)
        base = scene["poses"][e, k]
        expected = (base[:3] + links_b @ _matrix(base[3:]).T)[:, :2]
        np.testing.assert_allclose(arm[0], base[:2], rtol=0, atol=1e-9)  # the polyline starts at the base
        np.testing.assert_allclose(arm, expected, rtol=0, atol=1e-6)
        assert np.ptp(arm[:, 1]) > 0.3  # the robot faces +Y here: the arm spans 0.53 m along it


@pytest.mark.slow
def test_the_heading_arrow_points_along_the_base_yaw(scene):
    from isaaclab_arena.environments.robot_picture_geometry import HEADING_ARROW_M

    k = scene["pool"].object_names.index("robot")
    for e, ax in enumerate(_panels(scene["fig"])):
        _, tail, tip, _ = _drawn(ax)
        x, y, z, w = scene["poses"][e, k, 3:]
        yaw = math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
        assert yaw == pytest.approx(math.pi / 2, abs=1e-6)  # rotate_around_solution yaw 1.5707963: facing the table
        np.testing.assert_allclose(tail, scene["poses"][e, k, :2], rtol=0, atol=1e-9)
        np.testing.assert_allclose(tip - tail, HEADING_ARROW_M * np.array([math.cos(yaw), math.sin(yaw)]), atol=1e-6)


@pytest.mark.slow
def test_the_reach_annulus_has_the_documented_radii_at_grasp_height(scene):
    from matplotlib.patches import Annulus

    from isaaclab_arena.environments.robot_picture_geometry import reach_annulus_radii
    from isaaclab_arena.reachability.backends import ik_backend_for

    names, poses, config = scene["pool"].object_names, scene["poses"], scene["params"].reachability_config
    k, cube = names.index("robot"), names.index("cube")
    heights = poses[:, cube, 2] + config.grasp_z_offset_m - poses[:, k, 2]  # TCP grasp height above each base
    np.testing.assert_allclose(heights, DOCUMENTED_HEIGHT_ABOVE_BASE_M, atol=5e-4)
    (r_in, r_out), = reach_annulus_radii(scene["robot"], [DOCUMENTED_HEIGHT_ABOVE_BASE_M], config)
    assert (r_in, r_out) == pytest.approx(DOCUMENTED_RADII_M, abs=1e-3)
    for e, ax in enumerate(_panels(scene["fig"])):
        _, _, _, ring = _drawn(ax)
        assert isinstance(ring, Annulus)
        np.testing.assert_allclose(ring.center, poses[e, k, :2], atol=1e-9)
        outer = ring.get_radii()  # (a, b): the outer ellipse's semi-axes, a circle here
        assert outer == pytest.approx((r_out, r_out), abs=1e-12)
        assert outer[0] - ring.get_width() == pytest.approx(r_in, abs=1e-12)
        (label,) = _artists(ax, "reach_label")
        assert label.get_text() == f"reach {r_in:.3f}-{r_out:.3f} m at z=0.800 m (cube grasp)"

    # the radii are boundaries of the IK the check uses: reached on them, not 1 mm beyond (bisection: 0.625 mm)
    checker = ik_backend_for(scene["robot"], "cpu")
    base = torch.tensor([[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]])
    radii = [r_in, r_out, r_in - 1e-3, r_out + 1e-3]
    z = DOCUMENTED_HEIGHT_ABOVE_BASE_M - config.grasp_z_offset_m
    result = checker.check_config(base, torch.tensor([[[r, 0.0, z] for r in radii]]), config)
    assert result.reachable[0].tolist() == [True, True, False, False]
    # independently (Pinocchio, float64): the IK's joints on both radii reach the grasp within the thresholds and
    # limits, and the projected DLS reaches 3 mm inside the outer radius and neither 3 mm outside radius
    ref = PinocchioReach()
    for j in (0, 1):
        q = result.joint_pos[0, j].double().numpy()
        target = top_down_target((0, 0, 0), (0, 0, 0, 1), (radii[j], 0, z), config.grasp_z_offset_m)
        p, rot = ref.fk(q)
        assert np.all(q >= ref.lower) and np.all(q <= ref.upper)
        assert np.linalg.norm(p - target[0]) <= config.ik_position_threshold_m
        assert rotation_angle(rot, target[1]) <= config.ik_rotation_threshold_rad
    for r, reached in ((r_out - 3e-3, True), (r_out + 3e-3, False), (r_in - 3e-3, False)):
        assert ref.reachable(*top_down_target((0, 0, 0), (0, 0, 0, 1), (r, 0, z), config.grasp_z_offset_m)) == reached, r


@pytest.mark.slow
def test_a_base_turned_by_90_degrees_turns_the_heading_and_the_arm_by_90_degrees(scene):
    k = scene["pool"].object_names.index("robot")
    quarter = np.array([[0.0, -1.0], [1.0, 0.0]])  # +90 degrees about Z in XY
    for e, (ax, turned_ax) in enumerate(zip(_panels(scene["fig"]), _panels(scene["fig_turned"]))):
        arm, tail, tip, ring = _drawn(ax)
        arm_t, tail_t, tip_t, ring_t = _drawn(turned_ax)
        base = scene["poses"][e, k, :2]
        np.testing.assert_allclose(arm_t[0], base, atol=1e-9)  # the base stays where it was
        np.testing.assert_allclose(arm_t - base, (arm - base) @ quarter.T, atol=1e-6)
        np.testing.assert_allclose(tip_t - tail_t, (tip - tail) @ quarter.T, atol=1e-6)
        np.testing.assert_allclose(tip_t - tail_t, [-0.4, 0.0], atol=1e-6)  # was facing +Y, now faces -X
        # a picture that ignored the yaw would draw the same arm: the TCP, 0.31 m ahead, moves 0.43 m
        assert np.linalg.norm(arm_t - arm, axis=1).max() > 0.4
        assert (ring_t.get_radii(), ring_t.get_width()) == (ring.get_radii(), ring.get_width())


def test_a_scene_without_a_robot_draws_no_arm(tmp_path):
    import matplotlib.figure

    from isaaclab_arena.environments.placement_pictures import robot_geometry, write_poses_picture
    from isaaclab_arena_environments.assets import library

    mug = library.mug("mug")
    poses = torch.zeros(1, 1, 7)
    poses[..., 6] = 1.0
    assert robot_geometry([mug], ["mug"], poses) is None
    figures = []
    real = matplotlib.figure.Figure.savefig
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(matplotlib.figure.Figure, "savefig", lambda fig, *a, **k: (figures.append(fig), real(fig, *a, **k)))
        write_poses_picture([mug], ["mug"], poses, str(tmp_path / "p.png"))
    (ax,) = _panels(figures[0])
    assert not any(_artists(ax, gid) for gid in ("robot_arm", "robot_heading", "reach_annulus", "reach_label"))

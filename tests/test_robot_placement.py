"""A robot placed like an object (no simulator): On(floor), NextTo(table, side, distance), its heading from
RotateAroundSolution; a fixed robot's stand is a passive obstacle; a relation-placed robot with an initial
pose is refused; pooled layouts of the robot are written to its scene key ``robot``.

Every placed layout is re-checked in float64 numpy from the solved poses and the stand's box, not with the
project's kernels."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from isaaclab_arena.assets.asset import Object
from isaaclab_arena.assets.bounding_box import AxisAlignedBoundingBox as Box
from isaaclab_arena.embodiments import make_embodiment
from isaaclab_arena.relations.object_placer import ObjectPlacer
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.relations.relations import IsAnchor, NextTo, On, RotateAroundSolution, Side
from isaaclab_arena.utils.pose import Pose

FLOOR_HALF = 1.2
TABLE = ((-0.6, -0.4, -0.04), (0.6, 0.4, 0.0))
TABLE_TOP = 0.75
STAND = 0.75
B = 128


def _floor():
    return Object("floor", bounding_box=Box((-FLOOR_HALF, -FLOOR_HALF, -0.02), (FLOOR_HALF, FLOOR_HALF, 0.0)),
                  initial_pose=Pose((0.0, 0.0, 0.0))).add_relation(IsAnchor())


def _table():
    return Object("table", bounding_box=Box(*TABLE), initial_pose=Pose((0.0, 0.0, TABLE_TOP))).add_relation(IsAnchor())


def _rot(q):
    x, y, z, w = (float(v) for v in q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _world_box(lo, hi, pos, quat):
    corners = np.array([(x, y, z) for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
    pts = corners @ _rot(quat).T + np.asarray(pos, dtype=np.float64)
    return pts.min(0), pts.max(0)


def _place(assets, draws=B, seed=3, **params):
    placer = ObjectPlacer(ObjectPlacerParams(placement_seed=seed, **params))
    return placer.place_batch(assets, torch.zeros(draws, dtype=torch.long), torch.arange(draws), num_envs=1)


@pytest.mark.parametrize("side", [Side.NEGATIVE_Y, Side.NEGATIVE_X, Side.POSITIVE_X])
def test_robot_stands_on_the_floor_next_to_the_table_facing_it(side):
    yaw = {Side.NEGATIVE_Y: math.pi / 2, Side.NEGATIVE_X: 0.0, Side.POSITIVE_X: math.pi}[side]
    robot = make_embodiment("franka_panda", "franka", {"stand_height_m": STAND})
    robot.add_relation(On(_floor_ := _floor())).add_relation(NextTo(table := _table(), side=side, distance_m=0.05))
    robot.add_relation(RotateAroundSolution(yaw_rad=yaw))
    vb = _place([_floor_, table, robot])
    assert vb.object_names == ["franka"] and bool(vb.passed.all())
    pos, rot = vb.positions[:, 0].double().numpy(), vb.rotations[:, 0].double().numpy()
    lo, hi = robot.get_bounding_box().min_point, robot.get_bounding_box().max_point
    tlo, thi = _world_box(*TABLE, (0.0, 0.0, TABLE_TOP), (0, 0, 0, 1))
    axis, sign = side.axis_index, side.sign
    cross = 1 - axis
    xs = []
    for b in range(B):
        slo, shi = _world_box(lo, hi, pos[b], rot[b])
        # On(floor): the stand's bottom on the floor top (within On's clearance + tolerance)
        assert -5e-3 < slo[2] <= 0.01 + 5e-3 + 1e-6, slo
        assert abs(pos[b, 2] - (slo[2] + STAND)) < 1e-5  # the root frame is the stand's top
        # NextTo(table, side, 5 cm): gap in [5, 6] cm on that side, centre within the table's cross extent
        gap = (slo[axis] - thi[axis]) if sign > 0 else (tlo[axis] - shi[axis])
        assert 0.05 - 1e-5 <= gap <= 0.06 + 1e-5, (b, gap)
        assert tlo[cross] - 1e-5 <= pos[b, cross] <= thi[cross] + 1e-5
        # heading: exactly the RotateAroundSolution yaw (the robot faces the table)
        r = _rot(rot[b])
        assert abs(math.atan2(r[1, 0], r[0, 0]) - math.atan2(math.sin(yaw), math.cos(yaw))) < 1e-5
        assert abs(r[2, 2] - 1.0) < 1e-6
        xs.append(pos[b, cross])
    assert np.ptp(xs) > 0.3  # layouts vary along the table's side


def test_robot_layouts_are_reproducible():
    def run(seed):
        robot = make_embodiment("franka_panda", "franka")
        robot.add_relation(On(f := _floor())).add_relation(NextTo(t := _table(), side=Side.NEGATIVE_X))
        return _place([f, t, robot], draws=16, seed=seed).positions

    torch.testing.assert_close(run(5), run(5), atol=0, rtol=0)
    assert not torch.equal(run(5), run(6))


def test_fixed_robot_stand_is_an_obstacle_placed_objects_avoid():
    """Boxes On(floor) around a fixed robot: none enters the stand's box (float64 re-check); the same scene
    without the robot in the placement puts boxes into it, so the check is not vacuous."""
    from isaaclab_arena.environments.isaaclab_arena_environment import IsaacLabArenaEnvironment

    small = Object("ground", bounding_box=Box((-0.4, -0.4, -0.02), (0.4, 0.4, 0.0)),
                   initial_pose=Pose((0.0, 0.0, 0.0))).add_relation(IsAnchor())
    boxes = [Object(f"box{i}", bounding_box=Box((-0.06, -0.06, 0.0), (0.06, 0.06, 0.1))).add_relation(On(small))
             for i in range(3)]
    robot = make_embodiment("franka_panda", "franka", {"initial_pose": Pose((0.1, 0.0, STAND))})
    env = IsaacLabArenaEnvironment("fixed_robot", [small, *boxes], embodiment=robot)
    assets = env.get_placement_assets()
    assert assets[-1] is robot and not robot.has_placement_relations
    slo, shi = _world_box(robot.get_bounding_box().min_point, robot.get_bounding_box().max_point,
                          (0.1, 0.0, STAND), (0, 0, 0, 1))

    def intrusions(vb):
        pos = vb.positions.double().numpy()
        count = 0
        for b in range(len(vb)):
            for k in range(len(boxes)):
                lo, hi = pos[b, k] + [-0.06, -0.06, 0.0], pos[b, k] + [0.06, 0.06, 0.1]
                if np.all(lo < shi - 1e-6) and np.all(hi > slo + 1e-6):
                    count += 1
        return count

    with_robot = _place(assets, draws=64)
    kept = with_robot.select(torch.nonzero(with_robot.passed).flatten())
    assert len(kept) > 32
    assert intrusions(kept) == 0
    assert "franka" in with_robot.problem.fixed_names
    assert intrusions(_place(assets[:-1], draws=64)) > 0


def test_relation_placed_robot_with_initial_pose_is_refused():
    from isaaclab_arena.environments.embodiment_terms import check_embodiment
    from isaaclab_arena.environments.isaaclab_arena_environment import IsaacLabArenaEnvironment
    from isaaclab_arena.relations.compiler.placement_restrictions import PlacementConfigError, check_placement_restrictions

    robot = make_embodiment("franka_panda", "franka", {"initial_pose": {"position_xyz": [0.0, -0.8, 0.75]}})
    robot.add_relation(On(floor := _floor()))
    env = IsaacLabArenaEnvironment("both", [floor], embodiment=robot)
    with pytest.raises(ValueError, match=r"embodiment 'franka': it is placed by relations and also has an "
                                         r"initial_pose \(params.initial_pose\)"):
        check_embodiment(env)
    with pytest.raises(PlacementConfigError, match="relation-placed asset must not have an initial_pose"):
        check_placement_restrictions(env.get_placement_assets())


def test_requires_reachability_without_embodiment_is_refused():
    from isaaclab_arena.environments.embodiment_terms import check_embodiment
    from isaaclab_arena.environments.isaaclab_arena_environment import IsaacLabArenaEnvironment
    from isaaclab_arena.relations.relations import RequiresReachability

    cube = Object("cube", bounding_box=Box((-0.02,) * 3, (0.02,) * 3)).add_relation(On(table := _table()))
    cube.add_relation(RequiresReachability())
    with pytest.raises(ValueError, match=r"asset 'cube' is marked RequiresReachability.*no embodiment.*"
                                         r"'embodiment: \{id, registry_name\}'"):
        check_embodiment(IsaacLabArenaEnvironment("no_robot", [table, cube]))


def test_pooled_layouts_of_the_robot_go_to_its_scene_key():
    from isaaclab_arena.relations.pooled_object_placer import PooledObjectPlacer

    robot = make_embodiment("franka_panda", "franka")
    robot.add_relation(On(floor := _floor())).add_relation(NextTo(table := _table(), side=Side.NEGATIVE_X))
    pool = PooledObjectPlacer([floor, table, robot], ObjectPlacerParams(placement_seed=1), num_envs=2)
    pool.initialize()
    source = pool.as_pose_source(["franka"], ["robot"])
    assert source.object_names == ["robot"] and source.asset_names == ["franka"]
    poses = source.peek(torch.arange(2))
    torch.testing.assert_close(poses[:, 0], pool.peek(torch.arange(2))[:, pool.object_names.index("franka")])
    with pytest.raises(ValueError, match="1 scene keys for 2 placed assets"):
        pool.as_pose_source(["franka", "franka"], ["robot"])


def test_task_over_assets_of_another_environment_is_refused():
    from isaaclab_arena.environments.isaaclab_arena_environment import IsaacLabArenaEnvironment
    from isaaclab_arena.environments.task_terms import check_task
    from isaaclab_arena.relations.relations import RequiresReachability
    from isaaclab_arena.tasks import PickAndPlaceTask
    from isaaclab_arena_environments.assets import library

    cube, bowl, stray = library.cube_4cm("cube"), library.bowl("bowl"), library.mug("mug")
    task = PickAndPlaceTask(cube, bowl, episode_length_s=6.0)
    assert cube.get_relations_of(RequiresReachability)[0].stamped_by == "PickAndPlaceTask"
    robot = make_embodiment("franka_panda", "franka")
    assert check_task(IsaacLabArenaEnvironment("ok", [cube, bowl], embodiment=robot, task=task)) is task
    with pytest.raises(ValueError, match=r"task PickAndPlaceTask: destination_location 'bowl' is not an asset of "
                                         r"environment 'missing'; assets: \['cube', 'mug'\]"):
        check_task(IsaacLabArenaEnvironment("missing", [cube, stray], embodiment=robot, task=task))
    with pytest.raises(ValueError, match="pick_up_object and destination_location are both 'cube'"):
        PickAndPlaceTask(cube, cube)
    with pytest.raises(ValueError, match="episode_length_s must be a number > 0, got 0"):
        PickAndPlaceTask(cube, bowl, episode_length_s=0)
    with pytest.raises(TypeError, match="pick_up_object must be an asset of the environment"):
        PickAndPlaceTask("cube", bowl)

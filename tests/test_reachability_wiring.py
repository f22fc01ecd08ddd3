"""A spec's robot reaches every placer built from that spec (issue 20, item 2): ``ik_reachable`` used to run only
when ``ArenaEnvBuilder`` wired the robot into the params, so a ``PooledObjectPlacer`` built from a loaded spec
called 1,038 of 1,280 layouts valid with an object out of reach. Now the placer takes the embodiment from its
assets (an environment's ``get_placement_assets()`` holds it), and a placer that cannot run the check for
``RequiresReachability`` objects is refused in one line instead of skipping it.

Independent re-check: ``tests/reachability_reference.py`` (Pinocchio kinematics and a multi-seed projected IK in
float64 numpy, sharing nothing with the project's checker) confirms the grasp of every stored clean layout; with
``ik_reachable`` left out, the same pool holds layouts it refuses (what the skipped check let through)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from isaaclab_arena import ARENA_ROOT
from isaaclab_arena.env_spec import ArenaEnvGraphSpec
from isaaclab_arena.relations.object_placer import ObjectPlacer
from isaaclab_arena.relations.pooled_object_placer import PooledObjectPlacer
from isaaclab_arena.relations.compiler.placement_restrictions import PlacementConfigError

SPEC = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "robot", "franka_pick_and_place.yaml")


@pytest.fixture(scope="module")
def arena_env():
    return ArenaEnvGraphSpec.from_yaml(SPEC).to_arena_env()


@pytest.mark.slow
def test_a_pool_built_from_the_spec_runs_ik_reachable_and_keeps_reachable_layouts(arena_env):
    assert arena_env.placer_params.reachability_config.embodiment is None  # nothing wired by hand
    pool = PooledObjectPlacer(arena_env.get_placement_assets(), arena_env.placer_params, num_envs=8)
    pool.initialize()
    assert "ik_reachable" in pool.check_names and "ik_reachable" in pool.required_check_names
    k = pool.check_names.index("ik_reachable")
    clean = ~pool.slot_fallback
    assert bool(pool.slot_checks[..., k][clean].all())
    assert _unreachable(pool, arena_env) == 0


def _unreachable(pool, arena_env) -> int:
    """Clean stored layouts whose RequiresReachability grasp the Pinocchio reference cannot reach."""
    from reachability_reference import PinocchioReach, top_down_target

    ref = PinocchioReach()
    z_off = arena_env.placer_params.reachability_config.grasp_z_offset_m
    poses = pool.poses.double().numpy()
    names = pool.object_names
    robot = names.index("robot")
    bad = 0
    for e, slot in zip(*np.nonzero(~pool.slot_fallback.numpy())):
        for target in ("cube", "bowl"):  # the task's and the spec's RequiresReachability objects
            k = names.index(target)
            p_t, r_t = top_down_target(poses[e, slot, robot, :3], poses[e, slot, robot, 3:], poses[e, slot, k, :3],
                                       z_off)
            bad += not ref.reachable(p_t, r_t)
    return bad


@pytest.mark.slow
def test_without_the_check_the_same_pool_keeps_unreachable_layouts(arena_env):
    import dataclasses

    params = dataclasses.replace(arena_env.placer_params, enabled_checks=["no_overlap", "on_relation", "next_to"])
    pool = PooledObjectPlacer(arena_env.get_placement_assets(), params, num_envs=8)
    pool.initialize()
    assert "ik_reachable" not in pool.check_names
    assert _unreachable(pool, arena_env) > 0  # what a pool without the robot wired in used to call valid


def test_a_placer_without_the_robot_is_refused_unless_the_check_is_left_out(arena_env):
    without_robot = [a for a in arena_env.get_placement_assets() if not a.is_embodiment]
    robot = arena_env.embodiment
    # the robot was placed by relations: without it the scene keeps the robot's relations out too
    with pytest.raises(PlacementConfigError) as err:
        ObjectPlacer(arena_env.placer_params).compile(without_robot, num_envs=2)
    assert str(err.value) == (
        "objects ['cube', 'bowl'] require reachability (RequiresReachability), but ik_reachable cannot run: no robot is "
        "given: pass the environment's embodiment among the placer's assets (IsaacLabArenaEnvironment."
        "get_placement_assets() holds it) or in ObjectPlacerParams.reachability_config.embodiment; or leave "
        "ik_reachable out of ObjectPlacerParams.enabled_checks")
    import dataclasses

    params = dataclasses.replace(arena_env.placer_params,
                                 enabled_checks=["no_overlap", "on_relation", "next_to"], required_checks=None)
    ObjectPlacer(params).compile(without_robot, num_envs=2)  # the user chose to leave it out: accepted
    assert robot.name not in [a.name for a in without_robot]

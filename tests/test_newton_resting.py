"""Newton MJWarp with the builder's contact settings (``physics.NEWTON_CONTACT_SETTINGS``) in a real kit-less env
on the CPU: objects rest on their support within 1 mm and come to rest, including a cylinder (which sank 8 mm
and crept with MuJoCo's contacts) and an object set whose members differ per env (which shared one collider).
The builder names what a Newton setting is measured not to get right. Own module: one live env per process."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch

from _helpers import TABLETOP, TOP_Z, local_pose

STEPS = 240  # 4 s of simulated time (2 physics steps of 1/120 s per env step)


@pytest.fixture(scope="module")
def settled(tmp_path_factory):
    import os

    from isaaclab.app import launch_simulation

    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg

    arena_env = ArenaEnvGraphSpec.from_yaml(os.path.join(TABLETOP, "heterogeneous_tabletop.yaml")).to_arena_env()
    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=3, env_spacing=2.5, placement_seed=7,
                                                            physics="newton_mjwarp", gym_id="test_newton_resting"))
    env_cfg = builder.compose_manager_cfg()
    with launch_simulation(env_cfg, {"headless": True, "device": "cpu"}):
        env = builder.make_registered(env_cfg)
        try:
            env.reset()
            for _ in range(STEPS):
                env.step(torch.zeros(3, 0))
            u = env.unwrapped
            poses = {n: local_pose(env, n).double().numpy() for n in ("mug", "cube")}
            speeds = {n: torch.linalg.vector_norm(u.scene[n].data.root_lin_vel_w.torch, dim=-1).double().numpy()
                      for n in ("mug", "cube")}
        finally:
            env.close()
    return builder, poses, speeds


def _upright_bottom(pose: np.ndarray, half_height: float) -> float:
    """Lowest point (m) of a body of half height ``half_height`` centred at its root, which must be upright
    (its z axis within 0.5 degree of vertical: then the tilt lowers its edge by well under 1 mm)."""
    x, y, z, w = pose[3:]
    tilt_cos = 1.0 - 2.0 * (x * x + y * y)  # z component of the body's z axis
    assert tilt_cos > np.cos(np.radians(0.5)), f"tilted by {np.degrees(np.arccos(min(tilt_cos, 1.0))):.2f} deg"
    return float(pose[2] - half_height * tilt_cos)


@pytest.mark.sim
def test_each_member_of_the_object_set_rests_on_the_table_at_its_own_size(settled):
    builder, poses, speeds = settled
    assert builder.member_indices["cube"] == [0, 1, 2]
    halves = [0.02, 0.04, 0.06]  # cube_4cm, cube_8cm, cube_12cm
    bottoms = [_upright_bottom(poses["cube"][e], halves[e]) for e in range(3)]
    assert np.all(np.abs(np.array(bottoms) - TOP_Z) < 1e-3), bottoms
    assert np.all(speeds["cube"] < 5e-3), speeds["cube"]


@pytest.mark.sim
def test_the_cylinder_rests_on_the_table_without_sinking_or_creeping(settled):
    _, poses, speeds = settled
    bottoms = [_upright_bottom(p, 0.05) for p in poses["mug"]]  # mug: cylinder 0.10 m tall
    assert np.all(np.abs(np.array(bottoms) - TOP_Z) < 1e-3), bottoms
    assert np.all(speeds["mug"] < 5e-3), speeds["mug"]


def test_the_builder_names_what_mujoco_contacts_get_wrong(caplog):
    import os

    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.environments.physics import NEWTON_CONTACT_SETTINGS, newton_resting_caveats

    arena_env = ArenaEnvGraphSpec.from_yaml(os.path.join(TABLETOP, "heterogeneous_tabletop.yaml")).to_arena_env()
    assert newton_resting_caveats(arena_env.assets) == []
    mujoco = NEWTON_CONTACT_SETTINGS.replace(use_mujoco_contacts=True)
    caveats = newton_resting_caveats(arena_env.assets, mujoco)
    assert len(caveats) == 2 and "share one collider" in caveats[0] and "sink up to 8 mm" in caveats[1]
    with caplog.at_level(logging.WARNING):
        ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=2, physics="newton_mjwarp", newton_contact=mujoco,
                                                      placement_seed=1)).compose_manager_cfg()
    said = [r.getMessage() for r in caplog.records if "under newton_mjwarp" in r.getMessage()]
    assert said and all(m.startswith("environment 'heterogeneous_tabletop' under newton_mjwarp: ") for m in said)
    assert len(said) == 2


def test_the_builder_says_newton_does_not_hold_mesh_colliders(caplog):
    """Measured with scripts/bench_resting.py: under Newton the MESH examples' objects fall through their supports;
    the builder names the mesh-collider assets of such a scene (and of no plain-shape scene)."""
    import os

    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.environments.physics import mesh_collider_assets, newton_resting_caveats

    spec = os.path.join(TABLETOP, "mesh_tucked_objects.yaml")
    arena_env = ArenaEnvGraphSpec.from_yaml(spec).to_arena_env()
    meshed = mesh_collider_assets(arena_env.assets)
    assert {"mug", "bowl"} <= set(meshed)  # the hollow bowl and the mug with a handle (convex parts)
    assert not any(a.name in meshed for a in arena_env.assets if getattr(a, "usd_path", None) is None)
    caveats = newton_resting_caveats(arena_env.assets)
    assert len(caveats) == 1 and "mesh colliders (" in caveats[0] and "bowl" in caveats[0]
    plain = ArenaEnvGraphSpec.from_yaml(os.path.join(TABLETOP, "mug_bowl_table.yaml")).to_arena_env()
    assert mesh_collider_assets(plain.assets) == [] and newton_resting_caveats(plain.assets) == []
    with caplog.at_level(logging.WARNING):
        ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=2, physics="newton_mjwarp",
                                                      placement_seed=1)).compose_manager_cfg()
    said = [r.getMessage() for r in caplog.records if "under newton_mjwarp" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith("environment 'mesh_tucked_objects' under newton_mjwarp: objects "
                                                 "with USD mesh colliders")

"""A real kit-less Isaac Lab 3.0 env (OV PhysX, CPU) built from a YAML spec with fixed poses.

One env build per module (module-scoped fixture); Isaac Lab's SimulationContext singleton is released by
``env.close()`` at teardown, so later modules can build their own env in the same process.
"""

from __future__ import annotations

import os

import pytest
import torch

from isaaclab_arena import ARENA_ROOT

SPEC = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "tabletop", "fixed_pose_table.yaml")
TABLE_TOP_Z = 0.75
HALF_HEIGHTS = {"mug": 0.05, "bowl": 0.03, "box": 0.06}
NUM_ENVS = 3


def _local(env, name):
    u = env.unwrapped
    return (u.scene[name].data.root_pos_w.torch - u.scene.env_origins).clone()


@pytest.fixture(scope="module")
def built():
    from isaaclab.app import launch_simulation

    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg

    arena_env = ArenaEnvGraphSpec.from_yaml(SPEC).to_arena_env()
    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=NUM_ENVS, env_spacing=2.5,
                                                            gym_id="test_env_kitless_fixed"))
    env_cfg = builder.compose_manager_cfg()
    with launch_simulation(env_cfg, {"headless": True, "device": "cpu"}):
        env = builder.make_registered(env_cfg)
        env.reset()
        after_reset = {n: _local(env, n) for n in HALF_HEIGHTS}
        zero = torch.zeros(NUM_ENVS, 0)
        for _ in range(60):
            env.step(zero)
        rest = {n: _local(env, n) for n in HALF_HEIGHTS}
        speed = {n: env.unwrapped.scene[n].data.root_lin_vel_w.torch.norm(dim=-1).clone() for n in HALF_HEIGHTS}
        yield {"builder": builder, "env": env, "after_reset": after_reset, "rest": rest, "speed": speed,
               "arena_env": arena_env}
        env.close()


@pytest.mark.sim
def test_scene_entities_follow_the_assets(built):
    env = built["env"].unwrapped
    scene_keys = set(env.scene.keys())
    assert {"mug", "bowl", "box", "table_background"} <= scene_keys
    assert "table" not in scene_keys  # the ObjectReference is a prim inside the background, nothing is spawned
    assert env.scene["mug"].cfg.prim_path.endswith("/mug")
    assert type(env.sim.cfg.physics).__name__ == "OvPhysxCfg"
    assert env.num_envs == NUM_ENVS


@pytest.mark.sim
def test_reset_writes_the_spec_poses_in_every_env(built):
    arena_env = built["arena_env"]
    for name, pos in built["after_reset"].items():
        expected = torch.tensor(arena_env.get_asset(name).initial_pose.position_xyz).expand(NUM_ENVS, 3)
        torch.testing.assert_close(pos, expected, atol=1e-4, rtol=0)


@pytest.mark.sim
def test_objects_come_to_rest_on_the_table(built):
    for name, half in HALF_HEIGHTS.items():
        z = built["rest"][name][:, 2]
        assert torch.all((z - (TABLE_TOP_Z + half)).abs() < 3e-3), f"{name} rests at {z.tolist()}"
        assert torch.all(built["speed"][name] < 1e-2), f"{name} still moving: {built['speed'][name].tolist()}"
        # it fell straight down: x, y stay where the spec put it
        xy0 = built["after_reset"][name][:, :2]
        assert torch.all((built["rest"][name][:, :2] - xy0).norm(dim=-1) < 5e-3)


@pytest.mark.sim
def test_partial_reset_moves_only_the_reset_env(built):
    env = built["env"].unwrapped
    before = {n: _local(env, n) for n in HALF_HEIGHTS}
    env.reset(env_ids=torch.tensor([1]))
    after = {n: _local(env, n) for n in HALF_HEIGHTS}
    for name in HALF_HEIGHTS:
        spec_z = built["arena_env"].get_asset(name).initial_pose.position_xyz[2]
        assert abs(after[name][1, 2].item() - spec_z) < 1e-4, f"{name} env 1 was not reset"
        torch.testing.assert_close(after[name][[0, 2]], before[name][[0, 2]], atol=1e-6, rtol=0)
        assert abs(before[name][1, 2].item() - spec_z) > 5e-3  # it had settled, so the reset really moved it


def _thread_cpu_s() -> dict[str, float]:
    """CPU seconds (user + system) of each thread of this process, by thread id (Linux /proc)."""
    tick, out = os.sysconf("SC_CLK_TCK"), {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        out[tid] = (int(fields[11]) + int(fields[12])) / tick
    return out


@pytest.mark.sim
def test_no_thread_busy_waits_while_the_env_is_idle(built):
    """A thread of OV PhysX's UJITSO agent polled its on-disk collider cache with a 1 us sleep from the env's
    creation to the process's exit: 0.3-0.35 CPU-s per 1.5 s, idle or not. ``physics.OVPHYSX_RUNTIME_SETTINGS``
    keeps it from starting."""
    import time

    from isaaclab_arena.environments.physics import OVPHYSX_RUNTIME_SETTINGS

    import ovphysx

    before = _thread_cpu_s()
    time.sleep(1.5)
    after = _thread_cpu_s()
    busy = {tid: round(c - before.get(tid, 0.0), 2) for tid, c in after.items() if c - before.get(tid, 0.0) > 0.1}
    assert not busy, f"threads that used CPU while the process slept 1.5 s (tid: CPU-s): {busy}"
    key = "/UJITSO/datastore/allowLocalDataStore"
    assert OVPHYSX_RUNTIME_SETTINGS == {key: False}
    assert ovphysx.PhysXConfig().carbonite_overrides == {key: False}
    # a key the caller sets wins; the caller's other keys are kept
    mine = ovphysx.PhysXConfig(carbonite_overrides={key: True, "/physics/updateToUsd": False})
    assert mine.carbonite_overrides == {key: True, "/physics/updateToUsd": False}


@pytest.mark.sim
def test_physx_steps_in_the_calling_thread_on_two_cores(built):
    """Isaac Lab asks OV PhysX for 8 worker threads; on at most 2 cores the runtime gets none
    (``physics.ovphysx_worker_threads``): the same records, 15 % less CPU for a Franka evaluation."""
    import ovphysx
    from isaaclab_ov.physics import OvPhysxManager

    from isaaclab_arena.environments.physics import ovphysx_worker_threads

    threads = OvPhysxManager.backend.physx.get_config_int32(ovphysx.ConfigInt32.NUM_THREADS)
    if len(os.sched_getaffinity(0)) <= 2:
        assert ovphysx_worker_threads() == 0 and threads == 0
    else:
        assert ovphysx_worker_threads() is None and threads == 8  # Isaac Lab's own count


def test_worker_threads_follow_the_cores_the_process_may_use(monkeypatch):
    import ovphysx

    from isaaclab_arena.environments import physics

    physics._ovphysx_runtime_settings()
    for cores, expected, configured in ((1, 0, 0), (2, 0, 0), (3, None, 8), (64, None, 8)):
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid, n=cores: set(range(n)))
        assert physics.ovphysx_worker_threads() == expected
        assert ovphysx.PhysXConfig(num_threads=8).num_threads == configured


def test_missing_reference_prim_is_refused_at_build_time():
    from isaaclab_arena.assets.object_reference import ObjectReference
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.environments.isaaclab_arena_environment import IsaacLabArenaEnvironment
    from isaaclab_arena.relations.relations import IsAnchor
    from isaaclab_arena_environments.assets.library import table_background

    bg = table_background("table_background")
    ref = ObjectReference("counter", "{ENV_REGEX_NS}/table_background/counter_top", bg)
    ref.add_relation(IsAnchor())
    builder = ArenaEnvBuilder(IsaacLabArenaEnvironment("bad_ref", [bg, ref]), ArenaEnvBuilderCfg())
    with pytest.raises(ValueError, match=r"ObjectReference 'counter'.*counter_top.*not in .*table_background.usda"):
        builder.compose_manager_cfg()


def test_missing_usd_file_is_refused_at_build_time(tmp_path):
    import isaaclab.sim as sim_utils

    from isaaclab_arena.assets.asset import Object
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.environments.isaaclab_arena_environment import IsaacLabArenaEnvironment
    from isaaclab_arena.utils.pose import Pose

    missing = str(tmp_path / "no_such_chair.usda")
    obj = Object("chair", sim_utils.UsdFileCfg(usd_path=missing), initial_pose=Pose((0.0, 0.0, 1.0)))
    builder = ArenaEnvBuilder(IsaacLabArenaEnvironment("bad_usd", [obj]), ArenaEnvBuilderCfg())
    with pytest.raises(FileNotFoundError, match=r"asset 'chair'.*no_such_chair.usda"):
        builder.compose_manager_cfg()


def test_builder_cfg_rejects_bad_values():
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilderCfg

    with pytest.raises(ValueError, match="num_envs must be a positive integer"):
        ArenaEnvBuilderCfg(num_envs=0)
    with pytest.raises(ValueError, match="physics='bullet' is not accepted"):
        ArenaEnvBuilderCfg(physics="bullet")

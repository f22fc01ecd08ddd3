"""The dense tabletop example (7 objects: NotNextTo, AlignWith, position limits, FaceTo) as a real kit-less
Isaac Lab env (OV PhysX, CPU), built with ``resolve_on_reset=False``: one env build (module fixture).

After reset the objects are at their layout poses (read back from the simulator) and the read-back layout
passes every required check; after stepping every object rests on the table where it was placed; further
resets keep the creation layout (no new layouts drawn, no refills).
"""

from __future__ import annotations

import math
import os

import pytest
import torch

from isaaclab_arena import ARENA_ROOT

pytestmark = [pytest.mark.sim]

SPEC = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "tabletop", "dense_tabletop.yaml")
TOP_Z = 0.75
NUM_ENVS = 4


def _local(env, name):
    u = env.unwrapped
    d = u.scene[name].data
    return torch.cat([d.root_pos_w.torch - u.scene.env_origins, d.root_quat_w.torch], -1).clone()


def _all(env, names):
    return torch.stack([_local(env, n) for n in names], dim=1)


@pytest.fixture(scope="module")
def dense(tmp_path_factory):
    from isaaclab.app import launch_simulation

    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg

    arena_env = ArenaEnvGraphSpec.from_yaml(SPEC).to_arena_env()
    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=NUM_ENVS, env_spacing=2.5, placement_seed=3,
                                                            resolve_on_reset=False, gym_id="test_env_dense",
                                                            output_dir=str(tmp_path_factory.mktemp("dense"))))
    env_cfg = builder.compose_manager_cfg()
    with launch_simulation(env_cfg, {"headless": True, "device": "cpu"}):
        env = builder.make_registered(env_cfg)
        env.reset()
        names = builder.placer.object_names
        data = {"builder": builder, "names": names, "after_reset": _all(env, names),
                "draws": builder.placer.next_draw.clone()}
        for _ in range(60):
            env.step(torch.zeros(NUM_ENVS, 0))
        data["rest"] = _all(env, names)
        data["speed"] = torch.stack([env.unwrapped.scene[n].data.root_lin_vel_w.torch.norm(dim=-1) for n in names], 1)
        env.unwrapped.reset()
        data["second_reset"] = _all(env, names)
        env.unwrapped.reset(env_ids=torch.tensor([1, 3]))
        data["partial_reset"] = _all(env, names)
        yield data
        env.close()


def test_reset_writes_the_creation_layout_and_it_passes_every_check(dense):
    builder, pool = dense["builder"], dense["builder"].placer
    assert builder.placer_params.resolve_on_reset is False
    assert len(dense["names"]) == 7
    torch.testing.assert_close(dense["after_reset"], pool.creation_poses, atol=1e-4, rtol=0)
    back = dense["after_reset"]
    batch = pool.placer.validate_poses(pool.assets, back[..., :3], back[..., 3:], env_ids=torch.arange(NUM_ENVS),
                                       num_envs=NUM_ENVS)
    assert {"no_overlap", "on_relation", "next_to", "not_next_to", "align_with", "face_to"} <= set(batch.check_results)
    assert bool(batch.passed.all()), {k: v.tolist() for k, v in batch.check_results.items() if not bool(v.all())}
    # layouts differ between envs
    assert (back[0, :, :3] - back[1, :, :3]).abs().max() > 1e-3


def test_face_to_and_position_limits_hold_in_the_simulator(dense):
    names, back = dense["names"], dense["after_reset"]
    mug, bowl, bin_, bottle = (names.index(n) for n in ("mug", "bowl", "bin", "bottle"))
    q = back[:, mug, 3:]
    x, y, z, w = q.unbind(-1)
    heading = torch.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    d = back[:, bowl, :2] - back[:, mug, :2]
    target = torch.atan2(d[:, 1], d[:, 0])
    err = torch.remainder(heading - target + math.pi, 2 * math.pi) - math.pi
    assert torch.all(err.abs() < 1e-2), err.tolist()
    assert torch.all(back[:, bin_, 0] >= 0.2 - 1e-3)  # position_limits x >= 0.2
    assert torch.all(back[:, bottle, :2].norm(dim=-1) <= 0.3 + 1e-3)  # cylindrical radius_max 0.3


def test_objects_rest_on_the_table_where_they_were_placed(dense):
    pool, names = dense["builder"].placer, dense["names"]
    assets = {a.name: a for a in pool.assets}
    bottoms = torch.tensor([assets[n].get_bounding_box().min_point[2] for n in names])
    rest = dense["rest"]
    bottom_z = rest[..., 2] + bottoms  # upright objects: local bottom + root height
    assert torch.all((bottom_z - TOP_Z).abs() < 3e-3), bottom_z.tolist()
    moved = (rest[..., :2] - pool.creation_poses[..., :2]).norm(dim=-1)
    assert torch.all(moved < 5e-3), moved.tolist()
    assert torch.all(dense["speed"] < 1e-2)


def test_resolve_on_reset_false_keeps_the_layout_across_resets(dense):
    pool = dense["builder"].placer
    torch.testing.assert_close(dense["second_reset"], pool.creation_poses, atol=1e-4, rtol=0)
    torch.testing.assert_close(dense["partial_reset"], pool.creation_poses, atol=1e-4, rtol=0)
    assert pool.num_fills == 1
    assert pool.next_draw.tolist() == dense["draws"].tolist()  # nothing drawn after creation

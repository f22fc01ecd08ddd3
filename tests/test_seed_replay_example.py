"""The shipped ten-layout replay example (isaaclab_arena/tests/test_data/placement_replay.*).

The file must load as the documented format and replay in a real kit-less env (OV PhysX, CPU): the first
reset of four envs restores layouts 0-3 exactly, and the settled poses stay put while physics steps.
"""

from __future__ import annotations

import json
import os

import torch

from isaaclab_arena import ARENA_ROOT
from isaaclab_arena.relations.placement_layouts import PlacementLayouts
import pytest

DATA = os.path.join(ARENA_ROOT, "isaaclab_arena", "tests", "test_data")
SPEC = os.path.join(DATA, "placement_replay.yaml")
LAYOUTS = os.path.join(DATA, "placement_replay.jsonl")


def test_example_file_is_ten_settled_layouts_of_the_scene_objects():
    layouts = PlacementLayouts.from_episode_jsonl(LAYOUTS)
    assert len(layouts) == 10
    assert set(layouts.object_names) == {"mug", "bowl", "cube"}
    with open(LAYOUTS) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    assert [r["source"] for r in rows] == ["settled"] * 10
    assert all(r["validation"]["pre_physics"]["passed"] and r["validation"]["post_physics"]["passed"] for r in rows)
    # Settled on the tabletop (top at z = 0.75 m): mug 0.10 m, bowl 0.06 m, cube 0.12 m tall.
    z = {n: layouts.positions[:, j, 2] for j, n in enumerate(layouts.object_names)}
    for name, half in (("mug", 0.05), ("bowl", 0.03), ("cube", 0.06)):
        assert torch.allclose(z[name], torch.full_like(z[name], 0.75 + half), atol=2e-3), (name, z[name])


@pytest.mark.sim
def test_example_replays_exactly_and_stays_put():
    from isaaclab.app import launch_simulation

    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg

    layouts = PlacementLayouts.from_episode_jsonl(LAYOUTS)
    builder = ArenaEnvBuilder(ArenaEnvGraphSpec.from_yaml(SPEC).to_arena_env(),
                              ArenaEnvBuilderCfg(num_envs=4, env_spacing=3.0, gym_id="test_seed_replay_example",
                                                 placement_layouts_path=LAYOUTS))
    env_cfg = builder.compose_manager_cfg()
    with launch_simulation(env_cfg, {"headless": True, "device": "cpu"}):
        env = builder.make_registered(env_cfg)
        try:
            u = env.unwrapped
            env.reset()
            expected = layouts.root_poses(torch.arange(4))  # (4, n, 7) env-local
            for j, name in enumerate(layouts.object_names):
                pos = u.scene[name].data.root_pos_w.torch - u.scene.env_origins
                assert torch.allclose(pos.cpu(), expected[:, j, :3], atol=2e-5), name
            actions = torch.zeros(4, 0)
            for _ in range(30):
                env.step(actions)
            for j, name in enumerate(layouts.object_names):
                pos = u.scene[name].data.root_pos_w.torch - u.scene.env_origins
                drift = torch.linalg.vector_norm(pos.cpu() - expected[:, j, :3], dim=-1)
                assert float(drift.max()) < 1e-3, (name, drift.tolist())
        finally:
            env.close()

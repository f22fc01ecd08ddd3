"""Object pools replayed in a running env (issue 23 item 1): the recorder writes layouts of
``tabletop/pooled_clutter.yaml`` (each line lists its parked members under ``variations["scene.parked_objects"]``;
those are exactly the pool draw's complement for the line's env id, draw id and seed), then an env built with
``placement_layouts_path`` (the Python side of ``--placement_layouts``) replays them: after each reset the members
the env reports joined (``env.extras["arena_pool_joined"]``) in each env are the recorded joined set of the line that
env took, and the parked ones sit at their spots. Own module: one live env per process."""

from __future__ import annotations

import json
import os

import pytest
import torch
from _outside import RECORDER, arena

from isaaclab_arena import ARENA_ROOT

EXAMPLE = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "tabletop", "pooled_clutter.yaml")


@pytest.mark.sim
@pytest.mark.slow
def test_a_replay_reproduces_the_recorded_joined_sets_in_every_env(tmp_path):
    from isaaclab.app import launch_simulation

    from isaaclab_arena.assets.object_pool import PARKED_ABOVE_M, draw_pool_members, pools_of
    from isaaclab_arena.env_spec import ArenaEnvGraphSpec
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.environments.object_pools import JOINED_EXTRAS_KEY

    out = arena(tmp_path, RECORDER, f"env_spec={EXAMPLE}", "output=rec.jsonl", "num_envs=2", "env_spacing=2",
                "min_layouts=4", "max_batches=4", "seed=5", "settle.num_steps=30", timeout=900)
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-3000:])
    lines = [json.loads(ln) for ln in open(tmp_path / "rec.jsonl") if ln.strip()]
    assert len(lines) >= 4
    arena_env = ArenaEnvGraphSpec.from_yaml(EXAMPLE).to_arena_env()
    (pool,) = pools_of(arena_env.assets)
    members = pool.member_names
    recorded = []  # the joined set of each line, checked against the pool draw of its (seed, env id, draw id)
    for line in lines:
        parked = line["variations"].get("scene.parked_objects", [])
        joined = [m for m in members if m not in parked]
        s = line["validation"]["sampling"]
        drawn = draw_pool_members(pool.name, pool.count, len(members), s["seed"], torch.tensor([s["env_id"]]),
                                  torch.tensor([s["draw_id"]]))[0].tolist()
        assert joined == [m for m, j in zip(members, drawn) if j], (line["validation"], parked)
        recorded.append(joined)
    assert len({tuple(j) for j in recorded}) > 1

    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=2, env_spacing=2.0, seed=123,
                                                            placement_layouts_path=str(tmp_path / "rec.jsonl"),
                                                            gym_id="test_object_pools_replay"))
    cfg = builder.compose_manager_cfg()
    seen = set()
    with launch_simulation(cfg, {"headless": True, "device": "cpu"}):
        env = builder.make_registered(cfg)
        try:
            u = env.unwrapped
            for _ in range((len(lines) + 1) // 2):  # 2 envs take consecutive lines: every line is replayed once
                env.reset()
                slots = builder.replay_source.slot_position % len(lines)
                flags = u.extras[JOINED_EXTRAS_KEY]
                for e in range(2):
                    line = int(slots[e])
                    seen.add(line)
                    joined = [m for m in members if bool(flags[m][e])]
                    assert joined == recorded[line], (e, line, joined, recorded[line])
                    for m in members:  # the simulator holds the parked ones at their spots
                        z = float(u.scene[m].data.root_pos_w.torch[e, 2] - u.scene.env_origins[e, 2])
                        assert (z > PARKED_ABOVE_M) == (m not in joined), (e, line, m, z)
        finally:
            env.close()
    assert seen == set(range(len(lines)))

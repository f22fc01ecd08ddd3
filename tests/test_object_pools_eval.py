"""Object pools in evaluation records (issue 23 item 1): a short real run of the evaluation runner on
``tabletop/pooled_clutter.yaml`` (zero actions, 2 envs, 5 episodes of 0.25 s, so every env resets into new layouts)
writes in each episode record the pool members that joined its layout and those parked, as the running env reported
them; they are exactly the members the pool draw picks for the record's (placement seed, env id, draw id),
re-derived here from ``draw_pool_members`` alone. Own module: one live env per process."""

from __future__ import annotations

import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(REPO, "isaaclab_arena_environments", "tabletop", "pooled_clutter.yaml")


@pytest.mark.sim
def test_episode_records_list_the_joined_objects_the_pool_drew(tmp_path):
    import torch

    from isaaclab_arena.assets.object_pool import draw_pool_members, pools_of
    from isaaclab_arena.env_spec import ArenaEnvGraphSpec
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.evaluation.episode_records import read_records
    from isaaclab_arena.evaluation.episodes import EvaluationSettings, evaluate

    arena_env = ArenaEnvGraphSpec.from_yaml(EXAMPLE).to_arena_env()
    (pool,) = pools_of(arena_env.assets)
    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=2, placement_seed=11, episode_length_s=0.25,
                                                            gym_id="test_object_pools_eval"))
    summary = evaluate(builder, EvaluationSettings(policy_type="zero_action", num_episodes=5,
                                                   output_dir=str(tmp_path), progress=False, report=False))
    records = summary["records_list"]
    assert read_records(str(tmp_path / "episodes.jsonl")) == records and len(records) == 5
    members = pool.member_names
    for r in records:
        assert r["termination"] == "time_out", r  # every episode ran (none cut off before it started)
        drawn = draw_pool_members(pool.name, pool.count, len(members), r["placement_seed"],
                                  torch.tensor([r["env_id"]]), torch.tensor([r["draw_id"]]))[0].tolist()
        assert r["joined_objects"] == [m for m, j in zip(members, drawn) if j], r
        assert r["parked_objects"] == [m for m, j in zip(members, drawn) if not j], r
        assert 3 <= len(r["joined_objects"]) <= 5
        for m in r["parked_objects"]:  # and the record's own poses agree: parked at a spot 1 km up
            assert r["poses_at_reset"][m][2] > 500.0, (r["episode"], m)
        for m in r["joined_objects"]:
            assert r["poses_at_reset"][m][2] < 2.0, (r["episode"], m)
    assert len({tuple(r["joined_objects"]) for r in records}) > 1  # episodes differ

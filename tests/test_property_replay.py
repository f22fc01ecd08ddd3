"""Physical properties travel with recorded layouts (issue 23 item 2): the recorder writes the values drawn for
each accepted layout's env under ``variations["scene.physical_properties"]``, and an env replaying the file
applies the values recorded with the layout each env takes, not new draws (the replay runs with another seed).

The recorded values are re-derived independently from the pure draw (seed, asset, env id, reset count); the
replayed ones are read back from the simulator's physics view."""

from __future__ import annotations

import json
import os

import pytest
import torch
from _outside import RECORDER, arena

from isaaclab_arena import ARENA_ROOT
from isaaclab_arena.relations.placement_layouts import PROPERTIES_VARIATION_KEY, PlacementLayouts, PlacementLayoutsError

SCENE = open(os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "tabletop", "mug_bowl_table.yaml")).read().replace(
    "  - {id: mug, registry_name: mug}",
    "  - id: mug\n    registry_name: mug\n    params:\n      physical_properties: {static_friction: [0.3, 0.9], "
    "dynamic_friction: [0.2, 0.8], mass_kg: [0.2, 0.4]}")


def _layouts_with(records) -> PlacementLayouts:
    n = len(records)
    pos = torch.tensor([[[0.1 * i, 0.0, 0.8], [0.1 * i, 0.2, 0.78]] for i in range(n)])
    rot = torch.tensor([[0.0, 0.0, 0.0, 1.0]]).expand(n, 2, 4).clone()
    return PlacementLayouts(("mug", "bowl"), pos, rot, physical_properties=records)


def test_records_round_trip_and_bad_records_are_refused(tmp_path):
    records = [{"mug": {"static_friction": 0.5, "mass_kg": 0.3}}, {}]
    layouts = _layouts_with(records)
    path = tmp_path / "l.jsonl"
    layouts.write_episode_jsonl(path, source="settled")
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert lines[0]["variations"][PROPERTIES_VARIATION_KEY] == records[0]
    assert PROPERTIES_VARIATION_KEY not in lines[1]["variations"]  # nothing drawn: nothing written
    again = PlacementLayouts.from_episode_jsonl(path)
    assert again.physical_properties == records and again.select([1, 0]).physical_properties == records[::-1]
    bad = dict(lines[0])
    bad["variations"] = dict(bad["variations"], **{PROPERTIES_VARIATION_KEY: {"mug": {"friction": 0.5}}})
    path.write_text(json.dumps(bad) + "\n")
    with pytest.raises(PlacementLayoutsError, match=r"l\.jsonl:1: physical property 'friction' of 'mug' is not one of "
                                                    r"static_friction, dynamic_friction"):
        PlacementLayouts.from_episode_jsonl(path)


def test_a_replay_source_hands_each_env_the_record_of_its_layout():
    from isaaclab_arena.environments.replay_source import ReplayPoseSource

    source = ReplayPoseSource(_layouts_with([{"mug": {"mass_kg": float(i + 1)}} for i in range(3)]), num_envs=2)
    assert source.recorded_properties("bowl", torch.tensor([0])) is None  # nothing recorded for it
    source.poses_for_reset(torch.tensor([1, 0]))  # env 1 takes layout 0, env 0 layout 1
    assert source.recorded_properties("mug", torch.tensor([0, 1])) == [{"mass_kg": 2.0}, {"mass_kg": 1.0}]
    source.poses_for_reset(torch.tensor([1]))  # layout 2
    assert source.recorded_properties("mug", torch.tensor([1])) == [{"mass_kg": 3.0}]


@pytest.mark.sim
@pytest.mark.slow
def test_recorded_properties_are_the_draws_and_a_replay_applies_them(tmp_path):
    from isaaclab_arena.assets.physical_properties import PhysicalPropertyRanges, draw_physical_properties

    (tmp_path / "scene.yaml").write_text(SCENE)
    out = arena(tmp_path, RECORDER, "env_spec=scene.yaml", "output=rec.jsonl", "num_envs=2", "env_spacing=2",
                "min_layouts=2", "max_batches=3", "seed=5", timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    layouts = PlacementLayouts.from_episode_jsonl(tmp_path / "rec.jsonl")
    ranges = PhysicalPropertyRanges(static_friction=(0.3, 0.9), dynamic_friction=(0.2, 0.8), mass_kg=(0.2, 0.4))
    for val, rec in zip(layouts.validation, layouts.physical_properties):
        env_id, batch = val["sampling"]["env_id"], val["sampling"]["batch"]
        # the k-th reset of env e drew these (k = batch - 1: the recorder resets every env once per batch)
        expected = draw_physical_properties(ranges, 5, "mug", torch.tensor([env_id]), torch.tensor([batch - 1]))
        assert set(rec) == {"mug"}
        for field, value in rec["mug"].items():
            assert value == pytest.approx(float(expected[field][0]), abs=1e-9), (field, value, expected)
    _replay_applies(tmp_path / "rec.jsonl", layouts)
    fresh = draw_physical_properties(ranges, 123, "mug", torch.arange(2), torch.zeros(2, dtype=torch.long))
    recorded = {round(r["mug"]["mass_kg"], 9) for r in layouts.physical_properties}
    assert not recorded & {round(float(v), 9) for v in fresh["mass_kg"]}  # the replay's own seed would differ


def _replay_applies(path, layouts: PlacementLayouts) -> None:
    from isaaclab.app import launch_simulation

    from isaaclab_arena.env_spec import ArenaEnvGraphSpec
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.environments.property_draws import property_terms_of

    arena_env = ArenaEnvGraphSpec.from_yaml(os.path.join(os.path.dirname(path), "scene.yaml")).to_arena_env()
    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=2, env_spacing=2.0, seed=123,
                                                            placement_layouts_path=str(path),
                                                            gym_id="test_property_replay"))
    cfg = builder.compose_manager_cfg()
    with launch_simulation(cfg, {"headless": True, "device": "cpu"}):
        env = builder.make_registered(cfg)
        try:
            env.reset()
            term = property_terms_of(env)["mug"]
            slots = builder.replay_source.slot_position % len(layouts)
            for e in range(2):
                rec = layouts.physical_properties[int(slots[e])]["mug"]
                for field, value in rec.items():
                    assert float(term.values[field][e]) == pytest.approx(value, abs=1e-9), (e, field)
            mass = env.unwrapped.scene["mug"].data.body_mass.torch[:, 0].double().cpu()
            expected = torch.tensor([layouts.physical_properties[int(s)]["mug"]["mass_kg"] for s in slots.tolist()],
                                    dtype=torch.float64)
            torch.testing.assert_close(mass, expected, atol=1e-5, rtol=0)  # what the simulator holds
        finally:
            env.close()

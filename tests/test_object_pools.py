"""Object pools (issue 23 item 1): k of N objects join each layout, the rest are parked.

The draw (counts, determinism, envs differ), solved layouts re-checked in float64 numpy (joined objects On the
table and apart, parked ones at their spots), Python and YAML refusals, the JSONL round trip, and in one kit-less
OV PhysX env: parked members out of the physics (they stay at their spots, far from everything) while joined ones
rest where placed, and a replay of the recorded layouts reproduces the joined sets."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from isaaclab_arena.assets.object_pool import (
    PARK_HEIGHT_M,
    PARKED_ABOVE_M,
    ObjectPool,
    draw_pool_members,
    park_position,
)
from isaaclab_arena.relations.relations import On
from isaaclab_arena.benchmarks.scenes import CROWDED_SIZES, TABLE_SIZE, cuboid, on_table, table

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(REPO, "isaaclab_arena_environments", "tabletop", "pooled_clutter.yaml")


# ---- the draw ---------------------------------------------------------------------------------------------------
def test_every_env_draws_k_in_range_reproducibly_and_envs_differ():
    envs = torch.arange(1024)
    draws = torch.zeros(1024, dtype=torch.long)
    a = draw_pool_members("clutter", (3, 5), 8, 7, envs, draws)
    counts = a.sum(1)
    assert a.shape == (1024, 8) and int(counts.min()) == 3 and int(counts.max()) == 5
    assert {3, 4, 5} == set(counts.tolist())  # every k of the range occurs
    assert torch.equal(a, draw_pool_members("clutter", (3, 5), 8, 7, envs, draws))  # same seed, env, draw
    # any batch order or subset gives each (env, draw) the same members
    perm = torch.randperm(1024)
    assert torch.equal(a[perm], draw_pool_members("clutter", (3, 5), 8, 7, envs[perm], draws))
    assert len({tuple(r) for r in a.int().tolist()}) > 100  # envs differ
    assert not torch.equal(a, draw_pool_members("clutter", (3, 5), 8, 8, envs, draws))  # the seed matters
    assert not torch.equal(a, draw_pool_members("clutter", (3, 5), 8, 7, envs, draws + 1))  # and the draw id
    freq = a.double().mean(0)  # each member joins about 4/8 of the layouts
    assert float((freq - 0.5).abs().max()) < 0.06
    assert bool(draw_pool_members("p", (8, 8), 8, 1, envs, draws).all())


def _pool_scene(count=(3, 5)):
    t = table()
    mug = on_table(t, "mug", (0.08, 0.08, 0.10))
    members = [cuboid(f"thing_{i}", CROWDED_SIZES[i % len(CROWDED_SIZES)]) for i in range(8)]
    pool = ObjectPool("clutter", members, count=count).add_relation(On(t))
    return [t, mug, *members], pool


@pytest.mark.slow
def test_solved_layouts_hold_relations_for_joined_objects_and_park_the_rest():
    from isaaclab_arena.relations.object_placer import ObjectPlacer
    from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams

    assets, pool = _pool_scene()
    E, D = 16, 3
    env_ids, draw_ids = torch.arange(E).repeat_interleave(D), torch.arange(D).repeat(E)
    vb = ObjectPlacer(ObjectPlacerParams(placement_seed=5)).place_batch(assets, env_ids, draw_ids, num_envs=E)
    names = list(vb.object_names)
    cols = [names.index(m) for m in pool.member_names]
    pos = vb.positions.double().numpy()
    joined = pos[:, cols, 2] < PARKED_ABOVE_M
    expected = draw_pool_members("clutter", (3, 5), 8, 5, env_ids, draw_ids).numpy()
    assert (joined == expected).all()  # the solver parks exactly the draw's complement
    assert bool(vb.passed.all())
    sizes = {a.name: np.array(a.get_bounding_box().size, dtype=np.float64) for a in assets}
    top = TABLE_SIZE[2]
    for b in range(pos.shape[0]):  # float64 re-check, independent of the kernels
        placed = [n for k, n in enumerate(names) if pos[b, k, 2] < PARKED_ABOVE_M]
        assert "mug" in placed and 3 <= len(placed) - 1 <= 5
        boxes = []
        for n in placed:
            p, s = pos[b, names.index(n)], sizes[n]
            lo, hi = p - s / 2, p + s / 2
            assert 0.0 <= lo[2] - top <= 0.02 + 1e-6, (b, n, lo[2])  # On: just above the top (release gap)
            assert -TABLE_SIZE[0] / 2 - 1e-6 <= lo[0] and hi[0] <= TABLE_SIZE[0] / 2 + 1e-6
            assert -TABLE_SIZE[1] / 2 - 1e-6 <= lo[1] and hi[1] <= TABLE_SIZE[1] / 2 + 1e-6
            boxes.append((lo, hi))
        for i in range(len(boxes)):
            for j in range(i + 1, len(boxes)):
                overlap = np.minimum(boxes[i][1], boxes[j][1]) - np.maximum(boxes[i][0], boxes[j][0])
                assert overlap.min() <= 1e-5, (b, placed[i], placed[j], overlap)
        for k, n in enumerate(pool.member_names):  # parked: exactly at the member's spot, unturned
            if not joined[b, k]:
                assert np.allclose(pos[b, names.index(n)], park_position(k))
                assert np.allclose(vb.rotations[b, names.index(n)].numpy(), [0, 0, 0, 1])


def test_python_refusals():
    from isaaclab_arena.relations.object_placer import ObjectPlacer
    from isaaclab_arena.relations.compiler.placement_restrictions import PlacementConfigError
    from isaaclab_arena.relations.relations import NextTo, Side

    things = [cuboid(f"t{i}", (0.05, 0.05, 0.05)) for i in range(3)]
    with pytest.raises(ValueError, match=r"ObjectPool 'p': count must be .* got \[2, 4\]"):
        ObjectPool("p", things, count=(2, 4))
    with pytest.raises(ValueError, match="count must be"):
        ObjectPool("p", things, count=(3, 2))
    with pytest.raises(ValueError, match=r"count must be .* got 4$"):  # a scalar k is quoted as written
        ObjectPool("p", things, count=4)
    with pytest.raises(ValueError, match="listed twice"):
        ObjectPool("p", [things[0], things[0]], count=1)
    assets, pool = _pool_scene()
    other = on_table(assets[0], "other", (0.05, 0.05, 0.05), NextTo(pool.objects[0], side=Side.POSITIVE_X))
    with pytest.raises(PlacementConfigError, match="'thing_0' is a member of pool 'clutter' and may be parked"):
        ObjectPlacer().place_batch(assets + [other], torch.zeros(1, dtype=torch.long), torch.zeros(1, dtype=torch.long),
                                   num_envs=1)


# ---- YAML -------------------------------------------------------------------------------------------------------
def _spec(tmp_path, pools: str):
    from isaaclab_arena.env_spec import ArenaEnvGraphSpec

    text = open(EXAMPLE).read()
    head, rest = text.split("object_pools:\n", 1)
    rest = rest.split("relations:\n", 1)[1]
    path = tmp_path / "scene.yaml"
    path.write_text(head + "object_pools:\n" + pools + "relations:\n" + rest)
    return ArenaEnvGraphSpec.from_yaml(str(path)), str(path)


@pytest.mark.parametrize("pools, key, fragment", [
    ("  - {id: clutter, members: [bowl, crate, block], count: [2, 4]}\n", "count",
     "count must be an integer k in [0, 3] (the pool's 3 members) or a range [k_min, k_max]"),
    ("  - {id: clutter, members: [bowl, crate, blok], count: 2}\n", "members[2]",
     "unknown member 'blok' (did you mean 'block'?)"),
    ("  - {id: clutter, members: [bowl, crate], cont: 2}\n", "cont", "unknown key 'cont'"),
    ("  - {id: clutter, members: [bowl, bowl], count: 1}\n", "members[1]", "listed twice"),
    ("  - {id: clutter, members: [bowl, crate]}\n", "count", "'count' is missing"),
    ("  - {id: clutter, members: [bowl, table], count: 1}\n", "members[1]", "members must be entries under objects"),
    ("  - {id: clutter, members: [bowl, crate, block, dice, tray, bottle, ball, can], count: [3, 5],"
     " physical_properties: {static_friction: [0.9, 0.1]}}\n", "physical_properties", "static_friction must be"),
])
def test_bad_yaml_is_refused_naming_key_and_line(tmp_path, pools, key, fragment):
    from isaaclab_arena.env_spec import EnvSpecError

    with pytest.raises(EnvSpecError) as info:
        spec, _ = _spec(tmp_path, pools)
        spec.to_arena_env()
    msg = str(info.value)
    assert fragment in msg and "scene.yaml" in msg and key in msg and "\n" not in msg.strip(), msg
    line = open(tmp_path / "scene.yaml").read().splitlines().index(pools.rstrip("\n")) + 1
    assert f":{line}" in msg, msg


def test_yaml_pool_builds_members_relations_and_properties_and_round_trips(tmp_path):
    from isaaclab_arena.assets.object_pool import pools_of
    from isaaclab_arena.assets.physical_properties import physical_property_ranges_of
    from isaaclab_arena.env_spec import ArenaEnvGraphSpec

    spec = ArenaEnvGraphSpec.from_yaml(EXAMPLE)
    env = spec.to_arena_env()
    (pool,) = pools_of(env.assets)
    assert pool.count == (3, 5) and len(pool.objects) == 8
    for m in pool.objects:
        assert [type(r).__name__ for r in m.get_relations()] == ["On"]
        assert physical_property_ranges_of(m).static_friction == (0.4, 0.9)
    out = tmp_path / "again.yaml"
    spec.to_yaml(out)
    assert ArenaEnvGraphSpec.from_yaml(str(out)) == spec


def test_jsonl_records_say_which_objects_parked_and_read_back(tmp_path):
    from isaaclab_arena.relations.placement_layouts import PlacementLayouts

    pos = torch.tensor([[[0.1, 0.0, 0.8], [0.0, 0.0, PARK_HEIGHT_M]], [[0.2, 0.1, 0.8], [0.3, 0.1, 0.8]]])
    rot = torch.zeros(2, 2, 4)
    rot[..., 3] = 1.0
    layouts = PlacementLayouts(("mug", "thing_0"), pos, rot)
    records = list(layouts.episode_records(source="solver"))
    assert records[0]["variations"]["scene.parked_objects"] == ["thing_0"]
    assert "scene.parked_objects" not in records[1]["variations"]
    path = tmp_path / "l.jsonl"
    layouts.write_episode_jsonl(path, source="solver")
    back = PlacementLayouts.from_episode_jsonl(str(path))  # a parking spot passes the replay bound
    assert torch.equal(back.positions, pos)


# ---- in the simulator (OV PhysX) --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pooled_env():
    from isaaclab.app import launch_simulation

    from isaaclab_arena.env_spec import ArenaEnvGraphSpec
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.environments.object_pools import JOINED_EXTRAS_KEY, parking_of
    from isaaclab_arena.relations.placement_layouts import PlacementLayouts

    arena_env = ArenaEnvGraphSpec.from_yaml(EXAMPLE).to_arena_env()
    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=4, placement_seed=3, physics="ovphysx",
                                                            gym_id="test_object_pools"))
    cfg = builder.compose_manager_cfg()
    out = {"members": [o.name for o in arena_env.assets if getattr(o, "object_pool", None) is not None]}
    with launch_simulation(cfg, {"headless": True, "device": "cpu"}):
        env = builder.make_registered(cfg)
        try:
            u = env.unwrapped
            names = list(builder.pose_source.object_names)
            rounds = []
            for _ in range(2):  # two episodes: the second takes each env's next layout (another joined set)
                env.reset()
                placed = {n: u.scene[n].data.root_pos_w.torch.clone() - u.scene.env_origins for n in names}
                for _ in range(60):
                    env.step(torch.zeros(u.num_envs, u.action_manager.total_action_dim))
                rest = {n: u.scene[n].data.root_pos_w.torch.clone() - u.scene.env_origins for n in names}
                rounds.append({"placed": placed, "rest": rest,
                               "joined": {k: v.clone() for k, v in u.extras[JOINED_EXTRAS_KEY].items()}})
            out["rounds"] = rounds
            out["mode"] = parking_of(env).mode
            out["origins"] = u.scene.env_origins.clone()
            layouts = torch.stack([rounds[0]["placed"][n] for n in names], 1)
            rot = torch.zeros(*layouts.shape[:2], 4)
            rot[..., 3] = 1.0
            out["recorded"] = PlacementLayouts(tuple(names), layouts.float(), rot)
        finally:
            env.close()
    return out


@pytest.mark.sim
def test_parked_members_stay_out_of_physics_and_joined_ones_rest_where_placed(pooled_env):
    assert pooled_env["mode"] == "ovphysx_disable_simulation"
    origins = pooled_env["origins"]
    seen = set()
    for rnd in pooled_env["rounds"]:
        placed, rest, joined = rnd["placed"], rnd["rest"], rnd["joined"]
        world = {n: rest[n] + origins for n in rest}
        for n in pooled_env["members"]:
            for e in range(origins.shape[0]):
                if bool(joined[n][e]):  # rests where placed: xy within 5 mm, dropped the release gap at most
                    assert float((rest[n][e, :2] - placed[n][e, :2]).norm()) < 5e-3, (n, e)
                    assert -0.015 < float(rest[n][e, 2] - placed[n][e, 2]) <= 1e-3, (n, e)
                else:  # parked: not moved at all by 60 steps (no gravity, no contacts), far from everything
                    assert float(placed[n][e, 2]) > PARKED_ABOVE_M
                    assert torch.equal(rest[n][e], placed[n][e]), (n, e)
                    gaps = [float((world[n][e] - world[m][f]).norm()) for m in world for f in range(origins.shape[0])
                            if (m, f) != (n, e)]
                    assert min(gaps) > 2.0, (n, e, min(gaps))  # the same spot of the next env: env_spacing
        per_env = torch.stack([joined[n] for n in pooled_env["members"]], 1).sum(1)
        assert bool(((per_env >= 3) & (per_env <= 5)).all()), per_env
        seen.add(tuple(torch.stack([joined[n] for n in pooled_env["members"]], 1).flatten().tolist()))
    assert len(seen) == 2  # the next episode took other joined sets


@pytest.mark.sim
def test_replay_reproduces_the_joined_sets(pooled_env, tmp_path):
    from isaaclab_arena.environments.replay_source import ReplayPoseSource
    from isaaclab_arena.relations.placement_layouts import PlacementLayouts

    recorded = pooled_env["recorded"]
    path = tmp_path / "rec.jsonl"
    recorded.write_episode_jsonl(path, source="solver")
    back = PlacementLayouts.from_episode_jsonl(str(path))
    source = ReplayPoseSource(back, num_envs=back.positions.shape[0])
    poses = source.poses_for_reset(torch.arange(back.positions.shape[0]))
    names = list(back.object_names)
    joined0 = pooled_env["rounds"][0]["joined"]
    for n in pooled_env["members"]:
        replay_joined = poses[:, names.index(n), 2] < PARKED_ABOVE_M
        assert torch.equal(replay_joined, joined0[n].cpu()), n


# ---- pictures ----------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_the_layout_picture_draws_joined_members_only(tmp_path, monkeypatch):
    """Each panel of the runner's top-down picture labels exactly the pool members that joined that env's layout
    (and none of the parked ones), for the shipped example."""
    import matplotlib.figure

    from isaaclab_arena.env_spec import ArenaEnvGraphSpec
    from isaaclab_arena.environments.placement_pictures import write_layout_picture
    from isaaclab_arena.relations.pooled_object_placer import PooledObjectPlacer

    arena_env = ArenaEnvGraphSpec.from_yaml(EXAMPLE).to_arena_env()
    params = arena_env.placer_params
    params.placement_seed = 11
    pool = PooledObjectPlacer(arena_env.get_placement_assets(), params, num_envs=4)
    pool.initialize()
    figures = []
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda self, *a, **k: figures.append(self))
    write_layout_picture(pool, str(tmp_path / "layout.png"))
    (fig,) = figures
    from isaaclab_arena.assets.object_pool import pools_of

    (clutter,) = pools_of(arena_env.get_placement_assets())
    members = list(clutter.member_names)
    assert len(members) == 8
    poses, names = pool.current_poses, list(pool.object_names)
    panels = [ax for ax in fig.axes if ax.get_title().startswith("env ")]
    assert len(panels) == 4
    seen_joined = set()
    for e, ax in enumerate(panels):
        labels = {t.get_text() for t in ax.texts}
        z = poses[e, :, 2]
        joined = {n for n in members if float(z[names.index(n)]) < PARKED_ABOVE_M}
        parked = set(members) - joined
        assert 3 <= len(joined) <= 5 and len(parked) >= 3
        assert joined <= labels, (e, joined - labels)
        assert not (parked & labels), (e, parked & labels)
        seen_joined.add(frozenset(joined))
    assert len(seen_joined) > 1  # envs draw different sets


def test_the_runner_printout_says_parked_for_a_parked_member():
    from isaaclab_arena.environments.run_loop import format_poses
    from isaaclab_arena.utils.parking_spots import park_position

    spot = torch.as_tensor(park_position(0), dtype=torch.float32)
    text = format_poses("[arena] after 5 steps", {"mug": torch.stack([torch.tensor([0.1, -0.2, 0.8]), spot])})
    assert text.splitlines()[1].split() == ["mug", "env0:", "(+0.100,", "-0.200,", "+0.800)", "env1:", "parked"]

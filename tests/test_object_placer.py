"""ObjectPlacer: results, ranking, determinism, bad input, object sets."""

from __future__ import annotations

import pytest
import torch

from isaaclab_arena.assets.object_set import RigidObjectSet
from isaaclab_arena.relations.object_placer import ObjectPlacer
from isaaclab_arena.relations.solving import ranking
from isaaclab_arena.relations.solving.ranking import assign_slots, rank_keys, rank_order, rank_within_env
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.relations.compiler.placement_restrictions import PlacementConfigError
from isaaclab_arena.relations.relations import AtPosition, IsAnchor, NextTo, On, Side
from isaaclab_arena.benchmarks.scenes import SCENES, cuboid, mug_bowl_scene, on_table, table
from isaaclab_arena.utils.pose import Pose


def test_same_env_and_draw_give_same_layout_whatever_the_batch():
    scene = SCENES["crowded14"]()
    params = dict(placement_seed=5, random_yaw_init=True)
    one = ObjectPlacer(ObjectPlacerParams(**params)).place_batch(scene, [3], [7], num_envs=8)
    envs = torch.arange(64) % 8
    draws = torch.arange(64) // 8
    many = ObjectPlacer(ObjectPlacerParams(**params)).place_batch(scene, envs, draws, num_envs=8)
    k = int(torch.nonzero((envs == 3) & (draws == 7))[0])
    assert torch.equal(one.positions[0], many.positions[k])
    assert torch.equal(one.rotations[0], many.rotations[k])
    # env count does not change a layout either
    more = ObjectPlacer(ObjectPlacerParams(**params)).place_batch(scene, [3], [7], num_envs=32)
    assert torch.equal(one.positions[0], more.positions[0])
    other_seed = ObjectPlacer(ObjectPlacerParams(placement_seed=6, random_yaw_init=True)).place_batch(
        scene, [3], [7], num_envs=8)
    assert not torch.equal(one.positions[0], other_seed.positions[0])


def test_place_returns_distinct_valid_layout_per_env():
    res = ObjectPlacer(ObjectPlacerParams(placement_seed=2)).place(mug_bowl_scene(), num_envs=5)
    assert [r.env_id for r in res] == list(range(5))
    assert all(r.success and r.rejections == [] for r in res)
    assert len({r.positions["mug"] for r in res}) == 5
    assert all(set(r.check_results) >= {"no_overlap", "on_relation", "next_to"} for r in res)


@pytest.fixture(params=["numpy", "torch"])
def ranking_branch(request, monkeypatch):
    """Ranks on the CPU through numpy (the default there) or through torch's ops (the branch a GPU takes)."""
    if request.param == "torch":
        monkeypatch.setattr(ranking, "_on_host", lambda t: False)
    return request.param


def test_ranking_matches_a_lexicographic_sort_with_ties_in_batch_order(ranking_branch):
    import numpy as np

    gen = torch.Generator().manual_seed(5)
    for B in (1, 7, 5000):
        env = torch.randint(0, 40, (B,), generator=gen)
        req = torch.randint(0, 3, (B,), generator=gen, dtype=torch.int32)
        opt = torch.randint(0, 4, (B,), generator=gen, dtype=torch.int32)
        loss = torch.randint(0, 5, (B,), generator=gen).float() * 0.25  # many equal losses
        # numpy's lexsort is stable, its last key the primary one: env, required, optional, loss, batch order
        want = np.lexsort((np.arange(B), loss.numpy(), opt.numpy(), req.numpy(), env.numpy()))
        assert rank_keys(env, req, opt, loss).tolist() == want.tolist()
        # negative, signed-zero, infinite and NaN losses order as a sort of the losses does (NaN last, -0.0 == 0.0)
        odd = torch.tensor([-2.5, -0.0, 0.0, float("inf"), -float("inf"), float("nan"), -float("nan"), 1e-45, -1e-45])
        loss = odd[torch.randint(0, len(odd), (B,), generator=gen)]
        want = np.lexsort((np.arange(B), loss.numpy(), opt.numpy(), req.numpy(), env.numpy()))
        assert rank_keys(env, req, opt, loss).tolist() == want.tolist()
        # a float64 loss (values float32 would merge) sorts key by key
        loss = 1.0 + torch.randint(0, 3, (B,), generator=gen).double() * 1e-12
        want = np.lexsort((np.arange(B), loss.numpy(), opt.numpy(), req.numpy(), env.numpy()))
        assert rank_keys(env, req, opt, loss).tolist() == want.tolist()
    # keys too wide for one int64 fall back to one sort per key, with the same order
    env = torch.tensor([2**40, 0, 2**40, 0])
    req, opt = torch.tensor([0, 1, 0, 0], dtype=torch.int32), torch.tensor([0, 0, 0, 0], dtype=torch.int32)
    loss = torch.tensor([1.0, 0.0, 0.5, 2.0])
    assert rank_keys(env, req, opt, loss).tolist() == [3, 1, 2, 0]
    assert rank_keys(env[:0], req[:0], opt[:0], loss[:0]).tolist() == []


def test_rank_within_env_counts_each_envs_masked_candidates_in_order(ranking_branch):
    """The k-th masked candidate of an env (candidates sorted by env) gets rank k; unmasked ones 2**40; envs
    without candidates, or with none masked, are skipped; compared with a plain loop."""
    gen = torch.Generator().manual_seed(11)
    for B, E in ((1, 1), (9, 4), (5000, 700)):
        env = torch.randint(0, E, (B,), generator=gen).sort().values
        mask = torch.rand(B, generator=gen) > 0.3
        seen: dict[int, int] = {}
        want = []
        for e, m in zip(env.tolist(), mask.tolist()):
            want.append(seen.get(e, 0) if m else 1 << 40)
            seen[e] = seen.get(e, 0) + int(m)
        assert rank_within_env(env, mask, E).tolist() == want


def _assign_by_loop(env, mask, filled, L):
    """(taken (k, env, slot) tuples, counts after) of ``assign_slots`` as a plain loop."""
    count, want = filled.tolist(), []
    for k, (e, m) in enumerate(zip(env.tolist(), mask.tolist())):
        if m and count[e] < L:
            want.append((k, e, count[e]))
            count[e] += 1
    return want, count


def test_assign_slots_fills_each_envs_free_slots_with_its_first_masked_candidates(ranking_branch):
    """Candidates sorted by env, some envs partly filled already: each env's masked candidates, in order, take its
    next free slots until it is full; the counts grow by what was taken; compared with a plain loop."""
    gen = torch.Generator().manual_seed(17)
    for B, E, L in ((1, 1, 1), (12, 3, 2), (5000, 600, 5)):
        env = torch.randint(0, E, (B,), generator=gen).sort().values
        mask = torch.rand(B, generator=gen) > 0.25
        filled = torch.randint(0, L + 1, (E,), generator=gen)
        want, count = _assign_by_loop(env, mask, filled, L)
        picked, envs, slots = assign_slots(env, mask, filled, L)
        assert list(zip(picked.tolist(), envs.tolist(), slots.tolist())) == want
        assert filled.tolist() == count and picked.dtype == envs.dtype == slots.dtype == torch.int64


def test_assign_slots_of_whole_partitions_takes_the_short_way_with_the_same_slots(ranking_branch, monkeypatch):
    """The common fill (every candidate passes, each env's L candidates into its empty partition) is assigned
    without ranking within envs (numpy branch); the same slots as the plain loop, and near misses (one candidate
    failing, one partition not empty, a short env, a repeated env) take the general way with the loop's slots."""
    from isaaclab_arena.relations.solving import ranking

    L, E = 5, 40
    active = torch.tensor([0, 3, 4, 9, 17, 39])
    env = active.repeat_interleave(L)
    cases = {"whole": (env, torch.ones(len(env), dtype=torch.bool), torch.zeros(E, dtype=torch.long))}
    mask = torch.ones(len(env), dtype=torch.bool)
    mask[7] = False
    cases["one fails"] = (env, mask, torch.zeros(E, dtype=torch.long))
    filled = torch.zeros(E, dtype=torch.long)
    filled[4] = 2
    cases["not empty"] = (env, torch.ones(len(env), dtype=torch.bool), filled)
    cases["short env"] = (env[1:], torch.ones(len(env) - 1, dtype=torch.bool), torch.zeros(E, dtype=torch.long))
    twice = torch.tensor([3, 3]).repeat_interleave(L)
    cases["repeated env"] = (twice, torch.ones(len(twice), dtype=torch.bool), torch.zeros(E, dtype=torch.long))
    general = ranking.rank_within_env
    for name, (env_c, mask_c, filled_c) in cases.items():
        want, count = _assign_by_loop(env_c, mask_c, filled_c, L)
        if name == "whole" and ranking._on_host(env_c):  # the short way does not rank within envs
            monkeypatch.setattr(ranking, "rank_within_env", lambda *a: (_ for _ in ()).throw(AssertionError(name)))
        picked, envs, slots = assign_slots(env_c, mask_c, filled_c, L)
        monkeypatch.setattr(ranking, "rank_within_env", general)
        assert list(zip(picked.tolist(), envs.tolist(), slots.tolist())) == want, name
        assert filled_c.tolist() == count and picked.dtype == envs.dtype == slots.dtype == torch.int64, name


def test_ranking_required_then_optional_then_loss():
    scene = mug_bowl_scene()
    pl = ObjectPlacer(ObjectPlacerParams(placement_seed=1))
    env = torch.tensor([1, 0, 0, 1, 0, 0])
    req = torch.tensor([1, 0, 0, 2, 0, 1], dtype=torch.int32)
    opt = torch.tensor([0, 1, 0, 0, 0, 0], dtype=torch.int32)
    loss = torch.tensor([0.0, 0.0, 3.0, 0.0, 1.0, 0.5])
    assert rank_keys(env, req, opt, loss).tolist() == [4, 2, 1, 5, 0, 3]
    # a validated batch ranks by its own keys: passing candidates of an env come first
    batch = pl.place_batch(scene, torch.zeros(6, dtype=torch.int64), torch.arange(6), num_envs=1)
    order = rank_order(batch)
    assert sorted(order.tolist()) == list(range(6))
    keys = list(zip(batch.required_failures[order].tolist(), batch.optional_failures[order].tolist(),
                    batch.loss[order].tolist()))
    assert keys == sorted(keys)


def test_the_compiled_scene_is_reused_until_something_it_reads_changes():
    """``ObjectPlacer.compile`` returns its cached problem for the same scene and settings, and compiles again after
    a relation's parameter changes in place, a relation is added, an initial pose or the env count changes; the
    problem compiled after a change places by the new relation (its gap measured in float64)."""
    t = table()
    mug = on_table(t, "mug", (0.08, 0.08, 0.1))
    near = NextTo(mug, side=Side.POSITIVE_X, distance_m=0.05)
    plate = on_table(t, "plate", (0.1, 0.1, 0.02), near)
    assets = [t, mug, plate]
    placer = ObjectPlacer(ObjectPlacerParams(placement_seed=4))
    first = placer.compile(assets, 4)
    assert placer.compile(assets, 4) is first and placer.compile(list(assets), 4) is first
    near.distance_m = 0.12  # in place: same object, new parameter
    second = placer.compile(assets, 4)
    assert second is not first and placer.compile(assets, 4) is second
    vb = placer.place_problem(second, torch.arange(4), torch.zeros(4, dtype=torch.long))
    k = second.object_names.index
    gap = (vb.positions[:, k("plate"), 0].double() - 0.05) - (vb.positions[:, k("mug"), 0].double() + 0.04)
    assert bool(vb.passed.all()) and bool(((gap >= 0.12 - 1e-5) & (gap <= 0.13 + 1e-5)).all()), gap
    mug.add_relation(AtPosition(x=0.1))
    third = placer.compile(assets, 4)
    assert third is not second
    t.initial_pose = Pose((0.0, 0.0, 0.4))
    assert placer.compile(assets, 4) is not third
    assert placer.compile(assets, 8) is not placer.compile(assets, 4)


def test_over_constrained_scene_is_refused_naming_the_relations_and_metres():
    t = table()
    mug = on_table(t, "mug", (0.08, 0.08, 0.1))
    mug.add_relation(AtPosition(x=0.5))
    plate = on_table(t, "plate", (0.2, 0.2, 0.02))
    plate.add_relation(NextTo(mug, side=Side.POSITIVE_X, distance_m=0.05))
    # mug centre 0.5 + 0.04 + gap 0.05 + plate 0.2 = 0.79 > 0.55 (table edge 0.6 - edge_margin_m 0.05)
    with pytest.raises(PlacementConfigError, match=r"asset 'plate' next_to\(mug, positive_x\): along x it cannot hold "
                                                   r"together with 'mug' at_position\(x=0.5\).*0\.240 m of room is "
                                                   r"missing"):
        ObjectPlacer(ObjectPlacerParams(placement_seed=0, max_placement_attempts=3)).place([t, mug, plate], 2)


def test_no_anchor_is_rejected_before_solving():
    box = cuboid("box", (0.1, 0.1, 0.1))
    other = cuboid("other", (0.1, 0.1, 0.1))
    box.add_relation(NextTo(other))
    other.add_relation(On(box, overlap=True))
    with pytest.raises(PlacementConfigError, match="no anchor"):
        ObjectPlacer().place([box, other])


def test_anchor_without_pose_is_rejected():
    t = cuboid("table", (1.0, 1.0, 0.7))
    t.add_relation(IsAnchor())
    box = on_table(t, "box", (0.1, 0.1, 0.1))
    with pytest.raises(PlacementConfigError, match="'table'.*fixed initial pose"):
        ObjectPlacer().place([t, box])


def test_child_larger_than_support_is_rejected():
    t = table()
    big = on_table(t, "big", (1.5, 0.2, 0.1))
    with pytest.raises(PlacementConfigError, match="'big' is 1.500 m along x"):
        ObjectPlacer().place([t, big])


def test_mesh_mode_roll_or_pitch_is_refused_naming_the_asset():
    from isaaclab_arena.assets.collision_mode import CollisionMode
    from isaaclab_arena.relations.relations import RotateAroundSolution

    scene = mug_bowl_scene()
    scene[1].collision_mode = CollisionMode.MESH
    scene[1].add_relation(RotateAroundSolution(roll_rad=0.3))
    with pytest.raises(PlacementConfigError, match="asset 'mug': roll or pitch needs collision_mode='bbox'.*yaw only"):
        ObjectPlacer().place(scene)


def test_bad_env_ids_and_unknown_check_are_clear_errors():
    scene = mug_bowl_scene()
    with pytest.raises(ValueError, match=r"env_ids must lie in \[0, 2\)"):
        ObjectPlacer().place_batch(scene, [0, 5], [0, 0], num_envs=2)
    with pytest.raises(ValueError, match="unknown check 'no_overlapp'"):
        ObjectPlacer(ObjectPlacerParams(enabled_checks=["no_overlapp"])).place(scene)


def test_object_set_members_sized_per_env():
    t = table()
    small = cuboid("small_cube", (0.05, 0.05, 0.05))
    tall = cuboid("tall_box", (0.1, 0.1, 0.3))
    role = RigidObjectSet("thing", [small, tall])
    role.add_relation(On(t))
    res = ObjectPlacer(ObjectPlacerParams(placement_seed=0)).place([t, role], num_envs=4)
    members = role.member_indices_per_env(4, 0)
    for r, m in zip(res, members):
        half_h = (0.025, 0.15)[m]
        assert r.success
        assert r.positions["thing"][2] == pytest.approx(0.75 + 0.01 + half_h, abs=1e-5)


def test_passive_obstacle_with_pose_is_avoided():
    t = table()
    block = cuboid("block", (1.0, 0.6, 0.2), Pose((0.0, 0.0, 0.85)))  # leaves two 0.1 m strips in y
    box = cuboid("box", (0.08, 0.08, 0.08))
    box.add_relation(On(t, edge_margin_m=0.0))
    for r in ObjectPlacer(ObjectPlacerParams(placement_seed=3)).place([t, block, box], num_envs=6):
        assert r.success
        x, y, _ = r.positions["box"]
        assert abs(x) >= 0.5 + 0.04 - 1e-5 or abs(y) >= 0.3 + 0.04 - 1e-5


def test_verbose_prints_summary(capsys):
    ObjectPlacer(ObjectPlacerParams(placement_seed=1, verbose=True)).place(mug_bowl_scene(), 2)
    out = capsys.readouterr().out
    assert "[placement] Validated 20 candidate layout(s); passed per check: no_overlap=20/20" in out


# ------------------------------------------------------------------------ apply_positions_to_objects
def test_single_env_place_writes_placed_pose_and_can_place_again():
    scene = mug_bowl_scene()
    t, mug, bowl = scene
    pl = ObjectPlacer(ObjectPlacerParams(placement_seed=4))
    res = pl.place(scene)
    assert res[0].success
    for a in (mug, bowl):
        assert a.placed_pose == Pose(res[0].positions[a.name], res[0].rotations[a.name])
        assert a.initial_pose is None  # a relation-placed asset keeps no initial_pose
    assert t.placed_pose is None and t.initial_pose is not None  # anchors untouched
    again = pl.place(scene)  # neither the restrictions nor the compile cache see the written poses
    assert again[0].positions == res[0].positions
    fresh = ObjectPlacer(ObjectPlacerParams(placement_seed=4)).place(mug_bowl_scene())
    assert fresh[0].positions == res[0].positions


def test_placed_pose_not_written_when_disabled_failed_or_for_several_envs():
    scene = mug_bowl_scene()
    ObjectPlacer(ObjectPlacerParams(placement_seed=4, apply_positions_to_objects=False)).place(scene)
    assert scene[1].placed_pose is None
    res = ObjectPlacer(ObjectPlacerParams(placement_seed=4)).place(scene, num_envs=3)
    assert all(r.success for r in res) and scene[1].placed_pose is None
    t = table()
    mug = on_table(t, "mug", (1.0, 0.7, 0.1))
    plate = on_table(t, "plate", (1.0, 0.7, 0.02))  # each fits the table, both never do: fails after solving
    res = ObjectPlacer(ObjectPlacerParams(placement_seed=0, max_placement_attempts=2)).place([t, mug, plate])
    assert not res[0].success and mug.placed_pose is None and plate.placed_pose is None

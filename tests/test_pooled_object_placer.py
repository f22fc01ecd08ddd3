"""PooledObjectPlacer pool logic on the real ObjectPlacer (no simulator): partitions, queue order, refills,
fallbacks, ranking, seeds and diagnostics.

Scenes (the shipped table; tabletop prim anchored through an ObjectReference; procedural objects):
* ``mug_bowl``: mug and bowl On(table), bowl NextTo(mug): every candidate passes.
* ``crowded``: twenty 12 cm cubes On(table) solved with ``max_iters=0`` (initial sampling only), so most
  candidates overlap and envs need several batches: the refill-across-batches case.
* ``one_env_impossible``: a RigidObjectSet (4 cm cube, 8 cm cube, 16 cm flat box) NextTo(mug, 0.9 m) on the
  1.2 m table (1.1 m inside On's 5 cm edge margin): mug + gap + box needs 1.14 m, so env 2 (the box) cannot
  be placed while envs 0 and 1 can: fallbacks, and the feasibility pre-check's refusal without them.
No stand-in placer is needed: every case comes from a real scene.
"""

from __future__ import annotations

import json

import pytest
import torch

from isaaclab_arena.assets.object_reference import ObjectReference
from isaaclab_arena.assets.object_set import RigidObjectSet
from isaaclab_arena.relations.object_placer import ObjectPlacer
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.relations.compiler.placement_restrictions import PlacementConfigError
from isaaclab_arena.relations.pooled_object_placer import PooledObjectPlacer
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams
from isaaclab_arena.relations.relations import IsAnchor, NextTo, On, Side
from isaaclab_arena_environments.assets import library as L


def _table():
    bg = L.table_background("table_background")
    table = ObjectReference("table", "{ENV_REGEX_NS}/table_background/table", bg, object_type="base")
    table.add_relation(IsAnchor())
    return bg, table


def mug_bowl():
    bg, table = _table()
    mug = L.mug("mug").add_relation(On(table))
    bowl = L.bowl("bowl").add_relation(On(table)).add_relation(NextTo(mug))
    return [bg, table, mug, bowl]


def crowded():
    bg, table = _table()
    return [bg, table, *[L.cube_12cm(f"c{i:02d}").add_relation(On(table)) for i in range(20)]]


def one_env_impossible():
    bg, table = _table()
    mug = L.mug("mug").add_relation(On(table))
    cube = RigidObjectSet("cube", [L.cube_4cm("a"), L.cube_8cm("b"), L.box_flat("c")])
    cube.add_relation(On(table)).add_relation(NextTo(mug, side=Side.POSITIVE_X, distance_m=0.9))
    return [bg, table, mug, cube]


def make(assets, num_envs=4, output_dir=None, **kw):
    kw.setdefault("min_unique_layouts_per_env", 3)
    kw.setdefault("max_placement_attempts", 4)
    kw.setdefault("placement_seed", 5)
    pool = PooledObjectPlacer(assets, ObjectPlacerParams(**kw), num_envs=num_envs, output_dir=output_dir)
    pool.diagnostics.verbose = output_dir is not None
    pool.initialize()
    return pool


def _revalidate(pool, assets):
    """Independent check of every stored layout with ObjectPlacer.validate_poses (no solving)."""
    E, Lp, n, _ = pool.poses.shape
    flat = pool.poses.reshape(E * Lp, n, 7)
    env_ids = torch.arange(E).repeat_interleave(Lp)
    batch = ObjectPlacer(pool.params).validate_poses(assets, flat[..., :3], flat[..., 3:], env_ids=env_ids,
                                                     num_envs=E)
    return batch.passed.reshape(E, Lp)


def test_every_partition_is_filled_with_layouts_that_pass_when_revalidated():
    assets = mug_bowl()
    pool = make(assets)
    assert pool.remaining.tolist() == [3, 3, 3, 3]
    assert bool(pool.slot_passed.all()) and not bool(pool.slot_fallback.any())
    assert bool(_revalidate(pool, assets).all())
    assert pool.next_draw.tolist() == [3, 3, 3, 3]  # one batch sufficed
    # layouts differ between envs and between slots of one env
    assert (pool.poses[0, 0] - pool.poses[1, 0]).abs().max() > 1e-3
    assert (pool.poses[0, 0] - pool.poses[0, 1]).abs().max() > 1e-3


def test_envs_refill_across_batches_until_their_partition_is_full():
    assets = crowded()
    # no solving and no clearance: whether a layout is valid is up to its initial draws
    pool = make(assets, num_envs=6, min_unique_layouts_per_env=2, max_placement_attempts=10,
                solver_params=RelationSolverParams(max_iters=0, verbose=False, clearance_m=0.0))
    batches = pool.next_draw // 2
    assert int(batches.max()) > 1, "the crowded scene should need more than one batch for some env"
    # only envs still short are re-solved: a full env stops drawing while others continue
    assert int(batches.min()) < int(batches.max())
    ok = ~pool.slot_fallback
    assert bool(pool.slot_passed[ok].all())
    assert bool((_revalidate(pool, assets) == pool.slot_passed).all())
    fill = pool.diagnostics.fills[0]
    assert len(fill.batches) == int(batches.max())
    assert fill.batches[1].num_candidates == 2 * int((batches > 1).sum())


def test_resets_take_the_next_queued_layout_and_refill_only_empty_partitions():
    pool = make(mug_bowl())
    first = pool.poses.clone()
    got = [pool.next_layouts(torch.arange(4)) for _ in range(3)]
    for k in range(3):
        torch.testing.assert_close(got[k], first[:, k])
    assert pool.num_fills == 1
    fresh = pool.next_layouts(torch.tensor([2]))  # env 2's partition is empty: refilled during this reset
    assert pool.num_fills == 2 and pool.diagnostics.fills[-1].envs == [2]
    assert pool.diagnostics.fills[-1].reason == "reset_refill"
    assert pool.remaining.tolist() == [0, 0, 2, 0]
    # the refill drew new candidates (draws 3..5), so env 2 gets layouts it never had
    assert pool.next_draw.tolist() == [3, 3, 6, 3]
    assert not any(torch.allclose(fresh[0], first[2, k]) for k in range(3))


def test_partial_reset_consumes_only_the_reset_envs():
    pool = make(mug_bowl())
    before = pool.current_poses.clone()
    out = pool.next_layouts(torch.tensor([1, 3]))
    assert pool.consumed.tolist() == [0, 1, 0, 1]
    assert pool.remaining.tolist() == [3, 2, 3, 2]
    torch.testing.assert_close(pool.current_poses[[0, 2]], before[[0, 2]])
    torch.testing.assert_close(pool.current_poses[[1, 3]], out)


def test_resolve_on_reset_false_keeps_the_creation_layout():
    pool = make(mug_bowl(), resolve_on_reset=False)
    creation = pool.creation_poses.clone()
    for _ in range(5):
        torch.testing.assert_close(pool.next_layouts(torch.arange(4)), creation)
    assert pool.num_fills == 1


def test_layouts_of_an_env_do_not_depend_on_env_count_or_other_envs():
    a = make(mug_bowl(), num_envs=2)
    b = make(mug_bowl(), num_envs=5)
    torch.testing.assert_close(a.poses[:2], b.poses[:2])
    for _ in range(4):  # the 4th reset refills env 0: in `a` alone, in `b` together with four other envs
        la = a.next_layouts(torch.tensor([0]))
        lb = b.next_layouts(torch.arange(5))
    torch.testing.assert_close(la[0], lb[0])
    assert a.diagnostics.fills[-1].envs == [0] and b.diagnostics.fills[-1].envs == [0, 1, 2, 3, 4]


def test_same_seed_same_pool_other_seed_other_pool():
    a, b, c = make(mug_bowl()), make(mug_bowl()), make(mug_bowl(), placement_seed=6)
    torch.testing.assert_close(a.poses, b.poses)
    assert (a.poses - c.poses).abs().max() > 1e-3


def test_fallbacks_fill_the_impossible_env_and_are_reported(tmp_path, capsys):
    assets = one_env_impossible()
    pool = make(assets, num_envs=3, output_dir=str(tmp_path), max_placement_attempts=2)
    assert pool.member_indices["cube"] == [0, 1, 2]
    assert pool.fallback_envs == {2}
    assert bool(pool.slot_fallback[2].all()) and not bool(pool.slot_fallback[[0, 1]].any())
    assert bool(pool.slot_passed[[0, 1]].all()) and not bool(pool.slot_passed[2].any())
    assert pool.next_draw.tolist() == [3, 3, 6]  # envs 0, 1 filled in batch 1; env 2 used both batches
    out = capsys.readouterr().out
    assert "[placement] Validated 9 candidate layout(s); passed per check: no_overlap=9/9, clearance=9/9, on_relation=" in out
    assert "next_to=6/9" in out and "next_to=0/3" not in out  # batch 2 (env 2 only) repeats batch 1's block:
    # held back and counted, its figures in the JSON
    assert "[placement] ... 1 more batch(es) like the one above: 3 candidates, 0 passed every required check" in out
    assert out.count("[solver]") == 1
    assert "  next_to: 'cube' next_to(mug, positive_x): " in out and " rejected (e.g. by " in out
    assert "best-loss fallback used for 3 layout slot(s) in env(s) [2]" in out
    data = json.loads((tmp_path / "placement_diagnostics.json").read_text())
    fill = data["fills"][0]
    assert fill["fallback_envs"] == [2] and fill["available_per_env"] == [3, 3, 3]
    assert fill["batches"][0]["checks"]["next_to"] == {"passed": 6, "evaluated": 9}
    assert fill["batches"][1]["checks"]["next_to"] == {"passed": 0, "evaluated": 3}
    assert fill["advice"].startswith("no candidate met 'cube' next_to(mug, positive_x)")
    assert fill["closest_misses"][0]["check"] == "next_to" and fill["closest_misses"][0]["failed"] == 6
    causes = {r["cause"]: r for r in fill["batches"][1]["rejections"]}
    cause = next(c for c in causes if c.startswith("'cube' next_to(mug, positive_x)"))
    assert causes[cause]["example_env"] == 2 and causes[cause]["example_violation"] > 0.0


def test_the_layout_each_env_holds_says_whether_it_is_a_fallback():
    pool = make(one_env_impossible(), num_envs=3, max_placement_attempts=2)
    source = pool.as_pose_source(pool.object_names)
    assert source.fallback_mask().tolist() == [False, False, True]  # the creation layouts
    pool.next_layouts(torch.tensor([0, 2]))
    assert pool.current_fallback.tolist() == [False, False, True]
    assert pool.current_fallback.tolist() == (~pool.current_passed).tolist()  # here every fallback fails a check


def test_ranking_prefers_fewer_required_failures_then_lower_loss():
    pool = make(one_env_impossible(), num_envs=3, max_placement_attempts=1, min_unique_layouts_per_env=4)
    req = [c for c in pool.check_names if c in pool.required_check_names]
    cols = [pool.check_names.index(c) for c in req]
    fails = (~pool.slot_checks[2][:, cols]).sum(-1)
    loss = pool.slot_loss[2]
    keys = list(zip(fails.tolist(), loss.tolist()))
    assert keys == sorted(keys), keys


def test_no_fallbacks_refuses_the_impossible_env_before_solving():
    # 'c' (16 cm) NextTo the mug at 0.9 m: 0.08 + 0.9 + 0.16 + 2 x 0.05 margins = 1.24 m on the 1.2 m table
    with pytest.raises(PlacementConfigError, match=r"asset 'cube' next_to\(mug, positive_x\): along x .* in env\(s\) "
                                                   r"\[2\] \(where 'cube' is its member 'c'\): 0\.040 m of room is missing"):
        make(one_env_impossible(), num_envs=3, max_placement_attempts=2, allow_best_loss_fallbacks=False)


def test_spawned_members_must_match_the_solved_members():
    pool = PooledObjectPlacer(one_env_impossible(), ObjectPlacerParams(placement_seed=1), num_envs=3,
                              member_indices={"cube": [2, 1, 0]})
    with pytest.raises(ValueError, match=r"RigidObjectSet 'cube': spawned members per env \[2, 1, 0\] differ from "
                                         r"the members placement solves with \[0, 1, 2\]"):
        pool.initialize()


def test_num_envs_must_be_positive():
    with pytest.raises(ValueError, match="num_envs must be a positive integer"):
        PooledObjectPlacer(mug_bowl(), ObjectPlacerParams(), num_envs=0)


# ---- device residency --------------------------------------------------------------------------------------
_HOST_METHODS = ("cpu", "tolist", "item", "numpy", "__int__", "__float__", "__bool__")


def _count_host_reads(monkeypatch) -> dict[str, int]:
    """Counts calls of the tensor methods that read values back to Python (a host sync on a GPU)."""
    counts = dict.fromkeys(_HOST_METHODS, 0)
    for name in _HOST_METHODS:
        orig = getattr(torch.Tensor, name)

        def wrapper(self, *a, _orig=orig, _name=name, **kw):
            counts[_name] += 1
            return _orig(self, *a, **kw)

        monkeypatch.setattr(torch.Tensor, name, wrapper)
    return counts


DEVICES = ["cpu", pytest.param("cuda:0", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU"))]


@pytest.mark.parametrize("device", DEVICES)
def test_pool_tensors_live_on_the_placer_device(device):
    assets = mug_bowl()
    pool = PooledObjectPlacer(assets, ObjectPlacerParams(min_unique_layouts_per_env=3, placement_seed=5), num_envs=4,
                              device=device)
    pool.diagnostics.verbose = False
    pool.initialize()
    dev = torch.device(device)
    tensors = {k: v for k, v in vars(pool).items() if isinstance(v, torch.Tensor)}
    assert {"poses", "slot_passed", "slot_checks", "slot_draw", "next_draw", "cursor", "remaining"} <= set(tensors)
    wrong = {k: str(v.device) for k, v in tensors.items() if v.device.type != dev.type}
    assert not wrong, f"pool tensors off the placer device {device}: {wrong}"
    assert bool(_revalidate(pool, assets).all())
    for ids in ([0, 2], torch.tensor([1, 3]), range(4)):  # lists, CPU tensors and ranges are accepted
        assert pool.next_layouts(ids).device.type == dev.type
    assert pool.current_slot_info["slots"].device.type == dev.type
    assert pool.consumed.tolist() == [2, 2, 2, 2] and pool.remaining.tolist() == [1, 1, 1, 1]
    src = pool.as_pose_source(["bowl"])
    out = src.poses_for_reset(torch.arange(4, device=dev))
    assert out.shape == (4, 1, 7) and out.device.type == dev.type
    torch.testing.assert_close(out[:, 0], pool.current_poses[:, pool.object_names.index("bowl")])


def test_a_reset_without_refill_reads_nothing_back_to_the_host(monkeypatch):
    pool = make(mug_bowl())
    src = pool.as_pose_source(["mug", "bowl"])
    counts = _count_host_reads(monkeypatch)
    out = src.poses_for_reset(torch.arange(4))
    # ``numpy()`` of a CPU tensor is a view, not a read-back: the CPU-only branches of the host copies
    # (kernels/geometry.py: copy_into, copy_rows) use it, and take torch's index ops on a GPU
    assert {k: v for k, v in counts.items() if k != "numpy"} == dict.fromkeys(set(_HOST_METHODS) - {"numpy"}, 0), \
        f"host reads in a queued reset: {counts}"
    monkeypatch.undo()
    torch.testing.assert_close(out, pool.poses[:, 0][:, [pool.object_names.index("mug"),
                                                         pool.object_names.index("bowl")]])


def test_host_reads_of_a_fill_do_not_grow_with_the_env_count(monkeypatch):
    per_fill = {}
    for num_envs in (2, 6):
        pool = make(mug_bowl(), num_envs=num_envs)
        for _ in range(3):  # empty every partition
            pool.next_layouts(torch.arange(num_envs))
        counts = _count_host_reads(monkeypatch)
        pool.next_layouts(torch.arange(num_envs))  # one refill of every env, in one batch
        monkeypatch.undo()
        assert pool.num_fills == 2 and len(pool.diagnostics.fills[-1].batches) == 1
        per_fill[num_envs] = sum(counts.values())
    assert per_fill[2] == per_fill[6], f"host reads per fill grow with the env count: {per_fill}"


def test_a_long_run_keeps_its_diagnostics_bounded(tmp_path, capsys):
    """A training run refills at many resets: every fill used to stay in memory and in the JSON rewritten after
    each fill (quadratic in the run's length). The first fill, the first short ones and the last
    KEEP_RECENT_FILLS stay whole; the others are summed into ``earlier_fills``, and nothing is lost from the sums."""
    from isaaclab_arena.relations.diagnostics.placement_diagnostics import KEEP_RECENT_FILLS

    pool = make(mug_bowl(), num_envs=2, output_dir=str(tmp_path))
    sizes = {}
    total = KEEP_RECENT_FILLS + 60
    for k in range(1, total + 1):
        pool.fill(torch.tensor([k % 2]), "reset_refill")
        if k in (KEEP_RECENT_FILLS + 20, total):
            sizes[k] = (tmp_path / "placement_diagnostics.json").stat().st_size
    diag = pool.diagnostics
    assert pool.num_fills == diag.num_fills == total + 1
    assert [f.fill_index for f in diag.fills] == [0] + list(range(total + 1 - KEEP_RECENT_FILLS, total + 1))
    assert diag.fills[0].reason == "creation"
    data = json.loads((tmp_path / "placement_diagnostics.json").read_text())
    earlier = data["earlier_fills"]
    assert earlier["fills"] == total - KEEP_RECENT_FILLS
    assert earlier["candidates"] >= 3 * earlier["fills"] and earlier["passed"] >= 3 * earlier["fills"]
    assert [f["fill_index"] for f in data["fills"]] == [f.fill_index for f in diag.fills]
    assert sizes[total] <= 1.1 * sizes[KEEP_RECENT_FILLS + 20]  # the file no longer grows with the run
    assert not diag._printed and not diag._alike  # per-fill console state is dropped with its fill


def test_the_first_short_fills_stay_whole_when_old_fills_are_summed(tmp_path):
    """The run's failure summary reads the first fill that stayed short: those are kept whole, with their
    explanations, however long the run; summed fills keep their fallback slots."""
    from isaaclab_arena.environments.run_outcome import placement_outcome
    from isaaclab_arena.relations.diagnostics.placement_diagnostics import KEEP_RECENT_FILLS, KEEP_SHORT_FILLS

    pool = make(one_env_impossible(), num_envs=3, max_placement_attempts=1)
    before = placement_outcome(pool)
    for k in range(2 * KEEP_RECENT_FILLS + 2 * KEEP_SHORT_FILLS):
        pool.fill(torch.tensor([2 if k % 2 else 0]), "reset_refill")  # env 2 can never be placed
    diag = pool.diagnostics
    short = [f.fill_index for f in diag.fills[1:] if f.explanation]
    assert short[:KEEP_SHORT_FILLS] == [2 * i + 2 for i in range(KEEP_SHORT_FILLS)]  # fills 2, 4, ...: env 2
    assert diag.fills[0].fill_index == 0 and diag.fills[0].explanation
    assert placement_outcome(pool) == before  # the summary still names the first short fill
    assert diag.earlier_fills["fills"] == diag.num_fills - len(diag.fills)
    assert diag.earlier_fills["fallback_slots"] > 0

"""The no_overlap pair table (``relations/compiler/pair_tables.py``), built with array operations, against the plain
per-pair rules it must follow: every movable against the movables after it, then the fixed colliders (a
Background only with MESH collision); exempt pairs left out; a push axis closed only when both objects are pinned
on it (a fixed collider always is), and a pair closed on every axis pushed in x and y; a pair's own clearance
where it has one. Each movable object's pair list (``collision_geometry.pair_lists``) against a per-object
reference, pairs reordered as the kernels have them included; the compile's pair modes against the per-pair rule.
Also: a scene of 1,000 objects compiles its ~500,000 pairs as the rule (no row per pair)."""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp

from isaaclab_arena.assets.asset import Background, Object
from isaaclab_arena.assets.bounding_box import AxisAlignedBoundingBox
from isaaclab_arena.assets.collision_mode import CollisionMode
from isaaclab_arena.relations.compiler.collision_geometry import pair_lists
from isaaclab_arena.relations.compiler.pair_rule import RulePairs
from isaaclab_arena.relations.compiler.pair_tables import overlap_pairs
from isaaclab_arena.relations.kernels.pair_rule import pair_number, rule_pair_of
from isaaclab_arena.relations.kernels.tables import vec6i
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams


def _reference(n_mov, fixed, params, pinned, exempt, pair_clearance):
    """The rules one pair at a time, in plain Python."""
    colliders = [n_mov + f for f, a in enumerate(fixed)
                 if not isinstance(a, Background) or a.collision_mode == CollisionMode.MESH]
    pairs, rows = [], []
    for i in range(n_mov):
        for j in list(range(i + 1, n_mov)) + colliders:
            key = (min(i, j), max(i, j))
            if key in exempt:
                continue
            axes = [0.0 if (pinned[i][k] and (j >= n_mov or pinned[j][k])) else 1.0 for k in range(3)]
            if not any(axes):
                axes = [1.0, 1.0, 0.0]
            pairs.append((i, j))
            rows.append([pair_clearance.get(key, params.clearance_m)] + axes)
    return np.array(pairs, np.int32).reshape(-1, 2), np.array(rows, np.float32).reshape(-1, 4)


def _box(name):
    return Object(name, bounding_box=AxisAlignedBoundingBox.from_size((0.1, 0.1, 0.1)))


def _background(name, mode):
    bg = Background(name, bounding_box=AxisAlignedBoundingBox.from_size((1.0, 1.0, 0.1)))
    bg.collision_mode = mode
    return bg


def _random_scene(seed: int, n_mov: int, n_exempt: int, n_clearance: int):
    """(n_mov, n_all, fixed, params, pinned, exempt, clearance) of a random scene: a fixed box, a BBOX background
    (no collider), a MESH one and a wall; random pinned axes (objects 0 and 1 pinned on every axis), exempt pairs
    and pairs with a clearance of their own."""
    rng = np.random.default_rng(seed)
    fixed = [_box("crate"), _background("floor", CollisionMode.BBOX), _background("shelf", CollisionMode.MESH),
             _box("wall")]
    params = RelationSolverParams(clearance_m=0.01)
    pinned = rng.random((n_mov, 3)) < 0.4
    pinned[0] = pinned[1] = True  # a pair pinned on every axis
    n_all = n_mov + len(fixed)
    everything = [(i, j) for i in range(n_mov) for j in range(i + 1, n_all)]
    exempt = {everything[k] for k in rng.choice(len(everything), n_exempt, replace=False)} - {(0, 1)}
    clearance = {everything[k]: float(rng.uniform(0.0, 0.05))
                 for k in rng.choice(len(everything), n_clearance, replace=False)}
    return n_mov, n_all, fixed, params, pinned, exempt, clearance


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_table_follows_the_per_pair_rules(seed):
    n_mov, n_all, fixed, params, pinned, exempt, clearance = _random_scene(seed, 9, 6, 5)
    pairs, rows = overlap_pairs(n_mov, n_all, fixed, params, pinned, exempt, clearance)
    want_pairs, want_rows = _reference(n_mov, fixed, params, pinned, exempt, clearance)
    np.testing.assert_array_equal(pairs, want_pairs)
    np.testing.assert_array_equal(rows, want_rows)
    # the rules show in the outcome: the BBOX background is no collider, exempt pairs are out, (0, 1) is pushed
    # in x and y only, a pair with a clearance of its own has it
    assert n_mov + 1 not in pairs[:, 1] and n_mov + 2 in pairs[:, 1]
    assert not ({tuple(p) for p in pairs.tolist()} & exempt)
    assert rows[pairs.tolist().index([0, 1]), 1:].tolist() == [1.0, 1.0, 0.0]
    for key, value in clearance.items():
        if key not in exempt and key[1] != n_mov + 1:
            assert rows[pairs.tolist().index(list(key)), 0] == np.float32(value)


def test_a_scene_without_pairs_gives_empty_tables():
    pairs, rows = overlap_pairs(1, 1, [], RelationSolverParams(), np.zeros((1, 3), bool), set(), {})
    assert pairs.shape == (0, 2) and rows.shape == (0, 4)


@pytest.mark.slow
def test_a_thousand_objects_compile_their_half_million_pairs():
    import sys
    import os

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "scripts"))
    from bench_scale_refill import many_boxes

    from isaaclab_arena.relations.object_placer import ObjectPlacer
    from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams

    problem = ObjectPlacer(ObjectPlacerParams(placement_seed=0)).compile(many_boxes(1000), 2)
    assert len(problem.pairs) == 1000 * 999 // 2  # box pairs; the table is an anchor and a support, not a collider
    # kept as the rule (compiler/pair_rule.py): no row per pair on the host or the device (a list of 500,000 tuples
    # kept 53 MB: docs/BENCHMARKS.md), the whole int32 array on demand
    assert isinstance(problem.pairs, RulePairs) and problem.tables.pair_rule == 1
    assert problem.tables.adj.shape[0] == problem.tables.pair_i.shape[0] == 1
    assert problem.pairs[0].tolist() == [0, 1] and problem.pairs[-1].tolist() == [998, 999]
    whole = np.asarray(problem.pairs)
    assert whole.dtype == np.int32 and whole.shape == (499500, 2) and whole[1000].tolist() == [1, 3]
    assert problem.pair_names(len(problem.pairs) - 1) == (problem.object_names[998], problem.object_names[999])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_each_object_lists_its_pairs_in_increasing_order(seed):
    rng = np.random.default_rng(seed)
    n_mov, n_all = 7, 10
    pairs = np.array([(i, j) for i in range(n_mov) for j in range(i + 1, n_all) if rng.random() < 0.7], np.int32)
    pairs = pairs[rng.permutation(len(pairs))]  # any order: the OBB / MESH pairs go after the boxes
    flat, starts = pair_lists(pairs, n_mov)
    assert starts.tolist()[0] == 0 and len(starts) == n_mov + 1 and starts[-1] == len(flat)
    for c in range(n_mov):
        want = [k for k, (i, j) in enumerate(pairs.tolist()) if c in (i, j)]  # a fixed object lists nothing
        assert flat[starts[c]:starts[c + 1]].tolist() == want, c
    empty_flat, empty_starts = pair_lists(np.zeros((0, 2), np.int32), 3)
    assert empty_flat.size == 0 and empty_starts.tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize("scene, random_yaw", [("crowded14_yaw", True), ("chain4_yaw", True), ("clutter", False),
                                                ("boxes10", False), ("all_relations", True)])
def test_pair_modes_follow_the_per_pair_rule(scene, random_yaw):
    """Boxes of which one turns about Z and neither tilts are tested turned (OBB); the others stay axis-aligned;
    axis-aligned pairs first (the kernels' fast loop), each object's pair list pointing at its pairs. all_relations
    with random yaw pairs turning objects with tilted ones (FaceTo, RandomAroundSolution), which stay on boxes."""
    from isaaclab_arena.benchmarks.scenes import SCENE_PLACER_PARAMS, SCENES
    from isaaclab_arena.relations.compiler.collision_geometry import rotation_kind
    from isaaclab_arena.relations.compiler.compile_problem import _SceneCompiler
    from isaaclab_arena.relations.kernels.tables import ObjectColumn
    from isaaclab_arena.relations.object_placer import ObjectPlacer
    from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams

    params = ObjectPlacerParams(placement_seed=0,
                                **{**SCENE_PLACER_PARAMS.get(scene, {}), "random_yaw_init": random_yaw})
    assets = SCENES[scene]()
    problem = ObjectPlacer(params).compile(assets, 2)
    sc = _SceneCompiler(assets, 2, 0, params)
    kind = [rotation_kind(sc, k) for k in range(len(sc.objects))]
    modes = [problem.pair_mode(k) for k in range(len(problem.pairs))]
    want = ["obb" if "tilted" not in (kind[i], kind[j]) and "yawed" in (kind[i], kind[j]) else "aabb"
            for i, j in problem.pairs.tolist()]
    assert modes == want
    assert modes == sorted(modes)  # "aabb" < "obb": the axis-aligned pairs first
    assert problem.tables.n_box_pairs == modes.count("aabb")
    if scene != "boxes10":
        assert "obb" in modes  # the scene turns something
    if scene == "all_relations":  # a turning object beside a tilted one: the pair stays axis-aligned
        assert any("tilted" in (kind[i], kind[j]) and "yawed" in (kind[i], kind[j]) and mode == "aabb"
                   for (i, j), mode in zip(problem.pairs.tolist(), modes))
    adj, rows = problem.tables.adj.numpy(), problem.tables.obj_i.numpy()
    for c in range(problem.num_objects):
        listed = adj[rows[c][ObjectColumn.ADJ0]:rows[c][ObjectColumn.ADJ1]].tolist()
        assert listed == [k for k, (i, j) in enumerate(problem.pairs.tolist()) if c in (i, j)]


# ------------------------------------------------------------------------------------- pairs by rule
def _rule_and_table(seed):
    """A random scene's pair table (``overlap_pairs``) and its rule (``pair_rule``) from the same inputs."""
    from isaaclab_arena.relations.compiler.pair_rule import pair_rule
    from isaaclab_arena.relations.compiler.pair_tables import fixed_colliders

    n_mov, n_all, fixed, params, pinned, exempt, clearance = _random_scene(seed, 11, 9, 6)
    exempt |= {(2, 3), (2, n_mov), (2, n_mov + 1)}  # an exempt movable, collider and non-collider partner
    clearance[(2, 3)] = 0.2  # a clearance of its own on an exempt pair: no pair, so not the largest clearance
    table = overlap_pairs(n_mov, n_all, fixed, params, pinned, exempt, clearance)
    rule = pair_rule(n_mov, n_all, fixed_colliders(n_mov, fixed, params), params, pinned, exempt, clearance)
    return table, rule


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pairs_by_rule_are_the_listed_pairs(seed):
    (pairs, rows), rule = _rule_and_table(seed)
    assert len(rule) == len(pairs)
    np.testing.assert_array_equal(np.asarray(rule), pairs)
    for k in range(len(pairs)):
        assert rule[k].tolist() == pairs[k].tolist(), k
    assert rule[-1].tolist() == pairs[-1].tolist()
    assert rule.objects() == np.unique(pairs).tolist()
    assert rule.max_clearance() == float(rows[:, 0].max())
    for bad in (len(pairs), -len(pairs) - 1):
        with pytest.raises(IndexError):
            rule[bad]
    with pytest.raises(TypeError):
        rule[0:2]


@pytest.mark.parametrize("seed", [0, 1])
def test_the_kernels_rule_gives_each_pair_its_row_and_number(seed):
    """The device functions (``kernels/pair_rule.py``) on every (placed object, object): a pair exactly where the
    table lists one, with its clearance, push axes and number; no pair elsewhere."""
    (pairs, rows), rule = _rule_and_table(seed)

    @wp.kernel(enable_backward=False)
    def probe(rule_i: wp.array(dtype=vec6i), rule_row: wp.array(dtype=int), rule_ex: wp.array(dtype=int),
              rule_clj: wp.array(dtype=int), rule_clv: wp.array(dtype=float), clearance: float, n_mov: int,
              out_i: wp.array2d(dtype=int), out_f: wp.array2d(dtype=float)):
        a, c = wp.tid()
        ok, i, j, cl, axes = rule_pair_of(rule_i, rule_ex, rule_clj, rule_clv, clearance, a, c)
        out_i[a, c] = -1
        if ok:
            out_i[a, c] = pair_number(n_mov, rule_i, rule_row, rule_ex, i, j)
            out_f[a, c * 4 + 0] = cl
            out_f[a, c * 4 + 1] = axes[0]
            out_f[a, c * 4 + 2] = axes[1]
            out_f[a, c * 4 + 3] = axes[2]

    def arr(values, dtype):
        values = np.asarray(values)
        return wp.array(values if values.size else np.zeros(1, values.dtype), dtype=dtype, device="cpu")

    n_mov, n_all = rule.n_mov, rule.n_all
    out_i = wp.zeros((n_mov, n_all), dtype=int, device="cpu")
    out_f = wp.zeros((n_mov, n_all * 4), dtype=float, device="cpu")
    wp.launch(probe, dim=(n_mov, n_all), device="cpu",
              inputs=[wp.array(rule.rows, dtype=vec6i, device="cpu"), arr(rule.row_start.astype(np.int32), int),
                      arr(rule.exempt, int), arr(rule.clear_j, int), arr(rule.clear_v, float), rule.clearance,
                      n_mov, out_i, out_f])
    got, got_f = out_i.numpy(), out_f.numpy().reshape(n_mov, n_all, 4)
    want = np.full((n_mov, n_all), -1)
    for k, (i, j) in enumerate(pairs.tolist()):
        want[i, j] = k
        if j < n_mov:
            want[j, i] = k  # either order of two placed objects
        for a, c in ((i, j), (j, i)) if j < n_mov else ((i, j),):
            np.testing.assert_array_equal(got_f[a, c], rows[k], err_msg=f"pair {k} ({a}, {c})")
    np.testing.assert_array_equal(got, want)

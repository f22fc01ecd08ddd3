"""The failure tally's pairs (``diagnostics/failure_explanation.PairMisses``): kept sparse, per (env, pair) that a
candidate's worst pair failed, and read back per pair over some envs exactly as a dense (num_envs, pairs) table
would be (plain numpy here): counts summed over the envs (an env listed twice counts twice), the smallest depth,
and the env of that depth (the first listed to have it). Its size follows the failing candidates, not envs x pairs.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from isaaclab_arena.relations.diagnostics.failure_explanation import FailureTally, PairMisses


def _dense(batches, num_envs: int, num_pairs: int):
    count = np.zeros((num_envs, num_pairs), np.int64)
    depth = np.full((num_envs, num_pairs), np.inf, np.float32)
    for env, pair, d in batches:
        for e, p, x in zip(env.tolist(), pair.tolist(), d.tolist()):
            count[e, p] += 1
            depth[e, p] = min(depth[e, p], np.float32(x))
    return count, depth


def _dense_over(count, depth, sel):
    rows_c, rows_d = count[sel], depth[sel]
    total = rows_c.sum(0)
    pairs = np.flatnonzero(total)
    best = rows_d.min(0)
    first = rows_d.argmin(0)  # numpy: the first row with the minimum
    return pairs.tolist(), total[pairs].tolist(), best[pairs].tolist(), np.asarray(sel)[first[pairs]].tolist()


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_pair_misses_read_back_as_a_dense_table(seed):
    rng = np.random.default_rng(seed)
    E, P = 9, 23
    misses = PairMisses(P, "cpu")
    batches = []
    for _ in range(4):  # several batches merge into the same entries
        n = int(rng.integers(0, 40))
        env = torch.from_numpy(rng.integers(0, E, n))
        pair = torch.from_numpy(rng.integers(0, P, n))
        depth = torch.from_numpy(np.round(rng.uniform(0.0, 0.05, n), 2).astype(np.float32))  # ties on purpose
        misses.add(env, pair, depth)
        batches.append((env, pair, depth))
    count, depth = _dense(batches, E, P)
    assert misses.keys.numel() == np.count_nonzero(count)  # one entry per (env, pair) met, no more
    assert misses.keys.tolist() == sorted(set(misses.keys.tolist()))
    for sel in (list(range(E)), [5, 1, 7], [3, 3, 0], rng.permutation(E)[:4].tolist(), [8]):
        got = misses.over(torch.tensor(sel), E)
        want = _dense_over(count, depth, sel)
        assert got[0] == want[0] and got[1] == want[1] and got[3] == want[3], sel
        np.testing.assert_array_equal(np.float32(got[2]), np.float32(want[2]))


def test_pair_misses_of_envs_without_any_are_empty():
    misses = PairMisses(5, "cpu")
    assert misses.over(torch.tensor([0, 1]), 3) == ([], [], [], [])
    misses.add(torch.tensor([2]), torch.tensor([4]), torch.tensor([0.01]))
    assert misses.over(torch.tensor([0, 1]), 3) == ([], [], [], [])
    pairs, counts, depths, envs = misses.over(torch.tensor([1, 2]), 3)
    assert (pairs, counts, envs) == ([4], [1], [2]) and depths == [pytest.approx(0.01)]


@pytest.mark.slow  # a 300-box scene's failing fill: about 11 s
def test_a_failing_fill_of_a_large_scene_tallies_its_candidates_not_every_pair():
    """300 boxes crowded on a table, 4 envs: the tally holds at most one entry per failing candidate and pair
    check (a dense table held 4 x 44,850 per check), and its explanation names the pairs of the batch's worst
    pairs with their counts and depths, as recomputed here from the batch itself."""
    import os
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "scripts"))
    import bench_scale_refill as scale

    from isaaclab_arena.relations.object_placer import ObjectPlacer
    from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
    from isaaclab_arena.relations.relation_solver_params import RelationSolverParams

    density = scale.DENSITY
    scale.DENSITY = 0.5
    try:
        assets = scale.many_boxes(300)
    finally:
        scale.DENSITY = density
    placer = ObjectPlacer(ObjectPlacerParams(placement_seed=1, solver_params=RelationSolverParams(verbose=False,
                                                                                                  max_iters=20)))
    problem = placer.compile(assets, 4)
    env = torch.arange(4).repeat_interleave(3)
    vb = placer.place_problem(problem, env, torch.arange(12))
    assert not bool(vb.passed.any())  # too crowded for 20 iterations
    tally = FailureTally()
    tally.add(vb)
    for check, misses in tally.pair_misses.items():
        assert misses.keys.numel() <= len(vb), check
    misses, _ = tally.explain(range(4))
    b = vb.solved
    pair, depth = b.overlap_pair.numpy(), b.overlap_depth.numpy()
    failed = depth > problem.slack
    want = {}
    for e, k, d in zip(env.numpy()[failed], pair[failed], depth[failed]):
        n, best, at = want.get(int(k), (0, np.inf, -1))
        want[int(k)] = (n + 1, min(best, float(d)), at if best <= d else int(e))
    got = {m.cause: (m.failed, m.violation_m, m.env_id) for m in misses if m.check == "no_overlap"}
    assert len(got) == len(want) > 0
    for k, (n, best, at) in want.items():
        a, c = problem.pair_names(k)
        assert got[f"'{a}' overlaps '{c}'"] == (n, pytest.approx(best), at)

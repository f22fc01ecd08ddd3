"""The broad phase of box scenes (issue 21, ``kernels/broad_phase.py``): scenes of ``SWEEP_FROM_OBJECTS`` or more
placed objects visit their box pairs by sort and sweep along X. Shown here: it gives the verdicts of the full pair
walk on the same poses (bad ones included), every layout it calls valid is valid by an independent float64
check, wide objects are not missed, and its results do not depend on where the sort started."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from isaaclab_arena.assets.asset import Object
from isaaclab_arena.assets.bounding_box import AxisAlignedBoundingBox
from isaaclab_arena.benchmarks.scenes import cuboid
from isaaclab_arena.relations.compiler import pair_tables
from isaaclab_arena.relations.object_placer import ObjectPlacer
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams
from isaaclab_arena.relations.relations import IsAnchor, On
from isaaclab_arena.relations.solving.evaluation import evaluate_poses
from isaaclab_arena.utils.pose import Pose

BOX = (0.06, 0.06, 0.05)
CLEARANCE = 0.01  # the solver's default clearance_m between placed objects


def boxes_on_a_table(n: int, density: float, wide: tuple | None = None) -> list:
    """A table sized so that ``n`` 6 x 6 cm boxes cover ``density`` of its top (1.5 : 1), the boxes On it, and
    optionally one more box of size ``wide`` (named ``wide``)."""
    area = n * BOX[0] * BOX[1] / density
    length = math.sqrt(area * 1.5)
    table = Object("table", bounding_box=AxisAlignedBoundingBox.from_size((length, area / length, 0.75)),
                   initial_pose=Pose((0.0, 0.0, 0.375)))
    table.add_relation(IsAnchor())
    objects = [table]
    for i in range(n):
        box = cuboid(f"box_{i}", BOX)
        box.add_relation(On(table))
        objects.append(box)
    if wide is not None:
        box = cuboid("wide", wide)
        box.add_relation(On(table))
        objects.append(box)
    return objects


def placer(seed: int = 1234) -> ObjectPlacer:
    return ObjectPlacer(ObjectPlacerParams(placement_seed=seed, solver_params=RelationSolverParams(verbose=False)),
                        extensions=[])


def compile_both(assets, num_envs: int, monkeypatch):
    """(problem with the broad phase, the same problem walking every pair)."""
    pl = placer()
    swept = pl.compile(assets, num_envs)
    monkeypatch.setattr(pair_tables, "SWEEP_FROM_OBJECTS", 10**6)
    full = placer().compile(assets, num_envs)
    monkeypatch.undo()
    assert swept.tables.sweep == 1 and full.tables.sweep == 0
    return pl, swept, full


def min_gaps(positions: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """(B,) the smallest gap (m) between the axis-aligned boxes of any two objects of each layout, float64:
    boxes apart along X or Y by at least the gap (negative: overlapping)."""
    p = positions.astype(np.float64)
    half = sizes.astype(np.float64) / 2
    dx = np.abs(p[:, :, None, 0] - p[:, None, :, 0]) - (half[None, :, None, 0] + half[None, None, :, 0])
    dy = np.abs(p[:, :, None, 1] - p[:, None, :, 1]) - (half[None, :, None, 1] + half[None, None, :, 1])
    gap = np.maximum(dx, dy)
    iu = np.triu_indices(p.shape[1], 1)
    return gap[:, iu[0], iu[1]].min(axis=1)


def test_scenes_from_the_threshold_on_use_it_and_smaller_ones_walk_every_pair():
    n = pair_tables.SWEEP_FROM_OBJECTS
    assert placer().compile(boxes_on_a_table(n, 0.12), 1).tables.sweep == 1
    assert placer().compile(boxes_on_a_table(n - 1, 0.12), 1).tables.sweep == 0
    table = pair_tables.box_pair_index([(0, 1), (0, 3), (1, 2)], 2, 3, 4)
    assert table.tolist() == [[-1, 0, -1, 1], [0, -1, -1, -1], [-1, -1, -1, -1]]  # (1, 2) is not a box pair


def test_solved_layouts_are_valid_by_an_independent_check_and_agree_with_the_full_walk(monkeypatch):
    assets = boxes_on_a_table(40, 0.3, wide=(0.5, 0.06, 0.05))  # dense: the solver iterates
    pl, swept, full = compile_both(assets, 128, monkeypatch)
    env = torch.arange(128)
    vb = pl.place_problem(swept, env, env * 0 + 5)
    assert int(vb.iterations.max()) > 0  # the penalties' sweep ran, not only the initial draws'
    sizes = np.array([BOX] * 40 + [(0.5, 0.06, 0.05)])
    gaps = min_gaps(vb.positions.numpy(), sizes)
    passed = vb.passed.numpy()
    assert passed.mean() > 0.5
    assert (gaps[passed] >= CLEARANCE - 1e-5).all()  # what it calls valid is valid
    # the same poses through the full pair walk: the same verdicts, the same loss up to the order of its sums
    ev = pl.validate(full, evaluate_poses(full, env, vb.positions, vb.rotations))
    assert torch.equal(ev.passed, vb.passed)
    torch.testing.assert_close(ev.loss, vb.loss, rtol=1e-5, atol=1e-6)


def test_bad_layouts_get_the_verdicts_and_worst_pairs_of_the_full_walk(monkeypatch):
    assets = boxes_on_a_table(30, 0.12, wide=(0.5, 0.06, 0.05))
    pl, swept, full = compile_both(assets, 64, monkeypatch)
    env = torch.arange(64)
    good = pl.place_problem(swept, env, env).positions
    bad = good.clone()
    rng = np.random.default_rng(0)
    for b in range(64):  # two overlaps per layout: a box into its neighbour, a box under the wide one
        i, j = rng.choice(30, 2, replace=False)
        bad[b, i, :2] = bad[b, j, :2] + torch.tensor([0.03, 0.01])
        bad[b, 30 - 1 - (b % 5), :2] = bad[b, 30, :2] + torch.tensor([0.2 - 0.04 * (b % 3), 0.0])
    rot = torch.zeros(64, 31, 4)
    rot[..., 3] = 1.0
    a = pl.validate(swept, evaluate_poses(swept, env, bad, rot))
    f = pl.validate(full, evaluate_poses(full, env, bad, rot))
    assert not bool(a.passed.any()) and not bool(f.passed.any())
    sizes = np.array([BOX] * 30 + [(0.5, 0.06, 0.05)])
    assert (min_gaps(bad.numpy(), sizes) < 0).all()  # independently: overlapping
    torch.testing.assert_close(a.solved.overlap_depth, f.solved.overlap_depth)
    torch.testing.assert_close(a.solved.clearance_depth, f.solved.clearance_depth)
    assert torch.equal(a.check_results["no_overlap"], f.check_results["no_overlap"])


@pytest.mark.parametrize("seed", [0, 1])
def test_a_wide_object_overlapping_boxes_far_down_the_list_is_found(seed, monkeypatch):
    """The wide box's low X sorts it before boxes it covers that are separated from it in the list by others."""
    assets = boxes_on_a_table(12, 0.12, wide=(0.6, 0.06, 0.05))
    pl, swept, full = compile_both(assets, 1, monkeypatch)
    pos = torch.zeros(1, 13, 3)
    pos[0, :12, 0] = torch.linspace(-0.3, 0.3, 12) + 0.001 * seed  # a row of boxes along X at y = 0.2
    pos[0, :12, 1] = 0.2
    pos[0, 12] = torch.tensor([0.0, 0.2 - 0.05 + 0.005 * seed, 0.0])  # the wide box overlaps the row's middle
    pos[..., 2] = 0.75 + 0.01 + 0.025
    rot = torch.zeros(1, 13, 4)
    rot[..., 3] = 1.0
    a = pl.validate(swept, evaluate_poses(swept, torch.zeros(1, dtype=torch.long), pos, rot))
    f = pl.validate(full, evaluate_poses(full, torch.zeros(1, dtype=torch.long), pos, rot))
    assert not bool(a.check_results["no_overlap"][0]) and not bool(f.check_results["no_overlap"][0])
    torch.testing.assert_close(a.solved.overlap_depth, f.solved.overlap_depth)


def test_results_do_not_depend_on_the_batch_split_or_the_thread_count():
    assets = boxes_on_a_table(24, 0.25)
    one = ObjectPlacer(ObjectPlacerParams(placement_seed=9, solver_params=RelationSolverParams(verbose=False,
                                                                                              cpu_threads=1)),
                       extensions=[])
    two = ObjectPlacer(ObjectPlacerParams(placement_seed=9, solver_params=RelationSolverParams(verbose=False,
                                                                                              cpu_threads=2)),
                       extensions=[])
    env = torch.arange(512) % 64
    draw = torch.arange(512) // 64
    a = one.place_problem(one.compile(assets, 64), env, draw)
    b = two.place_problem(two.compile(assets, 64), env, draw)
    c = two.place_problem(two.compile(assets, 64), env[:7], draw[:7])
    assert torch.equal(a.positions, b.positions) and torch.equal(a.loss, b.loss)
    assert torch.equal(a.positions[:7], c.positions) and torch.equal(a.loss[:7], c.loss)

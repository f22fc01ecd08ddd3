"""Layouts spread like uniform sampling (against brute-force rejection sampling of the same scene, which is the
truth of "uniform over the valid layouts"), never pile up on the border of their feasible range, and relation
chains solve: a NextTo chain with cross_position_ratio, a row tied by AlignWith and NextTo inside
PositionLimitsBox, and the chain with random yaw each reach at least 90 % valid candidates."""

from __future__ import annotations

import os
import sys

import pytest
import torch

from isaaclab_arena import ARENA_ROOT
from isaaclab_arena.relations.object_placer import ObjectPlacer
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams
from isaaclab_arena.benchmarks.scenes import SCENE_PLACER_PARAMS, SCENES

sys.path.insert(0, os.path.join(ARENA_ROOT, "scripts"))
import placement_spread as spread  # noqa: E402


@pytest.fixture(scope="module")
def boxes3():
    assets = SCENES["boxes3"]()
    reference = spread.rejection_layouts(assets, 3000, seed=1)
    solved = spread.solver_layouts(assets, 6000, seed=1)
    lo, hi, z = spread.feasible_ranges(ObjectPlacer(ObjectPlacerParams(placement_seed=0)), assets)
    return assets, reference, solved, lo, hi, z


def test_solved_layouts_spread_like_rejection_sampling(boxes3):
    assets, reference, solved, lo, hi, _ = boxes3
    assert len(reference) == 3000 and len(solved) >= 5990
    # 3000 vs 6000 samples in 20 bins: sampling noise alone gives a TV of about 0.03
    assert spread.spread_tv(solved, reference, lo, hi) <= 0.05
    # the reference hits a 1 mm border band about 0.6 % of the time; solved layouts may not pile up there
    ref_border = spread.border_frac(reference, lo, hi)
    assert spread.border_frac(solved, lo, hi) <= 2 * ref_border + 0.005


def test_the_spread_measures_can_fail(boxes3):
    """Layouts clamped onto the border (what drawing on the whole support then clamping does) fail both."""
    assets, reference, solved, lo, hi, _ = boxes3
    clamped = solved.clone()
    wide = lo + (hi - lo) * (torch.rand_like(clamped[..., :2]) * 1.6 - 0.3)  # 30 % of draws beyond each edge
    clamped[..., :2] = torch.maximum(torch.minimum(wide, hi), lo)
    assert spread.border_frac(clamped, lo, hi) > 0.2
    assert spread.spread_tv(clamped, reference, lo, hi) > 0.1


def test_rejection_reference_is_valid_and_feasible_ranges_are_exact(boxes3):
    assets, reference, _, lo, hi, z = boxes3
    xy = reference[..., :2]
    assert bool(((xy >= lo - 1e-6) & (xy <= hi + 1e-6)).all())  # every valid layout lies in the feasible range
    assert torch.allclose(reference[..., 2], z.expand_as(reference[..., 2]))
    # and fills it: each object's X reaches within 2 cm of both ends
    assert bool(((xy.amin(0) - lo) < 0.02).all()) and bool(((hi - xy.amax(0)) < 0.02).all())


@pytest.mark.parametrize("name", ["chain4", "row5", "chain4_yaw"])
def test_chains_and_rows_reach_ninety_percent_valid(name):
    pl = ObjectPlacer(ObjectPlacerParams(placement_seed=3, solver_params=RelationSolverParams(verbose=False),
                                         **SCENE_PLACER_PARAMS.get(name, {})))
    env = torch.arange(512) % 64
    vb = pl.place_batch(SCENES[name](), env, torch.arange(512) // 64, num_envs=64)
    assert float(vb.passed.float().mean()) >= 0.9
    # the chain really is a chain: each link beside the previous one on +X
    pos = vb.positions[vb.passed]
    assert bool((pos[:, 1:, 0] > pos[:, :-1, 0] + 0.05).all())

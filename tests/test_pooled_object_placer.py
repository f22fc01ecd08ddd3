"""PooledObjectPlacer pool logic (no simulator): partitions, queue order, refills, fallbacks, seeds.

The placer here is a small deterministic stand-in that follows the ObjectPlacer contract of
docs/ARCHITECTURE.md: candidate (env, draw) is a pure function of its ids; ``fail_envs`` never pass
``no_overlap``; every 3rd draw of other envs fails ``on_relation``. The real solver path is tested in
tests/test_pooled_env.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
import torch

from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.relations.pooled_object_placer import PooledObjectPlacer


@dataclass
class Batch:
    object_names: list
    positions: torch.Tensor
    rotations: torch.Tensor
    loss: torch.Tensor
    check_results: dict
    required_failures: torch.Tensor
    optional_failures: torch.Tensor
    passed: torch.Tensor


class ContractPlacer:
    def __init__(self, fail_envs=(), seed=0):
        self.fail_envs = set(fail_envs)
        self.seed = seed
        self.calls = []

    def place_batch(self, assets, env_ids, draw_ids, num_envs, device="cpu"):
        self.calls.append((env_ids.clone(), draw_ids.clone()))
        e, d = env_ids.double(), draw_ids.double()
        x = torch.sin(e * 12.9898 + d * 78.233 + self.seed) * 0.3
        y = torch.cos(e * 3.1 + d * 1.7 + self.seed) * 0.2
        pos = torch.stack([x, y, torch.full_like(x, 0.8)], -1).float().unsqueeze(1)
        rot = torch.tensor([0.0, 0.0, 0.0, 1.0]).expand(len(env_ids), 1, 4).clone()
        on_ok = (draw_ids % 3) != 2
        overlap_ok = ~torch.isin(env_ids, torch.tensor(sorted(self.fail_envs), dtype=torch.long))
        checks = {"on_relation": on_ok, "no_overlap": overlap_ok}
        req = (~on_ok).long() + (~overlap_ok).long()
        loss = (d * 0.001 + (1 - overlap_ok.double())).float()
        return Batch(["mug"], pos, rot, loss, checks, req, torch.zeros_like(req), req == 0)


def make(num_envs=4, placer=None, **kw):
    params = ObjectPlacerParams(**{"min_unique_layouts_per_env": 3, "max_placement_attempts": 4, **kw})
    pool = PooledObjectPlacer([], params, num_envs=num_envs, placer=placer or ContractPlacer())
    pool.initialize()
    return pool


def test_every_partition_is_filled_with_passing_layouts_first():
    pool = make()
    assert pool.remaining.tolist() == [3, 3, 3, 3]
    assert bool(pool.slot_passed.all()) and not bool(pool.slot_fallback.any())
    # the candidate of (env, draw 2) fails on_relation, so each env needed a second batch
    assert pool.next_draw.tolist() == [6, 6, 6, 6]


def test_resets_take_the_next_queued_layout_and_refill_only_empty_partitions():
    pool = make()
    first = pool.poses.clone()
    got = [pool.next_layouts(torch.arange(4)) for _ in range(3)]
    for k in range(3):
        torch.testing.assert_close(got[k], first[:, k])
    assert pool.num_fills == 1
    pool.next_layouts(torch.tensor([2]))  # env 2's partition is empty: refilled during this reset
    assert pool.num_fills == 2 and pool.diagnostics.fills[-1].envs == [2]
    assert pool.remaining.tolist() == [0, 0, 2, 0]


def test_partial_reset_consumes_only_the_reset_envs():
    pool = make()
    pool.next_layouts(torch.tensor([1, 3]))
    assert pool.consumed.tolist() == [0, 1, 0, 1]
    assert pool.remaining.tolist() == [3, 2, 3, 2]


def test_resolve_on_reset_false_keeps_the_creation_layout():
    pool = make(resolve_on_reset=False)
    creation = pool.creation_poses.clone()
    for _ in range(5):
        torch.testing.assert_close(pool.next_layouts(torch.arange(4)), creation)
    assert pool.num_fills == 1


def test_layouts_of_an_env_do_not_depend_on_env_count_or_other_envs():
    a = make(num_envs=2)
    b = make(num_envs=5)
    torch.testing.assert_close(a.poses[:2], b.poses[:2])
    for _ in range(4):  # the 4th reset refills env 0: in `a` alone, in `b` together with four other envs
        la = a.next_layouts(torch.tensor([0]))
        lb = b.next_layouts(torch.arange(5))
    torch.testing.assert_close(la[0], lb[0])
    assert a.diagnostics.fills[-1].envs == [0] and b.diagnostics.fills[-1].envs == [0, 1, 2, 3, 4]


def test_fallbacks_fill_impossible_envs_and_are_reported(tmp_path, capsys):
    pool = PooledObjectPlacer([], ObjectPlacerParams(min_unique_layouts_per_env=3, max_placement_attempts=2),
                              num_envs=3, output_dir=str(tmp_path), placer=ContractPlacer(fail_envs={1}))
    pool.initialize()
    assert pool.fallback_envs == {1}
    assert bool(pool.slot_fallback[1].all()) and not bool(pool.slot_fallback[[0, 2]].any())
    out = capsys.readouterr().out
    assert "[placement] Validated 9 candidate layout(s); passed per check: on_relation=6/9, no_overlap=6/9" in out
    assert "best-loss fallback used for 3 layout slot(s) in env(s) [1]" in out
    data = json.loads((tmp_path / "placement_diagnostics.json").read_text())
    assert data["fills"][0]["fallback_envs"] == [1]
    assert data["fills"][0]["batches"][0]["checks"]["no_overlap"] == {"passed": 6, "evaluated": 9}


def test_no_fallbacks_fails_naming_env_and_checks():
    with pytest.raises(RuntimeError, match=r"Placement pool could not fill 3 layouts per env after 2 solve batches\. "
                                           r"Available per env: \[3, 0, 3\].*env 1: failed .*no_overlap"):
        make(num_envs=3, placer=ContractPlacer(fail_envs={1}), max_placement_attempts=2, allow_best_loss_fallbacks=False)


def test_ranking_prefers_fewer_required_failures_then_lower_loss():
    pool = make(num_envs=2, placer=ContractPlacer(fail_envs={0}), max_placement_attempts=1)
    # env 0: all candidates fail no_overlap; the last batch's draws 0,1 (one failure) outrank draw 2 (two)
    assert pool.slot_draw[0].tolist() == [0, 1, 2]
    losses = pool.slot_loss[0].tolist()
    assert losses == sorted(losses)

"""Host-side work of the placement hot path on the CPU without torch's OpenMP threads (issue 21): torch runs a
large copy, fill or comparison on its OpenMP threads, which then keep spinning for milliseconds on the cores the
placement threads are about to use (boxes3 at batch 65,536: the check pass went from 5 to 11 M layouts/s on
2 cores once its copies went through numpy). Shown here: ``copy_into`` writes exactly what ``Tensor.copy_``
writes (strided views, broadcasting, ids, dtype conversion) and refuses what it refuses; the numpy form of
``passed`` equals the torch expression for every bit pattern; a batch large enough for torch's parallel path
gets the verdicts and ids of the same layouts checked in small pieces; ``copy_rows`` (a pool's slot writes and
reads) writes what torch's indexing writes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from isaaclab_arena.benchmarks.scenes import SCENES
from isaaclab_arena.relations.kernels.geometry import copy_into, copy_rows
from isaaclab_arena.relations.kinds import CHECK_SLOTS
from isaaclab_arena.relations.object_placer import ObjectPlacer
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams
from isaaclab_arena.relations.solving.evaluation import evaluate_poses
from isaaclab_arena.relations.validation import results
from isaaclab_arena.relations.validation.results import PlacementValidationResults

from _outside import LAUNCHER


def _pair(dst_shape, src, view=None):
    """(what copy_into wrote, what Tensor.copy_ wrote) into zero tensors of ``dst_shape`` (optionally a view)."""
    outs = []
    for fn in (copy_into, lambda d, s: d.copy_(s)):
        dst = torch.zeros(dst_shape, dtype=torch.float32 if src.is_floating_point() else src.dtype)
        fn(dst if view is None else view(dst), src)
        outs.append(dst)
    return outs


@pytest.mark.parametrize("case", ["contiguous", "transposed", "broadcast", "strided_dst", "ids", "float64"])
def test_copy_into_writes_what_copy_writes(case):
    g = torch.Generator().manual_seed(7)
    if case == "contiguous":
        got, want = _pair((50_000, 3), torch.rand(50_000, 3, generator=g))
    elif case == "transposed":  # a non-contiguous source
        got, want = _pair((50_000, 3), torch.rand(3, 50_000, generator=g).t())
    elif case == "broadcast":  # one row into every row
        got, want = _pair((4_000, 5, 3), torch.tensor([0.1, -0.2, 0.3]))
    elif case == "strided_dst":  # the workspaces' pos[:, :n] views
        got, want = _pair((12_000, 6, 3), torch.rand(12_000, 4, 3, generator=g), view=lambda d: d[:, :4])
        assert torch.count_nonzero(got[:, 4:]) == 0
    elif case == "ids":
        got, want = _pair((70_000,), torch.randint(0, 2**40, (70_000,), generator=g))
    else:  # another dtype: torch's conversion
        got, want = _pair((40_000, 3), torch.rand(40_000, 3, dtype=torch.float64, generator=g))
    assert got.dtype == want.dtype
    assert torch.equal(got, want)
    assert torch.count_nonzero(got) > 0


def test_copy_into_owns_its_values_and_takes_grad_tensors():
    src = torch.rand(40_000, 3, requires_grad=True)
    dst = torch.zeros(40_000, 3)
    copy_into(dst, src)
    with torch.no_grad():
        src.add_(1.0)
    assert torch.equal(dst + 1.0, src.detach())


@pytest.mark.parametrize("src_shape", [(40_000, 2), (39_999, 3), (2, 40_000, 3)])
def test_copy_into_refuses_shapes_copy_refuses(src_shape):
    dst = torch.zeros(40_000, 3)
    with pytest.raises(RuntimeError):
        torch.zeros(40_000, 3).copy_(torch.zeros(src_shape))
    with pytest.raises((RuntimeError, ValueError)):
        copy_into(dst, torch.ones(src_shape))
    assert torch.count_nonzero(dst) == 0  # nothing half-written


def test_passed_on_the_cpu_equals_the_torch_expression():
    width = len(CHECK_SLOTS)
    bits = torch.arange(1 << width, dtype=torch.int32).repeat(40)  # every bit pattern, past torch's parallel size
    for mask in (0, 1, (1 << width) - 1, 0b1010 & ((1 << width) - 1), 1 << (width - 1)):
        res = PlacementValidationResults(checks=(), required=(), builtin_checks=(),
                                         builtin_verdicts=torch.ones(bits.shape[0], width, dtype=torch.bool),
                                         builtin_fail_bits=bits, builtin_required_mask=mask, builtin_optional_mask=0)
        got = res.passed
        assert got.dtype == torch.bool and got.shape == bits.shape
        assert torch.equal(got, (bits & mask) == 0)
        assert int(got.sum()) == sum(1 for b in range(1 << width) if not b & mask) * 40


@pytest.mark.parametrize("branch", ["numpy", "torch"])
@pytest.mark.parametrize("pattern", ["mixed", "all_pass", "one_slot"])
def test_verdict_reads_on_the_cpu_equal_plain_counts(pattern, branch, monkeypatch):
    """The host reads a pool and the diagnostics make of a batch's verdicts (per-candidate failure counts, per-check
    counts, the number that passed, the (B, C) verdict table in the pool's column order, an extra validator's
    column included) against plain Python over the same bits; ``all_pass`` takes the counts' shortcut. The torch
    branch is the one a GPU takes."""
    if branch == "torch":
        monkeypatch.setattr(results, "_on_host", lambda t: False)
    width = len(CHECK_SLOTS)
    g = torch.Generator().manual_seed(13)
    B = 6_000
    if pattern == "mixed":
        bits = torch.randint(0, 1 << width, (B,), generator=g, dtype=torch.int32)
    elif pattern == "all_pass":
        bits = torch.zeros(B, dtype=torch.int32)
    else:
        bits = (torch.rand(B, generator=g) < 0.1).to(torch.int32) << 2
    verdicts = torch.stack([(bits >> s) & 1 == 0 for s in range(width)], 1)
    builtin = (CHECK_SLOTS[2], CHECK_SLOTS[0], CHECK_SLOTS[width - 1])
    req_mask, opt_mask = (1 << 2) | 1, 1 << (width - 1)
    extra = torch.rand(B, generator=g) > 0.3
    res = PlacementValidationResults(checks=(*builtin, "custom"), required=(builtin[0], builtin[1], "custom"),
                                     builtin_checks=builtin, builtin_verdicts=verdicts, builtin_fail_bits=bits,
                                     builtin_required_mask=req_mask, builtin_optional_mask=opt_mask,
                                     extra_verdicts={"custom": extra},
                                     extra_required_failures=(~extra).to(torch.int32))
    rows = bits.tolist()
    req = [bin(b & req_mask).count("1") + int(not x) for b, x in zip(rows, extra.tolist())]
    assert res.required_failures.tolist() == req
    assert res.optional_failures.tolist() == [bin(b & opt_mask).count("1") for b in rows]
    assert res.num_passed == sum(r == 0 for r in req)
    slot = {c: CHECK_SLOTS.index(c) for c in builtin}
    want = {c: (sum(not (b >> slot[c]) & 1 for b in rows), B) for c in builtin}
    want["custom"] = (int(extra.sum()), B)
    assert res.counts() == want
    for names in (builtin, (builtin[2], "custom", builtin[0]), ()):
        table = res.verdict_table(names)
        assert table.dtype == torch.bool and table.shape == (B, len(names))
        for k, c in enumerate(names):
            assert table[:, k].tolist() == (extra.tolist() if c == "custom" else
                                            [not (b >> slot[c]) & 1 for b in rows])


def test_large_batch_checks_like_small_pieces():
    """40,000 layouts (positions 360,000 floats: torch's parallel path) in one call and in 10 calls of 4,000."""
    placer = ObjectPlacer(ObjectPlacerParams(placement_seed=3, solver_params=RelationSolverParams(verbose=False)),
                          extensions=[])
    b = 40_000
    problem = placer.compile(SCENES["boxes3"](), b)
    env = torch.arange(b)
    solved = placer.place_problem(problem, env, torch.zeros_like(env))
    pos = solved.positions.clone()
    pos[::3, 0] = pos[::3, 1]  # a third of them with two boxes on one spot
    rot = solved.rotations.clone()
    whole = placer.validate(problem, evaluate_poses(problem, env, pos, rot))
    pieces = [placer.validate(problem, evaluate_poses(problem, env[k:k + 4_000], pos[k:k + 4_000], rot[k:k + 4_000]))
              for k in range(0, b, 4_000)]
    assert torch.equal(whole.passed, torch.cat([p.passed for p in pieces]))
    assert torch.equal(whole.solved.positions, pos)
    assert whole.solved.draw_ids.dtype == torch.int64 and torch.count_nonzero(whole.solved.draw_ids) == 0
    assert int((~whole.passed[::3]).sum()) == len(range(0, b, 3))
    assert bool(whole.passed[1::3].all())


@pytest.mark.slow
@pytest.mark.parametrize("given, expected", [({}, "10000 None"), ({"GOMP_SPINCOUNT": "0"}, "0 None"),
                                             ({"OMP_WAIT_POLICY": "ACTIVE"}, "None ACTIVE")])
def test_the_launcher_shortens_openmp_spin_unless_the_user_chose(tmp_path, given, expected):
    """``scripts/arena_python.sh`` sets GOMP_SPINCOUNT=10000 (torch's OpenMP threads then stop spinning after a few
    hundred microseconds instead of milliseconds) and leaves a user's GOMP_SPINCOUNT or OMP_WAIT_POLICY alone."""
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    out = subprocess.run([LAUNCHER, "-c", "import os; print(os.environ.get('GOMP_SPINCOUNT'), "
                          "os.environ.get('OMP_WAIT_POLICY'))"], cwd=tmp_path, env={**env, **given},
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == expected


@pytest.mark.parametrize("case", ["poses", "bool_columns", "ids", "strided_dst", "float64_src", "nan_payloads",
                                  "strided_src", "flat_parts", "no_rows", "empty_rows"])
def test_copy_rows_writes_what_indexing_writes(case):
    """``dst[rows] = cat(srcs, -1)[picks]``, numpy's branch (CPU, one dtype; rows moved as opaque bytes) and
    torch's (another dtype) alike, compared bit for bit; rows not named keep their values."""
    g = torch.Generator().manual_seed(3)
    B, E = 5_000, 9_000
    rows, picks = torch.randperm(E, generator=g)[:B], torch.randperm(B, generator=g)
    if case == "poses":  # positions and rotations joined into (n, 7) rows
        srcs = (torch.rand(B, 3, 3, generator=g), torch.rand(B, 3, 4, generator=g))
        dst = torch.rand(E, 3, 7, generator=g)
    elif case == "bool_columns":  # per-check verdicts as columns
        srcs = tuple(torch.rand(B, 1, generator=g) > 0.5 for _ in range(10))
        dst = torch.zeros(E, 10, dtype=torch.bool)
    elif case == "ids":
        srcs = (torch.randint(0, 2**40, (B,), generator=g),)
        dst = torch.zeros(E, dtype=torch.long)
    elif case == "strided_dst":  # a slice of a pool table (not contiguous)
        srcs = (torch.rand(B, 2, generator=g),)
        dst = torch.zeros(E, 3, 2).select(1, 1)
    elif case == "float64_src":  # another dtype: torch's branch converts
        srcs = (torch.rand(B, 4, dtype=torch.float64, generator=g),)
        dst = torch.zeros(E, 4)
    elif case == "nan_payloads":  # NaNs of distinct payloads, -0.0 and infinities keep their exact bits
        bits = torch.randint(-2**31, 2**31 - 1, (B, 2, 3), generator=g, dtype=torch.int64).to(torch.int32)
        bits[:, 0, 0] = 0x7FC00000 + torch.arange(B, dtype=torch.int32) % 1000  # quiet NaNs, distinct payloads
        srcs = (bits.view(torch.float32), torch.tensor([-0.0, float("inf")]).expand(B, 2, 2))
        dst = torch.rand(E, 2, 5, generator=g)
    elif case == "strided_src":  # a part whose last axis is not contiguous, and one that is a column slice
        srcs = (torch.rand(B, 4, 3, generator=g).transpose(1, 2), torch.rand(B, 3, 5, generator=g)[:, :, 1:3])
        dst = torch.rand(E, 3, 6, generator=g)
    elif case == "flat_parts":  # 1-D parts join end to end (one row of B + B values is not a row per candidate)
        srcs = (torch.rand(B, generator=g),)
        dst = torch.rand(E, generator=g)
    elif case == "no_rows":
        rows, picks = rows[:0], picks[:0]
        srcs = (torch.rand(B, 3, 3, generator=g), torch.rand(B, 3, 4, generator=g))
        dst = torch.rand(E, 3, 7, generator=g)
    else:  # rows of no bytes (a pool whose checks list is empty)
        srcs = (torch.zeros(B, 0, dtype=torch.bool),)
        dst = torch.zeros(E, 0, dtype=torch.bool)
    want = dst.clone()
    want[rows] = torch.cat(srcs, -1)[picks].to(want.dtype)
    copy_rows(dst, rows, picks, *srcs)
    same = (lambda a, b: torch.equal(a.view(torch.int32), b.view(torch.int32))) if dst.dtype == torch.float32 else torch.equal
    assert same(dst, want)
    untouched = torch.ones(E, dtype=torch.bool)
    untouched[rows] = False
    assert untouched.sum() == E - len(rows) and same(dst[untouched], want[untouched])


_SOLVE_TWICE = """
import torch
from isaaclab_arena.benchmarks.scenes import SCENES
from isaaclab_arena.relations.object_placer import ObjectPlacer
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams
placer = ObjectPlacer(ObjectPlacerParams(solver_params=RelationSolverParams(verbose={verbose})), extensions=[])
problem = placer.compile(SCENES["boxes3"](), 8)
for draw in range(2):
    env = torch.arange(512) % 8
    assert bool(placer.place_problem(problem, env, torch.full_like(env, draw)).passed.all())
print("solved")
"""


@pytest.mark.slow
@pytest.mark.parametrize("given, verbose, notices", [({}, True, 1), ({"GOMP_SPINCOUNT": "10000"}, True, 0),
                                                     ({"OMP_WAIT_POLICY": "PASSIVE"}, True, 0), ({}, False, 0)])
def test_a_placer_started_without_the_launcher_says_how_to_stop_the_spin(tmp_path, given, verbose, notices):
    """A Python started without the launcher's setting, whose placer splits CPU batches over threads, prints the
    one-line note once (two solves); not when GOMP_SPINCOUNT or OMP_WAIT_POLICY is set, nor with verbose off."""
    from isaaclab_arena import ARENA_ROOT
    from isaaclab_arena.relations.solving.solver_workers import OPENMP_SPIN_NOTICE

    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    env.update(given, PYTHONPATH=ARENA_ROOT)
    out = subprocess.run([sys.executable, "-c", _SOLVE_TWICE.format(verbose=verbose)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "solved"
    assert out.stdout.count(OPENMP_SPIN_NOTICE) == notices, out.stdout[-2000:]

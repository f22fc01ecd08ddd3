"""One recording job on torchrun (``record_placement_layouts.py ... --distributed``), run the way a user runs it:
through ``scripts/arena_python.sh`` from a temporary folder outside the repository (kit-less Isaac Lab, OV PhysX
on the CPU, ``gloo``; ``torch.distributed.run --standalone``, so nothing leaves the machine).

- (a) with ``env_spacing=0`` the merged output of 2 ranks is byte-identical to a 1-process run of the same
  overrides (and the shards are removed after the merge);
- (b) ``--distributed`` outside torchrun: one line naming torchrun, exit 2, nothing written;
- (c) a resume whose shards were written by another world size: one line naming both, exit 2;
- (d) ``--max-restarts=1`` and a SIGKILL of rank 1 after its first batch: torchrun restarts the group, the
  ranks resume from their shards, and the output has no duplicate and no missing line.

Plus simulator-free unit tests of the env shares, the merge order, and the pool's global-env mapping.
Every Isaac Lab start costs 20-40 s here: the slow tests share one 1-process reference run.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time

import pytest
import torch

from isaaclab_arena import ARENA_ROOT
from tests._outside import LAUNCHER, RECORDER, arena, refusal

SPEC = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "tabletop", "mug_bowl_table.yaml")
# 4 global envs, 4 batches of 4, default settle checks (pose_shift measures from the expected rest: docs/RECORD_REPLAY.md)
OVERRIDES = [f"env_spec={SPEC}", "num_envs=4", "env_spacing=0", "min_layouts=16", "max_batches=6", "seed=7",
             "settle.num_steps=30"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _torchrun(nproc: int, *extra: str) -> list[str]:
    return ["-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}", *extra, RECORDER]


def _keys(path) -> list[tuple[int, int, int]]:
    out = []
    with open(path) as f:
        for line in f:
            s = json.loads(line)["validation"]["sampling"]
            out.append((s["batch"], s["env_id"], s["draw_id"]))
    return out


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    """The 1-process reference recording (path, wall seconds)."""
    cwd = tmp_path_factory.mktemp("single")
    t0 = time.monotonic()
    out = arena(cwd, RECORDER, *OVERRIDES, "output=single.jsonl", timeout=1500)
    wall = time.monotonic() - t0
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-3000:])
    print(f"\n[timing] 1-process recording: {wall:.1f} s")
    return cwd / "single.jsonl", wall


# ---- simulator-free ---------------------------------------------------------------------------------------------
def test_env_shares_are_contiguous_and_disjoint():
    from isaaclab_arena.offline_placement.distributed_recording import DistributedRecordingError, env_share

    for n, w in ((4, 2), (5, 2), (7, 3), (3, 3)):
        shares = [env_share(n, w, r) for r in range(w)]
        assert sum(shares, []) == list(range(n))
        assert max(map(len, shares)) - min(map(len, shares)) <= 1
    with pytest.raises(DistributedRecordingError, match="world size 3"):
        env_share(2, 3, 0)


def test_merge_orders_batch_major_then_global_env_and_truncates():
    from isaaclab_arena.offline_placement.distributed_recording import merge_lines

    def line(b, e):
        return json.dumps({"validation": {"sampling": {"batch": b, "env_id": e}}}) + "\n"

    rank0 = [line(1, 0), line(1, 1), line(2, 1)]
    rank1 = [line(1, 3), line(2, 2), line(2, 3)]
    merged = merge_lines([rank0, rank1], 5)
    assert merged == [line(1, 0), line(1, 1), line(1, 3), line(2, 1), line(2, 2)]
    with pytest.raises(RuntimeError, match="twice"):
        merge_lines([rank0, rank0], 10)


def test_pool_share_gets_the_global_envs_layouts():
    """Pools of the envs {0, 1} and {2, 3} of 4 hand out exactly the layouts (poses, draw ids, verdicts) and
    object-set members those envs get in one 4-env pool: the solver sees global ids and the global env count
    (the real solver on a real scene with a RigidObjectSet; no simulator)."""
    from isaaclab_arena.relations.pooled_object_placer import PooledObjectPlacer
    from tests.test_pooled_object_placer import one_env_impossible

    from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams

    def pool(**kw):
        params = ObjectPlacerParams(min_unique_layouts_per_env=2, placement_seed=11, allow_best_loss_fallbacks=True)
        p = PooledObjectPlacer(one_env_impossible(), params, **kw)
        p.diagnostics.verbose = False
        p.initialize()
        return p

    full = pool(num_envs=4)
    shares = [pool(num_envs=2, global_env_ids=[0, 1], global_num_envs=4),
              pool(num_envs=2, global_env_ids=[2, 3], global_num_envs=4)]
    assert not full.sharded and full.global_ids.tolist() == [0, 1, 2, 3]
    assert shares[0].member_indices["cube"] + shares[1].member_indices["cube"] == full.member_indices["cube"]
    for _ in range(3):  # across a refill
        want = full.next_layouts(torch.arange(4))
        got = torch.cat([s.next_layouts(torch.arange(2)) for s in shares])
        assert torch.equal(got, want)
        info = full.current_slot_info
        draws = full.slot_draw[info["env_ids"], info["slots"]]
        got_draws = torch.cat([s.slot_draw[s.current_slot_info["env_ids"], s.current_slot_info["slots"]] for s in shares])
        assert torch.equal(got_draws, draws)
        assert torch.equal(torch.cat([s.current_checks for s in shares]), full.current_checks)
    with pytest.raises(ValueError, match="increasing"):
        PooledObjectPlacer([], None, num_envs=2, global_env_ids=[3, 2], global_num_envs=4)


# ---- through the launcher ---------------------------------------------------------------------------------------
@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.distributed
def test_two_ranks_byte_identical_to_one_process(single, tmp_path):
    ref, wall1 = single
    t0 = time.monotonic()
    out = arena(tmp_path, *_torchrun(2), *OVERRIDES, "output=dist.jsonl", "--distributed", timeout=1500)
    wall2 = time.monotonic() - t0
    print(f"\n[timing] 1-process recording: {wall1:.1f} s; 2-process (torchrun) recording: {wall2:.1f} s")
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-3000:])
    assert (tmp_path / "dist.jsonl").read_bytes() == ref.read_bytes()
    assert len(_keys(ref)) == 16
    shards = tmp_path / "dist.jsonl.shards"
    assert not list(shards.glob("rank*-of-*.json*"))  # merged: the shards are gone, the diagnostics stay
    assert (shards / "rank0" / "placement_diagnostics.json").is_file()
    assert (shards / "rank1" / "placement_diagnostics.json").is_file()
    assert "Saved 16/16 accepted layouts" in out.stdout


@pytest.mark.slow
@pytest.mark.distributed
def test_distributed_outside_torchrun_is_refused(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    proc = subprocess.run([LAUNCHER, RECORDER, *OVERRIDES, "output=x.jsonl", "--distributed"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=1200, env=env)
    line = refusal(proc)
    assert "torchrun" in line and "--distributed" in line, line
    assert os.listdir(tmp_path) == []


@pytest.mark.slow
@pytest.mark.distributed
def test_resume_with_another_world_size_is_refused(tmp_path):
    from isaaclab_arena.offline_placement.distributed_recording import shards_folder

    folder = shards_folder(str(tmp_path / "out.jsonl"))
    os.makedirs(folder)
    manifest = {"world_size": 3, "seed": 7, "num_envs": 4, "env_spec": SPEC, "settings": {}, "rank": 0,
                "batches_done": 1, "accepted_per_batch": [1]}
    with open(os.path.join(folder, "rank0-of-3.json"), "w") as f:
        json.dump(manifest, f)
    before = sorted(os.listdir(folder))
    out = arena(tmp_path, *_torchrun(2), *OVERRIDES, "output=out.jsonl", "--distributed", timeout=1200)
    line = refusal(out)
    assert "world size" in line and "was 3" in line and "has 2" in line, line
    assert not (tmp_path / "out.jsonl").exists()
    assert sorted(os.listdir(folder)) == before


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.distributed
def test_sigkill_of_a_rank_resumes_without_duplicates_or_losses(single, tmp_path):
    ref, _ = single
    proc = subprocess.Popen([LAUNCHER, *_torchrun(2, "--max-restarts=1"), *OVERRIDES, "output=out.jsonl",
                             "--distributed"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    manifest = tmp_path / "out.jsonl.shards" / "rank1-of-2.json"
    killed = None
    t0 = time.monotonic()
    try:
        while proc.poll() is None and time.monotonic() - t0 < 400:
            try:
                data = json.loads(manifest.read_text())
            except (OSError, ValueError):
                time.sleep(0.05)
                continue
            if data["batches_done"] >= 1:
                killed = data["batches_done"]
                os.kill(int(data["pid"]), signal.SIGKILL)
                break
            time.sleep(0.05)
        log, _ = proc.communicate(timeout=1500)
    finally:
        if proc.poll() is None:
            proc.kill()
    wall = time.monotonic() - t0
    print(f"\n[timing] 2-process recording with a SIGKILL and a restart: {wall:.1f} s")
    (tmp_path / "torchrun.log").write_text(log)
    notable = "\n".join(ln for ln in log.splitlines() if not ln.startswith(("[solver]", "[placement]")))
    assert killed is not None and killed < 4, notable[-6000:]
    assert proc.returncode == 0, notable[-8000:]
    assert "rank 1: resuming after batch" in log, notable[-6000:]
    got, want = _keys(tmp_path / "out.jsonl"), _keys(ref)
    assert len(got) == len(set(got)), "duplicate lines"
    assert got == want  # same (batch, global env, draw) in the same order: nothing lost, nothing twice

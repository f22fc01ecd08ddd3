"""Layout files a user can trust: duplicate JSON keys refused with file:line and key, files written with the
user's umask, and the recorder's batch-by-batch file that keeps only complete batches when cut short."""

from __future__ import annotations

import json
import os
import stat

import pytest
import torch

from isaaclab_arena.offline_placement.recording_output import AppendingLayoutsFile
from isaaclab_arena.relations.placement_layouts import PlacementLayouts, PlacementLayoutsError


def _layouts(n: int, x0: float = 0.0) -> PlacementLayouts:
    pos = torch.zeros(n, 2, 3, dtype=torch.float64)
    pos[:, 0, 0] = x0 + torch.arange(n, dtype=torch.float64) * 0.01
    pos[..., 2] = 0.8
    rot = torch.zeros(n, 2, 4, dtype=torch.float64)
    rot[..., 3] = 1.0
    return PlacementLayouts(("mug", "bowl"), pos.float(), rot.float(), sources=["settled"] * n, validation=[{}] * n)


def _line(poses_json: str) -> str:
    return '{"variations": {"scene.relation_placement": {"poses": ' + poses_json + "}}}\n"


POSE = '{"position_xyz": [0.1, 0.0, 0.8], "rotation_xyzw": [0, 0, 0, 1]}'


@pytest.mark.parametrize("where, text", [
    ("object", _line('{"mug": ' + POSE + ', "mug": {"position_xyz": [0.5, 0.3, 0.2], "rotation_xyzw": [0, 0, 0, 1]}}')),
    ("pose", _line('{"mug": {"position_xyz": [0.1, 0.0, 0.8], "position_xyz": [0, 0, 0], "rotation_xyzw": [0, 0, 0, 1]}}')),
])
def test_a_repeated_key_is_refused_with_file_line_and_key(tmp_path, where, text):
    path = tmp_path / "layouts.jsonl"
    path.write_text(_line('{"mug": ' + POSE + "}") + "\n" + text)
    key = "mug" if where == "object" else "position_xyz"
    with pytest.raises(PlacementLayoutsError, match=rf"^{path}:3: duplicate key '{key}' in one JSON object"):
        PlacementLayouts.from_episode_jsonl(path)
    # the same content without the repetition loads
    path.write_text(_line('{"mug": ' + POSE + "}"))
    assert len(PlacementLayouts.from_episode_jsonl(path)) == 1


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_written_files_get_the_users_umask(tmp_path, mask, mode):
    old = os.umask(mask)
    try:
        path = _layouts(2).write_episode_jsonl(tmp_path / "out.jsonl")
        out = AppendingLayoutsFile(tmp_path / "rec.jsonl")
        out.append(_layouts(1))
        rec = out.commit()
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(path).st_mode) == mode
    assert stat.S_IMODE(os.stat(rec).st_mode) == mode


def test_the_recording_file_appears_only_when_committed_and_holds_every_batch(tmp_path):
    target = tmp_path / "sub" / "rec.jsonl"
    out = AppendingLayoutsFile(target)
    out.append(_layouts(3))
    out.append(_layouts(2, x0=0.5))
    assert not target.exists() and out.count == 5
    partial = [f for f in os.listdir(target.parent) if f.endswith(".partial")]
    assert len(partial) == 1 and partial[0].startswith(".rec.jsonl.")
    with open(target.parent / partial[0]) as f:  # flushed batch by batch: the lines are on disk already
        assert sum(1 for _ in f) == 5
    assert out.commit() == str(target)
    back = PlacementLayouts.from_episode_jsonl(target)
    assert len(back) == 5 and os.listdir(target.parent) == ["rec.jsonl"]
    torch.testing.assert_close(back.positions[3:, 0, 0], torch.tensor([0.5, 0.51]))


def test_a_batch_cut_short_is_dropped_and_the_complete_ones_kept(tmp_path):
    out = AppendingLayoutsFile(tmp_path / "rec.jsonl")
    out.append(_layouts(2))
    out._fh.write(b'{"source": "settled", "variations": {"scene.rel')  # an interruption in the middle of a write
    assert out.count == 2
    path = out.commit()
    lines = open(path).read().splitlines()
    assert len(lines) == 2 and all(json.loads(ln)["source"] == "settled" for ln in lines)


def test_nothing_accepted_writes_no_file_and_an_existing_output_is_refused(tmp_path):
    out = AppendingLayoutsFile(tmp_path / "none.jsonl")
    assert out.commit() is None and os.listdir(tmp_path) == []
    (tmp_path / "taken.jsonl").write_text("keep me\n")
    with pytest.raises(FileExistsError, match="already exists; the recorder never overwrites a file"):
        AppendingLayoutsFile(tmp_path / "taken.jsonl")
    assert (tmp_path / "taken.jsonl").read_text() == "keep me\n"

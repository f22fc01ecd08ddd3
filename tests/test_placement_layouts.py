"""PlacementLayouts: the episode JSONL format, line-numbered errors, atomic writer."""

from __future__ import annotations

import errno
import json
import math
import os

import pytest
import torch

from isaaclab_arena.relations import placement_layouts as pl
from isaaclab_arena.relations.placement_layouts import PlacementLayouts, PlacementLayoutsError, layouts_from_root_poses

YAW90 = [0.0, 0.0, math.sqrt(0.5), math.sqrt(0.5)]


def _episode(poses: dict, **extra) -> dict:
    return {"variations": {"scene.relation_placement": {"poses": poses}}, **extra}


def _pose(x, y, z, q=(0.0, 0.0, 0.0, 1.0)) -> dict:
    return {"position_xyz": [x, y, z], "rotation_xyzw": list(q)}


def _write_lines(path, lines: list) -> str:
    with open(path, "w", encoding="utf-8") as fh:
        for line in lines:
            fh.write((line if isinstance(line, str) else json.dumps(line)) + "\n")
    return str(path)


def _two_object_lines():
    return [
        _episode({"mug": _pose(0.1, 0.2, 0.8), "bowl": _pose(-0.1, 0.0, 0.79, YAW90)}, source="settled",
                 episode_index=0, seed=3),
        _episode({"bowl": _pose(-0.2, 0.05, 0.79), "mug": _pose(0.15, -0.2, 0.8)}, source="settled"),
        _episode({"mug": _pose(0.0, 0.0, 0.81), "bowl": _pose(0.3, 0.3, 0.79)}, task={"success": True}),
    ]


def test_reads_seed_000_format_in_first_line_key_order(tmp_path):
    lines = _two_object_lines()
    text_lines = [json.dumps(lines[0]), "", "   ", json.dumps(lines[1]), json.dumps(lines[2])]
    path = _write_lines(tmp_path / "layouts.jsonl", text_lines)
    layouts = PlacementLayouts.from_episode_jsonl(path)

    assert layouts.object_names == ("mug", "bowl")
    assert len(layouts) == 3
    assert layouts.positions.shape == (3, 2, 3) and layouts.rotations.shape == (3, 2, 4)
    # The second line lists bowl first; values are mapped by key, not by position.
    torch.testing.assert_close(layouts.position("mug")[1], torch.tensor([0.15, -0.2, 0.8]))
    torch.testing.assert_close(layouts.position("bowl")[1], torch.tensor([-0.2, 0.05, 0.79]))
    torch.testing.assert_close(layouts.rotation("bowl")[0], torch.tensor(YAW90))
    assert layouts.sources == ["settled", "settled", None]
    assert layouts.line_numbers == [1, 4, 5]  # blank lines skipped, numbering kept
    poses = layouts.root_poses([2, 0])
    assert poses.shape == (2, 2, 7)
    torch.testing.assert_close(poses[0, 0], torch.tensor([0.0, 0.0, 0.81, 0.0, 0.0, 0.0, 1.0]))


def test_round_trip_is_exact_and_keeps_validation(tmp_path):
    g = torch.Generator().manual_seed(0)
    pos = torch.rand((7, 3, 3), generator=g)
    rot = torch.nn.functional.normalize(torch.randn((7, 3, 4), generator=g), dim=-1)
    validation = [{"pre_physics": {"passed": True, "checks": {"no_overlap": True}},
                   "post_physics": {"passed": True, "checks": {}}, "sampling": {"num_steps": 5, "env_id": i}}
                  for i in range(7)]
    layouts = PlacementLayouts(("a", "b", "robot"), pos, rot, validation=validation)
    out = layouts.write_episode_jsonl(tmp_path / "sub" / "out.jsonl", source="settled")
    back = PlacementLayouts.from_episode_jsonl(out)
    assert back.object_names == ("a", "b", "robot")
    assert torch.equal(back.positions, pos) and torch.equal(back.rotations, rot)
    assert back.sources == ["settled"] * 7
    assert back.validation[3]["sampling"] == {"num_steps": 5, "env_id": 3}
    first = json.loads(open(out).readline())
    assert first["source"] == "settled"
    assert set(first["variations"]["scene.relation_placement"]["poses"]["a"]) == {"position_xyz", "rotation_xyzw"}
    assert first["validation"]["post_physics"]["passed"] is True


def test_layouts_from_root_poses_and_select(tmp_path):
    poses = {"mug": torch.tensor([[0.1, 0.0, 0.8, 0, 0, 0, 1.0], [0.2, 0.0, 0.8, 0, 0, 0, 1.0]]),
             "cube": torch.tensor([[0.0, 0.1, 0.8, *YAW90], [0.0, 0.2, 0.8, 0, 0, 0, 1.0]])}
    layouts = layouts_from_root_poses(poses, sources=["settled", "settled"])
    assert layouts.object_names == ("mug", "cube")
    sel = layouts.select([1])
    torch.testing.assert_close(sel.position("cube"), torch.tensor([[0.0, 0.2, 0.8]]))
    both = PlacementLayouts.concatenate([layouts, sel])
    assert len(both) == 3 and both.sources == ["settled"] * 3


@pytest.mark.parametrize("bad_line, expected", [
    ('{"variations": {"scene.relation_placement": {"poses": {"mug": ', "malformed JSON"),
    ("[1, 2, 3]", "expected a JSON object"),
    (json.dumps({"variations": {"other": {}}, "source": "settled"}), "no placement block"),
    (json.dumps({"episode": 3}), "no placement block"),
    (json.dumps(_episode({"mug": _pose(0.1, 0.2, 0.8)})), "missing objects ['bowl']"),
    (json.dumps(_episode({"mug": _pose(0.1, 0.2, 0.8), "bowl": _pose(0, 0, 0.8), "cup": _pose(0, 0, 1)})),
     "extra objects ['cup']"),
    ('{"variations": {"scene.relation_placement": {"poses": {"mug": {"position_xyz": [NaN, 0, 0.8], '
     '"rotation_xyzw": [0, 0, 0, 1]}, "bowl": {"position_xyz": [0, 0, 0.8], "rotation_xyzw": [0, 0, 0, 1]}}}}}',
     "position_xyz is not finite"),
    ('{"variations": {"scene.relation_placement": {"poses": {"mug": {"position_xyz": [1e999, 0, 0.8], '
     '"rotation_xyzw": [0, 0, 0, 1]}, "bowl": {"position_xyz": [0, 0, 0.8], "rotation_xyzw": [0, 0, 0, 1]}}}}}',
     "position_xyz is not finite"),
    (json.dumps(_episode({"mug": _pose(0.1, 0.2, 0.8, (0, 0, 0, 1.001)), "bowl": _pose(0, 0, 0.8)})),
     "not a unit quaternion"),
    (json.dumps(_episode({"mug": {"position_xyz": [0.1, 0.2], "rotation_xyzw": [0, 0, 0, 1]},
                          "bowl": _pose(0, 0, 0.8)})), "position_xyz must be a list of 3 numbers"),
    (json.dumps(_episode({"mug": {"position_xyz": [0.1, 0.2, 0.3], "rotation_xyzw": [0, 0, 1]},
                          "bowl": _pose(0, 0, 0.8)})), "rotation_xyzw must be a list of 4 numbers"),
    (json.dumps(_episode({"mug": [0.1, 0.2, 0.3, 0, 0, 0, 1], "bowl": _pose(0, 0, 0.8)})), "a pose must be"),
    (json.dumps(_episode({"mug": _pose(0.1, "x", 0.8), "bowl": _pose(0, 0, 0.8)})), "must hold numbers"),
    (json.dumps(_episode({})), "non-empty object"),
    (json.dumps({**_episode({"mug": _pose(0, 0, 1), "bowl": _pose(0, 0, 1)}), "source": 5}), "'source' must be"),
])
def test_bad_line_names_file_and_line(tmp_path, bad_line, expected):
    good = _two_object_lines()
    path = _write_lines(tmp_path / "bad.jsonl", [good[0], "", bad_line, good[1]])
    with pytest.raises(PlacementLayoutsError) as err:
        PlacementLayouts.from_episode_jsonl(path)
    msg = str(err.value)
    assert f"{path}:3:" in msg, msg
    assert expected in msg, msg


def test_unit_quaternion_tolerance_is_1e_4(tmp_path):
    ok = 1.0 + 0.9e-4
    path = _write_lines(tmp_path / "ok.jsonl", [_episode({"mug": _pose(0, 0, 1, (0, 0, 0, ok))})])
    assert len(PlacementLayouts.from_episode_jsonl(path)) == 1
    path = _write_lines(tmp_path / "bad.jsonl", [_episode({"mug": _pose(0, 0, 1, (0, 0, 0, 1.0 + 1.2e-4))})])
    with pytest.raises(PlacementLayoutsError, match=r"bad.jsonl:1: object 'mug': rotation_xyzw .*\(norm 1.000120"):
        PlacementLayouts.from_episode_jsonl(path)


def test_empty_and_missing_files(tmp_path):
    path = _write_lines(tmp_path / "empty.jsonl", ["", "  "])
    with pytest.raises(PlacementLayoutsError, match="no layouts"):
        PlacementLayouts.from_episode_jsonl(path)
    with pytest.raises(FileNotFoundError, match="nope.jsonl' does not exist"):
        PlacementLayouts.from_episode_jsonl(tmp_path / "nope.jsonl")


def test_in_memory_layouts_reject_bad_values():
    pos = torch.zeros((2, 1, 3))
    rot = torch.tensor([[[0.0, 0, 0, 1]], [[0.0, 0, 0, 2]]])
    with pytest.raises(PlacementLayoutsError, match="layout 1: object 'mug': rotation_xyzw is not a unit quaternion"):
        PlacementLayouts(("mug",), pos, rot)
    pos[0, 0, 1] = float("inf")
    with pytest.raises(PlacementLayoutsError, match="layout 0: object 'mug': position_xyz is not finite"):
        PlacementLayouts(("mug",), pos, torch.tensor([[[0.0, 0, 0, 1]]] * 2))
    with pytest.raises(PlacementLayoutsError, match=r"positions must have shape \(N, 2, 3\)"):
        PlacementLayouts(("mug", "cup"), torch.zeros((2, 1, 3)), torch.zeros((2, 2, 4)))
    with pytest.raises(PlacementLayoutsError, match="duplicate object names"):
        PlacementLayouts(("mug", "mug"), torch.zeros((1, 2, 3)), torch.tensor([[[0.0, 0, 0, 1]] * 2]))


def _layouts(n=3) -> PlacementLayouts:
    pos = torch.arange(n * 3, dtype=torch.float32).reshape(n, 1, 3) * 0.01
    rot = torch.tensor([0.0, 0.0, 0.0, 1.0]).expand(n, 1, 4).clone()
    return PlacementLayouts(("mug",), pos, rot)


def test_writer_refuses_existing_path_and_keeps_it(tmp_path):
    target = tmp_path / "out.jsonl"
    target.write_text("precious\n")
    with pytest.raises(FileExistsError, match="already exists"):
        _layouts().write_episode_jsonl(target, source="settled")
    assert target.read_text() == "precious\n"
    assert sorted(os.listdir(tmp_path)) == ["out.jsonl"]
    _layouts(2).write_episode_jsonl(target, source="solver", overwrite=True)
    assert len(PlacementLayouts.from_episode_jsonl(target)) == 2


def test_writer_requires_source_label(tmp_path):
    with pytest.raises(PlacementLayoutsError, match="source must be a non-empty label"):
        _layouts().write_episode_jsonl(tmp_path / "x.jsonl")
    with pytest.raises(PlacementLayoutsError, match="2 source labels for 3 layouts"):
        _layouts().write_episode_jsonl(tmp_path / "x.jsonl", source=["a", "b"])
    assert os.listdir(tmp_path) == []


def test_full_disk_during_fsync_leaves_old_file_and_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "out.jsonl"
    old = _layouts(2)
    old.write_episode_jsonl(target, source="settled")
    before = target.read_bytes()

    def full_disk(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pl.os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        _layouts(5).write_episode_jsonl(target, source="settled", overwrite=True)
    assert target.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["out.jsonl"]


def test_crash_mid_write_leaves_no_file_and_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "new.jsonl"
    calls = {"n": 0}
    real = pl._encode_line

    def crash_on_third(record):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt("killed mid-write")
        return real(record)

    monkeypatch.setattr(pl, "_encode_line", crash_on_third)
    with pytest.raises(KeyboardInterrupt):
        _layouts(5).write_episode_jsonl(target, source="settled")
    assert calls["n"] == 3  # two lines had been written to the temporary file
    assert os.listdir(tmp_path) == []

    # With an existing file the same crash leaves it untouched.
    monkeypatch.setattr(pl, "_encode_line", real)
    _layouts(1).write_episode_jsonl(target, source="solver")
    before = target.read_bytes()
    calls["n"] = 0
    monkeypatch.setattr(pl, "_encode_line", crash_on_third)
    with pytest.raises(KeyboardInterrupt):
        _layouts(5).write_episode_jsonl(target, source="settled", overwrite=True)
    assert target.read_bytes() == before
    assert os.listdir(tmp_path) == ["new.jsonl"]


def test_validation_block_format():
    from isaaclab_arena.relations.placement_layouts import validation_block

    block = validation_block({"no_overlap": True, "clutter_on_relation": True, "ik_reachable": False},
                             required_checks=["no_overlap", "clutter_on_relation"],
                             sampling={"num_steps": 120, "decimation": 2, "physics_dt_s": 0.005})
    assert block["pre_physics"]["passed"] is True  # ik_reachable is optional here
    assert block["post_physics"] == {"passed": None, "reason": "not settled: no physics was run for this layout",
                                     "checks": {}}
    assert block["sampling"]["num_steps"] == 120
    missing = validation_block({"no_overlap": True}, required_checks=["no_overlap", "ik_reachable"])
    assert missing["pre_physics"]["passed"] is False
    assert missing["pre_physics"]["missing_required_checks"] == ["ik_reachable"]

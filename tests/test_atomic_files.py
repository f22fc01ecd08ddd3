"""Files written whole or not at all, also when the run is interrupted while writing: ``written_whole`` (the layout
picture, ``run_summary.json``, the diagnostics JSON) and the mesh disk cache. A Ctrl-C 2.5 s into a run landed in
the picture's ``savefig`` and left ``.layouts.png.<random>.tmp.png`` in the user's output folder."""

from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.figure  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from isaaclab_arena.utils.atomic_files import written_whole  # noqa: E402


def test_written_whole_replaces_the_file_in_one_step(tmp_path):
    path = tmp_path / "summary.json"
    path.write_text("old")
    with written_whole(str(path)) as f:
        f.write("new")
        assert path.read_text() == "old"  # nothing of the new text is visible before the block ends
    assert path.read_text() == "new"
    assert os.listdir(tmp_path) == ["summary.json"]


@pytest.mark.parametrize("stop", [KeyboardInterrupt, OSError])
def test_an_interrupted_or_failed_write_keeps_the_old_file_and_no_temporary_one(tmp_path, stop):
    path = tmp_path / "picture.png"
    path.write_bytes(b"old")
    with pytest.raises(stop):
        with written_whole(str(path), "wb", suffix=".tmp.png") as f:
            f.write(b"half")
            raise stop()
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["picture.png"]


def test_a_ctrl_c_in_the_pictures_savefig_leaves_no_file(tmp_path, monkeypatch):
    from isaaclab_arena.environments.placement_pictures import write_poses_picture
    from isaaclab_arena_environments.assets import library

    def interrupted(fig, fname, *args, **kwargs):
        fname.write(b"\x89PNG half")
        raise KeyboardInterrupt

    poses = torch.zeros(2, 1, 7)
    poses[..., 6] = 1.0
    write_poses_picture([library.mug("mug")], ["mug"], poses, str(tmp_path / "ok.png"))
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_poses_picture([library.mug("mug")], ["mug"], poses, str(tmp_path / "layouts.png"))
    assert sorted(os.listdir(tmp_path)) == ["ok.png"]


def test_the_mesh_cache_keeps_no_temporary_file_after_a_ctrl_c_and_skips_a_failed_write(tmp_path, monkeypatch):
    from isaaclab_arena.relations.mesh import disk_cache

    monkeypatch.setenv("ARENA_MESH_CACHE", str(tmp_path))
    disk_cache.store("k1", a=np.arange(3))
    assert np.array_equal(disk_cache.load("k1")["a"], np.arange(3))

    def stopped(out, **arrays):
        out.write(b"half")
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savez", stopped)
    with pytest.raises(KeyboardInterrupt):
        disk_cache.store("k2", a=np.arange(3))
    assert sorted(os.listdir(tmp_path)) == ["k1.npz"]

    def full(out, **arrays):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez", full)
    disk_cache.store("k3", a=np.arange(3))  # a cache write that fails is skipped, quietly
    assert sorted(os.listdir(tmp_path)) == ["k1.npz"]

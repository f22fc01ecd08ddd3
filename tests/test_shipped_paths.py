"""Documented data paths work from any folder (issue 19): the docs write shipped files relative to the checkout
(``--env_spec isaaclab_arena_environments/tabletop/mug_bowl_table.yaml``); from another working directory such a
path is taken from the checkout, said in one stderr line, and a path in neither place is refused naming both."""

from __future__ import annotations

import glob
import os
import re

import pytest
from _outside import RUNNER, arena, refusal

from isaaclab_arena import ARENA_ROOT
from isaaclab_arena.env_spec import ArenaEnvGraphSpec, EnvSpecError
from isaaclab_arena.offline_placement.recording_config import PlacementRecordingCfg, RecordingConfigError
from isaaclab_arena.utils.shipped_paths import shipped_path

SHIPPED_FILE = re.compile(r"isaaclab_arena_environments/[A-Za-z0-9_/.-]+\.(?:yaml|jsonl|json|usda?|py)")


def _documented_paths() -> list[str]:
    found = set()
    for doc in [os.path.join(ARENA_ROOT, "README.md"), *glob.glob(os.path.join(ARENA_ROOT, "docs", "*.md"))]:
        with open(doc) as f:
            found.update(SHIPPED_FILE.findall(f.read()))
    return sorted(found)


def test_every_documented_shipped_path_resolves_from_another_folder(tmp_path, monkeypatch, capsys):
    paths = _documented_paths()
    assert len(paths) >= 8, paths  # the docs name the shipped examples
    monkeypatch.chdir(tmp_path)
    for path in paths:
        got = shipped_path(path)
        assert got == os.path.join(ARENA_ROOT, path) and os.path.isfile(got), path
        assert f"arena: {path} is not in {tmp_path}; using {got}" in capsys.readouterr().err


def test_a_file_in_the_working_directory_wins_and_absent_paths_are_unchanged(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "isaaclab_arena_environments" / "tabletop" / "mug_bowl_table.yaml"
    mine.parent.mkdir(parents=True)
    mine.write_text("env_name: mine\n")
    rel = "isaaclab_arena_environments/tabletop/mug_bowl_table.yaml"
    assert shipped_path(rel) == rel and capsys.readouterr().err == ""
    assert shipped_path("nowhere/scene.yaml") == "nowhere/scene.yaml"


def test_specs_and_recording_settings_load_shipped_paths_from_another_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = ArenaEnvGraphSpec.from_yaml("isaaclab_arena_environments/tabletop/mug_bowl_table.yaml")
    assert [a.id for a in spec.objects][:2] == ["mug", "bowl"]
    cfg = PlacementRecordingCfg(env_spec="isaaclab_arena_environments/tabletop/mug_bowl_table.yaml",
                                output=str(tmp_path / "out.jsonl"))
    cfg.validate(check_spec=True)
    assert cfg.env_spec == os.path.join(ARENA_ROOT, "isaaclab_arena_environments/tabletop/mug_bowl_table.yaml")
    with pytest.raises(EnvSpecError, match=re.escape(f"then from the isaaclab_arena checkout {ARENA_ROOT}")):
        ArenaEnvGraphSpec.from_yaml("isaaclab_arena_environments/tabletop/no_such_scene.yaml")
    bad = PlacementRecordingCfg(env_spec="scenes/missing.yaml", output=str(tmp_path / "o.jsonl"))
    with pytest.raises(RecordingConfigError, match=r"env_spec=scenes/missing.yaml: no such file \(relative paths are "
                                                  rf"taken from the working directory {re.escape(str(tmp_path))}"):
        bad.validate(check_spec=True)


@pytest.mark.sim
@pytest.mark.slow
def test_the_documented_runner_command_works_from_another_folder(tmp_path):
    out = arena(tmp_path, RUNNER, "--env_spec", "isaaclab_arena_environments/tabletop/mug_bowl_table.yaml",
                "--num_envs", "2", "--num_steps", "2")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "arena: isaaclab_arena_environments/tabletop/mug_bowl_table.yaml is not in" in out.stderr
    assert (tmp_path / "outputs" / "arena" / "run_summary.json").is_file()
    missing = refusal(arena(tmp_path, RUNNER, "--env_spec", "isaaclab_arena_environments/none.yaml"))
    assert "isaaclab_arena_environments/none.yaml" in missing and "then from the isaaclab_arena checkout" in missing

"""What a user meets in the first hour with ``environment_runner.py`` / ``policy_runner.py``, run through
``scripts/arena_python.sh`` from a temporary folder outside the repository: paths from the working directory,
outputs in its ``./outputs/``, a drawn placement seed printed, saved and reproducing the same layouts, Isaac
Lab's tables only with ``--verbose``, the picture's env selection and notes, diagnostics that list only the
checks the scene uses, replay runs that name their file and draw a picture, clutter drawn after physics."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess

import pytest
import torch

from _outside import CLUTTER, RUNNER, TABLETOP, arena, summary

pytestmark = [pytest.mark.slow]

MANAGER_TABLE = "Active Event Terms"


def _poses(out_text: str, title: str) -> list[str]:
    block = out_text.split(title, 1)[1].split("[arena]", 1)[0]
    return [ln.strip() for ln in block.strip().splitlines()]


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    """The user's own copy of the README scene in their folder, no seed: 20 envs, 5 steps, default outputs."""
    cwd = tmp_path_factory.mktemp("user_folder")
    shutil.copy(os.path.join(TABLETOP, "mug_bowl_table.yaml"), cwd / "my_scene.yaml")
    out = arena(cwd, RUNNER, "--env_spec", "my_scene.yaml", "--num_envs", "20", "--num_steps", "5")
    assert out.returncode == 0, out.stderr[-3000:]
    return cwd, out


@pytest.mark.sim
def test_paths_come_from_the_working_directory_and_outputs_land_in_its_outputs(first_run):
    cwd, out = first_run
    folder = cwd / "outputs" / "arena"
    assert sorted(os.listdir(folder)) == ["layouts.png", "placement_diagnostics.json", "run_summary.json"]
    s = summary(folder)
    assert s["cwd"] == str(cwd) and s["picture"] == str(folder / "layouts.png")
    assert f"[arena] summary: {folder / 'run_summary.json'}" in out.stdout


@pytest.mark.sim
def test_a_run_without_seed_draws_one_prints_it_and_saves_the_command_that_reproduces_it(first_run):
    cwd, out = first_run
    s = summary(cwd / "outputs" / "arena")
    seed = s["placement_seed"]
    assert isinstance(seed, int) and s["placement_seed_drawn"] is True
    assert f"[arena] placement seed {seed} (drawn; rerun the same layouts with --placement_seed {seed})" in out.stdout
    cmd = shlex.split(s["reproduce"])
    assert cmd[-2:] == ["--placement_seed", str(seed)]
    # the saved command, run again (with other outputs and --verbose), places the same layouts in every env
    again = subprocess.run(cmd + ["--output_dir", "second", "--verbose"], cwd=cwd, capture_output=True, text=True,
                           timeout=900)
    assert again.returncode == 0, again.stderr[-3000:]
    s2 = summary(cwd / "second")
    assert s2["placement_seed"] == seed and s2["placement_seed_drawn"] is False
    for name in ("mug", "bowl"):
        assert torch.equal(torch.tensor(s2["after_reset"][name]), torch.tensor(s["after_reset"][name])), name
    assert f"[arena] placement seed {seed}\n" in again.stdout
    # --verbose shows Isaac Lab's manager tables; the default run does not
    assert MANAGER_TABLE in again.stdout and MANAGER_TABLE not in out.stdout
    assert "Warp CUDA warning" not in out.stdout + out.stderr
    assert not [ln for ln in out.stdout.splitlines() if ln.startswith(("+--", "| "))], out.stdout


@pytest.mark.sim
def test_the_picture_says_how_many_envs_it_shows_and_the_diagnostics_list_only_used_checks(first_run):
    cwd, out = first_run
    assert "(solver layouts at reset; showing 16 of 20 envs (pick others with --picture_envs))" in out.stdout
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("[placement] Validated"))
    used, unused = line.split("passed per check: ", 1)[1].split("; not used: ")
    assert {c.split("=")[0] for c in used.split(", ")} == {"no_overlap", "clearance", "on_relation", "next_to"}
    assert set(unused.split(", ")) == {"clutter_on_relation", "not_next_to", "align_with", "at_position",
                                       "position_limits", "face_to"}
    with open(cwd / "outputs" / "arena" / "placement_diagnostics.json") as f:
        batch = json.load(f)["fills"][0]["batches"][0]
    assert "face_to" not in batch["checks"] and "face_to" in batch["not_used"]
    assert batch["checks"]["next_to"]["evaluated"] > 0


@pytest.mark.sim
def test_picture_envs_picks_the_drawn_envs_and_refuses_missing_ones(first_run):
    cwd, _ = first_run
    seed = summary(cwd / "outputs" / "arena")["placement_seed"]
    out = arena(cwd, RUNNER, "--env_spec", "my_scene.yaml", "--num_envs", "20", "--num_steps", "0", "--placement_seed",
                seed, "--picture_envs", "3,17-19", "--output_dir", "picked")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "showing 4 of 20 envs" in out.stdout and summary(cwd / "picked")["picture_envs"] == 4
    bad = arena(cwd, RUNNER, "--env_spec", "my_scene.yaml", "--num_envs", "2", "--picture_envs", "5")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().splitlines()[-1] == "error: --picture_envs: env(s) [5] do not exist; this run has envs 0..1"
    assert "[solver]" not in bad.stdout  # refused before anything is solved


def _layouts_file(path, lines):
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _layout(mug_x: float) -> dict:
    poses = {"mug": {"position_xyz": [mug_x, 0.1, 0.80], "rotation_xyzw": [0.0, 0.0, 0.0, 1.0]},
             "bowl": {"position_xyz": [mug_x + 0.2, -0.1, 0.78], "rotation_xyzw": [0.0, 0.0, 0.0, 1.0]}}
    return {"source": "settled", "variations": {"scene.relation_placement": {"poses": poses}}}


@pytest.mark.sim
def test_a_replay_run_names_its_file_and_draws_the_replayed_layouts(tmp_path):
    shutil.copy(os.path.join(TABLETOP, "mug_bowl_table.yaml"), tmp_path / "scene.yaml")
    _layouts_file(tmp_path / "recorded.jsonl", [_layout(-0.3), _layout(0.1)])
    out = arena(tmp_path, RUNNER, "--env_spec", "scene.yaml", "--placement_layouts", "recorded.jsonl",
                "--num_envs", "2", "--num_steps", "0")
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"[arena] replaying recorded layouts from {tmp_path / 'recorded.jsonl'}" in out.stdout
    s = summary(tmp_path / "outputs" / "arena")
    assert s["picture_shows"] == "replayed layouts, read back after reset"
    assert os.path.getsize(s["picture"]) > 0
    assert [round(p[0], 3) for p in s["after_reset"]["mug"]] == [-0.3, 0.1]


def test_duplicate_keys_in_a_layouts_file_are_refused_with_file_line_and_key(tmp_path):
    shutil.copy(os.path.join(TABLETOP, "mug_bowl_table.yaml"), tmp_path / "scene.yaml")
    good = json.dumps(_layout(-0.3))
    # line 2 repeats "mug": plain JSON would keep the second pose (inside the table legs) without a word
    dup = good.replace('"bowl":', '"mug": {"position_xyz": [0.55, 0.35, 0.2], "rotation_xyzw": [0, 0, 0, 1]}, "bowl":')
    (tmp_path / "dup.jsonl").write_text(good + "\n" + dup + "\n")
    out = arena(tmp_path, RUNNER, "--env_spec", "scene.yaml", "--placement_layouts", "dup.jsonl", "--num_envs", "2")
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-3000:]
    line = out.stderr.strip().splitlines()[-1]
    assert line.startswith(f"error: {tmp_path / 'dup.jsonl'}:2: duplicate key 'mug'"), line


@pytest.mark.sim
def test_clutter_is_drawn_after_physics_settled(tmp_path):
    shutil.copy(os.path.join(CLUTTER, "table_clutter.yaml"), tmp_path / "clutter.yaml")
    out = arena(tmp_path, RUNNER, "--env_spec", "clutter.yaml", "--num_envs", "2", "--num_steps", "60",
                "--placement_seed", "5")
    assert out.returncode == 0, out.stderr[-3000:]
    s = summary(tmp_path / "outputs" / "arena")
    assert s["picture_shows"] == "poses after physics settled"
    # released in the air, the tray ends lower after the steps: the picture is of the final poses
    assert all(f[2] < r[2] - 0.01 for f, r in zip(s["final"]["tray"], s["after_reset"]["tray"]))
    assert re.search(r"layout picture: .*\(poses after physics settled\)", out.stdout)

"""``record_many.py``: several specs recorded as Ray tasks give the same files as the sequential run (through the
launcher, from a folder outside the checkout); an existing output is kept, not recorded twice; bad input is one
line with exit status 2."""

from __future__ import annotations

import os
import shutil

import pytest

from _outside import TABLETOP, arena, refusal

pytestmark = [pytest.mark.slow, pytest.mark.distributed]

RECORD_MANY = "isaaclab_arena/scripts/record_many.py"
OVERRIDES = ["num_envs=2", "env_spacing=0", "min_layouts=2", "max_batches=3", "settle.num_steps=20"]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("record_many")
    for name in ("scene_a", "scene_b"):
        shutil.copy(os.path.join(TABLETOP, "mug_bowl_table.yaml"), d / f"{name}.yaml")
    return d


@pytest.mark.sim
def test_specs_recorded_on_ray_equal_the_sequential_recordings(work):
    seq = arena(work, RECORD_MANY, "--specs", "scene_a.yaml", "scene_b.yaml", "--output_dir", "seq", "--", *OVERRIDES,
                timeout=1500)
    assert seq.returncode == 0, seq.stderr[-3000:]
    on_ray = arena(work, RECORD_MANY, "--specs", "scene_a.yaml", "scene_b.yaml", "--output_dir", "ray", "--ray", "--",
                   *OVERRIDES, timeout=1500)
    assert on_ray.returncode == 0, on_ray.stderr[-3000:]
    for name in ("scene_a", "scene_b"):
        a, b = (work / "seq" / f"{name}.jsonl").read_bytes(), (work / "ray" / f"{name}.jsonl").read_bytes()
        assert a == b and len([ln for ln in a.splitlines() if ln.strip()]) == 2
    # again: both files exist, nothing is recorded twice
    again = arena(work, RECORD_MANY, "--specs", "scene_a.yaml", "scene_b.yaml", "--output_dir", "ray", "--ray", "--",
                  *OVERRIDES, timeout=900)
    assert again.returncode == 0 and again.stdout.count("already recorded") == 2, again.stdout[-2000:]


@pytest.mark.parametrize("case", ["missing_spec", "output_override", "same_stem"])
def test_bad_input_is_one_line(work, case):
    args = {"missing_spec": ["--specs", "nope.yaml", "--output_dir", "bad"],
            "output_override": ["--specs", "scene_a.yaml", "--output_dir", "bad", "--", "output=x.jsonl"],
            "same_stem": ["--specs", "scene_a.yaml", "sub/scene_a.yaml", "--output_dir", "bad"]}[case]
    if case == "same_stem":
        (work / "sub").mkdir(exist_ok=True)
        shutil.copy(work / "scene_a.yaml", work / "sub" / "scene_a.yaml")
    line = refusal(arena(work, RECORD_MANY, *args, timeout=900))
    assert {"missing_spec": "nope.yaml", "output_override": "output=x.jsonl", "same_stem": "two specs"}[case] in line
    assert not (work / "bad").exists()

"""The recorder as a user runs it, from a temporary folder outside the repository: its ``--help`` example runs,
a validators module in the working directory is found, accepted layouts are kept when it is interrupted (SIGINT
after the first accepted batch, SIGTERM) in a valid JSONL with the user's umask, and every refusal is one line
with exit status 2 before anything is solved."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import stat
import time

import pytest

from isaaclab_arena import ARENA_ROOT
from isaaclab_arena.relations.placement_layouts import PlacementLayouts
from _outside import CLUTTER, RECORDER, TABLETOP, arena, arena_popen, refusal, without_recording_block

pytestmark = [pytest.mark.slow]

SHIPPED_VALIDATORS = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "placement_validators.py")


def _help_example() -> list[str]:
    """The command of the recorder's ``--help`` text, as arguments after ``scripts/arena_python.sh``."""
    from isaaclab_arena.scripts import record_placement_layouts as rec

    block = rec.__doc__.split("\n\n")[1]
    words = shlex.split(block.replace("\\\n", " "))
    assert words[0] == "scripts/arena_python.sh" and words[1] == RECORDER
    return words[1:]


@pytest.mark.sim
def test_the_help_example_runs_from_another_folder(tmp_path):
    args = _help_example()
    # the example's paths are the checkout's: from another folder, name the shipped spec by its full path
    args = [f"env_spec={os.path.join(TABLETOP, 'mug_bowl_table.yaml')}" if a.startswith("env_spec=") else a
            for a in args]
    help_out = arena(tmp_path, RECORDER, "--help", timeout=120)
    assert help_out.returncode == 0 and "max_root_height" in help_out.stdout
    out = arena(tmp_path, *args)
    assert out.returncode == 0, out.stderr[-3000:]
    written = tmp_path / "outputs" / "placements" / "mug_bowl.jsonl"
    layouts = PlacementLayouts.from_episode_jsonl(written)
    assert len(layouts) == 16
    checks = layouts.validation[0]["post_physics"]["checks"]
    assert checks["max_root_height"]["passed"] is True and checks["max_root_height"]["settings"]["max_height_m"] == 1.5


def _wait_for_batch(proc, pattern: str, timeout: float = 900) -> list[str]:
    """Reads stdout until a line matches ``pattern``; returns the lines read."""
    lines, t0 = [], time.monotonic()
    while time.monotonic() - t0 < timeout:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if re.search(pattern, line):
            return lines
    raise AssertionError("no accepted batch seen:\n" + "".join(lines[-30:]) + proc.stderr.read()[-3000:])


@pytest.mark.sim
@pytest.mark.parametrize("sig, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_recording_keeps_its_accepted_layouts_in_a_valid_file(tmp_path, sig, status):
    shutil.copy(os.path.join(TABLETOP, "mug_bowl_table.yaml"), tmp_path / "scene.yaml")
    shutil.copy(SHIPPED_VALIDATORS, tmp_path / "my_validators.py")  # the user's module, in their folder
    proc = arena_popen(tmp_path, RECORDER, "env_spec=scene.yaml", "output=rec/layouts.jsonl", "num_envs=4",
                       "env_spacing=2", "min_layouts=400", "max_batches=100", "settle.num_steps=30",
                       "+settle.validators.max_root_height._target_=my_validators.MaxRootHeightValidator",
                       umask=0o027)
    try:
        lines = _wait_for_batch(proc, r"\[recording\] batch \d+/100: [1-9]\d*/400 collected")
        shown = int(re.search(r": (\d+)/400 collected", lines[-1]).group(1))
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == status, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    target = tmp_path / "rec" / "layouts.jsonl"
    last = [ln for ln in stderr.splitlines() if ln.strip()][-1]
    kept = int(re.fullmatch(rf"interrupted: kept (\d+) accepted layouts in {re.escape(str(target))}", last).group(1))
    assert kept >= shown
    layouts = PlacementLayouts.from_episode_jsonl(target)  # every line complete and valid
    assert len(layouts) == kept and layouts.object_names == ("mug", "bowl")
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640  # 0666 less the umask 027, not mkstemp's 0600
    assert os.listdir(tmp_path / "rec") == ["layouts.jsonl"]  # no temporary file left behind


def test_refusals_are_one_line_and_come_before_any_solving(tmp_path):
    table = os.path.join(TABLETOP, "mug_bowl_table.yaml")
    line = refusal(arena(tmp_path, RECORDER, "env_spec=missing.yaml", "output=x.jsonl", timeout=300))
    assert line == (f"error: env_spec=missing.yaml: no such file (relative paths are taken from the working directory "
                    f"{tmp_path}, then from the isaaclab_arena checkout {ARENA_ROOT})")
    line = refusal(arena(tmp_path, RECORDER, f"env_spec={table}", "output=x.jsonl", "num_env=4", timeout=300))
    assert line.startswith("error: unknown recording key 'num_env' (did you mean num_envs?); accepted keys: env_spec")
    assert "+num_env" not in line  # not Hydra's advice to append the typo
    line = refusal(arena(tmp_path, RECORDER, f"env_spec={table}", "output=x.jsonl", "--num_envs", "4", timeout=300))
    assert line.startswith("error: unknown flag(s) ['--num_envs']")
    no_height = without_recording_block(os.path.join(CLUTTER, "bin_clutter.yaml"), tmp_path)  # the spec's own height
    bin_out = arena(tmp_path, RECORDER, f"env_spec={no_height}", "output=b.jsonl")
    line = refusal(bin_out)
    assert line.startswith("error: support 'bin' has no verified flat rectangular top; set "
                           "+settle.validators.support_containment.minimum_resting_heights_m.bin=")
    assert "[solver]" not in bin_out.stdout and not (tmp_path / "b.jsonl").exists()

"""A spec's own recording settings (YAML ``recording:``): parsed, written back, refused with line and suggestion,
and merged into the recorder's settings as recorder defaults < the spec's block < the command line. No simulation:
the merge is checked on the composed configuration."""

from __future__ import annotations

import pytest

from isaaclab_arena.env_spec import ArenaEnvGraphSpec
from _spec_helpers import BASE, check_error, line_no, load_error, write

BLOCK = """\
recording:
  max_batches: 8
  settle:
    num_steps: 120
    validators:
      support_containment:
        minimum_resting_heights_m: {bin: -0.04}
"""
BLOCK_DATA = {"max_batches": 8, "settle": {"num_steps": 120, "validators": {
    "support_containment": {"minimum_resting_heights_m": {"bin": -0.04}}}}}


def _compose(overrides):
    from isaaclab_arena.scripts.record_placement_layouts import compose_recording_cfg

    return compose_recording_cfg(["env_spec=s.yaml", "output=o.jsonl", *overrides])


def test_block_parses_is_carried_and_round_trips(tmp_path):
    spec = ArenaEnvGraphSpec.from_yaml(write(tmp_path, BASE + BLOCK))
    assert spec.recording == BLOCK_DATA
    assert spec.to_dict()["recording"] == BLOCK_DATA
    again = ArenaEnvGraphSpec.from_yaml(spec.to_yaml(str(tmp_path / "again.yaml")))
    assert again == spec and again.recording == BLOCK_DATA
    assert ArenaEnvGraphSpec.from_yaml(write(tmp_path, BASE, "plain.yaml")).to_dict().get("recording") is None
    env = spec.to_arena_env()
    assert env.recording == BLOCK_DATA
    assert ArenaEnvGraphSpec.from_arena_env(env).recording == BLOCK_DATA


@pytest.mark.parametrize("block,fragment,key", [
    ("recording: {max_batch: 3}\n", "unknown key 'max_batch' (did you mean 'max_batches'?); accepted: num_envs",
     "recording.max_batch"),
    ("recording: {output: x.jsonl}\n", "unknown key 'output'", "recording.output"),
    ("recording:\n  settle:\n    num_step: 60\n", "unknown key 'num_step' (did you mean 'num_steps'?)",
     "recording.settle.num_step"),
    ("recording:\n  settle:\n    validators:\n      physics_setled: {enabled: false}\n",
     "(did you mean 'physics_settled'?)", "recording.settle.validators.physics_setled"),
    ("recording:\n  settle:\n    validators:\n      support_containment: {minimum_resting_height_m: {bin: 0.0}}\n",
     "(did you mean 'minimum_resting_heights_m'?)",
     "recording.settle.validators.support_containment.minimum_resting_height_m"),
    ("recording:\n  settle: {num_steps: 0}\n", "'recording.settle.num_steps' must be an integer >= 1, got 0",
     "recording.settle.num_steps"),
    ("recording: {min_layouts: two}\n", "'recording.min_layouts' must be an integer >= 1", "recording.min_layouts"),
    ("recording: [1]\n", "'recording' must be a mapping", "recording"),
])
def test_bad_block_is_refused_with_line_and_suggestion(tmp_path, block, fragment, key):
    text = BASE + block
    err, path = load_error(tmp_path, text)
    bad = key.rsplit(".", 1)[-1]
    check_error(err, path, line_no(text, f"{bad}:" if bad != "recording" else "recording:"), fragment, key=key)


def test_spec_settings_fill_only_what_the_command_line_does_not_give():
    from isaaclab_arena.offline_placement.recording_config import (
        DEFAULT_SETTLE_NUM_STEPS,
        merge_recording_settings,
    )

    # defaults < spec
    overrides = []
    merged, taken = merge_recording_settings(_compose(overrides), BLOCK_DATA, ["env_spec=s.yaml", "output=o.jsonl"])
    assert merged.max_batches == 8 and merged.settle.num_steps == 120
    assert merged.settle.validators["support_containment"]["minimum_resting_heights_m"] == {"bin": -0.04}
    assert merged.settle.validators["pose_shift"]["max_translation_m"] == 0.002  # untouched defaults stay
    assert taken == ["max_batches=8", "settle.num_steps=120",
                     "settle.validators.support_containment.minimum_resting_heights_m.bin=-0.04"]
    # spec < command line: a key given (even at its default value), and a + addition of the same leaf
    overrides = [f"settle.num_steps={DEFAULT_SETTLE_NUM_STEPS}",
                 "+settle.validators.support_containment.minimum_resting_heights_m.bin=-0.03", "min_layouts=2"]
    merged, taken = merge_recording_settings(_compose(overrides), BLOCK_DATA, overrides)
    assert merged.settle.num_steps == DEFAULT_SETTLE_NUM_STEPS
    assert merged.settle.validators["support_containment"]["minimum_resting_heights_m"] == {"bin": -0.03}
    assert merged.max_batches == 8 and merged.min_layouts == 2
    assert taken == ["max_batches=8"]
    # a key above the spec's setting replaces it as a whole
    overrides = ["settle.validators.support_containment.enabled=false", "settle.validators.pose_shift.enabled=false"]
    merged, taken = merge_recording_settings(_compose(overrides), BLOCK_DATA, overrides)
    assert merged.settle.validators["support_containment"]["enabled"] is False
    assert merged.settle.validators["support_containment"]["minimum_resting_heights_m"] == {"bin": -0.04}
    overrides = ["+settle.validators.support_containment.minimum_resting_heights_m={shelf: 0.1}"]
    merged, taken = merge_recording_settings(_compose(overrides), BLOCK_DATA, overrides)
    assert merged.settle.validators["support_containment"]["minimum_resting_heights_m"] == {"shelf": 0.1}
    # no block: the composed settings as they are
    cfg = _compose([])
    assert merge_recording_settings(cfg, {}, []) == (cfg, [])


def test_python_cfg_counts_non_default_settings_as_given():
    from isaaclab_arena.offline_placement.recording_config import PlacementRecordingCfg, merge_recording_settings

    cfg = PlacementRecordingCfg(env_spec="s.yaml", output="o.jsonl", max_batches=3)
    merged, taken = merge_recording_settings(cfg, BLOCK_DATA)
    assert merged.max_batches == 3 and merged.settle.num_steps == 120
    assert "max_batches=8" not in taken


def test_apply_reads_the_spec_and_says_what_it_took(tmp_path):
    from isaaclab_arena.offline_placement.recording_output import apply_spec_recording

    spec = write(tmp_path, BASE + BLOCK)
    lines = []
    cfg = apply_spec_recording(_compose([f"env_spec={spec}", "settle.num_steps=30"]), log=lines.append)
    assert cfg.settle.num_steps == 30 and cfg.max_batches == 8
    assert lines == ["[recording] from the spec: max_batches=8, "
                     "settle.validators.support_containment.minimum_resting_heights_m.bin=-0.04"]
    assert apply_spec_recording(cfg, log=lines.append) is cfg and len(lines) == 1  # applied once
    lines.clear()
    apply_spec_recording(_compose([f"env_spec={write(tmp_path, BASE, 'plain.yaml')}"]), log=lines.append)
    assert lines == []


def test_recorder_console_line_and_refusal(tmp_path, capsys):
    """``record_placement_layouts.main``: the spec's settings are said in one line; a bad block is one error line
    (exit 2) before anything is simulated (a validate error after the merge stops it here too)."""
    from isaaclab_arena.scripts.record_placement_layouts import main

    spec = write(tmp_path, BASE + "recording:\n  settle: {num_steps: 60}\n  min_layouts: 99\n")
    out = tmp_path / "o.jsonl"
    assert main([f"env_spec={spec}", f"output={out}", "max_batches=2"]) == 2
    captured = capsys.readouterr()
    assert "[recording] from the spec: settle.num_steps=60, min_layouts=99\n" in captured.out
    assert "is below min_layouts=99" in captured.err and not out.exists()
    bad = write(tmp_path, BASE + "recording: {max_batch: 3}\n", "bad.yaml")
    assert main([f"env_spec={bad}", f"output={out}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {bad}:{line_no(BASE + 'recording: {max_batch: 3}', 'recording:')}: ")
    assert "did you mean 'max_batches'?" in err

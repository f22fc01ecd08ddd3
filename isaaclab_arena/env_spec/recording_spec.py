"""The spec's ``recording:`` block: recorder settings the spec carries (``record_placement_layouts.py``).

The block has the shape of the recorder's Hydra keys (``PlacementRecordingCfg``) without ``env_spec`` / ``output``::

    recording:
      settle:
        num_steps: 120
        validators:
          support_containment: {minimum_resting_heights_m: {bin: -0.04}}
      max_batches: 8

The recorder takes each setting of the block unless the command line gives it (recorder defaults < the spec's
block < the command line; ``offline_placement/recording_config.py``: ``merge_recording_settings``). Here the
block's keys and values are checked when the spec is loaded; every problem is a ``SpecIssue`` with its line.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import math
from typing import Any

from isaaclab_arena.env_spec.spec_issue import SpecIssue
from isaaclab_arena.env_spec.yaml_lines import line_of
from isaaclab_arena.utils.checks import short_repr

WHERE = "recording"
#: Recorder keys a spec cannot carry: they name the recording itself.
NOT_IN_SPEC = ("env_spec", "output")
_INT_KEYS = {"num_envs": 1, "layouts_per_env": 1, "min_layouts": 1, "max_batches": 1, "seed": None}


def recording_keys() -> list[str]:
    """Top-level keys accepted in ``recording:`` (the ``PlacementRecordingCfg`` fields but env_spec / output)."""
    from isaaclab_arena.offline_placement.recording_config import PlacementRecordingCfg

    return [f.name for f in dataclasses.fields(PlacementRecordingCfg) if f.name not in NOT_IN_SPEC]


def _unknown(key: Any, accepted: list[str], path: str, line: int | None, extra: str = "") -> SpecIssue:
    close = difflib.get_close_matches(str(key), accepted, n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return SpecIssue(f"unknown key {short_repr(key)}{hint}; accepted: {', '.join(accepted)}{extra}", where=WHERE,
                     key=f"recording.{path}", line=line)


def _mapping(value: Any, path: str, line: int | None) -> dict:
    if not isinstance(value, dict):
        key = path if path == "recording" else f"recording.{path}"
        raise SpecIssue(f"'{key}' must be a mapping, got {short_repr(value)}", where=WHERE, key=key, line=line)
    return value


def parse_recording(data: Any, line: int | None) -> dict:
    """The checked ``recording:`` block (a plain deep copy); ``{}`` for None."""
    if data is None:
        return {}
    block = _mapping(data, "recording", line)
    accepted = recording_keys()
    for key, value in block.items():
        kline = line_of(block, key) or line
        if key not in accepted:
            extra = " (env_spec and output are given on the command line)" if key in NOT_IN_SPEC else ""
            raise _unknown(key, accepted, str(key), kline, extra)
        _check_value(str(key), value, kline)
    if "settle" in block:
        _check_settle(block["settle"], line_of(block, "settle") or line)
    return copy.deepcopy(_plain(block))


def _check_value(key: str, value: Any, line: int | None) -> None:
    def bad(expected: str) -> SpecIssue:
        return SpecIssue(f"'recording.{key}' must be {expected}, got {short_repr(value)}", where=WHERE,
                         key=f"recording.{key}", line=line)

    if key in _INT_KEYS:
        minimum = _INT_KEYS[key]
        if isinstance(value, bool) or not isinstance(value, int) or (minimum is not None and value < minimum):
            raise bad("an integer" + (f" >= {minimum}" if minimum is not None else ""))
    elif key == "env_spacing":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise bad("a number of metres >= 0")
    elif key in ("viewer_eye", "viewer_lookat"):
        if value is not None and (not isinstance(value, list) or len(value) != 3 or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)):
            raise bad("three numbers [x, y, z] in metres")
    elif key == "presets":
        from isaaclab_arena.offline_placement.recording_config import ACCEPTED_PRESETS

        if value is not None and value not in ACCEPTED_PRESETS:
            raise bad(f"one of {', '.join(ACCEPTED_PRESETS)}")
    elif key == "render":
        if not isinstance(value, bool):
            raise bad("true or false")


def _check_settle(settle: Any, line: int | None) -> None:
    settle = _mapping(settle, "settle", line)
    for key, value in settle.items():
        kline = line_of(settle, key) or line
        if key not in ("num_steps", "validators"):
            raise _unknown(key, ["num_steps", "validators"], f"settle.{key}", kline)
        if key == "num_steps" and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise SpecIssue(f"'recording.settle.num_steps' must be an integer >= 1, got {short_repr(value)}",
                            where=WHERE, key="recording.settle.num_steps", line=kline)
    if "validators" in settle:
        _check_validators(settle["validators"], line_of(settle, "validators") or line)


def _check_validators(validators: Any, line: int | None) -> None:
    from isaaclab_arena.offline_placement.post_physics_checks import BUILTIN_POST_PHYSICS_VALIDATORS
    from isaaclab_arena.offline_placement.recording_config import RecordingConfigError, build_post_physics_validators

    validators = _mapping(validators, "settle.validators", line)
    builtin = sorted(BUILTIN_POST_PHYSICS_VALIDATORS)
    for name, settings in validators.items():
        path = f"settle.validators.{name}"
        vline = line_of(validators, name) or line
        if settings is None:
            continue
        settings = _mapping(settings, path, vline)
        if "_target_" in settings:
            continue  # a custom check: imported and checked by the recorder
        if name not in BUILTIN_POST_PHYSICS_VALIDATORS:
            raise _unknown(name, builtin, path, vline,
                           f" (a custom check needs {path}._target_: module.Class)")
        accepted = [f.name for f in dataclasses.fields(BUILTIN_POST_PHYSICS_VALIDATORS[name]) if f.init]
        for setting in settings:
            if setting not in accepted:
                raise _unknown(setting, accepted, f"{path}.{setting}", line_of(settings, setting) or vline)
        try:
            build_post_physics_validators({name: _plain(settings)})
        except RecordingConfigError as err:
            raise SpecIssue(str(err), where=WHERE, key=f"recording.{path}", line=vline) from None


def _plain(value: Any) -> Any:
    """Plain dicts and lists (the line-recording containers of the YAML loader dropped)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value

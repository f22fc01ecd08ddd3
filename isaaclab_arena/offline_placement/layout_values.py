"""Checks of the numbers in a recorded-layouts file (``placement_layouts.py``), quoting each as written, and the
per-layout records beside the poses (``validation_block``, ``property_record``).

JSON numbers are read as ``WrittenFloat`` (a ``float`` that keeps its text), so a refusal names ``1e308`` as the
file holds it rather than the ``inf`` a 32-bit tensor would make of it. Positions are env-local metres.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from isaaclab_arena.utils.parking_spots import PARKED_ABOVE_M

#: Default bound (metres, env-local) on replayed positions: |x| and |y| at most this, z at most this and at least
#: ``REPLAY_MIN_Z_M``. A layout beyond it (a unit mistake, a typo, an object recorded after falling away) is refused
#: naming the file line, the object and the number as written. ``from_episode_jsonl(..., position_bound_m=None)``
#: accepts any position a 32-bit float holds.
REPLAY_POSITION_BOUND_M = 100.0
#: Lowest replayed z (metres, env-local) while positions are bounded.
REPLAY_MIN_Z_M = -10.0
#: Largest magnitude a 32-bit float holds (the layout tensors are float32).
FLOAT32_MAX = 3.4028234663852886e38


class WrittenFloat(float):
    """A JSON number read as float that keeps its text as written (``text``), for messages."""

    text: str

    def __new__(cls, text: str):
        obj = super().__new__(cls, text)
        obj.text = text
        return obj


def plain_floats(data):
    """``data`` with every ``WrittenFloat`` turned back into a plain ``float`` (kept data stays plain JSON)."""
    if isinstance(data, dict):
        return {k: plain_floats(v) for k, v in data.items()}
    if isinstance(data, list):
        return [plain_floats(v) for v in data]
    return float(data) if isinstance(data, WrittenFloat) else data


def written(value) -> str:
    """The number as written in the file (``1e308``), else its repr."""
    return getattr(value, "text", None) or repr(value)


def check_float32(values, where: str, error: type[Exception]) -> None:
    """Raises ``error`` (``<where> value <as written> does not fit ...``) for a number a float32 cannot hold."""
    for v in values:
        if abs(float(v)) > FLOAT32_MAX:
            raise error(f"{where} value {written(v)} does not fit a 32-bit float (layouts are float32); positions "
                        "are env-local metres")


def check_position(value, where: str, bound: float | None, error: type[Exception]) -> None:
    """Raises ``error`` for a position (x, y, z) outside ``bound`` (see ``REPLAY_POSITION_BOUND_M``); None: no
    bound. The message is ``<where>: position_xyz <axis> = <as written> m is outside the replay bound ...``.
    A pool member's parking spot (x = y = 0, z above ``PARKED_ABOVE_M``) is accepted."""
    if bound is None or (float(value[0]) == 0.0 and float(value[1]) == 0.0 and float(value[2]) > PARKED_ABOVE_M
                         and math.isfinite(float(value[2]))):
        return
    for axis, v, lo in zip("xyz", value, (-bound, -bound, REPLAY_MIN_Z_M)):
        if not lo <= float(v) <= bound:
            raise error(f"{where}: position_xyz {axis} = {written(v)} m is outside the replay bound ({lo:g} .. "
                        f"{bound:g} m env-local: |x|, |y| <= {bound:g} m, {REPLAY_MIN_Z_M:g} m <= z <= {bound:g} m); "
                        "read with PlacementLayouts.from_episode_jsonl(path, position_bound_m=None) to accept any "
                        "position")


#: Episode variation that lists the object-pool members parked in the layout (optional; the poses say it too).
PARKED_VARIATION_KEY = "scene.parked_objects"


def extra_variations(properties: dict, names, positions) -> dict:
    """The optional variations of one layout's episode record: its physical properties and the pool members it
    parks (``positions``: (n, 3) env-local metres in ``names`` order)."""
    out: dict[str, Any] = {}
    if properties:
        out[PROPERTIES_VARIATION_KEY] = properties
    parked = [n for n, p in zip(names, positions) if float(p[2]) > PARKED_ABOVE_M]
    if parked:
        out[PARKED_VARIATION_KEY] = parked
    return out


#: Episode variation that holds the physical properties drawn for the layout's env (optional).
PROPERTIES_VARIATION_KEY = "scene.physical_properties"
#: Fields a physical-properties record may hold (``PhysicalPropertyRanges``' drawn fields).
PROPERTY_FIELDS = ("static_friction", "dynamic_friction", "restitution", "mass_kg", "mass_scale")


def property_record(record, where: str, error: type[Exception]) -> dict[str, dict[str, float]]:
    """A checked ``{asset name: {field: value}}`` physical-properties record (values finite numbers); ``error``
    (raised naming ``where``, e.g. ``path:line``) for anything else."""
    if not isinstance(record, dict):
        raise error(f"{where}: variations[\"{PROPERTIES_VARIATION_KEY}\"] must be an object "
                                    f"{{asset name: {{field: value}}}}, got {type(record).__name__}")
    out = {}
    for asset, values in record.items():
        if not isinstance(asset, str) or not isinstance(values, dict):
            raise error(f"{where}: physical properties of {asset!r} must be an object "
                                        f"{{field: value}} with fields {', '.join(PROPERTY_FIELDS)}")
        row = {}
        for name, value in values.items():
            if name not in PROPERTY_FIELDS:
                raise error(f"{where}: physical property '{name}' of '{asset}' is not one of "
                                            f"{', '.join(PROPERTY_FIELDS)}")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise error(f"{where}: physical property '{name}' of '{asset}' must be a finite "
                                            f"number, got {value!r}")
            row[name] = float(value)
        out[asset] = row
    return out


def validation_block(pre_physics: Mapping[str, bool] | None = None, required_checks: Sequence[str] | None = None,
                     post_physics: Mapping[str, Any] | None = None,
                     sampling: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``validation`` entry of one layout line.

    Args:
        pre_physics: ``{check: verdict}`` of the solver's checks for this layout (None: not solved here).
        required_checks: The checks that had to pass (None: every check in ``pre_physics``).
        post_physics: The post-physics block (``PostPhysicsResults.post_physics_block(row)``), or None.
        sampling: Settling interval and provenance (num_steps, decimation, physics_dt_s, seed, batch, env_id).
    """
    block: dict[str, Any] = {}
    if pre_physics is not None:
        checks = {str(k): bool(v) for k, v in pre_physics.items()}
        required = list(checks) if required_checks is None else [str(c) for c in required_checks]
        missing = [c for c in required if c not in checks]
        block["pre_physics"] = {"passed": not missing and all(checks[c] for c in required), "checks": checks,
                                "required_checks": required}
        if missing:
            block["pre_physics"]["missing_required_checks"] = missing
    block["post_physics"] = dict(post_physics) if post_physics is not None else {
        "passed": None, "reason": "not settled: no physics was run for this layout", "checks": {}}
    if sampling is not None:
        block["sampling"] = dict(sampling)
    return block

"""Checks of the numbers in a recorded-layouts file (``placement_layouts.py``), quoting each as written.

JSON numbers are read as ``WrittenFloat`` (a ``float`` that keeps its text), so a refusal names ``1e308`` as the
file holds it rather than the ``inf`` a 32-bit tensor would make of it. Positions are env-local metres.
"""

from __future__ import annotations

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
    bound. The message is ``<where>: position_xyz <axis> = <as written> m is outside the replay bound ...``."""
    if bound is None:
        return
    for axis, v, lo in zip("xyz", value, (-bound, -bound, REPLAY_MIN_Z_M)):
        if not lo <= float(v) <= bound:
            raise error(f"{where}: position_xyz {axis} = {written(v)} m is outside the replay bound ({lo:g} .. "
                        f"{bound:g} m env-local: |x|, |y| <= {bound:g} m, {REPLAY_MIN_Z_M:g} m <= z <= {bound:g} m); "
                        "read with PlacementLayouts.from_episode_jsonl(path, position_bound_m=None) to accept any "
                        "position")

"""Ranges of physical properties drawn per env at reset (friction, restitution, mass), and the draw itself.

Part of the placement core: plain Python + torch, no Isaac Lab. The event term that applies the draws lives in
``isaaclab_arena/environments/property_draws.py``.

A draw is a pure function of ``(seed, asset name, env key, reset count)``: the k-th reset of env e draws the same
values whatever other envs reset with it, in whatever order, and whatever else consumed torch's global RNG.

Usage::

    ranges = PhysicalPropertyRanges(static_friction=(0.4, 0.9), dynamic_friction=(0.3, 0.8), mass_kg=(0.1, 0.3))
    set_physical_property_ranges(box, ranges)        # or PhysicalPropertyRanges.from_mapping(yaml_dict, owner)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

#: Fields in draw order (the column each field's uniform number is taken from; never reorder).
PROPERTY_FIELDS = ("static_friction", "dynamic_friction", "restitution", "mass_kg", "mass_scale")
_ACCEPTED = {
    "static_friction": ">= 0",
    "dynamic_friction": ">= 0",
    "restitution": "in [0, 1]",
    "mass_kg": "> 0 (kilograms)",
    "mass_scale": "> 0 (times the spawned mass)",
}


def _range(value: Any, owner: str, name: str) -> tuple[float, float] | None:
    if value is None:
        return None
    what = f"a range [lo, hi] with lo <= hi, values {_ACCEPTED[name]}, or null (unchanged)"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = (value, value)  # a single number: a fixed value
    if (not isinstance(value, (list, tuple)) or len(value) != 2
            or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in value)):
        raise ValueError(f"{owner}: {name} must be {what}, got {value!r}")
    lo, hi = float(value[0]), float(value[1])
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
        raise ValueError(f"{owner}: {name} must be {what}, got {list(value)!r}")
    bad = {"static_friction": lo < 0, "dynamic_friction": lo < 0, "restitution": lo < 0 or hi > 1,
           "mass_kg": lo <= 0, "mass_scale": lo <= 0}[name]
    if bad:
        raise ValueError(f"{owner}: {name} must be {what}, got {list(value)!r}")
    return (lo, hi)


@dataclass(frozen=True)
class PhysicalPropertyRanges:
    """Uniform ranges drawn per env at every reset; None leaves the property as spawned.

    Attributes:
        static_friction / dynamic_friction: Coefficients of the object's collision shapes (>= 0). The drawn
            dynamic friction is capped at the drawn static friction when both are given (PhysX's constraint).
            PhysX combines them with the support's material (average by default).
        restitution: In [0, 1].
        mass_kg: Absolute mass of every body, kg (> 0); inertia scales with it (uniform density).
        mass_scale: Factor on the spawned mass (> 0); exclusive with ``mass_kg``.
    A single number instead of a range fixes the value.
    """

    static_friction: tuple[float, float] | None = None
    dynamic_friction: tuple[float, float] | None = None
    restitution: tuple[float, float] | None = None
    mass_kg: tuple[float, float] | None = None
    mass_scale: tuple[float, float] | None = None
    owner: str = "PhysicalPropertyRanges"

    def __post_init__(self):
        for name in PROPERTY_FIELDS:
            object.__setattr__(self, name, _range(getattr(self, name), self.owner, name))
        if self.mass_kg is not None and self.mass_scale is not None:
            raise ValueError(f"{self.owner}: mass_kg and mass_scale exclude each other; give one of them")

    def __eq__(self, other):
        return isinstance(other, PhysicalPropertyRanges) and self.to_dict() == other.to_dict()

    def __hash__(self):
        return hash(tuple(self.to_dict().items()))

    @property
    def has_material(self) -> bool:
        return any(getattr(self, n) is not None for n in ("static_friction", "dynamic_friction", "restitution"))

    @property
    def has_mass(self) -> bool:
        return self.mass_kg is not None or self.mass_scale is not None

    @property
    def drawn_fields(self) -> tuple[str, ...]:
        return tuple(n for n in PROPERTY_FIELDS if getattr(self, n) is not None)

    def to_dict(self) -> dict:
        """YAML form: ``{field: [lo, hi]}`` of the given fields."""
        return {n: [getattr(self, n)[0], getattr(self, n)[1]] for n in self.drawn_fields}

    @classmethod
    def from_mapping(cls, raw: Any, owner: str) -> "PhysicalPropertyRanges":
        """From the YAML mapping ``{static_friction: [lo, hi], ...}``; unknown keys refused with the accepted ones."""
        if not isinstance(raw, dict) or not raw:
            raise ValueError(f"{owner}: physical_properties must be a mapping of {', '.join(PROPERTY_FIELDS)} to "
                             f"ranges [lo, hi], got {raw!r}")
        for key in raw:
            if key not in PROPERTY_FIELDS:
                import difflib

                close = difflib.get_close_matches(str(key), PROPERTY_FIELDS, n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                raise ValueError(f"{owner}: unknown physical property {key!r}{hint}; accepted: "
                                 f"{', '.join(PROPERTY_FIELDS)}")
        return cls(**{k: raw[k] for k in raw}, owner=owner)


def set_physical_property_ranges(asset, ranges: PhysicalPropertyRanges | dict | None):
    """Attaches ``ranges`` to ``asset`` (an ``Object`` or ``RigidObjectSet``: per object or per pool); None removes
    them. The env builder adds one reset term per asset that has ranges. Returns the asset."""
    owner = f"asset '{getattr(asset, 'name', asset)}'"
    if isinstance(ranges, dict):
        ranges = PhysicalPropertyRanges.from_mapping(ranges, owner)
    elif ranges is not None and not isinstance(ranges, PhysicalPropertyRanges):
        raise ValueError(f"{owner}: physical_property_ranges must be a PhysicalPropertyRanges, a mapping or None, "
                         f"got {ranges!r}")
    asset.physical_property_ranges = ranges
    return asset


def physical_property_ranges_of(asset) -> PhysicalPropertyRanges | None:
    return getattr(asset, "physical_property_ranges", None)


# ---- the draw: a counter-based hash (no RNG state) ---------------------------------------------------------------
_M32 = 0xFFFFFFFF


def _mix32(x: torch.Tensor) -> torch.Tensor:
    """lowbias32 finaliser on int64 tensors holding 32-bit values (products wrap mod 2^64; the mask keeps 32 bits)."""
    x = x & _M32
    x = x ^ (x >> 16)
    x = (x * 0x7FEB352D) & _M32
    x = x ^ (x >> 15)
    x = (x * 0x846CA68B) & _M32
    return x ^ (x >> 16)


def _name_key(name: str) -> int:
    h = 2166136261  # FNV-1a, stable across processes (str hash is salted)
    for b in name.encode():
        h = ((h ^ b) * 16777619) & _M32
    return h


def draw_physical_properties(ranges: PhysicalPropertyRanges, seed: int, asset_name: str, env_keys: torch.Tensor,
                             reset_counts: torch.Tensor) -> dict[str, torch.Tensor]:
    """Values of every given field for envs ``env_keys`` at their ``reset_counts``-th reset: ``{field: (n,) float64}``.

    A pure function of (seed, asset name, env key, reset count, field); ``env_keys`` are global env ids.
    """
    env_keys = torch.as_tensor(env_keys, dtype=torch.int64).reshape(-1)
    reset_counts = torch.as_tensor(reset_counts, dtype=torch.int64, device=env_keys.device).reshape(-1)
    h = _mix32(torch.full_like(env_keys, int(seed) & _M32) ^ ((int(seed) >> 32) & _M32))
    h = _mix32(h ^ _name_key(asset_name))
    h = _mix32(h ^ env_keys)
    h = _mix32(h ^ (reset_counts * 0x9E3779B1))
    out = {}
    for column, name in enumerate(PROPERTY_FIELDS):
        rng = getattr(ranges, name)
        if rng is None:
            continue
        u = (_mix32(h ^ ((column + 1) * 0x85EBCA6B)) >> 8).to(torch.float64) / float(1 << 24)  # [0, 1)
        out[name] = rng[0] + u * (rng[1] - rng[0])
    if "static_friction" in out and "dynamic_friction" in out:
        out["dynamic_friction"] = torch.minimum(out["dynamic_friction"], out["static_friction"])
    return out


__all__ = ["PROPERTY_FIELDS", "PhysicalPropertyRanges", "draw_physical_properties", "physical_property_ranges_of",
           "set_physical_property_ranges"]

"""Relation lengths no placement in a scene can use: one rule for the Python API and the YAML loader.

The scene size is the largest side of the env-local bounding box (metres) of every asset with a fixed pose
(anchors, backgrounds, objects placed by ``initial_pose`` alone). A relation parameter named in
``SCENE_LENGTH_PARAMS`` whose magnitude is above it is refused: ``NextTo(distance_m=50)`` beside a 1 m table, or
``On(clearance_m=5)`` (which would release the object 5 m above its support). A ``tolerance_m`` above the scene
size only loosens its relation until it constrains nothing, so the YAML loader warns about it
(``LOOSE_LENGTH_PARAMS``). ``compile_placement_problem`` applies the rule to every relation (a scene built in
Python); the YAML loader applies it when the spec is loaded, naming the key and line
(``env_spec/plausibility.py``). A scene without a fixed asset has no known size and is not checked.
"""

from __future__ import annotations

import numpy as np

from isaaclab_arena.relations.compiler.placement_restrictions import PlacementConfigError

#: Relation parameters (metres) refused when larger than the scene size.
SCENE_LENGTH_PARAMS = ("clearance_m", "distance_m", "gap_m", "offset_m", "x_half_m", "y_half_m", "z_half_m")
#: Relation parameters (metres) warned about (YAML) when larger than the scene size.
LOOSE_LENGTH_PARAMS = ("tolerance_m",)


def scene_size(lo, hi) -> float | None:
    """Largest side (metres) of the union of boxes ``lo`` / ``hi`` ((k, 3) arrays of corners); None when k = 0."""
    lo, hi = np.asarray(lo, np.float64).reshape(-1, 3), np.asarray(hi, np.float64).reshape(-1, 3)
    if lo.shape[0] == 0:
        return None
    return float(np.max(hi.max(axis=0) - lo.min(axis=0)))


def too_long_text(name: str, value: float, size: float) -> str:
    """What is wrong with parameter ``name`` = ``value`` (metres) in a scene of ``size`` metres."""
    return (f"{name}={value:g} m is larger than the whole scene ({size:.3f} m, the largest side of the fixed assets' "
            "bounds)")


def too_long_params(relation, size: float, names=SCENE_LENGTH_PARAMS) -> list[tuple[str, float]]:
    """``(name, value)`` of ``relation``'s parameters among ``names`` whose magnitude is above ``size``."""
    return [(n, v) for n, v in relation.params().items()
            if n in names and isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) > size]


def check_scene_lengths(movables, fixed_lo, fixed_hi) -> None:
    """Raises ``PlacementConfigError`` naming the asset, relation and parameter for the first relation length of
    ``movables`` above the scene size (boxes ``fixed_lo`` / ``fixed_hi`` of the fixed assets, env-local metres)."""
    size = scene_size(fixed_lo, fixed_hi)
    if size is None:
        return
    for a in movables:
        for rel in a.get_relations():
            for name, value in too_long_params(rel, size):
                raise PlacementConfigError(f"asset '{a.name}', relation {rel.describe()}: "
                                           f"{too_long_text(name, value, size)}; no placement in this scene can use "
                                           "it (scene sizes: docs/ENV_SPEC.md)")

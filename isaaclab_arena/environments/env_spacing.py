"""The default distance between env origins: derived from the scene, so that envs never overlap.

Isaac Lab lays env origins on a grid ``env_spacing`` metres apart. A scene is measured by the assets with a
fixed pose (anchors, backgrounds, objects placed by ``initial_pose`` alone): ``R`` is the largest ``|x|`` or
``|y|`` (metres) of a corner of their env-local world bounds, and the default spacing is
``2 R + ENV_SPACING_MARGIN_M`` rounded up to ``ENV_SPACING_STEP_M``. The tabletop examples (a 1.2 x 0.8 m table
at the origin) get 2.5 m. A scene with nothing fixed to measure gets ``FALLBACK_ENV_SPACING_M``. An explicit
``--env_spacing`` / ``ArenaEnvBuilderCfg.env_spacing`` / YAML ``env_spacing`` always wins.
"""

from __future__ import annotations

import math

#: Free space (metres) between the fixed parts of neighbouring envs, for objects placed beside them.
ENV_SPACING_MARGIN_M = 1.0
#: The default spacing is rounded up to a multiple of this (metres).
ENV_SPACING_STEP_M = 0.5
#: Spacing (metres) of a scene without any fixed asset to measure.
FALLBACK_ENV_SPACING_M = 2.5

Box = tuple[tuple[float, float, float], tuple[float, float, float]]


def world_box(asset) -> Box | None:
    """Env-local world AABB (metres) of an asset at its fixed pose; None without a fixed pose or bounds."""
    from isaaclab_arena.utils.pose import quat_rotate

    try:
        pose = asset.get_world_pose()
        box = asset.get_bounding_box()
    except (NotImplementedError, ValueError, KeyError):
        return None
    if pose is None:
        return None
    corners = [(x, y, z) for x in (box.min_point[0], box.max_point[0]) for y in (box.min_point[1], box.max_point[1])
               for z in (box.min_point[2], box.max_point[2])]
    pts = [tuple(p + o for p, o in zip(quat_rotate(pose.rotation_xyzw, c), pose.position_xyz)) for c in corners]
    return (tuple(min(p[i] for p in pts) for i in range(3)), tuple(max(p[i] for p in pts) for i in range(3)))


def is_fixed(asset) -> bool:
    """An anchor, or an asset that no relation moves and that has a pose."""
    return asset.is_anchor or (not asset.has_placement_relations and asset.get_world_pose() is not None)


def fixed_boxes(assets) -> list[Box]:
    """World boxes of every fixed asset whose bounds can be read."""
    return [b for b in (world_box(a) for a in assets if is_fixed(a)) if b is not None]


def default_env_spacing(assets) -> float:
    """The default env spacing (metres) of a scene made of ``assets`` (see the module docstring)."""
    boxes = fixed_boxes(assets)
    if not boxes:
        return FALLBACK_ENV_SPACING_M
    reach = max(abs(v) for lo, hi in boxes for v in (lo[0], lo[1], hi[0], hi[1]))
    return math.ceil((2.0 * reach + ENV_SPACING_MARGIN_M) / ENV_SPACING_STEP_M - 1e-9) * ENV_SPACING_STEP_M

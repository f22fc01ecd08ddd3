"""Values a spec can hold but a user cannot mean: refused (or warned) at load, naming the YAML key and line.

The scene box is the env-local world bounding box (metres) of every asset with a fixed pose: anchors,
backgrounds and objects placed by ``initial_pose`` alone. Its largest side is the scene size. A spec without
such an asset has no known extent and skips these checks. Rules:

* **Lengths larger than the scene** (refused; the rule of ``relations/compiler/scene_lengths.py``, which the compile applies
  to scenes built in Python): a relation parameter named in ``SCENE_LENGTH_PARAMS``
  (``clearance_m``, ``distance_m``, ``gap_m``, ``offset_m``, ``x_half_m`` / ``y_half_m`` / ``z_half_m``) above
  the scene size. ``On.clearance_m: 5.0`` on a 0.75 m table would release the object 5 m above it.
  A ``tolerance_m`` above the scene size only loosens its relation until it constrains nothing: warned.
* **Position limits that exclude every support** (refused): ``position_limits_box`` (``x_limits``,
  ``y_limits``, ``z_limits``), ``position_limits_cylindrical`` (``radius_min`` / ``radius_max`` around the
  centre) and ``at_position`` (``x``, ``y``, ``z``) on a subject that sits ``On`` / ``ClutterOn`` fixed supports,
  when the limits leave no origin position over any of them. The test is lenient: a support's footprint is
  widened by the subject's largest horizontal reach from its origin (any yaw), its height band by the
  subject's largest reach plus the relation's clearance, so only limits that no placement could meet are
  refused. For a subject without a fixed support, limits that lie entirely outside the scene box widened by
  ``OUTSIDE_MARGIN_M`` are warned (the object would stand outside its env, maybe in a neighbour's).

Negative sizes, clearances and distances are refused earlier by the registry factories and the relation
constructors (they must be >= 0 / > 0).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from isaaclab_arena.env_spec.nodes import RelationNode
from isaaclab_arena.env_spec.spec_issue import EnvSpecWarning, SpecIssue, issue_error
from isaaclab_arena.environments.env_spacing import Box, fixed_boxes, world_box
from isaaclab_arena.relations.compiler.scene_lengths import (
    LOOSE_LENGTH_PARAMS,
    SCENE_LENGTH_PARAMS,
    too_long_params,
    too_long_text,
)

#: Margin (metres) around the scene box within which a subject without a fixed support may be limited silently.
OUTSIDE_MARGIN_M = 1.0
#: YAML kinds whose parent is a support the subject stands on.
SUPPORT_KINDS = ("on", "clutter_on")

def _corners(box) -> list[tuple[float, float, float]]:
    return [(x, y, z) for x in (box.min_point[0], box.max_point[0]) for y in (box.min_point[1], box.max_point[1])
            for z in (box.min_point[2], box.max_point[2])]


def scene_box(assets: dict) -> Box | None:
    """Union of the world boxes of every fixed-pose asset; None when there is none."""
    boxes = fixed_boxes(assets.values())
    if not boxes:
        return None
    return (tuple(min(b[0][i] for b in boxes) for i in range(3)), tuple(max(b[1][i] for b in boxes) for i in range(3)))


def _reach(asset) -> tuple[float, float]:
    """(horizontal, 3-D) largest distance (metres) from the asset's origin to a corner of its bounds (of any
    member, for an object set)."""
    corners = [c for member in getattr(asset, "objects", [asset]) for c in _corners(member.get_bounding_box())]
    return max(math.hypot(c[0], c[1]) for c in corners), max(math.dist(c, (0.0, 0.0, 0.0)) for c in corners)


def _allowed(relation, kind: str) -> dict[str, tuple[float, float]] | None:
    """Origin interval per axis (``x``/``y``/``z``) that a limiting relation allows, keyed for its YAML keys."""
    if kind in ("position_limits_box", "at_position"):
        out = {}
        for axis in "xyz":
            if kind == "position_limits_box":
                lo, hi = getattr(relation, f"{axis}_limits")
            else:
                lo = hi = getattr(relation, axis)
            out[axis] = (-math.inf if lo is None else lo, math.inf if hi is None else hi)
        return out
    return None


def _box_key(kind: str, axis: str) -> str:
    return f"params.{axis}_limits" if kind == "position_limits_box" else f"params.{axis}"


def _excluding_key(relation, kind: str, region: Box) -> str | None:
    """The key of ``relation`` whose limits leave no origin inside ``region``; None when some origin is left."""
    lo, hi = region
    if kind == "position_limits_cylindrical":
        cx, cy = relation.center_x, relation.center_y
        near = math.hypot(max(lo[0] - cx, 0.0, cx - hi[0]), max(lo[1] - cy, 0.0, cy - hi[1]))
        far = max(math.hypot(x - cx, y - cy) for x in (lo[0], hi[0]) for y in (lo[1], hi[1]))
        if relation.radius_max is not None and relation.radius_max < near:
            return "params.radius_max"
        if relation.radius_min is not None and relation.radius_min > far:
            return "params.radius_min"
        return None
    for i, axis in enumerate("xyz"):
        a, b = _allowed(relation, kind)[axis]
        if b < lo[i] or a > hi[i]:
            return _box_key(kind, axis)
    return None


def _support_region(subject, support_rel, support_box: Box) -> Box:
    """Where the subject's origin can be when it stands on a support with world box ``support_box``."""
    horizontal, full = _reach(subject)
    (x0, y0, _), (x1, y1, top) = support_box
    clearance = getattr(support_rel, "clearance_m", 0.0)
    return ((x0 - horizontal, y0 - horizontal, top - full), (x1 + horizontal, y1 + horizontal, top + clearance + full))


def _limit_problems(assets: dict, built: list, scene: Box) -> tuple[list, list]:
    """(refusals, warnings) as ``(node, key, message)`` for limits that exclude every support / the scene."""
    refusals, notes = [], []
    for node, relation in built:
        if node.kind not in ("position_limits_box", "position_limits_cylindrical", "at_position"):
            continue
        subject = assets[node.subject]
        supports = [(r, world_box(r.parent)) for r in subject.get_relations()
                    if r.yaml_kind in SUPPORT_KINDS and r.parent is not None]
        if supports and all(box is not None and r.parent.is_anchor for r, box in supports):
            keys = [_excluding_key(relation, node.kind, _support_region(subject, r, box)) for r, box in supports]
            if all(keys):
                (x0, y0, _), (x1, y1, top) = supports[0][1]
                names = ", ".join(f"'{r.parent.name}'" for r, _ in supports)
                refusals.append((node, keys[0], f"the limits leave '{subject.name}' no position over its support "
                                 f"{names} (x {x0:.3f} .. {x1:.3f} m, y {y0:.3f} .. {y1:.3f} m, top at z = {top:.3f} m, "
                                 "widened by the subject's reach); change the limits or the support"))
        elif not supports:
            m = OUTSIDE_MARGIN_M
            widened = (tuple(v - m for v in scene[0]), tuple(v + m for v in scene[1]))
            key = _excluding_key(relation, node.kind, widened)
            if key is not None:
                notes.append((node, key, f"the limits keep '{subject.name}' more than {m:g} m outside the scene "
                              f"(fixed assets span x {scene[0][0]:.3f} .. {scene[1][0]:.3f} m, y {scene[0][1]:.3f} .. "
                              f"{scene[1][1]:.3f} m); it may stand in a neighbouring env"))
    return refusals, notes


def check_plausible(assets: dict, built: list[tuple[RelationNode, Any]], source: str = "<dict>") -> None:
    """Raises ``SpecIssue`` for the first value of the rules above that cannot be meant; warns
    (``EnvSpecWarning``) for the doubtful ones. ``built`` pairs each relation node with its relation object."""
    scene = scene_box(assets)
    if scene is None:
        return
    size = max(h - l for l, h in zip(*scene))
    notes = []
    for node, relation in built:
        for name, value in too_long_params(relation, size, SCENE_LENGTH_PARAMS + LOOSE_LENGTH_PARAMS):
            if name not in node.params:
                continue
            text = too_long_text(name, value, size)
            key = f"params.{name}"
            if name in SCENE_LENGTH_PARAMS:
                raise SpecIssue(f"{text}; no placement in this scene can use it (scene sizes: docs/ENV_SPEC.md)",
                                where=node.where, key=key, line=node.key_line(key))
            if name in LOOSE_LENGTH_PARAMS:
                notes.append((node, key, f"{text}, so the relation constrains nothing"))
    refusals, limit_notes = _limit_problems(assets, built, scene)
    if refusals:
        node, key, text = refusals[0]
        raise SpecIssue(text, where=node.where, key=key, line=node.key_line(key))
    for node, key, text in notes + limit_notes:
        warnings.warn(str(issue_error(SpecIssue(text, where=node.where, key=key, line=node.key_line(key)), source)),
                      EnvSpecWarning, stacklevel=2)

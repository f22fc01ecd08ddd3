"""Where a relation-placed root is expected to come to rest after the recorder releases it.

The solver places an ``On`` subject with its bottom ``clearance_m`` above its support's top: the **release
gap**. Physics then drops it by that gap, so its **expected resting pose** is its release (solved) pose
lowered by the gap, plus whatever its support itself drops (a mug ``On`` a box ``On`` the table drops by both
gaps). A ``ClutterOn`` subject is released at least ``clearance_m`` above its support (often higher), so its
expected rest is its release pose lowered until its bottom reaches the support's resting surface. Every
other root (anchors, kinematic or gravity-free bodies, fixed-base articulations and the robot, objects with
an ``initial_pose``) is expected to rest where it was released. Rotations are never changed.

``expected_rest_poses`` is the one definition; the post-physics checks (``pose_shift``, the support motion
of ``support_containment``) measure from it. ``rest_rules_from_assets`` reads the rules from the placement
assets. Frames and units: env-local world poses (env origin subtracted), xyz metres + xyzw quaternions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Protocol

import torch

from isaaclab_arena.assets.geometry_reader import spawn_cfgs_of
from isaaclab_arena.offline_placement.pose_math import world_aabb


class SettledLayouts(Protocol):
    """What the expected rest reads of a batch of released layouts (``SettledBatch`` has these fields; a
    protocol keeps this module from importing the batch module, which imports ``RestRule`` from here)."""

    initial_root_poses: Mapping[str, torch.Tensor]
    supports: Mapping[str, Any]
    clutter_local_bounds: Mapping[str, tuple]
    rest_rules: Mapping[str, "RestRule"]


class ExpectedRestError(ValueError):
    """Rest rules that do not fit a batch (an unknown support, a cycle of supports)."""


@dataclass(frozen=True)
class RestRule:
    """How one root settles after its release (a root without a rule rests at its release pose).

    Attributes:
        gap_m: The release gap of an ``On`` subject that falls (its ``clearance_m``), metres >= 0. For a
            ``ClutterOn`` subject: its minimum clearance (informational; the drop comes from geometry).
        support: Scene key of the root it rests on when that root is itself recorded (so its drop adds
            to this one: chains); for ``ClutterOn``, the support's key in ``SettledBatch.supports``. None
            for a fixed support (an anchor).
        clutter: True for a ``ClutterOn`` drop: it falls until its bottom (world AABB of its local bounds
            at the release pose) reaches the support's resting surface (``SupportInfo.rest_height_m``, else
            the support's top ``local_max[2]``, in the support's local frame).
    """

    gap_m: float = 0.0
    support: str | None = None
    clutter: bool = False

    def __post_init__(self):
        gap = float(self.gap_m)
        if not gap >= 0.0 or gap == float("inf"):
            raise ExpectedRestError(f"RestRule.gap_m must be a finite number >= 0 (metres), got {self.gap_m!r}")
        object.__setattr__(self, "gap_m", gap)


def expected_rest_drops_m(batch: SettledLayouts, keys: Iterable[str] | None = None) -> dict[str, torch.Tensor]:
    """``{root key: (E,) drop}``: how far (metres, down along env-local world Z) each root of ``batch`` (or of
    ``keys``, plus the supports they rest on) is expected to fall from its release pose
    (``batch.initial_root_poses``) to its resting pose.

    On subjects: ``gap_m`` plus the drop of the root they rest on (a chain adds every gap down to the fixed
    support). ClutterOn subjects: release bottom minus the support's resting surface (at the support's own
    expected rest), never negative. Roots without a rule: 0.

    Raises:
        ExpectedRestError: a rule names a support that is neither a root nor in ``batch.supports``, or the
            supports form a cycle.
    """
    rules: Mapping[str, RestRule] = batch.rest_rules
    drops: dict[str, torch.Tensor] = {}
    visiting: list[str] = []

    def drop(key: str) -> torch.Tensor:
        if key in drops:
            return drops[key]
        release = batch.initial_root_poses[key]
        rule = rules.get(key)
        if rule is None:
            drops[key] = torch.zeros(release.shape[0], dtype=release.dtype, device=release.device)
            return drops[key]
        if key in visiting:
            raise ExpectedRestError(f"expected rest: the supports of {visiting[visiting.index(key):] + [key]} form a "
                                    "cycle; every chain of On relations must end on a fixed support")
        visiting.append(key)
        try:
            if rule.clutter:
                d = _clutter_drop(batch, key, rule, release, drop)
            else:
                d = torch.full((release.shape[0],), rule.gap_m, dtype=release.dtype, device=release.device)
                if rule.support is not None:
                    if rule.support not in batch.initial_root_poses:
                        raise ExpectedRestError(f"expected rest of '{key}': its support '{rule.support}' is not a "
                                                f"recorded root; roots: {sorted(batch.initial_root_poses)}")
                    d = d + drop(rule.support).to(d.device, d.dtype)
        finally:
            visiting.pop()
        drops[key] = d
        return d

    for key in (list(keys) if keys is not None else list(batch.initial_root_poses)):
        drop(key)
    return drops


def _clutter_drop(batch, key, rule, release, drop) -> torch.Tensor:
    info = batch.supports.get(rule.support) if rule.support is not None else None
    if info is None or key not in batch.clutter_local_bounds:
        raise ExpectedRestError(f"expected rest of ClutterOn object '{key}': support '{rule.support}' has no "
                                f"SupportInfo or the object has no local bounds; supports: {sorted(batch.supports)}")
    e = release.shape[0]

    def rows(t, width):  # (width,) or (E, width) -> (E, width)
        t = t.to(release.device, release.dtype)
        return t.reshape(1, width).expand(e, width) if t.dim() == 1 else t

    lo, hi = (rows(b, 3) for b in batch.clutter_local_bounds[key])
    bottom = world_aabb(release, lo, hi)[0][:, 2]
    if rule.support in batch.initial_root_poses:  # a relation-placed support: at its own expected rest
        support_z = batch.initial_root_poses[rule.support][:, 2].to(release.device, release.dtype) - drop(rule.support)
    else:  # a fixed (anchored) support
        support_z = rows(info.poses, 7)[:, 2]
    surface_local = info.rest_height_m if info.rest_height_m is not None else rows(info.local_max, 3)[:, 2]
    return (bottom - (support_z + surface_local)).clamp_min(0.0)


def expected_rest_poses(batch: SettledLayouts, keys: Iterable[str] | None = None) -> dict[str, torch.Tensor]:
    """The expected resting pose of every root (or of ``keys``): ``{key: (E, 7)}``.

    Each is the root's release pose (``batch.initial_root_poses``: env-local world, xyz metres + xyzw) with
    its Z lowered by ``expected_rest_drops_m`` (the release gaps down its chain of supports; the geometric
    drop for ClutterOn); X, Y and the rotation are the release pose's. Rows are env ids, as in the batch. A parked
    object-pool member (at its parking spot, out of the physics: ``environments/object_pools.py``) rests where it
    was released.
    """
    keys = list(keys) if keys is not None else list(batch.initial_root_poses)
    from isaaclab_arena.utils.parking_spots import is_parked

    drops = expected_rest_drops_m(batch, keys)
    out = {}
    for key in keys:
        pose = batch.initial_root_poses[key].clone()
        drop = drops[key].to(pose.device, pose.dtype)
        pose[:, 2] = pose[:, 2] - torch.where(is_parked(pose[:, :3]), torch.zeros_like(drop), drop)
        out[key] = pose
    return out


# ---- rules from the placement assets ---------------------------------------------------------------------------
def rest_rules_from_assets(assets: Iterable, root_keys: Iterable[str], robot_keys: Iterable[str] = ()
                           ) -> dict[str, RestRule]:
    """``{root key: RestRule}`` of the relation-placed roots among ``assets`` that settle under gravity.

    - ``On`` subject that falls (a dynamic body with gravity: not an anchor, not kinematic, not gravity-free,
      not a fixed-base articulation, not the robot): ``gap_m`` = its ``clearance_m``; ``support`` = the
      parent's root key when the parent is a recorded, non-anchor root (chains), else None.
    - ``ClutterOn`` subject: ``clutter=True``, ``support`` = the support's scene key.
    - anything else (the robot, kinematic bodies, anchors, ``initial_pose`` objects): no rule (rests where
      it was released).

    Args:
        assets: The placement assets (``arena_env.get_placement_assets()`` or the pool's assets).
        root_keys: The scene's root keys (rules are made only for these).
        robot_keys: Root keys owned by the robot embodiment (never falls: fixed base, gravity off).
    """
    from isaaclab_arena.relations.relations import ClutterOn, On

    roots, robots = set(root_keys), set(robot_keys)
    rules: dict[str, RestRule] = {}
    for asset in assets:
        keys = [k for k in _root_keys(asset) if k in roots]
        if not keys or getattr(asset, "is_anchor", False):
            continue
        getter = getattr(asset, "get_relations_of", None)
        if getter is None:
            continue
        clutter = list(getter(ClutterOn))
        if clutter:
            rel = clutter[0]
            support = _root_keys(rel.parent)
            rule = RestRule(float(rel.clearance_m), support[0] if support else rel.parent.name, clutter=True)
        else:
            on = list(getter(On))
            if not on or not _falls(asset, robots):
                continue
            parent = on[0].parent
            parent_keys = [k for k in _root_keys(parent) if k in roots]
            chained = parent_keys[0] if parent_keys and not getattr(parent, "is_anchor", False) else None
            rule = RestRule(float(on[0].clearance_m), chained)
        for k in keys:
            rules[k] = rule
    return rules


def _root_keys(asset) -> list[str]:
    getter = getattr(asset, "get_scene_root_keys", None)
    return list(getter()) if getter is not None else []


def _prop_objects(props) -> list:
    """Property configs as a flat list (a config, a list of configs, or ``{prim pattern: config(s)}``)."""
    if props is None:
        return []
    if isinstance(props, Mapping):
        return [p for v in props.values() for p in _prop_objects(v)]
    if isinstance(props, (list, tuple)):
        return [p for v in props for p in _prop_objects(v)]
    return [props]


def _falls(asset, robot_keys: set[str]) -> bool:
    """True when physics drops the asset onto its support: a dynamic body with gravity, not the robot."""
    from isaaclab_arena.assets.object_type import ObjectType
    from isaaclab_arena.embodiments.embodiment import Embodiment

    if robot_keys & set(_root_keys(asset)) or isinstance(asset, Embodiment) or \
            getattr(asset, "object_type", None) == ObjectType.BASE:
        return False
    for cfg in spawn_cfgs_of(asset):
        for p in _prop_objects(getattr(cfg, "rigid_props", None)):
            if getattr(p, "kinematic_enabled", False) or getattr(p, "disable_gravity", False):
                return False
        for p in _prop_objects(getattr(cfg, "articulation_props", None)):
            if getattr(p, "fix_root_link", False):
                return False
    return True


__all__ = ["ExpectedRestError", "RestRule", "expected_rest_drops_m", "expected_rest_poses", "rest_rules_from_assets"]

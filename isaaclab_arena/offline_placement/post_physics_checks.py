"""The built-in post-physics checks, registered under their check names (``settle.validators.<check>``):
``physics_settled``, ``pose_shift``, ``articulation_link_shift``, ``support_containment``. Each computes
every env's verdict in batched torch; only failing envs get a message. Lengths in metres, angles in degrees
where a field says so."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar, Sequence

import torch

from isaaclab_arena.offline_placement.pose_math import is_upright_quarter_turn, quat_angle_deg, relative_pose, world_aabb
from isaaclab_arena.offline_placement.post_physics_validation import (
    PostPhysicsConfigError,
    PostPhysicsPlacementValidator,
    fmt,
    positive_setting,
    worst,
)
from isaaclab_arena.relations.validation.registry import register_validator


@register_validator
@dataclass
class PhysicsSettledValidator(PostPhysicsPlacementValidator):
    """Every root, robot included, ends slower than the limits."""

    check: ClassVar[str] = "physics_settled"
    lin_vel_thresh: float = 0.1
    """Largest accepted final root linear speed, m/s."""
    ang_vel_thresh: float = 0.1
    """Largest accepted final root angular speed, rad/s."""

    def __post_init__(self):
        super().__post_init__()
        self.lin_vel_thresh = positive_setting(self.lin_vel_thresh, self.check, "lin_vel_thresh")
        self.ang_vel_thresh = positive_setting(self.ang_vel_thresh, self.check, "ang_vel_thresh")

    def validate(self, batch):
        keys = batch.root_keys
        lin = torch.linalg.vector_norm(batch.stacked(batch.final_root_lin_vel, keys), dim=-1)  # (B, K)
        ang = torch.linalg.vector_norm(batch.stacked(batch.final_root_ang_vel, keys), dim=-1)
        ratio = torch.maximum(lin / max(self.lin_vel_thresh, 1e-12), ang / max(self.ang_vel_thresh, 1e-12))
        failed_k = ~((lin <= self.lin_vel_thresh) & (ang <= self.ang_vel_thresh))
        failed = failed_k.any(dim=-1)
        worst_k, worst_v = worst(torch.where(failed_k, ratio, torch.zeros_like(ratio)))
        msgs = {}
        for row in torch.nonzero(failed).flatten().tolist():
            k = int(worst_k[row])
            msgs[row] = (keys[k], f"{keys[k]}: final linear speed {fmt(float(lin[row, k]))} m/s, angular speed "
                                  f"{fmt(float(ang[row, k]))} rad/s; limits {self.lin_vel_thresh:g} m/s and "
                                  f"{self.ang_vel_thresh:g} rad/s", float(worst_v[row]))
        return self._reports(batch, failed, msgs)


@dataclass
class ShiftLimits:
    """The limits, applicability and setting checks the two shift checks share (a field mixin, not a validator).
    The check lists what it compares in ``_keys(batch)``; ``_not_applicable`` says why when that is empty."""

    max_translation_m: float = 0.002
    """Largest accepted translation, metres (a root's distance from its expected resting pose, or a link's
    root-relative motion)."""
    max_rotation_deg: float = 2.0
    """Largest accepted rotation, degrees (a root's rotation from its expected resting pose, or a link's
    root-relative rotation)."""

    def __post_init__(self):
        super().__post_init__()
        self.max_translation_m = positive_setting(self.max_translation_m, self.check, "max_translation_m")
        self.max_rotation_deg = positive_setting(self.max_rotation_deg, self.check, "max_rotation_deg")

    def is_applicable(self, batch):
        return (bool(self._keys(batch)), self._not_applicable)


def shift_reports(v, batch, labels, trans, rot, verb, drops=None):
    """Reports of a shift check from (B, K) translations (m) and rotations (deg) of the objects ``labels``.

    ``drops``: optional (B, K) expected drops (m) the shifts were measured after; a failing object with a
    drop names it (``from its expected resting pose (the release pose lowered <drop> m by the release gap)``)."""
    failed_k = ~((trans <= v.max_translation_m) & (rot <= v.max_rotation_deg))
    ratio = torch.maximum(trans / max(v.max_translation_m, 1e-12), rot / max(v.max_rotation_deg, 1e-12))
    failed = failed_k.any(dim=-1)
    worst_k, worst_v = worst(torch.where(failed_k, ratio, torch.zeros_like(ratio)))
    msgs = {}
    for row in torch.nonzero(failed).flatten().tolist():
        k = int(worst_k[row])
        subject = labels[k]
        drop = float(drops[row, k]) if drops is not None else 0.0
        where = (f" from its expected resting pose (the release pose lowered {fmt(drop)} m by the release gap)"
                 if drop > 0.0 else "")
        msgs[row] = (subject, f"{subject}: {verb} {fmt(float(trans[row, k]))} m and rotated "
                              f"{fmt(float(rot[row, k]))} deg{where}; limits {v.max_translation_m:g} m and "
                              f"{v.max_rotation_deg:g} deg", float(worst_v[row]))
    return v._reports(batch, failed, msgs)


@register_validator
@dataclass
class PoseShiftValidator(ShiftLimits, PostPhysicsPlacementValidator):
    """Non-clutter roots end at their expected resting pose (robot and supports included).

    ``max_translation_m`` / ``max_rotation_deg`` bound the root's translation (metres) and rotation (degrees)
    from its **expected resting pose** (``expected_rest.expected_rest_poses``: the release pose lowered by the
    On release gap, ``clearance_m``, summed down a chain of supports; the release pose itself for the robot,
    anchors, kinematic bodies and ``initial_pose`` objects), env-local.
    """

    check: ClassVar[str] = "pose_shift"
    _not_applicable: ClassVar[str] = "every root is a ClutterOn drop"

    def _keys(self, batch):
        return [k for k in batch.root_keys if k not in batch.clutter_keys]

    def validate(self, batch):
        keys = self._keys(batch)
        rest = batch.expected_rest_poses(keys)
        p0, p1 = batch.stacked(rest, keys), batch.stacked(batch.final_root_poses, keys)
        drops = batch.stacked(batch.initial_root_poses, keys)[..., 2] - p0[..., 2]
        trans = torch.linalg.vector_norm(p1[..., :3] - p0[..., :3], dim=-1)
        rot = quat_angle_deg(p0[..., 3:], p1[..., 3:])
        return shift_reports(self, batch, keys, trans, rot, "moved", drops=drops)


@register_validator
@dataclass
class ArticulationLinkShiftValidator(ShiftLimits, PostPhysicsPlacementValidator):
    """Links of articulated task objects keep their pose relative to the object's root (robots excluded).

    ``max_translation_m`` / ``max_rotation_deg`` bound the change of a link's root-relative position (metres)
    and rotation (degrees).
    """

    check: ClassVar[str] = "articulation_link_shift"
    _not_applicable: ClassVar[str] = "no articulated task objects"

    def _keys(self, batch):
        return [k for k in batch.final_link_poses if k not in batch.robot_keys]

    def applies_to_scene(self, has_clutter, has_articulated_task_objects):
        return has_articulated_task_objects

    def validate(self, batch):
        keys = self._keys(batch)
        idx = batch.env_index
        rel0, rel1, labels = [], [], []
        for k in keys:  # one tensor per articulated object (link counts differ); math below is batched
            n_links = batch.final_link_poses[k].shape[1]
            r0 = batch.initial_root_poses[k].index_select(0, idx)[:, None, :].expand(-1, n_links, -1)
            r1 = batch.final_root_poses[k].index_select(0, idx)[:, None, :].expand(-1, n_links, -1)
            rel0.append(relative_pose(r0, batch.initial_link_poses[k].index_select(0, idx)))
            rel1.append(relative_pose(r1, batch.final_link_poses[k].index_select(0, idx)))
            names = batch.link_names.get(k) or [str(i) for i in range(n_links)]
            labels += [f"{k}/{n}" for n in names]
        a, b = torch.cat(rel0, dim=1), torch.cat(rel1, dim=1)  # (B, sum L, 7)
        trans = torch.linalg.vector_norm(b[..., :3] - a[..., :3], dim=-1)
        rot = quat_angle_deg(a[..., 3:], b[..., 3:])
        return shift_reports(self, batch, labels, trans, rot, "link moved relative to its root by")


@register_validator
@dataclass
class SupportContainmentValidator(PostPhysicsPlacementValidator):
    """Settled clutter stays on its support: no overhang of the support footprint, not below its floor.

    ``minimum_resting_heights_m`` maps a support's runtime scene key to a height in its scaled local frame
    (metres, before world translation) that must lie within its local Z bounds; supports without an entry
    use their verified flat top. A clutter object fails when its world AABB extends more than
    ``containment_margin_m`` past the support's world footprint, or its bottom is more than
    ``resting_height_tolerance_m`` below the minimum resting height. A support with ``initial_poses`` (a
    relation-placed kinematic support) also fails when it moved beyond the support limits.
    """

    check: ClassVar[str] = "support_containment"
    containment_margin_m: float = 0.0
    """Accepted horizontal overhang of a clutter object's bounds past the support footprint, metres."""
    resting_height_tolerance_m: float = 0.01
    """How far a clutter object's bottom may lie below the minimum resting height, metres."""
    minimum_resting_heights_m: dict[str, float] = field(default_factory=dict)
    """Support runtime scene key -> minimum resting height in the support's scaled local frame, metres."""
    max_support_translation_m: float = 0.002
    """Largest accepted motion of a relation-placed support during settling, metres."""
    max_support_rotation_deg: float = 2.0
    """Largest accepted rotation of a relation-placed support during settling, degrees."""

    def __post_init__(self):
        super().__post_init__()
        if not isinstance(self.containment_margin_m, (int, float)) or isinstance(self.containment_margin_m, bool) \
                or not math.isfinite(self.containment_margin_m):
            raise PostPhysicsConfigError(f"settle.validators.{self.check}.containment_margin_m must be a finite "
                                         f"number (metres), got {self.containment_margin_m!r}")
        self.containment_margin_m = float(self.containment_margin_m)
        self.resting_height_tolerance_m = positive_setting(self.resting_height_tolerance_m, self.check,
                                                    "resting_height_tolerance_m")
        self.max_support_translation_m = positive_setting(self.max_support_translation_m, self.check, "max_support_translation_m")
        self.max_support_rotation_deg = positive_setting(self.max_support_rotation_deg, self.check, "max_support_rotation_deg")
        heights = self.minimum_resting_heights_m
        if heights is None:
            heights = {}
        if not isinstance(heights, dict):
            raise PostPhysicsConfigError(f"settle.validators.{self.check}.minimum_resting_heights_m must map support "
                                         f"scene keys to heights in metres, got {heights!r}")
        clean = {}
        for key, h in heights.items():
            if isinstance(h, bool) or not isinstance(h, (int, float)) or not math.isfinite(h):
                raise PostPhysicsConfigError(f"settle.validators.{self.check}.minimum_resting_heights_m.{key} must be "
                                             f"a finite height in metres, got {h!r}")
            clean[str(key)] = float(h)
        self.minimum_resting_heights_m = clean

    def is_applicable(self, batch):
        return (bool(batch.clutter_keys), "no ClutterOn objects")

    def applies_to_scene(self, has_clutter, has_articulated_task_objects):
        return has_clutter

    def check_supports(self, supports: dict[str, tuple[Sequence[float], Sequence[float], bool]]) -> None:
        """Rejects unknown support keys and heights outside a support's local Z bounds (before sampling).

        Args:
            supports: ``{support_key: (local_min, local_max, flat_top)}`` of every ClutterOn support.
        """
        for key, h in self.minimum_resting_heights_m.items():
            if key not in supports:
                raise PostPhysicsConfigError(f"settle.validators.{self.check}.minimum_resting_heights_m.{key}: '{key}' "
                                             f"is not a ClutterOn support; supports (runtime scene keys): "
                                             f"{sorted(supports)}")
            lo, hi = float(supports[key][0][2]), float(supports[key][1][2])
            if not lo - 1e-9 <= h <= hi + 1e-9:
                raise PostPhysicsConfigError(f"settle.validators.{self.check}.minimum_resting_heights_m.{key}={h:g} is "
                                             f"outside the support's local Z bounds [{lo:g}, {hi:g}] m (scaled "
                                             "support-local frame, before world translation)")
        for key, (_, _, flat_top) in supports.items():
            if not flat_top and key not in self.minimum_resting_heights_m:
                raise PostPhysicsConfigError(f"support '{key}' has no verified flat rectangular top; set "
                                             f"+settle.validators.{self.check}.minimum_resting_heights_m.{key}=<local "
                                             "height in metres>, or anchor an ObjectReference to a flat surface")

    def validate(self, batch):
        keys = list(batch.clutter_keys)
        support_keys = [batch.clutter_supports[k] for k in keys]
        self.check_supports({s: (batch.supports[s].local_min.reshape(-1, 3)[0].tolist(),
                                 batch.supports[s].local_max.reshape(-1, 3)[0].tolist(),
                                 batch.supports[s].flat_top) for s in set(support_keys)})
        idx = batch.env_index
        b = len(batch.env_ids)

        def rows(t, width):  # (7,)/(3,) broadcast or (E, width) -> (B, width)
            t = t.to(idx.device)
            return t.reshape(1, width).expand(b, width) if t.dim() == 1 else t.index_select(0, idx)

        sup = [batch.supports[s] for s in support_keys]
        s_pose = torch.stack([rows(s.poses, 7) for s in sup], dim=1)  # (B, C, 7)
        s_min = torch.stack([rows(s.local_min, 3) for s in sup], dim=1)
        s_max = torch.stack([rows(s.local_max, 3) for s in sup], dim=1)
        h_local = torch.stack([rows(s.local_max, 3)[:, 2] if sk not in self.minimum_resting_heights_m else
                               torch.full((b,), self.minimum_resting_heights_m[sk], device=idx.device)
                               for s, sk in zip(sup, support_keys)], dim=1)  # (B, C) support-local heights
        c_pose = batch.stacked(batch.final_root_poses, keys)
        c_min = torch.stack([rows(batch.clutter_local_bounds[k][0], 3) for k in keys], dim=1)
        c_max = torch.stack([rows(batch.clutter_local_bounds[k][1], 3) for k in keys], dim=1)

        sw_min, sw_max = world_aabb(s_pose, s_min, s_max)
        cw_min, cw_max = world_aabb(c_pose, c_min, c_max)
        m = self.containment_margin_m
        over = torch.maximum(sw_min[..., :2] - m - cw_min[..., :2], cw_max[..., :2] - sw_max[..., :2] - m).amax(-1)
        floor = s_pose[..., 2] + h_local  # support upright: local Z maps to world Z plus translation
        below = floor - self.resting_height_tolerance_m - cw_min[..., 2]
        upright = is_upright_quarter_turn(s_pose[..., 3:], atol_rad=math.radians(0.5))
        finite = torch.isfinite(c_pose).all(-1) & torch.isfinite(s_pose).all(-1)
        failed_k = (over > 1e-6) | (below > 1e-6) | ~upright | ~finite
        severity = torch.where(finite, torch.maximum(over, below).clamp_min(0.0),
                               torch.full_like(over, float("inf")))

        # A relation-placed support must keep its solved pose.
        moved_msgs: dict[int, tuple[str, str, float]] = {}
        moving = [(sk, s) for sk, s in dict(zip(support_keys, sup)).items() if s.initial_poses is not None]
        if moving:
            # from its expected resting pose when the support is a recorded root (a kinematic one: its release pose)
            rest = batch.expected_rest_poses([sk for sk, _ in moving if sk in batch.initial_root_poses])
            p0 = torch.stack([rows(rest[sk] if sk in rest else s.initial_poses, 7) for sk, s in moving], dim=1)
            p1 = torch.stack([rows(s.poses, 7) for _, s in moving], dim=1)
            trans = torch.linalg.vector_norm(p1[..., :3] - p0[..., :3], dim=-1)
            rot = quat_angle_deg(p0[..., 3:], p1[..., 3:])
            bad = ~((trans <= self.max_support_translation_m) & (rot <= self.max_support_rotation_deg))
            for row, j in torch.nonzero(bad).tolist():
                if row not in moved_msgs:
                    sk = moving[j][0]
                    moved_msgs[row] = (sk, f"support {sk}: moved {fmt(float(trans[row, j]))} m and rotated "
                                           f"{fmt(float(rot[row, j]))} deg while settling; limits "
                                           f"{self.max_support_translation_m:g} m and {self.max_support_rotation_deg:g} deg",
                                       float("inf"))
        failed = failed_k.any(-1)
        if moved_msgs:
            failed = failed | torch.tensor([r in moved_msgs for r in range(b)], dtype=torch.bool, device=failed.device)
        worst_k, _ = worst(torch.where(failed_k, severity, torch.full_like(severity, -1.0)))
        msgs = dict(moved_msgs)
        for row in torch.nonzero(failed).flatten().tolist():
            if row in msgs:
                continue
            k = int(worst_k[row])
            key, sk = keys[k], support_keys[k]
            if not bool(finite[row, k]):
                reason = f"{key}: non-finite pose after settling on {sk}"
            elif not bool(upright[row, k]):
                reason = f"{key}: support {sk} is not upright with a quarter-turn yaw after settling"
            elif float(below[row, k]) > 1e-6:
                reason = (f"{key}: bottom at z={fmt(float(cw_min[row, k, 2]))} m is {fmt(float(below[row, k]) + self.resting_height_tolerance_m)} "
                          f"m below the minimum resting height {fmt(float(floor[row, k]))} m of {sk}; limit "
                          f"{self.resting_height_tolerance_m:g} m below (fell off or through)")
            else:
                reason = (f"{key}: bounds overhang the footprint of {sk} by {fmt(float(over[row, k]) + m)} m; "
                          f"limit {m:g} m")
            msgs[row] = (key, reason, float(severity[row, k]))
        return self._reports(batch, failed, msgs)


#: Built-in post-physics checks by name, in the order they run.
BUILTIN_POST_PHYSICS_VALIDATORS: dict[str, type[PostPhysicsPlacementValidator]] = {
    cls.check: cls for cls in (PhysicsSettledValidator, PoseShiftValidator, ArticulationLinkShiftValidator,
                               SupportContainmentValidator)
}

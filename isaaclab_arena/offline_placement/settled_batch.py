"""What the recorder measured after settling one batch: root poses before/after, velocities, links, supports.

Frames and units: every pose is env-local world (the env origin subtracted), xyz in metres + xyzw
quaternion, shape (E, 7) per scene key, where **rows are indexed by env id** (E = the scene's env count)
and ``env_ids`` names the rows this batch covers. Velocities are world-frame, m/s and rad/s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import torch

from isaaclab_arena.offline_placement.expected_rest import RestRule


class SettledBatchError(ValueError):
    """A SettledBatch whose tensors or keys do not fit together."""


@dataclass
class SupportInfo:
    """A fixed (or kinematic, relation-placed) support of ClutterOn objects.

    Attributes:
        local_min, local_max: (3,) or (E, 3) axis-aligned bounds in the support's scaled local root frame, metres.
        poses: (7,) or (E, 7) final env-local pose of the support root (upright, quarter-turn yaw).
        initial_poses: (7,) or (E, 7) pose before settling, for relation-placed supports that physics must not
            move (a movable kinematic bowl); None for fixed anchors.
        flat_top: True when the support's top at ``local_max[2]`` is a verified flat rectangular surface; a
            support without it needs ``minimum_resting_heights_m`` (e.g. a container).
        rest_height_m: Height in the support's scaled local frame (metres) where dropped objects come to rest
            (a container's inner floor, the recorder fills it from ``minimum_resting_heights_m``); None: its top
            ``local_max[2]``. Used for the expected rest of ClutterOn drops (``expected_rest.py``).
    """

    local_min: torch.Tensor
    local_max: torch.Tensor
    poses: torch.Tensor
    initial_poses: torch.Tensor | None = None
    flat_top: bool = True
    rest_height_m: float | None = None

    def __post_init__(self):
        if self.rest_height_m is not None:
            self.rest_height_m = float(self.rest_height_m)
        self.local_min = torch.as_tensor(self.local_min, dtype=torch.float32)
        self.local_max = torch.as_tensor(self.local_max, dtype=torch.float32)
        self.poses = torch.as_tensor(self.poses, dtype=torch.float32)
        if self.initial_poses is not None:
            self.initial_poses = torch.as_tensor(self.initial_poses, dtype=torch.float32)


def _as_float(t, what: str) -> torch.Tensor:
    t = torch.as_tensor(t)
    return t if t.is_floating_point() else t.to(torch.float32)


@dataclass
class SettledBatch:
    """Measured scene state of one settled batch.

    Attributes:
        env_ids: The env ids (rows) this batch covers, in report order.
        initial_root_poses: ``{scene_key: (E, 7)}`` root poses written before settling.
        final_root_poses: ``{scene_key: (E, 7)}`` root poses after ``num_steps`` env steps.
        final_root_lin_vel: ``{scene_key: (E, 3)}`` final root linear velocity, m/s.
        final_root_ang_vel: ``{scene_key: (E, 3)}`` final root angular velocity, rad/s.
        initial_link_poses / final_link_poses: ``{scene_key: (E, L, 7)}`` env-local link poses of articulated
            objects (task objects and robots alike; ``robot_keys`` marks the robot's).
        link_names: ``{scene_key: [L names]}`` for messages (optional).
        robot_keys: Root keys owned by the robot embodiment.
        clutter_keys: Root keys of ClutterOn objects (intentional drops).
        clutter_supports: ``{clutter_key: support_key}``.
        clutter_local_bounds: ``{clutter_key: (min, max)}``, each (3,) or (E, 3), local root frame, metres.
        supports: ``{support_key: SupportInfo}``; keys are runtime scene names.
        rest_rules: ``{root key: RestRule}``: how relation-placed roots settle after release (the On release
            gap, chains of On, ClutterOn drops); a root without a rule is expected to rest at its release pose.
            ``expected_rest_poses()`` is what the shift checks measure from.
        num_steps, decimation, physics_dt_s: The settling interval (env steps, physics steps per env step, s).
    """

    env_ids: list[int]
    initial_root_poses: dict[str, torch.Tensor]
    final_root_poses: dict[str, torch.Tensor]
    final_root_lin_vel: dict[str, torch.Tensor]
    final_root_ang_vel: dict[str, torch.Tensor]
    initial_link_poses: dict[str, torch.Tensor] = field(default_factory=dict)
    final_link_poses: dict[str, torch.Tensor] = field(default_factory=dict)
    link_names: dict[str, list[str]] = field(default_factory=dict)
    robot_keys: tuple[str, ...] = ()
    clutter_keys: tuple[str, ...] = ()
    clutter_supports: dict[str, str] = field(default_factory=dict)
    clutter_local_bounds: dict[str, tuple[torch.Tensor, torch.Tensor]] = field(default_factory=dict)
    supports: dict[str, SupportInfo] = field(default_factory=dict)
    rest_rules: dict[str, RestRule] = field(default_factory=dict)
    num_steps: int | None = None
    decimation: int | None = None
    physics_dt_s: float | None = None

    def __post_init__(self):
        ids = torch.as_tensor(self.env_ids, dtype=torch.long).reshape(-1)
        self.env_ids = [int(i) for i in ids.tolist()]
        if len(set(self.env_ids)) != len(self.env_ids):
            raise SettledBatchError(f"SettledBatch: env_ids {self.env_ids} repeat an env")
        self.robot_keys = tuple(self.robot_keys)
        self.clutter_keys = tuple(self.clutter_keys)
        for name in ("initial_root_poses", "final_root_poses", "final_root_lin_vel", "final_root_ang_vel",
                     "initial_link_poses", "final_link_poses"):
            setattr(self, name, {k: _as_float(v, name) for k, v in dict(getattr(self, name)).items()})
        keys = list(self.final_root_poses)
        if not keys:
            raise SettledBatchError("SettledBatch: final_root_poses is empty; at least one scene root is needed")
        num_envs = None
        for name, width in (("initial_root_poses", 7), ("final_root_poses", 7), ("final_root_lin_vel", 3),
                            ("final_root_ang_vel", 3)):
            table = getattr(self, name)
            if set(table) != set(keys):
                raise SettledBatchError(f"SettledBatch.{name} has keys {sorted(table)}, final_root_poses has "
                                        f"{sorted(keys)}; every table needs the same scene keys")
            for key, t in table.items():
                if t.dim() != 2 or t.shape[1] != width:
                    raise SettledBatchError(f"SettledBatch.{name}['{key}'] must be (E, {width}), got {tuple(t.shape)}")
                num_envs = t.shape[0] if num_envs is None else num_envs
                if t.shape[0] != num_envs:
                    raise SettledBatchError(f"SettledBatch.{name}['{key}'] has {t.shape[0]} rows, others have "
                                            f"{num_envs}; rows are indexed by env id")
        self.num_envs = int(num_envs)
        bad = [i for i in self.env_ids if i < 0 or i >= self.num_envs]
        if bad:
            raise SettledBatchError(f"SettledBatch: env_ids {bad} are outside the {self.num_envs} rows")
        if set(self.initial_link_poses) != set(self.final_link_poses):
            raise SettledBatchError(f"SettledBatch: initial_link_poses keys {sorted(self.initial_link_poses)} differ "
                                    f"from final_link_poses keys {sorted(self.final_link_poses)}")
        for key, t in self.final_link_poses.items():
            t0 = self.initial_link_poses[key]
            if key not in self.final_root_poses:
                raise SettledBatchError(f"SettledBatch: link poses of '{key}', which is not a recorded root")
            if t.dim() != 3 or t.shape[0] != self.num_envs or t.shape[2] != 7 or t0.shape != t.shape:
                raise SettledBatchError(f"SettledBatch link poses of '{key}' must be (E={self.num_envs}, L, 7) before "
                                        f"and after, got {tuple(t0.shape)} and {tuple(t.shape)}")
        for key in self.robot_keys + self.clutter_keys:
            if key not in self.final_root_poses:
                raise SettledBatchError(f"SettledBatch: '{key}' (robot/clutter key) is not a recorded root; roots: "
                                        f"{sorted(keys)}")
        for key in self.clutter_keys:
            if key not in self.clutter_supports:
                raise SettledBatchError(f"SettledBatch: clutter object '{key}' has no entry in clutter_supports")
            if key not in self.clutter_local_bounds:
                raise SettledBatchError(f"SettledBatch: clutter object '{key}' has no entry in clutter_local_bounds")
            support = self.clutter_supports[key]
            if support not in self.supports:
                raise SettledBatchError(f"SettledBatch: clutter object '{key}' rests on '{support}', which has no "
                                        f"SupportInfo; supports: {sorted(self.supports)}")
        self.clutter_local_bounds = {k: (_as_float(lo, "bounds"), _as_float(hi, "bounds"))
                                     for k, (lo, hi) in self.clutter_local_bounds.items()}
        self.rest_rules = dict(self.rest_rules)
        self._check_rest_rules()

    def _check_rest_rules(self) -> None:
        for key, rule in self.rest_rules.items():
            if not isinstance(rule, RestRule):
                raise SettledBatchError(f"SettledBatch.rest_rules['{key}'] must be a RestRule, got {rule!r}")
            if key not in self.final_root_poses:
                raise SettledBatchError(f"SettledBatch.rest_rules: '{key}' is not a recorded root; roots: "
                                        f"{sorted(self.final_root_poses)}")
            if rule.clutter:
                if rule.support not in self.supports or key not in self.clutter_local_bounds:
                    raise SettledBatchError(f"SettledBatch.rest_rules: ClutterOn object '{key}' rests on "
                                            f"'{rule.support}', which needs a SupportInfo (supports: "
                                            f"{sorted(self.supports)}) and the object's clutter_local_bounds")
            elif rule.support is not None and rule.support not in self.final_root_poses:
                raise SettledBatchError(f"SettledBatch.rest_rules: '{key}' rests on '{rule.support}', which is not a "
                                        f"recorded root; roots: {sorted(self.final_root_poses)}")
        for start in self.rest_rules:  # chains of supports end on a fixed support
            seen, key = [start], self.rest_rules[start].support
            while key in self.rest_rules:
                if key in seen:
                    raise SettledBatchError(f"SettledBatch.rest_rules: the supports of {seen[seen.index(key):] + [key]} "
                                            "form a cycle; every chain must end on a fixed support")
                seen.append(key)
                key = self.rest_rules[key].support

    # -- helpers for batched validators ------------------------------------------------------------
    @property
    def env_index(self) -> torch.Tensor:
        """(B,) int64 env ids of this batch, on the device of the pose tensors."""
        device = next(iter(self.final_root_poses.values())).device
        return torch.tensor(self.env_ids, dtype=torch.long, device=device)

    @property
    def root_keys(self) -> list[str]:
        return list(self.final_root_poses)

    def expected_rest_poses(self, keys: list[str] | None = None) -> dict[str, torch.Tensor]:
        """``{key: (E, 7)}`` expected resting poses (env-local, metres + xyzw): ``expected_rest.expected_rest_poses``."""
        from isaaclab_arena.offline_placement.expected_rest import expected_rest_poses

        return expected_rest_poses(self, keys)

    def stacked(self, table: Mapping[str, torch.Tensor], keys: list[str]) -> torch.Tensor:
        """(B, K, D) rows of this batch's envs for ``keys`` from a per-key table."""
        idx = self.env_index
        return torch.stack([table[k].index_select(0, idx.to(table[k].device)) for k in keys], dim=1)

    def settle_time_s(self) -> float | None:
        if self.num_steps is None or self.decimation is None or self.physics_dt_s is None:
            return None
        return float(self.num_steps * self.decimation * self.physics_dt_s)

    def sampling_info(self) -> dict:
        """The ``validation.sampling`` entries of the settling interval."""
        info = {"num_steps": self.num_steps, "decimation": self.decimation, "physics_dt_s": self.physics_dt_s}
        t = self.settle_time_s()
        if t is not None:
            info["settle_time_s"] = t
        return info

"""Reset event terms drawing physical properties (friction, restitution, mass) per env from an asset's
:class:`~isaaclab_arena.assets.physical_properties.PhysicalPropertyRanges`.

Why a term of our own and not Isaac Lab's ``randomize_rigid_body_material`` / ``randomize_rigid_body_mass``: those
draw from torch's global RNG, so an env's values depend on which envs reset together, in which order, and on every
other consumer of that RNG; on OV PhysX the material term also draws ``num_buckets`` materials once at start-up and
hands them out at random. Here each env's k-th reset draws from a hash of (seed, asset name, global env id, k)
(``draw_physical_properties``), and the values are written through the same physics-view calls those terms use
(OV PhysX: the ``RIGID_BODY_SHAPE_FRICTION_AND_RESTITUTION`` binding; ``set_masses_index`` /
``set_inertias_index``). :func:`isaaclab_property_terms` builds the stock terms instead, for comparison.

Replay: an env replaying recorded layouts (``ReplayPoseSource``) takes the values recorded with the layout it
was just reset into (the placement term runs first in the same reset); fields a record lacks are drawn.
:meth:`ArenaPhysicalPropertyTerm.set_override` makes the next reset of given envs apply given values.
"""

from __future__ import annotations

import logging

import torch

from isaaclab.managers import EventTermCfg, ManagerTermBase, SceneEntityCfg

from isaaclab_arena.assets.physical_properties import (
    PhysicalPropertyRanges,
    draw_physical_properties,
    physical_property_ranges_of,
)
from isaaclab_arena.environments.reset_events import PoseSourceRef, env_ids_to_tensor

logger = logging.getLogger(__name__)

#: Event-term name of an asset's property term: ``cfg.events.<TERM_PREFIX><asset name>``.
TERM_PREFIX = "arena_properties_"
_MATERIAL_COLUMNS = {"static_friction": 0, "dynamic_friction": 1, "restitution": 2}


def _is_ovphysx(asset) -> bool:
    return type(asset).__module__.split(".")[0] == "isaaclab_ov"


class ArenaPhysicalPropertyTerm(ManagerTermBase):
    """Reset term: draws and applies one asset's properties for the reset envs (see module docstring).

    Params (:func:`property_term_cfg`): ``asset_name``, ``ranges``, ``seed``, ``env_keys`` (global env id per env,
    or None). After a reset, :attr:`values` holds the applied values per env (``{field: (num_envs,) float64}``,
    NaN before the first reset) and :attr:`reset_counts` how many resets each env has had.
    """

    def __init__(self, cfg: EventTermCfg, env):
        super().__init__(cfg, env)
        p = cfg.params
        self.asset_name: str = p["asset_name"]
        # carried as a plain mapping: configclass walks and re-assigns dataclass fields (a frozen one refuses)
        self.ranges = PhysicalPropertyRanges.from_mapping(dict(p["ranges"]), f"asset '{self.asset_name}'")
        self.asset = env.scene[self.asset_name]
        n = env.scene.num_envs
        keys = p.get("env_keys")
        self.env_keys = torch.arange(n, dtype=torch.int64) if keys is None else torch.as_tensor(keys, dtype=torch.int64)
        self.reset_counts = torch.zeros(n, dtype=torch.int64)
        self.values = {f: torch.full((n,), float("nan"), dtype=torch.float64) for f in self.ranges.drawn_fields}
        self._overrides: dict[int, dict[str, float]] = {}
        self._material_view = None
        if self.ranges.has_material:
            if not _is_ovphysx(self.asset):
                raise NotImplementedError(
                    f"physical_properties of '{self.asset_name}': friction/restitution draws are implemented for OV "
                    f"PhysX (physics=ovphysx) only, got {type(self.asset).__module__}; use mass ranges only")
            import isaaclab_ov.tensor_types as TT

            self._material_type = TT.RIGID_BODY_SHAPE_FRICTION_AND_RESTITUTION
            self._material_view = self.asset.root_view
        self._default_mass = None
        self._default_inertia = None
        if self.ranges.has_mass:
            self._default_mass = self.asset.data.body_mass.torch.clone()
            self._default_inertia = self.asset.data.body_inertia.torch.clone()

    # ---- replay ----------------------------------------------------------------------------------------------
    def set_override(self, env_ids, values: list[dict[str, float]]) -> None:
        """The next reset of each env in ``env_ids`` applies ``values[i]`` (recorded values) instead of drawing;
        fields missing from a record are drawn."""
        for e, v in zip(torch.as_tensor(env_ids).reshape(-1).tolist(), values):
            self._overrides[int(e)] = dict(v)

    # ---- the term --------------------------------------------------------------------------------------------
    def __call__(self, env, env_ids, asset_name: str, ranges: dict, seed: int, env_keys=None, replay=None):
        ids = env_ids_to_tensor(env_ids, env.scene.num_envs, "cpu")
        if ids.numel() == 0:
            return
        drawn = draw_physical_properties(self.ranges, seed, self.asset_name, self.env_keys[ids], self.reset_counts[ids])
        recorded = replay.source.recorded_properties(self.asset_name, ids) if replay is not None else None
        if recorded is not None:  # the layout each env was just reset into carries its recorded values
            self.set_override(ids, recorded)
        if self._overrides:
            for row, e in enumerate(ids.tolist()):
                rec = self._overrides.pop(e, None)
                for f, v in (rec or {}).items():
                    if f in drawn:
                        drawn[f][row] = float(v)
        self.reset_counts[ids] += 1
        for f, v in drawn.items():
            self.values[f][ids] = v
        if self._material_view is not None:
            self._write_material(ids, drawn)
        if self._default_mass is not None:
            self._write_mass(ids, drawn)

    def _write_material(self, ids: torch.Tensor, drawn: dict) -> None:
        import warp as wp

        view = self._material_view
        materials = wp.to_torch(view.get_attribute(self._material_type))  # (N, shapes, 3), full buffer
        for f, col in _MATERIAL_COLUMNS.items():
            if f in drawn:
                materials[ids.to(materials.device), :, col] = drawn[f].to(materials.device, materials.dtype)[:, None]
        view.set_attribute(self._material_type, wp.from_torch(materials.contiguous(), dtype=wp.float32),
                           indices=wp.from_torch(ids.to(materials.device, torch.int32)))

    def _write_mass(self, ids: torch.Tensor, drawn: dict) -> None:
        dev = self._default_mass.device
        dids = ids.to(dev)
        default = self._default_mass[dids]  # (n, bodies)
        if "mass_kg" in drawn:
            mass = drawn["mass_kg"].to(dev, default.dtype)[:, None].expand_as(default).contiguous()
        else:
            mass = default * drawn["mass_scale"].to(dev, default.dtype)[:, None]
        self.asset.set_masses_index(masses=mass, env_ids=dids)
        inertia = self._default_inertia[dids] * (mass / default)[..., None]
        self.asset.set_inertias_index(inertias=inertia.contiguous(), env_ids=dids)


def property_term_cfg(asset_name: str, ranges: PhysicalPropertyRanges, seed: int, env_keys=None,
                      replay=None) -> EventTermCfg:
    """The reset term config of one asset (``EventTermCfg(mode="reset")``); ``replay``: the env's
    ``ReplayPoseSource`` when it replays recorded layouts (their recorded values win over draws)."""
    return EventTermCfg(func=ArenaPhysicalPropertyTerm, mode="reset",
                        params={"asset_name": asset_name, "ranges": ranges.to_dict(), "seed": int(seed),
                                "env_keys": None if env_keys is None else tuple(int(k) for k in env_keys),
                                "replay": None if replay is None else PoseSourceRef(replay)})


def add_property_terms(cfg, assets, seed: int, env_keys=None, replay=None) -> list[str]:
    """Adds one reset term per asset with ranges (after the placement term); returns the term names.
    ``replay``: the ``ReplayPoseSource`` of an env replaying recorded layouts, else None."""
    names = []
    for asset in assets:
        ranges = physical_property_ranges_of(asset)
        if ranges is None or not ranges.drawn_fields:
            continue
        name = TERM_PREFIX + asset.name
        setattr(cfg.events, name, property_term_cfg(asset.name, ranges, seed, env_keys, replay))
        names.append(name)
    return names


def property_terms_of(env) -> dict[str, ArenaPhysicalPropertyTerm]:
    """``{asset name: live term}`` of a created env (``env.unwrapped`` or the ManagerBasedRLEnv)."""
    env = getattr(env, "unwrapped", env)
    out = {}
    for name in env.event_manager.active_terms.get("reset", []):
        if name.startswith(TERM_PREFIX):
            term = env.event_manager.get_term_cfg(name).func
            out[term.asset_name] = term
    return out


def drawn_values(env, env_ids=None) -> dict[str, dict[str, list[float]]]:
    """``{asset name: {field: [value per env]}}`` applied at the last reset (what recording writes)."""
    out = {}
    for name, term in property_terms_of(env).items():
        ids = slice(None) if env_ids is None else torch.as_tensor(env_ids, dtype=torch.long)
        out[name] = {f: v[ids].tolist() for f, v in term.values.items()}
    return out


def isaaclab_property_terms(cfg, asset_name: str, ranges: PhysicalPropertyRanges, mode: str = "reset",
                            num_buckets: int = 64) -> list[str]:
    """Isaac Lab's stock terms for the same ranges (global-RNG draws; not reproducible per env): for comparison
    and the benchmark. Missing friction/restitution ranges keep the spawned values only in the mass term; the
    material term needs all three, so a missing one is drawn from [0.5, 0.5] / [0, 0] (PhysX's defaults)."""
    from isaaclab.envs import mdp

    names = []
    if ranges.has_material:
        name = f"isaaclab_material_{asset_name}"
        setattr(cfg.events, name, EventTermCfg(func=mdp.randomize_rigid_body_material, mode=mode, params={
            "asset_cfg": SceneEntityCfg(asset_name),
            "static_friction_range": ranges.static_friction or (0.5, 0.5),
            "dynamic_friction_range": ranges.dynamic_friction or (0.5, 0.5),
            "restitution_range": ranges.restitution or (0.0, 0.0),
            "num_buckets": num_buckets, "make_consistent": True}))
        names.append(name)
    if ranges.has_mass:
        name = f"isaaclab_mass_{asset_name}"
        abs_mass = ranges.mass_kg is not None
        setattr(cfg.events, name, EventTermCfg(func=mdp.randomize_rigid_body_mass, mode=mode, params={
            "asset_cfg": SceneEntityCfg(asset_name),
            "mass_distribution_params": ranges.mass_kg if abs_mass else ranges.mass_scale,
            "operation": "abs" if abs_mass else "scale", "distribution": "uniform",
            "recompute_inertia": True, "min_mass": 1e-6}))
        names.append(name)
    return names

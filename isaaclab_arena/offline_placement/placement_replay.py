"""Replay of recorded layouts: the shared reset queue and the checks of a replay configuration.

Replay order: resetting environments draw consecutive layouts from one shared queue, in reset-request
order; the queue wraps after its last layout. With 4 layouts and 3 envs, full resets draw [0, 1, 2] then
[3, 0, 1]. A partial reset consumes only as many layouts as it resets envs.

The queue hands out layout indices; ``replay_root_poses`` turns them into the batched env-local root
poses and zero root velocities that the single replay reset writer puts into the simulator (adding the
env origins). The solver is never invoked.
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Mapping, Sequence

import torch

from isaaclab_arena.offline_placement.placement_layouts import PlacementLayouts


class PlacementReplayQueue:
    """One shared queue over ``num_layouts`` layouts, consumed in reset-request order, wrapping.

    Args:
        num_layouts: Number of recorded layouts (> 0).
        num_envs: Number of environments; needed only when ``next_layouts`` gets a ``slice``.
        device: Device of the returned index tensors.
    """

    def __init__(self, num_layouts: int, num_envs: int | None = None, device: torch.device | str = "cpu"):
        if isinstance(num_layouts, bool) or not isinstance(num_layouts, int) or num_layouts <= 0:
            raise ValueError(f"PlacementReplayQueue: num_layouts must be a positive integer, got {num_layouts!r}")
        self.num_layouts = num_layouts
        self.num_envs = num_envs
        self.device = torch.device(device)
        self._cursor = 0
        self.consumed = 0

    @property
    def cursor(self) -> int:
        """Index of the layout the next resetting env receives."""
        return self._cursor

    def _count(self, env_ids) -> int:
        if env_ids is None:
            if self.num_envs is None:
                raise ValueError("PlacementReplayQueue.next_layouts(None): all envs requested, but the queue was "
                                 "built without num_envs")
            return self.num_envs
        if isinstance(env_ids, slice):
            if self.num_envs is None:
                raise ValueError("PlacementReplayQueue.next_layouts: env_ids is a slice; build the queue with num_envs")
            return len(range(*env_ids.indices(self.num_envs)))
        if isinstance(env_ids, torch.Tensor):
            return int(env_ids.numel())
        return len(env_ids)

    def next_layouts(self, env_ids: torch.Tensor | Sequence[int] | slice | None) -> torch.Tensor:
        """Layout index for each env in ``env_ids`` (in that order), and advances the queue by that many.

        Returns:
            int64 tensor of shape (len(env_ids),) on the queue's device.
        """
        n = self._count(env_ids)
        ids = (torch.arange(n, dtype=torch.long, device=self.device) + self._cursor) % self.num_layouts
        self._cursor = (self._cursor + n) % self.num_layouts
        self.consumed += n
        return ids

    def reset(self) -> None:
        """Rewinds the queue to layout 0."""
        self._cursor = 0
        self.consumed = 0

    def state_dict(self) -> dict[str, int]:
        return {"cursor": self._cursor, "consumed": self.consumed, "num_layouts": self.num_layouts}


def replay_root_poses(layouts: PlacementLayouts, layout_ids: torch.Tensor,
                      env_origins: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """Root poses to write for the selected layouts, per scene key (batched, no loop over envs).

    Args:
        layouts: The recorded layouts.
        layout_ids: (E,) layout index per resetting env (from ``PlacementReplayQueue.next_layouts``).
        env_origins: (E, 3) world origins of those envs; when given, positions are returned in the world
            frame (env-local + origin), otherwise env-local.

    Returns:
        ``{scene_key: (E, 7)}`` xyz (metres) + xyzw poses, ready for ``write_root_pose_to_sim_index``.
    """
    device = env_origins.device if env_origins is not None else layouts.device
    poses = layouts.root_poses(layout_ids.to(layouts.device)).to(device)  # (E, K, 7)
    if env_origins is not None:
        poses = poses.clone()
        poses[..., :3] += env_origins[:, None, :].to(poses.dtype)
    return {name: poses[:, j] for j, name in enumerate(layouts.object_names)}


def zero_root_velocities(num: int, device: torch.device | str = "cpu", dtype=torch.float32) -> torch.Tensor:
    """(num, 6) zero root velocities (linear m/s, angular rad/s) written with every replayed pose."""
    return torch.zeros((num, 6), dtype=dtype, device=device)


# -- replay configuration ----------------------------------------------------------------------------

class ReplayConfigError(ValueError):
    """A replay configuration that cannot replay recorded layouts exactly; the message names the setting."""


def _root_keys(asset) -> list[str]:
    getter = getattr(asset, "get_scene_root_keys", None)
    return list(getter()) if getter is not None else [asset.name]


def _object_type(asset) -> str:
    value = getattr(asset, "object_type", None)
    return str(getattr(value, "value", value))


def _has_writable_root(asset) -> bool:
    """Rigid bodies and articulations own writable roots; backgrounds, ``base`` objects and references do not."""
    from isaaclab_arena.assets.asset import Background
    from isaaclab_arena.assets.object_reference import ObjectReference

    if isinstance(asset, (Background, ObjectReference)):
        return False
    return _object_type(asset) in ("rigid", "articulation", "None")


def _has_placement_relation_or_marker(asset) -> bool:
    rels = getattr(asset, "get_relations", lambda: [])()
    return bool(rels) and not getattr(asset, "is_anchor", False)


def check_replay_configuration(
    layouts: PlacementLayouts | None = None,
    *,
    assets: Iterable[Any],
    layouts_path: str | os.PathLike | None = None,
    embodiment: Any = None,
    resolve_on_reset: bool | None | Mapping[str, bool | None] = None,
    placement_seeds: Mapping[str, int | None] | None = None,
    device: torch.device | str = "cpu",
) -> PlacementLayouts:
    """Validates a replay configuration and returns the layouts to replay.

    Args:
        layouts: A ``PlacementLayouts`` given directly (``IsaacLabArenaEnvironment.placement_layouts``).
        assets: Every asset of the environment.
        layouts_path: A JSONL path (``ArenaEnvBuilderCfg.placement_layouts_path`` / ``--placement_layouts``).
        embodiment: The environment's embodiment, if any (its roots must be recorded when it carries any
            placement relation or marker and is not an anchor).
        resolve_on_reset: The effective value, or ``{setting name: value}`` for every place it can be set
            (e.g. ``{"--resolve_on_reset": None, "placer_params.resolve_on_reset": True}``); None means unset.
        placement_seeds: ``{setting name: value}`` for every place a placement seed can be set (e.g.
            ``{"--placement_seed": None, "ArenaEnvBuilderCfg.placement_seed": None,
            "placer_params.placement_seed": None}``); any non-None value is rejected.
        device: Device for layouts loaded from ``layouts_path``.

    Raises:
        ReplayConfigError: one per forbidden configuration, naming the setting, asset or key.
        PlacementLayoutsError / FileNotFoundError: the file cannot be loaded (message names the line).
    """
    from isaaclab_arena.assets.object_set import RigidObjectSet

    if layouts is not None and layouts_path is not None:
        raise ReplayConfigError(f"replay: both a placement layouts path ('{os.fspath(layouts_path)}', "
                                "ArenaEnvBuilderCfg.placement_layouts_path / --placement_layouts) and a PlacementLayouts "
                                "object (IsaacLabArenaEnvironment.placement_layouts) were given; supply only one")
    if layouts is None and layouts_path is None:
        raise ReplayConfigError("replay: no layouts; give placement_layouts_path (--placement_layouts) or "
                                "IsaacLabArenaEnvironment.placement_layouts")
    if layouts is None:
        layouts = PlacementLayouts.from_episode_jsonl(layouts_path, device=device)
    elif not isinstance(layouts, PlacementLayouts):
        raise ReplayConfigError(f"replay: IsaacLabArenaEnvironment.placement_layouts must be a PlacementLayouts "
                                f"(PlacementLayouts.from_episode_jsonl(path)), got {type(layouts).__name__}")
    origin = layouts.origin or "placement_layouts"
    layouts.check_values()

    # resolve_on_reset must not be False anywhere.
    settings = resolve_on_reset if isinstance(resolve_on_reset, Mapping) else {"resolve_on_reset": resolve_on_reset}
    for name, value in settings.items():
        if value is False:
            raise ReplayConfigError(f"replay: {name} is False; recorded layouts need resolve_on_reset=True (remove "
                                    "--no-resolve_on_reset, or set the environment's placer_params.resolve_on_reset "
                                    "back to true)")
    for name, value in (placement_seeds or {}).items():
        if value is not None:
            raise ReplayConfigError(f"replay: {name}={value!r} is set; remove explicit placement_seed settings (CLI, "
                                    "builder configuration and placer_params): replay consumes layouts in file order, "
                                    "the recording seed only chose release candidates")

    assets = list(assets)
    everything = assets + ([embodiment] if embodiment is not None else [])
    owner: dict[str, Any] = {}
    for asset in everything:
        for key in _root_keys(asset):
            owner.setdefault(key, asset)
    recorded = set(layouts.object_names)

    for key in layouts.object_names:
        asset = owner.get(key)
        if asset is None:
            raise ReplayConfigError(f"{origin}: Unknown cached object '{key}': no asset of the environment owns this "
                                    f"runtime scene key; known keys: {sorted(owner)}")
        if getattr(asset, "is_anchor", False):
            raise ReplayConfigError(f"{origin}: recorded object '{key}' is the anchor '{asset.name}', which is fixed; "
                                    "recorded layouts hold the roots of placed assets only")
        if not _has_writable_root(asset):
            raise ReplayConfigError(f"{origin}: recorded object '{key}' ({type(asset).__name__} '{asset.name}', "
                                    f"object_type '{_object_type(asset)}') has no writable physics root; replay "
                                    "writes root poses of rigid bodies and articulations only (not backgrounds, "
                                    "static 'base' objects or object references)")
    recorded_assets = []
    for asset in everything:
        keys = _root_keys(asset)
        if any(k in recorded for k in keys):
            recorded_assets.append(asset)
            missing_roots = [k for k in keys if k not in recorded]
            if missing_roots:
                raise ReplayConfigError(f"{origin}: asset '{asset.name}' owns roots {keys} but the recording lacks "
                                        f"{missing_roots}; include every owned root of each recorded asset")

    for asset in assets:
        if asset.has_placement_relations and asset.get_spatial_relations():
            missing = [k for k in _root_keys(asset) if k not in recorded]
            if missing:
                raise ReplayConfigError(f"{origin}: missing placed object '{asset.name}' (keys {missing}): every "
                                        "non-anchor asset with spatial relations must be in the recording; recorded "
                                        f"objects: {list(layouts.object_names)}")
    if embodiment is not None and _has_placement_relation_or_marker(embodiment):
        missing = [k for k in _root_keys(embodiment) if k not in recorded]
        if missing:
            raise ReplayConfigError(f"{origin}: missing placed object: embodiment '{getattr(embodiment, 'name', type(embodiment).__name__)}' carries placement "
                                    f"relations or markers, so its roots {missing} must be in the recording")

    for asset in recorded_assets:
        if isinstance(asset, RigidObjectSet):
            raise ReplayConfigError(f"{origin}: recorded asset '{asset.name}' is a RigidObjectSet; replay needs concrete "
                                    "assets (the recorded geometry is one member), replace the set with one object")
        if getattr(asset, "random_around_solution", None) is not None:
            raise ReplayConfigError(f"{origin}: recorded asset '{asset.name}' uses RandomAroundSolution; remove it, "
                                    "replay writes the recorded poses exactly")
    return layouts


__all__ = ["PlacementReplayQueue", "ReplayConfigError", "check_replay_configuration", "replay_root_poses",
           "zero_root_velocities"]

"""The definition of an Arena environment: its scene's assets, optional embodiment and task, placement."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from isaaclab_arena.assets.asset import PlaceableAsset
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.utils import checks


@dataclass
class IsaacLabArenaEnvironment:
    """What an ``ArenaEnvBuilder`` turns into an Isaac Lab manager-based env.

    Attributes:
        name: Environment name (gym id suffix).
        assets: Every asset of the scene: backgrounds, objects, object references, object sets.
        embodiment: Optional robot (an ``isaaclab_arena.embodiments.Embodiment``; scene key ``robot``).
        task: Optional task (``isaaclab_arena.tasks.PickAndPlaceTask``) over assets of this environment.
        placer_params: Placement settings (seed, pool size, checks, solver).
        placement_layouts: Recorded layouts to replay instead of solving (``PlacementLayouts``).
        env_spacing: Distance between env origins, metres, used when ``ArenaEnvBuilderCfg.env_spacing`` is None
            (None here too: derived from the scene, ``env_spacing.default_env_spacing``).
        physics: Physics preset name the env prefers (None: the builder's default).
        env_cfg_overrides: Dotted Isaac Lab env-cfg attribute paths -> values (``{"sim.dt": 0.005}``) that
            ``ArenaEnvBuilder.compose_manager_cfg()`` applies last (YAML ``env_cfg_override``).
        num_envs: Parallel environments the environment asks for (YAML ``num_envs``); the builder uses it
            when ``ArenaEnvBuilderCfg.num_envs`` is None, else 1.
        recording: Settings of ``record_placement_layouts.py`` the environment carries (YAML ``recording``:
            ``PlacementRecordingCfg`` keys but env_spec / output, e.g. ``{"settle": {"num_steps": 60}}``); the
            recorder uses each unless its command line gives it (``recording_config.merge_recording_settings``).
    """

    name: str
    assets: list[PlaceableAsset] = field(default_factory=list)
    embodiment: Any = None
    task: Any = None
    placer_params: ObjectPlacerParams = field(default_factory=ObjectPlacerParams)
    placement_layouts: Any = None
    env_spacing: float | None = None
    physics: str | None = None
    env_cfg_overrides: dict = field(default_factory=dict)
    num_envs: int | None = None
    recording: dict = field(default_factory=dict)

    def __post_init__(self):
        checks.env_name(self.name, "IsaacLabArenaEnvironment", "name")
        if self.num_envs is not None and (isinstance(self.num_envs, bool) or not isinstance(self.num_envs, int)
                                          or self.num_envs <= 0):
            raise ValueError(f"IsaacLabArenaEnvironment.num_envs must be a positive integer or None, got {self.num_envs!r}")
        seen: set[str] = set()
        for asset in self.assets:
            if not isinstance(asset, PlaceableAsset):
                raise TypeError(f"environment '{self.name}': assets must be placeable assets, got {asset!r}")
            if asset.name in seen:
                raise ValueError(f"environment '{self.name}': duplicate asset name '{asset.name}'")
            seen.add(asset.name)
        if self.task is not None:
            self._check_task(seen)

    def _check_task(self, names: set[str]) -> None:
        """The task's assets against the scene, before anything is built: each is an asset of this environment
        (the robot counts as one), and the object to pick up is a rigid object (its pose is read from the
        simulator every step)."""
        from isaaclab_arena.assets.object_type import ObjectType

        task = self.task
        owner = f"task {type(task).__name__}"
        robot = {self.embodiment.name} if self.embodiment is not None and hasattr(self.embodiment, "name") else set()
        for role in ("pick_up_object", "destination_location"):
            asset = getattr(task, role, None)
            if asset is None:
                continue
            if asset.name not in names | robot:
                raise ValueError(f"{owner}: {role} '{asset.name}' is not an asset of environment '{self.name}'; "
                                 f"assets: {sorted(names)}")
        pick = getattr(task, "pick_up_object", None)
        if pick is not None and (type(pick).__name__ == "Background"
                                 or getattr(pick, "object_type", ObjectType.RIGID) is not ObjectType.RIGID):
            kind = type(pick).__name__ if type(pick).__name__ == "Background" else f"object_type {pick.object_type.value}"
            raise ValueError(f"{owner} of environment '{self.name}': pick_up_object '{pick.name}' must be a rigid "
                             f"object (it is a {kind}); "
                             "the success test reads its pose from the simulator")

    def get_asset(self, name: str) -> PlaceableAsset:
        for asset in self.assets:
            if asset.name == name:
                return asset
        raise KeyError(f"environment '{self.name}' has no asset '{name}'; assets: {[a.name for a in self.assets]}")

    def get_placement_assets(self) -> list[PlaceableAsset]:
        """The assets the placer reads: anchors, relation-placed assets and passive obstacles (assets at a fixed
        pose without relations, backgrounds included: the placer keeps placed objects clear of them; a
        background counts only in MESH collision mode, from its collision mesh), and the embodiment: placed by
        its relations, or at its fixed pose a passive obstacle (its stand)."""
        robot = [self.embodiment] if self.embodiment is not None else []
        return [a for a in self.assets if a.is_anchor or a.has_placement_relations
                or (a.initial_pose is not None and not a.get_relations())] + robot

    def get_placed_assets(self) -> list[PlaceableAsset]:
        """Assets whose poses the placer writes (non-anchor, relation-placed)."""
        return [a for a in self.assets if a.has_placement_relations]

"""ArenaEnvBuilder: compiles an ``IsaacLabArenaEnvironment`` into an Isaac Lab manager-based RL env config.

The scene holds a ground plane (shipped local USD), a dome light, and one entity per asset
(``{ENV_REGEX_NS}/<name>``). One reset event term (:class:`ArenaPoseResetTerm`) writes env-local root poses
(+ env origins) of every rigid object that has a pose: fixed-pose objects get their ``initial_pose``;
relation-placed objects get the next layout of their env's partition in the placement pool (or the replay
queue when recorded layouts are given).

Usage (kit-less, CPU)::

    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=4))
    env_cfg = builder.compose_manager_cfg()
    with launch_simulation(env_cfg, {"headless": True, "device": "cpu"}):
        env = builder.make_registered(env_cfg)
        env.reset()
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
from dataclasses import dataclass

import numpy as np
import torch

import isaaclab.sim as sim_utils
from isaaclab.assets import AssetBaseCfg
from isaaclab.envs import ManagerBasedRLEnvCfg
from isaaclab.envs import mdp
from isaaclab.managers import TerminationTermCfg
from isaaclab.scene import InteractiveSceneCfg
from isaaclab.utils import configclass

import isaaclab_arena.adapters  # noqa: F401  (installs the USD geometry reader of the asset model)
from isaaclab_arena.assets.asset import Object, PlaceableAsset
from isaaclab_arena.assets.object_reference import ObjectReference
from isaaclab_arena.assets.object_set import RigidObjectSet
from isaaclab_arena.assets.object_type import ObjectType
from isaaclab_arena.embodiments.embodiment import ROBOT_SCENE_KEY
from isaaclab_arena.environments.embodiment_terms import add_embodiment_entity, add_embodiment_terms, check_embodiment
from isaaclab_arena.environments.task_rewards import add_task_rewards
from isaaclab_arena.environments.task_terms import add_task_terms, check_task
from isaaclab_arena.environments.env_spacing import default_env_spacing
from isaaclab_arena.environments.isaaclab_arena_environment import IsaacLabArenaEnvironment
from isaaclab_arena.environments.physics import PHYSICS_CHOICES, NewtonContactSettings, make_physics_cfg
from isaaclab_arena.environments.reset_events import CombinedPoseSource, FixedPoseSource, arena_pose_reset_term_cfg
from isaaclab_arena.environments.scene_entities import ExplicitCloneAssignment, entity_cfg
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.utils.interrupts import held_stops
from isaaclab_arena.utils.pose import Pose

logger = logging.getLogger(__name__)

_REPO_GROUND = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                            "isaaclab_arena_environments", "assets", "usd", "ground_plane.usda")


@dataclass
class ArenaEnvBuilderCfg:
    """Builder settings.

    Attributes:
        num_envs: Parallel environments (> 0); None uses the environment's value (YAML ``num_envs``), else 1.
        env_spacing: Distance between env origins, metres; None uses the environment's value (YAML
            ``env_spacing``), else one derived from the scene (``env_spacing.default_env_spacing``).
        device: Torch / simulation device (``cpu`` or ``cuda:0``).
        physics: ``ovphysx`` (default), ``newton_mjwarp`` or ``isaacsim_physx``; None uses the environment's
            preference, else ``ovphysx``.
        seed: Simulation seed (independent of placement).
        placement_seed: Placement seed; overrides ``placer_params.placement_seed`` when not None.
        solve_relations: False skips the solver: objects keep their initial poses.
        resolve_on_reset: Overrides ``placer_params.resolve_on_reset`` when not None.
        placement_layouts_path: Recorded layouts (JSONL) to replay instead of solving.
        output_dir: Where diagnostics and pictures go.
        debug_visualize / debug_visualize_output_path: Override the placer's debug view fields when not None
            (``--debug_visualize``, ``--debug_visualize_output_path``).
        episode_length_s: Episode length before a time-out reset, seconds; None uses the task's
            ``episode_length_s``, else 5 s.
        sim_dt: Physics time step, seconds.
        decimation: Physics steps per env step.
        gym_id: Gym id to register; None uses the environment's name.
        newton_contact: Contact settings of ``newton_mjwarp`` (None: ``physics.NEWTON_CONTACT_SETTINGS``).
        enhanced_determinism: PhysX's enhanced determinism (``physics.make_physics_cfg``): an env simulates the same
            whatever the other envs hold (the evaluation runner turns it on with ``--env_spacing 0``).
        global_env_ids / global_num_envs: This process's share of a job split over processes (``torchrun``,
            ``record_placement_layouts.py --distributed``): env ``i`` is global env ``global_env_ids[i]`` of
            ``global_num_envs``; placement layouts and object-set members are those of that global env in a
            single-process build (``PooledObjectPlacer``). None: env ``i`` is env ``i``.
        placement_extensions: The placer's optional backends (``relations.extensions.PlacementExtension``: the
            ``ik_reachable`` check, the cuRobo IK backend, the debug view); None: the default set
            (``isaaclab_arena.placement_extensions.default_extensions()``).
    """

    num_envs: int | None = None
    env_spacing: float | None = None
    device: str = "cpu"
    physics: str | None = None
    seed: int = 42
    placement_seed: int | None = None
    solve_relations: bool = True
    resolve_on_reset: bool | None = None
    placement_layouts_path: str | None = None
    output_dir: str | None = None
    debug_visualize: bool | None = None
    debug_visualize_output_path: str | None = None
    episode_length_s: float | None = None
    sim_dt: float = 1.0 / 120.0
    decimation: int = 2
    gym_id: str | None = None
    newton_contact: NewtonContactSettings | None = None
    enhanced_determinism: bool = False
    global_env_ids: tuple[int, ...] | None = None
    global_num_envs: int | None = None
    placement_extensions: tuple | None = None

    def __post_init__(self):
        if self.num_envs is not None and (isinstance(self.num_envs, bool) or not isinstance(self.num_envs, int)
                                          or self.num_envs <= 0):
            raise ValueError(f"ArenaEnvBuilderCfg.num_envs must be a positive integer or None, got {self.num_envs!r}")
        if self.env_spacing is not None and (not math.isfinite(float(self.env_spacing)) or self.env_spacing < 0):
            raise ValueError(f"ArenaEnvBuilderCfg.env_spacing must be a finite number >= 0 (metres), got {self.env_spacing!r}")
        if self.physics is not None and self.physics not in PHYSICS_CHOICES:
            raise ValueError(f"ArenaEnvBuilderCfg.physics={self.physics!r} is not accepted; use one of {PHYSICS_CHOICES}")
        for name in ("seed",):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise ValueError(f"ArenaEnvBuilderCfg.{name} must be an integer, got {v!r}")
        if self.placement_seed is not None and (isinstance(self.placement_seed, bool) or not isinstance(self.placement_seed, int)):
            raise ValueError(f"ArenaEnvBuilderCfg.placement_seed must be an integer or None, got {self.placement_seed!r}")
        if self.decimation < 1 or self.sim_dt <= 0 or (self.episode_length_s is not None and self.episode_length_s <= 0):
            raise ValueError("ArenaEnvBuilderCfg: decimation >= 1, sim_dt > 0 and episode_length_s > 0 are required")
        if (self.global_env_ids is None) != (self.global_num_envs is None) or (
                self.global_env_ids is not None and len(self.global_env_ids) != self.num_envs):
            raise ValueError("ArenaEnvBuilderCfg: global_env_ids (one per env) and global_num_envs go together")


# ---- manager-based env config -----------------------------------------------------------------------------------
@configclass
class ArenaSceneCfg(InteractiveSceneCfg):
    """Scene entities are set on the instance by the builder (ground first, light last)."""


@configclass
class ArenaEmptyCfg:
    pass


@configclass
class ArenaEventsCfg:
    pass


@configclass
class ArenaTerminationsCfg:
    time_out = TerminationTermCfg(func=mdp.time_out, time_out=True)


@configclass
class ArenaEnvCfg(ManagerBasedRLEnvCfg):
    """Manager-based RL env config composed by :class:`ArenaEnvBuilder` (no actions/observations/rewards of
    its own; an embodiment (``environments/embodiment_terms.py``) or a task adds them)."""

    scene: ArenaSceneCfg = ArenaSceneCfg(num_envs=1, env_spacing=30.0)
    actions: ArenaEmptyCfg = ArenaEmptyCfg()
    observations: ArenaEmptyCfg = ArenaEmptyCfg()
    events: ArenaEventsCfg = ArenaEventsCfg()
    rewards: ArenaEmptyCfg = ArenaEmptyCfg()
    terminations: ArenaTerminationsCfg = ArenaTerminationsCfg()
    episode_length_s: float = 5.0


def _pose_row(pose: Pose) -> list[float]:
    return [*pose.position_xyz, *pose.rotation_xyzw]


class ArenaEnvBuilder:
    """Compiles an :class:`IsaacLabArenaEnvironment` into an Isaac Lab env (see module docstring).

    Attributes:
        arena_env: The environment definition (settable before :meth:`compose_manager_cfg`).
        cfg: Builder settings.
        placer_params: Effective placer settings (environment's, with builder overrides applied).
        member_indices: ``{set name: [member index per env]}`` for every RigidObjectSet.
        pose_source: What the reset term draws poses from (after :meth:`compose_manager_cfg`).
        placer: The pooled placer, when relations are solved.
        env: The created env (after :meth:`make_registered`).
    """

    def __init__(self, arena_env: IsaacLabArenaEnvironment, cfg: ArenaEnvBuilderCfg | None = None):
        if not isinstance(arena_env, IsaacLabArenaEnvironment):
            raise TypeError(f"ArenaEnvBuilder needs an IsaacLabArenaEnvironment, got {arena_env!r}")
        self.arena_env = arena_env
        cfg = cfg or ArenaEnvBuilderCfg()
        if cfg.num_envs is None:  # the environment's (YAML num_envs) count, else one env
            cfg = dataclasses.replace(cfg, num_envs=arena_env.num_envs or 1)
        self.cfg = cfg
        self.placer = None
        self.pose_source = None
        #: The queue of recorded layouts when the env replays a file (its physical properties go with them).
        self.replay_source = None
        self.member_indices: dict[str, list[int]] = {}
        self.env = None
        self.env_cfg = None
        #: Layouts the evaluation runner replays, one per episode (``evaluation/episode_layouts.py``); set before
        #: :meth:`compose_manager_cfg`. Unlike user replay they may come from a seeded solve of this spec.
        self.episode_layouts = None

    # ---- settings --------------------------------------------------------------------------------------------
    @property
    def physics(self) -> str:
        return self.cfg.physics or self.arena_env.physics or "ovphysx"

    @property
    def env_spacing(self) -> float:
        if self.cfg.env_spacing is not None:
            return float(self.cfg.env_spacing)
        if self.arena_env.env_spacing is not None:
            return float(self.arena_env.env_spacing)
        robot = [self.arena_env.embodiment] if self.arena_env.embodiment is not None else []
        return default_env_spacing([*self.arena_env.assets, *robot])  # the robot's stand counts too

    @property
    def placer_params(self) -> ObjectPlacerParams:
        params = self.arena_env.placer_params or ObjectPlacerParams()
        overrides = {}
        if self.cfg.placement_seed is not None:
            overrides["placement_seed"] = self.cfg.placement_seed
        if self.cfg.resolve_on_reset is not None:
            overrides["resolve_on_reset"] = self.cfg.resolve_on_reset
        robot = self.arena_env.embodiment
        if robot is not None and params.reachability_config.embodiment is None:  # ik_reachable checks this robot
            overrides["reachability_config"] = dataclasses.replace(params.reachability_config, embodiment=robot)
        for name in ("debug_visualize", "debug_visualize_output_path"):
            if getattr(self.cfg, name) is not None:
                overrides[name] = getattr(self.cfg, name)
        return dataclasses.replace(params, **overrides) if overrides else params

    @property
    def property_seed(self) -> int:
        """Seed of the physical property draws: the placement seed (the placer's, when it drew one), else ``seed``."""
        seed = self.placer.placement_seed if self.placer is not None else self.placer_params.placement_seed
        return int(seed) if seed is not None else int(self.cfg.seed)

    @property
    def gym_id(self) -> str:
        return self.cfg.gym_id or self.arena_env.name

    # ---- composition -----------------------------------------------------------------------------------------
    def _check_assets(self) -> None:
        for asset in self.arena_env.assets:
            if isinstance(asset, ObjectReference):
                asset.get_bounding_box()  # reads the prim from the parent USD; names the missing prim
                if asset.parent_asset not in self.arena_env.assets:
                    raise ValueError(f"ObjectReference '{asset.name}': its parent '{asset.parent_asset.name}' is not "
                                     f"an asset of environment '{self.arena_env.name}'")

    def _assign_members(self, seed: int | None) -> None:
        """Member of every RigidObjectSet per env, from the seed the placer solves with (so spawned objects
        match the solved sizes even when ``placement_seed`` is None and the placer drew its own)."""
        if self.cfg.global_env_ids is not None:  # a share of a distributed job: the members of its global envs
            self.member_indices = {a.name: [a.member_indices_per_env(self.cfg.global_num_envs, seed)[g]
                                            for g in self.cfg.global_env_ids]
                                   for a in self.arena_env.assets if isinstance(a, RigidObjectSet)}
        else:
            self.member_indices = {a.name: a.member_indices_per_env(self.cfg.num_envs, seed)
                                   for a in self.arena_env.assets if isinstance(a, RigidObjectSet)}
        if self.physics == "newton_mjwarp":  # what the Newton contact settings are measured not to get right
            from isaaclab_arena.environments.physics import newton_resting_caveats

            for caveat in newton_resting_caveats(self.arena_env.assets, self.cfg.newton_contact):
                logger.warning(f"environment '{self.arena_env.name}' under newton_mjwarp: {caveat}")

    def _rigid_assets(self) -> list[Object | RigidObjectSet]:
        """Spawned rigid roots: rigid objects and object sets (references spawn nothing)."""
        return [a for a in self.arena_env.assets if isinstance(a, (Object, RigidObjectSet))
                and a.object_type == ObjectType.RIGID]

    def placed_names_and_keys(self) -> tuple[list[str], list[str]]:
        """(asset names, runtime scene keys) of what relation placement poses: placed rigid assets, then the
        robot when it is placed by relations (its layouts are written to scene key ``robot``, whatever its name)."""
        placed = [a.name for a in self._rigid_assets() if a.has_placement_relations]
        robot = self.arena_env.embodiment
        if robot is not None and robot.has_placement_relations:
            return placed + [robot.name], placed + [ROBOT_SCENE_KEY]
        return placed, list(placed)

    def _replay_layouts(self):
        """The recorded layouts to replay (validated), or None when placement is solved."""
        if self.episode_layouts is not None:  # the evaluation's own table: coverage checked, seeds allowed
            from isaaclab_arena.offline_placement.placement_replay import check_replay_configuration

            return check_replay_configuration(self.episode_layouts, assets=self.arena_env.assets,
                                              embodiment=self.arena_env.embodiment)
        layouts, path = self.arena_env.placement_layouts, self.cfg.placement_layouts_path
        if layouts is None and path is None:
            return None
        from isaaclab_arena.offline_placement.placement_replay import check_replay_configuration

        env_params = self.arena_env.placer_params
        return check_replay_configuration(
            layouts, assets=self.arena_env.assets, layouts_path=path, embodiment=self.arena_env.embodiment,
            resolve_on_reset={"--resolve_on_reset / ArenaEnvBuilderCfg.resolve_on_reset": self.cfg.resolve_on_reset,
                              "placer_params.resolve_on_reset": env_params.resolve_on_reset},
            placement_seeds={"--placement_seed / ArenaEnvBuilderCfg.placement_seed": self.cfg.placement_seed,
                             "placer_params.placement_seed": env_params.placement_seed})

    def _make_pose_source(self):
        """Fixed poses for rigid objects with an initial pose; the pool / replay queue for placed ones."""
        rigid = self._rigid_assets()
        layouts = self._replay_layouts()
        if layouts is not None:
            from isaaclab_arena.environments.replay_source import ReplayPoseSource

            self._assign_members(self.placer_params.placement_seed)
            dynamic = self.replay_source = ReplayPoseSource(layouts, self.cfg.num_envs)
            covered = set(dynamic.object_names)
        else:
            names, keys = self.placed_names_and_keys()
            dynamic = None
            if names and self.cfg.solve_relations:
                from isaaclab_arena.relations.pooled_object_placer import PooledObjectPlacer

                self.placer = PooledObjectPlacer(self.arena_env.get_placement_assets(), self.placer_params,
                                                 num_envs=self.cfg.num_envs, device=self.cfg.device,
                                                 output_dir=self.cfg.output_dir,
                                                 global_env_ids=self.cfg.global_env_ids,
                                                 global_num_envs=self.cfg.global_num_envs,
                                                 extensions=self.cfg.placement_extensions)
                # the placer's seed (drawn at construction when placement_seed is None) picks the members
                self._assign_members(self.placer.placement_seed)
                self.placer.member_indices = dict(self.member_indices)
                self.placer.initialize()
                dynamic = self.placer.as_pose_source(names, keys)
            else:
                self._assign_members(self.placer_params.placement_seed)
            covered = set(dynamic.object_names) if dynamic is not None else set()
        fixed_rows, fixed_names = [], []
        for i, a in enumerate(a for a in rigid if a.name not in covered):
            # A pose solved by a direct ObjectPlacer.place() (apply_positions_to_objects) counts as fixed here.
            pose = a.placed_pose or a.initial_pose
            if pose is None:
                pose = Pose((0.0, 0.0, 1.5 + 0.25 * i))
                logger.warning(f"asset '{a.name}' has no initial pose and its relations are not solved; it starts "
                               f"at {pose.position_xyz} (env-local)")
            fixed_rows.append(_pose_row(pose))
            fixed_names.append(a.name)
        sources = []
        if fixed_names:
            sources.append(FixedPoseSource(fixed_names, torch.tensor(fixed_rows, dtype=torch.float32)))
        if dynamic is not None:
            sources.append(dynamic)
        if not sources:
            return None
        return sources[0] if len(sources) == 1 else CombinedPoseSource(sources)

    def _initial_pose_for(self, asset: PlaceableAsset, env0_poses: dict[str, Pose]) -> Pose | None:
        if asset.name in env0_poses:
            return env0_poses[asset.name]
        return asset.placed_pose or asset.initial_pose

    def compose_manager_cfg(self) -> ArenaEnvCfg:
        """Returns the Isaac Lab manager-based RL env config of the arena environment (solves placement)."""
        self._check_assets()
        embodiment = check_embodiment(self.arena_env)
        task = check_task(self.arena_env)
        self.pose_source = self._make_pose_source()
        env0 = {}
        if self.pose_source is not None:
            p0 = self.pose_source.peek(torch.zeros(1, dtype=torch.long))
            for j, name in enumerate(self.pose_source.object_names):
                row = p0[0, j].tolist()
                env0[name] = Pose(tuple(row[:3]), tuple(row[3:]))

        cfg = ArenaEnvCfg()
        cfg.seed = self.cfg.seed
        cfg.decimation = self.cfg.decimation
        cfg.episode_length_s = self.cfg.episode_length_s or getattr(task, "episode_length_s", None) or 5.0
        cfg.sim.dt = self.cfg.sim_dt
        cfg.sim.render_interval = self.cfg.decimation  # headless: at most one render call per env step
        cfg.sim.device = self.cfg.device
        cfg.sim.physics = make_physics_cfg(self.physics, self.cfg.device, self.cfg.newton_contact,
                                           enhanced_determinism=self.cfg.enhanced_determinism)
        scene = ArenaSceneCfg(num_envs=self.cfg.num_envs, env_spacing=self.env_spacing)
        scene.ground = AssetBaseCfg(prim_path="/World/ground", spawn=sim_utils.GroundPlaneCfg(usd_path=_REPO_GROUND))
        variant_counts, members = [], []
        for asset in self.arena_env.assets:
            ent = entity_cfg(asset, self._initial_pose_for(asset, env0))
            if ent is None:
                continue
            setattr(scene, asset.name, ent)
            if isinstance(asset, RigidObjectSet):
                variant_counts.append(len(asset.objects))
                members.append(self.member_indices[asset.name])
            else:
                variant_counts.append(1)
                members.append([0] * self.cfg.num_envs)
        if embodiment is not None:  # the robot: scene entity "robot", the last per-env entity
            add_embodiment_entity(scene, embodiment, env0.get(ROBOT_SCENE_KEY))
            variant_counts.append(1)
            members.append([0] * self.cfg.num_envs)
        if self.member_indices:
            scene.clone_cfg.clone_strategy = ExplicitCloneAssignment(variant_counts, np.asarray(members).T)
        scene.light = AssetBaseCfg(prim_path="/World/light", spawn=sim_utils.DomeLightCfg(intensity=1000.0))
        cfg.scene = scene
        if embodiment is not None:  # the root pose is the pose source's when it holds the robot
            add_embodiment_terms(cfg, embodiment, reset_root_pose=ROBOT_SCENE_KEY not in env0)
        if task is not None:
            add_task_terms(cfg, task, self.member_indices)
            add_task_rewards(cfg, task, self.member_indices, embodiment)
        if self.pose_source is not None:  # the term gets the live source as a parameter (by reference)
            from isaaclab_arena.environments.object_pools import pool_members_of

            cfg.events.arena_placement = arena_pose_reset_term_cfg(
                self.pose_source, pool_members=pool_members_of(self.arena_env.get_placement_assets()))
        # physical property draws (friction, restitution, mass) per asset with ranges, after the poses
        from isaaclab_arena.environments.property_draws import add_property_terms

        self.property_term_names = add_property_terms(cfg, self._rigid_assets(), self.property_seed,
                                                      env_keys=self.cfg.global_env_ids, replay=self.replay_source)
        if self.arena_env.env_cfg_overrides:  # YAML env_cfg_override: applied last, so it wins
            from isaaclab_arena.environments.env_cfg_override import apply_env_cfg_overrides

            apply_env_cfg_overrides(cfg, self.arena_env.env_cfg_overrides)
        self.env_cfg = cfg
        return cfg

    # ---- creation --------------------------------------------------------------------------------------------
    def make_registered(self, env_cfg: ArenaEnvCfg | None = None):
        """Registers the gym id (``cfg.gym_id`` or the environment name) and creates the env.

        Call inside ``isaaclab.app.launch_simulation(env_cfg, ...)`` (kit-less: starts nothing).
        Returns the gym env; ``env.unwrapped`` is the ``ManagerBasedRLEnv``.
        """
        import gymnasium as gym

        env_cfg = env_cfg or self.env_cfg or self.compose_manager_cfg()
        if self.gym_id not in gym.registry:
            gym.register(id=self.gym_id, entry_point="isaaclab.envs:ManagerBasedRLEnv", disable_env_checker=True,
                         kwargs={"env_cfg_entry_point": f"{__name__}:ArenaEnvCfg"})
        with held_stops():  # see make()
            self.env = gym.make(self.gym_id, cfg=env_cfg)
        self.env.unwrapped.arena_builder = self  # what privileged policies read (task, object-set members)
        return self.env

    def make(self, env_cfg: ArenaEnvCfg | None = None):
        """Creates the env without gym registration; returns the ``ManagerBasedRLEnv``.

        A Ctrl-C (or, where the process handles it, SIGTERM) during the creation is held until the env is built,
        then delivered (``interrupts.held_stops``; Python's handler raises ``KeyboardInterrupt``): raised where it
        landed, it could land inside a Python import that USD's native code makes while OV PhysX starts, which
        printed USD warnings. A second Ctrl-C during the creation stops it at once.
        """
        from isaaclab.envs import ManagerBasedRLEnv

        env_cfg = env_cfg or self.env_cfg or self.compose_manager_cfg()
        with held_stops():
            self.env = ManagerBasedRLEnv(cfg=env_cfg)
        self.env.arena_builder = self
        return self.env


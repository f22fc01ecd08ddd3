"""What the recorder needs to know about a running scene: its roots, the pool, clutter and its supports.

``RecordingScene.from_env`` reads a running kit-less Isaac Lab env built by ``ArenaEnvBuilder`` (composition:
the pooled placer is found through the env's placement reset term, nothing in the builder is changed) plus
the placement assets, and checks the clutter recording rules:

- clutter (``ClutterOn`` subjects) must be dynamic rigid bodies with gravity on, exactly one root, no object
  sets;
- their supports must be fixed anchors with an upright quarter-turn pose, or relation-placed kinematic rigid
  bodies (physics must then not move them; ``support_containment`` checks that);
- a support without a verified flat rectangular top (a container such as the bin) needs
  ``minimum_resting_heights_m.<support key>``; that is checked when the validators are built.

Frames and units: bounds are axis-aligned in each asset's scaled local root frame (metres); poses are
env-local world (metres, xyzw).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

import torch

from isaaclab_arena.assets.geometry_reader import spawn_cfgs_of
from isaaclab_arena.offline_placement.settled_batch import SupportInfo


class RecordingSceneError(ValueError):
    """A scene the recorder cannot record; the message names the asset and what is accepted."""


@dataclass
class ClutterSupport:
    """A ClutterOn support: its scene key, scaled local bounds, fixed pose (anchors) and top kind."""

    key: str
    local_min: tuple[float, float, float]
    local_max: tuple[float, float, float]
    fixed_pose: tuple[float, ...] | None
    """(7,) env-local pose of an anchored support; None for a relation-placed (kinematic) support."""
    flat_top: bool


@dataclass
class RecordingScene:
    """Scene facts of one recording.

    Attributes:
        pool: The env's ``PooledObjectPlacer``.
        recorded_keys: Root keys written to the JSONL (the relation-placed roots the pool writes), in order.
        root_keys: Every rigid / articulated root of the scene (the post-physics checks cover them all).
        articulated_keys: Articulated roots (link poses are captured for them).
        robot_keys: Roots owned by the robot embodiment.
        clutter_keys / clutter_supports / clutter_local_bounds: ClutterOn subjects, their support keys and
            their local bounds ((3,) min, (3,) max; metres).
        supports: ``{support key: ClutterSupport}``.
    """

    pool: Any
    recorded_keys: list[str]
    root_keys: list[str]
    articulated_keys: list[str] = field(default_factory=list)
    robot_keys: tuple[str, ...] = ()
    clutter_keys: tuple[str, ...] = ()
    clutter_supports: dict[str, str] = field(default_factory=dict)
    clutter_local_bounds: dict[str, tuple[torch.Tensor, torch.Tensor]] = field(default_factory=dict)
    supports: dict[str, ClutterSupport] = field(default_factory=dict)

    @property
    def has_clutter(self) -> bool:
        return bool(self.clutter_keys)

    @property
    def has_articulated_task_objects(self) -> bool:
        return any(k not in self.robot_keys for k in self.articulated_keys)

    def support_bounds(self) -> dict[str, tuple[list[float], list[float], bool]]:
        """``{support key: (local_min, local_max, flat_top)}`` for ``build_post_physics_validators``."""
        return {k: (list(s.local_min), list(s.local_max), s.flat_top) for k, s in self.supports.items()}

    def support_infos(self, initial: dict[str, torch.Tensor], final: dict[str, torch.Tensor]) -> dict[str, SupportInfo]:
        """``SupportInfo`` per support for a ``SettledBatch`` (relation-placed supports from captured poses)."""
        out = {}
        for key, s in self.supports.items():
            if s.fixed_pose is not None:
                out[key] = SupportInfo(s.local_min, s.local_max, torch.tensor(s.fixed_pose), None, s.flat_top)
            else:
                out[key] = SupportInfo(s.local_min, s.local_max, final[key], initial[key], s.flat_top)
        return out

    # -- construction ------------------------------------------------------------------------------
    @classmethod
    def from_env(cls, env, scene_assets: Iterable[Any] | None = None,
                 robot_keys: Iterable[str] = ()) -> "RecordingScene":
        """Reads the scene facts of ``env`` (a gym env or ``ManagerBasedRLEnv`` built by ``ArenaEnvBuilder``).

        Args:
            env: The running env.
            scene_assets: The placement assets (``arena_env.get_placement_assets()``); default: the pool's.
            robot_keys: Root keys of the robot embodiment, if any.

        Raises:
            RecordingSceneError: no placement pool (the relation-placement reset term), a pool that replays
                recorded layouts, or a clutter rule broken (names the asset).
        """
        u = getattr(env, "unwrapped", env)
        pool, pooled_names = find_placement_pool(u)
        assets = list(scene_assets) if scene_assets is not None else list(pool.assets)
        scene = u.scene
        rigid = list(scene.rigid_objects.keys())
        artic = list(scene.articulations.keys())
        robot_keys = tuple(robot_keys)
        by_name = {a.name: a for a in assets}
        for a in assets:
            for s in _supports_of(a):
                by_name.setdefault(s.name, s)

        clutter_keys, clutter_supports, clutter_bounds, supports = [], {}, {}, {}
        for asset in assets:
            rels = _clutter_relations(asset)
            if not rels:
                continue
            _check_clutter_object(asset, scene, rigid)
            key = asset.get_scene_root_keys()[0]
            support = rels[0].parent
            skey = _support_key(support)
            box = asset.get_bounding_box()
            clutter_keys.append(key)
            clutter_supports[key] = skey
            clutter_bounds[key] = (torch.tensor(box.min_point), torch.tensor(box.max_point))
            if skey not in supports:
                supports[skey] = _clutter_support(support, skey, scene, rigid, asset.name)
        return cls(pool=pool, recorded_keys=list(pooled_names), root_keys=rigid + artic, articulated_keys=artic,
                   robot_keys=robot_keys, clutter_keys=tuple(clutter_keys), clutter_supports=clutter_supports,
                   clutter_local_bounds=clutter_bounds, supports=supports)


def clutter_support_bounds(assets: Iterable[Any]) -> dict[str, tuple[list[float], list[float], bool]]:
    """``{support key: (local_min, local_max, flat_top)}`` of the ClutterOn supports among ``assets``, read from
    the assets alone (no env), so the recorder can check its validator settings before anything is solved."""
    out = {}
    for asset in assets:
        for support in _supports_of(asset):
            box = support.get_bounding_box()
            out.setdefault(_support_key(support), (list(box.min_point), list(box.max_point), has_flat_top(support)))
    return out


def find_placement_pool(u) -> tuple[Any, list[str]]:
    """(``PooledObjectPlacer``, names it writes) of an env built by ``ArenaEnvBuilder``, via its reset term."""
    from isaaclab_arena.environments.replay_source import ReplayPoseSource
    from isaaclab_arena.relations.pooled_object_placer import PooledPoseSource

    manager = getattr(u, "event_manager", None)
    term = None
    if manager is not None and "arena_placement" in getattr(manager, "active_terms", {}).get("reset", []):
        term = manager.get_term_cfg("arena_placement").func
    source = getattr(term, "source", None)
    stack = [source] if source is not None else []
    while stack:
        s = stack.pop()
        if isinstance(s, PooledPoseSource):
            return s.pool, list(s.object_names)
        if isinstance(s, ReplayPoseSource):
            raise RecordingSceneError("the env replays recorded layouts (placement_layouts_path / placement_layouts); "
                                      "recording needs solved, pooled placement: build it without recorded layouts")
        stack.extend(getattr(s, "sources", []) or [])
    raise RecordingSceneError("the env has no relation-placement pool: recording needs an env built by ArenaEnvBuilder "
                              "with relation-placed objects and solve_relations=True (the 'arena_placement' reset "
                              "term drawing from a PooledObjectPlacer)")


def _clutter_relations(asset) -> list:
    from isaaclab_arena.relations.relations import ClutterOn

    getter = getattr(asset, "get_relations_of", None)
    return list(getter(ClutterOn)) if getter is not None else []


def _supports_of(asset) -> list:
    return [r.parent for r in _clutter_relations(asset)]


def _support_key(support) -> str:
    keys = support.get_scene_root_keys()
    return keys[0] if keys else support.name


def _flag(asset, name: str) -> bool:
    return any(getattr(getattr(c, "rigid_props", None), name, False) for c in spawn_cfgs_of(asset))


def _check_clutter_object(asset, scene, rigid_keys: list[str]) -> None:
    from isaaclab_arena.assets.object_set import RigidObjectSet

    if isinstance(asset, RigidObjectSet):
        raise RecordingSceneError(f"clutter object '{asset.name}' is a RigidObjectSet; clutter recording needs concrete "
                                  "objects (replay restores one geometry), replace the set with one object")
    keys = asset.get_scene_root_keys()
    if len(keys) != 1 or keys[0] not in rigid_keys:
        raise RecordingSceneError(f"clutter object '{asset.name}' must be one dynamic rigid body in the scene (roots "
                                  f"{keys}; rigid scene objects: {sorted(rigid_keys)})")
    if _flag(asset, "kinematic_enabled"):
        raise RecordingSceneError(f"clutter object '{asset.name}' is kinematic; ClutterOn objects must be dynamic rigid "
                                  "bodies that physics can drop (remove kinematic_enabled)")
    if _flag(asset, "disable_gravity"):
        raise RecordingSceneError(f"clutter object '{asset.name}' has gravity disabled; ClutterOn objects must fall "
                                  "onto their support (remove disable_gravity)")


def _clutter_support(support, key: str, scene, rigid_keys: list[str], clutter_name: str) -> ClutterSupport:
    box = support.get_bounding_box()
    flat = has_flat_top(support)
    if support.is_anchor:
        pose = support.get_world_pose()
        if pose is None:
            raise RecordingSceneError(f"support '{support.name}' of clutter object '{clutter_name}' is an anchor without "
                                      "a fixed pose; give it an initial pose")
        if not pose.is_upright_quarter_turn():
            raise RecordingSceneError(f"support '{support.name}' of clutter object '{clutter_name}' has rotation "
                                      f"{pose.rotation_xyzw}; supports must be upright with a quarter-turn yaw")
        return ClutterSupport(key, box.min_point, box.max_point, (*pose.position_xyz, *pose.rotation_xyzw), flat)
    if key not in rigid_keys or not _flag(support, "kinematic_enabled"):
        raise RecordingSceneError(f"support '{support.name}' of clutter object '{clutter_name}' is placed by relations, "
                                  "so it must be a kinematic rigid body (static/kinematic collision) that physics does "
                                  "not move, or a fixed anchor (IsAnchor)")
    return ClutterSupport(key, box.min_point, box.max_point, None, flat)


def has_flat_top(asset) -> bool:
    """True when the asset's top at its local max Z is one flat rectangle: a box primitive, or a USD (prim)
    whose geometry is a single Cube. Containers (several Cube walls) and round shapes are not."""
    import isaaclab.sim as sim_utils

    from isaaclab_arena.assets.object_reference import ObjectReference

    if isinstance(asset, ObjectReference):
        usd = asset.parent_asset.usd_path
        return bool(usd) and _usd_single_cube(usd, asset.relative_prim_path())
    cfgs = spawn_cfgs_of(asset)
    if len(cfgs) != 1:
        return False
    cfg = cfgs[0]
    if isinstance(cfg, sim_utils.CuboidCfg):
        return True
    usd = getattr(cfg, "usd_path", None)
    return bool(usd) and _usd_single_cube(usd, "")


def _usd_single_cube(usd_path: str, relative_prim_path: str) -> bool:
    from pxr import Usd, UsdGeom

    stage = Usd.Stage.Open(usd_path)
    if stage is None:
        return False
    root = stage.GetDefaultPrim() or next(iter(stage.GetPseudoRoot().GetChildren()), None)
    if root is None:
        return False
    prim = root.GetPrimAtPath(relative_prim_path) if relative_prim_path else root
    if not prim or not prim.IsValid():
        return False
    gprims = [p for p in Usd.PrimRange(prim) if p.IsA(UsdGeom.Gprim)]
    return len(gprims) == 1 and gprims[0].IsA(UsdGeom.Cube)

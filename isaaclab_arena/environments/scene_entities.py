"""Turns Arena assets into Isaac Lab scene entity configs (``{ENV_REGEX_NS}/<name>`` prim paths).

* rigid ``Object`` -> ``RigidObjectCfg`` (dynamic, or kinematic when its spawner says so)
* ``RigidObjectSet`` -> ``RigidObjectCfg`` with a ``MultiAssetSpawnerCfg`` whose member is chosen per env by
  an explicit clone assignment (:class:`ExplicitCloneAssignment`), never Isaac Lab's block-wise default
* ``Background`` / ``ObjectType.BASE`` -> static ``AssetBaseCfg`` (colliders without a rigid body)
* ``ObjectReference`` -> nothing spawned: it names a prim inside its parent's USD

Initial states are env-local (metres, xyzw); Isaac Lab adds the env origin.
"""

from __future__ import annotations

import copy
import itertools

import numpy as np

import isaaclab.sim as sim_utils
from isaaclab.assets import AssetBaseCfg, RigidObjectCfg

from isaaclab_arena.assets.asset import Background, Object, PlaceableAsset
from isaaclab_arena.assets.object_reference import ObjectReference
from isaaclab_arena.assets.object_set import RigidObjectSet
from isaaclab_arena.assets.object_type import ObjectType
from isaaclab_arena.utils.pose import Pose

ENV_NS = "{ENV_REGEX_NS}"


def prim_path_of(asset: PlaceableAsset) -> str:
    return f"{ENV_NS}/{asset.name}"


def _static_spawn(spawn_cfg):
    """A copy of ``spawn_cfg`` without rigid-body / mass settings (a static collider)."""
    cfg = copy.deepcopy(spawn_cfg)
    for attr in ("rigid_props", "mass_props"):
        if hasattr(cfg, attr):
            setattr(cfg, attr, None)
    return cfg


def _check_usd_exists(asset: Object) -> None:
    import os

    cfgs = asset.spawn_cfg.assets_cfg if hasattr(asset.spawn_cfg, "assets_cfg") else [asset.spawn_cfg]
    for c in cfgs:
        path = getattr(c, "usd_path", None)
        if isinstance(path, str) and not os.path.isfile(path):
            raise FileNotFoundError(f"asset '{asset.name}': USD file not found: {path}")


def spawned_members(asset: PlaceableAsset) -> list[Object]:
    """The objects ``asset`` spawns: an object set's members, else the asset itself; [] for an ObjectReference
    (nothing is spawned). Refuses an asset that cannot be spawned (no ``Object``, plain geometry without a
    spawner config, a USD file that does not exist), naming it."""
    if isinstance(asset, ObjectReference):
        return []
    members = asset.objects if isinstance(asset, RigidObjectSet) else [asset]
    for member in members:
        if not isinstance(member, Object):
            raise TypeError(f"asset '{asset.name}': {type(asset).__name__} cannot be spawned into an Isaac Lab scene")
        if member.spawn_cfg is None:
            raise ValueError(f"asset '{member.name}': it is plain geometry (bounding_box=, no spawn_cfg), which the "
                             "placer can place but an Isaac Lab scene cannot spawn; give it a spawner config")
        _check_usd_exists(member)
    return members


def entity_cfg(asset: PlaceableAsset, pose: Pose | None):
    """The scene entity config of one asset, or None when nothing is spawned (ObjectReference)."""
    if not spawned_members(asset):
        return None
    pose = pose or Pose.identity()
    pos, rot = tuple(pose.position_xyz), tuple(pose.rotation_xyzw)
    if isinstance(asset, Background) or asset.object_type == ObjectType.BASE:
        return AssetBaseCfg(prim_path=prim_path_of(asset), spawn=_static_spawn(asset.spawn_cfg),
                            init_state=AssetBaseCfg.InitialStateCfg(pos=pos, rot=rot))
    if asset.object_type == ObjectType.ARTICULATION:
        raise NotImplementedError(f"asset '{asset.name}': articulations are not supported by ArenaEnvBuilder yet")
    if isinstance(asset, RigidObjectSet):
        spawn = sim_utils.MultiAssetSpawnerCfg(assets_cfg=[copy.deepcopy(m.spawn_cfg) for m in asset.objects],
                                              random_choice=False)
    else:
        spawn = copy.deepcopy(asset.spawn_cfg)
    return RigidObjectCfg(prim_path=prim_path_of(asset), spawn=spawn,
                          init_state=RigidObjectCfg.InitialStateCfg(pos=pos, rot=rot))


class ExplicitCloneAssignment:
    """An Isaac Lab ``clone_strategy`` that gives env ``i`` exactly the member combination we chose.

    Isaac Lab builds one world prototype per element of ``itertools.product`` over the per-env entities'
    variant ranges (scene declaration order). This maps each env's tuple of member indices to that index.

    Args:
        variant_counts: Variant count of every per-env spawned entity, in scene declaration order.
        members_per_env: ``(num_envs, num_entities)`` member index of each entity in each env.
    """

    def __init__(self, variant_counts: list[int], members_per_env: np.ndarray):
        self.variant_counts = list(variant_counts)
        members = np.asarray(members_per_env, dtype=np.int64).reshape(-1, len(self.variant_counts))
        radix = np.ones(len(self.variant_counts), dtype=np.int64)
        for i in range(len(self.variant_counts) - 2, -1, -1):
            radix[i] = radix[i + 1] * self.variant_counts[i + 1]
        self.layout = (members * radix).sum(axis=1).astype(np.int64)
        self.num_worlds = int(np.prod(self.variant_counts))

    def __call__(self, weights: np.ndarray, num_clones: int) -> np.ndarray:
        if len(weights) != self.num_worlds or num_clones != len(self.layout):
            raise RuntimeError(f"ExplicitCloneAssignment was made for {len(self.layout)} envs and {self.num_worlds} "
                               f"world prototypes; Isaac Lab asked for {num_clones} envs and {len(weights)}")
        return self.layout.copy()

    def world_members(self, world: int) -> tuple[int, ...]:
        return list(itertools.product(*[range(c) for c in self.variant_counts]))[world]

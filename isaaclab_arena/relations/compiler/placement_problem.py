"""The compiled scene (``PlacementProblem``): what the solver and the checks read, as plain values.

Compiled once per (scene, env count, placement seed, device) by ``compile_problem.compile_placement_problem``.
Object order: the placed (movable) objects first, in scene order, then the fixed ones (anchors and passive
obstacles). Lengths are metres, frames env-local world, rotations xyzw.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
import warp as wp

from isaaclab_arena.relations.compiler.pair_rule import RulePairs
from isaaclab_arena.relations.kernels.tables import SceneTables
from isaaclab_arena.relations.kinds.kind import RelationKind
from isaaclab_arena.relations.relation_base import RelationBase

#: A check passes when its relation's excess is at most this (metres): float32 rounding room.
VALIDATION_SLACK_M = 1.0e-6


@dataclass(frozen=True)
class CompiledRelation:
    """One relation instance of the compiled scene (row ``rid`` of the per-relation outputs)."""

    rid: int
    relation: RelationBase
    kind: RelationKind
    subject: str
    parent: str | None

    @property
    def check(self) -> str | None:
        """The check that judges this relation (None: a solver objective only)."""
        return self.kind.check

    @property
    def description(self) -> str:
        return f"'{self.subject}' {self.relation.describe()}"


@dataclass(frozen=True)
class CollisionObject:
    """An object taking part in no_overlap: ``index`` into the object order, ``movable`` unless an anchor
    or passive obstacle. Bounds come from the batch (movables) or ``fixed_lo/hi`` (fixed objects)."""

    name: str
    index: int
    movable: bool


@dataclass
class PlacementProblem:
    """The compiled scene.

    Attributes:
        device: Torch/warp device of every table.
        num_envs: Env count the per-env size tables were built for (env ids must be below it).
        placement_seed: Seed the random streams derive from.
        object_names: Placed (movable) objects, in the order of the position/rotation tensors.
        fixed_names: Anchors and passive obstacles (never moved), after the movables in object indices.
        relations: Every compiled relation; ``rid`` indexes the per-relation violation columns.
        pairs: (P, 2) int32 numpy array: the (i, j) object-index pairs checked by no_overlap (i movable), in the
            kernels' order (axis-aligned pairs first); pair ``k`` of the outputs (``ov_pair``) is row k. A large box
            scene keeps them as the rule (``pair_rule.RulePairs``: ``len``, ``pairs[k]``, ``np.asarray(pairs)``).
        local_lo / local_hi: (E, n_all, 3) local bounds per env, metres.
        fixed_lo / fixed_hi: (E, n_fixed, 3) world AABBs of the fixed objects, metres.
        tables: The warp struct the kernels read.
        checkpoints: The solver's checkpoints (iterations) on the device.
        checks_present: Built-in checks that judge something in this scene.
        reachability_targets: Objects marked ``RequiresReachability`` (movable or fixed), for ``ik_reachable``.
        fixed_origins: (n_fixed, 3) env-local origins of the fixed objects, metres.
        pools: Object pools (``pool_parking.PoolTables``: members, counts, parking spots), None without pools.
    """

    device: str
    num_envs: int
    placement_seed: int
    object_names: list[str]
    fixed_names: list[str]
    relations: list[CompiledRelation]
    pairs: np.ndarray | RulePairs
    local_lo: torch.Tensor
    local_hi: torch.Tensor
    fixed_lo: torch.Tensor
    fixed_hi: torch.Tensor
    tables: SceneTables
    checkpoints: wp.array
    checks_present: frozenset[str] = frozenset()
    reachability_targets: tuple[str, ...] = ()
    fixed_origins: torch.Tensor | None = None
    pair_geometry: object | None = None  # collision_geometry.PairGeometry: pair modes, MESH tables, outlines
    pools: object | None = None  # pool_parking.PoolTables: object pools (members, parking spots); None without
    _keep: list = field(default_factory=list, repr=False)
    #: ``evaluation.evaluate_poses``'s buffers and recorded launches by (batch size, thread, threads): they live
    #: as long as the problem.
    _check_spaces: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def collision_objects(self) -> list[CollisionObject]:
        """What ``validate_batch(batch, collision_objects)`` receives."""
        pairs = self.pairs
        used = pairs.objects() if isinstance(pairs, RulePairs) else np.unique(pairs).tolist()
        names = self.all_names
        return [CollisionObject(names[k], k, k < self.num_objects) for k in used]

    @property
    def num_objects(self) -> int:
        return len(self.object_names)

    @property
    def all_names(self) -> list[str]:
        return self.object_names + self.fixed_names

    @property
    def num_relations(self) -> int:
        return len(self.relations)

    @property
    def slack(self) -> float:
        """Metres a check tolerates beyond its limit."""
        return VALIDATION_SLACK_M

    def pair_mode(self, k: int) -> str:
        """How pair k is measured: 'aabb', 'obb' (boxes turned about Z) or 'mesh'."""
        g = self.pair_geometry
        if g is None or k >= len(g.modes) or not g.mode(k):  # pairs by rule have no mode rows: all boxes
            return "aabb"
        return "mesh" if k in g.mesh_pairs else "obb"

    def pair_names(self, k: int) -> tuple[str, str]:
        i, j = self.pairs[k].tolist()
        names = self.all_names
        return names[i], names[j]

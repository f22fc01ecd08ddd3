"""Compile stage: a scene's assets and relations become a ``PlacementProblem`` of flat tables.

Compiled once per (scene, env count, placement seed, device); the solver and the checks only read this
form. Object order: the placed (movable) objects first, in scene order, then the fixed ones (anchors
and passive obstacles). Lengths are metres, frames env-local world, rotations xyzw.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
import warp as wp

from isaaclab_arena.assets.asset import Background, PlaceableAsset
from isaaclab_arena.assets.collision_mode import CollisionMode
from isaaclab_arena.assets.object_reference import ObjectReference
from isaaclab_arena.relations.kernels.tables import SceneTables, vec6i, vec8f, vec10f, vec12i
from isaaclab_arena.relations.placement_restrictions import PlacementConfigError, check_placement_restrictions
from isaaclab_arena.relations.relations import (
    AlignWith,
    AtPosition,
    ClutterOn,
    FaceTo,
    NextTo,
    NotNextTo,
    On,
    PositionLimitsBox,
    PositionLimitsCylindrical,
    RelationBase,
)
from isaaclab_arena.utils.pose import quat_rotate

#: Check names in the order of the validation kernel's verdict slots.
CHECK_SLOTS: tuple[str, ...] = (
    "no_overlap",
    "on_relation",
    "clutter_on_relation",
    "next_to",
    "not_next_to",
    "align_with",
    "face_to",
)
#: Check of each relation class (None: a solver objective only, no check).
RELATION_CHECK: dict[type, str | None] = {
    On: "on_relation",
    ClutterOn: "clutter_on_relation",
    NextTo: "next_to",
    NotNextTo: "not_next_to",
    AlignWith: "align_with",
    FaceTo: "face_to",
    AtPosition: None,
    PositionLimitsBox: None,
    PositionLimitsCylindrical: None,
}
_BIG = 1.0e9
#: A check passes when its relation's excess is at most this (metres): float32 rounding room.
VALIDATION_SLACK_M = 1.0e-6
# Kind ids of kernels/tables.py (KIND_*); 0..5 are projected, the id is their priority.
_KIND = {AlignWith: 0, NextTo: 1, PositionLimitsBox: 2, AtPosition: 3, ClutterOn: 4, On: 5, NotNextTo: 6,
         PositionLimitsCylindrical: 7, FaceTo: 8}
_MAX_PROJ_KIND = 5
_NUM_KINDS = 9


class MeshCollisionNotAvailableError(NotImplementedError):
    """collision_mode='mesh' was requested; only 'bbox' is available in this version."""


@dataclass
class CompiledRelation:
    """One relation instance of the compiled scene (row ``rid`` of the per-relation diagnostics)."""

    rid: int
    relation: RelationBase
    subject: str
    parent: str | None
    check: str | None

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
        object_names: Placed (movable) objects, in the order of the position/rotation tensors.
        fixed_names: Anchors and passive obstacles (never moved), after the movables in object indices.
        num_envs: Env count the per-env size tables were built for (env ids must be below it).
        placement_seed: Seed the random streams derive from.
        relations: Every compiled relation; ``rid`` indexes the per-relation violation columns.
        pairs: (i, j) object-index pairs checked by no_overlap.
        local_lo / local_hi: (E, n_all, 3) local bounds per env (torch, device).
        fixed_lo / fixed_hi: (E, n_fixed, 3) world AABBs of the fixed objects.
        tables: the warp struct the kernels read.
    """

    device: str
    num_envs: int
    placement_seed: int
    object_names: list[str]
    fixed_names: list[str]
    relations: list[CompiledRelation]
    pairs: list[tuple[int, int]]
    local_lo: torch.Tensor
    local_hi: torch.Tensor
    fixed_lo: torch.Tensor
    fixed_hi: torch.Tensor
    tables: SceneTables
    checkpoints: wp.array
    on_z_tolerance_m: float
    checks_present: set[str] = field(default_factory=set)
    _keep: list = field(default_factory=list, repr=False)

    @property
    def collision_objects(self) -> list[CollisionObject]:
        """What ``validate_batch(batch, collision_objects)`` receives."""
        used = sorted({k for pair in self.pairs for k in pair})
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

    def pair_names(self, k: int) -> tuple[str, str]:
        i, j = self.pairs[k]
        names = self.all_names
        return names[i], names[j]


# ---------------------------------------------------------------------------------------------------
def _rotated_aabb(lo, hi, pos, quat) -> tuple[np.ndarray, np.ndarray]:
    corners = [(x, y, z) for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])]
    pts = np.array([quat_rotate(quat, c) for c in corners], dtype=np.float64) + np.asarray(pos, dtype=np.float64)
    return pts.min(axis=0), pts.max(axis=0)


def _member_boxes(asset: PlaceableAsset, num_envs: int, placement_seed: int) -> list:
    from isaaclab_arena.assets.object_set import RigidObjectSet

    if isinstance(asset, RigidObjectSet):
        idx = asset.member_indices_per_env(num_envs, placement_seed)
        boxes = [m.get_bounding_box() for m in asset.objects]
        return [boxes[i] for i in idx]
    return [asset.get_bounding_box()] * num_envs


def _check_collision_modes(assets: list[PlaceableAsset], params) -> None:
    where = None
    if params.solver_params.collision_mode == CollisionMode.MESH:
        where = "RelationSolverParams.collision_mode='mesh'"
    for a in assets:
        if where is None and a.collision_mode == CollisionMode.MESH and (
                a.is_anchor or a.has_placement_relations or a.initial_pose is not None):
            where = f"asset '{a.name}' has collision_mode='mesh'"
    if where is not None:
        raise MeshCollisionNotAvailableError(
            f"{where}: MESH collision is not available yet in this version; use collision_mode='bbox' "
            "(the default), which checks the objects' bounding boxes")


def _ordered_movables(movables: list[PlaceableAsset]) -> list[int]:
    """Topological order (parents of On/ClutterOn/NextTo/AlignWith before children), scene order
    within a level; objects on a cycle keep scene order."""
    index = {a.name: k for k, a in enumerate(movables)}
    deps = [set() for _ in movables]
    for k, a in enumerate(movables):
        for rel in a.get_relations():
            if isinstance(rel, (On, ClutterOn, NextTo, AlignWith)) and rel.parent.name in index:
                deps[k].add(index[rel.parent.name])
    order, done = [], set()
    while len(order) < len(movables):
        ready = [k for k in range(len(movables)) if k not in done and deps[k] <= done]
        if not ready:
            ready = [min(k for k in range(len(movables)) if k not in done)]
        order.append(ready[0])
        done.add(ready[0])
    return order


def _init_support(asset: PlaceableAsset, first_anchor: PlaceableAsset, index: dict[str, int]) -> int:
    clutter = asset.get_relations_of(ClutterOn)
    if clutter:
        return index[clutter[0].parent.name]
    seen, cur = {asset.name}, asset
    while True:
        ons = cur.get_relations_of(On)
        if not ons:
            return index[first_anchor.name]
        cur = ons[0].parent
        if cur.is_anchor:
            return index[cur.name]
        if cur.name in seen:
            return index[first_anchor.name]
        seen.add(cur.name)


def compile_placement_problem(assets, num_envs: int, placement_seed: int, placer_params,
                              device: str = "cpu") -> PlacementProblem:
    """Checks the scene (restrictions, collision modes, anchors) and compiles it.

    Raises ``PlacementConfigError`` (a ``ValueError``) naming the asset and relation for bad input and
    ``MeshCollisionNotAvailableError`` for collision_mode='mesh'.
    """
    from isaaclab_arena.relations.kernels.geometry import ensure_warp, torch_stream

    ensure_warp()
    assets = list(assets)
    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs <= 0:
        raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
    check_placement_restrictions(assets, random_yaw_init=placer_params.random_yaw_init)
    _check_collision_modes(assets, placer_params)
    sp = placer_params.solver_params

    movables = [a for a in assets if a.has_placement_relations]
    anchors = [a for a in assets if a.is_anchor]
    if not movables and not anchors:
        raise PlacementConfigError("nothing to place: no asset has IsAnchor() or a placement relation")
    if not anchors:
        raise PlacementConfigError("no anchor: mark a fixed support (a table, a counter reference) with IsAnchor()")
    for a in anchors:
        if a.get_world_pose() is None:
            raise PlacementConfigError(f"asset '{a.name}': an anchor needs a fixed initial pose; call "
                                       "set_initial_pose(Pose(...))")
    obstacles = [a for a in assets if not a.is_anchor and not a.has_placement_relations
                 and a.initial_pose is not None and not isinstance(a, (Background, ObjectReference))]
    fixed = anchors + obstacles
    fixed_names = {a.name for a in fixed}
    movable_names = {a.name for a in movables}
    for a in movables:
        for rel in a.get_relations():
            if rel.parent is not None and (rel.is_spatial or isinstance(rel, FaceTo)):
                if rel.parent.name not in fixed_names and rel.parent.name not in movable_names:
                    raise PlacementConfigError(
                        f"asset '{a.name}', relation {rel.describe()}: the reference '{rel.parent.name}' is neither an "
                        "anchor, nor placed by relations, nor a fixed obstacle with an initial_pose")

    order_local = _ordered_movables(movables)
    objects = movables + fixed
    index = {a.name: k for k, a in enumerate(objects)}
    n_mov, n_all, n_fix = len(movables), len(objects), len(fixed)

    # -- geometry tables ----------------------------------------------------------------------------
    local_lo = np.zeros((num_envs, n_all, 3), np.float64)
    local_hi = np.zeros((num_envs, n_all, 3), np.float64)
    for k, a in enumerate(objects):
        boxes = _member_boxes(a, num_envs, placement_seed)
        for e, box in enumerate(boxes):
            local_lo[e, k] = box.min_point
            local_hi[e, k] = box.max_point
    fixed_lo = np.zeros((num_envs, max(n_fix, 1), 3), np.float64)
    fixed_hi = np.zeros((num_envs, max(n_fix, 1), 3), np.float64)
    for f, a in enumerate(fixed):
        pose = a.get_world_pose()
        cache = {}
        for e in range(num_envs):
            key = (tuple(local_lo[e, n_mov + f]), tuple(local_hi[e, n_mov + f]))
            if key not in cache:
                cache[key] = _rotated_aabb(key[0], key[1], pose.position_xyz, pose.rotation_xyzw)
            fixed_lo[e, f], fixed_hi[e, f] = cache[key]

    # -- per-object attributes ----------------------------------------------------------------------
    params_yaw = placer_params.random_yaw_init
    base_rot, yaw_mode, init_support = [], [], []
    ra_pos, ra_rot, ra_on = [], [], []
    for a in movables:
        rot = a.rotate_around_solution
        base_rot.append(rot.quaternion_xyzw() if rot is not None else (0.0, 0.0, 0.0, 1.0))
        clutter = a.get_relations_of(ClutterOn)
        if a.get_relations_of(FaceTo):
            yaw_mode.append(2)
        elif (clutter and clutter[0].random_yaw) or (params_yaw and not clutter):
            yaw_mode.append(1)
        else:
            yaw_mode.append(0)
        init_support.append(_init_support(a, anchors[0], index))
        rnd = a.random_around_solution
        if rnd is not None:
            ra_pos.append((rnd.x_half_m, rnd.y_half_m, rnd.z_half_m))
            ra_rot.append((rnd.roll_half_rad, rnd.pitch_half_rad, rnd.yaw_half_rad))
            ra_on.append(1)
        else:
            ra_pos.append((0.0, 0.0, 0.0))
            ra_rot.append((0.0, 0.0, 0.0))
            ra_on.append(0)

    # -- relation table (one row per relation, rows grouped by kind) ----------------------------------
    rows: list[tuple[int, list[int], list[float], RelationBase, PlaceableAsset]] = []
    pinned = np.zeros((n_mov, 3), bool)
    exempt: set[tuple[int, int]] = set()
    pair_clear_override: dict[tuple[int, int], float] = {}

    def weight(rel) -> float:
        return float(sp.strategy_for(type(rel)).slope) * float(rel.relation_loss_weight)

    for c, a in enumerate(movables):
        for rel in a.get_relations():
            t = type(rel)
            if t not in _KIND:
                continue
            kind = _KIND[t]
            p = index[rel.parent.name] if rel.parent is not None else -1
            axis, flag, f = 0, 0, [0.0] * 8
            if t is On:
                f[0], f[1], flag = rel.clearance_m, rel.edge_margin_m, int(rel.overlap)
                pinned[c, 2] = True
                exempt.add((min(c, p), max(c, p)))
            elif t is ClutterOn:
                f[0], f[1], f[2], f[3] = rel.spread, rel.clearance_m, max(rel.gap_m, sp.clearance_m), rel.edge_margin_m
                exempt.add((min(c, p), max(c, p)))
            elif t is NextTo:
                axis, flag = rel.side.axis_index, int(rel.cross_position_ratio is not None)
                f[0], f[1], f[2], f[3] = rel.side.sign, rel.distance_m, rel.tolerance_m, rel.cross_position_ratio or 0.0
                key = (min(c, p), max(c, p))
                pair_clear_override[key] = min(pair_clear_override.get(key, sp.clearance_m), rel.distance_m)
            elif t is NotNextTo:
                strat = sp.strategy_for(NotNextTo)
                axis = rel.side.axis_index
                f[0], f[1], f[2] = rel.side.sign, rel.tolerance_m, float(getattr(strat, "margin_m", 0.0))
            elif t is AlignWith:
                axis = rel.axis.index
                f[0], f[1] = rel.offset_m, rel.tolerance_m
            elif t is AtPosition:
                vals = (rel.x, rel.y, rel.z)
                for ax, v in enumerate(vals):
                    if v is not None:
                        f[ax], f[3 + ax] = 1.0, v
                        pinned[c, ax] = True
            elif t is PositionLimitsBox:
                for ax, (lo, hi) in enumerate((rel.x_limits, rel.y_limits, rel.z_limits)):
                    f[ax] = -_BIG if lo is None else lo
                    f[3 + ax] = _BIG if hi is None else hi
            elif t is PositionLimitsCylindrical:
                f[0], f[1] = rel.center_x, rel.center_y
                f[2] = -1.0 if rel.radius_min is None else rel.radius_min
                f[3] = -1.0 if rel.radius_max is None else rel.radius_max
            if t is not FaceTo:
                f[7] = weight(rel)
            rows.append((kind, [kind, c, p, axis, flag, 0], f, rel, a))
    rows.sort(key=lambda r: r[0])  # stable: scene order within a kind
    compiled: list[CompiledRelation] = []
    for rid, row in enumerate(rows):
        row[1][5] = rid
        rel, a = row[3], row[4]
        compiled.append(CompiledRelation(rid, rel, a.name, rel.parent.name if rel.parent is not None else None,
                                         RELATION_CHECK[type(rel)]))
    kind_start = np.searchsorted(np.array([r[0] for r in rows], np.int64), np.arange(_NUM_KINDS + 1), side="left")
    proj: list[list[tuple[int, int]]] = [[] for _ in movables]
    for rid, row in enumerate(rows):
        if row[0] <= _MAX_PROJ_KIND:
            proj[row[1][1]].append((row[0], rid))

    # -- no_overlap pairs ---------------------------------------------------------------------------
    colliders_fixed = [n_mov + f for f, a in enumerate(fixed) if not isinstance(a, Background)]
    pairs, pair_f = [], []

    def axes_for(i, j):
        ax = [0.0 if (pinned[i, k] and (j >= n_mov or pinned[j, k])) else 1.0 for k in range(3)]
        if not any(ax):
            ax = [1.0, 1.0, 0.0]
        return ax

    for i in range(n_mov):
        for j in list(range(i + 1, n_mov)) + colliders_fixed:
            if (min(i, j), max(i, j)) in exempt:
                continue
            pairs.append((i, j))
            pair_f.append([pair_clear_override.get((min(i, j), max(i, j)), sp.clearance_m)] + axes_for(i, j))
    adj = [[] for _ in range(n_mov)]
    for k, (i, j) in enumerate(pairs):
        adj[i].append(k)
        if j < n_mov:
            adj[j].append(k)

    # -- per-object rows ----------------------------------------------------------------------------
    rank = [0] * n_mov
    for pos, k in enumerate(order_local):
        rank[k] = pos
    clutter_rel = [-1] * n_mov
    for rid, row in enumerate(rows):
        if row[0] == _KIND[ClutterOn]:
            clutter_rel[row[1][1]] = rid
    obj_i, obj_f, proj_flat, adj_flat = [], [], [], []
    for c, a in enumerate(movables):
        p0 = len(proj_flat)
        proj_flat += [rid for _, rid in sorted(proj[c])]
        a0 = len(adj_flat)
        adj_flat += adj[c]
        flags = 0
        for rid in proj_flat[p0:]:
            if 0 <= rows[rid][1][2] < n_mov:
                flags |= 1
        if any(r[1][1] == c and r[0] in (_KIND[NotNextTo], _KIND[PositionLimitsCylindrical]) for r in rows):
            flags |= 2
        if yaw_mode[c] != 0 or ra_on[c] or tuple(base_rot[c]) != (0.0, 0.0, 0.0, 1.0):
            flags |= 4
        obj_i.append([yaw_mode[c], init_support[c], order_local[c], clutter_rel[c], ra_on[c], p0, len(proj_flat),
                      rank[c], a0, len(adj_flat), flags, 0])
        obj_f.append(list(base_rot[c]) + list(ra_pos[c]) + list(ra_rot[c]))

    # -- warp struct --------------------------------------------------------------------------------
    with torch_stream(device):  # CUDA: the table copies are ordered with torch's stream
        keep: list = []

        def arr(values, dtype, width=None, default_dtype=np.float32):
            npd = np.int32 if dtype in (int, vec6i, vec12i, wp.vec2i) else np.float32
            values = np.asarray(values, dtype=npd)
            if values.size == 0:
                values = np.zeros((1,) if width is None else (1, width), dtype=npd)
            a = wp.array(values, dtype=dtype, device=device)
            keep.append(a)
            return a

        T = SceneTables()
        T.n_mov, T.n_all, T.n_pairs = n_mov, n_all, len(pairs)
        # The initial sampler checks each object against everything placed before it, so a candidate whose
        # every draw was penalty-free is already a solver fixed point, unless a later object can still move
        # an earlier one (movable-parent repair, FaceTo headings) or a keep-out refers to a later parent.
        later_parent = any(r[0] in (_KIND[NotNextTo],) and 0 <= r[1][2] < n_mov and rank[r[1][2]] > rank[r[1][1]]
                           for r in rows)
        T.init_exact = int(not any(o[10] & 1 for o in obj_i) and not any(r[0] == _KIND[FaceTo] for r in rows)
                           and not later_parent)
        t_local_lo = torch.tensor(local_lo, dtype=torch.float32, device=device)
        t_local_hi = torch.tensor(local_hi, dtype=torch.float32, device=device)
        t_fixed_lo = torch.tensor(fixed_lo, dtype=torch.float32, device=device)
        t_fixed_hi = torch.tensor(fixed_hi, dtype=torch.float32, device=device)
        T.local_lo = wp.from_torch(t_local_lo, dtype=wp.vec3)
        T.local_hi = wp.from_torch(t_local_hi, dtype=wp.vec3)
        T.fixed_lo = wp.from_torch(t_fixed_lo, dtype=wp.vec3)
        T.fixed_hi = wp.from_torch(t_fixed_hi, dtype=wp.vec3)
        keep += [T.local_lo, T.local_hi, T.fixed_lo, T.fixed_hi]
        T.kind_start = arr(kind_start, int)
        T.obj_i = arr(obj_i, vec12i, 12)
        T.obj_f = arr(obj_f, vec10f, 10)
        T.rel_i = arr([r[1] for r in rows], vec6i, 6)
        T.rel_f = arr([r[2] for r in rows], vec8f, 8)
        T.proj = arr(proj_flat, int)
        T.adj = arr(adj_flat, int)
        T.pair_i = arr(pairs, wp.vec2i, 2)
        T.pair_f = arr(pair_f, wp.vec4, 4)
        T.pair_w = float(sp.collision_strategy.slope)
        T.on_ztol = float(placer_params.on_relation_z_tolerance_m)
        T.slack = VALIDATION_SLACK_M

        checkpoints = arr(list(sp.get_checkpoints()), int)
    present = {"no_overlap"} | {c.check for c in compiled if c.check}
    return PlacementProblem(
        device=device, num_envs=num_envs, placement_seed=placement_seed,
        object_names=[a.name for a in movables], fixed_names=[a.name for a in fixed], relations=compiled,
        pairs=pairs, local_lo=t_local_lo, local_hi=t_local_hi, fixed_lo=t_fixed_lo, fixed_hi=t_fixed_hi,
        tables=T, checkpoints=checkpoints, on_z_tolerance_m=float(placer_params.on_relation_z_tolerance_m),
        checks_present=present, _keep=keep)


def placement_signature(assets, num_envs: int, placer_params, device: str) -> tuple:
    """A key that changes when anything the compile stage reads changes (cache key of ObjectPlacer)."""
    parts = []
    for a in assets:
        pose = a.initial_pose
        parts.append((a.name, id(a), pose, tuple(repr(r) for r in a.get_relations()), a.collision_mode))
    sp = placer_params.solver_params
    return (tuple(parts), num_envs, device, placer_params.random_yaw_init, placer_params.on_relation_z_tolerance_m,
            sp.clearance_m, sp.collision_mode, tuple((k, repr(v)) for k, v in sp.strategies.items()),
            repr(sp.collision_strategy), sp.get_checkpoints())

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
from isaaclab_arena.relations.kernels.tables import SceneTables
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
# Projection kind ids of kernels/tables.py (KIND_*); also the priority when intervals conflict.
_PROJ_KIND = {AlignWith: 0, NextTo: 1, PositionLimitsBox: 2, AtPosition: 3, ClutterOn: 4, On: 5}
_PROJ_TABLE = {On: "on", ClutterOn: "cl", NextTo: "nt", AlignWith: "al", AtPosition: "at", PositionLimitsBox: "lb"}


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
    rank: wp.array
    adj_start: wp.array
    adj_pair: wp.array
    checkpoints: wp.array
    on_z_tolerance_m: float
    checks_present: set[str] = field(default_factory=set)
    _keep: list = field(default_factory=list, repr=False)

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
    from isaaclab_arena.relations.kernels.geometry import ensure_warp

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
    base_rot, yaw_mode, init_support, clutter_row = [], [], [], [-1] * n_mov
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

    # -- relation tables ----------------------------------------------------------------------------
    rows: dict[str, list[dict]] = {k: [] for k in ("on", "cl", "nt", "nn", "al", "at", "lb", "cy", "ft")}
    compiled: list[CompiledRelation] = []
    proj: list[list[tuple[int, int, int]]] = [[] for _ in movables]  # (rank, kind, row)
    pinned = np.zeros((n_mov, 3), bool)
    exempt: set[tuple[int, int]] = set()
    pair_clear_override: dict[tuple[int, int], float] = {}

    def weight(rel) -> float:
        return float(sp.strategy_for(type(rel)).slope) * float(rel.relation_loss_weight)

    for c, a in enumerate(movables):
        for rel in a.get_relations():
            t = type(rel)
            if t not in RELATION_CHECK:
                continue
            rid = len(compiled)
            parent = rel.parent
            p = index[parent.name] if parent is not None else -1
            compiled.append(CompiledRelation(rid, rel, a.name, parent.name if parent is not None else None,
                                             RELATION_CHECK[t]))
            if t is On:
                rows["on"].append(dict(child=c, parent=p, clear=rel.clearance_m, margin=rel.edge_margin_m,
                                       overlap=int(rel.overlap), w=weight(rel), rid=rid))
                pinned[c, 2] = True
                exempt.add((min(c, p), max(c, p)))
            elif t is ClutterOn:
                rows["cl"].append(dict(child=c, parent=p, spread=rel.spread, clear=rel.clearance_m,
                                       gap=max(rel.gap_m, sp.clearance_m), margin=rel.edge_margin_m, w=weight(rel),
                                       rid=rid))
                clutter_row[c] = len(rows["cl"]) - 1
                exempt.add((min(c, p), max(c, p)))
            elif t is NextTo:
                rows["nt"].append(dict(child=c, parent=p, axis=rel.side.axis_index, sign=rel.side.sign,
                                       dist=rel.distance_m, tol=rel.tolerance_m,
                                       ratio=rel.cross_position_ratio or 0.0,
                                       has_ratio=int(rel.cross_position_ratio is not None), w=weight(rel), rid=rid))
                key = (min(c, p), max(c, p))
                pair_clear_override[key] = min(pair_clear_override.get(key, sp.clearance_m), rel.distance_m)
            elif t is NotNextTo:
                strat = sp.strategy_for(NotNextTo)
                rows["nn"].append(dict(child=c, parent=p, axis=rel.side.axis_index, sign=rel.side.sign,
                                       tol=rel.tolerance_m, margin=float(getattr(strat, "margin_m", 0.0)),
                                       w=weight(rel), rid=rid))
            elif t is AlignWith:
                rows["al"].append(dict(child=c, parent=p, axis=rel.axis.index, off=rel.offset_m, tol=rel.tolerance_m,
                                       w=weight(rel), rid=rid))
            elif t is AtPosition:
                vals = (rel.x, rel.y, rel.z)
                mask = tuple(1.0 if v is not None else 0.0 for v in vals)
                rows["at"].append(dict(child=c, mask=mask, val=tuple(v if v is not None else 0.0 for v in vals),
                                       w=weight(rel), rid=rid))
                for ax in range(3):
                    if vals[ax] is not None:
                        pinned[c, ax] = True
            elif t is PositionLimitsBox:
                lims = (rel.x_limits, rel.y_limits, rel.z_limits)
                rows["lb"].append(dict(child=c, lo=tuple(-_BIG if l[0] is None else l[0] for l in lims),
                                       hi=tuple(_BIG if l[1] is None else l[1] for l in lims), w=weight(rel), rid=rid))
            elif t is PositionLimitsCylindrical:
                rows["cy"].append(dict(child=c, center=(rel.center_x, rel.center_y),
                                       rmin=-1.0 if rel.radius_min is None else rel.radius_min,
                                       rmax=-1.0 if rel.radius_max is None else rel.radius_max, w=weight(rel), rid=rid))
            elif t is FaceTo:
                rows["ft"].append(dict(child=c, target=p, rid=rid))
            if t in _PROJ_KIND:
                proj[c].append((_PROJ_KIND[t], _PROJ_KIND[t], len(rows[_PROJ_TABLE[t]]) - 1))

    # -- no_overlap pairs ---------------------------------------------------------------------------
    colliders_fixed = [n_mov + f for f, a in enumerate(fixed) if not isinstance(a, Background)]
    pairs, pair_clear, pair_axes = [], [], []

    def axes_for(i, j):
        ax = []
        for k in range(3):
            both = pinned[i, k] and (j >= n_mov or pinned[j, k])
            ax.append(0.0 if both else 1.0)
        if not any(ax[:2]) and not ax[2]:
            ax = [1.0, 1.0, 0.0]
        return tuple(ax)

    for i in range(n_mov):
        for j in list(range(i + 1, n_mov)) + colliders_fixed:
            if (min(i, j), max(i, j)) in exempt:
                continue
            pairs.append((i, j))
            pair_clear.append(pair_clear_override.get((min(i, j), max(i, j)), sp.clearance_m))
            pair_axes.append(axes_for(i, j))
    adj = [[] for _ in range(n_mov)]
    for k, (i, j) in enumerate(pairs):
        adj[i].append(k)
        if j < n_mov:
            adj[j].append(k)
    adj_start = np.cumsum([0] + [len(x) for x in adj]).astype(np.int32)
    adj_pair = np.array([k for x in adj for k in x] or [0], np.int32)
    rank = np.zeros(max(n_mov, 1), np.int32)
    for pos, k in enumerate(order_local):
        rank[k] = pos

    # -- projection CSR ------------------------------------------------------------------------------
    proj_start, proj_kind, proj_row = [0], [], []
    for c in range(n_mov):
        for _, kind, row in sorted(proj[c]):
            proj_kind.append(kind)
            proj_row.append(row)
        proj_start.append(len(proj_kind))

    # -- warp struct --------------------------------------------------------------------------------
    keep: list = []

    def arr(values, dtype, default):
        values = list(values) or [default]
        a = wp.array(np.asarray(values, dtype=_np_dtype(dtype)), dtype=dtype, device=device)
        keep.append(a)
        return a

    T = SceneTables()
    T.n_mov, T.n_all = n_mov, n_all
    t_local_lo = torch.tensor(local_lo, dtype=torch.float32, device=device)
    t_local_hi = torch.tensor(local_hi, dtype=torch.float32, device=device)
    t_fixed_lo = torch.tensor(fixed_lo, dtype=torch.float32, device=device)
    t_fixed_hi = torch.tensor(fixed_hi, dtype=torch.float32, device=device)
    T.local_lo = wp.from_torch(t_local_lo, dtype=wp.vec3)
    T.local_hi = wp.from_torch(t_local_hi, dtype=wp.vec3)
    T.fixed_lo = wp.from_torch(t_fixed_lo, dtype=wp.vec3)
    T.fixed_hi = wp.from_torch(t_fixed_hi, dtype=wp.vec3)
    keep += [T.local_lo, T.local_hi, T.fixed_lo, T.fixed_hi]
    T.base_rot = arr(base_rot, wp.quat, (0.0, 0.0, 0.0, 1.0))
    T.yaw_mode = arr(yaw_mode, int, 0)
    T.init_support = arr(init_support, int, 0)
    T.order = arr(order_local, int, 0)
    T.clutter = arr(clutter_row, int, -1)
    T.ra_pos = arr(ra_pos, wp.vec3, (0.0, 0.0, 0.0))
    T.ra_rot = arr(ra_rot, wp.vec3, (0.0, 0.0, 0.0))
    T.ra_on = arr(ra_on, int, 0)
    T.proj_start = arr(proj_start, int, 0)
    T.proj_kind = arr(proj_kind, int, 0)
    T.proj_row = arr(proj_row, int, 0)

    spec = {
        "on": [("child", int, 0), ("parent", int, 0), ("clear", float, 0.0), ("margin", float, 0.0),
               ("overlap", int, 0), ("w", float, 0.0), ("rid", int, 0)],
        "cl": [("child", int, 0), ("parent", int, 0), ("spread", float, 0.0), ("clear", float, 0.0),
               ("gap", float, 0.0), ("margin", float, 0.0), ("w", float, 0.0), ("rid", int, 0)],
        "nt": [("child", int, 0), ("parent", int, 0), ("axis", int, 0), ("sign", float, 1.0), ("dist", float, 0.0),
               ("tol", float, 0.0), ("ratio", float, 0.0), ("has_ratio", int, 0), ("w", float, 0.0), ("rid", int, 0)],
        "nn": [("child", int, 0), ("parent", int, 0), ("axis", int, 0), ("sign", float, 1.0), ("tol", float, 0.0),
               ("margin", float, 0.0), ("w", float, 0.0), ("rid", int, 0)],
        "al": [("child", int, 0), ("parent", int, 0), ("axis", int, 0), ("off", float, 0.0), ("tol", float, 0.0),
               ("w", float, 0.0), ("rid", int, 0)],
        "at": [("child", int, 0), ("mask", wp.vec3, (0.0, 0.0, 0.0)), ("val", wp.vec3, (0.0, 0.0, 0.0)),
               ("w", float, 0.0), ("rid", int, 0)],
        "lb": [("child", int, 0), ("lo", wp.vec3, (0.0, 0.0, 0.0)), ("hi", wp.vec3, (0.0, 0.0, 0.0)),
               ("w", float, 0.0), ("rid", int, 0)],
        "cy": [("child", int, 0), ("center", wp.vec2, (0.0, 0.0)), ("rmin", float, 0.0), ("rmax", float, 0.0),
               ("w", float, 0.0), ("rid", int, 0)],
        "ft": [("child", int, 0), ("target", int, 0), ("rid", int, 0)],
    }
    for short, fields in spec.items():
        setattr(T, f"n_{short}", len(rows[short]))
        for name, dtype, default in fields:
            setattr(T, f"{short}_{name}", arr([r[name] for r in rows[short]], dtype, default))
    T.n_pairs = len(pairs)
    T.pr_i = arr([p[0] for p in pairs], int, 0)
    T.pr_j = arr([p[1] for p in pairs], int, 0)
    T.pr_clear = arr(pair_clear, float, 0.0)
    T.pr_axes = arr(pair_axes, wp.vec3, (1.0, 1.0, 1.0))
    T.pair_w = float(sp.collision_strategy.slope)
    T.on_ztol = float(placer_params.on_relation_z_tolerance_m)
    T.slack = 1.0e-6

    checkpoints = arr(sp.get_checkpoints(), int, 0)
    present = {"no_overlap"} | {c.check for c in compiled if c.check}
    return PlacementProblem(
        device=device, num_envs=num_envs, placement_seed=placement_seed,
        object_names=[a.name for a in movables], fixed_names=[a.name for a in fixed], relations=compiled,
        pairs=pairs, local_lo=t_local_lo, local_hi=t_local_hi, fixed_lo=t_fixed_lo, fixed_hi=t_fixed_hi,
        tables=T, rank=arr(rank, int, 0), adj_start=arr(adj_start, int, 0), adj_pair=arr(adj_pair, int, 0),
        checkpoints=checkpoints, on_z_tolerance_m=float(placer_params.on_relation_z_tolerance_m),
        checks_present=present, _keep=keep)


def _np_dtype(dtype):
    if dtype is int:
        return np.int32
    return np.float32


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

"""Compile stage: a scene's assets and relations become a ``PlacementProblem`` of flat tables.

The steps, in order: check the scene (restrictions, collision modes, anchors, references), sort its assets
into movables and fixed objects, read their geometry per env, pack every relation through its kind module,
build the no_overlap pairs, the per-object rows, then the warp tables on the device. Lengths are metres,
frames env-local world, rotations xyzw.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import torch
import warp as wp

from isaaclab_arena.assets.asset import Background
from isaaclab_arena.assets.collision_mode import CollisionMode
from isaaclab_arena.assets.object_reference import ObjectReference
from isaaclab_arena.relations.compiler.placement_order import parents_first
from isaaclab_arena.relations.compiler.collision_geometry import (
    box_pairs_first,
    compile_pair_geometry,
    general_objects,
    effective_mode,
)
from isaaclab_arena.relations.kernels.geometry import ensure_warp, torch_stream
from isaaclab_arena.relations.kernels.static_intervals import static_intervals
from isaaclab_arena.relations.kernels.tables import (
    OI_COLS,
    InitExact,
    ObjectColumn,
    ObjectFlag,
    ObjectParam,
    PairColumn,
    PairParam,
    RelationRow,
    SceneTables,
    YawMode,
    plain_scene,
    vec6i,
    vec10f,
    vec12i,
)
from isaaclab_arena.relations.compiler.feasibility import check_feasibility
from isaaclab_arena.relations.compiler.footprint_budget import check_footprint_budget
from isaaclab_arena.relations.kinds import KIND_ID, KINDS, kind_of, priority_of
from isaaclab_arena.relations.compiler.chain_room import ChainRooms, turns
from isaaclab_arena.relations.kinds.kind import (ROW_WIDTH, KindRole, PackContext, PackedRelation, ParamRow,
                                                 RelationKind, RoomRow)
from isaaclab_arena.relations.compiler.object_yaw import yaw_mode
from isaaclab_arena.relations.compiler.device_arrays import device_array, no_mesh_tables
from isaaclab_arena.relations.compiler.pair_rule import keeps_pair_rule, scene_pair_rule, set_rule_tables
from isaaclab_arena.relations.compiler.pair_tables import box_pair_index, overlap_pairs, uses_sweep
from isaaclab_arena.relations.mesh.sdf import MeshTables
from isaaclab_arena.relations.compiler.placement_problem import (
    VALIDATION_SLACK_M,
    CompiledRelation,
    PlacementProblem,
)
from isaaclab_arena.relations.compiler.placement_restrictions import PlacementConfigError, check_placement_restrictions
from isaaclab_arena.relations.compiler.pool_parking import budget_movables, compile_pools, pool_signature
from isaaclab_arena.relations.relations import ClutterOn, On, RequiresReachability
from isaaclab_arena.relations.compiler.scene_budgets import check_memory_budget, check_object_budget
from isaaclab_arena.relations.compiler.scene_lengths import check_scene_lengths
from isaaclab_arena.utils.pose import quat_rotate
from isaaclab_arena.utils.progress import advance_to, close_bar, progress_bar


def _rotated_aabb(lo, hi, pos, quat) -> tuple[np.ndarray, np.ndarray]:
    corners = [(x, y, z) for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])]
    pts = np.array([quat_rotate(quat, c) for c in corners], dtype=np.float64) + np.asarray(pos, dtype=np.float64)
    return pts.min(axis=0), pts.max(axis=0)


def _member_boxes(asset, num_envs: int, placement_seed: int) -> list:
    """The local bounds of ``asset`` in every env (a RigidObjectSet's member of each env)."""
    per_env = getattr(asset, "member_indices_per_env", None)
    if per_env is not None:
        boxes = [m.get_bounding_box() for m in asset.objects]
        return [boxes[i] for i in per_env(num_envs, placement_seed)]
    return [asset.get_bounding_box()] * num_envs


# ---------------------------------------------------------------------------------------- checking
def _check_collision_modes(assets, params) -> None:
    """MESH supports yaw only: an object that asks for collision_mode='mesh' itself cannot roll or pitch."""
    for a in assets:
        if a.collision_mode != CollisionMode.MESH or not a.has_placement_relations:
            continue
        rot, rnd = a.rotate_around_solution, a.random_around_solution
        if (rot is not None and (abs(rot.roll_rad) > 1e-9 or abs(rot.pitch_rad) > 1e-9)) or (
                rnd is not None and (rnd.roll_half_rad > 0.0 or rnd.pitch_half_rad > 0.0)):
            raise PlacementConfigError(f"asset '{a.name}': roll or pitch needs collision_mode='bbox' (whose bounds "
                                       "enclose the full rotation); collision_mode='mesh' supports yaw only")


def _sort_scene(assets, num_envs, default_mode=CollisionMode.BBOX):
    """(movables, anchors, passive obstacles) after checking that the scene can be placed. A Background is a
    passive obstacle only in MESH mode (from its mesh); its box would cover everything."""
    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs <= 0:
        raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
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
    # a fixed pose (initial_pose, or a default one such as a robot's stand on the floor) makes a passive obstacle
    obstacles = [a for a in assets if not a.is_anchor and not a.has_placement_relations
                 and a.get_world_pose() is not None and not isinstance(a, ObjectReference)
                 and (not isinstance(a, Background) or effective_mode(a, default_mode) == CollisionMode.MESH)]
    known = {a.name for a in movables + anchors + obstacles}
    for a in movables:
        for rel in a.get_relations():
            if rel.parent is not None and kind_of(rel) is not None and rel.parent.name not in known:
                raise PlacementConfigError(
                    f"asset '{a.name}', relation {rel.describe()}: the reference '{rel.parent.name}' is neither an "
                    "anchor, nor placed by relations, nor a fixed obstacle with an initial_pose")
    return movables, anchors, obstacles


def _init_support(asset, first_anchor, index: dict[str, int]) -> int:
    """The object whose footprint seeds the asset's initial draw: a ClutterOn support, else the nearest
    anchor up its On chain (the first anchor when the chain has none or loops)."""
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


class _PackedRelation(NamedTuple):
    """A relation packed by its kind, before the rows are sorted by kind id."""

    kind_id: int
    subject: int  # movable index
    parent: int  # object index, -1 for none
    packed: PackedRelation
    params: list  # the float row (the kind's ParamColumns, WEIGHT last)
    relation: Any
    kind: RelationKind
    asset: Any  # the subject


class _SceneCompiler:
    """Intermediate state of one compile; ``PackContext`` writes the pinned axes, exempt pairs and pair
    clearances that the kinds declare."""

    def __init__(self, assets, num_envs: int, placement_seed: int, placer_params):
        self.placer_params = placer_params
        self.solver_params = placer_params.solver_params
        self.num_envs, self.placement_seed = num_envs, placement_seed
        self.movables, self.anchors, obstacles = _sort_scene(assets, num_envs, self.solver_params.collision_mode)
        self.fixed = self.anchors + obstacles
        self.objects = self.movables + self.fixed
        self.index = {a.name: k for k, a in enumerate(self.objects)}
        self.n_mov, self.n_all = len(self.movables), len(self.objects)
        self.pinned = np.zeros((self.n_mov, 3), bool)
        self.exempt: set[tuple[int, int]] = set()
        self.pair_clearance: dict[tuple[int, int], float] = {}

    # -- geometry -------------------------------------------------------------------------------------
    def geometry(self):
        """Local bounds per env of every object and world AABBs of the fixed ones (float64, metres)."""
        E, n_mov = self.num_envs, self.n_mov
        local_lo = np.zeros((E, self.n_all, 3), np.float64)
        local_hi = np.zeros((E, self.n_all, 3), np.float64)
        for k, a in enumerate(self.objects):
            for e, box in enumerate(_member_boxes(a, E, self.placement_seed)):
                local_lo[e, k], local_hi[e, k] = box.min_point, box.max_point
        n_fix = len(self.fixed)
        fixed_lo = np.zeros((E, max(n_fix, 1), 3), np.float64)
        fixed_hi = np.zeros((E, max(n_fix, 1), 3), np.float64)
        for f, a in enumerate(self.fixed):
            pose, cache = a.get_world_pose(), {}
            for e in range(E):
                key = (tuple(local_lo[e, n_mov + f]), tuple(local_hi[e, n_mov + f]))
                if key not in cache:
                    cache[key] = _rotated_aabb(key[0], key[1], pose.position_xyz, pose.rotation_xyzw)
                fixed_lo[e, f], fixed_hi[e, f] = cache[key]
        return local_lo, local_hi, fixed_lo, fixed_hi

    def room_table(self, local_lo: np.ndarray, local_hi: np.ndarray) -> np.ndarray:
        """(E, n_mov, 8) room each movable's NextTo chain needs beyond its footprint and its origin (``RoomRow``
        order), computed once per distinct geometry of the movables (object-set members differ by env)."""
        turning = [turns(a, self.placer_params.random_yaw_init) for a in self.movables]
        n = self.n_mov
        table = np.zeros((self.num_envs, max(n, 1), 8), np.float32)
        if n == 0:
            return table
        keys = np.concatenate([local_lo[:, :n].reshape(self.num_envs, -1), local_hi[:, :n].reshape(self.num_envs, -1)], 1)
        _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        for u, e in enumerate(first):
            rooms = ChainRooms(self.movables, local_lo[e:e + 1], local_hi[e:e + 1], turning)
            table[inverse.reshape(-1) == u] = [rooms.footprint(k) + rooms.origin(k) for k in range(n)]
        return table

    def random_half_ranges(self, k: int) -> tuple[float, float, float]:
        """Movable k's RandomAroundSolution position half ranges (x, y, z metres; zeros without one)."""
        rnd = self.movables[k].random_around_solution
        return (0.0, 0.0, 0.0) if rnd is None else (rnd.x_half_m, rnd.y_half_m, rnd.z_half_m)

    # -- relations ------------------------------------------------------------------------------------
    def relation_rows(self):
        """Rows (``RelationRow``: kind id, subject, parent, axis, flag, row) and float rows of every relation,
        grouped by kind id (scene order within a kind), and the ``CompiledRelation`` of each."""
        sp = self.solver_params
        rows: list[_PackedRelation] = []
        for c, a in enumerate(self.movables):
            for rel in a.get_relations():
                kind = kind_of(rel)
                if kind is None:
                    continue
                p = self.index[rel.parent.name] if kind.has_parent else -1
                packed = kind.pack(rel, PackContext(self, c, p))
                weight = (float(sp.strategy_for(type(rel)).slope) * float(rel.relation_loss_weight)
                          if kind.strategy is not None else 0.0)
                rows.append(_PackedRelation(KIND_ID[type(rel)], c, p, packed, kind.columns.row(packed.values, weight),
                                            rel, kind, a))
        rows.sort(key=lambda r: r.kind_id)  # stable: scene order within a kind
        ints, floats, compiled = [], [], []
        for rid, r in enumerate(rows):
            ints.append(RelationRow(kind=r.kind_id, subject=r.subject, parent=r.parent, axis=r.packed.axis,
                                    flag=r.packed.flag, row=rid))
            floats.append(r.params)
            compiled.append(CompiledRelation(rid, r.relation, r.kind, r.asset.name,
                                             r.relation.parent.name if r.kind.has_parent else None))
        kind_start = np.searchsorted(np.array([r.kind for r in ints], np.int64), np.arange(len(KINDS) + 1), side="left")
        return ints, floats, compiled, kind_start

    def overlap_pairs(self, listed: bool = True):
        """no_overlap pairs and their ``PairParam`` rows (``pair_tables.overlap_pairs``); none unless ``listed``
        (a scene whose pairs follow the rule)."""
        if not listed:
            return np.zeros((0, 2), np.int32), np.zeros((0, len(PairParam)), np.float32)
        return overlap_pairs(self.n_mov, self.n_all, self.fixed, self.solver_params, self.pinned, self.exempt,
                             self.pair_clearance)

    def object_rows(self, ints, adj, general=frozenset()):
        """Per movable object: its ObjectColumn row, its ObjectParam row, and the flat projection and pair lists
        the rows point into (``adj``: ``collision_geometry.pair_lists``, flat indices and each object's start)."""
        order = parents_first(self.movables)
        rank = [0] * self.n_mov
        for pos, k in enumerate(order):
            rank[k] = pos
        clutter_row = [-1] * self.n_mov
        proj = [[] for _ in range(self.n_mov)]
        penalised = [False] * self.n_mov
        for r in ints:
            kind = KINDS[r.kind]
            if kind.relation is ClutterOn:
                clutter_row[r.subject] = r.row
            if kind.role == KindRole.INTERVAL:
                proj[r.subject].append((priority_of(kind), r.row))
            elif kind.role == KindRole.PENALTY:
                penalised[r.subject] = True
        random_yaw = self.placer_params.random_yaw_init
        adj_flat, adj_starts = adj
        obj_i, obj_f, proj_flat = [], [], []
        for c, a in enumerate(self.movables):
            rot = a.rotate_around_solution
            base = rot.quaternion_xyzw() if rot is not None else (0.0, 0.0, 0.0, 1.0)
            yaw = yaw_mode(a, random_yaw)
            rnd = a.random_around_solution
            p0 = len(proj_flat)
            proj_flat += [rid for _, rid in sorted(proj[c])]
            flags = ObjectFlag(0)
            if any(0 <= ints[rid].parent < self.n_mov for rid in proj_flat[p0:]):
                flags |= ObjectFlag.MOVABLE_PARENT
            if penalised[c]:
                flags |= ObjectFlag.PENALISED
            if yaw != YawMode.FIXED or rnd is not None or tuple(base) != (0.0, 0.0, 0.0, 1.0):
                flags |= ObjectFlag.ROTATED
            if c in general:
                flags |= ObjectFlag.GENERAL_PAIRS
            if not flags & (ObjectFlag.MOVABLE_PARENT | ObjectFlag.ROTATED):
                flags |= ObjectFlag.STATIC_INTERVAL
            row = [0] * OI_COLS
            row[ObjectColumn.YAW] = int(yaw)
            row[ObjectColumn.SUPPORT] = _init_support(a, self.anchors[0], self.index)
            row[ObjectColumn.ORDER] = order[c]
            row[ObjectColumn.CLUTTER] = clutter_row[c]
            row[ObjectColumn.RANDOM] = int(rnd is not None)
            row[ObjectColumn.PROJ0], row[ObjectColumn.PROJ1] = p0, len(proj_flat)
            row[ObjectColumn.RANK] = rank[c]
            row[ObjectColumn.ADJ0], row[ObjectColumn.ADJ1] = int(adj_starts[c]), int(adj_starts[c + 1])
            row[ObjectColumn.FLAGS] = int(flags)
            obj_i.append(row)
            frow = [0.0] * len(ObjectParam)
            frow[ObjectParam.QX:ObjectParam.QW + 1] = base
            if rnd is not None:
                frow[ObjectParam.RANDOM_X_M:ObjectParam.RANDOM_Z_M + 1] = rnd.x_half_m, rnd.y_half_m, rnd.z_half_m
                frow[ObjectParam.RANDOM_ROLL:ObjectParam.RANDOM_YAW + 1] = (rnd.roll_half_rad, rnd.pitch_half_rad,
                                                                            rnd.yaw_half_rad)
            obj_f.append(frow)
        return obj_i, obj_f, proj_flat, adj_flat, rank

    @staticmethod
    def init_exact(ints, obj_i, rank) -> InitExact:
        """The initial sampler checks each object against everything placed before it, so a candidate whose
        every draw was penalty-free is already a solver fixed point, unless a later object moved an earlier one
        (FaceTo headings, a movable-parent repair) or a PENALTY relation refers to a later parent. Returns
        EVERY (every such candidate), UNLESS_REPAIRED (those in which no repair moved an object: a scene with
        movable parents, decided per candidate by the init kernel) or NONE."""
        n_mov = len(obj_i)
        later_parent = any(KINDS[r.kind].role == KindRole.PENALTY and 0 <= r.parent < n_mov
                           and rank[r.parent] > rank[r.subject] for r in ints)
        headings = any(KINDS[r.kind].role == KindRole.HEADING for r in ints)
        moves_parent = any(o[ObjectColumn.FLAGS] & ObjectFlag.MOVABLE_PARENT for o in obj_i)
        if headings or later_parent:
            return InitExact.NONE
        return InitExact.UNLESS_REPAIRED if moves_parent else InitExact.EVERY


def compile_placement_problem(assets, num_envs: int, placement_seed: int, placer_params,
                              device: str = "cpu") -> PlacementProblem:
    """Checks the scene (restrictions, collision modes, anchors) and compiles it.

    Raises ``PlacementConfigError`` (a ``ValueError``) naming the asset and relation for bad input (a MESH
    Background whose mesh cannot be extracted included), and in one line for a scene over a budget
    (``scene_budgets``: object count, footprint, memory), before anything that grows with it is built.
    """
    ensure_warp()
    assets = list(assets)
    check_object_budget(assets, placer_params)  # first: every later step grows with the object count
    bar = progress_bar(COMPILE_STAGES, "[placement] compile", "stage", leave=False)  # drawn past 2 s only
    try:
        return _compile(assets, num_envs, placement_seed, placer_params, device, bar)
    finally:
        close_bar(bar)


#: Stages of a compile counted by its progress bar (``_compile`` ticks once after each).
COMPILE_STAGES = 7


def _tick(bar, done: str) -> None:
    if bar is not None:
        advance_to(bar, bar.n + 1, done)


def _compile(assets, num_envs: int, placement_seed: int, placer_params, device: str, bar) -> PlacementProblem:
    check_placement_restrictions(assets, random_yaw_init=placer_params.random_yaw_init)
    _check_collision_modes(assets, placer_params)
    sc = _SceneCompiler(assets, num_envs, placement_seed, placer_params)
    check_footprint_budget(budget_movables(sc.movables), sc.fixed, placer_params)  # a pool counts k_max members
    _tick(bar, "scene checked")
    n_relations = sum(1 for a in sc.movables for rel in a.get_relations() if kind_of(rel) is not None)
    check_memory_budget(sc.n_mov, len(sc.fixed), n_relations, num_envs, placer_params, device,
                        listed_pairs=not keeps_pair_rule(sc))
    local_lo, local_hi, fixed_lo, fixed_hi = sc.geometry()
    n_fix = len(sc.fixed)
    check_scene_lengths(sc.movables, fixed_lo[:, :n_fix].reshape(-1, 3), fixed_hi[:, :n_fix].reshape(-1, 3))
    _tick(bar, "geometry")
    ints, floats, compiled, kind_start = sc.relation_rows()
    _tick(bar, "relations")
    rule = scene_pair_rule(sc)  # large box scenes: pairs derived from per-object rows, none listed
    pairs, pair_f = sc.overlap_pairs(listed=rule is None)  # (P, 2) int32 object indices, (P, 4) PairParam rows
    _tick(bar, "pairs")
    geo = compile_pair_geometry(sc, pairs, ints, local_lo, local_hi, device)
    pairs, pair_f, adj = box_pairs_first(pairs, pair_f, geo, sc.n_mov)
    _tick(bar, "pair geometry")
    general = general_objects(geo, pairs, ints)
    obj_i, obj_f, proj_flat, adj_flat, rank = sc.object_rows(ints, adj, general)
    _tick(bar, "objects")
    sp = placer_params.solver_params
    with torch_stream(device):  # CUDA: the table copies are ordered with torch's stream
        keep: list = []
        lo_t, hi_t, fixed_lo_t, fixed_hi_t = tensors = [torch.tensor(t, dtype=torch.float32, device=device)
                                                         for t in (local_lo, local_hi, fixed_lo, fixed_hi)]
        T = SceneTables()
        T.n_mov, T.n_all, T.n_pairs = sc.n_mov, sc.n_all, len(pairs if rule is None else rule)
        T.init_exact = int(sc.init_exact(ints, obj_i, rank))
        T.local_lo, T.local_hi, T.fixed_lo, T.fixed_hi = (wp.from_torch(t, dtype=wp.vec3) for t in tensors)
        keep += [T.local_lo, T.local_hi, T.fixed_lo, T.fixed_hi]
        T.room = wp.array(sc.room_table(local_lo, local_hi), dtype=RoomRow, device=device)
        keep.append(T.room)
        T.kind_start = device_array(kind_start, int, None, device, keep)
        T.obj_i = device_array(obj_i, vec12i, 12, device, keep)
        T.obj_f = device_array(obj_f, vec10f, 10, device, keep)
        T.rel_i = device_array(ints, vec6i, 6, device, keep)
        T.rel_f = device_array(floats, ParamRow, ROW_WIDTH, device, keep)
        T.proj = device_array(proj_flat, int, None, device, keep)
        T.adj = device_array(adj_flat, int, None, device, keep)
        T.n_box_pairs = int(np.count_nonzero(geo.modes[:, PairColumn.MODE] == 0)) if rule is None else len(rule)
        T.pair_i = device_array(pairs, wp.vec2i, 2, device, keep)
        T.pair_f = device_array(pair_f, wp.vec4, 4, device, keep)
        T.pair_m = device_array(geo.modes, wp.vec2i, 2, device, keep)
        T.fixed_pose = wp.array(geo.fixed_pose.astype(np.float32), dtype=wp.transform, device=device)
        mesh = geo.mesh if geo.mesh is not None else no_mesh_tables(device)
        T.mesh = wp.array([mesh.tables], dtype=MeshTables, device=device)
        T.n_support = geo.n_support
        keep += [T.fixed_pose, T.mesh, mesh]
        T.pair_w = float(sp.collision_strategy.slope)
        T.slack = VALIDATION_SLACK_M
        T.sweep = int(uses_sweep(sc.n_mov))
        pair_of = (box_pair_index(pairs, T.n_box_pairs, sc.n_mov, sc.n_all) if T.sweep and rule is None
                   else np.full((1, 1), -1, np.int32))
        T.pair_of = wp.array(pair_of, dtype=int, device=device)
        keep.append(T.pair_of)
        box_clearances = pair_f[:T.n_box_pairs, PairParam.CLEARANCE]
        T.sweep_pad = rule.max_clearance() if rule else float(box_clearances.max(initial=0.0))
        set_rule_tables(T, rule, sp.clearance_m, device, keep)
        T.static_iv = static_intervals(T, obj_i, num_envs, device)
        T.plain = int(plain_scene(T, obj_i))
        keep.append(T.static_iv)
        checkpoints = device_array(list(sp.get_checkpoints()), int, None, device, keep)
    any_clearance = (pair_f[:, PairParam.CLEARANCE] > 0).any() if rule is None else rule.max_clearance() > 0
    clearance = {"clearance"} if bool(any_clearance) else set()  # judged on pairs with a clearance
    present = frozenset({"no_overlap"} | clearance | {c.check for c in compiled if c.check})
    targets = _reachability_targets(assets, sc)
    pools = compile_pools(assets, [a.name for a in sc.movables], [a.name for a in sc.fixed], device)
    _tick(bar, "tables")
    problem = PlacementProblem(
        device=device, num_envs=num_envs, placement_seed=placement_seed,
        object_names=[a.name for a in sc.movables], fixed_names=[a.name for a in sc.fixed], relations=compiled,
        pairs=pairs if rule is None else rule, local_lo=lo_t, local_hi=hi_t, fixed_lo=fixed_lo_t, fixed_hi=fixed_hi_t,
        tables=T,
        checkpoints=checkpoints, checks_present=present, reachability_targets=targets,
        fixed_origins=torch.tensor([list(a.get_world_pose().position_xyz) for a in sc.fixed], dtype=torch.float32,
                                   device=device).reshape(len(sc.fixed), 3), pair_geometry=geo, pools=pools, _keep=keep)
    check_feasibility(problem, assets, placer_params)  # refuses what cannot fit, naming relations and metres
    return problem


def _reachability_targets(assets, sc: _SceneCompiler) -> tuple[str, ...]:
    """Names of the ``RequiresReachability`` objects (``ik_reachable`` reads their positions); each must be placed
    by relations or have a fixed pose, so that its position is known per candidate."""
    targets = []
    for a in assets:
        if not a.get_relations_of(RequiresReachability):
            continue
        if a.name not in sc.index:
            raise PlacementConfigError(f"asset '{a.name}', relation requires_reachability(): the object is neither placed "
                                       "by relations nor fixed by an initial_pose, so its position is unknown; add "
                                       "a relation (e.g. On(table)) or an initial_pose")
        targets.append(a.name)
    return tuple(targets)


def _relation_key(relation) -> tuple:
    """What the compile reads of one relation: its class, its parent's name and its parameters (what its ``repr``
    shows, without the quoting: Python's own repr of the plain values ``params()`` returns)."""
    parent = relation.parent
    return type(relation), None if parent is None else parent.name, repr(relation.params())


def placement_signature(assets, num_envs: int, placer_params, device: str) -> tuple:
    """A key that changes when anything the compile stage reads changes (cache key of ObjectPlacer)."""
    parts = []
    for a in assets:
        pose = a.initial_pose
        parts.append((a.name, id(a), pose, tuple(_relation_key(r) for r in a.get_relations()), a.collision_mode))
    sp = placer_params.solver_params
    return (tuple(parts), num_envs, device, placer_params.random_yaw_init, placer_params.on_relation_z_tolerance_m,
            sp.clearance_m, sp.collision_mode, sp.num_spheres, tuple((k, repr(v)) for k, v in sp.strategies.items()),
            repr(sp.collision_strategy), sp.get_checkpoints(), pool_signature(assets))

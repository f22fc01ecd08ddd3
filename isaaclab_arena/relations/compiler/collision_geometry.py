"""Compile step of the pair geometry: how each no_overlap pair is measured, and the MESH tables.

- BBOX pairs are axis-aligned boxes (mode 0, the fast path) unless one of the two objects turns about Z
  (random yaw, a RotateAroundSolution yaw, a yawed obstacle): then their boxes are tested rotated
  (``PairMode.OBB``, separating axes). An object with roll or pitch, with RandomAroundSolution, or with FaceTo
  (whose heading is set again after solving) keeps the axis-aligned box around it.
- A pair is MESH when either object's collision mode is MESH (``asset.collision_mode``, else
  ``RelationSolverParams.collision_mode``; an ObjectReference inherits its parent's) and at least one of them
  has a collision mesh that its box does not already describe (a cuboid's mesh is its box): the subject's
  spheres against the target's mesh, both ways when the other object
  has spheres too (movables, fixed ``Object`` obstacles; not a Background or a prim reference). An object
  without a mesh stands in with its box (``[NoCollision]`` once); when neither has one, the pair stays on
  boxes. A MESH Background is an obstacle from its mesh and must have one (``PlacementConfigError``); for an
  object On one of its prims (an ObjectReference) that prim is left out of the background's mesh (the
  support is exempt for its On children).
- MESH support terms: an On relation whose parent is a fixed MESH object with a mesh checks that the
  subject's footprint outline stands over that mesh (not over a sink cut-out); they are part of the
  ``on_relation`` check.

Meshes come through the geometry reader (``assets/geometry_reader.py``); nothing here reads USD. Geometry is
in each asset's root frame (an ObjectReference: its prim's frame), metres.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from isaaclab_arena.assets.collision_mode import CollisionMode
from isaaclab_arena.assets.geometry_reader import collision_mesh_of_spawn_cfg, prim_collision_mesh
from isaaclab_arena.relations.kinds import KIND_ID  # before the kernel tables, which the kinds import
from isaaclab_arena.relations.kernels.tables import PairColumn, PairMode, YawMode
from isaaclab_arena.relations.mesh import MeshGeometry, no_mesh, pack_mesh_tables
from isaaclab_arena.relations.mesh.logs import MESH_SDF, log_once
from isaaclab_arena.relations.compiler.object_yaw import yaw_mode
from isaaclab_arena.relations.compiler.placement_restrictions import PlacementConfigError
from isaaclab_arena.relations.relations import ClutterOn, FaceTo, On
from isaaclab_arena.utils.lazy_import import trimesh  # imported on first use (0.5 s with scipy and networkx)

#: Most footprint outline points per geometry (support terms), and how far (m) the outline they span may
#: fall inside the footprint's hull (collinear and nearly collinear hull vertices are dropped).
FOOT_POINTS = 64
FOOT_TOLERANCE_M = 5e-4
#: How far below the support's top the support terms probe (metres), at most a quarter of its height.
SUPPORT_PROBE_M = 0.005


def effective_mode(asset, default: CollisionMode) -> CollisionMode:
    """The asset's collision mode, else its reference parent's, else the solver-wide default."""
    mode = asset.collision_mode
    parent = getattr(asset, "parent_asset", None)
    if mode is None and parent is not None:
        mode = parent.collision_mode
    return mode or default


def _is_background(asset) -> bool:
    return type(asset).__name__ == "Background"


def _is_reference(asset) -> bool:
    return hasattr(asset, "parent_asset") and hasattr(asset, "relative_prim_path")


def _yaw_only(q, tol: float = 1e-9) -> bool:
    return abs(float(q[0])) <= tol and abs(float(q[1])) <= tol


def _quarter_turn(q, tol: float = 1e-6) -> bool:
    yaw = 2.0 * math.atan2(float(q[2]), float(q[3]))
    k = yaw / (0.5 * math.pi)
    return abs(k - round(k)) < tol


def mesh_of(asset, exclude_prims: tuple[str, ...] = ()):
    """``((vertices, faces), "")`` of an asset's collision mesh, or ``(None, reason)`` (duck typing: a prim
    reference, a spawner config, plain geometry)."""
    owner = f"asset '{asset.name}'"
    try:
        if _is_reference(asset):
            usd = getattr(asset.parent_asset, "usd_path", None)
            if not usd:
                return None, f"its parent '{asset.parent_asset.name}' is not a USD file"
            return prim_collision_mesh(usd, asset.relative_prim_path(), owner), ""
        cfg = getattr(asset, "spawn_cfg", None)
        if cfg is None:
            return None, "plain geometry without a spawner config"
        return collision_mesh_of_spawn_cfg(cfg, owner, tuple(exclude_prims)), ""
    except (ValueError, TypeError, KeyError, FileNotFoundError) as err:
        return None, str(err.args[0] if err.args else err)


def is_box(vertices) -> bool:
    """True when every vertex is a corner of the mesh's own bounds (a cuboid: its box is exact)."""
    v = np.asarray(vertices, np.float64)
    lo, hi = v.min(0), v.max(0)
    tol = 1e-7 * max(float(np.max(hi - lo)), 1e-9)
    return bool(np.all(np.minimum(np.abs(v - lo), np.abs(v - hi)) <= tol))


def footprint_outline(vertices: np.ndarray, max_points: int = FOOT_POINTS,
                      tolerance_m: float = FOOT_TOLERANCE_M) -> np.ndarray:
    """(K, 3) points of the outline of a mesh's lowest face: the convex hull, in XY, of the vertices within
    1 mm or 2 % of the height of its bottom, less the hull vertices whose removal moves the outline by under
    ``tolerance_m`` (a round foot keeps a couple of dozen), at most ``max_points``; root frame, metres."""
    v = np.asarray(vertices, np.float64)
    z0 = v[:, 2].min()
    tol = max(1e-3, 0.02 * float(v[:, 2].max() - z0))
    pts = v[v[:, 2] <= z0 + tol][:, :2]
    pts = np.unique(np.round(pts, 9), axis=0)
    if len(pts) >= 3:
        pts = _simplified(pts[_hull_2d(pts)], tolerance_m)
    if len(pts) > max_points:
        pts = pts[np.linspace(0, len(pts), max_points, endpoint=False).astype(int)]
    return np.c_[pts, np.full(len(pts), z0)]


def _simplified(ring: np.ndarray, tolerance_m: float) -> np.ndarray:
    """A convex ring without the vertices that lie within ``tolerance_m`` of the chord of their neighbours (the
    least significant first), keeping at least a triangle."""
    ring = list(map(tuple, ring))
    while len(ring) > 3:
        best, k_best = np.inf, -1
        for k in range(len(ring)):
            a, p, b = np.asarray(ring[k - 1]), np.asarray(ring[k]), np.asarray(ring[(k + 1) % len(ring)])
            ab = b - a
            h = abs(ab[0] * (p - a)[1] - ab[1] * (p - a)[0]) / max(float(np.linalg.norm(ab)), 1e-12)
            if h < best:
                best, k_best = h, k
        if best > tolerance_m:
            break
        ring.pop(k_best)
    return np.asarray(ring)


def _hull_2d(p: np.ndarray) -> list[int]:
    """Indices of the 2D convex hull of p (monotone chain), counter-clockwise."""
    order = np.lexsort((p[:, 1], p[:, 0]))

    def cross(o, a, b):
        return (p[a, 0] - p[o, 0]) * (p[b, 1] - p[o, 1]) - (p[a, 1] - p[o, 1]) * (p[b, 0] - p[o, 0])

    lower, upper = [], []
    for i in order:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], i) <= 0:
            lower.pop()
        lower.append(i)
    for i in order[::-1]:
        while len(upper) >= 2 and cross(upper[-2], upper[-1], i) <= 0:
            upper.pop()
        upper.append(i)
    return lower[:-1] + upper[:-1]


def _box_mesh(lo, hi) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    box = trimesh.creation.box(extents=hi - lo, transform=trimesh.transformations.translation_matrix(0.5 * (lo + hi)))
    return np.asarray(box.vertices), np.asarray(box.faces)


@dataclass
class PairGeometry:
    """What the compile stage adds to the tables: per pair (mode, MESH target row), the fixed objects' poses,
    the MESH tables (None when no pair or support term uses them) and the support terms. Per-pair values are
    numpy arrays (a scene of 1,000 objects has about 500,000 pairs)."""

    modes: np.ndarray  # (P, 2) int32 ``PairModes`` rows: PairMode bits (0: axis-aligned boxes), MESH target row
    fixed_pose: np.ndarray  # (n_fixed, 7) position, xyzw
    pair_objects: np.ndarray | None = None  # (P, 2) int32 (i, j) of each pair, compiled order
    mesh: object | None = None  # MeshTablesHandle
    n_support: int = 0
    mesh_pairs: list[int] = field(default_factory=list)
    obb_pairs: list[int] = field(default_factory=list)
    support_relations: list[int] = field(default_factory=list)  # relation rows with a support term
    outlines: dict = field(default_factory=dict)  # object name -> (vertices, faces) of its mesh (pictures)
    rows: list = field(default_factory=list)  # MeshGeometry per geometry row (covers, targets, outlines)
    geom: np.ndarray | None = None  # (E, n_all) geometry row of each object per env, -1 none
    names: list = field(default_factory=list)  # object names, in object order

    def mode(self, k: int) -> int:
        """PairMode bits of pair k (compiled order); 0: axis-aligned boxes."""
        return int(self.modes[k, PairColumn.MODE])

    def sphere_side(self, k: int) -> str:
        """Which object of MESH pair k (compiled order) gives the spheres: 'i' or 'j'."""
        return "i" if self.mode(k) & int(PairMode.MESH_IJ) else "j"

    def report_unreliable(self) -> int:
        """Logs ``[MeshSDF]`` once when the solver kernels met unreliable signed-distance queries (no closest
        point, a non-finite distance) since the last call, and resets the count; returns it. Reads a device
        counter: one host read (a synchronisation on CUDA)."""
        if self.mesh is None:
            return 0
        bad = self.mesh.tables.bad
        count = int(bad.numpy()[0])
        if count:
            log_once(MESH_SDF, "solver:" + ",".join(self.names), f"{count} signed-distance queries of the solver "
                     f"were unreliable (no closest point or a non-finite distance) in a scene with MESH pairs "
                     f"of {sorted({self.names[k] for p in self.mesh_pairs for k in self.pair_objects[p].tolist()})}")
            bad.zero_()
        return count


class _Builder:
    """Geometry rows of the MESH tables: one per distinct (source asset, left-out prims) or box proxy. Rows
    are requested first (what each needs: spheres, footprint outline) and built once by :meth:`pack`."""

    def __init__(self, solver_params):
        self.num_spheres = int(solver_params.num_spheres)
        self.requests: dict = {}  # key -> [row, name, vertices, faces, subject, foot, allow_open]
        self.meshes: dict = {}

    def mesh(self, asset, exclude=()):
        key = (id(asset), tuple(exclude))
        if key not in self.meshes:
            self.meshes[key] = mesh_of(asset, exclude)
        return self.meshes[key]

    def row(self, key, name, v, f, subject: bool, foot: bool, allow_open: bool) -> int:
        req = self.requests.get(key)
        if req is None:
            req = self.requests[key] = [len(self.requests), name, v, f, False, False, allow_open]
        req[4] |= subject
        req[5] |= foot
        return req[0]

    def build(self) -> list[MeshGeometry]:
        """The geometry rows, in row order: target mesh, sphere cover where asked, footprint outline where asked,
        and an anchor (a vertex: a point of the surface) each."""
        rows = []
        for _, name, v, f, subject, foot, allow_open in sorted(self.requests.values(), key=lambda r: r[0]):
            geo = MeshGeometry.build(name, v, f, self.num_spheres, 0, allow_open, as_subject=subject)
            geo.foot = footprint_outline(v) if foot else None
            geo.anchor = np.asarray(v, np.float64)[0]
            rows.append(geo)
        return rows


def _sources(asset, num_envs: int, seed: int) -> list:
    """The asset standing in each env (a RigidObjectSet's member of that env)."""
    per_env = getattr(asset, "member_indices_per_env", None)
    if per_env is not None:
        return [asset.objects[i] for i in per_env(num_envs, seed)]
    return [asset] * num_envs


def _supports_of(asset) -> list:
    return [r.parent for r in asset.get_relations() if isinstance(r, (On, ClutterOn))]


def compile_pair_geometry(sc, pairs: np.ndarray, ints, local_lo, local_hi, device: str) -> PairGeometry:
    """Pair modes, fixed poses, MESH tables and support terms of the scene compiled by ``sc``
    (``compile_problem._SceneCompiler``); ``pairs``: (P, 2) int32 object indices (``pair_tables.overlap_pairs``);
    ``ints`` are the relation rows (``RelationRow``). Python work per pair only for the pairs that involve a MESH
    object; the OBB pairs are found with array operations."""
    objects, n_mov, E = sc.objects, sc.n_mov, sc.num_envs
    default = sc.solver_params.collision_mode
    fixed_pose = np.array([list(a.get_world_pose().position_xyz) + list(a.get_world_pose().rotation_xyzw)
                           for a in sc.fixed] or [[0.0] * 6 + [1.0]], np.float64)
    modes_of = [effective_mode(a, default) for a in objects]
    rotation = [rotation_kind(sc, k) for k in range(len(objects))]
    modes = np.zeros((len(pairs), len(PairColumn)), np.int32)
    modes[:, PairColumn.TARGET] = -1
    out = PairGeometry(modes=modes, fixed_pose=fixed_pose)
    b = _Builder(sc.solver_params)
    geom = -np.ones((E, max(len(objects), 1)), np.int32)
    is_real: dict[int, bool] = {}

    def real(k) -> bool:
        """Whether object k has a collision mesh its box does not already describe exactly (every env)."""
        if k not in is_real:
            meshes = [b.mesh(src)[0] for src in dict.fromkeys(_sources(objects[k], E, sc.placement_seed))]
            is_real[k] = all(m is not None for m in meshes) and not all(is_box(m[0]) for m in meshes)
        return is_real[k]

    def assign(k, subject: bool, foot: bool = False) -> None:
        a = objects[k]
        for e, src in enumerate(_sources(a, E, sc.placement_seed)):
            m, reason = b.mesh(src)
            allow_open = bool(getattr(src, "allow_open_mesh", False))
            if m is None:
                no_mesh(src.name, reason)
                lo, hi = local_lo[e, k], local_hi[e, k]
                key = ("box", tuple(lo), tuple(hi))
                v, f = _box_mesh(lo, hi)
            else:
                key, (v, f) = (id(src), ()), m
                out.outlines.setdefault(a.name, m)
            geom[e, k] = b.row(key, src.name, v, f, subject, foot, allow_open)

    has_spheres = [k < n_mov or not (_is_background(a) or _is_reference(a)) for k, a in enumerate(objects)]
    mesh_object = np.array([m == CollisionMode.MESH for m in modes_of] or [False], bool)
    pi, pj = pairs[:, 0], pairs[:, 1]
    mesh_pairs = []
    is_mesh = np.zeros(len(pairs), bool)
    for p in np.flatnonzero(mesh_object[pi] | mesh_object[pj]).tolist():  # in pair order: the rows' order
        i, j = int(pi[p]), int(pj[p])
        if not (real(i) or real(j)):
            for k in (i, j):  # the pair stays on boxes: say so for an object that has no mesh at all
                for src in dict.fromkeys(_sources(objects[k], E, sc.placement_seed)):
                    if b.mesh(src)[0] is None:
                        no_mesh(src.name, b.mesh(src)[1])
            continue
        is_mesh[p] = True
        for k in (i, j):
            assign(k, has_spheres[k])
        target = -1
        if _is_background(objects[j]):
            prims = tuple(sorted({s.relative_prim_path() for s in _supports_of(objects[i])
                                  if _is_reference(s) and s.parent_asset is objects[j]}))
            if prims:
                m, reason = b.mesh(objects[j], prims)
                if m is None:
                    raise PlacementConfigError(f"asset '{objects[j].name}': its collision mesh without "
                                               f"{list(prims)} cannot be extracted: {reason}")
                target = b.row((id(objects[j]), prims), objects[j].name, m[0], m[1], False, False,
                               bool(getattr(objects[j], "allow_open_mesh", False)))
        mesh_pairs.append((p, i, j, target))
    # boxes of which one turns about Z and neither tilts are tested turned (separating axes)
    kind = np.array([{"upright": 0, "yawed": 1, "tilted": 2}[r] for r in rotation] or [0], np.int8)
    ki, kj = kind[pi], kind[pj]
    obb = ~is_mesh & (ki != 2) & (kj != 2) & ((ki == 1) | (kj == 1))
    modes[obb, PairColumn.MODE] = int(PairMode.OBB)
    out.obb_pairs = np.flatnonzero(obb).tolist()
    # supports: On a fixed MESH object that has a mesh, the subject upright
    sup_rows, sup_f = [], []
    on_id = KIND_ID[On]
    for r, row in enumerate(ints):
        c, pk = row.subject, row.parent
        if row.kind != on_id or pk < n_mov or modes_of[pk] != CollisionMode.MESH or rotation[c] == "tilted":
            continue
        if not real(pk):
            continue
        assign(c, False, foot=True)
        assign(pk, False)
        height = float(np.min(local_hi[:, pk, 2] - local_lo[:, pk, 2]))
        probe = min(SUPPORT_PROBE_M, 0.25 * height)
        sup_rows.append((c, pk, r, 0))
        sup_f.append((probe, 0.5 * probe))
        out.support_relations.append(r)
    for k, a in enumerate(objects):
        if _is_background(a) and modes_of[k] == CollisionMode.MESH and b.mesh(a)[0] is None:
            raise PlacementConfigError(f"asset '{a.name}': a Background with collision_mode='mesh' is an obstacle "
                                       f"from its collision mesh, which cannot be extracted: {b.mesh(a)[1]}")
    if b.requests:
        rows = b.build()
        bulge = [g.bulge() for g in rows]
        for p, i, j, target in mesh_pairs:
            # one object's spheres against the other's mesh: the cover that bulges less past its own mesh (a
            # Background or prim reference is never the sphere side), and the other object's anchor point
            # against the sphere side's mesh (one object wholly inside the other) unless that is a background
            i_side = not has_spheres[j] or bulge[geom[0, i]] <= bulge[geom[0, j]]
            mode = int(PairMode.MESH_IJ if i_side else PairMode.MESH_JI)
            other = j if i_side else i
            if not (_is_background(objects[other]) or _is_reference(objects[other])):
                mode |= int(PairMode.INSIDE)
            modes[p] = (mode, target)
            out.mesh_pairs.append(p)
        out.mesh = pack_mesh_tables(rows, geom, device, sup_rows, sup_f)
        out.n_support = len(sup_rows)
        out.rows, out.geom = rows, geom
    out.names = [a.name for a in objects]
    out.pair_objects = pairs
    return out


def rotation_kind(sc, k: int) -> str:
    """'upright' (no turn, or quarter turns of a fixed object), 'yawed' (turns about Z only), or 'tilted'
    (roll/pitch, or RandomAroundSolution: the solver's grown axis-aligned bounds)."""
    a = sc.objects[k]
    if k >= sc.n_mov:
        q = a.get_world_pose().rotation_xyzw
        if not _yaw_only(q):
            return "tilted"
        return "upright" if _quarter_turn(q) else "yawed"
    if a.random_around_solution is not None or a.get_relations_of(FaceTo):
        # RandomAroundSolution: the solver's grown bounds; FaceTo: its heading is set again after solving, so the
        # box around every heading near it leaves room for that (a turned box let neighbours come closer and
        # the final turn then broke their clearance: dense_tabletop 0.9995 -> 0.9985 valid)
        return "tilted"
    rot = a.rotate_around_solution
    if rot is not None and not _yaw_only(rot.quaternion_xyzw()):
        return "tilted"
    turns = (yaw_mode(a, sc.placer_params.random_yaw_init) == YawMode.RANDOM
             or (rot is not None and not _quarter_turn(rot.quaternion_xyzw())))
    return "yawed" if turns else "upright"


def box_pairs_first(pairs: np.ndarray, pair_f: np.ndarray, geo: PairGeometry, n_mov: int):
    """Pairs reordered so that the axis-aligned ones come first (the kernels' fast loop; stable, so a scene of
    boxes keeps its order), with ``geo``'s pair lists renumbered, and each movable object's pair list.
    ``pairs``: (P, 2) int32; ``pair_f``: (P, 4) ``PairParam`` rows (numpy). Returns the reordered pairs and rows
    and :func:`pair_lists`."""
    turned = geo.modes[:, PairColumn.MODE] != 0
    if turned.any():
        order = np.argsort(turned, kind="stable")
        new = np.empty_like(order)
        new[order] = np.arange(len(order))
        geo.modes = geo.modes[order]
        geo.mesh_pairs = sorted(new[geo.mesh_pairs].tolist()) if geo.mesh_pairs else []
        geo.obb_pairs = sorted(new[geo.obb_pairs].tolist()) if geo.obb_pairs else []
        pairs, pair_f = pairs[order], pair_f[order]
        geo.pair_objects = pairs
    return pairs, pair_f, pair_lists(pairs, n_mov)


def general_objects(geo: PairGeometry, pairs: np.ndarray, ints) -> set[int]:
    """Objects in an OBB / MESH pair or the subject of a MESH support term (``ObjectFlag.GENERAL_PAIRS``);
    ``ints``: the relation rows."""
    turned = pairs[geo.modes[:, PairColumn.MODE] != 0]
    return set(np.unique(turned).tolist()) | {ints[r].subject for r in geo.support_relations}


def pair_lists(pairs: np.ndarray, n_mov: int) -> tuple[np.ndarray, np.ndarray]:
    """Each movable object's pair indices in increasing order (the kernels' ``adj``), one list after the other:
    ``(flat, starts)``, object c's list being ``flat[starts[c]:starts[c + 1]]`` ((2P,) int32 at most and
    (n_mov + 1,) int64)."""
    ij = np.asarray(pairs, np.int32).reshape(-1, 2)
    k = np.arange(len(ij), dtype=np.int32)
    movable_j = ij[:, 1] < n_mov
    owner = np.concatenate([ij[:, 0], ij[movable_j, 1]])
    index = np.concatenate([k, k[movable_j]])
    order = np.lexsort((index, owner))
    counts = np.bincount(owner, minlength=n_mov)[:n_mov]
    starts = np.zeros(n_mov + 1, np.int64)
    np.cumsum(counts, out=starts[1:])
    return index[order], starts

"""The compiled scene as a small warp struct of packed tables, and the per-candidate working state.

Object indices: movable (placed) objects are ``0 .. n_mov-1``, fixed objects (anchors and passive
obstacles) follow at ``n_mov .. n_all-1``. Per-env tables are indexed by env id first. Relations live in
one table sorted by kind id (``kinds.KINDS``), so each kind is a contiguous row range (``kind_start``): a
kernel evaluates every relation of a kind for a candidate in one loop. Lengths are metres, angles
radians, frames env-local world.

Columns of the packed integer tables are named by ``RelationColumn`` / ``ObjectColumn`` (device constants
``RI_*`` / ``OI_*``); a relation's float row is named by its kind module (``kinds/*.py``: ``ParamColumns``).
The struct is kept small on purpose: warp passes structs to functions by value, so a struct of a few packed
arrays costs little where a function is not inlined.
"""

from __future__ import annotations

from enum import IntEnum, IntFlag
from typing import NamedTuple

import numpy as np

import warp as wp

from isaaclab_arena.relations.kernels.rows import ROW_WIDTH, ParamRow, RoomRow
from isaaclab_arena.relations.mesh.sdf import MeshTables


class RelationColumn(IntEnum):
    """Columns of ``rel_i`` (one row per compiled relation)."""

    KIND = 0  # kind id (index into kinds.KINDS)
    SUBJECT = 1  # movable object index
    PARENT = 2  # object index of the parent, -1 for none
    AXIS = 3  # axis column of the kind's packing
    FLAG = 4  # flag column of the kind's packing
    ROW = 5  # index of the relation in PlacementProblem.relations (columns of the per-relation outputs)


class ObjectColumn(IntEnum):
    """Columns of ``obj_i`` (one row per movable object)."""

    YAW = 0  # YawMode
    SUPPORT = 1  # object whose bounds seed the initial sample
    ORDER = 2  # row k holds the k-th object in parents-first order
    CLUTTER = 3  # relation row of the object's ClutterOn, -1 none
    RANDOM = 4  # 1 when RandomAroundSolution applies
    PROJ0 = 5  # projection entries [proj0, proj1) in ``proj``
    PROJ1 = 6
    RANK = 7  # position of the object in the parents-first order
    ADJ0 = 8  # no_overlap pairs of the object [adj0, adj1) in ``adj``
    ADJ1 = 9
    FLAGS = 10  # ObjectFlag bits


class YawMode(IntEnum):
    FIXED = 0  # the base rotation (RotateAroundSolution or identity)
    RANDOM = 1  # a uniform yaw in [-pi, pi) about world Z composed with the base rotation
    FACE_TO = 2  # heading from a FaceTo relation


class ObjectFlag(IntFlag):
    MOVABLE_PARENT = 1  # a projected relation of the object refers to a movable parent
    PENALISED = 2  # the object is the subject of a PENALTY relation
    ROTATED = 4  # base rotation, yaw draws or RandomAroundSolution: bounds need rotating
    GENERAL_PAIRS = 8  # an OBB / MESH pair or a MESH support term (the initial draw scores them too)
    STATIC_INTERVAL = 16  # unrotated, every projected relation's parent fixed or none: its interval is a table's


class InitExact(IntEnum):
    """``SceneTables.init_exact``: which penalty-free initial candidates skip the optimisation loop
    (``compile_problem.init_exact``, ``solve_init``)."""

    NONE = 0  # none: FaceTo headings, or a PENALTY relation to a parent placed later
    EVERY = 1  # every one: the initial draws checked each object against everything placed before it
    UNLESS_REPAIRED = 2  # those in which no movable-parent repair moved a placed object (decided per candidate)


class Redraw(IntEnum):
    """``projection.project``'s ``redraw``: what happens before the clamp into the object's interval."""

    NONE = 0  # clamp only
    IN_INTERVAL = 1  # draw anew in the interval computed now
    IN_RECORDED_INTERVAL = 2  # draw anew in the interval the object's last projection recorded


class ObjectParam(IntEnum):
    """Columns of ``obj_f``: base rotation xyzw, RandomAroundSolution half ranges (m, then rad)."""

    QX = 0
    QY = 1
    QZ = 2
    QW = 3
    RANDOM_X_M = 4
    RANDOM_Y_M = 5
    RANDOM_Z_M = 6
    RANDOM_ROLL = 7
    RANDOM_PITCH = 8
    RANDOM_YAW = 9


RI_KIND = wp.constant(int(RelationColumn.KIND))
RI_CHILD = wp.constant(int(RelationColumn.SUBJECT))
RI_PARENT = wp.constant(int(RelationColumn.PARENT))
RI_AXIS = wp.constant(int(RelationColumn.AXIS))
RI_FLAG = wp.constant(int(RelationColumn.FLAG))
RI_ROW = wp.constant(int(RelationColumn.ROW))
RI_COLS = len(RelationColumn)
RF_COLS = ROW_WIDTH

OI_YAW = wp.constant(int(ObjectColumn.YAW))
OI_SUPPORT = wp.constant(int(ObjectColumn.SUPPORT))
OI_ORDER = wp.constant(int(ObjectColumn.ORDER))
OI_CLUTTER = wp.constant(int(ObjectColumn.CLUTTER))
OI_RANDOM = wp.constant(int(ObjectColumn.RANDOM))
OI_PROJ0 = wp.constant(int(ObjectColumn.PROJ0))
OI_PROJ1 = wp.constant(int(ObjectColumn.PROJ1))
OI_RANK = wp.constant(int(ObjectColumn.RANK))
OI_ADJ0 = wp.constant(int(ObjectColumn.ADJ0))
OI_ADJ1 = wp.constant(int(ObjectColumn.ADJ1))
OI_FLAGS = wp.constant(int(ObjectColumn.FLAGS))
OI_COLS = 12
OF_COLS = len(ObjectParam)
OF_QX = wp.constant(int(ObjectParam.QX))  # the base rotation is OF_QX .. OF_QX + 3 (x, y, z, w)
OF_RANDOM_POS = wp.constant(int(ObjectParam.RANDOM_X_M))
OF_RANDOM_ROT = wp.constant(int(ObjectParam.RANDOM_ROLL))

YAW_RANDOM = wp.constant(int(YawMode.RANDOM))
YAW_FACE_TO = wp.constant(int(YawMode.FACE_TO))
FLAG_MOVABLE_PARENT = wp.constant(int(ObjectFlag.MOVABLE_PARENT))
FLAG_PENALISED = wp.constant(int(ObjectFlag.PENALISED))
FLAG_ROTATED = wp.constant(int(ObjectFlag.ROTATED))
FLAG_GENERAL_PAIRS = wp.constant(int(ObjectFlag.GENERAL_PAIRS))
FLAG_STATIC_INTERVAL = wp.constant(int(ObjectFlag.STATIC_INTERVAL))
INIT_EXACT_NONE = wp.constant(int(InitExact.NONE))
INIT_EXACT_EVERY = wp.constant(int(InitExact.EVERY))
REDRAW_NONE = wp.constant(int(Redraw.NONE))
REDRAW_IN_INTERVAL = wp.constant(int(Redraw.IN_INTERVAL))
REDRAW_IN_RECORDED_INTERVAL = wp.constant(int(Redraw.IN_RECORDED_INTERVAL))


class PairParam(IntEnum):
    """Columns of ``pair_f``: the pair's clearance (m), then whether a push may move the pair apart along x, y, z."""

    CLEARANCE = 0
    PUSH_X = 1
    PUSH_Y = 2
    PUSH_Z = 3


PF_CLEARANCE = wp.constant(int(PairParam.CLEARANCE))
PF_AXES = wp.constant(int(PairParam.PUSH_X))


class PairColumn(IntEnum):
    """Columns of ``pair_m`` (one row per no_overlap pair; the pair's objects are in ``pair_i``)."""

    MODE = 0  # PairMode bits; 0: axis-aligned boxes (the fast path: pairs [0, n_box_pairs))
    TARGET = 1  # MESH: geometry row of j's mesh for this pair (a background less i's support prims), -1: j's own


class PairMode(IntFlag):
    """How a pair's penetration is measured (``pair_m[k][MODE]``); 0 is the axis-aligned boxes."""

    OBB = 1  # boxes rotated about Z (separating-axis test); an object's roll/pitch keeps the AABB
    MESH_IJ = 2  # i's spheres against j's mesh
    MESH_JI = 4  # j's spheres against i's mesh
    INSIDE = 8  # MESH: the other object's anchor point against the sphere side's mesh (one wholly inside the other)


class RuleColumn(IntEnum):
    """Columns of ``rule_i`` (one row per object) in a scene whose pairs follow the rule (``pair_rule``): its
    no_overlap pairs are derived from these rows (``kernels/pair_rule.py``), not listed."""

    COLLIDER = 0  # a fixed object's rank among the fixed colliders (-1: not one); 0 for a placed object
    PINNED = 1  # bits 0-2: axes x, y, z along which the object is pinned (a fixed object: all)
    EX0 = 2  # partners j > i of placed object i that are no pair (exempt) [ex0, ex1) in ``rule_ex``, increasing
    EX1 = 3
    CL0 = 4  # partners j > i with a clearance of their own [cl0, cl1) in ``rule_clj`` / ``rule_clv``
    CL1 = 5


RU_COLLIDER = wp.constant(int(RuleColumn.COLLIDER))
RU_PINNED = wp.constant(int(RuleColumn.PINNED))
RU_EX0 = wp.constant(int(RuleColumn.EX0))
RU_EX1 = wp.constant(int(RuleColumn.EX1))
RU_CL0 = wp.constant(int(RuleColumn.CL0))
RU_CL1 = wp.constant(int(RuleColumn.CL1))
PI_MODE = wp.constant(int(PairColumn.MODE))
PI_TARGET = wp.constant(int(PairColumn.TARGET))
PM_OBB = wp.constant(int(PairMode.OBB))
PM_MESH_IJ = wp.constant(int(PairMode.MESH_IJ))
PM_MESH_JI = wp.constant(int(PairMode.MESH_JI))
PM_INSIDE = wp.constant(int(PairMode.INSIDE))


# -- host-side rows: what the compile stage builds, one named tuple per table row (field order = column order) --
class RelationRow(NamedTuple):
    """One row of ``rel_i`` (``RelationColumn``)."""

    kind: int
    subject: int
    parent: int
    axis: int
    flag: int
    row: int


class PairParams(NamedTuple):
    """One row of ``pair_f`` (``PairParam``): clearance (m), then may-push x, y, z (1.0 / 0.0)."""

    clearance: float
    push_x: float
    push_y: float
    push_z: float


class PairModes(NamedTuple):
    """One row of ``pair_m`` (``PairColumn``): ``PairMode`` bits, MESH target geometry row (-1: j's own)."""

    mode: int
    target: int


def _check_row_order(row: type, columns: type) -> None:
    names = [f.upper() for f in row._fields]
    if names != [c.name for c in sorted(columns, key=int)]:
        raise AssertionError(f"{row.__name__} fields {row._fields} do not follow {columns.__name__}")


for _row, _columns in ((RelationRow, RelationColumn), (PairParams, PairParam), (PairModes, PairColumn)):
    _check_row_order(_row, _columns)

vec6i = wp.types.vector(length=RI_COLS, dtype=wp.int32)
if len(RuleColumn) != RI_COLS:  # rule_i rows are vec6i too
    raise AssertionError(f"RuleColumn has {len(RuleColumn)} columns, vec6i {RI_COLS}")
vec12i = wp.types.vector(length=OI_COLS, dtype=wp.int32)
vec10f = wp.types.vector(length=OF_COLS, dtype=wp.float32)


@wp.struct
class SceneTables:
    n_mov: int
    n_all: int
    n_pairs: int
    n_box_pairs: int  # pairs [0, n_box_pairs) are axis-aligned boxes, the rest OBB / MESH (``pair_m``)
    init_exact: int  # InitExact: which penalty-free initial candidates need no solver iteration
    kind_start: wp.array(dtype=int)  # len(KINDS) + 1 row offsets into rel_i / rel_f
    local_lo: wp.array2d(dtype=wp.vec3)  # (E, n_all) local bounds per env
    local_hi: wp.array2d(dtype=wp.vec3)
    fixed_lo: wp.array2d(dtype=wp.vec3)  # (E, n_fixed) world AABB of fixed objects
    fixed_hi: wp.array2d(dtype=wp.vec3)
    room: wp.array2d(dtype=RoomRow)  # (E, n_mov) room each object's NextTo chain needs (chain_room.py)
    obj_i: wp.array(dtype=vec12i)  # ObjectColumn
    obj_f: wp.array(dtype=vec10f)  # ObjectParam
    rel_i: wp.array(dtype=vec6i)  # RelationColumn
    rel_f: wp.array(dtype=ParamRow)  # the kind's ParamColumns, WEIGHT last
    proj: wp.array(dtype=int)  # INTERVAL rows per object, by projection priority
    adj: wp.array(dtype=int)  # pair indices per object
    pair_i: wp.array(dtype=wp.vec2i)  # (P,) object indices (i movable)
    pair_f: wp.array(dtype=wp.vec4)  # (P,) PF_CLEARANCE, then may-push x, y, z
    pair_m: wp.array(dtype=wp.vec2i)  # (P,) PairColumn: mode, MESH target row
    fixed_pose: wp.array(dtype=wp.transform)  # (n_fixed,) env-local pose of each fixed object (OBB, MESH)
    n_support: int  # MESH support terms (On footprints over a support's mesh), rows of mesh[0].sup_i
    mesh: wp.array(dtype=MeshTables)  # (1,) MESH geometry (sphere covers, target meshes); placeholder in BBOX
    pair_w: float  # NoCollisionLossStrategy slope
    slack: float  # metres a check tolerates beyond its limit (float32 rounding room)
    sweep: int  # 1: box pairs of two placed objects are visited by sort and sweep along X (broad_phase.py)
    pair_of: wp.array2d(dtype=int)  # (n_mov, n_all) box pair index of (i, j), -1 none; (1, 1) unless sweep
    sweep_pad: float  # the largest clearance of a box pair (m): the sweep's reach beyond a box
    static_iv: wp.array3d(dtype=wp.vec3)  # (E, n_mov, 4) objects flagged STATIC_INTERVAL: their projection interval
    #   (lo, hi) with at_ratio 0, then 1 (``kernels/static_intervals.py``); (1, 1, 4) when no object is flagged
    plain: int  # 1: a plain scene (``plain_scene``): its fresh solves run the plain init and finalize kernels
    pair_rule: int  # 1: the pairs follow the rule (``kernels/pair_rule.py``): adj, pair_i, pair_f, pair_m and
    #   pair_of are one-row placeholders; the pairs come from rule_i and the lists below (memory linear in n)
    rule_i: wp.array(dtype=vec6i)  # (n_all,) RuleColumn
    rule_row: wp.array(dtype=int)  # (n_mov + 1,) number of placed object i's first pair
    rule_ex: wp.array(dtype=int)  # exempt partners, per object increasing
    rule_clj: wp.array(dtype=int)  # partners with a clearance of their own, per object increasing
    rule_clv: wp.array(dtype=float)  # their clearance (m)
    clearance: float  # every other pair's clearance (m)


@wp.struct
class CandidateState:
    """Per-candidate working arrays, (B, n_mov)."""

    x: wp.array2d(dtype=wp.vec3)
    rot: wp.array2d(dtype=wp.quat)
    olo: wp.array2d(dtype=wp.vec3)
    ohi: wp.array2d(dtype=wp.vec3)
    m: wp.array2d(dtype=wp.vec3)
    v: wp.array2d(dtype=wp.vec3)
    g: wp.array2d(dtype=wp.vec3)
    ilo: wp.array2d(dtype=wp.vec3)  # interval the last projection used per axis (solver only)
    ihi: wp.array2d(dtype=wp.vec3)
    order: wp.array2d(dtype=int)  # broad phase (T.sweep): placed objects sorted by low X; (1, 1) otherwise
    key: wp.array2d(dtype=float)  # their low X (m)


@wp.struct
class SolveOutputs:
    """What the solve and check kernels write, per candidate b (R compiled relations, K check slots)."""

    rel_excess: wp.array2d(dtype=float)  # (B, R) metres beyond what the relation's check accepts
    rel_cause: wp.array2d(dtype=int)  # (B, R) cause code, 0 none
    checks: wp.array2d(dtype=wp.bool)  # (B, K) verdict per built-in check slot
    fail_bits: wp.array(dtype=int)  # (B,) bit s set: built-in check slot s failed
    ov_pair: wp.array(dtype=int)  # (B,) most-penetrating no_overlap pair
    ov_depth: wp.array(dtype=float)  # (B,) its depth, metres
    cl_pair: wp.array(dtype=int)  # (B,) pair of two movable objects most inside their clearance
    cl_depth: wp.array(dtype=float)  # (B,) how far inside it, metres
    loss: wp.array(dtype=float)  # (B,)
    iters: wp.array(dtype=int)  # (B,) solver iterations (negative between launches: see solve_init)
    pending: wp.array(dtype=int)  # (1,) candidates the optimisation loop must run on
    history: wp.array3d(dtype=wp.vec3)  # (B, S, n_mov) positions every 10 iterations (save_position_history)


@wp.func
def obj_bounds(T: SceneTables, S: CandidateState, b: int, e: int, k: int):
    """World AABB of object k in candidate b (env e)."""
    if k < T.n_mov:
        p = S.x[b, k]
        return p + S.olo[b, k], p + S.ohi[b, k]
    return T.fixed_lo[e, k - T.n_mov], T.fixed_hi[e, k - T.n_mov]


def solve_outputs(device: str, **fields) -> SolveOutputs:
    """A ``SolveOutputs`` over the given warp arrays; fields not given get 1-element placeholders (a
    kernel that does not write them, e.g. the check kernel's solver-only fields)."""
    unknown = set(fields) - set(_PLACEHOLDERS)
    if unknown:
        raise TypeError(f"solve_outputs: unknown fields {sorted(unknown)}")
    spare = _placeholders.get(device)
    if spare is None:  # shared, written at most by kernels whose caller never reads them
        spare = _placeholders[device] = {name: wp.zeros(shape, dtype=dtype, device=device)
                                         for name, (shape, dtype) in _PLACEHOLDERS.items()}
    o = SolveOutputs()
    for name in _PLACEHOLDERS:
        arr = fields.get(name)
        setattr(o, name, arr if arr is not None else spare[name])
    return o


_PLACEHOLDERS = {"rel_excess": ((1, 1), float), "rel_cause": ((1, 1), int), "checks": ((1, 1), wp.bool),
                 "fail_bits": (1, int), "ov_pair": (1, int), "ov_depth": (1, float), "cl_pair": (1, int),
                 "cl_depth": (1, float), "loss": (1, float),
                 "iters": (1, int), "pending": (1, int), "history": ((1, 1, 1), wp.vec3)}
_placeholders: dict[str, dict] = {}


def is_box_scene(tables: SceneTables) -> bool:
    """Whether every pair of the scene is axis-aligned boxes and it has no MESH support terms (its kernels are
    the box variants; the others also evaluate OBB / MESH pairs and support terms)."""
    return tables.n_box_pairs == tables.n_pairs and tables.n_support == 0


def plain_scene(tables: SceneTables, obj_i) -> bool:
    """Whether the scene of ``tables`` (its pair counts set) is plain: box pairs only (``is_box_scene``) and every
    movable object, by its host ObjectColumn row in ``obj_i``, flagged STATIC_INTERVAL (unrotated, every projected
    relation's parent fixed or none), neither PENALISED nor the subject of a ClutterOn release. Its initial draws then
    need no heading, no parent shift, no release raise and no penalty term, and its final poses no heading round and
    no random offset: the plain init and finalize kernels (``solve_init.py``, ``solve_finalize.py``) leave them out."""
    return is_box_scene(tables) and all(
        (int(row[ObjectColumn.FLAGS]) & ObjectFlag.STATIC_INTERVAL) != 0
        and (int(row[ObjectColumn.FLAGS]) & ObjectFlag.PENALISED) == 0
        and int(row[ObjectColumn.CLUTTER]) < 0 for row in obj_i)


def sweep_scratch(st: CandidateState, tables: SceneTables, b: int, device: str) -> CandidateState:
    """Sets the broad phase's per-candidate arrays of ``st``: (b, n_mov) in a scene with ``tables.sweep``, the
    list of each candidate in index order (kernels only permute it), else one-element placeholders. Returns
    ``st``."""
    if tables.sweep:
        n = max(tables.n_mov, 1)
        st.order = wp.array(np.tile(np.arange(n, dtype=np.int32), (b, 1)), dtype=int, device=device)
        st.key = wp.zeros((b, n), dtype=float, device=device)
    else:
        st.order = wp.zeros((1, 1), dtype=int, device=device)
        st.key = wp.zeros((1, 1), dtype=float, device=device)
    return st

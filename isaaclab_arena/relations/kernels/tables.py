"""The compiled scene as a small warp struct of packed tables.

Object indices: movable (placed) objects are ``0 .. n_mov-1``, fixed objects (anchors and passive
obstacles) follow at ``n_mov .. n_all-1``. Per-env tables are indexed by env id first. Relations live
in one table sorted by kind, so each relation kind is a contiguous row range (``kind_start``): a
kernel evaluates every relation of a kind for a candidate in one loop. Lengths are metres, angles
radians, frames env-local world.

The struct is kept small on purpose: warp passes structs to functions by value, so a struct of a
few packed arrays costs little where a function is not inlined.
"""

from __future__ import annotations

import warp as wp

# Relation kinds. 0..5 are satisfied by projection onto per-axis intervals; the id is also their
# priority when intervals of one object conflict on an axis (the highest wins).
KIND_ALIGN = wp.constant(0)
KIND_NEXT_TO = wp.constant(1)
KIND_LIMITS = wp.constant(2)
KIND_AT = wp.constant(3)
KIND_CLUTTER = wp.constant(4)
KIND_ON = wp.constant(5)
KIND_NOT_NEXT_TO = wp.constant(6)
KIND_CYLINDER = wp.constant(7)
KIND_FACE_TO = wp.constant(8)
NUM_KINDS = 9

# rel_i columns
RI_KIND = wp.constant(0)
RI_CHILD = wp.constant(1)
RI_PARENT = wp.constant(2)
RI_AXIS = wp.constant(3)
RI_FLAG = wp.constant(4)
RI_RID = wp.constant(5)
RI_COLS = 6
RF_COLS = 8
RF_W = wp.constant(7)  # slope * relation_loss_weight

# obj_i columns
OI_YAW = wp.constant(0)  # 0 fixed, 1 random yaw, 2 FaceTo
OI_SUPPORT = wp.constant(1)  # object whose bounds seed the initial sample
OI_ORDER = wp.constant(2)  # row k holds the k-th object in parents-first order
OI_CLUTTER = wp.constant(3)  # rel row of the object's ClutterOn, -1 none
OI_RANDOM = wp.constant(4)  # 1 when RandomAroundSolution applies
OI_PROJ0 = wp.constant(5)  # projection entries [proj0, proj1) in ``proj``
OI_PROJ1 = wp.constant(6)
OI_RANK = wp.constant(7)  # position of the object in the parents-first order
OI_ADJ0 = wp.constant(8)  # no_overlap pairs of the object [adj0, adj1) in ``adj``
OI_ADJ1 = wp.constant(9)
OI_FLAGS = wp.constant(10)  # FLAG_* bits
OI_COLS = 12
FLAG_MOVABLE_PARENT = wp.constant(1)  # a projected relation of the object refers to a movable parent
FLAG_PENALISED = wp.constant(2)  # the object is the subject of a NotNextTo or cylindrical limit
FLAG_ROTATED = wp.constant(4)  # base rotation, yaw draws or RandomAroundSolution: bounds need rotating
# obj_f columns: base rotation xyzw (0..3), RandomAroundSolution half ranges m (4..6), rad (7..9)
OF_COLS = 10

# Check slots of the validation kernel (order of CHECK_SLOTS in placement_problem.py).
SLOT_NO_OVERLAP = wp.constant(0)
SLOT_ON = wp.constant(1)
SLOT_CLUTTER = wp.constant(2)
SLOT_NEXT_TO = wp.constant(3)
SLOT_NOT_NEXT_TO = wp.constant(4)
SLOT_ALIGN = wp.constant(5)
SLOT_FACE_TO = wp.constant(6)
NUM_SLOTS = wp.constant(7)


vec6i = wp.types.vector(length=6, dtype=wp.int32)
vec8f = wp.types.vector(length=8, dtype=wp.float32)
vec12i = wp.types.vector(length=12, dtype=wp.int32)
vec10f = wp.types.vector(length=10, dtype=wp.float32)


@wp.struct
class SceneTables:
    n_mov: int
    n_all: int
    n_pairs: int
    init_exact: int  # 1: an initial candidate free of penalties needs no solver iteration (see solve.py)
    kind_start: wp.array(dtype=int)  # NUM_KINDS + 1 row offsets into rel_i / rel_f
    local_lo: wp.array2d(dtype=wp.vec3)  # (E, n_all) local bounds per env
    local_hi: wp.array2d(dtype=wp.vec3)
    fixed_lo: wp.array2d(dtype=wp.vec3)  # (E, n_fixed) world AABB of fixed objects
    fixed_hi: wp.array2d(dtype=wp.vec3)
    obj_i: wp.array(dtype=vec12i)
    obj_f: wp.array(dtype=vec10f)
    rel_i: wp.array(dtype=vec6i)
    rel_f: wp.array(dtype=vec8f)
    proj: wp.array(dtype=int)  # rel rows, per object sorted by priority
    adj: wp.array(dtype=int)  # pair indices per object
    pair_i: wp.array(dtype=wp.vec2i)  # (P,) object indices (i movable)
    pair_f: wp.array(dtype=wp.vec4)  # (P,) clearance, may-push x, y, z
    pair_w: float  # NoCollisionLossStrategy slope
    on_ztol: float
    slack: float


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


@wp.struct
class SolveOutputs:
    """What the solve and check kernels write, per candidate b (R compiled relations)."""

    rel_excess: wp.array2d(dtype=float)  # (B, R) metres beyond what the relation's check accepts
    rel_cause: wp.array2d(dtype=int)  # (B, R) cause code, 0 none
    checks: wp.array2d(dtype=wp.bool)  # (B, NUM_SLOTS) verdict per built-in check
    ov_pair: wp.array(dtype=int)  # (B,) most-penetrating no_overlap pair
    ov_depth: wp.array(dtype=float)  # (B,) its depth, metres
    loss: wp.array(dtype=float)  # (B,)
    iters: wp.array(dtype=int)  # (B,) solver iterations (negative between launches: see solve_init)
    counts: wp.array2d(dtype=int)  # (B, 2) failed required / optional built-in checks
    passed: wp.array(dtype=wp.bool)  # (B,) every required built-in check passed
    pending: wp.array(dtype=int)  # (1,) candidates the optimisation loop must run on
    history: wp.array3d(dtype=wp.vec3)  # (B, S, n_mov) positions every 10 iterations (save_position_history)


def solve_outputs(device: str, b: int, **fields) -> SolveOutputs:
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
                 "ov_pair": (1, int), "ov_depth": (1, float), "loss": (1, float), "iters": (1, int),
                 "counts": ((1, 2), int), "passed": (1, wp.bool), "pending": (1, int),
                 "history": ((1, 1, 1), wp.vec3)}
_placeholders: dict[str, dict] = {}

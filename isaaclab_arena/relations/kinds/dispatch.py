"""Device-side dispatch over the relation kinds, generated from ``KINDS`` at codegen time (``wp.static``).

Each function picks the kind's own function by the row's kind id. Kind ids are grouped by role
(``kinds/__init__.py``), so the relation rows of a role are one contiguous range: [0, ``INTERVAL_END``) the
INTERVAL kinds, [``INTERVAL_END``, ``PENALTY_END``) the PENALTY kinds, then the HEADING kinds (kind-id bounds;
``T.kind_start[id]`` turns them into row bounds). A kernel walks a role's rows in one loop with one call of
the dispatch, so each dispatch has one call site per kernel module and inlines.
"""

from __future__ import annotations

import hashlib
import os

import warp as wp

from isaaclab_arena.relations.kernels.geometry import BIG
from isaaclab_arena.relations.kernels.tables import CandidateState, SceneTables
from isaaclab_arena.relations.kinds import CHECK_SLOTS, KINDS, SLOT_OF_KIND
from isaaclab_arena.relations.kinds.kind import KindRole, ParamRow, RoomRow

NUM_KINDS = wp.constant(len(KINDS))
INTERVAL_IDS = [i for i, k in enumerate(KINDS) if k.role == KindRole.INTERVAL]
INTERVAL_FUNCS = [KINDS[i].interval for i in INTERVAL_IDS]
PENALTY_IDS = [i for i, k in enumerate(KINDS) if k.role == KindRole.PENALTY]
PENALTY_FUNCS = [KINDS[i].penalty for i in PENALTY_IDS]
PUSH_FUNCS = [KINDS[i].push for i in PENALTY_IDS]
HEADING_IDS = [i for i, k in enumerate(KINDS) if k.role == KindRole.HEADING]
VIOLATION_FUNCS = [k.violation for k in KINDS]
SLOTS = list(SLOT_OF_KIND)
FACE_TO = wp.constant(HEADING_IDS[0])
#: Kind-id bounds of the roles (exclusive ends): INTERVAL kinds [0, INTERVAL_END), PENALTY [INTERVAL_END, PENALTY_END).
INTERVAL_END = wp.constant(len(INTERVAL_IDS))
PENALTY_END = wp.constant(len(INTERVAL_IDS) + len(PENALTY_IDS))


def _interval_dispatch(name: str):
    """The interval dispatch as a warp function of its own ``name`` (one native function per name)."""

    @wp.func(name=name)
    def relation_interval(kind: int, axis: int, flag: int, f: ParamRow, olo: wp.vec3, ohi: wp.vec3, plo: wp.vec3,
                          phi: wp.vec3, at_ratio: int, room: RoomRow):
        """Per-axis origin interval of one INTERVAL relation row (+-BIG where unconstrained)."""
        lo = wp.vec3(-BIG)
        hi = wp.vec3(BIG)
        for j in range(wp.static(len(INTERVAL_IDS))):
            if kind == wp.static(INTERVAL_IDS[j]):
                lo, hi = wp.static(INTERVAL_FUNCS[j])(axis, flag, f, olo, ohi, plo, phi, at_ratio, room)
        return lo, hi

    return relation_interval


#: Per-axis origin interval of one INTERVAL relation row (+-BIG where unconstrained): the projection's dispatch.
relation_interval = _interval_dispatch("relation_interval")
#: The same dispatch for the repair of a movable parent (``kernels/projection.py::parent_residual``), a function of
#: its own: the init kernel calls both, and a second call site of one function keeps the CPU compiler from
#: inlining it (the call then copies the relation's parameter rows by value; measured: a fifth of the init kernel).
relation_interval_of_parent = _interval_dispatch("relation_interval_of_parent")


@wp.func
def relation_penalty(kind: int, axis: int, flag: int, f: ParamRow, p: wp.vec3, clo: wp.vec3, chi: wp.vec3,
                     plo: wp.vec3, phi: wp.vec3):
    """(depth, allowance, gradient) of one PENALTY relation row."""
    depth = float(-BIG)
    allowance = float(0.0)
    grad = wp.vec3(0.0)
    for j in range(wp.static(len(PENALTY_IDS))):
        if kind == wp.static(PENALTY_IDS[j]):
            depth, allowance, grad = wp.static(PENALTY_FUNCS[j])(axis, flag, f, p, clo, chi, plo, phi)
    return depth, allowance, grad


@wp.func
def relation_push(kind: int, T: SceneTables, S: CandidateState, b: int, ci: int, pi: int, p: wp.vec3, clo: wp.vec3,
                  chi: wp.vec3, plo: wp.vec3, phi: wp.vec3, axis: int, f: ParamRow) -> wp.vec3:
    """Direction the solver pushes the subject of one PENALTY relation row (the kind's ``push``)."""
    d = wp.vec3(0.0)
    for j in range(wp.static(len(PENALTY_IDS))):
        if kind == wp.static(PENALTY_IDS[j]):
            d = wp.static(PUSH_FUNCS[j])(T, S, b, ci, pi, p, clo, chi, plo, phi, axis, f)
    return d


@wp.func
def check_slot(kind: int) -> int:
    """Verdict slot of the check of a relation kind (-1: an objective only)."""
    slot = int(-1)
    for j in range(wp.static(len(SLOTS))):
        if kind == j:
            slot = wp.static(SLOTS[j])
    return slot


@wp.func
def relation_violation(kind: int, axis: int, flag: int, f: ParamRow, p: wp.vec3, clo: wp.vec3, chi: wp.vec3,
                       plo: wp.vec3, phi: wp.vec3, slack: float):
    """(excess, cause) of one relation row; the shared definition behind its loss and its check."""
    ex = float(0.0)
    cause = int(0)
    for j in range(wp.static(NUM_KINDS)):
        if kind == j:
            ex, cause = wp.static(VIOLATION_FUNCS[j])(axis, flag, f, p, clo, chi, plo, phi, slack)
    return ex, cause
SLOT_NO_OVERLAP = wp.constant(CHECK_SLOTS.index("no_overlap"))
SLOT_CLEARANCE = wp.constant(CHECK_SLOTS.index("clearance"))
#: Number of built-in check verdict slots (no_overlap first).
NUM_SLOTS = wp.constant(len(CHECK_SLOTS))


def _source_digest() -> str:
    """A digest of every source file of the kinds and kernels packages."""
    h = hashlib.sha256()
    here = os.path.dirname(os.path.abspath(__file__))
    for folder in (here, os.path.join(os.path.dirname(here), "kernels")):
        for name in sorted(os.listdir(folder)):
            if name.endswith(".py"):
                with open(os.path.join(folder, name), "rb") as f:
                    h.update(name.encode() + f.read())
    return h.hexdigest()[:16]


KIND_SOURCES_DIGEST = _source_digest()


def track_kind_sources(module: str) -> None:
    """Makes warp's kernel cache key of ``module`` cover the kinds' device functions.

    Warp hashes a module from its functions' sources, but functions reached only through ``wp.static(...)``
    of a loop variable (the generated dispatch) are resolved at codegen, after the cache lookup: without this
    a change to a kind's function could load a stale compiled kernel. Call it in every module that defines a
    kernel using the dispatch."""
    wp.set_module_options({"arena_kind_sources": KIND_SOURCES_DIGEST}, module)

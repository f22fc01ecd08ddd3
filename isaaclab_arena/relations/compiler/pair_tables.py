"""The no_overlap pair table of a compile: which pairs of objects are kept apart, with what clearance and along
which axes a push may separate them. Array operations throughout (a scene of 1,000 objects has about 500,000
pairs): no Python loop over pairs."""

from __future__ import annotations

import numpy as np

from isaaclab_arena.assets.asset import Background
from isaaclab_arena.assets.collision_mode import CollisionMode
from isaaclab_arena.relations.compiler.collision_geometry import effective_mode
from isaaclab_arena.relations.kernels.tables import PairParam


def fixed_colliders(n_mov: int, fixed: list, solver_params) -> np.ndarray:
    """Object indices of the fixed objects a placed one may collide with (a Background only with MESH collision),
    increasing (int64)."""
    default = solver_params.collision_mode
    return np.array([n_mov + f for f, a in enumerate(fixed)
                     if not isinstance(a, Background) or effective_mode(a, default) == CollisionMode.MESH], np.int64)


def listed_pairs(n_mov: int, colliders: np.ndarray, n_all: int,
                 exempt_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The no_overlap pairs' objects (i, j) in their listed order, two (P,) int32 arrays: placed object i, then the
    placed objects after it, then the fixed ``colliders`` (increasing), less the pairs whose key ``i * n_all + j`` is
    in ``exempt_keys`` (int64). The order that numbers the pairs (``pair_rule.RulePairs`` follows it too)."""
    candidates = np.concatenate([np.arange(n_mov, dtype=np.int64), colliders])
    # row i keeps the movables after i and every collider; nonzero() keeps that order
    keep = np.ones((n_mov, len(candidates)), bool)
    keep[:, :n_mov] = np.triu(keep[:, :n_mov], k=1)
    i, col = np.nonzero(keep)
    i, j = i.astype(np.int32), candidates.astype(np.int32)[col]  # int32 from here: 8 bytes a pair, not 16
    del col
    if len(exempt_keys):
        free = ~np.isin(i.astype(np.int64) * n_all + j, exempt_keys)
        i, j = i[free], j[free]
    return i, j


def overlap_pairs(n_mov: int, n_objects: int, fixed: list, solver_params, pinned_movable: np.ndarray,
                  exempt: set[tuple[int, int]],
                  pair_clearance: dict[tuple[int, int], float]) -> tuple[np.ndarray, np.ndarray]:
    """no_overlap pairs (movable i, movable or fixed collider j) and their ``PairParam`` rows: ((P, 2) int32,
    (P, 4) float32 numpy arrays) ordered by i, then the movables after i, then the fixed colliders.

    Args:
        n_mov: Movable objects (indices 0 .. n_mov - 1); fixed object f has index n_mov + f.
        n_objects: Movable and fixed objects.
        fixed: The fixed assets (a Background is a collider only with MESH collision).
        solver_params: ``RelationSolverParams`` (``clearance_m`` metres, ``collision_mode``).
        pinned_movable: (n_mov, 3) bool, axes along which a movable object's relations pin it.
        exempt: (i, j) pairs, i < j, that are not kept apart (e.g. an object and its support).
        pair_clearance: (i, j) -> clearance in metres of pairs with a clearance of their own."""
    n_all = max(n_objects, 1)
    i, j = listed_pairs(n_mov, fixed_colliders(n_mov, fixed, solver_params), n_all,
                        np.array([a * n_all + b for a, b in exempt], np.int64))
    # a push may move the pair apart along an axis unless both are pinned there
    pinned = np.zeros((n_all, 3), bool)
    pinned[:n_mov] = pinned_movable
    pinned[n_mov:] = True  # a fixed collider never moves
    axes = (~(pinned[i] & pinned[j])).astype(np.float32)
    axes[~axes.any(axis=1)] = (1.0, 1.0, 0.0)
    pair_f = np.empty((len(i), len(PairParam)), np.float32)
    pair_f[:, PairParam.CLEARANCE] = solver_params.clearance_m
    pair_f[:, PairParam.PUSH_X:PairParam.PUSH_Z + 1] = axes
    if pair_clearance:
        where = {a * n_all + b: k for k, (a, b) in enumerate(pair_clearance)}
        keys = np.minimum(i, j).astype(np.int64) * n_all + np.maximum(i, j)
        hit = np.nonzero(np.isin(keys, np.fromiter(where, np.int64, len(where))))[0]
        values = list(pair_clearance.values())
        for k in hit.tolist():  # the few pairs with a clearance of their own
            pair_f[k, PairParam.CLEARANCE] = values[where[int(keys[k])]]
    return np.stack([i, j], axis=1), pair_f


#: Scenes with at least this many relation-placed objects visit their box pairs by sort and sweep along X
#: (``kernels/broad_phase.py``); below it, the pair list is cheaper to walk whole (measured: docs/BENCHMARKS.md).
SWEEP_FROM_OBJECTS = 8


def uses_sweep(n_mov: int) -> bool:
    """Whether a scene of ``n_mov`` relation-placed objects uses the broad phase."""
    return n_mov >= SWEEP_FROM_OBJECTS


def box_pair_index(pairs, n_box_pairs: int, n_mov: int, n_all: int) -> np.ndarray:
    """(n_mov, n_all) int32: the index k < ``n_box_pairs`` of the axis-aligned pair of placed object i and object
    j (both orders for two placed objects), -1 where they form no such pair. ``pairs``: (P, 2) object indices
    (an array, or a list of (i, j))."""
    table = np.full((max(n_mov, 1), max(n_all, 1)), -1, np.int32)
    if n_box_pairs:
        ij = np.asarray(pairs[:n_box_pairs], np.int64).reshape(-1, 2)
        k = np.arange(len(ij), dtype=np.int32)
        table[ij[:, 0], ij[:, 1]] = k
        both = ij[:, 1] < n_mov
        table[ij[both, 1], ij[both, 0]] = k[both]
    return table

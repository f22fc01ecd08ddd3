"""Compile step of the pairs by rule: a large scene of axis-aligned boxes keeps its no_overlap pairs as the rule
that lists them (``kernels/pair_rule.py``), per-object rows instead of per-pair tables (a scene of 1,000 objects
has about 500,000 pairs: 48 B each in the listed tables, plus the compile's arrays while it builds them).

A scene uses the rule when it has many placed objects (``RULE_FROM_OBJECTS``; below, the listed tables fit the
caches and cost nothing to read) and every pair is axis-aligned boxes: no object turns about Z (random yaw, a
RotateAroundSolution yaw, a yawed obstacle: those pairs are OBB) and none collides by MESH. Host side, the
problem's ``pairs`` is then a ``RulePairs``: its length, pair k's objects and the whole (P, 2) array on demand.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isaaclab_arena.assets.collision_mode import CollisionMode
from isaaclab_arena.relations.compiler.collision_geometry import effective_mode, rotation_kind
from isaaclab_arena.relations.compiler.device_arrays import device_array
from isaaclab_arena.relations.compiler.pair_tables import fixed_colliders, listed_pairs, uses_sweep
from isaaclab_arena.relations.kernels.tables import RuleColumn, SceneTables, vec6i

#: Scenes with at least this many placed objects may keep their pairs as the rule (see the module docstring).
RULE_FROM_OBJECTS = 128


def uses_pair_rule(n_mov: int, sweep: bool, rotation_kinds: list[str], collision_modes: list) -> bool:
    """Whether a scene keeps its pairs as the rule: ``n_mov`` >= ``RULE_FROM_OBJECTS`` placed objects visited by the
    broad phase (``sweep``: the kernels find a pair's partners through it), none of its objects turning about Z
    ('yawed', ``collision_geometry.rotation_kind``) and none colliding by MESH."""
    return (sweep and n_mov >= RULE_FROM_OBJECTS and "yawed" not in rotation_kinds
            and CollisionMode.MESH not in collision_modes)


@dataclass(frozen=True)
class RulePairs:
    """The no_overlap pairs of a scene that keeps them as the rule, in the listed order (``overlap_pairs``).

    ``len()`` is the pair count, ``pairs[k]`` pair k's (i, j) as a (2,) int32 array, ``np.asarray(pairs)`` the whole
    (P, 2) int32 array (built on demand: P rows). Attributes are the rule's tables (host copies of ``rule_*``)."""

    n_mov: int
    n_all: int
    colliders: np.ndarray  # (C,) int64 fixed colliders, increasing
    rows: np.ndarray  # (n_all, 6) int32 RuleColumn
    row_start: np.ndarray  # (n_mov + 1,) int64: number of placed object i's first pair, then the count
    exempt: np.ndarray  # (X,) int32 exempt partners, per object increasing
    clear_j: np.ndarray  # (Q,) int32 partners with a clearance of their own
    clear_v: np.ndarray  # (Q,) float32 their clearance (m)
    clearance: float  # every other pair's clearance (m)

    def __len__(self) -> int:
        return int(self.row_start[-1])

    def _partners(self, i: int) -> np.ndarray:
        """Placed object i's partners before exemptions: the placed objects after it, then the fixed colliders."""
        return np.concatenate([np.arange(i + 1, self.n_mov, dtype=np.int64), self.colliders])

    def __getitem__(self, k) -> np.ndarray:
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
            raise TypeError(f"RulePairs: a pair number is an int, got {k!r} (np.asarray(pairs) for the whole array)")
        n = len(self)
        k = int(k) + n if k < 0 else int(k)
        if not 0 <= k < n:
            raise IndexError(f"RulePairs: pair {k} of {n}")
        i = int(np.searchsorted(self.row_start, k, side="right")) - 1
        r = self.rows[i]
        ex = self.exempt[r[RuleColumn.EX0]:r[RuleColumn.EX1]]
        partners = self._partners(i)
        partners = partners[~np.isin(partners, ex)]
        return np.array([i, partners[k - int(self.row_start[i])]], np.int32)

    def _exempt_owners(self) -> np.ndarray:
        """(X,) int64: the placed object each entry of ``exempt`` belongs to."""
        return np.repeat(np.arange(self.n_all), self.rows[:, RuleColumn.EX1] - self.rows[:, RuleColumn.EX0])

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        i, j = listed_pairs(self.n_mov, self.colliders, self.n_all,
                            self._exempt_owners() * self.n_all + self.exempt)
        out = np.stack([i, j], axis=1)
        return out if dtype is None else out.astype(dtype)

    def objects(self) -> list[int]:
        """Object indices in at least one pair, increasing: a placed object unless every other placed object and
        fixed collider is exempt with it, a fixed collider unless every placed object is."""
        exempt_with = np.bincount(np.concatenate([self._exempt_owners(), self.exempt]), minlength=self.n_all)
        partners = np.zeros(self.n_all, np.int64)
        partners[:self.n_mov] = self.n_mov - 1 + len(self.colliders)
        partners[self.colliders] = self.n_mov
        return np.flatnonzero(exempt_with < partners).tolist()

    def max_clearance(self) -> float:
        """The largest clearance of a pair (m), 0.0 without pairs."""
        exc = len(self.clear_v)
        values = ([self.clearance] if len(self) > exc else []) + self.clear_v.tolist()
        return float(max(values, default=0.0))


def pair_rule(n_mov: int, n_all: int, colliders: np.ndarray, solver_params, pinned_movable: np.ndarray,
              exempt: set[tuple[int, int]], pair_clearance: dict[tuple[int, int], float]) -> RulePairs:
    """The rule's tables of a scene (the same arguments as ``overlap_pairs``, its fixed colliders given)."""
    is_partner = np.zeros(n_all, bool)
    is_partner[:n_mov] = True
    is_partner[colliders] = True
    rows = np.zeros((n_all, len(RuleColumn)), np.int32)
    rows[n_mov:, RuleColumn.COLLIDER] = -1
    rows[colliders, RuleColumn.COLLIDER] = np.arange(len(colliders), dtype=np.int32)
    bits = np.array([1, 2, 4], np.int32)
    rows[:n_mov, RuleColumn.PINNED] = (np.asarray(pinned_movable, bool).reshape(-1, 3) * bits).sum(1)
    rows[n_mov:, RuleColumn.PINNED] = 7  # a fixed collider never moves

    def real(a: int, b: int) -> bool:  # a pair the listed tables would hold
        return a < n_mov and a < b and bool(is_partner[b])

    ex = sorted((a, b) for a, b in exempt if real(a, b))
    cl = sorted((a, b, v) for (a, b), v in pair_clearance.items() if real(a, b) and (a, b) not in exempt)
    ex_i = np.array([a for a, _ in ex], np.int64)
    cl_i = np.array([a for a, _, _ in cl], np.int64)
    starts = np.searchsorted(ex_i, np.arange(n_all + 1))
    rows[:, RuleColumn.EX0], rows[:, RuleColumn.EX1] = starts[:-1], starts[1:]
    starts = np.searchsorted(cl_i, np.arange(n_all + 1))
    rows[:, RuleColumn.CL0], rows[:, RuleColumn.CL1] = starts[:-1], starts[1:]
    length = (n_mov - 1 - np.arange(n_mov)) + len(colliders) - np.bincount(ex_i, minlength=n_mov)[:n_mov]
    row_start = np.zeros(n_mov + 1, np.int64)
    np.cumsum(length, out=row_start[1:])
    return RulePairs(n_mov=n_mov, n_all=n_all, colliders=np.asarray(colliders, np.int64), rows=rows,
                     row_start=row_start, exempt=np.array([b for _, b in ex], np.int32),
                     clear_j=np.array([b for _, b, _ in cl], np.int32),
                     clear_v=np.array([v for _, _, v in cl], np.float32),
                     clearance=float(np.float32(solver_params.clearance_m)))


def keeps_pair_rule(sc) -> bool:
    """Whether the scene of ``sc`` (``compile_problem._SceneCompiler``) keeps its pairs as the rule
    (``uses_pair_rule``); known before its relations are compiled."""
    rotation = [rotation_kind(sc, k) for k in range(sc.n_all)]
    modes = [effective_mode(a, sc.solver_params.collision_mode) for a in sc.objects]
    return uses_pair_rule(sc.n_mov, uses_sweep(sc.n_mov), rotation, modes)


def scene_pair_rule(sc) -> RulePairs | None:
    """The pairs of the scene of ``sc`` as the rule when it keeps them so, else None (after ``sc.relation_rows``:
    the pinned axes, exempt pairs and pair clearances)."""
    if not keeps_pair_rule(sc):
        return None
    return pair_rule(sc.n_mov, sc.n_all, fixed_colliders(sc.n_mov, sc.fixed, sc.solver_params), sc.solver_params,
                     sc.pinned, sc.exempt, sc.pair_clearance)


def set_rule_tables(T: SceneTables, rule: RulePairs | None, clearance_m: float, device: str, keep: list) -> None:
    """The rule's tables of ``T`` (``kernels/pair_rule.py``), one-row placeholders when the pairs are listed
    (``clearance_m``: the solver's clearance, metres)."""
    T.pair_rule = int(rule is not None)
    if rule is None:
        T.rule_i = device_array(np.zeros((1, len(RuleColumn)), np.int32), vec6i, len(RuleColumn), device, keep)
        T.rule_row, T.rule_ex, T.rule_clj = (device_array([0], int, None, device, keep) for _ in range(3))
        T.rule_clv = device_array([0.0], float, None, device, keep)
        T.clearance = float(np.float32(clearance_m))
        return
    T.rule_i = device_array(rule.rows, vec6i, len(RuleColumn), device, keep)
    T.rule_row = device_array(rule.row_start.astype(np.int32), int, None, device, keep)
    T.rule_ex = device_array(rule.exempt, int, None, device, keep)
    T.rule_clj = device_array(rule.clear_j, int, None, device, keep)
    T.rule_clv = device_array(rule.clear_v, float, None, device, keep)
    T.clearance = rule.clearance

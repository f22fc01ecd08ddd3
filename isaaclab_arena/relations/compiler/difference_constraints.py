"""A system of difference constraints along one axis and its Bellman-Ford tests (the feasibility pre-check).

``x_v - x_u >= w`` holds for every constraint of a satisfiable system; a cycle of positive total weight
proves that none can hold together, and its weight is the amount (metres) missing. Pure Python: the
systems are small (four nodes per object) and solved once per compile.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

#: Node 0: the env origin (x = 0).
ORIGIN = 0
#: An object's nodes along the axis: its AABB's lower face, its origin, its centre and its upper face.
L, O, C, H = range(4)


class DifferenceConstraints:
    """Constraints ``x_v - x_u >= w`` between coordinates (metres) along one world axis. Node 0 is the env
    origin (x = 0); object ``k``'s nodes are its AABB faces and points ``node(k, face)`` (face 0..3). Each
    constraint keeps its weight with and without slack and a label (what it comes from)."""

    def __init__(self, n_objects: int):
        self.n = 1 + 4 * n_objects
        self.edges: list[tuple[int, int, float, float, tuple]] = []  # (u, v, w - slack, w, label)

    @staticmethod
    def node(k: int, face: int) -> int:
        return 1 + 4 * k + face

    def at_least(self, u: int, v: int, w: float, label: tuple, slack: float = 0.0) -> None:
        self.edges.append((u, v, float(w) - slack, float(w), label))

    def between(self, u: int, v: int, lo, hi, label: tuple, slack: float = 0.0) -> None:
        """lo <= x_v - x_u <= hi (None: open)."""
        if lo is not None:
            self.at_least(u, v, lo, label, slack)
        if hi is not None:
            self.at_least(v, u, -hi, label, slack)

    def positive_cycle(self) -> list[int] | None:
        """Edge indices of a cycle of positive weight (an impossible chain), or None."""
        dist, pred = [0.0] * self.n, [-1] * self.n
        last = -1
        for _ in range(self.n):
            last = -1
            for ei, (u, v, w, _, _) in enumerate(self.edges):
                if dist[u] + w > dist[v] + 1e-9:
                    dist[v], pred[v], last = dist[u] + w, ei, v
            if last < 0:
                return None
        v = last
        for _ in range(self.n):  # step back onto the cycle
            v = self.edges[pred[v]][0]
        cycle, u = [], v
        while True:
            cycle.append(pred[u])
            u = self.edges[pred[u]][0]
            if u == v:
                return cycle[::-1]

    def longest_from_origin(self, reverse: bool = False):
        """Longest paths from node 0 (reverse: to node 0) and the edge reaching each node on its path."""
        dist, pred = [-math.inf] * self.n, [-1] * self.n
        dist[0] = 0.0
        for _ in range(self.n):
            changed = False
            for ei, (u, v, w, _, _) in enumerate(self.edges):
                if reverse:
                    u, v = v, u
                if dist[u] + w > dist[v] + 1e-9:
                    dist[v], pred[v], changed = dist[u] + w, ei, True
            if not changed:
                break
        return dist, pred

    def path_labels(self, pred, target: int, reverse: bool = False) -> list[tuple]:
        out, v, seen = [], target, set()
        while v != 0 and pred[v] >= 0 and v not in seen:
            seen.add(v)
            u, w, _, _, label = self.edges[pred[v]]
            out.append(label)
            v = w if reverse else u
        return out


@dataclass(frozen=True)
class RelationEdges:
    """What one relation adds its constraints through, on one axis (a kind's ``feasibility`` function):
    ``s(face)`` / ``p(face)`` are its subject's / parent's nodes, ``between`` and ``at_least`` add constraints
    with the relation's label and slack."""

    graph: DifferenceConstraints
    axis: int  # 0, 1, 2: world x, y, z
    subject: int
    parent: int  # -1: the relation has no parent
    label: tuple
    slack: float  # metres granted to every constraint
    width: Callable[[int, int], float | None]  # (object, axis) -> world extent (m) when no drawn turn changes it
    z_tolerance_m: float  # the placer's on_relation_z_tolerance_m

    def s(self, face: int) -> int:
        return DifferenceConstraints.node(self.subject, face)

    def p(self, face: int) -> int:
        return DifferenceConstraints.node(self.parent, face)

    def at_least(self, u: int, v: int, w: float) -> None:
        self.graph.at_least(u, v, w, self.label, self.slack)

    def between(self, u: int, v: int, lo, hi) -> None:
        self.graph.between(u, v, lo, hi, self.label, self.slack)

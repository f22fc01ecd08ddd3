"""Room a relation chain needs: how far the NextTo descendants of an object reach beyond it.

An object with a chain of NextTo children (a row, a chain of boxes) can only be placed where the whole chain
fits on the support (On) and inside the limits (PositionLimitsBox) its members share. The compile stage
computes, per movable object and per direction (-X, +X, -Y, +Y), the room its NextTo descendants need beyond
its own footprint (``footprint``: for the On support they share) and beyond its origin (``origin``: for the
position limits they share). The On and PositionLimitsBox intervals the solver projects onto are shrunk by
it, so an initial draw of a chain's first object leaves room for the rest; the checks still judge the
relations themselves. Metres, env-local world axes.

The room is conservative where a size can vary: per-env object-set members (their largest box), objects
that turn (random yaw, FaceTo: their footprint's circumscribed half size), a NextTo gap (distance_m +
tolerance_m). A child without ``cross_position_ratio`` is counted centred on its parent's cross axis.
"""

from __future__ import annotations

import numpy as np

from isaaclab_arena.relations.kernels.tables import YawMode
from isaaclab_arena.relations.compiler.object_yaw import yaw_mode
from isaaclab_arena.relations.relations import NextTo, On, PositionLimitsBox

#: Directions in the order of the room columns: (axis, sign).
DIRECTIONS = ((0, -1.0), (0, 1.0), (1, -1.0), (1, 1.0))


def _half_extents(local_lo: np.ndarray, local_hi: np.ndarray, turns: bool) -> tuple[np.ndarray, np.ndarray]:
    """(largest, smallest) X/Y half extents over envs (and over yaw when the object turns), metres."""
    half = 0.5 * (local_hi[..., :2] - local_lo[..., :2])  # (E, 2)
    big = half.max(axis=0)
    if not turns:
        return big, half.min(axis=0)
    r = float(np.sqrt((half ** 2).sum(-1)).max())
    return np.array([r, r]), np.full(2, float(half.min()))


class ChainRooms:
    """Room per movable object (index) and direction, for the footprint and for the origin.

    Args:
        movables: The movable assets, in object order.
        local_lo / local_hi: (E, n_all, 3) local bounds per env, metres.
        turns: Per movable: whether its yaw can change (random yaw, FaceTo).
    """

    def __init__(self, movables, local_lo: np.ndarray, local_hi: np.ndarray, turns: list[bool]):
        self.index = {a.name: k for k, a in enumerate(movables)}
        self.movables = movables
        self.big, self.small = zip(*(_half_extents(local_lo[:, k], local_hi[:, k], turns[k])
                                     for k in range(len(movables))))
        self.centre = [0.5 * (local_lo[:, k, :2] + local_hi[:, k, :2]).mean(axis=0) for k in range(len(movables))]
        self.children: list[list[tuple[int, NextTo]]] = [[] for _ in movables]
        for k, a in enumerate(movables):
            for rel in a.get_relations_of(NextTo):
                p = self.index.get(rel.parent.name)
                if p is not None:
                    self.children[p].append((k, rel))
        self.support = [self._first(a, On) for a in movables]
        self.limits = [self._first(a, PositionLimitsBox) for a in movables]

    @staticmethod
    def _first(asset, cls):
        found = asset.get_relations_of(cls)
        if not found:
            return None
        rel = found[0]
        return rel.parent.name if cls is On else (rel.x_limits, rel.y_limits)

    def _reach(self, k: int, axis: int, sign: float, same, depth: int = 0) -> tuple[float, float]:
        """(farthest box edge, farthest origin) of k and its chain members that ``same`` admits, along
        (axis, sign), relative to k's box centre (metres)."""
        edge = self.big[k][axis]
        origin = -sign * self.centre[k][axis]  # the origin relative to the box centre, along the direction
        children = self._children_reach(k, axis, sign, same, depth)
        if children is not None:
            edge, origin = max(edge, children[0]), max(origin, children[1])
        return edge, origin

    def _children_reach(self, k: int, axis: int, sign: float, same, depth: int = 0) -> tuple[float, float] | None:
        """(farthest box edge, farthest origin) of k's admitted NextTo descendants along (axis, sign), relative
        to k's box centre; None when there are none."""
        if depth > len(self.movables):  # a NextTo cycle: stop (the restrictions refuse real cycles)
            return None
        best = None
        for c, rel in self.children[k]:
            if not same(k, c):
                continue
            if rel.side.axis_index == axis:
                if rel.side.sign != sign:
                    continue
                offset = self.big[k][axis] + rel.distance_m + rel.tolerance_m + self.big[c][axis]
            elif rel.cross_position_ratio is not None:
                offset = sign * rel.cross_position_ratio * self.big[k][axis]
            else:
                offset = 0.0
            c_edge, c_origin = self._reach(c, axis, sign, same, depth + 1)
            cand = (offset + c_edge, offset + c_origin)
            best = cand if best is None else (max(best[0], cand[0]), max(best[1], cand[1]))
        return best

    def footprint(self, k: int) -> list[float]:
        """Room (m, >= 0) beyond object k's footprint per direction, for the members On its support."""
        same = lambda a, b: self.support[b] is not None and self.support[b] == self.support[a]  # noqa: E731
        out = []
        for axis, sign in DIRECTIONS:
            reach = self._children_reach(k, axis, sign, same)
            out.append(0.0 if reach is None else max(0.0, reach[0] - self.small[k][axis]))
        return out

    def origin(self, k: int) -> list[float]:
        """Room (m, >= 0) beyond object k's origin per direction, for the members inside its limits."""
        same = lambda a, b: self.limits[b] is not None and self.limits[b] == self.limits[a]  # noqa: E731
        out = []
        for axis, sign in DIRECTIONS:
            reach = self._children_reach(k, axis, sign, same)
            out.append(0.0 if reach is None else max(0.0, reach[1] + sign * self.centre[k][axis]))
        return out


def turns(asset, random_yaw_init: bool) -> bool:
    """Whether an object's yaw can change while placing (random yaw draws or a FaceTo heading)."""
    return yaw_mode(asset, random_yaw_init) != YawMode.FIXED

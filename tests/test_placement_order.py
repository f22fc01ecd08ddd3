"""The order in which a candidate's objects are drawn (``compiler/placement_order.parents_first``): parents of
INTERVAL relations before their subjects, the lowest index first among those ready, the lowest index not yet placed
when a cycle leaves none ready. Checked against that rule written as a scan of every object per step, on random
relation graphs with cycles, several parents, penalty relations (not an order) and parents outside the
placed objects (ignored); and the order of a 20,000-object chain (the scan's n^2 would take minutes)."""

from __future__ import annotations

import numpy as np
import pytest

from isaaclab_arena.assets.asset import Object
from isaaclab_arena.assets.bounding_box import AxisAlignedBoundingBox
from isaaclab_arena.relations.compiler.placement_order import parents_first
from isaaclab_arena.relations.relations import NextTo, NotNextTo, On, Side


def _box(name):
    return Object(name, bounding_box=AxisAlignedBoundingBox.from_size((0.1, 0.1, 0.1)))


def _scan(parents: list[set[int]]) -> list[int]:
    """The rule one step at a time: every object not placed whose parents are all placed, the lowest first; else the
    lowest not placed."""
    order, done = [], set()
    while len(order) < len(parents):
        ready = [k for k in range(len(parents)) if k not in done and parents[k] <= done]
        k = ready[0] if ready else min(k for k in range(len(parents)) if k not in done)
        order.append(k)
        done.add(k)
    return order


def _random_scene(seed: int, n: int):
    rng = np.random.default_rng(seed)
    objs = [_box(f"o{k}") for k in range(n)]
    outsider = _box("table")  # a parent that is not among the placed objects: no order
    parents = [set() for _ in range(n)]
    for k, o in enumerate(objs):
        for _ in range(int(rng.integers(0, 3))):
            p = (k + int(rng.integers(1, n))) % n  # any other object, later ones included: cycles
            if rng.random() < 0.5:
                o.add_relation(On(objs[p]))
            else:
                o.add_relation(NextTo(objs[p], side=Side.POSITIVE_X, distance_m=0.05))
            parents[k].add(p)
        if rng.random() < 0.3:
            other = objs[(k + int(rng.integers(1, n))) % n]
            o.add_relation(NotNextTo(other, side=Side.POSITIVE_X))  # a penalty: no order
        if rng.random() < 0.3:
            o.add_relation(On(outsider))
    return objs, parents


@pytest.mark.parametrize("seed", range(12))
def test_the_order_is_the_scan_rule(seed):
    objs, parents = _random_scene(seed, 6 + 4 * seed)
    order = parents_first(objs)
    assert order == _scan(parents)
    assert sorted(order) == list(range(len(objs)))


def test_parents_come_first_and_a_cycle_keeps_scene_order():
    a, b, c, d = (_box(n) for n in "abcd")
    a.add_relation(On(c))  # c before a
    b.add_relation(On(d))  # d before b
    c.add_relation(NextTo(b, side=Side.POSITIVE_X, distance_m=0.05))  # b before c: d, b, c, a
    assert parents_first([a, b, c, d]) == [3, 1, 2, 0]
    d.add_relation(On(a))  # a cycle a -> c -> b -> d -> a: none ready, the lowest (a) first, then its subject d
    assert parents_first([a, b, c, d]) == [0, 3, 1, 2]
    assert _scan([{2}, {3}, {1}, {0}]) == [0, 3, 1, 2]


def test_a_long_chain_is_ordered_from_its_root():
    n = 20_000
    objs = [_box(f"o{k}") for k in range(n)]
    for k in range(n - 1):
        objs[k].add_relation(On(objs[k + 1]))  # each on the next: the last is the root
    assert parents_first(objs) == list(range(n - 1, -1, -1))

"""Object pools: N objects of which k (or k in a range) join each layout; the others are parked.

Part of the placement core: plain Python + torch, no Isaac Lab. Each member is an ordinary ``Object`` of the scene
(its own scene entity, relations and physical property ranges); the pool marks its members (``member.object_pool``)
and says how many join. Which members join layout ``(env e, draw d)`` is a pure function of
``(placement seed, pool name, env id, draw id)`` (:func:`draw_pool_members`, the hash of the property draws), so a
layout and its joined set come together: same spec + seed + env id + draw id => same joined set.

A parked member sits at its parking pose, env-local ``(0, 0, PARK_HEIGHT_M + PARK_SPACING_M * slot)`` metres with
the identity rotation (``slot``: the member's place among every pool member of the scene), far above the scene.
"Parked" is a property of the pose (``z > PARKED_ABOVE_M``): the solver kernels leave such an object where it is
and give it no relation residuals; its no_overlap pairs are empty because it is far from everything; the env's pool
term takes it out of physics; pictures leave it out; recordings carry it in the poses.

Usage::

    pool = ObjectPool("clutter", [library.cube_4cm(f"cube_{i}") for i in range(8)], count=(3, 5))
    pool.add_relation(On(table))      # every member, on its own
    arena_env = IsaacLabArenaEnvironment("pooled", [background, table, *pool.objects])
"""

from __future__ import annotations

import copy
from typing import Any

import torch

from isaaclab_arena.utils.parking_spots import PARK_HEIGHT_M, PARK_SPACING_M, PARKED_ABOVE_M, is_parked, park_position
from isaaclab_arena.assets.physical_properties import _M32, _mix32, _name_key

def _count_range(count: Any, n: int, owner: str) -> tuple[int, int]:
    what = (f"an integer k in [0, {n}] (the pool's {n} members) or a range [k_min, k_max] with "
            f"0 <= k_min <= k_max <= {n}")
    given = count  # quoted as written (a scalar stays a scalar)
    if isinstance(count, int) and not isinstance(count, bool):
        count = (count, count)
    if (not isinstance(count, (list, tuple)) or len(count) != 2
            or any(isinstance(v, bool) or not isinstance(v, int) for v in count)):
        raise ValueError(f"{owner}: count must be {what}, got {given!r}")
    lo, hi = int(count[0]), int(count[1])
    if not 0 <= lo <= hi <= n:
        raise ValueError(f"{owner}: count must be {what}, got {list(given) if isinstance(given, tuple) else given!r}")
    return lo, hi


class ObjectPool:
    """N member objects of which ``count`` join each layout; the rest are parked (see the module docstring).

    Args:
        name: The pool's name (seeds its draws; YAML ``object_pools[].id``).
        objects: Member ``Object``s (rigid, placed by relations, each in no other pool); at least one.
        count: k (every layout gets k members) or ``(k_min, k_max)`` (each layout draws k uniformly in it).
    """

    def __init__(self, name: str, objects: list, count: int | tuple[int, int] | list[int]):
        from isaaclab_arena.assets.asset import Object
        from isaaclab_arena.assets.object_type import ObjectType
        from isaaclab_arena.utils import checks

        self.name = checks.asset_id(name, "ObjectPool", "name")
        owner = f"ObjectPool '{self.name}'"
        objects = checks.member_list(objects, owner)
        names = set()
        for obj in objects:
            checks.instance_of(obj, Object, owner, "objects", "Objects")
            if obj.object_type != ObjectType.RIGID:
                raise ValueError(f"{owner}: member '{obj.name}' is {obj.object_type.value}; only rigid objects "
                                 "can be pool members (a parked member is moved away)")
            if obj.initial_pose is not None:
                raise ValueError(f"{owner}: member '{obj.name}' has an initial_pose; pool members are placed by "
                                 "relations (or parked)")
            if obj.name in names:
                raise ValueError(f"{owner}: member '{obj.name}' is listed twice")
            other = getattr(obj, "object_pool", None)
            if other is not None and other is not self:
                raise ValueError(f"{owner}: member '{obj.name}' is already in pool '{other.name}'")
            names.add(obj.name)
        self.objects = objects
        self.count = _count_range(count, len(objects), owner)
        for obj in objects:
            obj.object_pool = self

    @property
    def member_names(self) -> list[str]:
        return [o.name for o in self.objects]

    def add_relation(self, relation) -> "ObjectPool":
        """Adds (a copy of) ``relation`` to every member: each joined member meets it on its own."""
        for obj in self.objects:
            obj.add_relation(copy.copy(relation))
        return self

    def to_dict(self) -> dict:
        """YAML form (``object_pools`` entry)."""
        lo, hi = self.count
        return {"id": self.name, "members": self.member_names, "count": lo if lo == hi else [lo, hi]}

    def __repr__(self) -> str:
        return f"ObjectPool({self.name!r}, members={self.member_names}, count={self.count})"


def pools_of(assets) -> list[ObjectPool]:
    """The pools of ``assets`` (each once, in order of first member)."""
    out: list[ObjectPool] = []
    for a in assets:
        pool = getattr(a, "object_pool", None)
        if pool is not None and all(p is not pool for p in out):
            out.append(pool)
    return out


def draw_pool_members(name: str, count: tuple[int, int], num_members: int, seed: int, env_keys,
                      draw_ids) -> torch.Tensor:
    """Which members of pool ``name`` join layouts ``(env_keys[b], draw_ids[b])``: ``(B, num_members)`` bool.

    k is drawn uniformly in ``count``, then the k members with the smallest hashed keys join (a uniform k-subset).
    A pure function of (seed, pool name, env key, draw id): batched torch, no RNG state.
    """
    env_keys = torch.as_tensor(env_keys, dtype=torch.int64).reshape(-1)
    draw_ids = torch.as_tensor(draw_ids, dtype=torch.int64, device=env_keys.device).reshape(-1)
    h = _mix32(torch.full_like(env_keys, int(seed) & _M32) ^ ((int(seed) >> 32) & _M32) ^ 0x504F4F4C)  # "POOL"
    h = _mix32(h ^ _name_key(name))
    h = _mix32(h ^ env_keys)
    h = _mix32(h ^ ((draw_ids * 0x9E3779B1) & _M32))
    lo, hi = count
    u = (_mix32(h ^ 0x85EBCA6B) >> 8).to(torch.float64) / float(1 << 24)
    k = lo + torch.clamp((u * (hi - lo + 1)).to(torch.int64), max=hi - lo)
    cols = torch.arange(1, num_members + 1, dtype=torch.int64, device=env_keys.device) * 0x27D4EB2F & _M32
    keys = _mix32(h[:, None] ^ cols[None, :])
    rank = keys.argsort(dim=1).argsort(dim=1)
    return rank < k[:, None]


__all__ = ["ObjectPool", "PARK_HEIGHT_M", "PARK_SPACING_M", "PARKED_ABOVE_M", "draw_pool_members", "is_parked",
           "park_position", "pools_of"]

"""Object pools in the compiled problem: which placed objects are pool members, where they park, and which of
them each candidate parks (``isaaclab_arena/assets/object_pool.py`` defines pools and the draw).

The solver writes every parked member's parking position into the candidate's start positions before the init
kernel; the kernels leave an object above ``PARKED_ABOVE_M`` where it is (no projection, no draw) and skip its
relation rows and MESH support terms; its no_overlap pairs are empty because it is hundreds of metres from
everything. Positions are env-local metres.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from isaaclab_arena.assets.object_pool import draw_pool_members, is_parked, park_position, pools_of
from isaaclab_arena.relations.compiler.placement_restrictions import PlacementConfigError


@dataclass(frozen=True)
class CompiledPool:
    """One pool of the problem: ``members`` are indices into ``PlacementProblem.object_names``."""

    name: str
    count: tuple[int, int]
    members: tuple[int, ...]
    member_names: tuple[str, ...]


@dataclass
class PoolTables:
    """The pools of a problem and the parking position of each placed object ((n, 3) m; zero for non-members)."""

    pools: tuple[CompiledPool, ...]
    park: torch.Tensor
    member_index: torch.Tensor  # (M,) object indices of every member, pools in order

    def parked(self, seed: int, env_keys: torch.Tensor, draw_ids: torch.Tensor) -> torch.Tensor:
        """``(B, n)`` bool: object k is parked in candidate (env_keys[b], draw_ids[b]). Batched; one draw per pool."""
        b, n = int(env_keys.shape[0]), int(self.park.shape[0])
        out = torch.zeros(b, n, dtype=torch.bool, device=env_keys.device)
        for pool in self.pools:  # pools, not candidates or objects
            joined = draw_pool_members(pool.name, pool.count, len(pool.members), seed, env_keys, draw_ids)
            out.index_copy_(1, torch.tensor(pool.members, device=out.device), ~joined)
        return out

    def settle(self, positions: torch.Tensor, rotations: torch.Tensor) -> None:
        """In place: every parked object of ``positions`` (B, n, 3) / ``rotations`` (B, n, 4 xyzw) exactly at its
        parking spot with the identity rotation."""
        mask = is_parked(positions)
        park = self.park.to(positions.device, positions.dtype)
        positions.copy_(torch.where(mask[..., None], park[None], positions))
        ident = torch.tensor([0.0, 0.0, 0.0, 1.0], dtype=rotations.dtype, device=rotations.device)
        rotations.copy_(torch.where(mask[..., None], ident, rotations))

    def joined(self, positions: torch.Tensor) -> dict[str, torch.Tensor]:
        """``{pool name: (B, N) bool}``: which members joined each layout of ``positions`` (B, n, 3)."""
        parked = is_parked(positions)
        return {p.name: ~parked[:, list(p.members)] for p in self.pools}

    def start_positions(self, seed: int, env_keys: torch.Tensor, draw_ids: torch.Tensor) -> torch.Tensor:
        """``(B, n, 3)`` start positions of the init kernel: parking spots of parked members, zeros elsewhere."""
        parked = self.parked(seed, env_keys, draw_ids)
        return parked.unsqueeze(-1).to(self.park.dtype) * self.park.to(env_keys.device)


def compile_pools(assets, object_names: list[str], fixed_names: list[str], device: str) -> PoolTables | None:
    """The pool tables of a scene (None without pools). Refuses (``PlacementConfigError``) a member that is not
    placed by relations, or that another asset's relation refers to (it may be parked)."""
    pools = pools_of(assets)
    if not pools:
        return None
    names = {a.name for a in assets}
    member_of = {}
    for pool in pools:
        for m in pool.member_names:
            if m not in names:
                raise PlacementConfigError(f"ObjectPool '{pool.name}': member '{m}' is not among the scene's assets; "
                                           "add every member to the environment's assets")
            if m in fixed_names or m not in object_names:
                raise PlacementConfigError(f"ObjectPool '{pool.name}': member '{m}' is not placed by relations; give "
                                           "it a relation such as On(table) (pool.add_relation adds one to every member)")
            member_of[m] = pool.name
    for a in assets:
        for r in a.get_relations():
            parent = getattr(r, "parent", None)
            if parent is not None and getattr(parent, "name", None) in member_of:
                raise PlacementConfigError(
                    f"asset '{a.name}', relation {type(r).__name__}: its reference '{parent.name}' is a member of pool "
                    f"'{member_of[parent.name]}' and may be parked; relations may only refer to objects that always "
                    "join")
    park = torch.zeros(len(object_names), 3, dtype=torch.float32)
    compiled, slot, flat = [], 0, []
    for pool in pools:
        idx = tuple(object_names.index(m) for m in pool.member_names)
        for k in idx:
            park[k] = torch.tensor(park_position(slot))
            slot += 1
            flat.append(k)
        compiled.append(CompiledPool(pool.name, pool.count, idx, tuple(pool.member_names)))
    return PoolTables(tuple(compiled), park.to(device), torch.tensor(flat, dtype=torch.long, device=device))


def budget_movables(movables) -> list:
    """``movables`` less what never joins together: of each pool, only its ``k_max`` members with the largest XY
    boxes count towards the footprint budget (the worst layout the pool can draw)."""
    dropped = set()
    for pool in pools_of(movables):
        k_max = pool.count[1]
        members = sorted(pool.objects, key=lambda o: -float(o.get_bounding_box().size[0] * o.get_bounding_box().size[1]))
        dropped.update(o.name for o in members[k_max:])
    return [a for a in movables if a.name not in dropped]


def pool_signature(assets) -> tuple:
    """What the compile reads of the pools (part of the placer's cache key)."""
    return tuple((p.name, tuple(p.member_names), p.count) for p in pools_of(assets))


__all__ = ["CompiledPool", "PoolTables", "budget_movables", "compile_pools", "pool_signature"]

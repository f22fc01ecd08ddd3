"""How layouts spread over the free space, against the truth of rejection sampling.

The reference distribution is brute-force rejection sampling: every placed object's origin is drawn uniformly
over the footprint of the anchor it stands On (its height set by the On relation, a uniform yaw when the
placer draws yaws), and a layout is kept when it passes every check (``ObjectPlacer.validate_poses``). The
solver's layouts are compared with it per object and axis:

- ``spread_tv``: the largest total-variation distance between the solver's and the sampler's histograms of
  an object's X or Y over its feasible range (the anchor's footprint inset by the On edge margin and the
  object's half size), 20 bins;
- ``border_frac``: the fraction of (layout, object) origins within 1 mm of the border of that range.

Used by ``scripts/bench_placement.py`` (``bench scene=... spread_tv=... border_frac=...``) and the tests. Only
for scenes whose placed objects all stand On an anchor (rejection sampling is hopeless otherwise).
"""

from __future__ import annotations

import math

import torch

from isaaclab_arena.relations.object_placer import ObjectPlacer
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams
from isaaclab_arena.relations.relations import On

BINS = 20
BORDER_M = 1.0e-3


def feasible_ranges(placer: ObjectPlacer, assets) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per placed object: (lo, hi) of its origin's X/Y over its On anchor's inset footprint ((n, 2) each, metres,
    for the identity rotation), and the origin height its On relation sets ((n,), metres)."""
    problem = placer.compile(assets, 1)
    by_name = {a.name: a for a in assets}
    lo, hi, z = [], [], []
    for name in problem.object_names:
        ons = by_name[name].get_relations_of(On)
        if len(ons) != 1 or not ons[0].parent.is_anchor:
            raise ValueError(f"'{name}' does not stand On an anchor: no rejection-sampling reference")
        on = ons[0]
        k = problem.all_names.index(on.parent.name) - problem.num_objects
        plo, phi = problem.fixed_lo[0, k].double(), problem.fixed_hi[0, k].double()
        j = problem.object_names.index(name)
        olo, ohi = problem.local_lo[0, j].double(), problem.local_hi[0, j].double()
        lo.append(plo[:2] + on.edge_margin_m - olo[:2])
        hi.append(phi[:2] - on.edge_margin_m - ohi[:2])
        z.append(float(phi[2] + on.clearance_m - olo[2]))
    return torch.stack(lo), torch.stack(hi), torch.tensor(z, dtype=torch.float64)


def rejection_layouts(assets, count: int, seed: int = 0, random_yaw: bool = False, chunk: int = 65536,
                      max_draws: int = 50_000_000) -> torch.Tensor:
    """(count, n, 3) float64 origins of layouts drawn uniformly (per object over its anchor's whole footprint)
    and kept when every check passes."""
    placer = ObjectPlacer(ObjectPlacerParams(placement_seed=seed, random_yaw_init=random_yaw,
                                             solver_params=RelationSolverParams(verbose=False)))
    problem = placer.compile(assets, 1)
    lo, hi, z = feasible_ranges(placer, assets)
    n = problem.num_objects
    # draw over the anchor's footprint (wider than the feasible range) so the border itself is not assumed
    pad = (hi - lo).clamp(min=0) * 0.25 + 0.05
    g = torch.Generator().manual_seed(seed)
    kept, drawn = [], 0
    while sum(len(k) for k in kept) < count:
        if drawn >= max_draws:
            raise RuntimeError(f"rejection sampling kept {sum(len(k) for k in kept)} of {count} layouts in "
                               f"{drawn} draws")
        u = torch.rand((chunk, n, 2), generator=g, dtype=torch.float64)
        xy = (lo - pad) + u * ((hi + pad) - (lo - pad))
        pos = torch.cat([xy, z.expand(chunk, n)[..., None]], -1)
        rot = torch.zeros((chunk, n, 4), dtype=torch.float64)
        if random_yaw:
            yaw = (torch.rand((chunk, n), generator=g, dtype=torch.float64) * 2 - 1) * math.pi
            rot[..., 2], rot[..., 3] = torch.sin(yaw / 2), torch.cos(yaw / 2)
        else:
            rot[..., 3] = 1.0
        vb = placer.validate_poses(assets, pos.float(), rot.float())
        kept.append(pos[vb.passed])
        drawn += chunk
    return torch.cat(kept)[:count]


def solver_layouts(assets, count: int, seed: int = 0, random_yaw: bool = False, num_envs: int = 64) -> torch.Tensor:
    """(count', n, 3) float64 origins of the solver's valid layouts for ``count`` candidates over ``num_envs``."""
    placer = ObjectPlacer(ObjectPlacerParams(placement_seed=seed, random_yaw_init=random_yaw,
                                             solver_params=RelationSolverParams(verbose=False)))
    env = torch.arange(count) % num_envs
    draw = torch.arange(count) // num_envs
    vb = placer.place_batch(assets, env, draw, num_envs=num_envs)
    return vb.positions[vb.passed].double()


def spread_tv(solver: torch.Tensor, reference: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor) -> float:
    """Largest total-variation distance over objects and X/Y between histograms of the two sets of origins."""
    worst = 0.0
    for j in range(solver.shape[1]):
        for a in range(2):
            span = max(float(hi[j, a] - lo[j, a]), 1e-9)
            edges = (float(lo[j, a]) - 1e-6, float(lo[j, a]) + span + 1e-6)
            p = torch.histc(solver[:, j, a], BINS, *edges)
            q = torch.histc(reference[:, j, a], BINS, *edges)
            worst = max(worst, 0.5 * float((p / p.sum() - q / q.sum()).abs().sum()))
    return worst


def border_frac(pos: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor) -> float:
    """Fraction of (layout, object) origins within ``BORDER_M`` of their feasible range's border (X or Y)."""
    xy = pos[..., :2]
    near = ((xy - lo).abs() < BORDER_M) | ((hi - xy).abs() < BORDER_M)
    return float(near.any(-1).double().mean())

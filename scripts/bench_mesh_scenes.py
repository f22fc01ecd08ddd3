"""MESH scenes of the placement benchmark (``bench_placement.py``): each scene solved with BBOX and with MESH
collision in one run, on the same assets and batch sizes.

Scenes (the example assets' USD files; every asset's own collision mode is cleared so that the solver-wide
mode decides):
  mesh_tucked    isaaclab_arena_environments/tabletop/mesh_tucked_objects.yaml: five cubes inside the boxes
                 of a shelf, a mug and a bowl (BBOX: no valid layout exists)
  kitchen_mesh   isaaclab_arena_environments/kitchen/kitchen_counter_mesh.yaml: five objects on a counter top
                 (MESH: the background is an obstacle and the sink cut-out unsupported; BBOX: neither)
  mug_bowl_mesh  a mug with a handle and a hollow bowl On the table, random yaw: a movable-movable MESH pair

Prints per (scene, collision, batch):
  bench scene=... collision=bbox|mesh batch=... layouts_per_s=... valid_rate=... valid_layouts_per_s=...
        cpu_layouts_per_s=... spread_pct=... windows=... calls=...
then ``bench scene=... batch=... mesh_vs_bbox=...`` (MESH layouts/s over BBOX layouts/s) and once per scene
``bench scene=... collision=... compile_s=...`` (first compile in the process: mesh extraction, sphere covers and
distance grids, read from the disk cache when warm). A checkout without MESH collision prints ``n/a``.
"""

from __future__ import annotations

import dataclasses
import os
import time

import torch

from bench_timing import sustained_placement

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SPECS = {"mesh_tucked": "isaaclab_arena_environments/tabletop/mesh_tucked_objects.yaml",
         "kitchen_mesh": "isaaclab_arena_environments/kitchen/kitchen_counter_mesh.yaml"}
FULL = [("mesh_tucked", [256, 1024]), ("kitchen_mesh", [256, 1024]), ("mug_bowl_mesh", [256, 1024])]
QUICK = [("mesh_tucked", [64]), ("kitchen_mesh", [64]), ("mug_bowl_mesh", [64])]


def _mug_bowl_mesh():
    from isaaclab_arena.assets.object_reference import ObjectReference
    from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
    from isaaclab_arena.relations.relations import IsAnchor, On
    from isaaclab_arena_environments.assets import library

    background = library.table_background("table_background")
    table = ObjectReference("table", "table", background)
    table.add_relation(IsAnchor())
    mug, bowl = library.mug_with_handle("mug"), library.hollow_bowl("bowl")
    for o in (mug, bowl):
        o.add_relation(On(table, clearance_m=0.0))
    return [background, table, mug, bowl], ObjectPlacerParams(random_yaw_init=True)


def scene(name: str):
    """(assets, placer params) of a MESH benchmark scene."""
    if name == "mug_bowl_mesh":
        return _mug_bowl_mesh()
    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec

    env = ArenaEnvGraphSpec.from_yaml(os.path.join(ROOT, SPECS[name])).to_arena_env()
    return env.get_placement_assets(), env.placer_params


def bench(name: str, batches: list[int], timing: dict, device: str) -> None:
    from isaaclab_arena.relations.object_placer import ObjectPlacer

    rates = {}
    for collision in ("bbox", "mesh"):
        try:
            assets, params = scene(name)
            for a in assets:
                a.collision_mode = None
            sp = dataclasses.replace(params.solver_params, verbose=False, collision_mode=collision)
            placer = ObjectPlacer(dataclasses.replace(params, solver_params=sp, placement_seed=1234))
            t0 = time.perf_counter()
            problem = placer.compile(assets, max(batches), device)
        except (NotImplementedError, ImportError, ValueError) as err:  # a checkout without MESH collision
            print(f"bench scene={name} collision={collision} n/a ({type(err).__name__})", flush=True)
            return
        env = torch.arange(max(batches), device=device)
        placer.place_problem(problem, env, torch.zeros_like(env))
        print(f"bench scene={name} collision={collision} compile_s={time.perf_counter() - t0:.3f}", flush=True)
        draws = [0]
        for b in batches:
            s, rate = sustained_placement(placer, problem, torch.arange(b, device=device), draws, timing)
            rates[(collision, b)] = b / s.median
            print(f"bench scene={name} collision={collision} batch={b} layouts_per_s={b / s.median:.0f} "
                  f"valid_rate={rate:.4f} valid_layouts_per_s={rate * b / s.median:.0f} "
                  f"cpu_layouts_per_s={b / max(s.cpu_median, 1e-12):.0f} {s.keys()}", flush=True)
    for b in batches:
        print(f"bench scene={name} batch={b} mesh_vs_bbox={rates[('mesh', b)] / rates[('bbox', b)]:.3f}", flush=True)

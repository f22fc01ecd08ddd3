"""Cost of the feasibility pre-check (``relations/compiler/feasibility.py``) next to the whole compile it is part of.

Prints one line per benchmark scene (``benchmarks/scenes.py``, with and without random yaw) and shipped YAML
example: ``bench feasibility scene=<name> yaw=<0|1> envs=<E> precheck_ms=<median> compile_ms=<median>``
(medians of ``--repeats`` runs; the compile includes the pre-check). CPU only; run from anywhere:
``scripts/arena_python.sh scripts/bench_feasibility.py``.
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import time

from isaaclab_arena import ARENA_ROOT
from isaaclab_arena.relations.compiler.compile_problem import compile_placement_problem
from isaaclab_arena.relations.compiler.feasibility import find_infeasibilities
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams
from isaaclab_arena.benchmarks.scenes import SCENES


def _median_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def bench(name: str, make, params: ObjectPlacerParams, num_envs: int, repeats: int) -> None:
    assets = make()
    problem = compile_placement_problem(assets, num_envs, 1, params)
    found = find_infeasibilities(problem, assets, params)
    pre = _median_ms(lambda: find_infeasibilities(problem, assets, params), repeats)
    full = _median_ms(lambda: compile_placement_problem(assets, num_envs, 1, params), repeats)
    print(f"bench feasibility scene={name} yaw={int(params.random_yaw_init)} envs={num_envs} precheck_ms={pre:.2f} "
          f"compile_ms={full:.2f} refused={len(found)}", flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--num_envs", type=int, default=64)
    args = ap.parse_args(argv)
    for name, make in SCENES.items():
        for yaw in (False, True):
            params = ObjectPlacerParams(random_yaw_init=yaw, solver_params=RelationSolverParams(verbose=False))
            bench(name, make, params, args.num_envs, args.repeats)
    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec

    for path in sorted(glob.glob(os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "*", "*.yaml"))):
        env = ArenaEnvGraphSpec.from_yaml(path).to_arena_env()
        if any(a.has_placement_relations for a in env.assets):
            name = os.path.splitext(os.path.basename(path))[0]
            bench(name, lambda env=env: env.assets, env.placer_params, args.num_envs, args.repeats)


if __name__ == "__main__":
    main()

"""Per-reset cost of physical property draws at N envs (kit-less OV PhysX, CPU).

One env holds three 10 cm boxes on the ground: 'drawn' (friction, restitution and mass ranges: the arena term),
'stock' (the same ranges through Isaac Lab's randomize_rigid_body_material / randomize_rigid_body_mass terms) and
'bare' (no ranges). Every reset term is timed on its own over all envs (median of --resets resets), so the cost with
and without the draws is the pose term alone vs the pose term plus a property term.

    scripts/arena_python.sh scripts/bench_property_draws.py --num_envs 1024 --resets 15
"""

from __future__ import annotations

import statistics
import time

SPEC = """\
env_name: bench_property_draws
objects:
  - id: drawn
    registry_name: box
    params:
      size: [0.1, 0.1, 0.1]
      initial_pose: {position_xyz: [0.0, 0.0, 0.05]}
      physical_properties: {static_friction: [0.3, 0.9], dynamic_friction: [0.3, 0.9], restitution: [0.0, 0.2],
                            mass_kg: [0.1, 0.5]}
  - id: stock
    registry_name: box
    params: {size: [0.1, 0.1, 0.1], initial_pose: {position_xyz: [0.0, 0.5, 0.05]}}
  - id: bare
    registry_name: box
    params: {size: [0.1, 0.1, 0.1], initial_pose: {position_xyz: [0.0, -0.5, 0.05]}}
"""


def main() -> None:
    from isaaclab_arena.utils.arena_argparse import ArenaArgumentParser

    parser = ArenaArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--num_envs", type=int, default=1024)
    parser.add_argument("--resets", type=int, default=15)
    args = parser.parse_args()

    import os
    import tempfile

    import torch
    from isaaclab.app import launch_simulation

    from isaaclab_arena.env_spec import ArenaEnvGraphSpec
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.environments.property_draws import isaaclab_property_terms

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.yaml")
        with open(path, "w") as f:
            f.write(SPEC)
        arena_env = ArenaEnvGraphSpec.from_yaml(path).to_arena_env()
    ranges = arena_env.get_asset("drawn").physical_property_ranges
    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=args.num_envs, env_spacing=1.5,
                                                            physics="ovphysx", gym_id="bench_property_draws"))
    cfg = builder.compose_manager_cfg()
    isaaclab_property_terms(cfg, "stock", ranges, mode="reset")
    with launch_simulation(cfg, {"headless": True, "device": "cpu"}):
        t0 = time.perf_counter()
        env = builder.make_registered(cfg)
        u = env.unwrapped
        print(f"env with {args.num_envs} envs built in {time.perf_counter() - t0:.1f} s")
        try:
            env.reset()
            ids = torch.arange(args.num_envs, device=u.device)
            times: dict[str, list[float]] = {}
            for _ in range(args.resets):
                for name in u.event_manager.active_terms["reset"]:
                    term = u.event_manager.get_term_cfg(name)
                    t = time.perf_counter()
                    term.func(u, ids, **term.params)
                    times.setdefault(name, []).append(time.perf_counter() - t)
            # breakdown of the arena term: the draw, the material write, the mass + inertia write
            from isaaclab_arena.assets.physical_properties import draw_physical_properties
            from isaaclab_arena.environments.property_draws import property_terms_of

            term = property_terms_of(u)["drawn"]
            cpu_ids = ids.cpu()
            parts = {"  draw (hash)": lambda: draw_physical_properties(term.ranges, 0, "drawn", cpu_ids,
                                                                       term.reset_counts),
                     "  material write": lambda: term._write_material(cpu_ids, drawn),
                     "  mass + inertia write": lambda: term._write_mass(cpu_ids, drawn)}
            drawn = draw_physical_properties(term.ranges, 0, "drawn", cpu_ids, term.reset_counts)
            for _ in range(args.resets):
                for name, fn in parts.items():
                    t = time.perf_counter()
                    fn()
                    times.setdefault(name, []).append(time.perf_counter() - t)
            med = {n: 1e3 * statistics.median(v) for n, v in times.items()}
            print(f"per-reset cost over {args.num_envs} envs, median of {args.resets} resets (ms):")
            for n, v in med.items():
                print(f"  {n:34s} {v:8.3f}")
            pose = med.get("arena_placement", 0.0)
            ours = sum(v for n, v in med.items() if n.startswith("arena_properties_"))  # parts not added
            stock = sum(v for n, v in med.items() if n.startswith("isaaclab_"))
            print(f"reset without draws (pose term): {pose:.3f} ms; with the arena draws of one object: "
                  f"{pose + ours:.3f} ms (+{ours:.3f}); with Isaac Lab's stock terms instead: {pose + stock:.3f} ms "
                  f"(+{stock:.3f})")
        finally:
            env.close()


if __name__ == "__main__":
    main()

"""Writes the layouts of an env spec, solved or recorded, one env or a grid of envs, as a USD stage (nothing is
simulated).

    scripts/arena_python.sh isaaclab_arena/scripts/export_layout_usd.py \\
        --env_spec isaaclab_arena_environments/tabletop/mug_bowl_table.yaml --placement_seed 7 --num_envs 16 \\
        --output outputs/mug_bowl_16.usda

Flags mean what they mean for environment_runner.py: each env gets the layout of its first reset (the solver's
with --placement_seed, or a seed drawn and recorded in the stage; recorded layouts i % N in env order with
--placement_layouts), env origins lie on Isaac Lab's grid for --num_envs and --env_spacing (default: the spec's,
else 1 env and a spacing derived from the scene). --env_ids writes only some envs, each at its place in the grid.
The stage holds /World/envs/env_<i>/<scene key> prims referencing prototypes authored once under /Prototypes
(docs/RECORD_REPLAY.md, "Export a layout as USD"). Paths are taken from the working directory. The output must not
exist (never overwritten); it is written to a temporary file beside it and renamed into place.

Exit status: 0 written; 2 refused input (one line ``error: ...``, nothing written); 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

if __name__ == "__main__":  # Ctrl-C during start-up (imports take seconds): one line, no traceback
    import _signal  # loaded with the interpreter (importing ``signal`` runs Python code a Ctrl-C can land in)

    _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGINT})  # held until quiet_interrupts() has its handler
    from isaaclab_arena.utils.interrupts import quiet_interrupts
    from isaaclab_arena.utils.runner_gc import collect_rarely, skip_collection_at_exit

    quiet_interrupts()
    collect_rarely()  # full garbage collections 100x rarer: 0.5-1.5 s less per run (utils/runner_gc.py)
    skip_collection_at_exit()  # and none at exit: about 1 s less

import argparse
import math
import os
import sys


def _parser():
    from isaaclab_arena.environments.cli import env_selection
    from isaaclab_arena.utils.arena_argparse import ArenaArgumentParser

    p = ArenaArgumentParser(description=__doc__.split("\n\n")[0], prog="export_layout_usd.py",
                            epilog=__doc__.split("\n\n", 2)[2], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env_spec", required=True, help="environment YAML (ArenaEnvGraphSpec), from the working directory")
    p.add_argument("--output", required=True, help="stage to write: .usda (text), .usd or .usdc (binary); must not exist")
    p.add_argument("--placement_seed", type=int, default=None,
                   help="placement seed of the solved layouts (default: the spec's, else one is drawn and recorded)")
    p.add_argument("--placement_layouts", default=None,
                   help="recorded layouts (JSONL) to export instead of solving; env i gets layout i %% N")
    p.add_argument("--num_envs", type=int, default=None, help="envs of the layouts (> 0; default: the spec's, else 1)")
    p.add_argument("--env_ids", type=env_selection, default=None, metavar="ENVS",
                   help="envs to write, e.g. 0-3 or 0,5,9 (default: every env); each keeps its grid origin")
    p.add_argument("--env_spacing", type=float, default=None,
                   help="metres between env origins (>= 0; default: the spec's, else derived from the scene)")
    p.add_argument("--relative_asset_paths", action="store_true",
                   help="reference asset files relative to the output's folder (default: absolute paths)")
    p.add_argument("--verbose", action="store_true", help="also print the simulator libraries' start-up messages")
    return p


def _check(parser, args) -> None:
    """Refusals that need nothing loaded (one line, exit 2)."""
    from isaaclab_arena.export.layout_usd import check_output_path
    from isaaclab_arena.utils.shipped_paths import shipped_path, where_paths_are_looked_for

    try:
        check_output_path(args.output)
    except (ValueError, FileExistsError) as err:
        parser.error(str(err).replace("output ", "--output ", 1))
    if args.placement_seed is not None and args.placement_layouts is not None:
        parser.error("give --placement_seed (solve) or --placement_layouts (recorded), not both")
    if args.num_envs is not None and args.num_envs <= 0:
        parser.error(f"--num_envs must be > 0, got {args.num_envs}")
    if args.env_spacing is not None and not (math.isfinite(args.env_spacing) and args.env_spacing >= 0):
        parser.error(f"--env_spacing must be a number of metres >= 0, got {args.env_spacing}")
    if args.placement_layouts is not None:
        given, args.placement_layouts = args.placement_layouts, shipped_path(args.placement_layouts)
        if not os.path.isfile(args.placement_layouts):
            parser.error(f"--placement_layouts {given}: no such file ({where_paths_are_looked_for()})")
    given, args.env_spec = args.env_spec, shipped_path(args.env_spec)
    if not os.path.isfile(args.env_spec):
        parser.error(f"--env_spec {given}: no such file ({where_paths_are_looked_for()})")


def main(argv: list[str] | None = None):
    """Runs the export; returns the ``LayoutUsdExport``. Refused input raises (``ValueError``, ...)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    args = parser.parse_args(argv)
    _check(parser, args)
    from isaaclab_arena.environments.quiet_output import held_output, quiet_warp_init

    quiet_warp_init(args.verbose)
    with held_output(args.verbose):  # Isaac Lab's import-time messages
        from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec
        from isaaclab_arena.export.env_layouts import export_arena_env_usd
    from isaaclab_arena.utils.runner_gc import freeze_imports

    freeze_imports()  # no later collection walks the imported modules' objects (utils/runner_gc.py)

    arena_env = ArenaEnvGraphSpec.from_yaml(args.env_spec).to_arena_env()
    num_envs = args.num_envs or arena_env.num_envs or 1
    if args.env_ids is not None and max(args.env_ids) >= num_envs:
        raise ValueError(f"--env_ids {','.join(map(str, args.env_ids))}: env {max(args.env_ids)} does not exist "
                         f"(--num_envs {num_envs}: envs 0-{num_envs - 1})")
    done = export_arena_env_usd(arena_env, args.output, num_envs=num_envs, env_ids=args.env_ids,
                                env_spacing=args.env_spacing, placement_seed=args.placement_seed,
                                placement_layouts=args.placement_layouts,
                                relative_asset_paths=args.relative_asset_paths)
    per_env = len(done.prims)
    print(f"[export] {arena_env.name}: {len(done.env_ids)} of {done.num_envs} envs, {per_env} prims each, "
          f"{len(done.prototypes)} prototypes, env spacing {done.env_spacing:g} m", flush=True)
    print(f"[export] layouts: {done.source}", flush=True)
    if done.unwritten_settings:
        print(f"[export] spawner settings the stage does not carry: {', '.join(done.unwritten_settings)}", flush=True)
    print(f"Exported {done.path} ({done.size_bytes:,} bytes)", flush=True)
    return done


if __name__ == "__main__":
    from isaaclab_arena.environments.cli import run_main_reporting_user_errors

    run_main_reporting_user_errors(main, sys.argv[1:])

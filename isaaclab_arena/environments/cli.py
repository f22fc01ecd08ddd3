"""The shared command-line parser of the Arena runners and its mapping to ``ArenaEnvBuilderCfg``.

``--num_envs`` and ``--env_spacing`` default to None: the env builder then takes the spec's (YAML ``num_envs`` /
``env_spacing``), else 1 env and a spacing derived from the scene (``environments/env_spacing.py``).
Flags are never matched by prefix (``allow_abbrev=False``): ``--num_env 4`` is refused, not read as ``--num_envs``.
"""

from __future__ import annotations

import argparse
import os
import sys

from isaaclab_arena.environments.physics import PHYSICS_CHOICES


def get_isaaclab_arena_cli_parser(description: str | None = None) -> argparse.ArgumentParser:
    """Flags shared by ``environment_runner.py`` and ``policy_runner.py`` (runner flags precede an env name)."""
    p = argparse.ArgumentParser(description=description, allow_abbrev=False)
    p.add_argument("--num_envs", type=int, default=None,
                   help="parallel environments (> 0; default: the spec's num_envs, else 1)")
    p.add_argument("--env_spacing", type=float, default=None,
                   help="distance between env origins, metres (> 0; default: the spec's env_spacing, else derived "
                        "from the scene's extent: 2.5 m for the tabletop examples)")
    p.add_argument("--seed", type=int, default=42, help="simulation seed (independent of placement)")
    p.add_argument("--placement_seed", type=int, default=None, help="placement seed (layouts and object-set picks)")
    p.add_argument("--no_solve_relations", dest="solve_relations", action="store_false",
                   help="skip the solver: objects keep their initial poses")
    p.add_argument("--resolve_on_reset", action=argparse.BooleanOptionalAction, default=None,
                   help="draw a fresh pooled layout at every reset (default True)")
    p.add_argument("--env_spec", default=None, help="environment YAML (ArenaEnvGraphSpec)")
    p.add_argument("--embodiment", default=None, metavar="REGISTRY_NAME",
                   help="robot by embodiment registry name (e.g. franka_panda): replaces the spec's "
                        "embodiment.registry_name, or the registered environment's robot")
    p.add_argument("--placement_layouts", default=None, help="recorded layouts (JSONL) to replay instead of solving")
    p.add_argument("--device", default="cpu", help="cpu or cuda:0")
    p.add_argument("--physics", default=None, choices=PHYSICS_CHOICES, help="physics backend (default ovphysx)")
    p.add_argument("--presets", default=None, choices=("physx", "newton"),
                   help="physics preset: physx -> ovphysx, newton -> newton_mjwarp")
    p.add_argument("--viz", default="none", choices=("kit", "none"), help="viewer (kit needs Isaac Sim and a display)")
    p.add_argument("--num_steps", type=int, default=100, help="env steps to run")
    p.add_argument("--output_dir", default="outputs/arena", help="diagnostics, pictures and summaries go here")
    p.add_argument("--episode_length_s", type=float, default=None, help="episode length before a time-out reset, s")
    p.add_argument("--pictures", action=argparse.BooleanOptionalAction, default=True,
                   help="write a top-down PNG of the placed layouts into the output dir")
    p.add_argument("--debug_visualize", action="store_true",
                   help="log every candidate batch to the Rerun debug view (needs rerun-sdk: scripts/arena_python.sh "
                        "-m isaaclab_arena.debug.rerun_import); without a display: <output_dir>/placement_debug.rrd")
    p.add_argument("--debug_visualize_output_path", default=None,
                   help="write the Rerun debug recording (.rrd) to this file (turns the debug view on)")
    return p


def builder_cfg_from_args(args: argparse.Namespace, **overrides):
    """``ArenaEnvBuilderCfg`` from parsed runner flags (keyword overrides win)."""
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilderCfg

    physics = args.physics
    if physics is None and args.presets is not None:
        physics = {"physx": "ovphysx", "newton": "newton_mjwarp"}[args.presets]
    if args.viz == "kit":
        raise SystemExit("--viz kit needs Isaac Sim (Kit) and a display; this install is kit-less. Use --viz none.")
    kw = dict(num_envs=args.num_envs, env_spacing=args.env_spacing, device=args.device, physics=physics,
              seed=args.seed, placement_seed=args.placement_seed, solve_relations=args.solve_relations,
              resolve_on_reset=args.resolve_on_reset, placement_layouts_path=args.placement_layouts,
              output_dir=args.output_dir)
    if args.episode_length_s is not None:
        kw["episode_length_s"] = args.episode_length_s
    path = getattr(args, "debug_visualize_output_path", None)
    if getattr(args, "debug_visualize", False) or path:
        if path is None and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            path = os.path.join(args.output_dir, "placement_debug.rrd")
        kw.update(debug_visualize=True, debug_visualize_output_path=path)
    kw.update(overrides)
    return ArenaEnvBuilderCfg(**kw)


def run_main_reporting_user_errors(main, argv: list[str]) -> None:
    """Runs a runner's ``main(argv)``; a refused input (bad spec, relation, layout file, pool that cannot be
    filled) ends the process with ``error: <message>`` on stderr and exit status 2 instead of a traceback.

    ``main`` itself still raises, so Python callers and tests see the exceptions.
    """
    from isaaclab_arena.adapters.asset_registry import UnknownAssetError
    from isaaclab_arena.debug.rerun_import import DebugViewerUnavailableError
    from isaaclab_arena.relations.placement_problem import MeshCollisionNotAvailableError

    try:
        main(argv)
    except (ValueError, KeyError, FileNotFoundError, UnknownAssetError, MeshCollisionNotAvailableError,
            DebugViewerUnavailableError) as err:
        msg = err.args[0] if isinstance(err, KeyError) and err.args else str(err)
        print(f"error: {msg}", file=sys.stderr)
        raise SystemExit(2) from None
    except RuntimeError as err:  # e.g. the placement pool could not be filled without fallbacks
        if "Placement pool" not in str(err):
            raise
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(2) from None

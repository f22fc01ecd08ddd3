"""The shared command-line parser of the Arena runners and its mapping to ``ArenaEnvBuilderCfg``.

``--num_envs`` and ``--env_spacing`` default to None: the env builder then takes the spec's (YAML ``num_envs`` /
``env_spacing``), else 1 env and a spacing derived from the scene (``environments/env_spacing.py``).
Flags are never matched by prefix (``allow_abbrev=False``): ``--num_env 4`` is refused, not read as ``--num_envs``.
Paths (``--env_spec``, ``--placement_layouts``, ``--output_dir``) are taken from the caller's working directory.

This module imports only argparse at load time, so ``--help`` answers without loading torch or Isaac Lab.
"""

from __future__ import annotations

import argparse
import os
import sys

from isaaclab_arena.environments.physics import PHYSICS_CHOICES
from isaaclab_arena.utils.arena_argparse import ArenaArgumentParser
from isaaclab_arena.utils.interrupts import stop_signal_of, stop_status
from isaaclab_arena.utils.shipped_paths import shipped_path, where_paths_are_looked_for


class ListAssetsAction(argparse.Action):
    """``--list_assets``: prints every registered asset (name, kind, size in m, collision, parameters) and exits,
    like ``--help``: before any other flag is checked, so no ``--env_spec`` or env name is needed.

    Exit status 0; 1 when an entry could not be described (the table names it and why). Loads the asset registry
    (spawner configs, pxr for USD bounds) only when the flag is given; starts no simulation.
    """

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, nargs=0, default=default, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from isaaclab_arena.adapters.asset_catalog import build_catalog, format_table

        records = build_catalog(strict=False)
        status = 1 if any(r.problem is not None for r in records) else 0
        try:
            print(format_table(records), flush=True)
        except BrokenPipeError:  # piped into head: the reader has what it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        parser.exit(status)


def get_isaaclab_arena_cli_parser(description: str | None = None, env_spec: bool = True,
                                  **parser_kw) -> argparse.ArgumentParser:
    """Flags shared by ``environment_runner.py`` and ``policy_runner.py`` (runner flags precede an env name).

    ``env_spec=False`` leaves out ``--env_spec`` (runners of registered Python environments).
    """
    p = ArenaArgumentParser(description=description, **parser_kw)
    p.add_argument("--list_assets", action=ListAssetsAction,
                   help="print every registered asset (YAML registry_name) with its kind, size (m), collision mode and "
                        "parameters, then exit (docs/ASSETS.md shows them with pictures)")
    p.add_argument("--num_envs", type=int, default=None,
                   help="parallel environments (> 0; default: the spec's num_envs, else 1)")
    p.add_argument("--env_spacing", type=float, default=None,
                   help="distance between env origins, metres (>= 0: 0 puts every env at one origin, Isaac Lab keeps them from "
                        "colliding; default: the spec's env_spacing, else derived "
                        "from the scene's extent: 2.5 m for the tabletop examples)")
    p.add_argument("--seed", type=int, default=42, help="simulation seed (independent of placement)")
    p.add_argument("--placement_seed", type=int, default=None, help="placement seed (layouts and object-set picks)")
    p.add_argument("--no_solve_relations", dest="solve_relations", action="store_false",
                   help="skip the solver: objects keep their initial poses")
    p.add_argument("--resolve_on_reset", action=argparse.BooleanOptionalAction, default=None,
                   help="draw a fresh pooled layout at every reset (default True)")
    if env_spec:
        p.add_argument("--env_spec", default=None, help="environment YAML (ArenaEnvGraphSpec), from the working directory")
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
    p.add_argument("--output_dir", default=os.path.join("outputs", "arena"),
                   help="diagnostics, pictures and run_summary.json go here (default: ./outputs/arena in the working "
                        "directory)")
    p.add_argument("--episode_length_s", type=float, default=None, help="episode length before a time-out reset, s")
    p.add_argument("--pictures", action=argparse.BooleanOptionalAction, default=True,
                   help="write a top-down PNG of the placed layouts into the output dir")
    p.add_argument("--debug_visualize", action="store_true",
                   help="log every candidate batch to the Rerun debug view (rerun-sdk, in requirements.txt); "
                        "without a display: <output_dir>/placement_debug.rrd")
    p.add_argument("--debug_visualize_output_path", default=None,
                   help="write the Rerun debug recording (.rrd) to this file (turns the debug view on)")
    p.add_argument("--picture_envs", type=env_selection, default=None, metavar="ENVS",
                   help="envs drawn in the picture, e.g. 0-15 or 3,17,100-103 (default: the first 16)")
    p.add_argument("--verbose", action="store_true",
                   help="also print Isaac Lab's manager tables and the simulator's start-up messages")
    return p


def env_selection(text: str) -> list[int]:
    """``"0-3,7"`` -> ``[0, 1, 2, 3, 7]`` (env indices, >= 0, in the order given, no repeats)."""
    out: list[int] = []
    for part in text.split(","):
        lo, sep, hi = part.strip().partition("-")
        try:
            ids = range(int(lo), int(hi) + 1) if sep else [int(lo)]
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: give env indices like 0-15 or 3,17,100-103") from None
        if (sep and int(hi) < int(lo)) or int(lo) < 0:
            raise argparse.ArgumentTypeError(f"{text!r}: ranges go low-high and indices are >= 0")
        out += [i for i in ids if i not in out]
    return out


def check_runner_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuses (one line, exit 2) values the shared flags cannot take and a backend or device this install cannot
    run, before anything expensive is loaded."""
    if args.num_envs is not None and args.num_envs <= 0:
        parser.error(f"--num_envs must be > 0, got {args.num_envs}")
    if args.env_spacing is not None and not args.env_spacing >= 0:
        parser.error(f"--env_spacing must be a number of metres >= 0 (0 puts every env at one origin), got "
                     f"{args.env_spacing}")
    if args.num_steps < 0:
        parser.error(f"--num_steps must be >= 0, got {args.num_steps}")
    if args.viz == "kit":
        parser.error("--viz kit needs Isaac Sim (Kit) and a display; this install is kit-less. Use --viz none.")
    if args.placement_layouts is not None:
        given, args.placement_layouts = args.placement_layouts, shipped_path(args.placement_layouts)
        if not os.path.isfile(args.placement_layouts):
            parser.error(f"--placement_layouts {given}: no such file ({where_paths_are_looked_for()})")
    output_dir = getattr(args, "output_dir", None)
    blocker = _file_in_the_way(output_dir) if output_dir else None
    if blocker is not None:
        what = "is an existing file" if blocker == os.path.abspath(output_dir) else f"is under {blocker}, a file"
        parser.error(f"--output_dir {output_dir} {what}, not a folder; give a folder (it is created when missing)")
    check_backend_flags(parser, args.physics, args.presets, args.device)


def _file_in_the_way(path: str) -> str | None:
    """The existing non-folder at ``path`` or above it (which would stop ``os.makedirs``), else None."""
    here = os.path.abspath(os.path.expanduser(path))
    while True:
        if os.path.exists(here):
            return None if os.path.isdir(here) else here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def check_backend_flags(parser: argparse.ArgumentParser, physics: str | None, presets: str | None,
                        device: str) -> None:
    """Refuses (``parser.error``) a backend or device this install cannot run; cheap (no simulator import)."""
    from isaaclab_arena.environments.physics import check_backend_available

    chosen = physics or {"physx": "ovphysx", "newton": "newton_mjwarp"}.get(presets or "", "ovphysx")
    try:
        check_backend_available(chosen, device)
    except (ValueError, RuntimeError) as err:
        parser.error(str(err))


def chosen_physics(args: argparse.Namespace) -> str | None:
    """``--physics``, else the backend ``--presets`` names, else None (the environment's or the default)."""
    if args.physics is not None:
        return args.physics
    return None if args.presets is None else {"physx": "ovphysx", "newton": "newton_mjwarp"}[args.presets]


def builder_cfg_from_args(args: argparse.Namespace, **overrides):
    """``ArenaEnvBuilderCfg`` from parsed runner flags (keyword overrides win)."""
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilderCfg

    physics = chosen_physics(args)
    if args.viz == "kit":
        raise SystemExit("--viz kit needs Isaac Sim (Kit) and a display; this install is kit-less. Use --viz none.")
    kw = dict(num_envs=args.num_envs, env_spacing=args.env_spacing, device=args.device, physics=physics,
              seed=args.seed, placement_seed=args.placement_seed, solve_relations=args.solve_relations,
              resolve_on_reset=args.resolve_on_reset, placement_layouts_path=_absolute(args.placement_layouts),
              output_dir=_absolute(args.output_dir))
    if args.episode_length_s is not None:
        kw["episode_length_s"] = args.episode_length_s
    path = getattr(args, "debug_visualize_output_path", None)
    if getattr(args, "debug_visualize", False) or path:
        if path is None and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            path = os.path.join(args.output_dir, "placement_debug.rrd")
            print(f"[arena] debug view: no display (DISPLAY / WAYLAND_DISPLAY is not set), so no viewer opens; the "
                  f"Rerun recording goes to {_absolute(path)}", flush=True)
        kw.update(debug_visualize=True, debug_visualize_output_path=path)
    kw.update(overrides)
    return ArenaEnvBuilderCfg(**kw)


def _absolute(path: str | None) -> str | None:
    return None if path is None else os.path.abspath(os.path.expanduser(path))


def run_main_reporting_user_errors(main, argv: list[str]) -> None:
    """Runs a runner's ``main(argv)``; a refused input (bad spec, relation, layout file, pool that cannot be
    filled) ends the process with ``error: <message>`` on stderr and exit status 2 instead of a traceback;
    Ctrl-C ends it with one ``interrupted`` line and status 130 (a SIGTERM noted and raised at a check, 143), and so
    does an error raised after a Ctrl-C that a library swallowed where it landed (``interrupts.stop_signal_of``).

    ``main`` itself still raises, so Python callers and tests see the exceptions.
    """
    try:
        main(argv)
    except KeyboardInterrupt as stop:  # Ctrl-C, or a stop signal noted and raised at a check (StopRequested)
        print("interrupted", file=sys.stderr)
        raise SystemExit(stop_status(stop_signal_of(stop))) from None
    except Exception as err:  # noqa: BLE001 - classified below; anything else keeps its traceback
        stop = stop_signal_of(err)
        if stop is not None:  # a Ctrl-C a library swallowed where it landed, and the error it caused
            print("interrupted", file=sys.stderr)
            raise SystemExit(stop_status(stop)) from None
        if not is_user_error(err):
            raise
        msg = err.args[0] if isinstance(err, KeyError) and err.args else str(err)
        print(f"error: {msg or type(err).__name__}", file=sys.stderr)
        raise SystemExit(2) from None


def is_user_error(err: BaseException) -> bool:
    """Refused input (exit 2) rather than a bug: bad values, missing files, unknown names, a pool that cannot be
    filled, a backend or device this install cannot run."""
    from isaaclab_arena.adapters.asset_registry import UnknownAssetError
    from isaaclab_arena.debug.rerun_import import DebugViewerUnavailableError

    if isinstance(err, (ValueError, KeyError, FileNotFoundError, FileExistsError, UnknownAssetError,
                        DebugViewerUnavailableError)):
        return True
    text = str(err)
    return isinstance(err, RuntimeError) and ("Placement pool" in text or "needs Isaac Sim" in text
                                              or "no CUDA GPU" in text)

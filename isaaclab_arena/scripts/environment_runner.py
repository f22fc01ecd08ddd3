"""Builds an Arena environment from a YAML spec, resets, steps and prints what was placed (kit-less, CPU ok).

    scripts/arena_python.sh isaaclab_arena/scripts/environment_runner.py \\
        --env_spec isaaclab_arena_environments/tabletop/fixed_pose_table.yaml --num_envs 4 --num_steps 60

Paths are taken from your working directory; outputs go to ./outputs/arena unless --output_dir says otherwise.
A run without --placement_seed (and without placer_params.placement_seed in the spec) draws one, prints it and
saves it in run_summary.json with the command line that reproduces the run.

A spec's ``cli_override_specs`` add flags after ``--env_spec`` is read: ``{arg: object, target_node_id: mug}``
gives ``--object <registry name>``, which swaps node ``mug``'s ``registry_name``. The spec's ``num_envs`` and
``env_spacing`` are used unless ``--num_envs`` / ``--env_spacing`` are given; ``--embodiment <registry name>``
replaces the registry name of the spec's ``embodiment`` node.
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
import os
import sys


def main(argv: list[str] | None = None) -> dict:
    argv = list(sys.argv[1:] if argv is None else argv)
    from isaaclab_arena.environments.cli import check_backend_flags, check_runner_args, get_isaaclab_arena_cli_parser

    parser = get_isaaclab_arena_cli_parser(__doc__.split("\n\nA spec's")[0], prog="environment_runner.py",
                                           formatter_class=argparse.RawDescriptionHelpFormatter)
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    for flag in ("--env_spec", "--physics", "--presets"):
        pre.add_argument(flag, default=None)
    pre.add_argument("--device", default="cpu")
    early, _ = pre.parse_known_args(argv)
    spec = None
    if early.env_spec:
        # backend and device first: nothing is loaded for a run this install cannot do
        check_backend_flags(parser, early.physics, early.presets, early.device)
        from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec
        from isaaclab_arena.env_spec.cli_override_spec import add_cli_override_flags

        spec = ArenaEnvGraphSpec.from_yaml(early.env_spec)
        add_cli_override_flags(parser, spec)  # cli_override_specs: e.g. --object <registry name>
    args = parser.parse_args(argv)
    if args.env_spec is None:
        parser.error("--env_spec <scene.yaml> is required")
    check_runner_args(parser, args)
    from isaaclab_arena.env_spec.cli_override_spec import cli_override_values
    from isaaclab_arena.environments.cli import builder_cfg_from_args
    from isaaclab_arena.environments.quiet_output import held_output, quiet_warp_init

    quiet_warp_init(args.verbose)
    with held_output(args.verbose):  # Isaac Lab's import-time messages
        from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder
        from isaaclab_arena.environments.run_loop import run
    from isaaclab_arena.utils.runner_gc import freeze_imports

    freeze_imports()  # no later collection walks the imported modules' objects (utils/runner_gc.py)

    spec = spec.apply_cli_overrides(cli_override_values(args, spec))
    if args.embodiment is not None:  # --embodiment: another robot in the spec's embodiment node
        from isaaclab_arena.env_spec.cli_override_spec import override_embodiment

        spec = override_embodiment(spec, args.embodiment)
    arena_env = spec.to_arena_env()
    builder = ArenaEnvBuilder(arena_env, builder_cfg_from_args(args))
    return run(builder, args.num_steps, args.output_dir, pictures=args.pictures, picture_envs=args.picture_envs,
               verbose=args.verbose, command=[os.path.abspath(__file__), *argv])


if __name__ == "__main__":
    from isaaclab_arena.environments.cli import run_main_reporting_user_errors

    run_main_reporting_user_errors(main, sys.argv[1:])

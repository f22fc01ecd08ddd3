"""Builds an Arena environment from a YAML spec, resets, steps and prints what was placed (kit-less, CPU ok).

    scripts/arena_python.sh isaaclab_arena/scripts/environment_runner.py \\
        --env_spec isaaclab_arena_environments/tabletop/fixed_pose_table.yaml --num_envs 4 --num_steps 60

A spec's ``cli_override_specs`` add flags after ``--env_spec`` is read: ``{arg: object, target_node_id: mug}``
gives ``--object <registry name>``, which swaps node ``mug``'s ``registry_name``. The spec's ``num_envs`` and
``env_spacing`` are used unless ``--num_envs`` / ``--env_spacing`` are given; ``--embodiment <registry name>``
replaces the registry name of the spec's ``embodiment`` node.
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> dict:
    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec
    from isaaclab_arena.env_spec.cli_override_spec import add_cli_override_flags, cli_override_values
    from isaaclab_arena.environments.cli import builder_cfg_from_args, get_isaaclab_arena_cli_parser

    parser = get_isaaclab_arena_cli_parser(__doc__.splitlines()[0])
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    pre.add_argument("--env_spec", default=None)
    spec_path = pre.parse_known_args(argv)[0].env_spec
    spec = ArenaEnvGraphSpec.from_yaml(spec_path) if spec_path else None
    if spec is not None:
        add_cli_override_flags(parser, spec)  # cli_override_specs: e.g. --object <registry name>
    args = parser.parse_args(argv)
    if args.env_spec is None:
        parser.error("--env_spec <scene.yaml> is required")
    if args.num_envs is not None and args.num_envs <= 0:
        parser.error(f"--num_envs must be > 0, got {args.num_envs}")
    if args.env_spacing is not None and not args.env_spacing > 0:
        parser.error(f"--env_spacing must be a number of metres > 0, got {args.env_spacing}")
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder
    from isaaclab_arena.environments.run_loop import run

    spec = spec.apply_cli_overrides(cli_override_values(args, spec))
    if args.embodiment is not None:  # --embodiment: another robot in the spec's embodiment node
        from isaaclab_arena.env_spec.cli_override_spec import override_embodiment

        spec = override_embodiment(spec, args.embodiment)
    arena_env = spec.to_arena_env()
    builder = ArenaEnvBuilder(arena_env, builder_cfg_from_args(args))
    return run(builder, args.num_steps, args.output_dir, pictures=args.pictures)


if __name__ == "__main__":
    from isaaclab_arena.environments.cli import run_main_reporting_user_errors

    run_main_reporting_user_errors(main, sys.argv[1:])

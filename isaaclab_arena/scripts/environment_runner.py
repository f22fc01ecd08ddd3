"""Builds an Arena environment from a YAML spec, resets, steps and prints what was placed (kit-less, CPU ok).

    scripts/arena_python.sh isaaclab_arena/scripts/environment_runner.py \\
        --env_spec isaaclab_arena_environments/tabletop/fixed_pose_table.yaml --num_envs 4 --num_steps 60
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> dict:
    from isaaclab_arena.environments.cli import builder_cfg_from_args, get_isaaclab_arena_cli_parser

    parser = get_isaaclab_arena_cli_parser(__doc__.splitlines()[0])
    args = parser.parse_args(argv)
    if args.env_spec is None:
        parser.error("--env_spec <scene.yaml> is required")
    if args.num_envs <= 0:
        parser.error(f"--num_envs must be > 0, got {args.num_envs}")
    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder
    from isaaclab_arena.environments.run_loop import run

    arena_env = ArenaEnvGraphSpec.from_yaml(args.env_spec).to_arena_env()
    builder = ArenaEnvBuilder(arena_env, builder_cfg_from_args(args))
    return run(builder, args.num_steps, args.output_dir, pictures=args.pictures)


if __name__ == "__main__":
    from isaaclab_arena.environments.cli import run_main_reporting_user_errors

    run_main_reporting_user_errors(main, sys.argv[1:])

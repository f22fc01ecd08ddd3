"""Runs a policy in a registered Python environment (kit-less, CPU ok).

    scripts/arena_python.sh isaaclab_arena/evaluation/policy_runner.py --policy_type zero_action --seed 42 \\
        --placement_seed 42 --num_steps 100 table_pick_and_place --additional_table_objects cube_8cm

Runner flags (shared parser, spec section 9) precede the environment name; environment flags follow it.
Recorded layouts replay with ``--placement_layouts layouts.jsonl`` placed before the environment name.
"""

from __future__ import annotations

import argparse
import sys

POLICY_TYPES = ("zero_action",)


def make_parser() -> argparse.ArgumentParser:
    from isaaclab_arena.environments.cli import get_isaaclab_arena_cli_parser

    parser = get_isaaclab_arena_cli_parser(__doc__.splitlines()[0])
    parser.add_argument("--policy_type", default="zero_action", choices=POLICY_TYPES)
    parser.add_argument("--num_episodes", type=int, default=None, help="(not used by zero_action; steps bound the run)")
    parser.add_argument("env_name", nargs="?", default=None, help="registered environment (runner flags before it)")
    parser.add_argument("env_args", nargs=argparse.REMAINDER, help="the environment's own flags")
    return parser


def build_from_args(argv: list[str]):
    """Parses runner flags, the registered env name and its flags; returns ``(builder, args)``.

    Unknown environment names and bad flags exit with a message naming what was wrong and what is accepted.
    """
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder
    from isaaclab_arena.environments.cli import builder_cfg_from_args
    from isaaclab_arena_environments.registered import REGISTERED_ENVIRONMENTS, get_registered_environment

    parser = make_parser()
    args = parser.parse_args(argv)
    if args.env_name is None:
        parser.error(f"name a registered environment after the runner flags; registered: {sorted(REGISTERED_ENVIRONMENTS)}")
    if args.env_spec is not None:
        parser.error("policy_runner.py runs registered Python environments; use environment_runner.py --env_spec for YAML")
    try:
        add_args, build = get_registered_environment(args.env_name)
    except KeyError as err:
        parser.error(str(err.args[0]))
    env_parser = argparse.ArgumentParser(prog=f"policy_runner.py ... {args.env_name}")
    add_args(env_parser)
    env_args = env_parser.parse_args(args.env_args)
    builder = ArenaEnvBuilder(build(env_args), builder_cfg_from_args(args))
    return builder, args


def main(argv: list[str] | None = None) -> dict:
    from isaaclab_arena.environments.run_loop import run

    builder, args = build_from_args(list(sys.argv[1:] if argv is None else argv))
    return run(builder, args.num_steps, args.output_dir, pictures=args.pictures)


if __name__ == "__main__":
    from isaaclab_arena.environments.cli import run_main_reporting_user_errors

    run_main_reporting_user_errors(main, sys.argv[1:])

"""Runs a policy in a registered Python environment (kit-less, CPU ok).

    scripts/arena_python.sh isaaclab_arena/evaluation/policy_runner.py --policy_type zero_action --seed 42 \\
        --placement_seed 42 --num_steps 100 table_pick_and_place --additional_table_objects cube_8cm

Runner flags (shared parser, spec section 9) precede the environment name; environment flags follow it.
"""

from __future__ import annotations

import argparse
import sys

POLICY_TYPES = ("zero_action",)


def _split(argv: list[str], names: list[str]) -> tuple[list[str], str | None, list[str]]:
    for i, a in enumerate(argv):
        if not a.startswith("-") and (i == 0 or not argv[i - 1].startswith("--") or argv[i - 1] in _FLAGS_NO_VALUE):
            return argv[:i], a, argv[i + 1:]
    return argv, None, []


_FLAGS_NO_VALUE = {"--no_solve_relations", "--resolve_on_reset", "--no-resolve_on_reset", "--pictures", "--no-pictures"}


def main(argv: list[str] | None = None) -> dict:
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder
    from isaaclab_arena.environments.cli import builder_cfg_from_args, get_isaaclab_arena_cli_parser
    from isaaclab_arena.environments.run_loop import run
    from isaaclab_arena_environments.registered import REGISTERED_ENVIRONMENTS, get_registered_environment

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = get_isaaclab_arena_cli_parser(__doc__.splitlines()[0])
    parser.add_argument("--policy_type", default="zero_action", choices=POLICY_TYPES)
    parser.add_argument("--num_episodes", type=int, default=None, help="(not used by zero_action; steps bound the run)")
    runner_argv, env_name, env_argv = _split(argv, list(REGISTERED_ENVIRONMENTS))
    args = parser.parse_args(runner_argv)
    if env_name is None:
        parser.error(f"name a registered environment after the runner flags; registered: {sorted(REGISTERED_ENVIRONMENTS)}")
    try:
        add_args, build = get_registered_environment(env_name)
    except KeyError as err:
        parser.error(str(err.args[0]))
    env_parser = argparse.ArgumentParser(prog=env_name)
    add_args(env_parser)
    env_args = env_parser.parse_args(env_argv)
    arena_env = build(env_args)
    builder = ArenaEnvBuilder(arena_env, builder_cfg_from_args(args))
    return run(builder, args.num_steps, args.output_dir, pictures=args.pictures)


if __name__ == "__main__":
    main()

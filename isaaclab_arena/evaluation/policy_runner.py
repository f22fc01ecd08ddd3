"""Runs a policy in a registered Python environment (kit-less, CPU ok).

    scripts/arena_python.sh isaaclab_arena/evaluation/policy_runner.py --policy_type zero_action --seed 42 \\
        --placement_seed 42 --num_steps 100 table_pick_and_place --additional_table_objects cube_8cm
    scripts/arena_python.sh isaaclab_arena/evaluation/policy_runner.py --policy_type scripted_pick_and_place \\
        --num_envs 16 --num_episodes 32 --placement_seed 7 --compare_ik_reachable franka_table_pick_and_place

Runner flags (the shared parser) precede the environment name; environment flags follow it. Recorded layouts
replay with ``--placement_layouts layouts.jsonl`` placed before the environment name. YAML specs run with
``environment_runner.py --env_spec``. ``--help`` lists the registered environments and their flags.

With ``--num_episodes`` (or a policy other than ``zero_action``) the runner counts episodes of the env's task:
each ends with success (the task's ``success`` term) or a time-out; it prints every episode and the success
rate (``evaluation/episodes.py``). ``--compare_ik_reachable`` runs the same episodes twice in one run, with the
``ik_reachable`` placement check required and with it disabled, and prints both success rates.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

from isaaclab_arena.evaluation.policy_types import POLICY_TYPES


# ---- --help: the registered environments and their flags (imports nothing heavy) -----------------------------
def registered_environments_help() -> str:
    """``registered environments ...:`` and each environment's own flags, as its parser's help prints them."""
    from isaaclab_arena_environments.registered import REGISTERED_ENVIRONMENTS

    lines = ["registered environments (give the name after the runner flags, then its own flags):"]
    for name in sorted(REGISTERED_ENVIRONMENTS):
        add_args, _ = REGISTERED_ENVIRONMENTS[name]
        flags = environment_parser(name, add_args).format_help().split("options:", 1)[-1].splitlines()
        lines.append(f"  {name}")
        lines += ["    " + ln for ln in flags if ln.strip() and "-h, --help" not in ln and "show this help" not in ln]
    return "\n".join(lines)


def environment_parser(name: str, add_args) -> argparse.ArgumentParser:
    from isaaclab_arena.utils.arena_argparse import ArenaArgumentParser

    parser = ArenaArgumentParser(prog=f"policy_runner.py ... {name}")
    add_args(parser)
    return parser


def make_parser() -> argparse.ArgumentParser:
    from isaaclab_arena.environments.cli import get_isaaclab_arena_cli_parser

    parser = get_isaaclab_arena_cli_parser(__doc__.split("\n\nRunner flags")[0], env_spec=False,
                                           prog="policy_runner.py", epilog=registered_environments_help(),
                                           formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--policy_type", default="zero_action", choices=POLICY_TYPES)
    parser.add_argument("--num_episodes", type=int, default=None,
                        help="episodes to evaluate (ends with success or time-out); default: run --num_steps steps "
                             "(zero_action) or 1 episode per env (other policies)")
    parser.add_argument("--compare_ik_reachable", action="store_true",
                        help="run the episodes twice, with the ik_reachable placement check required and disabled, "
                             "and print both success rates")
    parser.add_argument("env_name", nargs="?", default=None, help="registered environment (runner flags before it)")
    parser.add_argument("env_args", nargs=argparse.REMAINDER, help="the environment's own flags")
    return parser


def build_from_args(argv: list[str]):
    """Parses runner flags, the registered env name and its flags; returns ``(builder, args)``.

    Unknown environment names and bad flags exit with one line naming what was wrong and what is accepted.
    """
    builder, args, _ = _parse(argv)
    return builder, args


def _parse(argv: list[str]):
    from isaaclab_arena.environments.cli import builder_cfg_from_args, check_runner_args
    from isaaclab_arena_environments.registered import REGISTERED_ENVIRONMENTS, get_registered_environment

    parser = make_parser()
    args = parser.parse_args(argv)
    if args.env_name is None:
        parser.error(f"name a registered environment after the runner flags; registered: {sorted(REGISTERED_ENVIRONMENTS)}")
    check_runner_args(parser, args)
    if args.num_episodes is not None and args.num_episodes <= 0:
        parser.error(f"--num_episodes must be a positive integer, got {args.num_episodes}")
    try:
        add_args, build = get_registered_environment(args.env_name)
    except KeyError as err:
        parser.error(str(err.args[0]))
    env_args = environment_parser(args.env_name, add_args).parse_args(args.env_args)
    if getattr(args, "embodiment", None) is not None and hasattr(env_args, "embodiment"):
        env_args.embodiment = args.embodiment  # the runner flag, unless the env has none
    elif getattr(args, "embodiment", None) is not None:
        parser.error(f"--embodiment: environment '{args.env_name}' has no robot to choose")
    from isaaclab_arena.environments.quiet_output import held_output, quiet_warp_init

    quiet_warp_init(args.verbose)
    with held_output(args.verbose):  # Isaac Lab's import-time messages
        from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder

    def make_builder(**placer_overrides):
        arena_env = build(env_args)
        if placer_overrides:
            arena_env.placer_params = dataclasses.replace(arena_env.placer_params, **placer_overrides)
        return ArenaEnvBuilder(arena_env, builder_cfg_from_args(args))

    return make_builder(), args, make_builder


def main(argv: list[str] | None = None) -> dict:
    argv = list(sys.argv[1:] if argv is None else argv)
    builder, args, make_builder = _parse(argv)
    from isaaclab_arena.environments.run_loop import run

    episodes = args.num_episodes
    if episodes is None and (args.policy_type != "zero_action" or args.compare_ik_reachable):
        episodes = builder.cfg.num_envs
    if episodes is None:
        return run(builder, args.num_steps, args.output_dir, pictures=args.pictures, picture_envs=args.picture_envs,
                   verbose=args.verbose, command=[os.path.abspath(__file__), *argv])
    from isaaclab_arena.evaluation.episodes import run_episodes

    if not args.compare_ik_reachable:
        return run_episodes(builder, args.policy_type, episodes, args.output_dir)
    from isaaclab_arena.relations.validation.registry import builtin_checks

    required = run_episodes(builder, args.policy_type, episodes, args.output_dir, label="ik_required")
    disabled = run_episodes(make_builder(enabled_checks=list(builtin_checks()), required_checks=None),
                            args.policy_type, episodes, args.output_dir, label="ik_disabled")
    for label, s in (("required", required), ("disabled", disabled)):
        print(f"[compare] ik_reachable={label}: success_rate={s['success_rate']:.3f} ({s['successes']}/"
              f"{s['num_episodes']} episodes)", flush=True)
    return {"ik_required": required, "ik_disabled": disabled}


if __name__ == "__main__":
    from isaaclab_arena.environments.cli import run_main_reporting_user_errors

    run_main_reporting_user_errors(main, sys.argv[1:])

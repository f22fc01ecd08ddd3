"""Evaluates a policy on a registered Python environment (kit-less, CPU ok): episodes, records, report.

    scripts/arena_python.sh isaaclab_arena/evaluation/policy_runner.py --policy_type scripted_pick_and_place \\
        --num_envs 16 --num_episodes 32 --placement_seed 7 franka_table_pick_and_place
    scripts/arena_python.sh isaaclab_arena/evaluation/policy_runner.py --policy_type my_policies.MyPolicy \\
        --policy_arg gain=2.0 --num_episodes 32 franka_table_pick_and_place
    scripts/arena_python.sh isaaclab_arena/evaluation/policy_runner.py --policy_type rsl_rl \\
        --checkpoint_path outputs/rsl_rl/franka_table_pick_and_place/model_299.pt --num_episodes 32 franka_table_pick_and_place
    scripts/arena_python.sh isaaclab_arena/evaluation/policy_runner.py --policy_type remote --remote_port 50051 \\
        --num_episodes 32 franka_table_pick_and_place

Runner flags (the shared parser) precede the environment name; environment flags follow it. ``--policy_type``
takes a built-in (zero_action, scripted_pick_and_place, rsl_rl, remote) or a dotted class path
``package.module.Class`` importable from the working directory or the environment (docs/EVALUATION.md).

With ``--num_episodes`` (or a policy other than ``zero_action``) every episode runs on a layout fixed in advance
(episode k: layout k, solved from the placement seed, or line k of ``--placement_layouts``); each episode becomes
one record in ``<output_dir>/episodes.jsonl``, with ``eval_summary.json`` (success rate and 95 % Wilson interval,
clean and fallback layouts apart) and ``report.html``. ``--compare_ik_reachable`` runs the same episodes twice,
with the ``ik_reachable`` placement check required and disabled. Without episodes, ``zero_action`` steps
``--num_steps`` steps and reports what was placed. ``--help`` lists the registered environments and their flags.
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
import dataclasses
import os
import sys



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
    from isaaclab_arena.evaluation.policy_cli import add_policy_args

    parser = get_isaaclab_arena_cli_parser(__doc__.split("\n\nRunner flags")[0], env_spec=False,
                                           prog="policy_runner.py", epilog=registered_environments_help(),
                                           formatter_class=argparse.RawDescriptionHelpFormatter)
    add_policy_args(parser)
    parser.add_argument("--num_episodes", type=int, default=None,
                        help="episodes to evaluate (each on its own layout, ends with success or time-out); default: "
                             "run --num_steps steps (zero_action) or 1 episode per env (other policies)")
    parser.add_argument("--factors", default=None, metavar="NAMES",
                        help="comma-separated factors recorded per episode (default: every factor the scene has: "
                             "object_x_m, object_y_m, object_yaw_rad, object_distance_from_robot_m, "
                             "object_to_destination_m, robot_yaw_rad)")
    parser.add_argument("--run_name", default="default", help="the run's name in the episode records")
    parser.add_argument("--distributed", action="store_true",
                        help="one rank of a torchrun job (python -m torch.distributed.run --nproc_per_node=N "
                             "policy_runner.py ... --distributed): each rank evaluates its share of the episodes, "
                             "rank 0 writes the merged records")
    parser.add_argument("--report", action=argparse.BooleanOptionalAction, default=True,
                        help="write report.html beside the records (default on)")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True,
                        help="show a progress bar with an ETA on stderr while episodes run (default on)")
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
    from isaaclab_arena.utils.runner_gc import freeze_imports

    freeze_imports()  # no later collection walks the imported modules' objects (utils/runner_gc.py)

    def make_builder(**placer_overrides):
        arena_env = build(env_args)
        if placer_overrides:
            arena_env.placer_params = dataclasses.replace(arena_env.placer_params, **placer_overrides)
        return ArenaEnvBuilder(arena_env, builder_cfg_from_args(args))

    return make_builder(), args, make_builder


def evaluation_settings(args, argv: list[str], episodes: int, **overrides):
    """``EvaluationSettings`` of the parsed runner flags."""
    from isaaclab_arena.evaluation.episodes import EvaluationSettings
    from isaaclab_arena.evaluation.policy_cli import policy_settings_from_args

    factors = None if args.factors is None else [f.strip() for f in args.factors.split(",") if f.strip()]
    kw = dict(policy_type=args.policy_type, num_episodes=episodes, policy_settings=policy_settings_from_args(args),
              run=args.run_name, output_dir=args.output_dir, placement_layouts=args.placement_layouts, factors=factors,
              progress=args.progress, report=args.report, verbose=args.verbose,
              command=[os.path.abspath(__file__), *argv])
    kw.update(overrides)
    return EvaluationSettings(**kw)


def main(argv: list[str] | None = None) -> dict:
    argv = list(sys.argv[1:] if argv is None else argv)
    builder, args, make_builder = _parse(argv)
    from isaaclab_arena.environments.run_loop import run

    if args.distributed:
        from isaaclab_arena.utils.distributed import require_torchrun

        require_torchrun()  # outside torchrun: one line naming it, before anything is built
    episodes = args.num_episodes
    if episodes is None and (args.policy_type != "zero_action" or args.compare_ik_reachable or args.distributed):
        episodes = builder.cfg.num_envs
    if episodes is None:
        return run(builder, args.num_steps, args.output_dir, pictures=args.pictures, picture_envs=args.picture_envs,
                   verbose=args.verbose, command=[os.path.abspath(__file__), *argv])
    from isaaclab_arena.evaluation.episodes import evaluate

    if args.placement_layouts is not None:  # evaluated as episode layouts, not through the builder's replay
        builder.cfg = dataclasses.replace(builder.cfg, placement_layouts_path=None)
    if args.distributed:
        from isaaclab_arena.utils import distributed

        if args.compare_ik_reachable:
            raise ValueError("--distributed evaluates one run; run --compare_ik_reachable's two runs as two jobs "
                             "(or as an experiment)")
        ctx = distributed.init_rank(args.device)
        builder.cfg = dataclasses.replace(builder.cfg, device=ctx.device)
        try:
            return evaluate(builder, evaluation_settings(args, argv, episodes, progress=args.progress and ctx.is_main),
                            dist=ctx)
        finally:
            distributed.finish(ctx)
    if not args.compare_ik_reachable:
        return evaluate(builder, evaluation_settings(args, argv, episodes))
    from isaaclab_arena.relations.validation.registry import builtin_checks

    out_dir = args.output_dir
    required = evaluate(builder, evaluation_settings(args, argv, episodes, run="ik_required",
                                                     output_dir=os.path.join(out_dir, "ik_required")))
    disabled_builder = make_builder(enabled_checks=list(builtin_checks()), required_checks=None)
    if args.placement_layouts is not None:
        disabled_builder.cfg = dataclasses.replace(disabled_builder.cfg, placement_layouts_path=None)
    disabled = evaluate(disabled_builder, evaluation_settings(args, argv, episodes, run="ik_disabled",
                                                              output_dir=os.path.join(out_dir, "ik_disabled")))
    from isaaclab_arena.evaluation.statistics import format_rate

    for label, s in (("required", required), ("disabled", disabled)):
        print(f"[compare] ik_reachable={label}: success rate {format_rate(s['rates']['all'])}", flush=True)
    return {"ik_required": required, "ik_disabled": disabled}


if __name__ == "__main__":
    # one OpenMP / intra-op thread unless the user sets OMP_NUM_THREADS: batched CPU ops then give the same bits for
    # any env count (evaluation/episodes.py); set before torch and the simulators load
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from isaaclab_arena.environments.cli import run_main_reporting_user_errors

    run_main_reporting_user_errors(main, sys.argv[1:])

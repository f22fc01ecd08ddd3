"""Building a registered Arena environment for reinforcement learning (kit-less, CPU or GPU).

:func:`make_builder` turns a registered environment name and its own flags into an ``ArenaEnvBuilder``;
:func:`rl_env_session` composes the env config, starts the kit-less simulation and yields the gym env (Isaac
Lab's start-up tables held back unless ``verbose``), closing both on exit.
"""

from __future__ import annotations

import contextlib


def registered_names() -> list[str]:
    from isaaclab_arena_environments.registered import REGISTERED_ENVIRONMENTS

    return sorted(REGISTERED_ENVIRONMENTS)


def parse_env_args(task: str, env_args: list[str] | None):
    """The registered environment's own flags (``--robot_side positive_x``) parsed by its parser; an unknown
    environment raises ``KeyError`` (one line naming the registered ones), a bad flag exits 2 with one line."""
    from isaaclab_arena.utils.arena_argparse import ArenaArgumentParser
    from isaaclab_arena_environments.registered import get_registered_environment

    add_args, build = get_registered_environment(task)
    parser = ArenaArgumentParser(prog=f"environment {task}")
    add_args(parser)
    return parser.parse_args(list(env_args or [])), build


def make_builder(task: str, env_args: list[str] | None = None, *, num_envs: int = 1, device: str = "cpu",
                 seed: int = 42, placement_seed: int | None = None, **builder_kw):
    """``ArenaEnvBuilder`` of the registered environment ``task`` with ``num_envs`` envs on ``device``."""
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg

    args, build = parse_env_args(task, env_args)
    cfg = ArenaEnvBuilderCfg(num_envs=num_envs, device=device, seed=seed, placement_seed=placement_seed, **builder_kw)
    return ArenaEnvBuilder(build(args), cfg)


@contextlib.contextmanager
def rl_env_session(builder, verbose: bool = False):
    """Yields the gym env of ``builder`` inside a kit-less simulation (closed on exit)."""
    from isaaclab_arena.environments.launch import kitless_session
    from isaaclab_arena.environments.quiet_output import held_output, quiet_warp_init

    quiet_warp_init(verbose)
    with held_output(verbose):
        env_cfg = builder.compose_manager_cfg()
    with kitless_session(env_cfg, builder.cfg.device):
        with held_output(verbose):
            env = builder.make_registered(env_cfg)
        try:
            yield env
        finally:
            with held_output(verbose):
                env.close()

"""Trains a PPO policy with rsl_rl on a registered Arena environment (kit-less, CPU ok).

    scripts/arena_python.sh isaaclab_arena/scripts/train_rsl_rl.py --task franka_table_pick_and_place \\
        --num_envs 64 --max_iterations 300 --seed 1
    scripts/arena_python.sh isaaclab_arena/scripts/train_rsl_rl.py --task franka_table_pick_and_place \\
        --num_envs 4 --max_iterations 2 -- --pick_up_object box_tall --robot_side positive_x

The environment's own flags (``policy_runner.py --help`` lists them) follow a ``--``. The agent (PPO and
network sizes) is ``isaaclab_arena.rl.agents.agent_cfg_for(task)``; the env's rewards are the task's
(``environments/task_rewards.py``). Checkpoints ``model_<iteration>.pt`` (every ``--save_interval`` iterations
and at the end) and TensorBoard logs go to ``--log_dir`` (default ``./outputs/rsl_rl/<task>`` in the working
directory). Under torchrun (``-m torch.distributed.run --nproc_per_node=N ... --distributed``) every rank trains
its own envs (seed + rank) and rsl_rl averages the gradients over ranks: on ``gloo`` on the CPU (stock rsl_rl
would ask for CUDA and NCCL), on NCCL with ``--device cuda:LOCAL_RANK``; rank 0 prints and saves. One line per iteration: iteration, mean return of the episodes finished so far (last 100), mean
reward per env step of the iteration, mean episode length (env steps), env steps per second.

Evaluate a checkpoint with ``policy_runner.py --policy_type rsl_rl --checkpoint_path <log_dir>/model_<it>.pt``.
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
import contextlib
import io
import math
import os
import statistics
import sys
import time


def make_parser() -> argparse.ArgumentParser:
    from isaaclab_arena.utils.arena_argparse import ArenaArgumentParser

    p = ArenaArgumentParser(prog="train_rsl_rl.py", description=__doc__.split("\n\nThe environment's")[0],
                            epilog="environment flags follow '--' (e.g. -- --robot_side positive_x)",
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", required=True, help="registered environment name (e.g. franka_table_pick_and_place)")
    p.add_argument("--num_envs", type=int, default=64, help="parallel environments (> 0)")
    p.add_argument("--max_iterations", type=int, default=None,
                   help="PPO iterations (> 0; default: the agent config's max_iterations)")
    p.add_argument("--num_steps_per_env", type=int, default=None,
                   help="env steps per env per iteration (> 0; default: the agent config's)")
    p.add_argument("--save_interval", type=int, default=None,
                   help="iterations between checkpoints (> 0; default: the agent config's); the last is always saved")
    p.add_argument("--seed", type=int, default=42, help="seed of the simulation, torch and the agent")
    p.add_argument("--placement_seed", type=int, default=None, help="placement seed (layouts)")
    p.add_argument("--device", default="cpu", help="cpu or cuda:0 (simulation and networks)")
    p.add_argument("--log_dir", default=None,
                   help="checkpoints and TensorBoard logs (default: ./outputs/rsl_rl/<task> in the working directory)")
    p.add_argument("--distributed", action="store_true",
                   help="one rank of a torchrun job (python -m torch.distributed.run --nproc_per_node=N train_rsl_rl.py "
                        "... --distributed): gradients averaged over ranks, gloo on the CPU, nccl on cuda:LOCAL_RANK")
    p.add_argument("--verbose", action="store_true",
                   help="also print Isaac Lab's manager tables, the simulator's start-up and rsl_rl's own tables")
    return p


def _positive(parser, name: str, value) -> None:
    if value is not None and value <= 0:
        parser.error(f"--{name} must be a positive integer, got {value}")


def parse(argv: list[str]):
    """``(args, env_args)``: the script's flags and the environment's flags (after ``--``); one-line refusals."""
    argv = list(argv)
    env_args: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, env_args = argv[:cut], argv[cut + 1:]
    parser = make_parser()
    args = parser.parse_args(argv)
    for name in ("num_envs", "max_iterations", "num_steps_per_env", "save_interval"):
        _positive(parser, name, getattr(args, name))
    if args.distributed:
        from isaaclab_arena.utils.distributed import require_torchrun

        try:
            env = require_torchrun()
        except ValueError as err:
            parser.error(str(err))
        if args.device.startswith("cuda"):
            args.device = f"cuda:{env['local_rank']}"  # one GPU per rank, as rsl_rl expects
    from isaaclab_arena.rl.agents import AGENT_CFGS
    from isaaclab_arena.rl.envs import registered_names

    if args.task not in registered_names():
        parser.error(f"--task '{args.task}' is not a registered environment; registered: "
                     f"{', '.join(registered_names())}")
    if args.task not in AGENT_CFGS:
        parser.error(f"--task '{args.task}' has no rsl_rl agent config; known: {', '.join(sorted(AGENT_CFGS))}")
    from isaaclab_arena.environments.cli import check_backend_flags

    check_backend_flags(parser, None, None, args.device)
    return args, env_args


def distributed_runner_class():
    """rsl_rl's ``OnPolicyRunner`` whose multi-process set-up also works on the CPU: stock rsl_rl starts NCCL and
    asks for ``cuda:LOCAL_RANK`` whenever ``WORLD_SIZE`` > 1; this one joins (or starts) a ``gloo`` process group
    when the device is the CPU and keeps rsl_rl's own set-up on CUDA. Gradients, the KL-adaptive learning rate and
    the initial parameters are then synchronised over ranks by rsl_rl's PPO, as on GPUs."""
    import torch
    import torch.distributed as dist
    from rsl_rl.runners import OnPolicyRunner

    class ArenaOnPolicyRunner(OnPolicyRunner):
        def _configure_multi_gpu(self) -> None:
            if not str(self.device).startswith("cpu"):
                return super()._configure_multi_gpu()
            self.gpu_world_size = int(os.getenv("WORLD_SIZE", "1"))
            self.is_distributed = self.gpu_world_size > 1
            self.gpu_local_rank = int(os.getenv("LOCAL_RANK", "0")) if self.is_distributed else 0
            self.gpu_global_rank = int(os.getenv("RANK", "0")) if self.is_distributed else 0
            if not self.is_distributed:
                self.cfg["multi_gpu"] = None
                return
            self.cfg["multi_gpu"] = {"global_rank": self.gpu_global_rank, "local_rank": self.gpu_local_rank,
                                     "world_size": self.gpu_world_size}
            if not dist.is_initialized():
                dist.init_process_group(backend="gloo", rank=self.gpu_global_rank, world_size=self.gpu_world_size)

    del torch
    return ArenaOnPolicyRunner


class IterationLog:
    """Collects the per-step rewards of an iteration from rsl_rl's logger and prints one line per iteration."""

    def __init__(self, runner, total: int, verbose: bool, out=print):
        self.runner, self.total, self.verbose, self.out = runner, total, verbose, out
        self.step_sum, self.step_count = 0.0, 0
        self.history: list[dict] = []
        logger = runner.logger
        self._process, self._log = logger.process_env_step, logger.log
        logger.process_env_step = self.process_env_step
        logger.log = self.log

    def process_env_step(self, rewards, dones, extras, intrinsic_rewards=None):
        self.step_sum += float(rewards.sum())
        self.step_count += int(rewards.numel())
        return self._process(rewards, dones, extras, intrinsic_rewards)

    def log(self, it, start_it, total_it, collect_time, learn_time, *rest, **kw):
        if self.verbose:
            self._log(it, start_it, total_it, collect_time, learn_time, *rest, **kw)
        else:
            with contextlib.redirect_stdout(io.StringIO()):
                self._log(it, start_it, total_it, collect_time, learn_time, *rest, **kw)
        logger = self.runner.logger
        ret = statistics.mean(logger.rewbuffer) if len(logger.rewbuffer) else math.nan
        length = statistics.mean(logger.lenbuffer) if len(logger.lenbuffer) else math.nan
        step = self.step_sum / self.step_count if self.step_count else math.nan
        steps = self.step_count
        fps = steps / (collect_time + learn_time) if collect_time + learn_time > 0 else math.nan
        row = {"iteration": it, "mean_reward": ret, "mean_step_reward": step, "mean_episode_length": length,
               "env_steps_per_s": fps}
        self.history.append(row)
        self.out(f"[train] iteration {it + 1}/{self.total} mean_reward={ret:.4f} mean_step_reward={step:.5f} "
                 f"mean_episode_length={length:.1f} env_steps/s={fps:.0f}")
        self.step_sum, self.step_count = 0.0, 0


def train(task: str, env_args: list[str] | None = None, *, num_envs: int = 64, max_iterations: int | None = None,
          num_steps_per_env: int | None = None, save_interval: int | None = None, seed: int = 42,
          placement_seed: int | None = None, device: str = "cpu", log_dir: str | None = None, verbose: bool = False,
          out=None) -> dict:
    """Trains ``task`` and returns ``{"log_dir", "checkpoint", "history"}`` (``history``: one dict per iteration
    with ``mean_reward``, ``mean_step_reward``, ``mean_episode_length``, ``env_steps_per_s``)."""
    import torch

    rank = int(os.environ.get("RANK", "0")) if int(os.environ.get("WORLD_SIZE", "1")) > 1 else 0
    if rank:  # under torchrun every rank trains on its own envs and seed; rank 0 reports and saves
        seed += rank
        if placement_seed is not None:
            placement_seed += rank
        out = out or (lambda line: None)
    if out is None:
        real = sys.stdout  # rsl_rl's own prints are redirected while training; ours are not

        def out(line: str) -> None:
            print(line, file=real, flush=True)
    from isaaclab_arena.environments.quiet_output import held_output, quiet_warp_init
    from isaaclab_arena.rl.agents import agent_cfg_for

    quiet_warp_init(verbose)
    with held_output(verbose):  # Isaac Lab's import-time messages
        from isaaclab.utils import to_dict
        from isaaclab_rl.rsl_rl import RslRlVecEnvWrapper
        from isaaclab_arena.rl.envs import make_builder, rl_env_session
    from isaaclab_arena.utils.runner_gc import freeze_imports

    freeze_imports()  # no later collection walks the imported modules' objects (utils/runner_gc.py)

    agent = agent_cfg_for(task)
    agent.seed, agent.device = seed, device
    if max_iterations is not None:
        agent.max_iterations = max_iterations
    if num_steps_per_env is not None:
        agent.num_steps_per_env = num_steps_per_env
    if save_interval is not None:
        agent.save_interval = save_interval
    log_dir = os.path.abspath(log_dir or os.path.join("outputs", "rsl_rl", task))
    os.makedirs(log_dir, exist_ok=True)
    builder = make_builder(task, env_args, num_envs=num_envs, device=device, seed=seed, placement_seed=placement_seed)
    torch.manual_seed(seed)
    out(f"[train] {task}: {num_envs} envs on {device}, {agent.max_iterations} iterations x "
        f"{agent.num_steps_per_env} steps per env; logs and checkpoints in {log_dir}")
    t0 = time.perf_counter()
    with rl_env_session(builder, verbose) as env:
        wrapped = RslRlVecEnvWrapper(env, clip_actions=agent.clip_actions)
        out(f"[train] env ready in {time.perf_counter() - t0:.1f} s: observations "
            f"{dict(env.unwrapped.observation_manager.group_obs_dim)}, {wrapped.num_actions} actions, rewards "
            f"{', '.join(env.unwrapped.reward_manager.active_terms)}")
        with held_output(verbose):
            runner = distributed_runner_class()(wrapped, to_dict(agent), log_dir=log_dir, device=device)
        log = IterationLog(runner, agent.max_iterations, verbose, out)
        # rsl_rl prints its git-state notes and tables on stdout; without --verbose only our lines show
        with contextlib.nullcontext() if verbose else contextlib.redirect_stdout(io.StringIO()):
            runner.learn(num_learning_iterations=agent.max_iterations,
                         init_at_random_ep_len=agent.init_at_random_ep_len)
    last = os.path.join(log_dir, f"model_{runner.current_learning_iteration}.pt")
    out(f"[train] done in {time.perf_counter() - t0:.1f} s; checkpoint {last}")
    return {"log_dir": log_dir, "checkpoint": last, "history": log.history}


def main(argv: list[str] | None = None) -> dict:
    args, env_args = parse(sys.argv[1:] if argv is None else argv)
    return train(args.task, env_args, num_envs=args.num_envs, max_iterations=args.max_iterations,
                 num_steps_per_env=args.num_steps_per_env, save_interval=args.save_interval, seed=args.seed,
                 placement_seed=args.placement_seed, device=args.device, log_dir=args.log_dir, verbose=args.verbose)


if __name__ == "__main__":
    from isaaclab_arena.environments.cli import run_main_reporting_user_errors

    run_main_reporting_user_errors(main, sys.argv[1:])

"""Benchmark: PPO (rsl_rl) on a registered Arena environment; does the reward go up? (not a test)

    scripts/arena_python.sh scripts/bench_rsl_rl.py --iterations 300 --num_envs 64

Trains with ``isaaclab_arena/scripts/train_rsl_rl.py``'s ``train`` (checkpoints in ``--log_dir``, default
``./outputs/bench_rsl_rl``) and prints, at every ``--report_every`` iterations, ``mean_reward`` (mean reward per
env step over the iteration; the reward manager's weighted sum times the step duration) and
``mean_episode_return`` (mean return of the last 100 finished episodes, nan before any finished). The last line:
``reward_first=<..> reward_last=<..> iterations=<..> envs=<..>``, the per-step reward averaged over the first and
the last ``--window`` iterations.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(prog="bench_rsl_rl.py", description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("--task", default="franka_table_pick_and_place")
    p.add_argument("--iterations", type=int, default=300)
    p.add_argument("--num_envs", type=int, default=64)
    p.add_argument("--num_steps_per_env", type=int, default=None)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--placement_seed", type=int, default=7)
    p.add_argument("--device", default="cpu")
    p.add_argument("--report_every", type=int, default=10)
    p.add_argument("--window", type=int, default=5)
    p.add_argument("--log_dir", default=os.path.join("outputs", "bench_rsl_rl"))
    args = p.parse_args(argv)
    if min(args.iterations, args.num_envs, args.report_every, args.window) <= 0:
        p.error("--iterations, --num_envs, --report_every and --window must be > 0")
    from isaaclab_arena.scripts.train_rsl_rl import train

    t0 = time.perf_counter()
    rows = []

    real = sys.stdout

    def out(line: str) -> None:
        print(line, flush=True, file=real)

    result = train(args.task, [], num_envs=args.num_envs, max_iterations=args.iterations,
                   num_steps_per_env=args.num_steps_per_env, save_interval=max(args.iterations // 4, 1),
                   seed=args.seed, placement_seed=args.placement_seed, device=args.device, log_dir=args.log_dir,
                   out=_Reporter(out, args.report_every, rows))
    hist = result["history"]
    w = min(args.window, len(hist))
    first = sum(r["mean_step_reward"] for r in hist[:w]) / w
    last = sum(r["mean_step_reward"] for r in hist[-w:]) / w
    print(f"[bench] wall {time.perf_counter() - t0:.0f} s; last mean_episode_return="
          f"{hist[-1]['mean_reward']:.3f}; checkpoint {result['checkpoint']}", flush=True)
    print(f"reward_first={first:.6f} reward_last={last:.6f} iterations={len(hist)} envs={args.num_envs}", flush=True)
    return {"reward_first": first, "reward_last": last, "history": hist}


class _Reporter:
    """``out`` of ``train``: prints ``mean_reward`` every ``every`` iterations (and the first and last)."""

    def __init__(self, out, every: int, rows: list):
        self.out_, self.every, self.rows, self.t0 = out, every, rows, time.perf_counter()
        self.real = sys.stdout  # train() redirects rsl_rl's prints while it learns

    def __call__(self, line: str) -> None:
        if not line.startswith("[train] iteration "):
            self.out_(line)
            return
        head, _, rest = line[len("[train] iteration "):].partition(" ")
        it, total = (int(v) for v in head.split("/"))
        fields = dict(kv.split("=", 1) for kv in rest.split())
        if it == 1 or it == total or it % self.every == 0:
            ret = float(fields["mean_reward"])
            print(f"[bench] iteration {it}/{total} mean_reward={float(fields['mean_step_reward']):.6f} "
                  f"mean_episode_return={'nan' if math.isnan(ret) else f'{ret:.3f}'} "
                  f"env_steps/s={fields['env_steps/s']} elapsed={time.perf_counter() - self.t0:.0f}s", flush=True,
                  file=self.real)


if __name__ == "__main__":
    main()

"""Cost of an object-pool draw per reset: which k of N members join each env's layout (1,024 envs by default).

Times ``draw_pool_members`` (the hash draw, batched torch) and ``PoolTables.start_positions`` (the draw plus the
parking start positions the solver writes before its init kernel) for a pool of ``--pool_size`` members with k in
``[--k_min, --k_max]``. Prints the median over ``--repeats`` calls, in ms.

    scripts/arena_python.sh scripts/bench_pool_draws.py --num_envs 1024
"""

from __future__ import annotations

from bench_feasibility import _median_ms  # scripts/ is on sys.path when a script in it runs


def main() -> None:
    from isaaclab_arena.utils.arena_argparse import ArenaArgumentParser

    parser = ArenaArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--num_envs", type=int, default=1024)
    parser.add_argument("--pool_size", type=int, default=8)
    parser.add_argument("--k_min", type=int, default=3)
    parser.add_argument("--k_max", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()

    import torch

    from isaaclab_arena.assets.object_pool import draw_pool_members, park_position
    from isaaclab_arena.relations.compiler.pool_parking import CompiledPool, PoolTables

    envs = torch.arange(args.num_envs)
    draws = torch.zeros(args.num_envs, dtype=torch.long)
    count = (args.k_min, args.k_max)
    n = args.pool_size
    draw_pool_members("pool", count, n, 7, envs, draws)  # warm-up
    draw_ms = _median_ms(lambda: draw_pool_members("pool", count, n, 7, envs, draws), args.repeats)
    tables = PoolTables((CompiledPool("pool", count, tuple(range(n)), tuple(f"m{i}" for i in range(n))),),
                        torch.tensor([park_position(i) for i in range(n)]), torch.arange(n))
    start_ms = _median_ms(lambda: tables.start_positions(7, envs, draws), args.repeats)
    print(f"[bench_pool_draws] {args.num_envs} envs, pool of {n}, k in [{args.k_min}, {args.k_max}]: "
          f"draw {draw_ms:.3f} ms, draw + parking start positions {start_ms:.3f} ms per reset (median of "
          f"{args.repeats})")


if __name__ == "__main__":
    main()

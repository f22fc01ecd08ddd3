"""Sustained timing for the benchmark scripts: warm-up discarded, then windows of repeated calls.

A figure is the median over windows of (window seconds / calls in the window); each window lasts at least
``window_s`` seconds of back-to-back calls, so short bursts after process start (caches cold, clocks boosted,
allocator growing) do not set the figure. ``spread_pct`` = (slowest - fastest window) / median, in percent.
The process's CPU seconds per call are taken over the same windows (``Sustained.cpu_median``).
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import time
from dataclasses import dataclass


@dataclass
class Sustained:
    """Seconds per call: ``median`` of the windows' means, their ``fastest`` and ``slowest``; ``calls`` timed.

    ``cpu_median``: the same median of this process's CPU seconds per call (all its threads), None when not
    measured. On a shared machine other processes' load lengthens wall time but hardly CPU time, so the CPU
    figure is the steadier one for a before/after comparison; the wall figure is what a user waits.
    """

    median: float
    fastest: float
    slowest: float
    calls: int
    windows: int
    cpu_median: float | None = None

    @property
    def spread_pct(self) -> float:
        return 100.0 * (self.slowest - self.fastest) / self.median if self.median > 0 else 0.0

    def keys(self) -> str:
        """``spread_pct=... windows=... calls=...`` for a ``bench`` line."""
        return f"spread_pct={self.spread_pct:.1f} windows={self.windows} calls={self.calls}"


def sustained(call, window_s: float = 1.0, windows: int = 5, warmup_s: float = 0.5, min_warmup_calls: int = 3,
              min_calls: int = 1, self_timed: bool = False) -> Sustained:
    """Times ``call()`` (no arguments) as described in the module docstring.

    Args:
        call: The work; it must finish its device work before returning (read a result back on CUDA).
        window_s: Minimum timed seconds per window.
        windows: Number of windows (the figure is their median).
        warmup_s: Seconds of discarded calls first (at least ``min_warmup_calls`` calls).
        min_calls: Minimum calls per window.
        self_timed: ``call()`` returns the wall seconds of its timed part (e.g. without a set-up it does
            first), or (wall, CPU) seconds; otherwise each call is timed whole.
    """
    def once() -> tuple[float, float | None]:
        t0, c0 = time.perf_counter(), time.process_time()
        out = call()
        if not self_timed:
            return time.perf_counter() - t0, time.process_time() - c0
        return (float(out[0]), float(out[1])) if isinstance(out, tuple) else (float(out), None)

    spent, n = 0.0, 0
    while n < min_warmup_calls or spent < warmup_s:
        spent += once()[0]
        n += 1
    walls, cpus = [], []
    for _ in range(max(1, windows)):
        window = []
        wall = 0.0
        while wall < window_s or len(window) < min_calls:
            window.append(once())
            wall += window[-1][0]
        walls.append([w for w, _ in window])
        cpus.append([c for _, c in window] if all(c is not None for _, c in window) else [])
    return sustained_samples(walls, cpus)


def sustained_placement(placer, problem, env_ids, draws: list[int], timing: dict) -> tuple[Sustained, float]:
    """``sustained`` over ``placer.place_problem(problem, env_ids, draw)`` calls, each with the next draw id
    (``draws[0]``, advanced in place so that successive batch sizes never repeat a draw), and the share of
    candidates that passed every required check over every call made (warm-up included)."""
    import numpy as np
    import torch

    counts = {"valid": 0, "total": 0}

    cpu = env_ids.device.type == "cpu"

    def run():
        draws[0] += 1
        # the draw ids on the CPU through numpy: a torch fill this large would run on torch's OpenMP threads,
        # which keep spinning for milliseconds on the cores the placer is about to use (a cost of this loop,
        # not of the placer: see ``kernels/geometry.copy_into``)
        draw = (torch.from_numpy(np.full(env_ids.shape[0], draws[0], dtype=np.int64)) if cpu
                else torch.full_like(env_ids, draws[0]))
        batch = placer.place_problem(problem, env_ids, draw)
        passed = batch.passed
        counts["valid"] += int(passed.numpy().sum() if cpu else passed.sum())  # also waits for the device
        counts["total"] += batch.passed.shape[0]

    s = sustained(run, **timing)
    return s, counts["valid"] / counts["total"]


def sustained_samples(walls: list[list[float]], cpus: list[list[float]] | None = None) -> Sustained:
    """A :class:`Sustained` from per-window lists of per-call wall seconds (the windows' means, their median) and
    optionally the same lists of CPU seconds."""
    per = [sum(w) / len(w) for w in walls if w]
    cpu = [sum(c) / len(c) for c in (cpus or []) if c]
    if not per:
        return Sustained(0.0, 0.0, 0.0, 0, 0)
    return Sustained(statistics.median(per), min(per), max(per), sum(len(w) for w in walls), len(per),
                     statistics.median(cpu) if cpu else None)


def code_line() -> str:
    """``# code=<isaaclab_arena dir> git=<sha> machine=... `` (not a ``bench`` line): what was measured, where."""
    import isaaclab_arena

    root = os.path.dirname(os.path.dirname(os.path.abspath(isaaclab_arena.__file__)))
    try:
        sha = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             timeout=10).stdout.strip() or "unknown"
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        sha += "+dirty" if dirty else ""
    except (OSError, subprocess.SubprocessError):
        sha = "unknown"
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    import torch

    return (f"# code={root} git={sha} cpu='{cpu}' cpus={os.cpu_count()} torch_threads={torch.get_num_threads()} "
            f"load={os.getloadavg()[0]:.2f}")

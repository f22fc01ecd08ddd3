"""Helper threads that run parts of a CPU launch in parallel (warp's native kernel calls release the GIL,
so N threads run kernels on N cores)."""

from __future__ import annotations

import os
import threading

#: Printed once per process by :func:`openmp_spin_notice`.
OPENMP_SPIN_NOTICE = ("[placement] note: torch's OpenMP threads spin for milliseconds after each parallel torch op, "
                      "on the cores the placer's threads use (up to 2x slower placement on a small CPU); start "
                      "Python with GOMP_SPINCOUNT=10000 (scripts/arena_python.sh does), see docs/SOLVER.md, "
                      "'Host side'")
_spin_noticed = False


class _Worker:
    """A persistent thread that runs a callable on request."""

    def __init__(self):
        self._go = threading.Event()
        self._done = threading.Event()
        self._fn = None
        self._err = None
        threading.Thread(target=self._loop, daemon=True, name="arena-placement-worker").start()

    def _loop(self):
        while True:
            self._go.wait()
            self._go.clear()
            try:
                self._fn()
            except BaseException as err:  # re-raised in the caller
                self._err = err
            self._done.set()

    def start(self, fn) -> None:
        self._fn, self._err = fn, None
        self._done.clear()
        self._go.set()

    def join(self) -> None:
        self._done.wait()
        if self._err is not None:
            raise self._err


class WorkerPool:
    """``count`` persistent helper threads; ``run(first, rest)`` runs ``first`` on the calling thread and each
    of ``rest`` on a helper, and returns when all are done (re-raising the first error)."""

    def __init__(self, count: int):
        self.workers = [_Worker() for _ in range(max(0, count))]

    def run(self, first, rest) -> None:
        if len(rest) > len(self.workers):
            raise ValueError(f"WorkerPool: {len(rest)} tasks for {len(self.workers)} helper threads")
        for w, fn in zip(self.workers, rest):
            w.start(fn)
        try:
            first()
        finally:
            for w in self.workers[:len(rest)]:
                w.join()


def openmp_spin_notice() -> None:
    """Prints :data:`OPENMP_SPIN_NOTICE` once per process when a placer splits a CPU batch over threads while
    torch runs parallel ops on more than one thread and neither ``GOMP_SPINCOUNT`` nor ``OMP_WAIT_POLICY`` is
    set (torch read them when it loaded; setting them now changes nothing)."""
    global _spin_noticed
    if _spin_noticed or os.environ.get("GOMP_SPINCOUNT") or os.environ.get("OMP_WAIT_POLICY"):
        return
    import torch

    if torch.get_num_threads() > 1:
        _spin_noticed = True
        print(OPENMP_SPIN_NOTICE, flush=True)

"""Holds back Isaac Lab's and the simulators' start-up output (manager tables, native warnings) unless asked.

Isaac Lab prints a table per manager when an env is created, and the native simulator libraries write warnings
straight to file descriptors 1 and 2, past Python's ``sys.stdout``. :func:`held_output` redirects both
descriptors into a temporary file for the duration of a block:

- ``verbose=True``: nothing is redirected;
- the block succeeds: the held text is dropped, except lines that say ``error`` (kept on stderr);
- the block raises: everything held is written to stderr first, so a failure keeps its context, then the
  exception propagates;
- the block is stopped (Ctrl-C, SIGTERM, or an error a swallowed Ctrl-C caused: ``interrupts.stop_signal_of``): as
  on success, so that the stop stays the one ``interrupted`` line the runners promise (a Ctrl-C during an env's
  creation wrote Isaac Lab's manager tables before it).
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile

from isaaclab_arena.utils.interrupts import stop_signal_of


@contextlib.contextmanager
def held_output(verbose: bool = False):
    """Redirects fds 1 and 2 into a temporary file inside the block unless ``verbose`` (see module doc)."""
    if verbose:
        yield
        return
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = [os.dup(1), os.dup(2)]
    with tempfile.TemporaryFile(mode="w+b") as held:
        os.dup2(held.fileno(), 1)
        os.dup2(held.fileno(), 2)
        failed = True
        try:
            yield
            failed = False
        except BaseException as err:
            failed = stop_signal_of(err) is None  # a stop is not a failure: its context is not asked for
            raise
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            held.seek(0)
            text = held.read().decode("utf-8", errors="replace")
            lines = text.splitlines() if failed else [ln for ln in text.splitlines() if "error" in ln.lower()]
            if lines:
                print("\n".join(lines), file=sys.stderr, flush=True)


def quiet_warp_init(verbose: bool = False) -> None:
    """Initialises warp with its start-up message held back (on a machine without a CUDA driver it warns on
    every run that GPU execution is not available, which a CPU run does not need to hear)."""
    with held_output(verbose):
        import warp as wp

        wp.init()

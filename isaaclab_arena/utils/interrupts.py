"""Ctrl-C at any moment of a runner: one ``interrupted`` line and exit status 130, never a traceback.

The runners catch ``KeyboardInterrupt`` around their work (``cli.run_main_reporting_user_errors``, the recorder's
interruption that keeps what it accepted); a Ctrl-C that lands before that, while Python imports torch, warp or
Isaac Lab (several seconds), reached the interpreter's default handler and printed a long traceback.
:func:`quiet_interrupts` (called first thing by each runner run as a script) replaces the interpreter's report of
an uncaught ``KeyboardInterrupt`` with one line; every other exception keeps its traceback. Writers are atomic
(a temporary file renamed into place), so an interruption never leaves half a file behind.
"""

from __future__ import annotations

import os
import sys

#: Exit status of a run ended by Ctrl-C (128 + SIGINT), as a shell reports it.
INTERRUPTED_STATUS = 130


def _report(exc_type, exc, tb, previous=sys.excepthook) -> None:
    if exc_type is not None and issubclass(exc_type, KeyboardInterrupt):
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        try:
            os.write(2, b"interrupted\n")
        finally:
            os._exit(INTERRUPTED_STATUS)  # nothing else to report; skip the interpreter's own SIGINT re-raise
    previous(exc_type, exc, tb)


_interrupted = False


def _on_sigint(signum, frame) -> None:
    global _interrupted
    _interrupted = True
    raise KeyboardInterrupt


def quiet_interrupts() -> None:
    """Installs, for this process, the one-line report of an uncaught Ctrl-C and a SIGINT handler that also
    remembers the interruption (see :func:`raise_if_interrupted`). Main thread only."""
    global _interrupted
    import signal
    import threading

    _interrupted = False
    if sys.excepthook is not _report:
        sys.excepthook = _report
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, _on_sigint)


def raise_if_interrupted() -> None:
    """Raises ``KeyboardInterrupt`` when a Ctrl-C arrived but its exception was swallowed.

    Python raises a Ctrl-C's ``KeyboardInterrupt`` wherever the main thread happens to be; when that is inside an
    import a native library makes on its own (seen here: scipy imported from native code during start-up), the
    library clears the error and the run went on to the end. The long loops (pool fills, env steps, episodes,
    recording batches) call this once per iteration (a flag read) so that such a Ctrl-C still stops the run."""
    if _interrupted:
        raise KeyboardInterrupt

"""Ctrl-C at any moment of a runner: one ``interrupted`` line and exit status 130, never a traceback.

The runners catch ``KeyboardInterrupt`` around their work (``cli.run_main_reporting_user_errors``, the recorder's
interruption that keeps what it accepted); a Ctrl-C that lands before that, while Python imports torch, warp or
Isaac Lab (several seconds), reached the interpreter's default handler and printed a long traceback.
:func:`quiet_interrupts` (called first thing by each runner run as a script) replaces the interpreter's report of
an uncaught ``KeyboardInterrupt`` with one line; every other exception keeps its traceback. Writers are atomic
(a temporary file renamed into place), so an interruption never leaves half a file behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

#: Exit status of a run ended by Ctrl-C (128 + SIGINT), as a shell reports it.
INTERRUPTED_STATUS = 130


def stop_status(signal_name: str) -> int:
    """Exit status of a run ended by the stop signal ``signal_name`` (``SIGINT`` 130, ``SIGTERM`` 143): 128 + its
    number, as a shell reports it."""
    return 128 + int(signal.Signals[signal_name])


def _report(exc_type, exc, tb, previous=sys.excepthook) -> None:
    if exc is not None and stop_signal_of(exc) is not None:
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


class StopRequested(KeyboardInterrupt):
    """A stop signal delivered as an interruption; ``args[0]`` is its name (``SIGINT``, ``SIGTERM``)."""


#: The name of a stop signal that arrived and is not yet raised (None: none).
_interrupted: str | None = None


def _on_sigint(signum, frame) -> None:
    global _interrupted
    _interrupted = "SIGINT"
    raise KeyboardInterrupt


def _note_stop(signum, frame) -> None:
    global _interrupted
    if _interrupted is not None:  # a second signal while the first waits for a check: stop now
        raise StopRequested(_interrupted)
    _interrupted = signal.Signals(signum).name


@contextlib.contextmanager
def deferred_stops():
    """Inside the block SIGINT and SIGTERM only note their arrival, and the next :func:`raise_if_interrupted`
    (once per iteration of the long loops: env steps, settle steps, batches) raises :class:`StopRequested`.

    A ``KeyboardInterrupt`` raised the moment a signal arrives can land inside a native callback or a ``__del__``,
    where Python prints "Exception ignored ..." with a traceback and goes on; the recorder, whose interruption must
    end in one line with every accepted layout kept, stops at its next check instead. Main thread only (elsewhere
    the block runs unchanged); the previous handlers are restored after. A second signal before that check
    raises at once. Both signals stop the block's work whatever their disposition was (a recording started in the
    background, SIGINT ignored, still stops on ``kill -INT`` with its layouts kept)."""
    with _stop_handlers(_note_stop):
        yield


@contextlib.contextmanager
def _stop_handlers(handler, python_handled_only: bool = False):
    """Inside the block ``handler`` handles SIGINT and SIGTERM (with ``python_handled_only``, only those this process
    handles in Python: one ignored or at its default action is left as it is), the previous handlers restored after;
    yields ``{signal: previous handler}`` of the replaced ones. Main thread only (elsewhere nothing is replaced: {})."""
    if threading.current_thread() is not threading.main_thread():
        yield {}
        return
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    if python_handled_only:
        saved = {s: h for s, h in saved.items() if callable(h)}
    for s in saved:
        signal.signal(s, handler)
    try:
        yield saved
    finally:
        for s, previous in saved.items():
            signal.signal(s, previous)


@contextlib.contextmanager
def held_stops():
    """Inside the block a stop signal (SIGINT, SIGTERM) that this process handles in Python is held, and delivered
    again when the block ends: its handler then runs as if the signal had arrived at that moment (Python's Ctrl-C
    handler raises ``KeyboardInterrupt`` after the block; a runner's reports it in one line). A second signal while
    one is held runs its handler at once. A signal the process ignores or leaves at its default action (SIGTERM in
    a user's script: the process ends) is left as it is. Nothing stays noted after the block, so an interactive
    session that catches the interruption goes on normally.

    For a block that must not be cut inside native code: the env's creation, where a ``KeyboardInterrupt`` landing in
    a Python import that USD's native code makes while OV PhysX starts (``pxr.Sdr``) made USD print seven lines of
    warnings. Main thread only (elsewhere the block runs unchanged)."""
    held: list[int] = []

    def hold(signum, frame):
        if held:  # the user insists: the handler now, wherever the block is
            previous[signal.Signals(signum)](signum, frame)
        else:
            held.append(signum)

    with _stop_handlers(hold, python_handled_only=True) as previous:
        yield
    if held:  # the block ended normally: the held signal, delivered again to its own handler
        signal.raise_signal(held[0])


def _unraisable(args, previous=sys.unraisablehook) -> None:
    """A Ctrl-C's ``KeyboardInterrupt`` that Python cannot raise (it landed in a weakref callback, a ``__del__`` or
    the import machinery's module-lock cleanup, seen here during start-up imports) is printed by Python as
    "Exception ignored in ..." with a traceback, and the run goes on. Its arrival is already noted by
    :func:`_on_sigint`, so the next :func:`raise_if_interrupted` stops the run with the one-line report; nothing
    is printed here. Everything else keeps Python's report."""
    if isinstance(args.exc_value, KeyboardInterrupt) and _interrupted is not None:
        return
    previous(args)


def quiet_interrupts() -> None:
    """Installs, for this process, the one-line report of an uncaught Ctrl-C (or of an uncaught error after a noted
    one, :func:`interrupted`), a SIGINT handler that also remembers the interruption (see
    :func:`raise_if_interrupted`), and silence for a Ctrl-C that Python could not raise where it landed
    (:func:`_unraisable`; the next check raises it). Main thread only.

    The runners block SIGINT as their first statement, before importing this module, and this unblocks it once
    the handler is in place: a Ctrl-C that arrived in between is delivered then, and reported in one line."""
    global _interrupted
    _interrupted = None
    if sys.excepthook is not _report:
        sys.excepthook = _report
    if sys.unraisablehook is not _unraisable:
        sys.unraisablehook = _unraisable
    if threading.current_thread() is threading.main_thread():
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
            signal.signal(signal.SIGINT, _on_sigint)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def interrupted() -> str | None:
    """The stop signal noted by this process's handlers (``SIGINT``, ``SIGTERM``), None when none arrived.

    A Ctrl-C's ``KeyboardInterrupt`` can be caught where it lands by a library that catches ``BaseException``
    (trimesh's imports of its optional parts do, seen here during start-up: the part became a placeholder and a
    later ``<placeholder> | None`` raised ``TypeError``), so an error that follows a noted Ctrl-C is reported as the
    interruption it comes from, not as a traceback (:func:`stop_signal_of`, read by the runners and by the uncaught
    report of :func:`quiet_interrupts`)."""
    return _interrupted


def stop_signal_of(err: BaseException) -> str | None:
    """The stop signal an exception stands for: a :class:`StopRequested`'s, ``SIGINT`` for another
    ``KeyboardInterrupt``, and for any other error raised after a stop signal was noted, that signal (the error a
    swallowed Ctrl-C caused, :func:`interrupted`); None for an error of its own."""
    if isinstance(err, StopRequested):
        return err.args[0]
    if isinstance(err, KeyboardInterrupt):
        return "SIGINT"
    return interrupted() if isinstance(err, Exception) else None


def raise_if_interrupted() -> None:
    """Raises ``KeyboardInterrupt`` when a Ctrl-C arrived but its exception was swallowed.

    Python raises a Ctrl-C's ``KeyboardInterrupt`` wherever the main thread happens to be; when that is inside an
    import a native library makes on its own (seen here: scipy imported from native code during start-up), the
    library clears the error and the run went on to the end. The long loops (pool fills, env steps, episodes,
    recording batches) call this once per iteration (a flag read) so that such a Ctrl-C still stops the run."""
    if _interrupted is not None:
        raise StopRequested(_interrupted)

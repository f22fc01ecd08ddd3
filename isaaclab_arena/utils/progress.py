"""Progress bars with an ETA for long work: pool fills, compiles, recordings and evaluations (tqdm on stderr).

A bar appears only once its work has lasted ``PROGRESS_DELAY_S`` seconds, so short work prints nothing. Where it
is drawn: evaluations show theirs whenever ``progress`` is on (the runners' ``--progress``); the others show
theirs on a terminal (stderr is a TTY). ``ISAACLAB_ARENA_PROGRESS=1`` draws every bar even when stderr is a file
or a pipe (a log then holds the bar's successive states), ``ISAACLAB_ARENA_PROGRESS=0`` draws none.
Lines printed while a bar is shown go through :func:`paused` so that they do not run into it.
"""

from __future__ import annotations

import contextlib
import os
import sys

#: Seconds of work before a bar is drawn (work that ends sooner shows none).
PROGRESS_DELAY_S = 2.0
#: Seconds between two redraws of a bar.
PROGRESS_MIN_INTERVAL_S = 0.5
#: Environment variable that forces bars on (``1``) or off (``0``) whatever stderr is.
PROGRESS_ENV = "ISAACLAB_ARENA_PROGRESS"


def progress_wanted(default: bool | None = None) -> bool:
    """Whether to draw bars: ``ISAACLAB_ARENA_PROGRESS`` when set, else ``default``, else whether stderr is a
    terminal."""
    forced = os.environ.get(PROGRESS_ENV, "").strip()
    if forced in ("0", "1"):
        return forced == "1"
    if default is not None:
        return default
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def progress_bar(total: int, desc: str, unit: str, enabled: bool | None = None, delay_s: float | None = None,
                 leave: bool = True):
    """A tqdm bar on stderr with an ETA over ``total`` units, drawn after ``delay_s`` seconds (None:
    ``PROGRESS_DELAY_S``), or None when bars are off (see :func:`progress_wanted`) or there is nothing to count."""
    if total <= 0 or not progress_wanted(enabled):
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, dynamic_ncols=True, mininterval=PROGRESS_MIN_INTERVAL_S,
                leave=leave, delay=PROGRESS_DELAY_S if delay_s is None else delay_s)


@contextlib.contextmanager
def paused(bar):
    """Clears ``bar`` (None: nothing) while the block prints its lines, and draws it again after."""
    if bar is None:
        yield
        return
    bar.clear()
    try:
        yield
    finally:
        sys.stdout.flush()
        bar.refresh()


def advance_to(bar, done: int, note: str) -> None:
    """Moves ``bar`` to ``done`` units counted so far, with ``note`` (e.g. ``batch 3/10``) after it; None:
    nothing."""
    if bar is not None:
        bar.set_postfix_str(note, refresh=False)
        bar.update(done - bar.n)


def close_bar(bar) -> None:
    """Closes ``bar`` (None: nothing)."""
    if bar is not None:
        bar.close()


__all__ = ["PROGRESS_DELAY_S", "PROGRESS_ENV", "advance_to", "close_bar", "paused", "progress_bar", "progress_wanted"]

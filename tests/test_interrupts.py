"""Stop signals during a recording (issue 19, "Ctrl-C at any moment"): inside ``deferred_stops`` SIGINT and SIGTERM
only note their arrival and the loops' next ``raise_if_interrupted`` raises ``StopRequested`` with the signal's
name, so that the KeyboardInterrupt never lands inside a native callback (where Python prints "Exception ignored"
with a traceback and goes on); a second signal raises at once; the handlers are restored after."""

from __future__ import annotations

import os
import signal

import pytest

import isaaclab_arena.utils.interrupts as interrupts
from isaaclab_arena.utils.interrupts import StopRequested, deferred_stops, raise_if_interrupted, stop_status


@pytest.fixture(autouse=True)
def no_pending_stop():
    interrupts._interrupted = None
    yield
    interrupts._interrupted = None


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_inside_the_block_waits_for_the_next_check(sig):
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    with deferred_stops():
        os.kill(os.getpid(), sig)  # delivered before kill returns (main thread)
        total = sum(range(1000))  # work goes on: nothing was raised
        with pytest.raises(StopRequested) as err:
            raise_if_interrupted()
    assert total == 499500 and err.value.args == (sig.name,)
    assert isinstance(err.value, KeyboardInterrupt)  # the runners' `except KeyboardInterrupt` still catch it
    assert {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)} == before


def test_a_second_signal_raises_at_once_and_no_signal_raises_nothing():
    with deferred_stops():
        raise_if_interrupted()  # nothing arrived: no exception
        os.kill(os.getpid(), signal.SIGTERM)
        with pytest.raises(StopRequested, match="SIGTERM"):
            os.kill(os.getpid(), signal.SIGINT)  # the user insists: the first signal's name, raised now


def test_exit_statuses_are_128_plus_the_signal_number():
    assert stop_status("SIGINT") == 130 == interrupts.INTERRUPTED_STATUS
    assert stop_status("SIGTERM") == 143

"""Loaded at start-up by every Python child process of a test (the test session puts this folder on
``PYTHONPATH``): when ``ARENA_TEST_SIM_PROBE`` is set, a simulation started here is reported to the test
process (``_sim_watch``). Does nothing otherwise."""

import os

if os.environ.get("ARENA_TEST_SIM_PROBE"):
    try:
        import _sim_watch

        _sim_watch.install(child=True)
    except Exception:  # never break a child process over the test suite's bookkeeping
        pass

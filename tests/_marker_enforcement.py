"""PYTEST_DONT_REWRITE

The suite's markers, registered and enforced (a pytest plugin; ``tests/conftest.py`` registers it, and
``pytest -p _marker_enforcement`` loads it into any other session, e.g. tests/test_markers.py's).

- ``sim``: the test starts a simulation (``isaaclab.app.launch_simulation`` or an ``isaaclab.sim.SimulationContext``),
  in the test process or in a child process it runs (the runner, the recorder, torchrun ranks, Ray workers).
- ``slow``: the test starts child processes (``subprocess``, ``os.fork``, multiprocessing) or is benchmark-like
  (over ~3 s on the 2-core CPU machine).

A test that starts a simulation without ``sim`` fails at that call (it is refused there, before the simulator
starts; in a child process the start is refused too and reported after the test phase), and so does a test
that starts a child process without ``slow``, so that ``pytest -m "not sim and not slow"`` stays the fast
loop and the markers cannot go stale: a test that gains a simulation or a subprocess fails in that loop until
it is marked. What a fixture starts counts for the test whose set-up runs it. ``os.fork`` cannot be stopped
where it is called (an at-fork hook's exception is lost): that test fails when its phase ends. Not seen: a
simulation in a child process started with an environment that drops ``PYTHONPATH`` (tests/test_docs.py's
pages, marked by hand).

Not counted as the test's child processes: system probes of the standard library (``platform.processor()``
runs ``uname -p`` when Warp starts) and processes started while a module is being imported (GitPython runs
``git version`` when ``rsl_rl`` is imported); both happen once per process, in whichever test comes first.

The summary also lists unmarked tests that took over ``--arena-slow-after`` seconds (3 by default), to mark
``slow`` (listed only: timings depend on the machine's load).

Under pytest-xdist (the suite's default, tests/conftest.py) each worker is a test session of its own and
enforces the markers of the tests it runs (a worker starts as a child process of the controller's session, so
``_sim_watch.install()`` turns it back into a test process); the controller lists the slow unmarked tests from
its workers' reports.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import sys
import tempfile

import pytest

_PROBE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_sim_probe")


def _load_watch():
    if "_sim_watch" in sys.modules:
        return sys.modules["_sim_watch"]
    spec = importlib.util.spec_from_file_location("_sim_watch", os.path.join(_PROBE_DIR, "_sim_watch.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules["_sim_watch"] = module
    spec.loader.exec_module(module)
    return module


_watch = _load_watch()

MARKERS = {
    "sim": "starts a simulation (isaaclab.app.launch_simulation / an isaaclab.sim.SimulationContext: an Isaac Lab "
           "env built or stepped), in the test process or a child process; 20-40 s per start on the 2-core CPU "
           "machine. Enforced: an unmarked test that starts one fails (tests/_marker_enforcement.py)",
    "slow": "starts child processes (subprocess, torchrun, Ray, os.fork) or is benchmark-like (> ~3 s). "
            "Enforced for child processes: an unmarked test that starts one fails",
    "distributed": "a torchrun (torch.distributed) or Ray job of several processes",
}

#: event kind -> the marker a test that causes it must carry
REQUIRED = {"sim": "sim", "subprocess": "slow"}


class MarkerEnforcement:
    def __init__(self, config):
        self.config = config
        self.item = None
        self.events: list[tuple[str, str]] = []
        self.slow_unmarked: list[tuple[float, str]] = []
        self.threshold = float(config.getoption("arena_slow_after", 3.0) or 3.0)
        self._env_before = {}
        self._tmp = None

    # -- session ------------------------------------------------------------------------------------------
    def start(self):
        _watch.install()
        _watch.push(self.listen)
        self._tmp = tempfile.TemporaryDirectory(prefix="arena-sim-probe-")
        for key in (_watch.PROBE_ENV, _watch.FORBID_ENV, "PYTHONPATH"):
            self._env_before[key] = os.environ.get(key)
        os.environ[_watch.PROBE_ENV] = self._tmp.name
        os.environ.pop(_watch.FORBID_ENV, None)
        path = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = _PROBE_DIR + (os.pathsep + path if path else "")

    def stop(self):
        _watch.pop(self.listen)
        for key, value in self._env_before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if self._tmp is not None:
            self._tmp.cleanup()

    # -- events -------------------------------------------------------------------------------------------
    def missing(self, kind):
        marker = REQUIRED[kind]
        if self.item is None or self.item.get_closest_marker(marker) is not None:
            return None
        return marker

    def listen(self, kind, detail, refuse=True):
        if self.item is None:  # collection, session fixtures outside any test: nobody to blame
            return
        self.events.append((kind, detail))
        marker = self.missing(kind)
        if marker is not None and refuse:
            pytest.fail(_message(self.item, marker, kind, detail), pytrace=True)

    def child_events(self):
        found = []
        for name in sorted(glob.glob(os.path.join(self._tmp.name, "*.sim"))):
            try:
                with open(name) as f:
                    found.append(("sim", f.read().strip()))
                os.remove(name)
            except OSError:
                pass
        return found

    # -- hooks --------------------------------------------------------------------------------------------
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self.child_events()  # a child left running by an earlier test is not this test's
        self.item = item
        self.events = []
        unmarked_sim = item.get_closest_marker("sim") is None
        if unmarked_sim:
            os.environ[_watch.FORBID_ENV] = "1"
        try:
            yield
        finally:
            os.environ.pop(_watch.FORBID_ENV, None)
            self.item = None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if item is not self.item:
            return
        self.events.extend(self.child_events())
        problems = [(kind, detail, self.missing(kind)) for kind, detail in self.events]
        problems = [p for p in problems if p[2] is not None]
        self.events = []
        if problems:
            kind, detail, marker = problems[0]
            if not report.failed:
                report.outcome = "failed"
                report.longrepr = _message(item, marker, kind, detail)
            else:  # failed already (e.g. its child process was refused): say why below the failure
                report.sections.append(("marker enforcement", _message(item, marker, kind, detail)))

    def pytest_runtest_logreport(self, report):
        """Unmarked slow tests, from the reports: under pytest-xdist the controller, which prints the summary,
        sees its workers' tests only through their reports (the enforcement itself runs in the worker)."""
        if (report.when == "call" and report.passed and report.duration > self.threshold
                and "slow" not in report.keywords and "sim" not in report.keywords):
            self.slow_unmarked.append((report.duration, report.nodeid))

    def pytest_terminal_summary(self, terminalreporter):
        if self.slow_unmarked:
            terminalreporter.write_sep("-", f"tests over {self.threshold:g} s marked neither slow nor sim")
            for duration, nodeid in sorted(self.slow_unmarked, reverse=True):
                terminalreporter.write_line(f"{duration:6.1f}s {nodeid}")


def _message(item, marker, kind, detail):
    what = "starts a simulation" if kind == "sim" else "starts a child process"
    return (f"{item.nodeid} {what} ({detail}) but is not marked `{marker}`: add "
            f"`@pytest.mark.{marker}` to the test or `pytestmark = [pytest.mark.{marker}]` to its module "
            f"(markers: tests/conftest.py; the fast loop `pytest -m \"not sim and not slow\"` must not run it)")


def pytest_addoption(parser):
    parser.addoption("--arena-slow-after", dest="arena_slow_after", type=float, default=3.0,
                     help="list unmarked tests slower than this many seconds (default 3)")


def pytest_configure(config):
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    plugin = MarkerEnforcement(config)
    config.pluginmanager.register(plugin, "arena_marker_enforcement")
    config._arena_marker_enforcement = plugin
    plugin.start()


def pytest_unconfigure(config):
    plugin = getattr(config, "_arena_marker_enforcement", None)
    if plugin is not None:
        plugin.stop()

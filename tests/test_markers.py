"""The suite's markers are enforced (tests/_marker_enforcement.py): a test that starts a simulation without
``sim``, or a child process without ``slow``, fails, so the fast loop ``pytest -m "not sim and not slow"``
cannot silently grow a simulation or a subprocess. Each case runs a tiny test file in a pytest session of its
own (pytester, in this process) with the enforcement plugin loaded; the simulation is only asked for
(``launch_simulation(...)`` called, its context not entered), so nothing starts."""

from __future__ import annotations

import os

import pytest

pytest_plugins = ["pytester"]

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def sim_launcher():
    """isaaclab.app.sim_launcher imported once here, so the inner sessions find it already watched."""
    import isaaclab.app.sim_launcher

    return isaaclab.app.sim_launcher


def run_inner(pytester, source, *args):
    pytester.makepyfile(test_inner=source)
    return pytester.runpytest_inprocess("-p", "_marker_enforcement", "-p", "no:cacheprovider", *args)


ASK_FOR_SIM = """
import pytest
from isaaclab.app import launch_simulation

{marker}
def test_asks_for_a_simulation():
    launch_simulation(None, {{"headless": True, "device": "cpu"}})  # not entered: starts nothing
"""


def test_unmarked_sim_test_is_rejected(pytester, sim_launcher):
    result = run_inner(pytester, ASK_FOR_SIM.format(marker=""))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_asks_for_a_simulation starts a simulation "
                                 "(isaaclab.app.launch_simulation) but is not marked `sim`*"])


def test_sim_marked_test_passes(pytester, sim_launcher):
    result = run_inner(pytester, ASK_FOR_SIM.format(marker="@pytest.mark.sim"))
    result.assert_outcomes(passed=1)


def test_fast_loop_deselects_the_sim_test(pytester, sim_launcher):
    result = run_inner(pytester, ASK_FOR_SIM.format(marker="@pytest.mark.sim"), "-m", "not sim and not slow")
    result.assert_outcomes(deselected=1)


def test_simulation_context_is_seen_and_refused_before_it_starts(pytester, sim_launcher):
    """A SimulationContext built without launch_simulation counts too; the refusal comes before it is made."""
    result = run_inner(pytester, """
import pytest

def test_builds_a_context():
    from isaaclab.sim import SimulationContext
    SimulationContext()
""")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*starts a simulation (isaaclab.sim.SimulationContext()) but is not marked `sim`*"])
    from isaaclab.sim import SimulationContext

    assert SimulationContext.instance() is None


def test_fixture_starting_a_sim_counts_for_the_test(pytester, sim_launcher):
    result = run_inner(pytester, """
import pytest
from isaaclab.app import launch_simulation

@pytest.fixture(scope="module")
def env():
    launch_simulation(None, {})

def test_uses_the_env(env):
    pass
""")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*test_uses_the_env starts a simulation*not marked `sim`*"])


SPAWN = """
import subprocess
import pytest

{marker}
def test_spawns():
    subprocess.run(["true"], check=True)
"""


def test_unmarked_subprocess_test_is_rejected(pytester):
    result = run_inner(pytester, SPAWN.format(marker=""))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_spawns starts a child process (subprocess.Popen(*true*) from *test_inner.py:6)"
                                 " but is not marked `slow`*"])


def test_slow_marked_subprocess_test_passes(pytester):
    result = run_inner(pytester, SPAWN.format(marker="@pytest.mark.slow"))
    result.assert_outcomes(passed=1)


def test_an_unmarked_fork_fails_the_test_after_the_fact(pytester):
    """``os.fork`` cannot be stopped where it is asked for (an at-fork hook's exception is lost): the test fails
    when its phase ends."""
    result = run_inner(pytester, """
import os

def test_forks():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
""")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_forks starts a child process (os.fork()) but is not marked `slow`*"])


def test_markers_are_registered(pytester):
    result = run_inner(pytester, """
import pytest

@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.distributed
def test_marked():
    pass
""", "--strict-markers")
    result.assert_outcomes(passed=1)


def test_this_session_enforces(request):
    """The suite's own session runs the enforcement (registered by tests/conftest.py) and its child processes
    get the probe (``sitecustomize`` on PYTHONPATH); this test, marked neither, may start neither."""
    assert request.config.pluginmanager.get_plugin("arena_marker_enforcement") is not None
    assert os.path.isdir(os.environ["ARENA_TEST_SIM_PROBE"])
    assert os.path.join(HERE, "_sim_probe") in os.environ["PYTHONPATH"].split(os.pathsep)
    assert os.environ.get("ARENA_TEST_SIM_FORBIDDEN") == "1"


@pytest.mark.slow
def test_sim_in_a_child_process_of_an_unmarked_test_is_rejected(pytester):
    """A ``slow`` test whose child process starts a simulation fails without ``sim``; the child is refused at
    the start, and when the test then fails on its own (here: the child's exit status) the reason is added to
    its report (two Python start-ups with the simulator's imports: several seconds)."""
    code = "import isaaclab.app.sim_launcher as s; s.launch_simulation(None, dict())"
    source = f"""
import subprocess, sys
import pytest

{{marker}}
def test_child_sim():
    out = subprocess.run([sys.executable, "-c", {code!r}], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
"""
    result = run_inner(pytester, source.format(marker="@pytest.mark.slow"))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_child_sim starts a simulation (isaaclab.app.launch_simulation in child process*"
                                 "but is not marked `sim`*"])
    result.stdout.fnmatch_lines(["*refused in a child process of a test not marked `sim`*"])  # the child's error
    result.stdout.fnmatch_lines(["*marker enforcement*"])  # the test failed on its own: the reason is added
    result = run_inner(pytester, source.format(marker="@pytest.mark.slow\n@pytest.mark.sim"))
    result.assert_outcomes(passed=1)


@pytest.mark.slow
def test_xdist_workers_enforce_and_the_controller_lists_slow_tests(pytester):
    """Under pytest-xdist (the suite's default, tests/_xdist_setup.py) each worker enforces the markers of the
    tests it runs (a worker starts as a child process of the controller's session and becomes a test process
    again), and the controller, which runs no test, lists the unmarked slow tests from its workers' reports."""
    pytester.makepyfile(test_inner=SPAWN.format(marker=""), test_inner_sleeps="""
import time

def test_takes_a_while():
    time.sleep(0.5)
""")
    # registered the suite's way (tests/conftest.py), by a conftest that the workers import too
    pytester.makeconftest(f"""
import sys
sys.path.insert(0, {HERE!r})
from _marker_enforcement import pytest_addoption, pytest_configure, pytest_unconfigure
""")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-n", "2",
                                          "--arena-slow-after", "0.2", "-rf")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*test_spawns starts a child process (subprocess.Popen(*true*) from *test_inner.py:6)"
                                 " but is not marked `slow`*"])
    result.stdout.fnmatch_lines(["*tests over 0.2 s marked neither slow nor sim*",
                                 "*s test_inner_sleeps.py::test_takes_a_while"])

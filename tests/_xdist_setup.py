"""PYTEST_DONT_REWRITE

The suite on several processes (pytest-xdist, pinned in requirements.txt), by default, with the README's command
unchanged: ``scripts/arena_python.sh -m pytest -q tests`` runs on ``WORKERS`` workers (fewer on a machine with
fewer cores). ``-n 0`` or ``-p no:xdist`` runs in one process (for debugging; ``--pdb`` and ``--trace`` do so too),
``-n N`` on N workers; an explicit ``--dist`` is used as given. A run of one test file (or of tests of one file) stays
in one process unless ``-n`` is given.

How the tests are shared out (the default, ``--dist`` not given):

- one test file is one unit of work, run whole on one worker: the files share expensive set-up through
  module-scoped fixtures (an env, a recording, a server), which a file split across workers would build twice;
  a few long files are split where nothing is built twice (``SPLIT``);
- files that must not run at the same time as each other form one unit (``SERIAL_GROUPS``): the Ray tests
  (``ray start``/``ray stop --force`` act on every Ray instance of the machine, and a plain ``ray.init()`` joins a
  running ``ray start`` cluster);
- the units go out longest first (``WEIGHTS``, seconds measured on the 2-core CPU machine; unlisted files are
  short and go last, in collection order), each to the first free worker, so that the longest file does not
  start last. The order of the tests inside a file is unchanged, and which worker runs a file changes nothing
  a test asserts (each test makes its own files under its own ``tmp_path``; the disk caches are written whole
  or not at all).
"""

from __future__ import annotations

import collections
import os

import pytest

#: workers by default (the suite is measured on 2 cores: more workers than cores only adds start-up cost)
WORKERS = 2

#: files that run in one unit of work, one after the other, on one worker (name -> group)
SERIAL_GROUPS = {
    "test_ray_eval.py": "ray",
    "test_record_many.py": "ray",
}

#: files whose tests are units of their own: no module- or class-scoped fixture to share (file -> None), or one
#: unit per value of the module-scoped parametrized fixture, each building only its own (file -> values; the
#: file's other tests are one more unit)
SPLIT = {
    "test_docs.py": None,
    "test_placement_bench.py": None,
    "test_record_shipped_examples.py": None,
    "test_reachability_agreement.py": ("franka_panda", "kuka_iiwa"),
}

#: seconds (one process, 2-core CPU machine, tests/ at 2026-12-06) per file, and per test for the longest tests
#: of the split files (their file's figure is then what its other tests take together): the units are handed
#: out in decreasing order of their figure; files under 4 s are not listed (0: last, in collection order)
WEIGHTS: dict[str, float] = {
    "test_reachability_agreement.py": 3,
    "test_reachability_agreement.py::test_verdicts_agree_with_pinocchio_outside_2mm_of_the_boundary[franka_panda]": 20,
    "test_reachability_agreement.py::test_a_misplaced_boundary_is_caught[franka_panda]": 4,
    "test_reachability_agreement.py::test_verdicts_agree_with_pinocchio_outside_2mm_of_the_boundary[kuka_iiwa]": 16,
    "test_reachability_agreement.py::test_a_misplaced_boundary_is_caught[kuka_iiwa]": 4,
    "test_reachability_agreement.py::test_a_later_process_reads_the_seed_library_from_disk_and_solves_a_spoilt_one_again": 28,
    "test_evaluation.py": 230,
    "test_distributed_eval.py": 191,
    "test_docs.py": 37,
    "test_docs.py::test_every_snippet_of_the_page_runs[RECORD_REPLAY.md]": 43,
    "test_docs.py::test_every_snippet_of_the_page_runs[VALIDATION.md]": 13,
    "test_docs.py::test_getting_started_from_a_clean_clone": 71,
    "test_ray_eval.py": 141,
    "test_record_shipped_examples.py": 38,
    "test_record_shipped_examples.py::test_shipped_example_records_with_default_settings[clutter/bin_clutter.yaml]": 21,
    "test_record_shipped_examples.py::test_shipped_example_records_with_default_settings[clutter/table_clutter.yaml]": 13,
    "test_record_shipped_examples.py::test_shipped_example_records_with_default_settings[robot/franka_pick_and_place.yaml]": 13,
    "test_record_shipped_examples.py::test_shipped_example_records_with_default_settings[robot/kuka_iiwa_pick_and_place.yaml]": 20,
    "test_record_shipped_examples.py::test_shipped_example_records_with_default_settings[tabletop/heterogeneous_tabletop.yaml]": 13,
    "test_record_shipped_examples.py::test_shipped_example_records_with_default_settings[tabletop/mesh_tucked_objects.yaml]": 17,
    "test_rsl_rl.py": 92,
    "test_placement_bench.py": 0,
    "test_placement_bench.py::test_bench_quick_mode_prints_parseable_lines": 29,
    "test_placement_bench.py::test_bench_compare_runs_both_sides_from_outside_the_repo": 17,
    "test_placement_bench.py::test_bench_robot_fill_prints_the_robot_pool_fill_of_each_arm": 33,
    "test_recorder.py": 57,
    "test_distributed_recording.py": 49,
    "test_first_hour_runner.py": 42,
    "test_failing_runs.py": 50,
    "test_record_many.py": 38,
    "test_first_hour_recorder.py": 31,
    "test_policy_runner_robot.py": 28,
    "test_env_spec_yaml_input.py": 27,
    "test_hostile_inputs.py": 27,
    "test_pooled_env.py": 20,
    "test_mesh_examples.py": 20,
    "test_settle_expected_rest.py": 17,
    "test_asset_listing.py": 15,
    "test_debug_view.py": 15,
    "test_export_layout_usd.py": 15,
    "test_second_arm.py": 14,
    "test_remote_policy.py": 14,
    "test_shipped_paths.py": 13,
    "test_first_hour_cli.py": 12,
    "test_object_pools_replay.py": 12,
    "test_core_boundary.py": 11,
    "test_env_robot_pick_and_place.py": 10,
    "test_eval_report.py": 9,
    "test_cli_errors.py": 8,
    "test_replay_env.py": 8,
    "test_newton_resting.py": 8,
    "test_env_spec_robot.py": 7,
    "test_property_replay.py": 7,
    "test_readme.py": 6,
    "test_bench_hostile_inputs.py": 5,
    "test_markers.py": 5,
    "test_curobo_backend.py": 5,
    "test_usd_mesh.py": 5,
    "test_env_spec_extensions.py": 5,
    "test_scene_budgets.py": 5,
    "test_robot_pictures.py": 4,
    "test_relation_kinds.py": 4,
}


def _parallel_by_default(config) -> bool:
    opt = config.option
    if os.environ.get("PYTEST_XDIST_WORKER"):  # a worker, or a pytest run by a test inside a worker
        return False
    if opt.numprocesses is not None or opt.tx or opt.dist != "no" or getattr(opt, "distload", False):
        return False  # asked for explicitly
    if opt.usepdb or getattr(opt, "trace", False) or opt.collectonly:
        return False
    # one test file (or tests of one file) runs in this process: a file is one unit of work, so a second worker
    # would only collect it again
    files = set()
    for arg in config.args or [os.getcwd()]:
        path = str(arg).split("::", 1)[0]
        if os.path.isdir(path):
            return True
        files.add(os.path.abspath(path))
    return len(files) > 1


@pytest.hookimpl(tryfirst=True)  # before xdist's own (registered earlier, so called later)
def pytest_cmdline_main(config):
    if not config.pluginmanager.hasplugin("xdist") or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    if _parallel_by_default(config):
        workers = min(WORKERS, os.cpu_count() or 1)
        if workers > 1:
            config.option.numprocesses = workers
            config.option.dist = "loadscope"
            config.pluginmanager.register(ArenaScheduler(), "arena_xdist_scheduler")


def unit_of(nodeid: str) -> str:
    """The unit of work of a test: its file, the group its file belongs to, or (``SPLIT``) the test itself or the
    file's tests of one parameter value."""
    path, _, name = nodeid.partition("::")
    base = os.path.basename(path)
    if base in SERIAL_GROUPS:
        return f"group:{SERIAL_GROUPS[base]}"
    if base in SPLIT:
        values = SPLIT[base]
        if values is None:
            return nodeid
        params = name.partition("[")[2].rstrip("]").split("-")
        for value in values:
            if value in params:
                return f"{path}[{value}]"
    return path


def weights(collection) -> dict[str, float]:
    """Seconds per unit of the collection (``WEIGHTS``)."""
    def key(nodeid):
        path, _, name = nodeid.partition("::")
        return f"{os.path.basename(path)}::{name}"

    unlisted = collections.Counter(os.path.basename(n.partition("::")[0]) for n in collection if key(n) not in WEIGHTS)
    out: dict[str, float] = collections.defaultdict(float)
    for nodeid in collection:
        base = os.path.basename(nodeid.partition("::")[0])
        seconds = WEIGHTS.get(key(nodeid))
        if seconds is None:
            seconds = WEIGHTS.get(base, 0.0) / unlisted[base]
        out[unit_of(nodeid)] += seconds
    return out


class ArenaScheduler:
    """Makes the controller's scheduler (registered only when the defaults above apply)."""

    def pytest_xdist_make_scheduler(self, config, log):
        from xdist.scheduler import LoadScopeScheduling

        class ArenaScheduling(LoadScopeScheduling):
            """xdist's ``loadscope`` with units of :func:`unit_of`, handed out longest first, one at a time."""

            def _split_scope(self, nodeid: str) -> str:
                return unit_of(nodeid)

            def _reschedule(self, node) -> None:
                # a worker keeps its last test until it knows the next one (or is shut down): give it the next
                # unit when one test is left, not earlier, so the other worker can take what is still queued
                if node.shutting_down:
                    return
                if not self.workqueue:
                    node.shutdown()
                    return
                if self._pending_of(self.assigned_work[node]) <= 1:
                    self._assign_work_unit(node)

            def schedule(self) -> None:
                assert self.collection_is_completed
                if self.collection is not None:
                    for node in self.nodes:
                        self._reschedule(node)
                    return
                if not self._check_nodes_have_same_collection():
                    self.log("**Different tests collected, aborting run**")
                    return
                self.collection = list(next(iter(self.registered_collections.values())))
                if not self.collection:
                    return
                units: dict[str, dict[str, bool]] = {}
                for nodeid in self.collection:
                    units.setdefault(self._split_scope(nodeid), {})[nodeid] = False
                seconds = weights(self.collection)
                for unit in sorted(units, key=lambda u: -seconds[u]):  # stable: ties keep their order
                    self.workqueue[unit] = units[unit]
                for _ in range(max(0, len(self.nodes) - len(self.workqueue))):  # more workers than units
                    unused, _assigned = self.assigned_work.popitem()
                    unused.shutdown()
                for node in self.nodes:
                    self._assign_work_unit(node)
                for node in self.nodes:
                    self._reschedule(node)
                if not self.workqueue:
                    for node in self.nodes:
                        node.shutdown()

        return ArenaScheduling(config, log)

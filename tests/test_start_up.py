"""Start-up cost: what a process imports before it needs it.

``utils/lazy_import`` defers a heavy package (trimesh, which pulls in scipy and networkx: about 0.5 s of every
process on the 2-core CPU machine, and the suite starts a few hundred) until an attribute of it is read, once even
when several threads read first at the same moment; a box scene's placement and its picture then load none of
them, nor pyplot."""

from __future__ import annotations

import os

import importlib
import json
import sys
import textwrap
import threading

import pytest

from _helpers import fresh_interpreter_last_line
from isaaclab_arena.utils.lazy_import import DeferredModule


def _probe_module(tmp_path, monkeypatch, name: str, body: str) -> DeferredModule:
    """A module ``name`` written under ``tmp_path`` (on ``sys.path``, not imported), deferred; its body counts its
    runs in ``builtins.<name>_runs``."""
    (tmp_path / f"{name}.py").write_text(f"import builtins\n{body}\n"
                                         f"builtins.{name}_runs = getattr(builtins, '{name}_runs', 0) + 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    import builtins

    monkeypatch.setattr(builtins, f"{name}_runs", 0, raising=False)
    return DeferredModule(name, lambda: importlib.import_module(name))


def _runs(name: str) -> int:
    import builtins

    return getattr(builtins, f"{name}_runs")


def test_the_module_runs_on_first_attribute_read_once(tmp_path, monkeypatch):
    mod = _probe_module(tmp_path, monkeypatch, "arena_lazy_probe", "VALUE = 42")
    assert _runs("arena_lazy_probe") == 0 and "arena_lazy_probe" not in sys.modules  # bound, not run
    assert mod.VALUE == 42 and _runs("arena_lazy_probe") == 1
    assert mod.VALUE == 42 and _runs("arena_lazy_probe") == 1  # run once
    import arena_lazy_probe  # a plain import after it sees the same module

    assert arena_lazy_probe.VALUE == 42 and _runs("arena_lazy_probe") == 1
    arena_lazy_probe.LATER = "added"  # a name the module gains afterwards is forwarded
    assert mod.LATER == "added"


def test_a_first_use_from_several_threads_at_once_runs_the_module_once(tmp_path, monkeypatch):
    """The module's code takes a while (0.2 s); 8 threads read its attribute at the same moment (the standard
    library's LazyLoader, used here first, gave 1 value of 8 on Python 3.12.1: the other threads raised)."""
    mod = _probe_module(tmp_path, monkeypatch, "arena_lazy_slow", "import time\ntime.sleep(0.2)\nVALUE = 7")
    start, seen = threading.Barrier(8), []

    def read():
        start.wait()
        seen.append(mod.VALUE)

    threads = [threading.Thread(target=read) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == [7] * 8 and _runs("arena_lazy_slow") == 1


def test_a_missing_package_fails_at_its_first_use(monkeypatch):
    mod = DeferredModule("arena_no_such_package", lambda: importlib.import_module("arena_no_such_package"))
    with pytest.raises(ImportError, match="arena_no_such_package"):
        mod.anything


#: One fresh interpreter for the three looks below (each start costs seconds): a box scene placed and drawn, then a
#: mesh built, then the IK seed library's disk name.
_PROBE = textwrap.dedent("""
    import json, os, sys
    import isaaclab_arena.environments.arena_env_builder, isaaclab_arena.env_spec.arena_env_graph_spec
    from isaaclab_arena.benchmarks.scenes import SCENES
    from isaaclab_arena.environments.placement_pictures import write_layout_picture
    from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
    from isaaclab_arena.relations.pooled_object_placer import PooledObjectPlacer
    heavy = ("trimesh", "scipy", "networkx", "matplotlib.pyplot")
    loaded = lambda: [m for m in heavy if m in sys.modules]
    out = {{"after_import": loaded()}}
    pool = PooledObjectPlacer(SCENES["boxes3"](), ObjectPlacerParams(placement_seed=5), num_envs=2)
    pool.initialize()
    path = write_layout_picture(pool, os.path.join({out!r}, "boxes.png"))
    out.update(after_picture=loaded(), png=os.path.getsize(path), passed=pool.current_passed.tolist())

    import isaaclab_arena_environments.assets.library as library
    from isaaclab_arena.tasks.destination_opening import destination_opening
    opening = destination_opening(library.bowl("bowl"), 0.005)  # the robot scenes' destination: a cylinder
    out["opening"] = {{"loaded": loaded(), "source": opening.source, "radius": opening.radius_m}}

    from isaaclab_arena.relations.compiler import collision_geometry
    before = "trimesh" in sys.modules
    vertices, faces = collision_geometry._box_mesh([0, 0, 0], [0.1, 0.2, 0.3])
    out["mesh"] = {{"before": before, "after": "trimesh" in sys.modules, "corners": len(vertices),
                   "triangles": len(faces), "top": float(vertices[:, 2].max())}}

    from isaaclab_arena.reachability.seed_library_cache import library_file_key
    key = library_file_key(("franka_panda", 64, 0.1))
    out["seed_library"] = {{"imported": "newton" in sys.modules, "name": key.startswith("ik_seed_library_")}}
    print(json.dumps(out))
""")


@pytest.fixture(scope="module")
def fresh_process(tmp_path_factory):
    return json.loads(fresh_interpreter_last_line(_PROBE.format(out=str(tmp_path_factory.mktemp("start_up")))))


@pytest.mark.slow
def test_a_box_scene_placed_and_drawn_loads_no_mesh_library_or_pyplot(fresh_process):
    got = fresh_process
    assert got["passed"] == [True, True] and got["png"] > 1000
    assert got["after_import"] == [] and got["after_picture"] == [], got


@pytest.mark.slow
def test_a_procedural_destinations_opening_loads_no_mesh_library(fresh_process):
    """The pick-and-place scenes' bowl (a cylinder): its opening at an evaluation's start needs no mesh (trimesh
    and scipy, about 0.5 s of every policy evaluation's start, came in through it)."""
    assert fresh_process["opening"] == {"loaded": [], "source": "closed top", "radius": 0.075}, fresh_process


@pytest.mark.slow
def test_a_mesh_scene_loads_trimesh_when_it_builds_a_mesh(fresh_process):
    assert fresh_process["mesh"] == {"before": False, "after": True, "corners": 8, "triangles": 12, "top": 0.3}, \
        fresh_process


@pytest.mark.slow
def test_the_seed_library_file_name_needs_no_newton_import(fresh_process):
    """The disk name of an IK seed library is made of its key, its solving code and the warp and torch versions:
    no newton (whose import costs about 1.5 s; the IK stopped using newton.ik on 2026-12-07)."""
    assert fresh_process["seed_library"] == {"imported": False, "name": True}, fresh_process


@pytest.mark.sim
@pytest.mark.slow
def test_the_start_up_benchmark_prints_its_figures_from_outside_the_repo(tmp_path):
    """``scripts/bench_start_up.py`` (the figures above, for comparing commits): one line per command with its
    wall clock, CPU seconds, collection seconds, peak memory and the heavy packages loaded (none on the README's scene)."""
    import re
    import subprocess

    from _outside import LAUNCHER
    from isaaclab_arena import ARENA_ROOT

    out = subprocess.run([LAUNCHER, f"{ARENA_ROOT}/scripts/bench_start_up.py", "--runs", "1", "--commands", "readme"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    line = out.stdout.strip().splitlines()[-1]
    m = re.fullmatch(r"bench start_up command=readme wall_s=([\d.]+) wall_max_s=([\d.]+) cpu_s=([\d.]+) gc_s=([\d.]+) "
                     r"full_collections=(\d+) peak_rss_gb=([\d.]+) loaded=(\S+) runs=1", line)
    assert m, line
    wall, _, cpu, gc_s, _, rss, loaded = m.groups()
    assert 0 < float(gc_s) < float(wall) and 0.1 < float(rss) < 16 and loaded == "-", line
    assert float(gc_s) < float(cpu) < len(os.sched_getaffinity(0)) * float(wall) + 1, line  # threads on its cores
    assert list(tmp_path.iterdir()) == []  # its outputs went to a temporary folder

"""Start-up cost: what a process imports before it needs it.

``utils/lazy_import.lazy_module`` defers a heavy package (trimesh, which pulls in scipy and networkx: about 0.5 s
of every process on the 2-core CPU machine, and the suite starts a few hundred) until an attribute of it is read;
a box scene's placement and its picture then load none of them, nor pyplot."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from _helpers import fresh_interpreter_last_line
from isaaclab_arena.utils.lazy_import import lazy_module


def test_lazy_module_runs_the_module_on_first_attribute_read_once(tmp_path, monkeypatch):
    (tmp_path / "arena_lazy_probe.py").write_text("import builtins\nbuiltins.arena_lazy_runs = "
                                                  "getattr(builtins, 'arena_lazy_runs', 0) + 1\nVALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "arena_lazy_probe", raising=False)
    import builtins

    monkeypatch.setattr(builtins, "arena_lazy_runs", 0, raising=False)
    mod = lazy_module("arena_lazy_probe")
    assert builtins.arena_lazy_runs == 0  # bound, not run
    assert mod.VALUE == 42 and builtins.arena_lazy_runs == 1
    assert mod.VALUE == 42 and builtins.arena_lazy_runs == 1  # run once
    assert lazy_module("arena_lazy_probe") is sys.modules["arena_lazy_probe"]  # imported: returned as it is
    import arena_lazy_probe  # a plain import after it sees the same module

    assert arena_lazy_probe.VALUE == 42 and builtins.arena_lazy_runs == 1


def test_lazy_module_of_a_missing_package_fails_at_its_line():
    with pytest.raises(ImportError, match="arena_no_such_package"):
        lazy_module("arena_no_such_package")


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
    loaded = lambda: [m for m in heavy if m in sys.modules and type(sys.modules[m]).__name__ != "_LazyModule"]
    out = {{"after_import": loaded()}}
    pool = PooledObjectPlacer(SCENES["boxes3"](), ObjectPlacerParams(placement_seed=5), num_envs=2)
    pool.initialize()
    path = write_layout_picture(pool, os.path.join({out!r}, "boxes.png"))
    out.update(after_picture=loaded(), png=os.path.getsize(path), passed=pool.current_passed.tolist())

    from isaaclab_arena.relations.compiler import collision_geometry
    before = type(sys.modules["trimesh"]).__name__
    vertices, faces = collision_geometry._box_mesh([0, 0, 0], [0.1, 0.2, 0.3])
    out["mesh"] = {{"before": before, "after": type(sys.modules["trimesh"]).__name__, "corners": len(vertices),
                   "triangles": len(faces), "top": float(vertices[:, 2].max())}}

    from isaaclab_arena.reachability.seed_library_cache import library_file_key
    key = library_file_key(("franka_panda", 64, 0.1))
    imported = "newton" in sys.modules
    import newton
    from importlib import metadata
    def missing(name):
        raise metadata.PackageNotFoundError(name)
    metadata.version = missing  # newton not installed as a distribution: the module's version is read
    out["seed_library"] = {{"imported": imported, "same": library_file_key(("franka_panda", 64, 0.1)) == key,
                           "version": newton.__version__}}
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
def test_a_mesh_scene_loads_trimesh_when_it_builds_a_mesh(fresh_process):
    assert fresh_process["mesh"] == {"before": "_LazyModule", "after": "module", "corners": 8, "triangles": 12,
                                     "top": 0.3}, fresh_process


@pytest.mark.slow
def test_the_seed_library_file_name_needs_no_newton_import(fresh_process):
    """The disk name of an IK seed library carries newton's version, read from its installed metadata: the same
    name as from ``newton.__version__`` (earlier files stay valid) without newton's 1.8 s import."""
    got = fresh_process["seed_library"]
    assert got["imported"] is False and got["same"] is True and got["version"], got

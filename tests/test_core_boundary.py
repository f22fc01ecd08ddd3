"""The placement core (assets, relations, utils) imports nothing from isaaclab, isaacsim, omni or pxr.

Two ways of looking: the source (every import statement, inside functions too, parsed with ``ast``) and a fresh
interpreter that imports every core module and places a plain-geometry scene, with an import hook that names
the core module that pulled a forbidden package in. Geometry that lives in USD files comes from an injected
reader; without one the asset model says what to import (checked here in a fresh interpreter too).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

import pytest

from isaaclab_arena import ARENA_ROOT

FORBIDDEN = ("isaaclab", "isaacsim", "omni", "pxr")
CORE_PACKAGES = ("isaaclab_arena/assets", "isaaclab_arena/relations", "isaaclab_arena/utils")
#: Core modules known to break the boundary, with the reason (owner and issue); none today.
KNOWN_BREAKS: dict[str, str] = {}


def _core_files() -> list[str]:
    out = []
    for pkg in CORE_PACKAGES:
        for root, _, files in os.walk(os.path.join(ARENA_ROOT, pkg)):
            out += [os.path.relpath(os.path.join(root, f), ARENA_ROOT) for f in files if f.endswith(".py")]
    return sorted(out)


def _module_name(path: str) -> str:
    name = path[:-3].replace(os.sep, ".")
    return name[: -len(".__init__")] if name.endswith(".__init__") else name


CORE_MODULES = [_module_name(p) for p in _core_files()]


def _module_case(module: str):
    marks = [pytest.mark.xfail(reason=KNOWN_BREAKS[module], strict=True)] if module in KNOWN_BREAKS else []
    return pytest.param(module, marks=marks, id=module)


def _imports(path: str) -> list[tuple[int, str]]:
    """(line, imported module) of every import statement in ``path``, at any depth (functions included)."""
    with open(os.path.join(ARENA_ROOT, path)) as f:
        tree = ast.parse(f.read(), filename=path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) in (
                "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
            found.append((node.lineno, str(node.args[0].value)))
    return found


def _path_case(path: str):
    module = _module_name(path)
    marks = [pytest.mark.xfail(reason=KNOWN_BREAKS[module], strict=True)] if module in KNOWN_BREAKS else []
    return pytest.param(path, marks=marks, id=path)


@pytest.mark.parametrize("path", [_path_case(p) for p in _core_files()])
def test_core_source_has_no_simulator_or_usd_import(path):
    bad = [f"{path}:{line}: {name}" for line, name in _imports(path) if name.split(".")[0] in FORBIDDEN]
    assert not bad, "the placement core imports a simulator / USD package:\n" + "\n".join(bad)


def test_the_ast_check_sees_imports_inside_functions(tmp_path):
    """The check above would catch the way the core used to break the line (an import inside a function)."""
    src = tmp_path / "isaaclab_arena" / "bad.py"
    src.parent.mkdir()
    src.write_text("def cuboid():\n    from isaaclab.sim import CuboidCfg\n    import pxr.Usd\n    return CuboidCfg\n")
    found = _imports(str(src))  # an absolute path joins to itself
    assert [name for _, name in found] == ["isaaclab.sim", "pxr.Usd"]


_PROBE = r"""
import importlib, json, sys
FORBIDDEN = {forbidden!r}
blame = {{}}

def _importer():
    f = sys._getframe(2)
    while f is not None:
        name = f.f_globals.get("__name__", "")
        if name.startswith("isaaclab_arena"):
            return name
        f = f.f_back
    return "<outside isaaclab_arena>"

class Hook:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in FORBIDDEN:
            blame.setdefault(_importer(), set()).add(name.split(".")[0])
        return None

sys.meta_path.insert(0, Hook())
import isaaclab_arena.relations.relations
relations_loads_assets = any(m.startswith("isaaclab_arena.assets") for m in sys.modules)
for module in {modules!r}:
    importlib.import_module(module)
from isaaclab_arena.relations.object_placer import ObjectPlacer
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.benchmarks.scenes import SCENES
assets = SCENES["mug_bowl"]()
results = ObjectPlacer(ObjectPlacerParams(placement_seed=3)).place(assets, num_envs=2)
print(json.dumps({{"blame": {{k: sorted(v) for k, v in blame.items()}},
                  "loaded": sorted(m for m in sys.modules if m.split(".")[0] in FORBIDDEN),
                  "relations_loads_assets": relations_loads_assets,
                  "passed": [bool(r.success) for r in results]}}))
"""


@pytest.fixture(scope="module")
def fresh_core_import(tmp_path_factory):
    """Imports every core module, then places ``mug_bowl`` on 2 envs, in a fresh interpreter (outside the repo)."""
    script = _PROBE.format(forbidden=FORBIDDEN, modules=CORE_MODULES)
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path_factory.mktemp("probe"), capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("module", [_module_case(m) for m in CORE_MODULES])
def test_core_module_pulls_in_no_simulator_or_usd(fresh_core_import, module):
    assert module not in fresh_core_import["blame"], \
        f"importing {module} imported {fresh_core_import['blame'][module]}"


@pytest.mark.slow
def test_core_import_and_placement_leave_simulator_and_usd_unloaded(fresh_core_import):
    assert fresh_core_import["loaded"] == [] or set(fresh_core_import["blame"]) <= set(KNOWN_BREAKS), fresh_core_import
    assert fresh_core_import["passed"] == [True, True]  # the placer really ran on plain geometry


@pytest.mark.slow
def test_relations_model_does_not_import_the_asset_model(fresh_core_import):
    # assets import relations (markers such as IsAnchor); the reverse would be a cycle
    assert fresh_core_import["relations_loads_assets"] is False


_NO_READER = r"""
import isaaclab.sim as sim_utils
from isaaclab_arena.assets.asset import Object
from isaaclab_arena.assets.geometry_reader import MissingGeometryReaderError
from isaaclab_arena.relations.object_placer import ObjectPlacer
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.relations.relations import On
from isaaclab_arena.benchmarks.scenes import table

t = table()
bin_ = Object("bin", sim_utils.UsdFileCfg(usd_path={usd!r})).add_relation(On(t))
try:
    ObjectPlacer(ObjectPlacerParams(placement_seed=1)).place([t, bin_], num_envs=1)
    print("NO ERROR")
except MissingGeometryReaderError as err:
    print("ERROR", err)
import isaaclab_arena.adapters  # installs the USD reader: the same call now works
result = ObjectPlacer(ObjectPlacerParams(placement_seed=1)).place([t, bin_], num_envs=1)[0]
box = bin_.get_bounding_box()
print("SIZE", *box.size, "BOTTOM", result.positions["bin"][2] + box.min_point[2], "PASSED", bool(result.success))
"""


@pytest.mark.slow
def test_usd_bounds_without_a_reader_say_what_to_import(tmp_path):
    usd = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "assets", "usd", "bin.usda")
    out = subprocess.run([sys.executable, "-c", _NO_READER.format(usd=usd)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.strip().splitlines()
    error = next(line for line in lines if line.startswith(("ERROR", "NO ERROR")))
    assert error.startswith("ERROR asset 'bin': the bounds of USD file") and "bin.usda" in error
    assert "import isaaclab_arena.adapters" in error and "bounding_box=" in error
    size_line = next(line for line in lines if line.startswith("SIZE")).split()
    # bin.usda: outer 0.30 x 0.20 x 0.10 m (metres; generate_usd.py)
    assert [round(float(v), 6) for v in size_line[1:4]] == [0.3, 0.2, 0.1]
    # placed On the 0.75 m table top with the default 0.01 m clearance
    assert abs(float(size_line[5]) - 0.76) < 1e-3 and size_line[-1] == "True"

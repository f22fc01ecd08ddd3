"""Architecture rules, checked on the source: no import cycles, no module over 500 lines, no class hierarchy
deeper than two (project classes above a class), a placement core that imports no simulator."""

from __future__ import annotations

import ast
import importlib
import inspect
import os

import pytest

from isaaclab_arena import ARENA_ROOT

PACKAGES = ("isaaclab_arena", "isaaclab_arena_environments", "isaaclab_arena_curobo")
#: The placement core: plain geometry, torch and warp only.
CORE = ("isaaclab_arena.relations", "isaaclab_arena.assets", "isaaclab_arena.utils")
SIMULATORS = ("isaaclab", "isaacsim", "omni", "pxr")
MAX_LINES = 500


def _modules() -> dict[str, str]:
    """Module name -> source path of every module of the project's packages."""
    out = {}
    for pkg in PACKAGES:
        root = os.path.join(ARENA_ROOT, pkg)
        for dirpath, dirnames, files in os.walk(root):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for f in files:
                if f.endswith(".py"):
                    rel = os.path.relpath(os.path.join(dirpath, f), ARENA_ROOT)[:-3].replace(os.sep, ".")
                    out[rel[:-len(".__init__")] if rel.endswith(".__init__") else rel] = os.path.join(dirpath, f)
    return out


MODULES = _modules()


def _imports(path: str, module: str, modules: dict[str, str] | None = None) -> list[tuple[str, int]]:
    """(imported module, line) of every import of a file, at any depth, type-only ones (``if TYPE_CHECKING:``)
    included: a cycle through a type hint is still a cycle (the strict count)."""
    tree = ast.parse(open(path).read(), path)
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    out = []

    def visit(node):
        if isinstance(node, ast.Import):
            out.extend((a.name, node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
            out.append((base, node.lineno))
            out.extend((f"{base}.{a.name}", node.lineno) for a in node.names
                       if f"{base}.{a.name}" in (MODULES if modules is None else modules))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return out


def _graph(modules: dict[str, str] | None = None) -> dict[str, set[str]]:
    """Module -> the modules its imports run: each imported module and every package above it (importing
    ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__`` first), but not the packages above the importing module
    itself (Python has run them before it)."""
    modules = MODULES if modules is None else modules
    graph = {m: set() for m in modules}
    for m, path in modules.items():
        for name, _ in _imports(path, m, modules):
            parts = name.split(".")
            for d in [".".join(parts[:k]) for k in range(1, len(parts))] + [name]:
                if d in modules and d != m and not m.startswith(d + "."):
                    graph[m].add(d)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    import sys

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            strong(v)
    return out


def test_no_import_cycles():
    # a package __init__ that imports its own submodules is not a cycle of dependence between modules
    assert _cycles(_graph()) == []


def test_the_cycle_count_sees_the_package_an_import_runs(tmp_path):
    # pkg.tables imports pkg.kinds.kind, which runs pkg/kinds/__init__, which imports a kind that imports pkg.tables:
    # importing pkg.tables first fails (a partially initialised module), though no module names the other's package
    files = {"pkg": "", "pkg.tables": "from pkg.kinds.kind import Row\n", "pkg.kinds": "from pkg.kinds import a_kind\n",
             "pkg.kinds.kind": "Row = 1\n", "pkg.kinds.a_kind": "from pkg.tables import X\n"}
    modules = {}
    for name, text in files.items():
        path = tmp_path / (name.replace(".", "_") + ("__init__.py" if name in ("pkg", "pkg.kinds") else ".py"))
        path.write_text(text)
        modules[name] = str(path)
    assert _cycles(_graph(modules)) == [["pkg.kinds", "pkg.kinds.a_kind", "pkg.tables"]]


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_strict_count_sees_type_only_imports(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from isaaclab_arena.assets import asset\n")
    assert "isaaclab_arena.assets.asset" in [n for n, _ in _imports(str(src), "x.m")]


def test_core_imports_no_simulator_even_inside_functions():
    bad = []
    for m, path in MODULES.items():
        if m.startswith(CORE):
            for name, line in _imports(path, m):
                if name.split(".")[0] in SIMULATORS:
                    bad.append(f"{m}:{line} imports {name}")
    assert bad == []


def test_the_simulator_scan_sees_imports_inside_functions(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("def f():\n    import pxr.Usd\n")
    assert [n for n, _ in _imports(str(src), "x.m")] == ["pxr.Usd"]


def test_no_module_over_500_lines():
    long = {m: n for m, p in MODULES.items() if (n := len(open(p).read().splitlines())) > MAX_LINES}
    assert long == {}


def _project_classes():
    for m in sorted(MODULES):
        try:
            mod = importlib.import_module(m)
        except Exception as err:  # a module that cannot import in this venv fails the suite elsewhere
            pytest.fail(f"cannot import {m}: {err}")
        for _, cls in inspect.getmembers(mod, inspect.isclass):
            if cls.__module__ == m:
                yield cls


def _depth(cls) -> int:
    """Longest chain of project classes above ``cls`` (a mixin beside a base adds no depth)."""
    bases = [b for b in cls.__bases__ if b.__module__.split(".")[0] in PACKAGES]
    return max((_depth(b) + 1 for b in bases), default=0)


def test_no_class_hierarchy_deeper_than_two():
    deep = {f"{cls.__module__}.{cls.__qualname__}": _depth(cls) for cls in _project_classes() if _depth(cls) > 2}
    assert deep == {}


def test_the_depth_counts_chains_not_mixins():
    class A: ...
    class B(A): ...
    class C(B): ...
    class D(C): ...
    for c in (A, B, C, D):
        c.__module__ = "isaaclab_arena.x"
    assert [_depth(c) for c in (A, B, C, D)] == [0, 1, 2, 3]

    class Mixin: ...
    Mixin.__module__ = "isaaclab_arena.x"

    class E(Mixin, C): ...
    assert _depth(E) == 3


#: The public API at the top of ``relations/`` (the paths users import); every other module sits in a stage's
#: sub-package (docs/ARCHITECTURE.md, "Where things live").
RELATIONS_PUBLIC = {"relations", "relation_base", "markers", "object_placer", "object_placer_params",
                    "pooled_object_placer", "relation_solver", "relation_solver_params", "extensions"}


def test_relations_holds_only_the_public_modules_and_stage_packages():
    top = os.path.join(ARENA_ROOT, "isaaclab_arena", "relations")
    loose = {f[:-3] for f in os.listdir(top) if f.endswith(".py") and f != "__init__.py"}
    assert loose == RELATIONS_PUBLIC
    packages = {d for d in os.listdir(top) if os.path.isfile(os.path.join(top, d, "__init__.py"))}
    assert packages == {"kinds", "compiler", "kernels", "solving", "validation", "diagnostics", "mesh",
                        "optimization"}


def test_every_moved_module_keeps_its_old_import_path():
    import warnings

    from isaaclab_arena.relations import MOVED_MODULES, SEED_PATHS

    assert len(MOVED_MODULES) == 27
    for old, new in MOVED_MODULES.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            module = importlib.import_module(f"isaaclab_arena.relations.{old}")
        assert module is importlib.import_module(new), old
        # the first import of the old path warns with the new path (a later one is served from sys.modules)
        assert all(new in str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)), old
        if old in SEED_PATHS:
            assert not [w for w in caught if issubclass(w.category, DeprecationWarning)], old


@pytest.mark.slow
def test_record_and_replay_live_in_one_package():
    """The file format, its values, the replay queue and the recorder: ``offline_placement``; the seed's path
    ``relations.placement_layouts`` is the same module, imported without a warning, in a fresh interpreter."""
    import subprocess
    import sys

    for name in ("placement_layouts", "layout_values", "placement_replay", "recording", "recording_output"):
        assert f"isaaclab_arena.offline_placement.{name}" in MODULES, name
    # the placement core neither reads nor writes layout files
    assert not [f"{m} imports {n}" for m, path in MODULES.items() if m.startswith(CORE)
                for n, _ in _imports(path, m) if n.startswith("isaaclab_arena.offline_placement")]
    code = ("import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
            "from isaaclab_arena.relations.placement_layouts import PlacementLayouts\n"
            "import isaaclab_arena.relations.layouts.placement_replay as old\n"
            "import isaaclab_arena.offline_placement.placement_replay as new\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ARENA_ROOT, capture_output=True, text=True, timeout=120)
    assert "DeprecationWarning: isaaclab_arena.relations.layouts moved to isaaclab_arena.offline_placement" in out.stderr
    code = code.replace("warnings.simplefilter('error', DeprecationWarning)", "warnings.simplefilter('ignore')")
    code += ("import isaaclab_arena.offline_placement.placement_layouts as fmt, sys\n"
             "assert old is new and PlacementLayouts is fmt.PlacementLayouts\n"
             "assert sys.modules['isaaclab_arena.relations.placement_layouts'] is fmt\n"
             "print('same')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ARENA_ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "same", out.stderr[-2000:]


def test_a_name_that_never_existed_is_still_an_import_error():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("isaaclab_arena.relations.no_such_module")


#: The optional backends: they implement ``relations.extensions.PlacementExtension`` and import the core.
BACKENDS = ("isaaclab_arena.reachability", "isaaclab_arena.debug", "isaaclab_arena_curobo")
#: The one module that names the default set of backends (the placer imports it for ``extensions=None``).
COMPOSITION_ROOT = "isaaclab_arena.placement_extensions"


def _string_imports(path: str) -> list[int]:
    """Lines of ``importlib.import_module(...)`` / ``__import__(...)`` calls in a file."""
    tree = ast.parse(open(path).read(), path)
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in ("import_module", "__import__"):
                lines.append(node.lineno)
    return lines


def test_the_core_loads_no_module_by_name():
    # the one exception: the old import paths of moved modules (MOVED_MODULES), each resolved to its new path
    bad = [f"{m}:{line}" for m, path in MODULES.items() if m.startswith(CORE) and m != "isaaclab_arena.relations"
           for line in _string_imports(path)]
    assert bad == []
    assert len(_string_imports(MODULES["isaaclab_arena.relations"])) == 1


def test_the_string_import_scan_sees_import_module(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("import importlib\n\ndef f():\n    return importlib.import_module('x')\n")
    assert _string_imports(str(src)) == [4]


def test_the_core_imports_backends_only_through_the_composition_root():
    """No core module imports a backend; the core's one edge out is the composition root, which imports the
    backends (and none of them imports it back: no cycles, checked above)."""
    bad, root_users = [], []
    for m, path in MODULES.items():
        if not m.startswith(CORE):
            continue
        for name, line in _imports(path, m):
            if name.startswith(BACKENDS):
                bad.append(f"{m}:{line} imports {name}")
            if name == COMPOSITION_ROOT:
                root_users.append(m)
    assert bad == []
    assert root_users == ["isaaclab_arena.relations.object_placer"]
    graph = _graph()
    assert not any(d == COMPOSITION_ROOT for b, deps in graph.items() if b.startswith(BACKENDS) for d in deps)
    assert {d for d in graph[COMPOSITION_ROOT]} >= {"isaaclab_arena.reachability.extension",
                                                      "isaaclab_arena.debug.extension"}

"""The YAML loader's shape: one module per job, none over 500 lines, no import cycle with the env builder
(``env_spec`` imports ``environments``, never the other way round). Read from the sources (AST), not by
importing them."""

from __future__ import annotations

import ast
import os

from isaaclab_arena import ARENA_ROOT

PACKAGE = os.path.join(ARENA_ROOT, "isaaclab_arena")


def _modules(*packages: str) -> dict[str, str]:
    out = {}
    for package in packages:
        folder = os.path.join(PACKAGE, package)
        for name in sorted(os.listdir(folder)):
            if name.endswith(".py"):
                module = f"isaaclab_arena.{package}" + ("" if name == "__init__.py" else f".{name[:-3]}")
                out[module] = os.path.join(folder, name)
    return out


def _imports(path: str) -> set[str]:
    """Every ``isaaclab_arena`` module a file imports, at any depth (inside functions too)."""
    found = set()
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return {m for m in found if m.startswith("isaaclab_arena.")}


def test_environments_never_import_env_spec():
    for module, path in _modules("environments").items():
        bad = sorted(m for m in _imports(path) if m.startswith("isaaclab_arena.env_spec"))
        assert bad == [], f"{module} imports {bad}"


def test_no_import_cycle_between_env_spec_and_environments():
    modules = _modules("env_spec", "environments")
    graph = {m: {i for i in _imports(p) if i in modules and i != m} for m, p in modules.items()}
    for module in modules:  # importing a package's submodule runs the package first
        for target in list(graph[module]):
            package = target.rsplit(".", 1)[0]
            if package in modules and package != module and not module.startswith(package + "."):
                graph[module].add(package)
    state: dict[str, int] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph[module]):
            assert state.get(target) != 1, f"import cycle: {' -> '.join(path + [target])}"
            if target not in state:
                visit(target, path + [target])
        state[module] = 2

    for module in modules:
        if module not in state:
            visit(module, [module])


def test_env_spec_modules_are_small():
    for module, path in _modules("env_spec").items():
        with open(path) as f:
            assert len(f.readlines()) <= 500, module

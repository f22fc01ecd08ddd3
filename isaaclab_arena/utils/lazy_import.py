"""Modules imported on first use: ``trimesh = lazy_module("trimesh")`` binds a module object whose code runs
the first time one of its attributes is read (``importlib.util.LazyLoader``).

For the heavy optional packages only the mesh paths need: ``import trimesh`` pulls in scipy and networkx, about
0.5 s of every process's start-up on the 2-core CPU machine, while a scene of boxes never builds a mesh. A module
already imported is returned as it is; a missing one raises ``ImportError`` here, at the import line, as a plain
import would."""

from __future__ import annotations

import importlib.util
import sys
import types


def lazy_module(name: str) -> types.ModuleType:
    """The module ``name``, executed on first attribute access (at once when already imported)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"No module named {name!r}", name=name)
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module

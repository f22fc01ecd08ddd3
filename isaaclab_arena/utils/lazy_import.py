"""Heavy packages imported on first use: ``from isaaclab_arena.utils.lazy_import import trimesh`` binds a stand-in
whose first attribute read runs the package's import and reads the attribute from it.

For the packages only the mesh paths need: ``import trimesh`` pulls in scipy and networkx, about 0.5 s of every
process's start-up on the 2-core CPU machine, while a scene of boxes never builds a mesh. The import is a plain
``import`` statement (:func:`_import_trimesh`), so the interpreter's per-module locks make a first use from several
threads at once safe (the standard library's ``LazyLoader`` raised in 7 of 8 such threads on Python 3.12.1),
``sys.modules`` only ever holds the real module, and a missing package raises its ``ImportError`` at the first use.
"""

from __future__ import annotations

import types
from collections.abc import Callable


class DeferredModule(types.ModuleType):
    """Stands in for the module ``name`` until an attribute is read; then calls ``load`` (which imports and returns
    the module) and, from then on, holds the module's names itself (a name the module gains afterwards is still
    forwarded)."""

    def __init__(self, name: str, load: Callable[[], types.ModuleType]):
        super().__init__(name)
        self.__dict__["_deferred_load"] = load

    def __getattr__(self, attr: str):
        module = self.__dict__["_deferred_load"]()
        self.__dict__.update((k, v) for k, v in vars(module).items() if k != "__name__")
        return getattr(module, attr)


def _import_trimesh() -> types.ModuleType:
    import trimesh

    return trimesh


#: trimesh (meshes of MESH collision, sphere covers, USD colliders), imported on first use.
trimesh = DeferredModule("trimesh", _import_trimesh)

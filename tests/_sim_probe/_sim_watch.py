"""Cheap detection of what a test starts: a simulation (``isaaclab.app.launch_simulation`` called or an
``isaaclab.sim.SimulationContext`` constructed) and child processes (``subprocess.Popen``, ``os.fork``,
multiprocessing's spawn). Used by the test suite's marker check (``tests/_marker_enforcement.py``); it imports
no simulator module and costs nothing until one of these is used.

The simulator modules are wrapped when they are imported (an import hook on ``isaaclab.app.sim_launcher`` and
``isaaclab.sim.simulation_context``, or at once if they already are), so a test that imports them lazily is
still seen. In a child process of a test (loaded by ``sitecustomize`` in this folder when
``ARENA_TEST_SIM_PROBE`` names a folder), a simulation start writes one file to that folder, which the test
process reads after each test phase; with ``ARENA_TEST_SIM_FORBIDDEN`` set, the start is also refused there.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import subprocess
import sys
import time

PROBE_ENV = "ARENA_TEST_SIM_PROBE"
FORBID_ENV = "ARENA_TEST_SIM_FORBIDDEN"

_SIM_MODULES = ("isaaclab.app.sim_launcher", "isaaclab.sim.simulation_context")

#: Callables ``(kind, detail, refuse)`` that receive the events of this process; the last one pushed gets them
#: (a nested pytest session, e.g. pytester's in-process run, owns what its tests start). ``refuse``: the
#: listener may raise to stop the call (not where the exception would be lost: an ``os.fork`` hook).
_listeners: list = []
_child = False
_installed = False


def push(listener) -> None:
    _listeners.append(listener)


def pop(listener) -> None:
    if listener in _listeners:
        _listeners.remove(listener)


def _record(kind: str, detail: str, refuse: bool = True) -> None:
    if _listeners:
        _listeners[-1](kind, detail, refuse)
    elif _child and kind == "sim":
        folder = os.environ.get(PROBE_ENV)
        if folder and os.path.isdir(folder):
            name = os.path.join(folder, f"{os.getpid()}-{time.monotonic_ns()}.sim")
            try:
                with open(name, "w") as f:
                    f.write(f"{detail} in child process {os.getpid()}: {' '.join(sys.argv)[:300]}\n")
            except OSError:
                pass
        if os.environ.get(FORBID_ENV):
            raise RuntimeError(f"{detail}: refused in a child process of a test not marked `sim` "
                               "(tests/conftest.py, tests/_marker_enforcement.py)")


def _wrap_launch(module) -> None:
    original = getattr(module, "launch_simulation", None)
    if original is None or getattr(original, "_arena_watched", False):
        return

    def launch_simulation(*args, **kwargs):
        _record("sim", "isaaclab.app.launch_simulation")
        return original(*args, **kwargs)

    launch_simulation._arena_watched = True
    launch_simulation.__wrapped__ = original
    launch_simulation.__doc__ = original.__doc__
    module.launch_simulation = launch_simulation


def _wrap_context(module) -> None:
    cls = getattr(module, "SimulationContext", None)
    if cls is None or getattr(cls.__init__, "_arena_watched", False):
        return
    original = cls.__init__

    def __init__(self, *args, **kwargs):
        _record("sim", "isaaclab.sim.SimulationContext()")
        original(self, *args, **kwargs)

    __init__._arena_watched = True
    __init__.__wrapped__ = original
    cls.__init__ = __init__


_PATCHERS = {"isaaclab.app.sim_launcher": _wrap_launch, "isaaclab.sim.simulation_context": _wrap_context}


class _Finder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: for the watched modules, it lets the other finders find them and wraps the
    loader's ``exec_module`` so the module is patched as soon as it has run."""

    def find_spec(self, name, path, target=None):
        if name not in _PATCHERS:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        exec_module = loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            _PATCHERS[name](module)

        loader.exec_module = exec_and_patch
        return spec


#: Standard-library modules that run a short system command to answer a question (``platform.processor()``
#: runs ``uname -p``, which Warp asks at start-up): their child processes are not the test's.
_PROBING_STDLIB = ("platform.py", "uuid.py", os.path.join("ctypes", "util.py"))


def _spawner():
    """``(file, line)`` of the code that asked for the child process: the first frame outside ``subprocess``."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename in (subprocess.__file__, __file__):
        frame = frame.f_back
    return (frame.f_code.co_filename, frame.f_lineno) if frame is not None else ("?", 0)


def _importing() -> bool:
    """True while a module is being imported (a library asking at import time, e.g. GitPython's ``git version``
    when ``rsl_rl`` is imported): which test pays for that depends on the test order, so it is not counted."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename == "<frozen importlib._bootstrap>":
            return True
        frame = frame.f_back
    return False


def _stdlib_probe(filename: str) -> bool:
    stdlib = os.path.dirname(os.__file__)
    return filename.startswith(stdlib + os.sep) and filename.endswith(_PROBING_STDLIB) and \
        "site-packages" not in filename


def _popen_init_wrapper(original):
    def __init__(self, args, *rest, **kwargs):
        if not _child and _listeners:
            filename, line = _spawner()
            if not _stdlib_probe(filename) and not _importing():
                _record("subprocess", f"subprocess.Popen({args!r})"[:300] + f" from {filename}:{line}")
        original(self, args, *rest, **kwargs)

    __init__._arena_watched = True
    __init__.__wrapped__ = original
    return __init__


def _before_fork() -> None:
    if not _child and _listeners:
        _record("subprocess", "os.fork()", refuse=False)


_parent_hooks = False


def install(child: bool = False) -> None:
    """Start watching (idempotent). ``child``: this is a child process of a test (sitecustomize).

    A process that a test session's ``sitecustomize`` set up as a child and that then runs a test session of its
    own (a pytest-xdist worker: the workers are child processes of the controller's session) becomes a test
    process when that session calls ``install()``: its own child processes are watched from then on."""
    global _child, _installed, _parent_hooks
    _child = child
    if not _installed:
        _installed = True
        sys.meta_path.insert(0, _Finder())
        for name, patch in _PATCHERS.items():
            if name in sys.modules:
                patch(sys.modules[name])
    if not child and not _parent_hooks:
        _parent_hooks = True
        if not getattr(subprocess.Popen.__init__, "_arena_watched", False):
            subprocess.Popen.__init__ = _popen_init_wrapper(subprocess.Popen.__init__)
        os.register_at_fork(before=_before_fork)
        try:  # multiprocessing's spawn and forkserver start methods start their process here
            import multiprocessing.util as mp_util

            original = mp_util.spawnv_passfds
            if not getattr(original, "_arena_watched", False):
                def spawnv_passfds(path, args, passfds):
                    _record("subprocess", f"multiprocessing spawn {list(args)!r}"[:300])
                    return original(path, args, passfds)

                spawnv_passfds._arena_watched = True
                mp_util.spawnv_passfds = spawnv_passfds
        except ImportError:
            pass

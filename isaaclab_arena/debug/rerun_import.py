"""Importing ``rerun-sdk`` for the debug view, and a fallback installer for an environment that lacks it.

``rerun-sdk`` (with ``pyarrow``) is pinned in ``requirements.txt`` at ``RERUN_SDK_VERSION`` /
``PYARROW_VERSION``, so the project's environment (``scripts/ensure_env.sh``) has it and ``import rerun`` just
works; ``tests/test_hostile_inputs.py`` keeps the pins and these constants equal. ``import_rerun`` imports it
from the environment; only when an environment was built without it (another interpreter, an older
environment) does it look in a folder of its own, ``~/.cache/isaaclab_arena/tools-rerun/<version>``
(``ISAACLAB_ARENA_RERUN_DIR`` overrides it), which ``scripts/arena_python.sh -m isaaclab_arena.debug.rerun_import``
fills (appended to ``sys.path``, so the environment's own packages still win). Run in the project's
environment, that command only reports the version it finds.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys

#: The rerun-sdk release the debug view is written and tested against (and pyarrow, its dependency); the same
#: versions are pinned in requirements.txt.
RERUN_SDK_VERSION = "0.41.0"
PYARROW_VERSION = "26.0.1"
#: The command that installs it (printed by the error below).
INSTALL_COMMAND = "scripts/arena_python.sh -m isaaclab_arena.debug.rerun_import"


class DebugViewerUnavailableError(RuntimeError):
    """``debug_visualize`` was asked for but ``rerun-sdk`` cannot be imported."""


def rerun_dir() -> str:
    """The folder the installer fills and ``import_rerun`` reads (``ISAACLAB_ARENA_RERUN_DIR`` or the cache)."""
    default = os.path.join(os.path.expanduser("~"), ".cache", "isaaclab_arena", "tools-rerun", RERUN_SDK_VERSION)
    return os.environ.get("ISAACLAB_ARENA_RERUN_DIR") or default


def import_rerun():
    """The ``rerun`` module, or ``DebugViewerUnavailableError`` with the install command (one line)."""
    try:
        return importlib.import_module("rerun")
    except ImportError:
        pass
    folder = rerun_dir()
    if os.path.isdir(os.path.join(folder, "rerun")):
        if folder not in sys.path:
            sys.path.append(folder)
        try:
            return importlib.import_module("rerun")
        except ImportError as err:
            raise DebugViewerUnavailableError(
                f"debug_visualize: rerun-sdk in {folder} does not import ({err}); reinstall it with: "
                f"{INSTALL_COMMAND}") from None
    raise DebugViewerUnavailableError(
        f"debug_visualize needs rerun-sdk=={RERUN_SDK_VERSION} (pinned in requirements.txt), which this Python "
        f"environment lacks; run through scripts/arena_python.sh, or install it with: {INSTALL_COMMAND}")


def viewer_executable() -> str | None:
    """The Rerun viewer binary shipped in the ``rerun-sdk`` wheel (None when not found)."""
    try:
        cli = importlib.import_module("rerun_cli")
    except ImportError:
        return None
    path = os.path.join(os.path.dirname(cli.__file__), "rerun")
    return path if os.path.isfile(path) else None


def install(folder: str | None = None) -> str:
    """Installs the pinned ``rerun-sdk`` and ``pyarrow`` into ``folder`` (default ``rerun_dir()``) with this
    interpreter's pip, without touching the environment; nothing happens when it is already there."""
    folder = folder or rerun_dir()
    if os.path.isfile(os.path.join(folder, ".complete")):
        return folder
    tmp = f"{folder}.partial-{os.getpid()}"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
                    "--target", tmp, f"rerun-sdk=={RERUN_SDK_VERSION}", f"pyarrow=={PYARROW_VERSION}"], check=True)
    open(os.path.join(tmp, ".complete"), "w").close()
    os.makedirs(os.path.dirname(folder), exist_ok=True)
    if os.path.isdir(folder):  # an earlier install that did not finish
        shutil.rmtree(folder)
    try:
        os.rename(tmp, folder)  # whole or nothing: a half-installed folder is never read
    except OSError:
        if not os.path.isfile(os.path.join(folder, ".complete")):  # not a concurrent install that finished
            raise
    return folder


def environment_version() -> str | None:
    """The version of ``rerun-sdk`` installed in this environment itself (not the fallback folder), else None."""
    from importlib import metadata

    try:
        return metadata.version("rerun-sdk")
    except metadata.PackageNotFoundError:
        return None


if __name__ == "__main__":
    found = environment_version()
    if found is not None:
        print(f"rerun-sdk {found} is in this environment (requirements.txt pins {RERUN_SDK_VERSION}); nothing to install")
    else:
        print(f"rerun-sdk {RERUN_SDK_VERSION} is in {install()}")

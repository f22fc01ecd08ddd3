"""Disk cache of what takes seconds to compute and is the same every time: MESH geometry (sphere covers,
signed-distance grids) and the IK checker's seed libraries (:mod:`isaaclab_arena.reachability.ik_reachability`).

Entries are ``.npz`` files under ``$ARENA_MESH_CACHE`` (default ``~/.cache/isaaclab_arena/mesh_cache``; an empty
value turns the cache off), named by a key that the caller derives from the mesh's content, its settings
and the source of the module computing it (so a change of the algorithm never reads an old entry). Files
are written whole (temporary file, then rename) or not at all; an unreadable entry is recomputed.
"""

from __future__ import annotations

import hashlib
import os
import zipfile

import numpy as np

from isaaclab_arena.utils.atomic_files import written_whole


def source_digest(path: str) -> str:
    """A short digest of a source file (part of the keys of what that module computes)."""
    with open(path, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()[:16]


def folder() -> str | None:
    path = os.environ.get("ARENA_MESH_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "isaaclab_arena",
                                                            "mesh_cache"))
    return path or None


def load(key: str) -> dict | None:
    """The arrays stored under ``key``, or None."""
    base = folder()
    path = os.path.join(base, key + ".npz") if base else None
    if path is None or not os.path.isfile(path):
        return None
    try:
        with np.load(path) as data:
            return {name: data[name].copy() for name in data.files}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):  # a spoilt entry is computed again
        return None


def store(key: str, **arrays) -> None:
    """Stores ``arrays`` under ``key`` (silently skipped when the folder cannot be written)."""
    base = folder()
    if not base:
        return
    try:  # written whole or not at all; a full disk or a Ctrl-C while writing leaves no temporary file behind
        os.makedirs(base, exist_ok=True)
        with written_whole(os.path.join(base, key + ".npz"), "wb") as out:
            np.savez(out, **arrays)
    except OSError:
        pass

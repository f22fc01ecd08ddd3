"""Relative paths of shipped files (``isaaclab_arena_environments/...``, as the docs write them) from any folder.

A relative path is taken from the working directory first; when nothing is there but the isaaclab_arena checkout
(``ARENA_ROOT``) has a file at that path, the checkout's file is used and that is said on stderr in one line
(as ``scripts/arena_python.sh`` does for script paths). A path that is in neither place is returned unchanged
for its caller to refuse with :func:`where_paths_are_looked_for` in the message.
"""

from __future__ import annotations

import os
import sys

from isaaclab_arena import ARENA_ROOT


def shipped_path(path: str) -> str:
    """``path`` itself when it exists or is absolute; else the checkout's file at that relative path when there is
    one (said on stderr); else ``path`` unchanged."""
    if not path or os.path.isabs(path) or os.path.exists(path):
        return path
    inside = os.path.join(ARENA_ROOT, path)
    if os.path.isfile(inside):
        print(f"arena: {path} is not in {os.getcwd()}; using {inside}", file=sys.stderr, flush=True)
        return inside
    return path


def where_paths_are_looked_for() -> str:
    """The words for a refusal of a missing relative path."""
    return f"relative paths are taken from the working directory {os.getcwd()}, then from the isaaclab_arena " \
           f"checkout {ARENA_ROOT}"

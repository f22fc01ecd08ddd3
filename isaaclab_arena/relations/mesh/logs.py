"""Log lines of MESH collision handling that are printed once per key: ``[NoCollision]`` and ``[MeshSDF]``.

- ``[NoCollision]``: an asset has no collision mesh, so pairs against it stay on bounding boxes.
- ``[MeshSDF]``: a mesh's signed distance cannot be queried reliably (open surface kept on request, a
  query that found no closest point or gave a non-finite distance), or a non-watertight target was
  replaced by its convex hull.
"""

from __future__ import annotations

import logging

logger = logging.getLogger("isaaclab_arena.relations.mesh")
NO_COLLISION = "NoCollision"
MESH_SDF = "MeshSDF"
_seen: set[tuple[str, str]] = set()


def log_once(tag: str, key: str, message: str, level: int = logging.WARNING) -> bool:
    """Logs ``[tag] message`` the first time (tag, key) is seen in this process; returns whether it logged."""
    if (tag, key) in _seen:
        return False
    _seen.add((tag, key))
    logger.log(level, f"[{tag}] {message}")
    return True


def forget_logged() -> None:
    """Forgets which lines were logged (tests that check the once-only behaviour start from here)."""
    _seen.clear()

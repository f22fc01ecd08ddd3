"""Disk cache of the IK checker's seed libraries, so that a later process builds its checker without solving
its library again (about 0.3 s): entries of :mod:`isaaclab_arena.relations.mesh.disk_cache` (``$ARENA_MESH_CACHE``,
off when empty), named by the library's in-process key, the source of every module its solve runs and the
versions of warp and torch. Written whole or not at all; a spoilt entry is solved again."""

from __future__ import annotations

import hashlib
import os

import torch

#: Modules of this package whose code decides a library's content.
SOLVE_SOURCES = ("ik_reachability.py", "limit_polish.py", "chain_fk.py", "grasp_targets.py", "reach_bounds.py",
                 "urdf_chain.py")


def library_file_key(key: tuple) -> str:
    """Disk-cache name of a seed library: its in-process key plus the source of every module its solve runs
    and the versions of warp and torch, so that a changed algorithm never reads an old library."""
    import warp as wp

    from isaaclab_arena.relations.mesh import disk_cache

    here = os.path.dirname(os.path.abspath(__file__))
    sources = [disk_cache.source_digest(os.path.join(here, name)) for name in SOLVE_SOURCES]
    text = repr((key, sources, wp.config.version, torch.__version__))
    return "ik_seed_library_" + hashlib.sha1(text.encode()).hexdigest()[:24]


def load_library(key: tuple, device: torch.device) -> tuple[torch.Tensor, torch.Tensor] | None:
    """A seed library an earlier process stored (:mod:`~isaaclab_arena.relations.mesh.disk_cache`: under
    ``$ARENA_MESH_CACHE``, off when that is empty), or None; an unreadable entry is solved again."""
    from isaaclab_arena.relations.mesh import disk_cache

    data = disk_cache.load(library_file_key(key))
    if data is None or set(data) != {"rz", "q"} or data["rz"].ndim != 2 or len(data["rz"]) != len(data["q"]):
        return None
    return (torch.from_numpy(data["rz"]).to(device), torch.from_numpy(data["q"]).to(device))


def store_library(key: tuple, rz: torch.Tensor, q: torch.Tensor) -> None:
    """Stores a solved seed library for later processes (written whole or not at all)."""
    from isaaclab_arena.relations.mesh import disk_cache

    disk_cache.store(library_file_key(key), rz=rz.cpu().numpy(), q=q.cpu().numpy())

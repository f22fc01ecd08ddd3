"""Host rows to device tables: one warp array per compiled table, kept alive by the problem."""

from __future__ import annotations

import itertools

import numpy as np
import warp as wp

from isaaclab_arena.relations.kernels.tables import vec6i, vec12i
from isaaclab_arena.relations.mesh import pack_mesh_tables

#: ``no_mesh_tables`` per device.
_empty_mesh: dict = {}


def device_array(values, dtype, width, device, keep: list):
    """A warp array of ``dtype`` on ``device`` from ``values`` (a numpy array, or a list of numbers or of rows of
    ``width`` numbers; int32 for the integer types, float32 otherwise), one placeholder row when empty; appended
    to ``keep``."""
    npd = np.int32 if dtype in (int, vec6i, vec12i, wp.vec2i) else np.float32
    if width is not None and isinstance(values, list) and values:  # rows of Python numbers: a flat read is faster
        values = np.fromiter(itertools.chain.from_iterable(values), npd, len(values) * width).reshape(-1, width)
    values = np.asarray(values, dtype=npd)
    if values.size == 0:
        values = np.zeros((1,) if width is None else (1, width), dtype=npd)
    a = wp.array(values, dtype=dtype, device=device)
    keep.append(a)
    return a


def no_mesh_tables(device: str):
    """A MESH table of no geometry (the placeholder of scenes whose pairs are all boxes), shared per device."""
    if device not in _empty_mesh:
        _empty_mesh[device] = pack_mesh_tables([], np.full((1, 1), -1), device)
    return _empty_mesh[device]

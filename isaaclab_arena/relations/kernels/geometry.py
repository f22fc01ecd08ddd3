"""Pose and bounds helpers for the kernels (metres, xyzw quaternions, env-local world frame)."""

from __future__ import annotations

import contextlib

import warp as wp

from isaaclab_arena.utils.parking_spots import PARKED_ABOVE_M

_ready = False


def ensure_warp() -> None:
    """Initialises warp once (quietly)."""
    global _ready
    if not _ready:
        wp.config.log_level = wp.LOG_WARNING
        wp.init()
        _ready = True


def torch_stream(device: str):
    """Context in which warp work on ``device`` runs on torch's current CUDA stream, so it is ordered
    with the torch operations that fill its inputs and read its outputs (warp otherwise uses a stream
    of its own). Nothing to do on the CPU."""
    if str(device).startswith("cuda"):
        import torch

        return wp.ScopedStream(wp.stream_from_torch(torch.cuda.current_stream(torch.device(device))))
    return contextlib.nullcontext()


def copy_into(dst, src) -> None:
    """``dst[...] = src`` (torch tensors, ``src`` broadcast to ``dst``). On the CPU through numpy, on one thread:
    torch's own copy of a large tensor runs on its OpenMP threads, which then spin for milliseconds after the
    copy on the very cores the placement threads are about to use (measured: half the check throughput of a
    boxes3 batch of 65,536 on 2 cores). Elsewhere, or between dtypes, torch's ``copy_``."""
    if dst.device.type == "cpu" and src.device.type == "cpu" and dst.dtype == src.dtype:
        import numpy as np

        np.copyto(dst.detach().numpy(), src.detach().numpy())
    else:
        dst.copy_(src)


def copy_rows(dst, rows, picks, *srcs) -> None:
    """``dst[rows[k]] = src[picks[k]]`` along the first dimension, for every k (``rows`` distinct), where ``src`` is
    ``srcs`` joined along their last dimension (torch tensors; ``rows`` and ``picks`` int64). On the CPU through
    numpy, on one thread, as :func:`copy_into` (a torch gather or scatter of a few 10,000 elements runs on its
    OpenMP threads: on 2 busy cores a pool's row copies took 10x longer than numpy's), a row of several values
    moved as one opaque item of its bytes (numpy's per-element loops over rows of a few floats cost 2x more; the
    bytes, NaN payloads included, are copied as they are); elsewhere ``index_select`` and ``index_copy_``."""
    if dst.device.type == "cpu" and all(s.device.type == "cpu" and s.dtype == dst.dtype for s in srcs):
        import numpy as np

        out = dst.detach().numpy()
        idx, at = picks.numpy(), rows.numpy()
        if idx.size == 0 or out.size == 0:
            return
        parts = [s.detach().numpy() for s in srcs]
        src = parts[0] if len(parts) == 1 else _join_last_axis(parts)
        if out.flags.c_contiguous and out.size > out.shape[0]:  # rows of several values: one item per row
            np.put(_row_items(out), at, _row_items(np.ascontiguousarray(src)).take(idx))
        else:
            out[at] = src.take(idx, axis=0)
    else:
        import torch

        src = srcs[0] if len(srcs) == 1 else torch.cat(srcs, -1)
        dst.index_copy_(0, rows, src.index_select(0, picks).to(dst.dtype))


def _row_items(a):
    """A C-contiguous (R, ...) numpy array as (R,) opaque items, one per row (a view: writes go to ``a``)."""
    import numpy as np

    flat = a.reshape(a.shape[0], -1)
    return flat.view(np.dtype((np.void, flat.shape[1] * a.itemsize)))[:, 0]


def _last_axis_items(a):
    """A numpy array whose last axis is contiguous as its (...,) opaque items, one per last-axis vector (a view)."""
    import numpy as np

    return a.view(np.dtype((np.void, a.shape[-1] * a.itemsize)))[..., 0]


def _join_last_axis(parts: list):
    """numpy arrays of one dtype and equal leading shape, joined along their last axis (``np.concatenate``'s
    result, each part's vectors copied as opaque items: 3x faster for vectors of a few floats)."""
    import numpy as np

    out = np.empty(parts[0].shape[:-1] + (sum(p.shape[-1] for p in parts),), dtype=parts[0].dtype)
    k = 0
    for p in parts:
        w = p.shape[-1]
        if w and out.size:
            if p.strides[-1] != p.itemsize:
                p = np.ascontiguousarray(p)
            _last_axis_items(out[..., k:k + w])[...] = _last_axis_items(p)
        k += w
    return out


BIG = wp.constant(1.0e9)
PI = wp.constant(3.14159265358979)
#: An object whose origin is above this env-local z (m) is a parked pool member (``assets/object_pool.py``): the
#: kernels leave it where it is and skip its relations (its pairs are empty: it is far from everything).
PARKED_Z = wp.constant(float(PARKED_ABOVE_M))


@wp.func
def parked(p: wp.vec3) -> bool:
    """Whether an origin (env-local, m) is a parking spot."""
    return p[2] > PARKED_Z


@wp.func
def mix32(h: wp.uint32) -> wp.uint32:
    """Integer hash (avalanche) used to derive one random stream per (seed, env, draw)."""
    h = ((h >> wp.uint32(16)) ^ h) * wp.uint32(0x45D9F3B)
    h = ((h >> wp.uint32(16)) ^ h) * wp.uint32(0x45D9F3B)
    h = (h >> wp.uint32(16)) ^ h
    return h


@wp.func
def candidate_rng(seed: int, env_id: int, draw_id: int) -> wp.uint32:
    """Random state of one candidate: a pure function of (placement seed, env id, draw id)."""
    h = mix32(wp.uint32(seed) ^ wp.uint32(0x2545F49))
    h = mix32(h ^ wp.uint32(env_id))
    h = mix32(h ^ (wp.uint32(draw_id) * wp.uint32(0x27D4EB2D)))
    return wp.rand_init(int(h & wp.uint32(0x7FFFFFFF)))


@wp.func
def rotated_offsets(q: wp.quat, llo: wp.vec3, lhi: wp.vec3):
    """World-aligned bounds of a local box [llo, lhi] rotated by q, relative to the object origin.

    Returns (lo, hi) such that the object's world AABB is [p + lo, p + hi] for origin p. The identity rotation
    (most objects: the check pass refits every object) skips the matrix: the same values as the products with
    it, which are exact (for a zero-width box at -0.0, the sign of that zero aside).
    """
    c = 0.5 * (llo + lhi)
    h = 0.5 * (lhi - llo)
    if q[0] == 0.0 and q[1] == 0.0 and q[2] == 0.0 and q[3] == 1.0:
        return c - h, c + h
    r = wp.quat_to_matrix(q)
    cr = r * c
    hx = wp.abs(r[0, 0]) * h[0] + wp.abs(r[0, 1]) * h[1] + wp.abs(r[0, 2]) * h[2]
    hy = wp.abs(r[1, 0]) * h[0] + wp.abs(r[1, 1]) * h[1] + wp.abs(r[1, 2]) * h[2]
    hz = wp.abs(r[2, 0]) * h[0] + wp.abs(r[2, 1]) * h[1] + wp.abs(r[2, 2]) * h[2]
    hr = wp.vec3(hx, hy, hz)
    return cr - hr, cr + hr


@wp.func
def yaw_quat(yaw: float) -> wp.quat:
    """Rotation about world Z by ``yaw`` radians."""
    return wp.quat(0.0, 0.0, wp.sin(0.5 * yaw), wp.cos(0.5 * yaw))


@wp.func
def rpy_quat(roll: float, pitch: float, yaw: float) -> wp.quat:
    """Extrinsic X (roll), then Y (pitch), then Z (yaw), radians."""
    qx = wp.quat(wp.sin(0.5 * roll), 0.0, 0.0, wp.cos(0.5 * roll))
    qy = wp.quat(0.0, wp.sin(0.5 * pitch), 0.0, wp.cos(0.5 * pitch))
    return yaw_quat(yaw) * (qy * qx)


@wp.func
def box_overlaps(lo_i: wp.vec3, hi_i: wp.vec3, lo_j: wp.vec3, hi_j: wp.vec3, clearance: float) -> wp.vec3:
    """Per-axis overlap of two AABBs each grown by clearance/2 (positive on every axis = intersecting)."""
    return wp.vec3(
        wp.min(hi_i[0], hi_j[0]) - wp.max(lo_i[0], lo_j[0]) + clearance,
        wp.min(hi_i[1], hi_j[1]) - wp.max(lo_i[1], lo_j[1]) + clearance,
        wp.min(hi_i[2], hi_j[2]) - wp.max(lo_i[2], lo_j[2]) + clearance,
    )


@wp.func
def vmin3(v: wp.vec3) -> float:
    return wp.min(wp.min(v[0], v[1]), v[2])


SHRINK = wp.constant(1.0e-5)  # projection targets lie this far inside an interval when it is wide enough


@wp.func
def flagged(excess: float, slack: float, cause: int):
    """(excess, cause) when the excess is beyond the check's slack, else (excess, 0)."""
    if excess > slack:
        return excess, cause
    return excess, 0


@wp.func
def shrunk(lo: float, hi: float):
    """[lo, hi] moved inward by SHRINK on both ends when it stays non-empty."""
    if hi - lo > 2.0 * SHRINK:
        return lo + SHRINK, hi - SHRINK
    return lo, hi


@wp.func
def with_room(lo: float, hi: float, room_lo: float, room_hi: float):
    """[lo, hi] less ``room_lo`` at its low end and ``room_hi`` at its high end; when that leaves nothing, the
    point of [lo, hi] nearest to where the room would balance (the relation itself still holds there)."""
    if lo > hi:  # already empty: nothing to keep
        return lo, hi
    l = lo + room_lo
    h = hi - room_hi
    if l <= h:
        return l, h
    m = wp.clamp(0.5 * (l + h), lo, hi)
    return m, m


@wp.func
def overlap_depth(lo_i: wp.vec3, hi_i: wp.vec3, lo_j: wp.vec3, hi_j: wp.vec3, clearance: float) -> float:
    """Penetration depth of two AABBs grown by clearance/2 each (<= 0: apart or touching)."""
    return vmin3(box_overlaps(lo_i, hi_i, lo_j, hi_j, clearance))


@wp.func
def unit(axis: int) -> wp.vec3:
    v = wp.vec3(0.0)
    v[axis] = 1.0
    return v

"""Two shortcuts of the box kernels (issue 21) that must give the bits of what they replace: an unrotated object's
world-box offsets without its rotation matrix (``geometry.rotated_offsets``), and a pair's clearance-grown depth as
its plain depth plus the clearance (``evaluate.evaluate_candidate``). Each is compared with the long way on random
float32 boxes, in a warp kernel as the solver computes them, and the offsets of turned objects with a float64
numpy reference."""

from __future__ import annotations

import numpy as np
import warp as wp

from isaaclab_arena.relations.kernels.geometry import ensure_warp, overlap_depth, rotated_offsets


@wp.kernel(enable_backward=False)
def _offsets(q: wp.array(dtype=wp.quat), llo: wp.array(dtype=wp.vec3), lhi: wp.array(dtype=wp.vec3),
             lo: wp.array(dtype=wp.vec3), hi: wp.array(dtype=wp.vec3)):
    t = wp.tid()
    a, b = rotated_offsets(q[t], llo[t], lhi[t])
    lo[t] = a
    hi[t] = b


@wp.kernel(enable_backward=False)
def _depths(lo_i: wp.array(dtype=wp.vec3), hi_i: wp.array(dtype=wp.vec3), lo_j: wp.array(dtype=wp.vec3),
            hi_j: wp.array(dtype=wp.vec3), clearance: wp.array(dtype=float), grown: wp.array(dtype=float),
            plus: wp.array(dtype=float)):
    t = wp.tid()
    grown[t] = overlap_depth(lo_i[t], hi_i[t], lo_j[t], hi_j[t], clearance[t])
    plus[t] = overlap_depth(lo_i[t], hi_i[t], lo_j[t], hi_j[t], 0.0) + clearance[t]


def _run_offsets(q: np.ndarray, llo: np.ndarray, lhi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ensure_warp()
    n = q.shape[0]
    lo, hi = wp.zeros(n, dtype=wp.vec3, device="cpu"), wp.zeros(n, dtype=wp.vec3, device="cpu")
    wp.launch(_offsets, dim=n, device="cpu", inputs=[wp.array(q, dtype=wp.quat, device="cpu"),
                                                      wp.array(llo, dtype=wp.vec3, device="cpu"),
                                                      wp.array(lhi, dtype=wp.vec3, device="cpu"), lo, hi])
    return lo.numpy(), hi.numpy()


def _random_boxes(rng, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Local boxes (n, 3) float32 about off-centre origins, zero widths included."""
    centre = rng.uniform(-0.3, 0.3, (n, 3))
    half = rng.uniform(0.0, 0.2, (n, 3))
    half[: n // 8] = 0.0  # flat and zero-width boxes
    return (centre - half).astype(np.float32), (centre + half).astype(np.float32)


def test_unrotated_offsets_are_the_bits_of_the_identity_matrix_product():
    """(0, 0, 0, 1) takes the shortcut; (0, 0, 0, -1) is the same rotation through the matrix (the shortcut does
    not catch it): every bit of both results agrees, and both are the local box itself to within rounding."""
    rng = np.random.default_rng(0)
    n = 4096
    llo, lhi = _random_boxes(rng, n)
    ident = np.tile(np.array([0.0, 0.0, 0.0, 1.0], np.float32), (n, 1))
    lo_a, hi_a = _run_offsets(ident, llo, lhi)
    lo_b, hi_b = _run_offsets(-ident, llo, lhi)
    assert lo_a.tobytes() == lo_b.tobytes() and hi_a.tobytes() == hi_b.tobytes()
    assert np.allclose(lo_a, llo, atol=1e-6) and np.allclose(hi_a, lhi, atol=1e-6)


def test_turned_offsets_match_a_float64_reference_and_the_shortcut_skips_no_turn():
    """Random rotations (and turns about Z by as little as 1e-3 rad, next to the identity): the offsets are the
    float64 AABB of the rotated local box to 1e-5 m; a shortcut taken for them (the local box unturned) would be off
    by up to the box's size."""
    rng = np.random.default_rng(1)
    n = 2048
    llo, lhi = _random_boxes(rng, n)
    q = rng.normal(size=(n, 4))
    yaw = rng.uniform(1e-3, 2e-3, n // 4)
    q[: n // 4] = np.stack([np.zeros_like(yaw), np.zeros_like(yaw), np.sin(yaw / 2), np.cos(yaw / 2)], -1)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    lo, hi = _run_offsets(q.astype(np.float32), llo, lhi)
    x, y, z, w = q.T
    r = np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w),
                  2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
                  2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1).reshape(n, 3, 3)
    c, h = 0.5 * (llo + lhi).astype(np.float64), 0.5 * (lhi - llo).astype(np.float64)
    cr = np.einsum("nij,nj->ni", r, c)
    hr = np.einsum("nij,nj->ni", np.abs(r), h)
    assert np.abs(lo - (cr - hr)).max() < 1e-5 and np.abs(hi - (cr + hr)).max() < 1e-5
    assert np.abs(lo - llo).max() > 0.05  # the turned boxes do differ from their local box


def test_the_clearance_grown_depth_is_the_depth_plus_the_clearance_bit_for_bit():
    """Random pairs of boxes (apart, touching, overlapping, identical) and clearances (0 included): the depth of the
    boxes grown by the clearance and the plain depth plus the clearance agree in every bit."""
    ensure_warp()
    rng = np.random.default_rng(2)
    n = 20000
    lo_i, hi_i = _random_boxes(rng, n)
    lo_j, hi_j = _random_boxes(rng, n)
    lo_j[:500], hi_j[:500] = lo_i[:500], hi_i[:500]  # identical boxes
    lo_j[500:1000, 0] = hi_i[500:1000, 0]  # touching along X
    clearance = rng.choice(np.array([0.0, 0.01, 0.002, 0.1], np.float32), n).astype(np.float32)
    arr = lambda a, t=wp.vec3: wp.array(a, dtype=t, device="cpu")  # noqa: E731
    grown, plus = wp.zeros(n, dtype=float, device="cpu"), wp.zeros(n, dtype=float, device="cpu")
    wp.launch(_depths, dim=n, device="cpu", inputs=[arr(lo_i), arr(hi_i), arr(lo_j), arr(hi_j),
                                                     arr(clearance, float), grown, plus])
    g, p = grown.numpy(), plus.numpy()
    assert g.tobytes() == p.tobytes()
    assert (g > 0).any() and (g < 0).any()  # overlapping and apart pairs both

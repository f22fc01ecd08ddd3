"""Spheres that hold every pose a serial chain can reach: the IK check refuses targets outside them without
solving (:mod:`isaaclab_arena.reachability.ik_reachability`, stage 0). Metres, the chain's base frame."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from isaaclab_arena.reachability.urdf_chain import UrdfChain


@dataclass(frozen=True)
class ReachBounds:
    """Two spheres that hold what a chain can reach, in its base frame (metres); any radius inf when unbounded.

    Attributes:
        centre: (3,) the farthest joint origin along the chain that no joint moves (the first joint's origin, or
            a later one on the axes of every joint before it). Joints turning about axes through it keep
            distances to it; every later joint origin and the TCP then lie within a path of constant-length
            segments from it (:func:`_longest_paths`).
        tcp_radius_m: Farthest the TCP can be from ``centre``.
        wrist_radius_m: Farthest the wrist can be from ``centre``: the first joint origin that every later joint
            turns about an axis through (the last joint's origin at least; the centre of a spherical wrist).
        wrist_to_tcp: (3,) the wrist-to-TCP vector in the TCP frame. The joints from the wrist on turn about axes
            through it, so the TCP's pose fixes the wrist at ``tcp - R_tcp @ wrist_to_tcp`` whatever their angles.
        wrist_min_radius_m: Nearest the wrist can come to ``centre`` within the joint limits (0 when unknown):
            where a single joint between them changes their distance (the others turn about axes through the
            centre or the wrist: the iiwa's elbow), the least distance over that joint's range, in closed form
            (:func:`_least_distance`).
    """

    centre: np.ndarray
    tcp_radius_m: float
    wrist_radius_m: float
    wrist_to_tcp: np.ndarray
    wrist_min_radius_m: float = 0.0

    @staticmethod
    def of_chain(chain: UrdfChain) -> "ReachBounds":
        folded, tail = chain.folded_transforms()
        if not folded or any(j.type == "prismatic" for j in chain.movable):  # no bound for sliding joints
            return ReachBounds(np.zeros(3), math.inf, math.inf, np.zeros(3))
        # joint origins and axes at q = 0 in the base frame, then the TCP
        frame, points, axes = np.eye(4), [], []
        for transform, joint in zip(folded, chain.movable):
            frame = frame @ transform
            points.append(frame[:3, 3].copy())
            axes.append(frame[:3, :3] @ np.asarray(joint.axis, dtype=np.float64))
        frame = frame @ tail
        points.append(frame[:3, 3].copy())
        # the centre: the farthest joint origin that no joint moves (every joint before turns about an axis
        # through it: the shoulder of an arm whose first joint is a vertical turn below it)
        first = max(k for k in range(len(axes)) if all(_on_axis(points[k], points[m], axes[m]) for m in range(k)))
        # the wrist: the first joint origin every later joint turns about an axis through (the last joint's origin
        # at least; the centre of a spherical wrist), which the TCP's pose fixes whatever those joints' angles
        n = len(axes)
        wrist = max(first, min(k for k in range(n) if all(_on_axis(points[k], points[m], axes[m]) for m in range(k, n))))
        lengths = _longest_paths(points[first:], axes[first:])
        to_tcp = frame[:3, :3].T @ (frame[:3, 3] - points[wrist])
        # the joints after the centre's that change the centre-to-wrist distance (a joint turning about an axis
        # through the centre, with every joint before it doing so too, or through the wrist, with every joint
        # after it up to the wrist doing so too, keeps it)
        changing = [m for m in range(first + 1, wrist)
                    if not all(_on_axis(points[first], points[k], axes[k]) for k in range(first + 1, m + 1))
                    and not all(_on_axis(points[wrist], points[k], axes[k]) for k in range(m, wrist))]
        least = 0.0
        if not changing:
            least = float(np.linalg.norm(points[wrist] - points[first]))
        elif len(changing) == 1:
            c = changing[0]
            joint = chain.movable[c]
            least = _least_distance(points[c] - points[first], points[wrist] - points[c], axes[c], joint.lower,
                                    joint.upper)
        return ReachBounds(points[first], lengths[-1], lengths[wrist - first], to_tcp, least)

    def excess_m(self, pos: torch.Tensor, rot: torch.Tensor, rotation_threshold_rad: float) -> torch.Tensor:
        """(M,) lower bound (metres, may be negative) of the TCP position error of any configuration for (M, 3)
        target positions and (M, 3, 3) rotations whose rotation error is within ``rotation_threshold_rad``:
        a wrist rotated by at most that angle moves the TCP by at most ``|wrist_to_tcp| * angle``."""
        if math.isinf(self.tcp_radius_m):
            return torch.full(pos.shape[:1], -math.inf, dtype=pos.dtype, device=pos.device)
        centre = torch.as_tensor(self.centre, dtype=pos.dtype, device=pos.device)
        offset = torch.as_tensor(self.wrist_to_tcp, dtype=pos.dtype, device=pos.device)
        tcp = (pos - centre).norm(dim=-1) - self.tcp_radius_m
        wrist_dist = (pos - (rot * offset).sum(-1) - centre).norm(dim=-1)
        # outside the wrist's sphere, or nearer the centre than the wrist can come (its joint limits)
        wrist = torch.maximum(wrist_dist - self.wrist_radius_m, self.wrist_min_radius_m - wrist_dist)
        return torch.maximum(tcp, wrist - float(np.linalg.norm(self.wrist_to_tcp)) * rotation_threshold_rad)


def _least_distance(v1: np.ndarray, v2: np.ndarray, axis: np.ndarray, lower: float, upper: float) -> float:
    """Least ``|v1 + R(q) v2|`` (m) for ``R(q)`` the turn by q about the unit ``axis``, q in [lower, upper]
    (radians; infinite bounds: a full turn). With Rodrigues' formula the squared length is
    ``K + A cos q + B sin q``: its least value on the range is at an end or where the derivative vanishes."""
    a = axis / np.linalg.norm(axis)
    big_k = float(v1 @ v1 + v2 @ v2 + 2 * (a @ v1) * (a @ v2))
    big_a = float(2 * (v1 @ v2 - (a @ v1) * (a @ v2)))
    big_b = float(2 * (v1 @ np.cross(a, v2)))
    if not (math.isfinite(lower) and math.isfinite(upper)) or upper - lower >= 2 * math.pi:
        return math.sqrt(max(big_k - math.hypot(big_a, big_b), 0.0))
    qs = [lower, upper]
    phase = math.atan2(big_b, big_a)
    for base in (phase, phase + math.pi):  # the critical points, every turn of them inside the range
        k = math.ceil((lower - base) / (2 * math.pi))
        while base + 2 * math.pi * k <= upper:
            qs.append(base + 2 * math.pi * k)
            k += 1
    return math.sqrt(max(min(big_k + big_a * math.cos(q) + big_b * math.sin(q) for q in qs), 0.0))


def _longest_paths(points: list[np.ndarray], axes: list[np.ndarray], tol: float = 1e-9) -> list[float]:
    """Upper bounds of the distance from ``points[0]`` to every point, for a chain whose joint ``k`` turns about
    ``axes[k]`` through ``points[k]`` (its origin; the last point is the TCP, after every joint), at q = 0.

    The distance between points ``i < j`` is the same in every configuration when every joint strictly between
    them turns about an axis through ``points[i]`` (each such turn keeps ``points[i]`` where it is, relative to
    the links after it) or every one about an axis through ``points[j]`` (the same from the other end); joint
    ``i`` itself turns about its own origin. Neighbours always qualify. The bound of a point is the shortest
    sum of such constant lengths over a path from ``points[0]`` (the triangle inequality), which is tighter
    than the sum of the offsets where an offset turns about the previous origin (a zig-zag of two links).
    """
    n = len(points)

    def through(point, m):
        return _on_axis(point, points[m], axes[m], tol)

    best = [0.0] + [math.inf] * (n - 1)
    for j in range(1, n):
        for i in range(j):
            between = range(i + 1, min(j, len(axes)))
            if all(through(points[i], m) for m in between) or all(through(points[j], m) for m in between):
                best[j] = min(best[j], best[i] + float(np.linalg.norm(points[j] - points[i])))
    return best


def _on_axis(point: np.ndarray, origin: np.ndarray, axis: np.ndarray, tol: float = 1e-9) -> bool:
    """Whether ``point`` lies on the line through ``origin`` along the unit ``axis`` (metres, relative ``tol``)."""
    return float(np.linalg.norm(np.cross(point - origin, axis))) <= tol * max(1.0, float(np.linalg.norm(point)))

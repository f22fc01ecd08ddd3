"""What the placement debug view draws, computed for a whole batch at once (torch, no rerun).

Every function takes a solved batch (``PlacementCandidateBatch``) of B candidates and returns host numpy
arrays with the candidate as the first axis. Frames: env-local world, metres; rotations xyzw. Regions are
world-aligned boxes given as (centre, half size); a flat region (a support's top face) has a half height of
``FLAT_HALF_M``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from isaaclab_arena.relations.kinds.not_next_to import NotNextTo
from isaaclab_arena.relations.solving.placement_candidate import PlacementCandidateBatch
from isaaclab_arena.utils.pose_math import matrix_from_quat

#: Half height of the slab that draws a flat region (a support's top face), metres.
FLAT_HALF_M = 0.002
#: How far past its parent's side a NotNextTo keep-out region is drawn (the region itself is unbounded), metres.
KEEP_OUT_DRAW_LENGTH_M = 0.5
#: Segments of a drawn circle (PositionLimitsCylindrical radii).
CIRCLE_SEGMENTS = 48


@dataclass(frozen=True)
class Region:
    """One drawn region of one relation for every candidate: a world-aligned box (``center``/``half_size``,
    (B, 3) metres) or, for cylindrical limits, circles (``circles``: (B, C, CIRCLE_SEGMENTS + 1, 3)).

    Attributes:
        rid: The relation's row in the compiled problem.
        role: ``support`` (where the subject must rest), ``keep_out`` (where it must not be) or ``limits``
            (where its origin must stay).
        label: What the region is, in the relation's words.
    """

    rid: int
    role: str
    label: str
    center: np.ndarray | None = None
    half_size: np.ndarray | None = None
    circles: np.ndarray | None = None


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().to("cpu", torch.float64).numpy()


def object_boxes(batch: PlacementCandidateBatch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Oriented boxes of the placed objects: centres (B, n, 3), half sizes (B, n, 3) and xyzw rotations
    (B, n, 4) of each candidate's pose (the local bounds rotated with the object)."""
    p = batch.problem
    n = p.num_objects
    llo, lhi = p.local_lo[batch.env_ids, :n], p.local_hi[batch.env_ids, :n]
    r = matrix_from_quat(batch.rotations)
    center = batch.positions + torch.einsum("bnij,bnj->bni", r, 0.5 * (llo + lhi))
    return _np(center), _np(0.5 * (lhi - llo)), _np(batch.rotations)


def world_bounds(batch: PlacementCandidateBatch) -> tuple[np.ndarray, np.ndarray]:
    """World-aligned bounds (lo, hi), each (B, n_all, 3), of every object of each candidate: the placed ones
    at their candidate pose, then the fixed ones (anchors and passive obstacles) of the candidate's env."""
    lo, hi = batch.bounds
    p = batch.problem
    flo, fhi = p.fixed_lo[batch.env_ids], p.fixed_hi[batch.env_ids]
    return _np(torch.cat([lo, flo], 1)), _np(torch.cat([hi, fhi], 1))


def _index(problem, name: str | None) -> int | None:
    return None if name is None else problem.all_names.index(name)


def _limit(v, fallback: np.ndarray) -> np.ndarray:
    return fallback if v is None else np.full_like(fallback, float(v))


def relation_regions(batch: PlacementCandidateBatch, solver_params) -> list[Region]:
    """The support regions (On, ClutterOn), keep-out regions (NotNextTo, the inner radius of cylindrical
    limits) and position limits (PositionLimitsBox, the outer radius) of every compiled relation, per
    candidate (a parent placed by relations moves with its candidate)."""
    p = batch.problem
    lo, hi = world_bounds(batch)
    scene_lo, scene_hi = lo.min(1), hi.max(1)  # (B, 3): what the unbounded sides of a limit are drawn to
    out: list[Region] = []
    for cr in p.relations:
        rel, kind = cr.relation, cr.relation.yaml_kind
        par = _index(p, cr.parent)
        sub = _index(p, cr.subject)
        if kind in ("on", "clutter_on"):
            plo, phi = lo[:, par], hi[:, par]
            c, h = 0.5 * (plo + phi), 0.5 * (phi - plo)
            if kind == "on":
                inset = 0.0 if rel.overlap else rel.edge_margin_m
                hxy = np.maximum(h[:, :2] - inset, 0.0)
                label = f"support of {cr.description}"
            else:
                hxy = np.maximum(h[:, :2] * rel.spread - rel.edge_margin_m, 0.0)
                label = f"release region of {cr.description} (central {rel.spread:.0%})"
            center = np.concatenate([c[:, :2], phi[:, 2:3]], 1)
            half = np.concatenate([hxy, np.full((len(c), 1), FLAT_HALF_M)], 1)
            out.append(Region(cr.rid, "support", label, center, half))
        elif kind == "not_next_to":
            plo, phi = lo[:, par].copy(), hi[:, par].copy()
            a, s = rel.side.axis_index, rel.side.sign
            margin = float(getattr(solver_params.strategy_for(NotNextTo), "margin_m", 0.0))
            blo, bhi = plo.copy(), phi.copy()
            if s > 0:
                blo[:, a], bhi[:, a] = phi[:, a], phi[:, a] + KEEP_OUT_DRAW_LENGTH_M
            else:
                blo[:, a], bhi[:, a] = plo[:, a] - KEEP_OUT_DRAW_LENGTH_M, plo[:, a]
            blo[:, 1 - a] -= margin
            bhi[:, 1 - a] += margin
            out.append(Region(cr.rid, "keep_out", f"keep-out of {cr.description}", 0.5 * (blo + bhi),
                              0.5 * (bhi - blo)))
        elif kind == "position_limits_box":
            slo, shi = lo[:, sub], hi[:, sub]
            # unbounded sides: the scene's extent along X/Y, the subject's own height along Z
            fallback_lo = np.concatenate([scene_lo[:, :2], 0.5 * (slo + shi)[:, 2:3]], 1)
            fallback_hi = np.concatenate([scene_hi[:, :2], 0.5 * (slo + shi)[:, 2:3]], 1)
            blo = np.stack([_limit(lim[0], fallback_lo[:, k]) for k, lim in
                            enumerate((rel.x_limits, rel.y_limits, rel.z_limits))], 1)
            bhi = np.stack([_limit(lim[1], fallback_hi[:, k]) for k, lim in
                            enumerate((rel.x_limits, rel.y_limits, rel.z_limits))], 1)
            half = 0.5 * (bhi - blo)
            half[:, 2] = np.maximum(half[:, 2], FLAT_HALF_M)
            out.append(Region(cr.rid, "limits", f"origin limits of {cr.description}", 0.5 * (blo + bhi), half))
        elif kind == "position_limits_cylindrical":
            z = 0.5 * (lo[:, sub, 2] + hi[:, sub, 2])
            for radius, role, what in ((rel.radius_max, "limits", "outer radius"),
                                       (rel.radius_min, "keep_out", "keep-out disc")):
                if radius:
                    out.append(Region(cr.rid, role, f"{what} of {cr.description}",
                                      circles=_circle(rel.center_x, rel.center_y, float(radius), z)[:, None]))
    return out


def _circle(cx: float, cy: float, r: float, z: np.ndarray) -> np.ndarray:
    """(B, CIRCLE_SEGMENTS + 1, 3) closed circle of radius ``r`` about (cx, cy) at heights ``z`` (B,)."""
    t = np.linspace(0.0, 2.0 * np.pi, CIRCLE_SEGMENTS + 1)
    xy = np.stack([cx + r * np.cos(t), cy + r * np.sin(t)], 1)
    return np.concatenate([np.broadcast_to(xy, (len(z), *xy.shape)),
                           np.broadcast_to(z[:, None, None], (len(z), len(t), 1))], 2)


def relation_segments(batch: PlacementCandidateBatch) -> np.ndarray:
    """(B, R, 2, 3): for each compiled relation a segment from the subject's box centre to what it relates
    to: the parent's box centre, or the AtPosition target (free coordinates taken from the subject), or the
    cylinder axis at the subject's height; a relation with neither (box limits) gets a zero-length segment."""
    p = batch.problem
    lo, hi = world_bounds(batch)
    c = 0.5 * (lo + hi)
    b = len(batch)
    out = np.zeros((b, len(p.relations), 2, 3))
    for k, cr in enumerate(p.relations):
        start = c[:, _index(p, cr.subject)]
        end = start.copy()
        rel = cr.relation
        if cr.parent is not None:
            end = c[:, _index(p, cr.parent)]
        elif rel.yaml_kind == "at_position":
            for a, v in enumerate((rel.x, rel.y, rel.z)):
                if v is not None:
                    end[:, a] = v
        elif rel.yaml_kind == "position_limits_cylindrical":
            end[:, 0], end[:, 1] = rel.center_x, rel.center_y
        out[:, k, 0], out[:, k, 1] = start, end
    return out


def relation_passed(batch: PlacementCandidateBatch) -> np.ndarray:
    """(B, R) bool: each relation is within what its check accepts (excess at most the problem's slack)."""
    if batch.relation_excess is None:
        return np.ones((len(batch), batch.problem.num_relations), dtype=bool)
    return (batch.relation_excess <= batch.problem.slack).cpu().numpy()


def grasp_points(batch: PlacementCandidateBatch, names: list[str], grasp_z_offset_m: float) -> np.ndarray:
    """(B, k, 3): the top-centre grasp point of each of ``names`` (placed objects), ``grasp_z_offset_m``
    above the object's top."""
    p = batch.problem
    lo, hi = world_bounds(batch)
    idx = [p.all_names.index(n) for n in names]
    c = 0.5 * (lo[:, idx] + hi[:, idx])
    c[..., 2] = hi[:, idx, 2] + grasp_z_offset_m
    return c


def forward_filled_history(history: torch.Tensor) -> torch.Tensor:
    """(B, S, n, 3) solver snapshots with every NaN slot (after a candidate stopped) replaced by that
    candidate's last recorded positions (batched: one cummax over the snapshot axis)."""
    valid = ~torch.isnan(history).flatten(2).any(2)  # (B, S)
    s = torch.arange(history.shape[1], device=history.device).expand_as(valid)
    last = torch.where(valid, s, torch.zeros_like(s)).cummax(1).values
    return torch.gather(history, 1, last[:, :, None, None].expand_as(history))


def snapshot_losses(batch: PlacementCandidateBatch) -> np.ndarray | None:
    """(B, S) loss of every candidate at each solver snapshot (0, 10, 20, ... iterations), recomputed with
    ``evaluate_poses`` from ``position_history`` (forward-filled after a candidate stopped) and the final
    rotations (FaceTo headings that the solver re-evaluates are taken at their final value). None without
    a history (``save_position_history`` off)."""
    from isaaclab_arena.relations.solving.evaluation import evaluate_poses

    h = batch.position_history
    if h is None or len(batch) == 0:
        return None
    b, s, n, _ = h.shape
    pos = forward_filled_history(h).reshape(b * s, n, 3)
    rot = batch.rotations.repeat_interleave(s, 0)
    env = batch.env_ids.repeat_interleave(s, 0)
    ev = evaluate_poses(batch.problem, env, pos, rot, batch.draw_ids.repeat_interleave(s, 0))
    return _np(ev.loss.reshape(b, s))

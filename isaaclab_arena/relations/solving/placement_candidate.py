"""Candidates: one layout of every placed object in one environment, and batches of them (values).

A ``PlacementCandidateBatch`` holds B candidates as tensors (env-local metres, xyzw rotations) together
with what the solve stage measured of them; stages return new batches and never change one in place.
Each ``PlacementCandidate`` is a read-only per-candidate view (``batch.candidates``) for custom validators.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING

import torch

from isaaclab_arena.relations.kinds import CHECK_SLOTS
from isaaclab_arena.utils.pose_math import matrix_from_quat

if TYPE_CHECKING:
    from isaaclab_arena.relations.compiler.placement_problem import PlacementProblem


@dataclass
class PlacementCandidate:
    """One layout of all placed objects in one environment.

    Attributes:
        env_id: Environment the layout is for.
        sample_id: Draw index of the layout for that env (with the seed it fixes the random stream).
        positions: Object name -> (x, y, z) env-local origin, metres.
        rotations: Object name -> (x, y, z, w) quaternion.
        bounds: Object name -> ((xmin, ymin, zmin), (xmax, ymax, zmax)) world-aligned bounds of the rotated
            object, metres.
        loss: Solver loss.
        check_results: Check name -> verdict (empty before validation).
    """

    env_id: int
    sample_id: int
    positions: dict[str, tuple[float, float, float]]
    rotations: dict[str, tuple[float, float, float, float]]
    bounds: dict[str, tuple[tuple[float, float, float], tuple[float, float, float]]]
    loss: float
    check_results: dict[str, bool] = field(default_factory=dict)


@dataclass(frozen=True)
class PlacementCandidateBatch:
    """B candidate layouts (envs x attempts) of one compiled problem.

    Generated batches carry poses only; solved (or evaluated) batches also carry the evaluation of the
    final poses, fused into the solve stage for speed.

    Attributes:
        problem: The compiled scene.
        env_ids / draw_ids: (B,) int64; a layout is a pure function of (scene, seed, env id, draw id).
        positions: (B, n, 3) float32 env-local origins, metres (``object_names`` order).
        rotations: (B, n, 4) float32 xyzw.
        loss: (B,) solver loss (None before solving).
        iterations: (B,) solver iterations each candidate used (None before solving).
        relation_excess / relation_cause: (B, R) per compiled relation: metres beyond what its check accepts
            (<= 0 passing) and its kind's cause code (0 none).
        overlap_pair / overlap_depth: (B,) index of the most-penetrating no_overlap pair and its depth (m).
        clearance_pair / clearance_depth: (B,) the pair of two placed objects most inside their clearance and
            how far inside (m; <= 0 when every such pair keeps it; pair -1 when there is none).
        builtin_verdicts: (B, K) bool verdict of each built-in check (``kinds.CHECK_SLOTS`` order).
        builtin_fail_bits: (B,) int32, bit s set when built-in check slot s failed.
        position_history: With ``RelationSolverParams.save_position_history``: (B, S, n, 3) float32 env-local
            positions (m) after 0, 10, 20, ... solver iterations (S = ``max_iters // 10 + 1``), NaN after a
            candidate stopped. None when the flag is off.
    """

    problem: "PlacementProblem"
    env_ids: torch.Tensor
    draw_ids: torch.Tensor
    positions: torch.Tensor
    rotations: torch.Tensor
    loss: torch.Tensor | None = None
    iterations: torch.Tensor | None = None
    relation_excess: torch.Tensor | None = None
    relation_cause: torch.Tensor | None = None
    overlap_pair: torch.Tensor | None = None
    overlap_depth: torch.Tensor | None = None
    clearance_pair: torch.Tensor | None = None
    clearance_depth: torch.Tensor | None = None
    builtin_verdicts: torch.Tensor | None = None
    builtin_fail_bits: torch.Tensor | None = None
    position_history: torch.Tensor | None = None

    @property
    def object_names(self) -> list[str]:
        return self.problem.object_names

    @property
    def evaluated(self) -> bool:
        """Whether the built-in checks' verdicts and per-relation violations are present."""
        return self.builtin_verdicts is not None

    def __len__(self) -> int:
        return int(self.env_ids.shape[0])

    def builtin_verdict(self, check: str) -> torch.Tensor:
        """(B,) bool verdict of built-in check ``check`` (a view)."""
        return self.builtin_verdicts[:, CHECK_SLOTS.index(check)]

    @property
    def bounds(self) -> tuple[torch.Tensor, torch.Tensor]:
        """World-aligned bounds (lo, hi), each (B, n, 3), of the rotated objects (metres)."""
        e = self.env_ids
        n = self.problem.num_objects
        llo = self.problem.local_lo[e, :n]
        lhi = self.problem.local_hi[e, :n]
        r = matrix_from_quat(self.rotations)
        c = torch.einsum("bnij,bnj->bni", r, 0.5 * (llo + lhi))
        h = torch.einsum("bnij,bnj->bni", r.abs(), 0.5 * (lhi - llo))
        return self.positions + c - h, self.positions + c + h

    @cached_property
    def candidates(self) -> list[PlacementCandidate]:
        """Per-candidate views (plain floats; ``check_results`` empty: verdicts live in the validation)."""
        return candidate_views(self, {})

    def select(self, index: torch.Tensor) -> "PlacementCandidateBatch":
        """A batch of the candidates at ``index`` (geometry and measurements kept together)."""
        def pick(t):
            return None if t is None else t[index]

        return replace(self, env_ids=self.env_ids[index], draw_ids=self.draw_ids[index],
                       positions=self.positions[index], rotations=self.rotations[index], loss=pick(self.loss),
                       iterations=pick(self.iterations), relation_excess=pick(self.relation_excess),
                       relation_cause=pick(self.relation_cause), overlap_pair=pick(self.overlap_pair),
                       overlap_depth=pick(self.overlap_depth), clearance_pair=pick(self.clearance_pair),
                       clearance_depth=pick(self.clearance_depth), builtin_verdicts=pick(self.builtin_verdicts),
                       builtin_fail_bits=pick(self.builtin_fail_bits), position_history=pick(self.position_history))


def candidate_views(batch: PlacementCandidateBatch, verdicts: dict[str, torch.Tensor]) -> list[PlacementCandidate]:
    """One ``PlacementCandidate`` per candidate of ``batch``, with ``verdicts`` (check -> (B,) bool)."""
    names = batch.object_names
    pos = batch.positions.detach().cpu().tolist()
    rot = batch.rotations.detach().cpu().tolist()
    lo, hi = batch.bounds
    lo, hi = lo.cpu().tolist(), hi.cpu().tolist()
    env = batch.env_ids.cpu().tolist()
    draw = batch.draw_ids.cpu().tolist()
    loss = batch.loss.cpu().tolist() if batch.loss is not None else [float("nan")] * len(env)
    checks = {k: v.cpu().tolist() for k, v in verdicts.items()}
    return [
        PlacementCandidate(
            env_id=env[b], sample_id=draw[b],
            positions={n: tuple(pos[b][k]) for k, n in enumerate(names)},
            rotations={n: tuple(rot[b][k]) for k, n in enumerate(names)},
            bounds={n: (tuple(lo[b][k]), tuple(hi[b][k])) for k, n in enumerate(names)},
            loss=loss[b], check_results={c: bool(v[b]) for c, v in checks.items()})
        for b in range(len(env))
    ]

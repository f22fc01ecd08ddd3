"""Candidates: one working layout of every placed object in one environment, and batches of them.

A ``PlacementCandidateBatch`` holds B candidates as tensors (env-local metres, xyzw rotations); each
``PlacementCandidate`` is a read-only per-candidate view (``batch.candidates``) for custom validators.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from isaaclab_arena.relations.placement_problem import PlacementProblem
    from isaaclab_arena.relations.validation.runner import PlacementValidationResults


@dataclass
class PlacementCandidate:
    """One layout of all placed objects in one environment.

    Attributes:
        env_id: Environment the layout is for.
        sample_id: Draw index of the layout for that env (with the seed it fixes the random stream).
        positions: Object name -> (x, y, z) env-local origin, metres.
        rotations: Object name -> (x, y, z, w) quaternion.
        bounds: Object name -> ((xmin, ymin, zmin), (xmax, ymax, zmax)) world-aligned bounds of the
            rotated object, metres.
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


def quat_to_matrix(q: torch.Tensor) -> torch.Tensor:
    """(..., 4) xyzw -> (..., 3, 3) rotation matrices."""
    x, y, z, w = q.unbind(-1)
    return torch.stack([
        1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w),
        2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
        2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y),
    ], dim=-1).reshape(*q.shape[:-1], 3, 3)


@dataclass
class PlacementCandidateBatch:
    """B candidate layouts (envs x attempts), solved and checked together.

    Attributes:
        object_names: Placed (non-anchor) objects, in tensor order.
        env_ids / draw_ids: (B,) int64; a layout is a pure function of (scene, seed, env id, draw id).
        positions: (B, n, 3) float32 env-local origins, metres.
        rotations: (B, n, 4) float32 xyzw.
        loss: (B,) solver loss.
        iterations: (B,) solver iterations each candidate used.
        check_results: check name -> (B,) bool verdicts (filled by validation).
        required_failures / optional_failures: (B,) int ranking keys.
        passed: (B,) bool, every required check passed.
        relation_excess / relation_cause: (B, R) per compiled relation: metres beyond what its check
            accepts (<= 0 passing) and a cause code (0 none); see ``validation.diagnostics``.
        overlap_pair / overlap_depth: (B,) index of the most-penetrating no_overlap pair and its depth (m).
        position_history: With ``RelationSolverParams.save_position_history``: (B, S, n, 3) float32
            env-local positions (m) after 0, 10, 20, ... solver iterations (S = ``max_iters // 10 + 1``),
            NaN for the snapshots after a candidate stopped; the final poses (modifiers applied) are
            ``positions``. None when the flag is off.
    """

    problem: "PlacementProblem"
    env_ids: torch.Tensor
    draw_ids: torch.Tensor
    positions: torch.Tensor
    rotations: torch.Tensor
    loss: torch.Tensor
    iterations: torch.Tensor
    check_results: dict[str, torch.Tensor] = field(default_factory=dict)
    required_failures: torch.Tensor | None = None
    optional_failures: torch.Tensor | None = None
    passed: torch.Tensor | None = None
    relation_excess: torch.Tensor | None = None
    relation_cause: torch.Tensor | None = None
    overlap_pair: torch.Tensor | None = None
    overlap_depth: torch.Tensor | None = None
    position_history: torch.Tensor | None = None
    validation: "PlacementValidationResults | None" = None
    _candidates: list | None = field(default=None, repr=False)
    _kernel_checks: torch.Tensor | None = field(default=None, repr=False)
    _kernel_counts: tuple | None = field(default=None, repr=False)

    @property
    def object_names(self) -> list[str]:
        return self.problem.object_names

    @property
    def sample_ids(self) -> torch.Tensor:
        return self.draw_ids

    def __len__(self) -> int:
        return int(self.env_ids.shape[0])

    @property
    def bounds(self) -> tuple[torch.Tensor, torch.Tensor]:
        """World-aligned bounds (lo, hi), each (B, n, 3), of the rotated objects."""
        e = self.env_ids
        n = self.problem.num_objects
        llo = self.problem.local_lo[e, :n]
        lhi = self.problem.local_hi[e, :n]
        r = quat_to_matrix(self.rotations)
        c = torch.einsum("bnij,bnj->bni", r, 0.5 * (llo + lhi))
        h = torch.einsum("bnij,bnj->bni", r.abs(), 0.5 * (lhi - llo))
        return self.positions + c - h, self.positions + c + h

    @property
    def candidates(self) -> list[PlacementCandidate]:
        """Per-candidate views (built on first use; positions are plain floats)."""
        if self._candidates is None:
            names = self.object_names
            pos = self.positions.detach().cpu().tolist()
            rot = self.rotations.detach().cpu().tolist()
            lo, hi = self.bounds
            lo, hi = lo.cpu().tolist(), hi.cpu().tolist()
            env = self.env_ids.cpu().tolist()
            draw = self.draw_ids.cpu().tolist()
            loss = self.loss.cpu().tolist()
            checks = {k: v.cpu().tolist() for k, v in self.check_results.items()}
            self._candidates = [
                PlacementCandidate(
                    env_id=env[b], sample_id=draw[b],
                    positions={n: tuple(pos[b][k]) for k, n in enumerate(names)},
                    rotations={n: tuple(rot[b][k]) for k, n in enumerate(names)},
                    bounds={n: (tuple(lo[b][k]), tuple(hi[b][k])) for k, n in enumerate(names)},
                    loss=loss[b], check_results={c: bool(v[b]) for c, v in checks.items()})
                for b in range(len(env))
            ]
        return self._candidates

    def select(self, index: torch.Tensor) -> "PlacementCandidateBatch":
        """A batch of the candidates at ``index`` (geometry and results kept together)."""
        def pick(t):
            return None if t is None else t[index]

        return PlacementCandidateBatch(
            problem=self.problem, env_ids=self.env_ids[index], draw_ids=self.draw_ids[index],
            positions=self.positions[index], rotations=self.rotations[index], loss=self.loss[index],
            iterations=self.iterations[index], check_results={k: v[index] for k, v in self.check_results.items()},
            required_failures=pick(self.required_failures), optional_failures=pick(self.optional_failures),
            passed=pick(self.passed), relation_excess=pick(self.relation_excess),
            relation_cause=pick(self.relation_cause), overlap_pair=pick(self.overlap_pair),
            overlap_depth=pick(self.overlap_depth), position_history=pick(self.position_history))

    def invalidate(self) -> None:
        """Call after changing positions/rotations in place: drops cached views and kernel verdicts."""
        self._candidates = None
        self._kernel_checks = None
        self._kernel_counts = None

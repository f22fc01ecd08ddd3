"""Initialize stage: ``PlacementCandidateGenerator`` draws the starting candidates of a batch.

For each candidate (its random stream derived from (placement seed, env id, draw id)):
rotations first (RotateAroundSolution as base rotation, a uniform yaw in [-pi, pi) when
``random_yaw_init`` or ClutterOn's ``random_yaw``, FaceTo headings toward their targets), bounds refit
to them, then positions in parents-first order: each object's centre is drawn on the footprint of the
nearest anchor of its On chain (the first anchor when the chain has none or loops; a ClutterOn
object's release region of its support), projected onto its relation intervals, ClutterOn releases
raised above overlapping footprints; the first of ``init_attempts`` draws free of overlap with what
is already placed is kept (else the least overlapping). This runs inside the same warp kernel as the
solver (``kernels/solve.py``); ``generate`` runs it alone.
"""

from __future__ import annotations

import torch

from isaaclab_arena.relations.placement_candidate import PlacementCandidateBatch
from isaaclab_arena.relations.placement_problem import PlacementProblem
from isaaclab_arena.relations.relation_solver import RelationSolver


def new_batch(problem: PlacementProblem, env_ids: torch.Tensor, draw_ids: torch.Tensor) -> PlacementCandidateBatch:
    """An uninitialised batch (fresh output tensors) for ``env_ids`` x ``draw_ids``."""
    dev = problem.device
    b = int(env_ids.shape[0])
    n = problem.num_objects
    return PlacementCandidateBatch(
        problem=problem, env_ids=env_ids, draw_ids=draw_ids,
        positions=torch.empty((b, n, 3), dtype=torch.float32, device=dev),
        rotations=torch.empty((b, n, 4), dtype=torch.float32, device=dev),
        loss=torch.empty(b, dtype=torch.float32, device=dev),
        iterations=torch.empty(b, dtype=torch.int32, device=dev))


def as_id_tensor(ids, device: str, name: str) -> torch.Tensor:
    t = torch.as_tensor(ids, device=device)
    if t.dim() != 1 or t.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"{name} must be a 1-D integer tensor, got shape {tuple(t.shape)} dtype {t.dtype}")
    return t.to(torch.int64).contiguous()


class PlacementCandidateGenerator:
    """Draws initial candidates for a compiled problem.

    Args:
        solver: The solver whose kernel also holds the sampler (its ``init_attempts`` is used).
    """

    def __init__(self, solver: RelationSolver | None = None):
        self.solver = solver or RelationSolver()

    def generate(self, problem: PlacementProblem, env_ids, draw_ids) -> PlacementCandidateBatch:
        env_ids = as_id_tensor(env_ids, problem.device, "env_ids")
        draw_ids = as_id_tensor(draw_ids, problem.device, "draw_ids")
        if env_ids.shape != draw_ids.shape:
            raise ValueError(f"env_ids {tuple(env_ids.shape)} and draw_ids {tuple(draw_ids.shape)} must have one shape")
        if env_ids.numel() and (int(env_ids.min()) < 0 or int(env_ids.max()) >= problem.num_envs):
            raise ValueError(f"env_ids must lie in [0, {problem.num_envs}) (the num_envs the scene was compiled for)")
        batch = new_batch(problem, env_ids, draw_ids)
        self.solver.run(problem, env_ids, draw_ids, batch.positions, batch.rotations, batch.loss, batch.iterations,
                        do_init=True, do_post=False, max_iters=0)
        return batch

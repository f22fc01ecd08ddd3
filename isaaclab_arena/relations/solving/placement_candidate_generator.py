"""Generate stage: ``PlacementCandidateGenerator`` draws the starting candidates of a batch.

For each candidate (its random stream derived from (placement seed, env id, draw id)): rotations first
(RotateAroundSolution as base rotation, a uniform yaw in [-pi, pi) when ``random_yaw_init`` or ClutterOn's
``random_yaw``, FaceTo headings toward their targets), bounds refit to them, then positions in
parents-first order: each object's centre is drawn on the footprint of the nearest anchor of its On chain
(the first anchor when the chain has none or loops; a ClutterOn object's release region of its support),
projected onto its relation intervals, ClutterOn releases raised above overlapping footprints; the first
of ``init_attempts`` draws free of overlap with what is already placed is kept (else the least
overlapping). One warp launch (``kernels/solve_init.py``); the solver's fused ``solve`` runs the same kernel
first.
"""

from __future__ import annotations

import torch

from isaaclab_arena.relations.kernels import launch
from isaaclab_arena.relations.solving.placement_candidate import PlacementCandidateBatch
from isaaclab_arena.relations.compiler.placement_problem import PlacementProblem
from isaaclab_arena.relations.relation_solver import RelationSolver


def as_id_tensor(ids, device: str, name: str) -> torch.Tensor:
    t = torch.as_tensor(ids, device=device)
    if t.dim() != 1 or t.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"{name} must be a 1-D integer tensor, got shape {tuple(t.shape)} dtype {t.dtype}")
    return t.to(torch.int64).contiguous()


def checked_ids(problem: PlacementProblem, env_ids, draw_ids) -> tuple[torch.Tensor, torch.Tensor]:
    """``env_ids`` / ``draw_ids`` as (B,) int64 on the problem's device; ValueError when their shapes differ
    or an env id is outside [0, num_envs)."""
    env_ids = as_id_tensor(env_ids, problem.device, "env_ids")
    draw_ids = as_id_tensor(draw_ids, problem.device, "draw_ids")
    if env_ids.shape != draw_ids.shape:
        raise ValueError(f"env_ids {tuple(env_ids.shape)} and draw_ids {tuple(draw_ids.shape)} must have one shape")
    if env_ids.numel() and (int(env_ids.min()) < 0 or int(env_ids.max()) >= problem.num_envs):
        raise ValueError(f"env_ids must lie in [0, {problem.num_envs}) (the num_envs the scene was compiled for)")
    return env_ids, draw_ids


class PlacementCandidateGenerator:
    """Draws initial candidates for a compiled problem.

    Args:
        solver: The solver whose settings (``init_attempts``) and kernel runner are used.
    """

    def __init__(self, solver: RelationSolver | None = None):
        self.solver = solver or RelationSolver()

    def generate(self, problem: PlacementProblem, env_ids, draw_ids) -> PlacementCandidateBatch:
        """Initial candidates (poses only) for (env_ids[k], draw_ids[k])."""
        env_ids, draw_ids = checked_ids(problem, env_ids, draw_ids)
        return self.solver.run_kernels(problem, launch.fresh(problem.tables)[:1], env_ids, draw_ids, None, None, do_post=False,
                                       write_checks=False)

"""Evaluate stage for given poses: the built-in checks' verdicts, per-relation violations and the loss of
layouts that were not solved here (``ObjectPlacer.validate_poses``, recorded layouts). One warp launch, one
thread per candidate; the solve stage evaluates its own output in the same way (``kernels/evaluate.py``)."""

from __future__ import annotations

import torch
import warp as wp

from isaaclab_arena.relations.kernels.geometry import torch_stream
from isaaclab_arena.relations.kernels.tables import CandidateState
from isaaclab_arena.relations.kernels.validate import validate_kernel_for
from isaaclab_arena.relations.placement_candidate import PlacementCandidateBatch
from isaaclab_arena.relations.placement_problem import PlacementProblem
from isaaclab_arena.relations.relation_solver import batch_from_outputs, OutputBuffers


def evaluate_poses(problem: PlacementProblem, env_ids: torch.Tensor, positions: torch.Tensor,
                   rotations: torch.Tensor, draw_ids: torch.Tensor | None = None) -> PlacementCandidateBatch:
    """An evaluated batch of the layouts ``positions`` (B, n, 3) env-local metres and ``rotations`` (B, n, 4)
    xyzw, in the problem's ``object_names`` order, for envs ``env_ids`` (B,) int64 on the problem's device."""
    b, n = int(env_ids.shape[0]), problem.num_objects
    dev = problem.device
    draw_ids = torch.zeros_like(env_ids) if draw_ids is None else draw_ids
    out = OutputBuffers(b, max(n, 1), max(problem.num_relations, 1), dev)
    v = out.views(out.buf, out.bbuf)
    if n:
        v["pos"][:, :n].copy_(positions)
        v["rot"][:, :n].copy_(rotations)
    if b:
        with torch_stream(dev):
            st = CandidateState()
            st.x = wp.from_torch(v["pos"], dtype=wp.vec3)
            st.rot = wp.from_torch(v["rot"], dtype=wp.quat)
            st.olo = wp.empty((b, max(n, 1)), dtype=wp.vec3, device=dev)
            st.ohi = wp.empty((b, max(n, 1)), dtype=wp.vec3, device=dev)
            st.m = st.v = st.g = st.ilo = st.ihi = wp.empty((1, 1), dtype=wp.vec3, device=dev)
            wp.launch(validate_kernel_for(problem.tables), dim=b, device=dev,
                      inputs=[problem.tables, st, wp.from_torch(env_ids), out.outputs(dev, v, 0, b, None, None)])
    return batch_from_outputs(problem, env_ids, draw_ids, v, None)

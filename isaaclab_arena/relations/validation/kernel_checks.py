"""Runs the inexpensive-check kernel once per batch; the built-in validators read its verdict slots."""

from __future__ import annotations

import torch
import warp as wp

from isaaclab_arena.relations.kernels.geometry import torch_stream
from isaaclab_arena.relations.kernels.tables import NUM_SLOTS, CandidateState, solve_outputs
from isaaclab_arena.relations.kernels.validate import validate_kernel

_scratch: dict[tuple, tuple] = {}


def _get_scratch(device: str, b: int, n: int):
    key = (device, b, n)
    s = _scratch.get(key)
    if s is None:
        if len(_scratch) > 64:
            _scratch.clear()
        s = (wp.empty((b, n), dtype=wp.vec3, device=device), wp.empty((b, n), dtype=wp.vec3, device=device),
             wp.empty((1, 1), dtype=wp.vec3, device=device), wp.empty(b, dtype=float, device=device))
        _scratch[key] = s
    return s


def _launch(problem, batch, b, n, write_loss, checks, excess, cause, ov_pair, ov_depth) -> None:
    dev = problem.device
    olo, ohi, dummy, loss = _get_scratch(dev, b, n)
    st = CandidateState()
    if problem.num_objects:
        st.x = wp.from_torch(batch.positions.contiguous(), dtype=wp.vec3)
        st.rot = wp.from_torch(batch.rotations.contiguous(), dtype=wp.quat)
    else:
        st.x = wp.zeros((b, 1), dtype=wp.vec3, device=dev)
        st.rot = wp.zeros((b, 1), dtype=wp.quat, device=dev)
    st.olo, st.ohi = olo, ohi
    st.m = st.v = st.g = st.ilo = st.ihi = dummy
    out = solve_outputs(dev, b, rel_excess=wp.from_torch(excess), rel_cause=wp.from_torch(cause),
                        checks=wp.from_torch(checks), ov_pair=wp.from_torch(ov_pair), ov_depth=wp.from_torch(ov_depth),
                        loss=wp.from_torch(batch.loss) if write_loss else loss)
    wp.launch(validate_kernel, dim=b, device=dev, inputs=[problem.tables, st, wp.from_torch(batch.env_ids), out])


def kernel_verdicts(batch, write_loss: bool = False) -> torch.Tensor:
    """(B, NUM_SLOTS) bool verdicts of the built-in checks for ``batch`` (True = passed), computed once and
    cached on the batch; also fills ``relation_excess``, ``relation_cause``, ``overlap_pair`` and
    ``overlap_depth`` (and the batch's loss when ``write_loss``)."""
    if batch._kernel_checks is not None:
        return batch._kernel_checks
    problem = batch.problem
    dev = problem.device
    b = len(batch)
    n = max(problem.num_objects, 1)
    r = max(problem.num_relations, 1)
    checks = torch.empty((b, NUM_SLOTS), dtype=torch.bool, device=dev)
    excess = torch.empty((b, r), dtype=torch.float32, device=dev)
    cause = torch.empty((b, r), dtype=torch.int32, device=dev)
    ov_pair = torch.empty(b, dtype=torch.int32, device=dev)
    ov_depth = torch.empty(b, dtype=torch.float32, device=dev)
    if b:
        with torch_stream(dev):
            _launch(problem, batch, b, n, write_loss, checks, excess, cause, ov_pair, ov_depth)
    batch.relation_excess = excess[:, :problem.num_relations]
    batch.relation_cause = cause[:, :problem.num_relations]
    batch.overlap_pair = ov_pair
    batch.overlap_depth = ov_depth
    batch._kernel_checks = checks
    return checks

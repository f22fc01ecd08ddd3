"""Evaluate stage for given poses: the built-in checks' verdicts, per-relation violations and the loss of
layouts that were not solved here (``ObjectPlacer.validate_poses``, recorded layouts). One thread per candidate
in one recorded launch per CPU core (large batches) on persistent buffers; the solve stage evaluates its own
output in the same way (``kernels/evaluate.py``)."""

from __future__ import annotations

import threading

import numpy as np
import torch
import warp as wp

from isaaclab_arena.relations.kernels.geometry import copy_into, torch_stream
from isaaclab_arena.relations.kernels.launch import launch_rows
from isaaclab_arena.relations.kernels.tables import CandidateState, sweep_scratch
from isaaclab_arena.relations.kernels.validate import validate_kernel_for
from isaaclab_arena.relations.solving.placement_candidate import PlacementCandidateBatch
from isaaclab_arena.relations.compiler.placement_problem import PlacementProblem
from isaaclab_arena.relations.relation_solver import batch_from_outputs, OutputBuffers
from isaaclab_arena.relations.relation_solver_params import available_cores
from isaaclab_arena.relations.solving.solver_workers import WorkerPool


#: On the CPU a batch of this many layouts or more is checked on several threads (as a solve is split).
SPLIT_FROM = 256


class _CheckWorkspace:
    """Persistent buffers and recorded launches of the check kernel for one (problem, B, calling thread): the
    host work of a call is two copies in, the launches and one copy out. On the CPU a batch of ``SPLIT_FROM`` or
    more is split into ``threads`` row ranges checked on as many threads (a layout's verdicts do not depend on
    the split)."""

    def __init__(self, problem: PlacementProblem, b: int, threads: int):
        n = max(problem.num_objects, 1)
        dev = problem.device
        self.problem = problem
        self.out = OutputBuffers(b, n, max(problem.num_relations, 1), dev)
        self.v = self.out.views(self.out.buf, self.out.bbuf)
        self.env = torch.zeros(b, dtype=torch.int64, device=dev)
        parts = threads if (dev == "cpu" and b >= SPLIT_FROM) else 1
        bounds = [round(b * k / parts) for k in range(parts + 1)]
        kernel = validate_kernel_for(problem.tables)
        self._keep, self.launches = [], []
        with torch_stream(dev):
            for r0, r1 in zip(bounds, bounds[1:]):
                if r1 <= r0:
                    continue
                st = CandidateState()
                st.x = wp.from_torch(self.v["pos"][r0:r1], dtype=wp.vec3)
                st.rot = wp.from_torch(self.v["rot"][r0:r1], dtype=wp.quat)
                st.olo = wp.empty((r1 - r0, n), dtype=wp.vec3, device=dev)
                st.ohi = wp.empty((r1 - r0, n), dtype=wp.vec3, device=dev)
                st.m = st.v = st.g = st.ilo = st.ihi = wp.empty((1, 1), dtype=wp.vec3, device=dev)
                sweep_scratch(st, problem.tables, r1 - r0, dev)
                dim, rows, count = launch_rows(r1 - r0, dev)
                inputs = [problem.tables, st, wp.from_torch(self.env[r0:r1]),
                          self.out.outputs(dev, self.v, r0, r1, None, None), rows, count]
                self._keep.append((st, inputs))
                self.launches.append(wp.launch(kernel, dim=dim, device=dev, inputs=inputs, record_cmd=True))
        self.workers = _workers(len(self.launches) - 1)

    def run(self, env_ids: torch.Tensor, positions: torch.Tensor, rotations: torch.Tensor) -> dict:
        """Checks the layouts; returns views of a copy of the outputs (the caller's batch owns them)."""
        n = self.problem.num_objects
        copy_into(self.env, env_ids)
        if n:
            copy_into(self.v["pos"][:, :n], positions)
            copy_into(self.v["rot"][:, :n], rotations)
        with torch_stream(self.problem.device):
            first, *rest = self.launches
            self.workers.run(first.launch, [cmd.launch for cmd in rest])
            return self.out.snapshot()


#: Helper threads by (calling thread, count), shared by that thread's workspaces.
_pools: dict[tuple, WorkerPool] = {}


def _workers(count: int) -> WorkerPool:
    key = (threading.get_ident(), count)
    pool = _pools.get(key)
    return pool if pool is not None else _pools.setdefault(key, WorkerPool(count))


_spaces_lock = threading.Lock()


def evaluate_poses(problem: PlacementProblem, env_ids: torch.Tensor, positions: torch.Tensor,
                   rotations: torch.Tensor, draw_ids: torch.Tensor | None = None,
                   threads: int | None = None) -> PlacementCandidateBatch:
    """An evaluated batch of the layouts ``positions`` (B, n, 3) env-local metres and ``rotations`` (B, n, 4)
    xyzw, in the problem's ``object_names`` order, for envs ``env_ids`` (B,) int64 on the problem's device.
    ``threads``: CPU threads a batch of ``SPLIT_FROM`` or more is checked on (default: the available cores).
    The returned batch owns its tensors."""
    b = int(env_ids.shape[0])
    if draw_ids is None:  # on the CPU without torch's parallel fill (see copy_into)
        draw_ids = (torch.from_numpy(np.zeros(b, dtype=np.int64)) if env_ids.device.type == "cpu"
                    else torch.zeros_like(env_ids))
    if not b:
        out = OutputBuffers(0, max(problem.num_objects, 1), max(problem.num_relations, 1), problem.device)
        return batch_from_outputs(problem, env_ids, draw_ids, out.views(out.buf, out.bbuf), None)
    threads = available_cores() if threads is None else max(1, int(threads))
    spaces = problem._check_spaces  # they live as long as the problem
    key = (b, threading.get_ident(), threads)
    ws = spaces.get(key)
    if ws is None:
        with _spaces_lock:
            if len(spaces) > 32:
                spaces.clear()
            ws = spaces[key] = _CheckWorkspace(problem, b, threads)
    return batch_from_outputs(problem, env_ids, draw_ids, ws.run(env_ids, positions, rotations), None)

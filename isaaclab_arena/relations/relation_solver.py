"""Solve stage: the ``RelationSolver`` runs the fused warp kernel over a whole candidate batch.

One launch solves every candidate (one thread each, own early exit); no Python loop over candidates,
objects or relations. Anchors and obstacles never move. Works on ``cpu`` and ``cuda:0``.
"""

from __future__ import annotations

import threading

import torch
import warp as wp

from isaaclab_arena.relations.kernels.geometry import ensure_warp
from isaaclab_arena.relations.kernels.solve import SolveSettings, solve_kernel
from isaaclab_arena.relations.kernels.tables import CandidateState
from isaaclab_arena.relations.placement_candidate import PlacementCandidateBatch
from isaaclab_arena.relations.placement_problem import PlacementProblem
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams



class _Scratch:
    """Per (device, B, n) working arrays of the optimiser (not visible to callers)."""

    def __init__(self, device: str, b: int, n: int):
        n = max(n, 1)
        self.olo = wp.empty((b, n), dtype=wp.vec3, device=device)
        self.ohi = wp.empty((b, n), dtype=wp.vec3, device=device)
        self.m = wp.empty((b, n), dtype=wp.vec3, device=device)
        self.v = wp.empty((b, n), dtype=wp.vec3, device=device)
        self.g = wp.empty((b, n), dtype=wp.vec3, device=device)
        self.f2 = wp.empty((1, 1), dtype=float, device=device)
        self.i2 = wp.empty((1, 1), dtype=int, device=device)
        self.i1 = wp.empty(1, dtype=int, device=device)
        self.f1 = wp.empty(1, dtype=float, device=device)


class RelationSolver:
    """Optimises candidate positions against the compiled relations and no-overlap terms.

    Args:
        params: Solver settings (iterations, learning rate, convergence, clearance, strategies).
    """

    def __init__(self, params: RelationSolverParams | None = None):
        ensure_warp()
        self.params = params or RelationSolverParams()
        self._scratch: dict[tuple, _Scratch] = {}
        self._lock = threading.Lock()

    def _get_scratch(self, device: str, b: int, n: int) -> _Scratch:
        key = (device, b, n, threading.get_ident())
        s = self._scratch.get(key)
        if s is None:
            with self._lock:
                s = self._scratch.setdefault(key, _Scratch(device, b, n))
        return s

    def settings(self, seed: int, do_init: bool, do_post: bool, max_iters: int | None, problem: PlacementProblem):
        p = self.params
        s = SolveSettings()
        s.seed = int(seed) & 0x7FFFFFFF
        s.do_init = int(do_init)
        s.init_tries = int(p.init_attempts)
        s.max_iters = int(p.max_iters if max_iters is None else max_iters)
        s.lr = float(p.lr)
        s.beta1 = float(p.beta1)
        s.beta2 = float(p.beta2)
        s.eps = float(p.eps)
        s.margin = float(p.penalty_margin_m)
        s.do_post = int(do_post)
        s.checkpoints = problem.checkpoints
        s.n_checkpoints = len(p.get_checkpoints())
        return s

    def run(self, problem: PlacementProblem, env_ids: torch.Tensor, draw_ids: torch.Tensor,
            positions: torch.Tensor, rotations: torch.Tensor, loss: torch.Tensor, iterations: torch.Tensor,
            *, do_init: bool, do_post: bool, max_iters: int | None = None, settings=None) -> None:
        """Launches the fused kernel; writes positions, rotations, loss and iterations in place."""
        b = int(env_ids.shape[0])
        if b == 0:
            return
        n = problem.num_objects
        sc = self._get_scratch(problem.device, b, n)
        st = CandidateState()
        st.x = wp.from_torch(positions.view(b, max(n, 1), 3) if n else torch.zeros(b, 1, 3, device=positions.device),
                             dtype=wp.vec3)
        st.rot = wp.from_torch(rotations if n else torch.zeros(b, 1, 4, device=positions.device), dtype=wp.quat)
        st.olo, st.ohi, st.m, st.v, st.g = sc.olo, sc.ohi, sc.m, sc.v, sc.g
        if settings is None:
            settings = self.settings(problem.placement_seed, do_init, do_post, max_iters, problem)
        wp.launch(solve_kernel, dim=b, device=problem.device,
                  inputs=[problem.tables, st, settings, wp.from_torch(env_ids), wp.from_torch(draw_ids),
                          sc.f2, sc.i2, sc.i1, sc.f1,
                          wp.from_torch(loss), wp.from_torch(iterations)])

    def solve(self, problem: PlacementProblem, batch: PlacementCandidateBatch) -> None:
        """Optimises ``batch`` in place from its current positions and rotations (modifiers not applied)."""
        pos = batch.positions.contiguous()
        rot = batch.rotations.contiguous()
        self.run(problem, batch.env_ids, batch.draw_ids, pos, rot, batch.loss, batch.iterations,
                 do_init=False, do_post=False)
        batch.positions, batch.rotations = pos, rot
        batch.invalidate()

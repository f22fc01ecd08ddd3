"""Solve stage: the ``RelationSolver`` runs the fused warp kernel over a whole candidate batch.

One launch solves every candidate (one thread each, own early exit); no Python loop over candidates,
objects or relations. Anchors and obstacles never move. Works on ``cpu`` and ``cuda:0``.

The placer's hot path (``run_fused``) keeps one workspace per (problem, batch size, thread): warp views
of one flat output buffer and a recorded launch, so a call costs two id copies, one launch and one
buffer copy that becomes the returned batch's tensors.
"""

from __future__ import annotations

import threading

import torch
import warp as wp

from isaaclab_arena.relations.kernels.geometry import ensure_warp
from isaaclab_arena.relations.kernels.solve import SolveSettings, solve_kernel
from isaaclab_arena.relations.kernels.tables import NUM_SLOTS, CandidateState
from isaaclab_arena.relations.placement_candidate import PlacementCandidateBatch
from isaaclab_arena.relations.placement_problem import PlacementProblem
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams


def _scratch_state(device: str, b: int, n: int) -> CandidateState:
    n = max(n, 1)
    st = CandidateState()
    for name in ("olo", "ohi", "m", "v", "g", "ilo", "ihi"):
        setattr(st, name, wp.empty((b, n), dtype=wp.vec3, device=device))
    return st


class _Workspace:
    """Persistent buffers and a recorded launch for one (problem, B): outputs live in one flat int32
    buffer (float fields viewed as float32), laid out field by field."""

    def __init__(self, solver: "RelationSolver", problem: PlacementProblem, b: int):
        dev = problem.device
        n = max(problem.num_objects, 1)
        r = max(problem.num_relations, 1)
        self.n, self.r, self.b = problem.num_objects, problem.num_relations, b
        sizes = [("pos", b * n * 3), ("rot", b * n * 4), ("loss", b), ("iters", b), ("checks", b * NUM_SLOTS),
                 ("excess", b * r), ("cause", b * r), ("ovp", b), ("ovd", b)]
        self.slices = {}
        off = 0
        for name, size in sizes:
            self.slices[name] = (off, off + size)
            off += size
        self.buf = torch.zeros(off, dtype=torch.int32, device=dev)
        self.shapes = {"pos": (b, n, 3), "rot": (b, n, 4), "loss": (b,), "iters": (b,), "checks": (b, NUM_SLOTS),
                       "excess": (b, r), "cause": (b, r), "ovp": (b,), "ovd": (b,)}
        self.floats = {"pos", "rot", "loss", "excess", "ovd"}
        v = self.views(self.buf)
        self.env = torch.zeros(b, dtype=torch.int64, device=dev)
        self.draw = torch.zeros(b, dtype=torch.int64, device=dev)
        st = _scratch_state(dev, b, n)
        st.x = wp.from_torch(v["pos"], dtype=wp.vec3)
        st.rot = wp.from_torch(v["rot"], dtype=wp.quat)
        settings = solver.settings(problem.placement_seed, True, True, None, problem, write_checks=True)
        self._keep = (st, settings, v)
        self.cmd = wp.launch(solve_kernel, dim=b, device=dev, record_cmd=True,
                             inputs=[problem.tables, st, settings, wp.from_torch(self.env), wp.from_torch(self.draw),
                                     wp.from_torch(v["excess"]), wp.from_torch(v["cause"]), wp.from_torch(v["checks"]),
                                     wp.from_torch(v["ovp"]), wp.from_torch(v["ovd"]), wp.from_torch(v["loss"]),
                                     wp.from_torch(v["iters"])])

    def views(self, buf: torch.Tensor) -> dict[str, torch.Tensor]:
        out = {}
        for name, (a, z) in self.slices.items():
            t = buf[a:z]
            if name in self.floats:
                t = t.view(torch.float32)
            out[name] = t.view(self.shapes[name])
        return out


class RelationSolver:
    """Optimises candidate positions against the compiled relations and no-overlap terms.

    Args:
        params: Solver settings (iterations, learning rate, convergence, clearance, strategies).
    """

    def __init__(self, params: RelationSolverParams | None = None):
        ensure_warp()
        self.params = params or RelationSolverParams()
        self._scratch: dict[tuple, CandidateState] = {}
        self._spaces: dict[tuple, _Workspace] = {}
        self._lock = threading.Lock()

    def settings(self, seed: int, do_init: bool, do_post: bool, max_iters: int | None, problem: PlacementProblem,
                 write_checks: bool = False) -> SolveSettings:
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
        s.write_checks = int(write_checks)
        s.checkpoints = problem.checkpoints
        s.n_checkpoints = len(p.get_checkpoints())
        return s

    # -- fused hot path ----------------------------------------------------------------------------
    def run_fused(self, problem: PlacementProblem, env_ids: torch.Tensor, draw_ids: torch.Tensor) -> PlacementCandidateBatch:
        """Generate, solve, apply modifiers and evaluate the built-in checks of (env_ids, draw_ids) in one
        launch. Returns a new batch (its tensors are its own) with the kernel verdicts attached."""
        b = int(env_ids.shape[0])
        key = (id(problem), b, threading.get_ident())
        ws = self._spaces.get(key)
        if ws is None or ws._problem_ref is not problem:
            with self._lock:
                if len(self._spaces) > 32:
                    self._spaces.clear()
                ws = _Workspace(self, problem, b)
                ws._problem_ref = problem
                self._spaces[key] = ws
        ws.env.copy_(env_ids)
        ws.draw.copy_(draw_ids)
        if b:
            ws.cmd.launch()
        v = ws.views(ws.buf.clone())
        n, r = ws.n, ws.r
        batch = PlacementCandidateBatch(
            problem=problem, env_ids=env_ids, draw_ids=draw_ids, positions=v["pos"][:, :n], rotations=v["rot"][:, :n],
            loss=v["loss"], iterations=v["iters"], relation_excess=v["excess"][:, :r], relation_cause=v["cause"][:, :r],
            overlap_pair=v["ovp"], overlap_depth=v["ovd"])
        batch._kernel_checks = v["checks"]
        return batch

    # -- general path ------------------------------------------------------------------------------
    def run(self, problem: PlacementProblem, env_ids: torch.Tensor, draw_ids: torch.Tensor,
            positions: torch.Tensor, rotations: torch.Tensor, loss: torch.Tensor, iterations: torch.Tensor,
            *, do_init: bool, do_post: bool, max_iters: int | None = None) -> None:
        """Launches the kernel on caller-owned tensors; writes positions, rotations, loss and iterations."""
        b = int(env_ids.shape[0])
        if b == 0:
            return
        n = problem.num_objects
        key = (problem.device, b, n, threading.get_ident())
        st = self._scratch.get(key)
        if st is None:
            st = self._scratch.setdefault(key, _scratch_state(problem.device, b, n))
        dev = positions.device
        if n:
            st.x = wp.from_torch(positions, dtype=wp.vec3)
            st.rot = wp.from_torch(rotations, dtype=wp.quat)
        else:
            st.x = wp.from_torch(torch.zeros(b, 1, 3, device=dev), dtype=wp.vec3)
            st.rot = wp.from_torch(torch.zeros(b, 1, 4, device=dev), dtype=wp.quat)
        settings = self.settings(problem.placement_seed, do_init, do_post, max_iters, problem)
        f2 = wp.empty((1, 1), dtype=float, device=problem.device)
        i2 = wp.empty((1, 1), dtype=int, device=problem.device)
        wp.launch(solve_kernel, dim=b, device=problem.device,
                  inputs=[problem.tables, st, settings, wp.from_torch(env_ids), wp.from_torch(draw_ids), f2, i2, i2,
                          wp.empty(1, dtype=int, device=problem.device), wp.empty(1, dtype=float, device=problem.device),
                          wp.from_torch(loss), wp.from_torch(iterations)])

    def solve(self, problem: PlacementProblem, batch: PlacementCandidateBatch) -> None:
        """Optimises ``batch`` in place from its current positions and rotations (modifiers not applied)."""
        pos = batch.positions.contiguous()
        rot = batch.rotations.contiguous()
        self.run(problem, batch.env_ids, batch.draw_ids, pos, rot, batch.loss, batch.iterations,
                 do_init=False, do_post=False)
        batch.positions, batch.rotations = pos, rot
        batch.invalidate()

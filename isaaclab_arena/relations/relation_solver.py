"""Solve stage: the ``RelationSolver`` runs the fused warp kernel over a whole candidate batch.

One launch solves every candidate (one thread each, own early exit); no Python loop over candidates,
objects or relations. Anchors and obstacles never move. Works on ``cpu`` and ``cuda:0``.

The placer's hot path (``run_fused``) keeps one workspace per (problem, batch size, thread): warp views
of one flat output buffer and a recorded launch, so a call costs two id copies, one launch and one
buffer copy that becomes the returned batch's tensors.
"""

from __future__ import annotations

import threading

import numpy as np

import torch
import warp as wp

from isaaclab_arena.relations.kernels.geometry import ensure_warp, torch_stream
from isaaclab_arena.relations.kernels.solve import SolveSettings, solve_kernels
from isaaclab_arena.relations.kernels.tables import NUM_SLOTS, CandidateState, solve_outputs
from isaaclab_arena.relations.placement_candidate import PlacementCandidateBatch
from isaaclab_arena.relations.placement_problem import PlacementProblem
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams


def _scratch_state(device: str, b: int, n: int) -> CandidateState:
    n = max(n, 1)
    st = CandidateState()
    for name in ("olo", "ohi", "m", "v", "g", "ilo", "ihi"):
        setattr(st, name, wp.empty((b, n), dtype=wp.vec3, device=device))
    return st


class _Worker:
    """A persistent helper thread that runs a callable on request (warp's native kernel calls release
    the GIL, so two CPU threads run kernels on two cores)."""

    def __init__(self):
        self._go = threading.Event()
        self._done = threading.Event()
        self._fn = None
        self._err = None
        threading.Thread(target=self._loop, daemon=True, name="arena-placement-worker").start()

    def _loop(self):
        while True:
            self._go.wait()
            self._go.clear()
            try:
                self._fn()
            except BaseException as err:  # pragma: no cover - re-raised in the caller
                self._err = err
            self._done.set()

    def start(self, fn) -> None:
        self._fn, self._err = fn, None
        self._done.clear()
        self._go.set()

    def join(self) -> None:
        self._done.wait()
        if self._err is not None:
            raise self._err


class _Workspace:
    """Persistent buffers and recorded launches for one (problem, B): outputs live in one flat int32
    buffer (float fields viewed as float32), laid out field by field; on the CPU a large batch is split
    into row ranges launched on two threads (each candidate's result does not depend on the split)."""

    def __init__(self, solver: "RelationSolver", problem: PlacementProblem, b: int, parts: int, slot_modes):
        dev = problem.device
        n = max(problem.num_objects, 1)
        r = max(problem.num_relations, 1)
        self.n, self.r, self.b = problem.num_objects, problem.num_relations, b
        sizes = [("pos", b * n * 3), ("rot", b * n * 4), ("loss", b), ("iters", b), ("counts", b * 2),
                 ("excess", b * r), ("cause", b * r), ("ovp", b), ("ovd", b)]
        self.slices = {}
        off = 0
        for name, size in sizes:
            self.slices[name] = (off, off + size)
            off += size
        self.buf = torch.zeros(off, dtype=torch.int32, device=dev)
        self.np_buf = self.buf.numpy() if dev == "cpu" else None
        self.shapes = {"pos": (b, n, 3), "rot": (b, n, 4), "loss": (b,), "iters": (b,), "counts": (b, 2),
                       "excess": (b, r), "cause": (b, r), "ovp": (b,), "ovd": (b,)}
        # bool outputs: verdict per check slot, then passed
        self.bbuf = torch.zeros(b * (NUM_SLOTS + 1), dtype=torch.bool, device=dev)
        self.np_bbuf = self.bbuf.numpy() if dev == "cpu" else None
        self.floats = {"pos", "rot", "loss", "excess", "ovd"}
        v = self.views(self.buf, self.bbuf)
        self.env = torch.zeros(b, dtype=torch.int64, device=dev)
        self.draw = torch.zeros(b, dtype=torch.int64, device=dev)
        settings = solver.settings(problem.placement_seed, True, True, None, problem, write_checks=True)
        self.slot_mode = wp.array(np.asarray(slot_modes, np.int32), dtype=int, device=dev)
        settings.slot_mode = self.slot_mode
        bounds = [round(b * k / parts) for k in range(parts + 1)]
        self.parts = []
        self._keep = [settings, v]
        for r0, r1 in zip(bounds, bounds[1:]):
            if r1 <= r0:
                continue
            st = _scratch_state(dev, r1 - r0, n)
            st.x = wp.from_torch(v["pos"][r0:r1], dtype=wp.vec3)
            st.rot = wp.from_torch(v["rot"][r0:r1], dtype=wp.quat)
            pending = wp.zeros(1, dtype=int, device=dev)
            out = solve_outputs(
                dev, r1 - r0, rel_excess=wp.from_torch(v["excess"][r0:r1]), rel_cause=wp.from_torch(v["cause"][r0:r1]),
                checks=wp.from_torch(v["checks"][r0:r1]), ov_pair=wp.from_torch(v["ovp"][r0:r1]),
                ov_depth=wp.from_torch(v["ovd"][r0:r1]), loss=wp.from_torch(v["loss"][r0:r1]),
                iters=wp.from_torch(v["iters"][r0:r1]), counts=wp.from_torch(v["counts"][r0:r1]),
                passed=wp.from_torch(v["passed"][r0:r1]), pending=pending)
            inputs = [problem.tables, st, settings, wp.from_torch(self.env[r0:r1]), wp.from_torch(self.draw[r0:r1]), out]
            self._keep.append((st, inputs))
            self.parts.append(([wp.launch(k, dim=r1 - r0, device=dev, record_cmd=True, inputs=inputs)
                                for k in solve_kernels(True)], pending, pending.numpy() if dev == "cpu" else None))
        self.worker = solver._worker() if len(self.parts) > 1 else None

    @staticmethod
    def _run(part) -> None:
        (init, iterate, finalize), pending, pending_np = part
        if pending_np is None:
            init.launch()
            iterate.launch()
        else:
            pending_np[0] = 0
            init.launch()
            if pending_np[0]:  # on the CPU the loop is skipped when every candidate started clean
                iterate.launch()
        finalize.launch()

    def launch(self) -> None:
        if self.worker is None:
            for part in self.parts:
                self._run(part)
            return
        self.worker.start(lambda: self._run(self.parts[1]))
        self._run(self.parts[0])
        self.worker.join()

    def snapshot(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Copies of the output buffers (single-threaded on the CPU)."""
        if self.np_buf is not None:
            return torch.from_numpy(self.np_buf.copy()), torch.from_numpy(self.np_bbuf.copy())
        return self.buf.clone(), self.bbuf.clone()

    def views(self, buf: torch.Tensor, bbuf: torch.Tensor) -> dict[str, torch.Tensor]:
        b = self.b
        out = {"checks": bbuf[:b * NUM_SLOTS].view(b, NUM_SLOTS), "passed": bbuf[b * NUM_SLOTS:]}
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
        self._workers: dict[int, _Worker] = {}
        self._lock = threading.Lock()

    def _worker(self) -> _Worker:
        """The helper thread of the calling thread (one per caller, shared by its workspaces)."""
        me = threading.get_ident()
        w = self._workers.get(me)
        if w is None:
            w = self._workers.setdefault(me, _Worker())
        return w

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
    def run_fused(self, problem: PlacementProblem, env_ids: torch.Tensor, draw_ids: torch.Tensor,
                  slot_modes: tuple[int, ...] = (2,) * NUM_SLOTS) -> PlacementCandidateBatch:
        """Generate, solve, apply modifiers and evaluate the built-in checks of (env_ids, draw_ids).
        ``slot_modes``: per built-in check slot 2 required, 1 optional, 0 not enabled (the kernel counts
        the ranking keys). Returns a new batch (its tensors are its own) with the kernel verdicts and
        counts attached."""
        b = int(env_ids.shape[0])
        slot_modes = tuple(slot_modes)
        key = (id(problem), b, threading.get_ident(), slot_modes)
        ws = self._spaces.get(key)
        with torch_stream(problem.device):
            if ws is None or ws._problem_ref is not problem:
                with self._lock:
                    if len(self._spaces) > 32:
                        self._spaces.clear()
                    parts = self.params.cpu_threads if (problem.device == "cpu" and b >= 256) else 1
                    ws = _Workspace(self, problem, b, max(1, parts), slot_modes)
                    ws._problem_ref = problem
                    self._spaces[key] = ws
            ws.env.copy_(env_ids)
            ws.draw.copy_(draw_ids)
            if b:
                ws.launch()
            v = ws.views(*ws.snapshot())
        n, r = ws.n, ws.r
        batch = PlacementCandidateBatch(
            problem=problem, env_ids=env_ids, draw_ids=draw_ids, positions=v["pos"][:, :n], rotations=v["rot"][:, :n],
            loss=v["loss"], iterations=v["iters"], relation_excess=v["excess"][:, :r], relation_cause=v["cause"][:, :r],
            overlap_pair=v["ovp"], overlap_depth=v["ovd"])
        batch._kernel_checks = v["checks"]
        batch._kernel_counts = (slot_modes, v["counts"][:, 0], v["counts"][:, 1], v["passed"])
        return batch

    # -- general path ------------------------------------------------------------------------------
    def run(self, problem: PlacementProblem, env_ids: torch.Tensor, draw_ids: torch.Tensor,
            positions: torch.Tensor, rotations: torch.Tensor, loss: torch.Tensor, iterations: torch.Tensor,
            *, do_init: bool, do_post: bool, max_iters: int | None = None) -> None:
        """Launches the kernel on caller-owned tensors; writes positions, rotations, loss and iterations."""
        b = int(env_ids.shape[0])
        if b == 0:
            return
        with torch_stream(problem.device):
            self._run(problem, env_ids, draw_ids, positions, rotations, loss, iterations, do_init, do_post, max_iters)

    def _run(self, problem, env_ids, draw_ids, positions, rotations, loss, iterations, do_init, do_post, max_iters):
        b = int(env_ids.shape[0])
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
        settings.slot_mode = wp.zeros(NUM_SLOTS, dtype=int, device=problem.device)
        out = solve_outputs(problem.device, b, loss=wp.from_torch(loss), iters=wp.from_torch(iterations))
        inputs = [problem.tables, st, settings, wp.from_torch(env_ids), wp.from_torch(draw_ids), out]
        for k in solve_kernels(do_init):
            wp.launch(k, dim=b, device=problem.device, inputs=inputs)

    def solve(self, problem: PlacementProblem, batch: PlacementCandidateBatch) -> None:
        """Optimises ``batch`` in place from its current positions and rotations (modifiers not applied)."""
        pos = batch.positions.contiguous()
        rot = batch.rotations.contiguous()
        self.run(problem, batch.env_ids, batch.draw_ids, pos, rot, batch.loss, batch.iterations,
                 do_init=False, do_post=False)
        batch.positions, batch.rotations = pos, rot
        batch.invalidate()

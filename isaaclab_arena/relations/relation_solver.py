"""Solve stage: the ``RelationSolver`` runs the fused warp kernel over a whole candidate batch.

One launch solves every candidate (one thread each, own early exit); no Python loop over candidates,
objects or relations. Anchors and obstacles never move. Works on ``cpu`` and ``cuda:0``.

The placer's hot path (``run_fused``) keeps one workspace per (problem, batch size, thread): warp views
of one flat output buffer and a recorded launch, so a call costs two id copies, one launch and one
buffer copy that becomes the returned batch's tensors.

Reporting (``RelationSolverParams``): ``verbose`` prints one ``[solver]`` line per solve call (convergence,
iterations, final loss, wall time) from one reduction of the batch's tensors; ``profile`` prints a
``[solver profile]`` line (wall time, batch size, pair count, per-stage times, ms per iteration; on CUDA it
synchronises between launches). ``save_position_history`` adds a (B, S, n, 3) snapshot buffer that only
the iterate kernel writes (``PlacementCandidateBatch.position_history``, ``last_position_history``).
"""

from __future__ import annotations

import math
import threading
import time

import numpy as np

import torch
import warp as wp

from isaaclab_arena.relations.kernels.geometry import ensure_warp, torch_stream
from isaaclab_arena.relations.kernels.solve import HISTORY_EVERY, SolveSettings, solve_kernels
from isaaclab_arena.relations.kernels.tables import NUM_SLOTS, CandidateState, solve_outputs
from isaaclab_arena.relations.placement_candidate import PlacementCandidateBatch
from isaaclab_arena.relations.placement_problem import PlacementProblem
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams


def history_slots(max_iters: int) -> int:
    """Snapshots of a solve capped at ``max_iters``: after 0, 10, 20, ... iterations (10 k <= max_iters)."""
    return int(max_iters) // int(HISTORY_EVERY) + 1


def _nan_history(device, b: int, slots: int, n: int) -> torch.Tensor:
    return torch.full((b, slots, max(n, 1), 3), math.nan, dtype=torch.float32, device=device)


def _synchronize(device: str) -> None:
    if device != "cpu":
        torch.cuda.synchronize(device)


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
        self.device = dev
        self.max_iters = settings.max_iters
        self.hist = (_nan_history(dev, b, settings.history_slots, n) if settings.history_slots > 0 else None)
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
                passed=wp.from_torch(v["passed"][r0:r1]), pending=pending,
                history=None if self.hist is None else wp.from_torch(self.hist[r0:r1], dtype=wp.vec3))
            inputs = [problem.tables, st, settings, wp.from_torch(self.env[r0:r1]), wp.from_torch(self.draw[r0:r1]), out]
            self._keep.append((st, inputs))
            self.parts.append(([wp.launch(k, dim=r1 - r0, device=dev, record_cmd=True, inputs=inputs)
                                for k in solve_kernels(True)], pending, pending.numpy() if dev == "cpu" else None))
        self.worker = solver._worker() if len(self.parts) > 1 else None

    def _run(self, part, times: list | None) -> None:
        """The three launches of one row range; with ``times`` (profile) appends their wall times (s)."""
        (init, iterate, finalize), pending, pending_np = part
        if times is not None:
            return self._run_timed(part, times)
        if pending_np is None:
            init.launch()
            iterate.launch()
        else:
            pending_np[0] = 0
            init.launch()
            # on the CPU the loop is skipped when every candidate started clean (unless the position
            # history must record the initial positions)
            if pending_np[0] or self.hist is not None:
                iterate.launch()
        finalize.launch()

    def _run_timed(self, part, times: list) -> None:
        (init, iterate, finalize), pending, pending_np = part
        t = [time.perf_counter()]
        if pending_np is not None:
            pending_np[0] = 0
        init.launch()
        _synchronize(self.device)
        t.append(time.perf_counter())
        if pending_np is None or pending_np[0] or self.hist is not None:
            iterate.launch()
        _synchronize(self.device)
        t.append(time.perf_counter())
        finalize.launch()
        _synchronize(self.device)
        t.append(time.perf_counter())
        times.append((t[1] - t[0], t[2] - t[1], t[3] - t[2]))

    def launch(self, times: list | None = None) -> None:
        if self.hist is not None:
            self.hist.fill_(math.nan)
        if self.worker is None:
            for part in self.parts:
                self._run(part, times)
            return
        self.worker.start(lambda: self._run(self.parts[1], times))
        self._run(self.parts[0], times)
        self.worker.join()

    def snapshot(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Copies of the output buffers (single-threaded on the CPU)."""
        if self.np_buf is not None:
            return torch.from_numpy(self.np_buf.copy()), torch.from_numpy(self.np_bbuf.copy())
        return self.buf.clone(), self.bbuf.clone()

    def history(self) -> torch.Tensor | None:
        """A copy of the position history (B, S, n, 3), NaN after each candidate's stop; None when off."""
        return None if self.hist is None else self.hist[:, :, :self.n].clone()

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
        params: Solver settings (iterations, learning rate, convergence, clearance, strategies, reporting).

    Attributes:
        last_position_history: With ``save_position_history``, the (B, S, n, 3) float32 positions (env-local
            metres, ``object_names`` order) of the last solve call after 0, 10, 20, ... iterations, S =
            ``max_iters // 10 + 1``; snapshots after a candidate stopped are NaN (its final poses are the
            batch's ``positions``). None when the flag is off.
    """

    def __init__(self, params: RelationSolverParams | None = None):
        ensure_warp()
        self.params = params or RelationSolverParams()
        self.last_position_history: torch.Tensor | None = None
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
        s.conv_loss = float(p.convergence_threshold)
        s.history_slots = history_slots(s.max_iters) if p.save_position_history else 0
        return s

    # -- reporting ---------------------------------------------------------------------------------
    def report(self, problem: PlacementProblem, iterations: torch.Tensor, loss: torch.Tensor, max_iters: int,
               t0: float, times: list | None) -> None:
        """Prints the ``verbose`` / ``profile`` lines of one solve call of ``len(iterations)`` candidates: one
        reduction of the batch's tensors (one host read), no per-candidate Python. A candidate counts as
        converged when it stopped before ``max_iters`` (its exit test passed, or its initial draw was
        already penalty-free)."""
        p = self.params
        b = int(iterations.shape[0])
        if b:
            it = iterations.to(torch.float32)
            conv = (iterations < max_iters).sum().to(torch.float32)
            k, it_med, it_max, l_med, l_max = torch.stack(
                [conv, it.median(), it.max(), loss.median(), loss.max()]).tolist()
        else:
            k = it_med = it_max = l_med = l_max = 0.0
        wall_ms = (time.perf_counter() - t0) * 1e3
        if p.verbose:
            print(f"[solver] {b} candidates: {int(k)} converged, iterations median/max {int(it_med)}/{int(it_max)}, "
                  f"final loss median/max {l_med:.4g}/{l_max:.4g}, {wall_ms:.2f} ms", flush=True)
        if p.profile:
            stage = [max((t[s] for t in times), default=0.0) * 1e3 for s in range(3)] if times else [0.0] * 3
            print(f"[solver profile] wall_ms={wall_ms:.3f} batch={b} pairs={len(problem.pairs)} "
                  f"init_ms={stage[0]:.3f} iterate_ms={stage[1]:.3f} finalize_ms={stage[2]:.3f} "
                  f"iterations_max={int(it_max)} ms_per_iter={stage[1] / max(int(it_max), 1):.5f}", flush=True)

    # -- fused hot path ----------------------------------------------------------------------------
    def run_fused(self, problem: PlacementProblem, env_ids: torch.Tensor, draw_ids: torch.Tensor,
                  slot_modes: tuple[int, ...] = (2,) * NUM_SLOTS) -> PlacementCandidateBatch:
        """Generate, solve, apply modifiers and evaluate the built-in checks of (env_ids, draw_ids).
        ``slot_modes``: per built-in check slot 2 required, 1 optional, 0 not enabled (the kernel counts
        the ranking keys). Returns a new batch (its tensors are its own) with the kernel verdicts and
        counts attached."""
        b = int(env_ids.shape[0])
        slot_modes = tuple(slot_modes)
        p = self.params
        reporting = p.verbose or p.profile
        t0 = time.perf_counter() if reporting else 0.0
        times = [] if p.profile else None
        key = (id(problem), b, threading.get_ident(), slot_modes, p.save_position_history)
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
                ws.launch(times)
            v = ws.views(*ws.snapshot())
            hist = ws.history()
        n, r = ws.n, ws.r
        batch = PlacementCandidateBatch(
            problem=problem, env_ids=env_ids, draw_ids=draw_ids, positions=v["pos"][:, :n], rotations=v["rot"][:, :n],
            loss=v["loss"], iterations=v["iters"], relation_excess=v["excess"][:, :r], relation_cause=v["cause"][:, :r],
            overlap_pair=v["ovp"], overlap_depth=v["ovd"], position_history=hist)
        batch._kernel_checks = v["checks"]
        batch._kernel_counts = (slot_modes, v["counts"][:, 0], v["counts"][:, 1], v["passed"])
        self.last_position_history = hist
        if reporting:
            self.report(problem, batch.iterations, batch.loss, ws.max_iters, t0, times)
        return batch

    # -- general path ------------------------------------------------------------------------------
    def run(self, problem: PlacementProblem, env_ids: torch.Tensor, draw_ids: torch.Tensor,
            positions: torch.Tensor, rotations: torch.Tensor, loss: torch.Tensor, iterations: torch.Tensor,
            *, do_init: bool, do_post: bool, max_iters: int | None = None) -> None:
        """Launches the kernel on caller-owned tensors; writes positions, rotations, loss and iterations."""
        b = int(env_ids.shape[0])
        if b == 0:
            return
        p = self.params
        cap = int(p.max_iters if max_iters is None else max_iters)
        reporting = (p.verbose or p.profile) and cap > 0  # generation alone (max_iters=0) is not reported
        t0 = time.perf_counter() if reporting else 0.0
        times = [] if (p.profile and cap > 0) else None
        with torch_stream(problem.device):
            self._run(problem, env_ids, draw_ids, positions, rotations, loss, iterations, do_init, do_post, max_iters,
                      times)
            if reporting:
                self.report(problem, iterations, loss, cap, t0, times)

    def _run(self, problem, env_ids, draw_ids, positions, rotations, loss, iterations, do_init, do_post, max_iters,
             times):
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
        hist = _nan_history(dev, b, settings.history_slots, n) if settings.history_slots > 0 else None
        out = solve_outputs(problem.device, b, loss=wp.from_torch(loss), iters=wp.from_torch(iterations),
                            history=None if hist is None else wp.from_torch(hist, dtype=wp.vec3))
        inputs = [problem.tables, st, settings, wp.from_torch(env_ids), wp.from_torch(draw_ids), out]
        stamps = [time.perf_counter()]
        for k in solve_kernels(do_init):
            wp.launch(k, dim=b, device=problem.device, inputs=inputs)
            if times is not None:
                _synchronize(problem.device)
                stamps.append(time.perf_counter())
        if times is not None:
            times.append(tuple(b_ - a_ for a_, b_ in zip(stamps, stamps[1:])))
        self.last_position_history = None if hist is None else hist[:, :, :n]

    def solve(self, problem: PlacementProblem, batch: PlacementCandidateBatch) -> None:
        """Optimises ``batch`` in place from its current positions and rotations (modifiers not applied)."""
        pos = batch.positions.contiguous()
        rot = batch.rotations.contiguous()
        self.run(problem, batch.env_ids, batch.draw_ids, pos, rot, batch.loss, batch.iterations,
                 do_init=False, do_post=False)
        batch.positions, batch.rotations = pos, rot
        batch.position_history = self.last_position_history
        batch.invalidate()

"""Solve stage: ``RelationSolver`` turns candidates into solved, evaluated candidates with warp kernels.

One thread owns one candidate (its own early exit); no Python loop over candidates, objects or relations;
anchors and obstacles never move; ``cpu`` and ``cuda:0`` alike. Two entry points, each returning a new
``PlacementCandidateBatch``:

- ``solve(problem, env_ids, draw_ids)``: the hot path. Generation, optimisation, the pose modifiers and the
  evaluation of the final poses (per-relation violations, built-in check verdicts, loss) are fused into
  one stage of three recorded launches for speed; it is equivalent to ``PlacementCandidateGenerator`` ->
  ``solve_candidates`` with modifiers.
- ``solve_candidates(problem, batch)``: optimises given candidates (no modifiers) and evaluates them.

Reporting (``RelationSolverParams``): ``verbose`` prints one ``[solver]`` line per solve call, ``profile`` a
``[solver profile]`` line; ``save_position_history`` adds a (B, S, n, 3) snapshot buffer.
"""

from __future__ import annotations

import math
import threading
import time

import torch
import warp as wp

from isaaclab_arena.relations.kernels import launch
from isaaclab_arena.relations.kernels.geometry import copy_into, ensure_warp, torch_stream
from isaaclab_arena.relations.kernels.settings import HISTORY_EVERY, SolveSettings
from isaaclab_arena.relations.kernels.tables import CandidateState, solve_outputs, sweep_scratch
from isaaclab_arena.relations.kinds.dispatch import NUM_SLOTS
from isaaclab_arena.relations.solving.placement_candidate import PlacementCandidateBatch
from isaaclab_arena.relations.compiler.placement_problem import PlacementProblem
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams
from isaaclab_arena.relations.solving.solver_workers import WorkerPool, openmp_spin_notice

#: On the CPU a batch is split over ``cpu_threads`` threads from this many candidates on.
SPLIT_FROM = 256


def history_slots(max_iters: int) -> int:
    """Snapshots of a solve capped at ``max_iters``: after 0, 10, 20, ... iterations (10 k <= max_iters)."""
    return int(max_iters) // int(HISTORY_EVERY) + 1


def _synchronize(device: str) -> None:
    if device != "cpu":
        torch.cuda.synchronize(device)


def _scratch_state(device: str, b: int, n: int, tables) -> CandidateState:
    n = max(n, 1)
    st = CandidateState()
    for name in ("olo", "ohi", "m", "v", "g", "ilo", "ihi"):
        setattr(st, name, wp.empty((b, n), dtype=wp.vec3, device=device))
    return sweep_scratch(st, tables, b, device)


class OutputBuffers:
    """One flat int32 buffer (float fields viewed as float32) and one bool buffer holding every output of a
    batch of B candidates; ``views`` cuts them into named tensors."""

    FLOATS = {"pos", "rot", "loss", "excess", "ovd", "cld"}

    def __init__(self, b: int, n: int, r: int, device):
        self.b = b
        self.shapes = {"pos": (b, n, 3), "rot": (b, n, 4), "loss": (b,), "iters": (b,), "bits": (b,),
                       "excess": (b, r), "cause": (b, r), "ovp": (b,), "ovd": (b,), "clp": (b,),
                       "cld": (b,)}
        self.layout, off = {}, 0
        for name, shape in self.shapes.items():
            size = math.prod(shape)
            stride = tuple(math.prod(shape[d + 1:]) for d in range(len(shape)))
            self.layout[name] = (shape, stride, off)
            off += size
        self.buf = torch.zeros(off, dtype=torch.int32, device=device)
        self.bbuf = torch.zeros(b * NUM_SLOTS, dtype=torch.bool, device=device)

    def views(self, buf: torch.Tensor, bbuf: torch.Tensor) -> dict[str, torch.Tensor]:
        """Named views of ``buf`` (int32, float32 where ``FLOATS``) and ``bbuf``: one ``as_strided`` each (a
        B = 1 solve is dominated by such host work)."""
        fbuf = buf.view(torch.float32)
        out = {"checks": bbuf.view(self.b, NUM_SLOTS)}
        for name, (shape, stride, offset) in self.layout.items():
            out[name] = (fbuf if name in self.FLOATS else buf).as_strided(shape, stride, offset)
        return out

    def snapshot(self) -> dict[str, torch.Tensor]:
        """Views of a copy of the buffers (the returned batch owns its tensors)."""
        if self.buf.device.type == "cpu":
            return self.views(torch.from_numpy(self.buf.numpy().copy()), torch.from_numpy(self.bbuf.numpy().copy()))
        return self.views(self.buf.clone(), self.bbuf.clone())

    def outputs(self, device: str, v: dict, r0: int, r1: int, pending, history):
        """The kernels' ``SolveOutputs`` over rows [r0, r1)."""
        return solve_outputs(
            device, rel_excess=wp.from_torch(v["excess"][r0:r1]), rel_cause=wp.from_torch(v["cause"][r0:r1]),
            checks=wp.from_torch(v["checks"][r0:r1]), fail_bits=wp.from_torch(v["bits"][r0:r1]),
            ov_pair=wp.from_torch(v["ovp"][r0:r1]), ov_depth=wp.from_torch(v["ovd"][r0:r1]),
            cl_pair=wp.from_torch(v["clp"][r0:r1]), cl_depth=wp.from_torch(v["cld"][r0:r1]),
            loss=wp.from_torch(v["loss"][r0:r1]), iters=wp.from_torch(v["iters"][r0:r1]), pending=pending,
            history=None if history is None else wp.from_torch(history[r0:r1], dtype=wp.vec3))


def batch_from_outputs(problem, env_ids, draw_ids, v: dict, history, evaluated: bool = True) -> PlacementCandidateBatch:
    n, r = problem.num_objects, problem.num_relations
    if problem.pools is not None:  # parked members exactly at their spots, unturned (modifiers may have moved them)
        problem.pools.settle(v["pos"][:, :n], v["rot"][:, :n])
    if not evaluated:  # generated candidates: poses only
        return PlacementCandidateBatch(problem=problem, env_ids=env_ids, draw_ids=draw_ids, positions=v["pos"][:, :n],
                                       rotations=v["rot"][:, :n])
    return PlacementCandidateBatch(
        problem=problem, env_ids=env_ids, draw_ids=draw_ids, positions=v["pos"][:, :n], rotations=v["rot"][:, :n],
        loss=v["loss"], iterations=v["iters"], relation_excess=v["excess"][:, :r], relation_cause=v["cause"][:, :r],
        overlap_pair=v["ovp"], overlap_depth=v["ovd"], clearance_pair=v["clp"], clearance_depth=v["cld"],
        builtin_verdicts=v["checks"], builtin_fail_bits=v["bits"],
        position_history=history)


class _FreshWorkspace:
    """Persistent buffers and recorded launches of ``solve`` for one (problem, B): on the CPU a batch of
    ``SPLIT_FROM`` or more is split into ``cpu_threads`` row ranges launched on as many threads (a
    candidate's result does not depend on the split)."""

    def __init__(self, solver: "RelationSolver", problem: PlacementProblem, b: int, parts: int):
        dev = problem.device
        self.problem = problem
        n = max(problem.num_objects, 1)
        self.out = OutputBuffers(b, n, max(problem.num_relations, 1), dev)
        v = self.out.views(self.out.buf, self.out.bbuf)
        self.env = torch.zeros(b, dtype=torch.int64, device=dev)
        self.draw = torch.zeros(b, dtype=torch.int64, device=dev)
        self.start = v["pos"][:, :problem.num_objects]  # start positions (the init kernel's input; pools)
        settings = solver.settings(problem, do_post=True, write_checks=True)
        self.device, self.max_iters = dev, settings.max_iters
        self.hist = (torch.full((b, settings.history_slots, n, 3), math.nan, device=dev)
                     if settings.history_slots > 0 else None)
        bounds = [round(b * k / parts) for k in range(parts + 1)]
        self.parts = []
        self._keep = [settings, v]
        for r0, r1 in zip(bounds, bounds[1:]):
            if r1 <= r0:
                continue
            st = _scratch_state(dev, r1 - r0, n, problem.tables)
            st.x = wp.from_torch(v["pos"][r0:r1], dtype=wp.vec3)
            st.rot = wp.from_torch(v["rot"][r0:r1], dtype=wp.quat)
            pending = wp.zeros(1, dtype=int, device=dev)
            dim, rows, count = launch.launch_rows(r1 - r0, dev)
            inputs = [problem.tables, st, settings, wp.from_torch(self.env[r0:r1]), wp.from_torch(self.draw[r0:r1]),
                      self.out.outputs(dev, v, r0, r1, pending, self.hist), rows, count]
            self._keep.append((st, inputs))
            self.parts.append(([wp.launch(k, dim=dim, device=dev, record_cmd=True, inputs=inputs)
                                for k in launch.fresh(problem.tables)], pending, pending.numpy() if dev == "cpu" else None))
        self.workers = solver.workers(len(self.parts) - 1)

    def _run(self, part, times: list | None) -> None:
        """The three launches of one row range; with ``times`` (profile) appends their wall times (s)."""
        (init, iterate, finalize), pending, pending_np = part
        t = [time.perf_counter()]
        if pending_np is not None:
            pending_np[0] = 0
        init.launch()
        if times is not None:
            _synchronize(self.device)
            t.append(time.perf_counter())
        # on the CPU the loop is skipped when every candidate started clean (unless the position history
        # must record the initial positions)
        if pending_np is None or pending_np[0] or self.hist is not None:
            iterate.launch()
        if times is not None:
            _synchronize(self.device)
            t.append(time.perf_counter())
        finalize.launch()
        if times is not None:
            _synchronize(self.device)
            t.append(time.perf_counter())
            times.append((t[1] - t[0], t[2] - t[1], t[3] - t[2]))

    def launch(self, times: list | None = None) -> None:
        if self.hist is not None:
            self.hist.fill_(math.nan)
        rest = [lambda p=p: self._run(p, times) for p in self.parts[1:]]
        self.workers.run(lambda: self._run(self.parts[0], times), rest)

    def history(self) -> torch.Tensor | None:
        """A copy of the position history (B, S, n, 3), NaN after each candidate's stop; None when off."""
        return None if self.hist is None else self.hist[:, :, :self.problem.num_objects].clone()


class RelationSolver:
    """Optimises candidate positions against the compiled relations and no-overlap terms.

    Args:
        params: Solver settings (iterations, learning rate, convergence, clearance, strategies, reporting).

    Attributes:
        last_position_history: With ``save_position_history``, the (B, S, n, 3) float32 positions (env-local
            metres, ``object_names`` order) of the last solve call after 0, 10, 20, ... iterations, S =
            ``max_iters // 10 + 1``; snapshots after a candidate stopped are NaN. None when the flag is off.
    """

    def __init__(self, params: RelationSolverParams | None = None):
        ensure_warp()
        self.params = params or RelationSolverParams()
        self.last_position_history: torch.Tensor | None = None
        #: When a list, the ``verbose`` line of each solve call is appended here instead of printed (the pool
        #: prints it with its batch's block, or holds both back when the block repeats the one before).
        self.held_lines: list[str] | None = None
        self._spaces: dict[tuple, _FreshWorkspace] = {}
        self._pools: dict[tuple, WorkerPool] = {}
        self._lock = threading.Lock()

    def workers(self, count: int) -> WorkerPool:
        """The helper threads of the calling thread (shared by its workspaces)."""
        key = (threading.get_ident(), count)
        pool = self._pools.get(key)
        if pool is None:
            pool = self._pools.setdefault(key, WorkerPool(count))
        return pool

    def settings(self, problem: PlacementProblem, do_post: bool, write_checks: bool,
                 max_iters: int | None = None, scene_bounds: bool = True) -> SolveSettings:
        """The kernels' settings; ``scene_bounds`` False for candidates given with their own rotations."""
        p = self.params
        s = SolveSettings()
        s.seed = int(problem.placement_seed) & 0x7FFFFFFF
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
        s.scene_bounds = int(scene_bounds)
        return s

    # -- reporting ---------------------------------------------------------------------------------
    def report(self, problem: PlacementProblem, iterations: torch.Tensor, loss: torch.Tensor, max_iters: int,
               t0: float, times: list | None) -> None:
        """Prints the ``verbose`` / ``profile`` lines of one solve call of ``len(iterations)`` candidates: one
        reduction of the batch's tensors (one host read), no per-candidate Python. A candidate counts as
        converged when it stopped before ``max_iters``."""
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
            line = (f"[solver] {b} candidates: {int(k)} converged, iterations median/max {int(it_med)}/{int(it_max)}, "
                    f"final loss median/max {l_med:.4g}/{l_max:.4g}, {wall_ms:.2f} ms")
            if self.held_lines is not None:
                self.held_lines.append(line)
            else:
                print(line, flush=True)
        if p.profile:
            stage = [max((t[s] for t in times), default=0.0) * 1e3 for s in range(3)] if times else [0.0] * 3
            print(f"[solver profile] wall_ms={wall_ms:.3f} batch={b} pairs={len(problem.pairs)} "
                  f"init_ms={stage[0]:.3f} iterate_ms={stage[1]:.3f} finalize_ms={stage[2]:.3f} "
                  f"iterations_max={int(it_max)} ms_per_iter={stage[1] / max(int(it_max), 1):.5f}", flush=True)

    # -- fresh candidates (the hot path) --------------------------------------------------------------
    def solve(self, problem: PlacementProblem, env_ids: torch.Tensor, draw_ids: torch.Tensor) -> PlacementCandidateBatch:
        """Generates, solves, applies the modifiers to and evaluates candidates (env_ids[k], draw_ids[k]):
        (B,) int64 on the problem's device. Returns a new batch whose tensors are its own."""
        b = int(env_ids.shape[0])
        p = self.params
        reporting = p.verbose or p.profile
        t0 = time.perf_counter() if reporting else 0.0
        times = [] if p.profile else None
        key = (id(problem), b, threading.get_ident(), p.save_position_history)
        ws = self._spaces.get(key)
        with torch_stream(problem.device):
            if ws is None or ws.problem is not problem:
                with self._lock:
                    if len(self._spaces) > 32:
                        self._spaces.clear()
                    parts = p.cpu_threads if (problem.device == "cpu" and b >= SPLIT_FROM) else 1
                    if parts > 1 and p.verbose:
                        openmp_spin_notice()
                    ws = self._spaces[key] = _FreshWorkspace(self, problem, b, max(1, parts))
            copy_into(ws.env, env_ids)
            copy_into(ws.draw, draw_ids)
            if problem.pools is not None:  # parked pool members start (and stay) at their parking spots
                copy_into(ws.start, problem.pools.start_positions(problem.placement_seed, env_ids, draw_ids))
            if b:
                ws.launch(times)
            v = ws.out.snapshot()
            hist = ws.history()
        batch = batch_from_outputs(problem, env_ids, draw_ids, v, hist)
        self.last_position_history = hist
        geo = problem.pair_geometry
        if geo is not None and geo.mesh is not None and (problem.device == "cpu" or reporting):
            geo.report_unreliable()  # [MeshSDF]; a host read, so on CUDA only when reporting anyway
        if reporting:
            self.report(problem, batch.iterations, batch.loss, ws.max_iters, t0, times)
        return batch

    # -- given candidates -----------------------------------------------------------------------------
    def run_kernels(self, problem: PlacementProblem, kernels, env_ids, draw_ids, positions: torch.Tensor,
                    rotations: torch.Tensor | None, do_post: bool, write_checks: bool,
                    max_iters: int | None = None) -> PlacementCandidateBatch:
        """Launches ``kernels`` (kernel functions, in order) once over candidates starting at ``positions`` /
        ``rotations`` (copied, never changed; None for kernels that draw them) and returns the resulting batch
        (poses only when ``write_checks`` is False)."""
        b, n = int(env_ids.shape[0]), problem.num_objects
        dev = problem.device
        out = OutputBuffers(b, max(n, 1), max(problem.num_relations, 1), dev)
        v = out.views(out.buf, out.bbuf)
        if n and positions is not None:
            copy_into(v["pos"][:, :n], positions)
            copy_into(v["rot"][:, :n], rotations)
        elif n and problem.pools is not None:  # kernels that draw poses: parked pool members start parked
            copy_into(v["pos"][:, :n], problem.pools.start_positions(problem.placement_seed, env_ids, draw_ids))
        settings = self.settings(problem, do_post=do_post, write_checks=write_checks, max_iters=max_iters,
                                 scene_bounds=positions is None)
        hist = (torch.full((b, settings.history_slots, max(n, 1), 3), math.nan, device=dev)
                if settings.history_slots > 0 else None)
        if b:
            with torch_stream(dev):
                st = _scratch_state(dev, b, n, problem.tables)
                st.x = wp.from_torch(v["pos"], dtype=wp.vec3)
                st.rot = wp.from_torch(v["rot"], dtype=wp.quat)
                pending = wp.zeros(1, dtype=int, device=dev)
                dim, rows, count = launch.launch_rows(b, dev)
                inputs = [problem.tables, st, settings, wp.from_torch(env_ids), wp.from_torch(draw_ids),
                          out.outputs(dev, v, 0, b, pending, hist), rows, count]
                for k in kernels:
                    wp.launch(k, dim=dim, device=dev, inputs=inputs)
        hist = None if hist is None else hist[:, :, :n]
        self.last_position_history = hist
        return batch_from_outputs(problem, env_ids, draw_ids, v, hist, evaluated=write_checks)

    def solve_candidates(self, problem: PlacementProblem, batch: PlacementCandidateBatch) -> PlacementCandidateBatch:
        """Optimises ``batch``'s candidates from their current poses (modifiers not applied) and evaluates
        them; returns a new batch."""
        p = self.params
        t0 = time.perf_counter()
        out = self.run_kernels(problem, launch.given(problem.tables), batch.env_ids, batch.draw_ids, batch.positions,
                               batch.rotations, do_post=False, write_checks=True)
        if (p.verbose or p.profile) and p.max_iters > 0:
            self.report(problem, out.iterations, out.loss, p.max_iters, t0, None)
        return out

"""PooledObjectPlacer: one logical pool of solved layouts, partitioned by environment.

Pipeline per fill: generation (``ObjectPlacer.place_batch``: solve + inexpensive checks, expensive checks on
survivors) -> ranking (``ranking.rank_order``: required-check failures, optional-check failures, solver loss)
-> storage into the partition of each candidate's env. Everything is batched torch over candidates; the only Python loop is over
solve batches (at most ``max_placement_attempts``).

* Each partition holds ``min_unique_layouts_per_env`` layouts. A reset takes the next queued layout of each
  resetting env's partition; a partition found empty is refilled during that reset (only those envs).
* ``resolve_on_reset=False``: every reset reuses the layout assigned at creation.
* ``allow_best_loss_fallbacks``: after the last batch, empty slots take that batch's best-ranked failing
  candidates (reported); False raises ``RuntimeError`` naming the envs, the checks that failed and every
  failing relation with the closest any of the fill's candidates came (``placement_diagnostics.FailureTally``,
  worded as ``ObjectPlacer.place`` words it).
* Reproducible: candidate ``(env e, draw d)`` is a pure function of (spec, placement_seed, e, d); an env's
  draw ids advance only with its own fills, so batch size, env count and partial resets of other envs never
  change which layouts an env gets.

Device residency: every pool tensor (poses, slot flags, cursors, counters, draw ids) lives on the placer's
``device``; ranking, storage and draws are batched torch there. Host syncs remain only where Python needs a
value: the loop condition of the solve batches (one ``nonzero`` per batch), the fill's diagnostics summary and
error messages, and one per reset to find the envs whose partition is empty (the refill decision).
A queued reset otherwise reads nothing back; the caller gets the poses on ``device``.

Poses are env-local (metres, xyzw). Imports no simulator.
"""

from __future__ import annotations

import torch

from isaaclab_arena.relations.kernels.geometry import copy_rows
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.relations.diagnostics.placement_diagnostics import (
    FailureTally,
    PlacementDiagnostics,
    explanation_text,
    placement_advice,
)
from isaaclab_arena.relations.solving.ranking import assign_slots, rank_order
from isaaclab_arena.utils.interrupts import raise_if_interrupted
from isaaclab_arena.utils.progress import advance_to, close_bar, paused, progress_bar


def _short_list(values: list, limit: int = 16) -> str:
    """``values`` as a list, the first ``limit`` only (a 4096-env pool's counts made a 12 KB error line)."""
    return str(values) if len(values) <= limit else f"{str(values[:limit])[:-1]}, ... ({len(values)} envs)]"


class PooledObjectPlacer:
    """Per-env layout pool fed by an :class:`ObjectPlacer`.

    Args:
        assets: Anchors and relation-placed assets (``IsaacLabArenaEnvironment.get_placement_assets()``).
        params: Placer settings (pool size, seed, fallbacks, resolve_on_reset, checks).
        num_envs: Number of envs (partitions).
        device: Torch device of the pool tensors (``"cpu"``, ``"cuda:0"``); the solver runs there too.
        output_dir: Diagnostics JSON goes here (None: console only).
        member_indices: ``{RigidObjectSet name: [member per env]}`` chosen by the builder (informational; the
            placer sizes candidates with ``RigidObjectSet.member_indices_per_env`` - the same definition).
        placer: An object with ``place_batch(assets, env_ids, draw_ids, num_envs=, device=)``; default
            ``ObjectPlacer(params)``.
        global_env_ids: One process's share of a larger job (``record_placement_layouts.py --distributed``):
            the global env id of each of the ``num_envs`` partitions (increasing). Partition ``i`` then gets
            exactly the layouts global env ``global_env_ids[i]`` gets in a single pool of ``global_num_envs``
            envs: candidates are solved with the global env ids and the global env count, and object-set
            members are chosen per global env. None (the default): partition ``i`` is env ``i``.
        global_num_envs: The job's env count (required with ``global_env_ids``).
        extensions: The default placer's optional backends (``ObjectPlacer(params, extensions)``; None: the
            default set); not used with ``placer``.
    """

    def __init__(self, assets, params: ObjectPlacerParams | None = None, num_envs: int = 1, device: str = "cpu",
                 output_dir: str | None = None, member_indices: dict | None = None, placer=None,
                 global_env_ids=None, global_num_envs: int | None = None, extensions=None):
        self.assets = list(assets)
        self.params = params or ObjectPlacerParams()
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs <= 0:
            raise ValueError(f"PooledObjectPlacer: num_envs must be a positive integer, got {num_envs!r}")
        self.num_envs = num_envs
        self.device = torch.device(device)
        self._set_global_envs(global_env_ids, global_num_envs)
        self.member_indices = dict(member_indices or {})
        if placer is None:
            from isaaclab_arena.relations.object_placer import ObjectPlacer

            placer = ObjectPlacer(self.params, extensions)
        elif extensions is not None:
            raise ValueError("PooledObjectPlacer: pass extensions to the placer you give (ObjectPlacer(params, "
                             "extensions)), not beside it")
        self.placer = placer
        self.diagnostics = PlacementDiagnostics(output_dir, verbose=True)
        self.layouts_per_env = self.params.min_unique_layouts_per_env
        self.object_names: list[str] | None = None
        self.check_names: list[str] = []
        self.required_check_names: list[str] = []
        L, E, dev = self.layouts_per_env, num_envs, self.device
        self.next_draw = torch.zeros(E, dtype=torch.long, device=dev)
        self.cursor = torch.zeros(E, dtype=torch.long, device=dev)      # next slot to hand out
        self.remaining = torch.zeros(E, dtype=torch.long, device=dev)   # queued layouts left in each partition
        self.poses: torch.Tensor | None = None              # (E, L, n, 7)
        self.slot_passed = torch.zeros(E, L, dtype=torch.bool, device=dev)
        self.slot_fallback = torch.zeros(E, L, dtype=torch.bool, device=dev)
        self.slot_loss = torch.zeros(E, L, device=dev)
        self.slot_draw = torch.zeros(E, L, dtype=torch.long, device=dev)
        self.slot_checks: torch.Tensor | None = None        # (E, L, C) bool
        self.creation_poses: torch.Tensor | None = None     # (E, n, 7): the layout assigned at creation
        self.current_poses: torch.Tensor | None = None      # (E, n, 7): the layout each env got last
        self.current_slot_info: dict[str, torch.Tensor] = {}
        self.current_passed: torch.Tensor | None = None     # (E,): the layout each env got passed every required check
        self.current_checks: torch.Tensor | None = None     # (E, C): its check verdicts
        self.current_fallback: torch.Tensor | None = None   # (E,): it is a best-loss fallback (fails a required check)
        self.consumed = torch.zeros(E, dtype=torch.long, device=dev)    # layouts handed out per env
        self.fallback_envs: set[int] = set()
        self.unfilled_envs: list[int] = []  # envs of a fill that failed (fallbacks off); their slots hold best-loss candidates
        self.num_fills = 0

    @property
    def placement_seed(self) -> int | None:
        """The seed layouts derive from: the placer's (``ObjectPlacer`` draws one at construction when
        ``params.placement_seed`` is None), else the params'."""
        return getattr(self.placer, "placement_seed", self.params.placement_seed)

    def _set_global_envs(self, global_env_ids, global_num_envs) -> None:
        """``global_ids`` ((num_envs,) int64 on the pool device) and ``global_num_envs``; identity without a share."""
        self.sharded = global_env_ids is not None
        if not self.sharded:
            if global_num_envs is not None and global_num_envs != self.num_envs:
                raise ValueError("PooledObjectPlacer: global_num_envs needs global_env_ids")
            self.global_num_envs = self.num_envs
            self.global_ids = torch.arange(self.num_envs, dtype=torch.long, device=self.device)
            return
        ids = [int(i) for i in torch.as_tensor(global_env_ids, dtype=torch.long).flatten().tolist()]
        if isinstance(global_num_envs, bool) or not isinstance(global_num_envs, int) or global_num_envs < self.num_envs:
            raise ValueError(f"PooledObjectPlacer: global_num_envs must be an integer >= num_envs={self.num_envs}, got "
                             f"{global_num_envs!r}")
        if len(ids) != self.num_envs or any(b <= a for a, b in zip(ids, ids[1:])) or \
                (ids and (ids[0] < 0 or ids[-1] >= global_num_envs)):
            raise ValueError(f"PooledObjectPlacer: global_env_ids must be {self.num_envs} increasing ids in "
                             f"[0, {global_num_envs}), got {ids}")
        self.global_num_envs = global_num_envs
        self.global_ids = torch.tensor(ids, dtype=torch.long, device=self.device)

    # ---- filling -------------------------------------------------------------------------------------------
    def _ids(self, env_ids) -> torch.Tensor:
        """``env_ids`` (tensor on any device, list or range) as int64 on the pool device."""
        return torch.as_tensor(env_ids, dtype=torch.long).to(self.device)

    def _place(self, problem, env_ids: torch.Tensor, draw_ids: torch.Tensor):
        if self.sharded:  # the candidates of the global envs (a monotonic map: the ranking order is unchanged)
            return self.placer.place_batch(self.assets, self.global_ids[env_ids], draw_ids,
                                           num_envs=self.global_num_envs, device=str(self.device), problem=problem)
        return self.placer.place_batch(self.assets, env_ids, draw_ids, num_envs=self.num_envs, device=str(self.device),
                                       problem=problem)

    def _allocate(self, batch) -> None:
        self.object_names = list(batch.object_names)
        self.check_names = list(batch.validation.checks)
        self.required_check_names = list(batch.validation.required)
        E, L, n = self.num_envs, self.layouts_per_env, len(self.object_names)
        self.poses = torch.zeros(E, L, n, 7, device=self.device)
        self.slot_checks = torch.zeros(E, L, len(self.check_names), dtype=torch.bool, device=self.device)

    def fill(self, envs: torch.Tensor, reason: str) -> None:
        """Fills the partitions of ``envs`` (assumed empty) with ``layouts_per_env`` ranked layouts each."""
        envs = self._ids(envs).unique()
        if envs.numel() == 0:
            return
        # compiled first (cached), so that the compile's own bar is not drawn inside the fill's
        problem = self.placer.compile(self.assets, self.global_num_envs if self.sharded else self.num_envs,
                                      str(self.device))
        bar = progress_bar(envs.numel() * self.layouts_per_env, "[placement] pool fill", "layout", leave=False)
        try:
            self._fill(problem, envs, reason, bar)
        finally:
            close_bar(bar)

    def _fill(self, problem, envs: torch.Tensor, reason: str, bar) -> None:
        L, E, dev = self.layouts_per_env, self.num_envs, self.device
        fill = self.diagnostics.begin_fill(reason, envs.tolist(), L)
        filled = torch.zeros(E, dtype=torch.long, device=dev)
        need = torch.zeros(E, dtype=torch.bool, device=dev)
        need[envs] = True
        slot_offsets = torch.arange(L, device=dev)
        last = None
        tally = FailureTally()  # closest misses of envs that stay short after a batch (failure explanation)
        max_batches = self.params.max_placement_attempts
        for b in range(max_batches):
            raise_if_interrupted()
            active = (need & (filled < L)).nonzero().flatten()  # host sync: the loop condition
            if active.numel() == 0:
                break
            if last is not None:  # some env stayed short: count the last batch's candidates of those envs
                tally.add(last[0], (need & (filled < L))[last[1]])
            env_ids = active.repeat_interleave(L)
            draw_ids = (self.next_draw[active].unsqueeze(1) + slot_offsets).flatten()
            self.next_draw[active] += L
            solver = getattr(self.placer, "solver", None)
            if solver is not None:
                solver.held_lines = []  # printed with the batch's block (held back when the block repeats)
            try:
                batch = self._place(problem, env_ids, draw_ids)
            finally:
                preface = (solver.held_lines or []) if solver is not None else []
                if solver is not None:
                    solver.held_lines = None
            if self.poses is None:
                self._allocate(batch)
            with paused(bar):
                self.diagnostics.record_batch(fill, batch, preface)
            order = rank_order(batch)
            ranked = {"passed": batch.passed.index_select(0, order), "loss": batch.loss, "draw": draw_ids}
            passed = ranked["passed"]
            env_sorted = env_ids.index_select(0, order)
            self._store(*assign_slots(env_sorted, passed, filled, L), order, batch, ranked, fallback=False)
            last = (batch, env_ids, order, ranked, env_sorted)
            if bar is not None:  # the count is a host sync: only with a bar
                advance_to(bar, int(filled[envs].sum()), f"batch {b + 1}/{max_batches}")
        short = (need & (filled < L)).nonzero().flatten()
        fallback_slots = 0
        explanation = advice = ""
        misses: list = []
        if short.numel() > 0:
            tally.add(last[0], (need & (filled < L))[last[1]])
            # the tally counts the batch's (global) env ids
            tallied = (self.global_ids[short] if self.sharded else short).tolist()
            misses, kept = tally.explain(tallied)
            explanation = explanation_text(misses, kept)
            advice = placement_advice(misses, kept, tally.check_totals(tallied), max_batches, L)
            batch, env_ids, order, ranked, env_sorted = last
            if not self.params.allow_best_loss_fallbacks:
                # the best-loss candidates stay in the short envs' slots (flagged as fallbacks) so that the
                # failing run can still draw what the solver came closest to; the pool is not used afterwards
                # (``filled`` keeps counting the layouts that pass: the fallbacks are slots of a failed fill)
                self._store(*assign_slots(env_sorted, ~ranked["passed"], filled.clone(), L), order, batch, ranked,
                            fallback=True)
                self.unfilled_envs = sorted(short.tolist())
                if self.current_poses is None:  # the creation fill: its slot 0 is what a picture shows
                    self.current_poses = self.poses[:, 0].clone()
                    self.current_passed = self.slot_passed[:, 0].clone()
                    self.current_checks = self.slot_checks[:, 0].clone()
                    self.current_fallback = self.slot_fallback[:, 0].clone()
                self.diagnostics.end_fill(fill, [], 0, filled[envs].tolist(), explanation, advice, misses)
                raise RuntimeError(self._failure_message(short, filled, envs, last, max_batches, explanation, advice))
            picked, slot_envs, slots = assign_slots(env_sorted, ~ranked["passed"], filled, L)
            self._store(picked, slot_envs, slots, order, batch, ranked, fallback=True)
            fallback_slots = int(picked.numel())
            self.fallback_envs.update(short.tolist())
        self.cursor[envs] = 0
        self.remaining[envs] = filled[envs]
        self.num_fills += 1
        self.diagnostics.end_fill(fill, short.tolist(), fallback_slots, filled[envs].tolist(), explanation, advice,
                                  misses)

    def _store(self, picked, envs, slots, order, batch, ranked, fallback: bool) -> None:
        """Writes the ranked candidates ``picked`` (indices in ranked order, ``assign_slots``) into their slots:
        candidate ``order[picked[k]]`` of ``batch`` into slot ``slots[k]`` of env ``envs[k]``, through one row
        index into the pool's tables (:meth:`_slot_rows`, ``copy_rows``)."""
        if picked.numel() == 0:
            return
        cand = order.index_select(0, picked)
        rows = self._slot_row(envs, slots)
        dev = lambda t: t.detach().to(self.device)  # noqa: E731
        flat = self._slot_rows
        copy_rows(flat(self.poses), rows, cand, dev(batch.positions).float(), dev(batch.rotations).float())
        copy_rows(flat(self.slot_passed), rows, cand, dev(batch.passed).to(torch.bool))
        flat(self.slot_fallback).index_fill_(0, rows, fallback)
        copy_rows(flat(self.slot_loss), rows, cand, dev(ranked["loss"]).to(self.slot_loss.dtype))
        copy_rows(flat(self.slot_draw), rows, cand, dev(ranked["draw"]).to(torch.long))
        if self.check_names:
            copy_rows(flat(self.slot_checks), rows, cand, dev(batch.validation.verdict_table(self.check_names)))

    def _slot_row(self, envs: torch.Tensor, slots: torch.Tensor) -> torch.Tensor:
        """The row of slot ``slots[k]`` of env ``envs[k]`` in :meth:`_slot_rows` views."""
        return envs * self.layouts_per_env + slots

    @staticmethod
    def _slot_rows(table: torch.Tensor) -> torch.Tensor:
        """A (num_envs, layouts_per_env, ...) slot table as a (num_envs * layouts_per_env, ...) view of rows."""
        return table.view(-1, *table.shape[2:])

    def _failure_message(self, short, filled, envs, last, max_batches, explanation: str, advice: str = "") -> str:
        """The error of a fill that stayed short: the envs, the checks their last candidates failed, and the
        closest misses over every candidate of those envs in this fill (``ObjectPlacer.place`` words the same)."""
        L = self.layouts_per_env
        parts = []
        if last is not None:
            batch, env_ids, _, _, _ = last
            env_ids = env_ids.cpu()  # error path: host copies are fine here
            for e in short.tolist()[:8]:
                sel = env_ids == e
                failed = [c for c, v in batch.check_results.items()
                          if bool((~v.detach().cpu().to(torch.bool))[sel].any())]
                parts.append(f"env {e}: failed {', '.join(failed) or 'no check (not enough candidates)'}")
        short_list = short.tolist()
        return (f"Placement pool could not fill {L} layouts per env after {max_batches} solve batches. "
                f"Available per env: {_short_list(filled[envs].tolist())}. "
                f"allow_best_loss_fallbacks=False, so placement fails; "
                f"most recent rejections: " + "; ".join(parts) + f". In env(s) {short_list[:8]}"
                f"{' ...' if len(short_list) > 8 else ''}, {explanation}" + (f". Try: {advice}" if advice else ""))

    # ---- lifecycle -----------------------------------------------------------------------------------------
    def member_indices_per_set(self) -> dict[str, list[int]]:
        """``{RigidObjectSet name: member index per env}`` the solver sizes candidates with (the one
        definition, ``RigidObjectSet.member_indices_per_env(num_envs, placement_seed)``)."""
        from isaaclab_arena.assets.object_set import RigidObjectSet

        if self.sharded:  # the members of the global envs of this share
            ids = self.global_ids.tolist()
            return {a.name: [a.member_indices_per_env(self.global_num_envs, self.placement_seed)[g] for g in ids]
                    for a in self.assets if isinstance(a, RigidObjectSet)}
        return {a.name: a.member_indices_per_env(self.num_envs, self.placement_seed)
                for a in self.assets if isinstance(a, RigidObjectSet)}

    def initialize(self) -> None:
        """Fills every partition and assigns each env its creation layout (its first queued layout).

        Raises ``ValueError`` when the ``member_indices`` given at construction (what the builder spawns)
        differ from the members the solver sizes candidates with.
        """
        solved = self.member_indices_per_set()
        for name, given in self.member_indices.items():
            if name in solved and list(given) != solved[name]:
                raise ValueError(f"RigidObjectSet '{name}': spawned members per env {list(given)} differ from the "
                                 f"members placement solves with {solved[name]} (placement_seed "
                                 f"{self.placement_seed}); spawn with member_indices_per_env(num_envs, "
                                 "pool.placement_seed)")
        self.member_indices = {**solved, **self.member_indices}
        self.fill(torch.arange(self.num_envs, device=self.device), "creation")
        self.creation_poses = self.poses[:, 0].clone()
        self.current_poses = self.creation_poses.clone()
        self.current_passed = self.slot_passed[:, 0].clone()
        self.current_checks = self.slot_checks[:, 0].clone()
        self.current_fallback = self.slot_fallback[:, 0].clone()

    def peek(self, env_ids: torch.Tensor) -> torch.Tensor:
        ids = self._ids(env_ids)
        if not self.params.resolve_on_reset:
            return self.creation_poses[ids]
        return self.poses[ids, self.cursor[ids].clamp(max=self.layouts_per_env - 1)]

    def next_layouts(self, env_ids: torch.Tensor) -> torch.Tensor:
        """Takes the next queued layout of each env in ``env_ids`` (refilling empty partitions first).

        Returns ``(len(env_ids), n, 7)`` env-local poses on the pool device. Only the listed envs consume
        layouts. One host sync per call (which partitions are empty); a refill adds its fill's syncs.
        """
        ids = self._ids(env_ids)
        if not self.params.resolve_on_reset:
            out = self.creation_poses[ids]
            self.current_poses[ids] = out
            return out
        empty = ids[self.remaining[ids] == 0]
        if empty.numel() > 0:
            self.fill(empty, "reset_refill")
        slots = self.cursor[ids]
        self.cursor[ids] += 1
        self.remaining[ids] -= 1
        self.consumed[ids] += 1
        rows = self._slot_row(ids, slots)
        for current, table in ((self.current_poses, self.poses), (self.current_passed, self.slot_passed),
                               (self.current_checks, self.slot_checks), (self.current_fallback, self.slot_fallback)):
            copy_rows(current, ids, rows, self._slot_rows(table))
        self.current_slot_info = {"env_ids": ids, "slots": slots}
        return self.current_poses.index_select(0, ids)

    def as_pose_source(self, names: list[str], scene_keys: list[str] | None = None) -> "PooledPoseSource":
        """A reset-term source of the placed assets ``names``, written to the runtime ``scene_keys`` (default: the
        names; an embodiment named ``franka`` is written to ``robot``)."""
        return PooledPoseSource(self, names, scene_keys)

    def summary(self) -> dict:
        return {"fills": self.num_fills, "layouts_per_env": self.layouts_per_env, "objects": self.object_names,
                "fallback_envs": sorted(self.fallback_envs), "consumed_per_env": self.consumed.tolist(),
                "diagnostics": self.diagnostics.path}


class PooledPoseSource:
    """Reset-term pose source over a :class:`PooledObjectPlacer`, in the order of the placed assets ``names``;
    ``object_names`` are their runtime scene keys (``scene_keys``, default the names)."""

    def __init__(self, pool: PooledObjectPlacer, names: list[str], scene_keys: list[str] | None = None):
        missing = [n for n in names if n not in pool.object_names]
        if missing:
            raise ValueError(f"pooled placement has no layouts for {missing}; placed objects: {pool.object_names}")
        if scene_keys is not None and len(scene_keys) != len(names):
            raise ValueError(f"PooledPoseSource: {len(scene_keys)} scene keys for {len(names)} placed assets")
        self.pool = pool
        self.asset_names = list(names)
        self.object_names = list(scene_keys if scene_keys is not None else names)
        self._index = torch.tensor([pool.object_names.index(n) for n in names], dtype=torch.long, device=pool.device)

    def poses_for_reset(self, env_ids: torch.Tensor) -> torch.Tensor:
        return self.pool.next_layouts(env_ids)[:, self._index].to(env_ids.device)

    def peek(self, env_ids: torch.Tensor) -> torch.Tensor:
        return self.pool.peek(env_ids)[:, self._index].to(env_ids.device)

    def fallback_mask(self) -> torch.Tensor:
        """(num_envs,) bool: the layout each env was last reset into is a best-loss fallback (it fails a required
        check; ``allow_best_loss_fallbacks``)."""
        return self.pool.current_fallback

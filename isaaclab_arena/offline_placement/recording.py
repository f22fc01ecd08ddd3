"""The placement recorder: reset into pooled layouts, settle them with physics, check them, save the settled poses.

Per batch:

1. ``env.reset()``: every env takes its next layout from the placement pool (the solver's pooled layouts);
2. the root poses written are captured (env-local), and the solver's verdicts of those layouts are read
   from the pool (``required_checks``; clutter scenes also require ``no_overlap`` and
   ``clutter_on_relation``): a failed required check rejects the layout as ``solver validation failed``,
   a required check without a result as ``missing required solver checks``;
3. when at least one layout of the batch passed, physics advances the whole batch ``num_steps`` env
   steps (``[placement] <step>/<total> physics steps``);
4. the final state is captured into a ``SettledBatch`` (with the rest rules of the placed roots: On release
   gaps, chains, ClutterOn drops, ``expected_rest.py``) and every enabled, applicable post-physics check runs
   on it; a layout is accepted only when all of them pass (``pose_shift`` measures from each root's expected
   resting pose, the release pose lowered by its release gaps).

Accepted layouts keep their **settled (final) root poses** (env-local metres, xyzw) for the relation-placed
roots, with source ``"settled"`` and a ``validation`` block (pre_physics verdicts, post_physics reports,
sampling: num_steps, decimation, physics_dt_s, settle_time_s, seed, batch, env_id, draw_id).

Python API (writing files: ``recording_output.py``)::

    collected = collect_settled_placements(env, num_batches=2, params=..., scene_assets=...)  # in memory

Everything per batch is batched torch over envs; Python loops only build each accepted line's JSON block.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, NamedTuple

import torch

from isaaclab_arena.offline_placement.expected_rest import rest_rules_from_assets
from isaaclab_arena.offline_placement.post_physics_validation import (
    PostPhysicsPlacementValidator,
    run_post_physics_validators,
)
from isaaclab_arena.offline_placement.recording_config import (
    DEFAULT_SETTLE_NUM_STEPS,
    RecordingConfigError,
    build_post_physics_validators,
    default_validator_settings,
)
from isaaclab_arena.offline_placement.recording_scene import RecordingScene
from isaaclab_arena.offline_placement.rejection_summary import RejectionSummary
from isaaclab_arena.offline_placement.scene_capture import capture_link_poses, capture_root_poses, capture_settled_batch
from isaaclab_arena.offline_placement.placement_layouts import PlacementLayouts, validation_block
from isaaclab_arena.utils.interrupts import raise_if_interrupted

#: Pre-physics checks every ClutterOn release must pass, added to the required set of clutter scenes.
CLUTTER_REQUIRED_CHECKS = ("no_overlap", "clutter_on_relation")
#: Source label of recorded settled layouts.
SETTLED_SOURCE = "settled"


@dataclass
class SettledPlacementParams:
    """Settling and checking of one recording.

    Attributes:
        num_steps: Env steps of physics per batch before the post-physics checks (> 0).
        validators: ``settle.validators``: ``{check: settings}`` (``_target_`` for custom classes), a list of
            ``PostPhysicsPlacementValidator`` instances, or None for the built-in defaults.
        seed: Recorded in ``validation.sampling`` (the placement / reset seed of the recording), or None.
        robot_keys: Root keys owned by the robot embodiment (physics_settled covers them; shift checks of
            links skip them).
        verbose: Print the ``[placement]`` / ``[recording]`` console lines.
        progress_lines: How many ``[placement]`` progress lines one settling pass prints (>= 1).
        log: Where console lines go (default ``print`` with flush).
    """

    num_steps: int = DEFAULT_SETTLE_NUM_STEPS
    validators: Any = None
    seed: int | None = None
    robot_keys: tuple[str, ...] = ()
    verbose: bool = True
    progress_lines: int = 4
    log: Callable[[str], None] | None = None

    def __post_init__(self):
        if isinstance(self.num_steps, bool) or not isinstance(self.num_steps, int) or self.num_steps < 1:
            raise RecordingConfigError(f"settle.num_steps must be an integer >= 1, got {self.num_steps!r}")
        if isinstance(self.progress_lines, bool) or not isinstance(self.progress_lines, int) or self.progress_lines < 1:
            raise RecordingConfigError(f"SettledPlacementParams.progress_lines must be an integer >= 1, got "
                                       f"{self.progress_lines!r}")
        self.robot_keys = tuple(self.robot_keys)

    def emit(self, line: str) -> None:
        if self.verbose:
            (self.log or _print)(line)


def _print(line: str) -> None:
    print(line, flush=True)


@dataclass
class CollectedPlacements:
    """Accepted settled layouts of one or more batches (in memory).

    Attributes:
        layouts: Accepted layouts (settled poses, source "settled", validation blocks), or None.
        attempted: Layouts attempted (envs x batches run).
        batches: Batches run.
        rejections: Why layouts were rejected (``RejectionSummary``).
    """

    layouts: PlacementLayouts | None
    attempted: int
    batches: int
    rejections: RejectionSummary

    @property
    def accepted(self) -> int:
        return 0 if self.layouts is None else len(self.layouts)


@dataclass
class RecordingResult:
    """Outcome of a recording.

    Attributes:
        output: The JSONL path written, or None when nothing was accepted (no file is written then).
        accepted: Layouts written.
        attempted: Layouts attempted.
        rejections: ``{reason: count}`` (check names, ``solver validation failed``, ``missing required solver
            checks``).
        min_layouts: The target.
        batches: Batches run.
        summary: The full ``RejectionSummary`` (``summary.lines()`` are the console lines).
    """

    output: str | None
    accepted: int
    attempted: int
    rejections: dict[str, int]
    min_layouts: int
    batches: int
    summary: RejectionSummary = field(default_factory=RejectionSummary)

    @property
    def shortfall(self) -> int:
        return max(0, self.min_layouts - self.accepted)


class SolverVerdicts(NamedTuple):
    """Pre-physics verdicts of the layouts one reset wrote (rows = env ids)."""

    names: list[str]
    """Checks the solver ran, in ``checks`` column order."""
    required: list[str]
    """Checks that must pass (the pool's required checks; clutter scenes add ``CLUTTER_REQUIRED_CHECKS``)."""
    missing: list[str]
    """Required checks without a result."""
    checks: torch.Tensor
    """(E, C) bool verdicts."""
    passed: torch.Tensor
    """(E,) bool: every required check has a result and passed."""
    draws: torch.Tensor
    """(E,) int64 draw id of each layout (with the seed and env id it fixes the layout)."""


# ---- the per-batch pipeline --------------------------------------------------------------------------------------
class SettledPlacementCollector:
    """Runs reset -> capture -> solver verdicts -> settle -> post-physics checks on an env, batch after batch.

    Args:
        env: A running env built by ``ArenaEnvBuilder`` with pooled relation placement (left open).
        params: Settling and check settings.
        scene_assets: Placement assets (``arena_env.get_placement_assets()``); default: the pool's assets.

    Raises:
        RecordingSceneError / RecordingConfigError: the scene or the check configuration cannot be recorded.
    """

    def __init__(self, env, params: SettledPlacementParams | None = None, scene_assets: Iterable[Any] | None = None):
        self.env = env
        self.u = getattr(env, "unwrapped", env)
        self.params = params or SettledPlacementParams()
        scene_assets = list(scene_assets) if scene_assets is not None else None
        self.scene = RecordingScene.from_env(self.u, scene_assets, robot_keys=self.params.robot_keys)
        self.validators = _validators(self.params.validators, self.scene)
        # how each relation-placed root settles (On release gaps, chains, ClutterOn drops): the shift checks
        # measure from the expected resting pose, not from the release pose
        self.rest_rules = rest_rules_from_assets(scene_assets if scene_assets is not None else self.scene.pool.assets,
                                                 self.scene.root_keys, self.scene.robot_keys)
        self.support_rest_heights = {k: h for v in self.validators if v.check == "support_containment"
                                     for k, h in (getattr(v, "minimum_resting_heights_m", None) or {}).items()}
        self.decimation = int(self.u.cfg.decimation)
        self.physics_dt_s = float(self.u.physics_dt)
        self.summary = RejectionSummary()
        self.batches = 0
        # the global env id of each local env (a share of a distributed recording; else env i is env i)
        gids = getattr(self.scene.pool, "global_ids", None)
        self.global_env_ids = [int(g) for g in gids.tolist()] if gids is not None else list(range(self.u.num_envs))
        max_len = int(self.u.max_episode_length)
        if max_len <= self.params.num_steps:
            raise RecordingConfigError(
                f"settle.num_steps={self.params.num_steps} env steps reach the env's episode length ({max_len} steps "
                f"= {self.u.cfg.episode_length_s:g} s): a time-out reset would interrupt settling; raise "
                "episode_length_s or lower settle.num_steps")

    # -- solver verdicts -------------------------------------------------------------------------------------------
    def _required_checks(self) -> list[str]:
        pool = self.scene.pool
        req = pool.params.required_checks
        required = list(pool.check_names) if req is None else list(req)
        if self.scene.has_clutter:
            required += [c for c in CLUTTER_REQUIRED_CHECKS if c not in required]
        return required

    def _solver_verdicts(self, env_ids: torch.Tensor) -> "SolverVerdicts":
        """The solver's verdicts of the layouts the last reset wrote, read from the pool's slots (batched)."""
        pool = self.scene.pool
        if not pool.params.resolve_on_reset:
            raise RecordingConfigError("placer_params.resolve_on_reset is False: every reset would reuse one layout per "
                                       "env; recording needs resolve_on_reset=True")
        info = getattr(pool, "current_slot_info", None) or {}
        got_env = info.get("env_ids")
        if got_env is None or not torch.equal(torch.as_tensor(got_env).cpu().long(), env_ids.cpu().long()):
            raise RuntimeError("the placement pool did not hand out layouts for this reset (pool.current_slot_info does "
                               "not match the reset envs); is the 'arena_placement' reset term active?")
        names = list(pool.check_names)
        required = self._required_checks()
        missing = [c for c in required if c not in names]
        n = int(env_ids.numel())
        e, slots = env_ids.cpu().long(), torch.as_tensor(info["slots"]).cpu().long()
        # the pool's slot tensors live on its device; recording's bookkeeping is on the host
        dev = pool.slot_checks.device
        checks = pool.slot_checks[e.to(dev), slots.to(dev)].cpu() if names else torch.zeros(n, 0, dtype=torch.bool)
        req_idx = torch.tensor([names.index(c) for c in required if c in names], dtype=torch.long)
        req_ok = checks.index_select(1, req_idx).all(dim=1) if req_idx.numel() else torch.ones(n, dtype=torch.bool)
        draws = pool.slot_draw[e.to(dev), slots.to(dev)].cpu()
        return SolverVerdicts(names, required, missing, checks, req_ok & (not missing), draws)

    # -- one batch -------------------------------------------------------------------------------------------------
    def run_batch(self, batch_index: int) -> tuple[dict[str, torch.Tensor], list[dict], int]:
        """Runs one batch; returns (accepted settled poses ``{key: (A, 7)}``, their validation blocks, attempted)."""
        u, scene, p = self.u, self.scene, self.params
        self.env.reset()
        env_ids = torch.arange(u.num_envs, dtype=torch.long)
        initial = capture_root_poses(u.scene, scene.root_keys)
        initial_links, _ = capture_link_poses(u.scene, scene.articulated_keys)
        v = self._solver_verdicts(env_ids)
        self.batches += 1
        checks_l = v.checks.tolist()
        for row in torch.nonzero(~v.passed).flatten().tolist():
            if v.missing:
                self.summary.add_missing_required(v.missing)
            else:
                self.summary.add_solver_failure([c for c, ok in zip(v.names, checks_l[row]) if c in v.required and not ok])
        self.summary.attempted += u.num_envs
        ok_rows = torch.nonzero(v.passed).flatten()
        if ok_rows.numel() == 0:
            return {k: initial[k][:0] for k in scene.recorded_keys}, [], u.num_envs

        self._settle()
        moving_supports = [k for k, s in scene.supports.items() if s.fixed_pose is None]
        supports = scene.support_infos(initial, capture_root_poses(u.scene, moving_supports))
        for key, info in supports.items():  # a container's floor is where its ClutterOn drops come to rest
            if key in self.support_rest_heights:
                info.rest_height_m = self.support_rest_heights[key]
        batch = capture_settled_batch(
            u.scene, ok_rows.tolist(), initial, initial_links, robot_keys=scene.robot_keys,
            clutter_keys=scene.clutter_keys, clutter_supports=dict(scene.clutter_supports),
            clutter_local_bounds=dict(scene.clutter_local_bounds), supports=supports, rest_rules=self.rest_rules,
            num_steps=p.num_steps, decimation=self.decimation, physics_dt_s=self.physics_dt_s)
        results = run_post_physics_validators(self.validators, batch)
        sampling_base = batch.sampling_info()
        accepted_rows, blocks = [], []
        for i, env_id in enumerate(batch.env_ids):
            if self.summary.add_reports(results.reports_for(i)):
                continue
            accepted_rows.append(env_id)
            sampling = dict(sampling_base, seed=p.seed, batch=batch_index, env_id=self.global_env_ids[int(env_id)],
                            draw_id=int(v.draws[env_id]))
            blocks.append(validation_block(pre_physics=dict(zip(v.names, checks_l[env_id])), required_checks=v.required,
                                           post_physics=results.post_physics_block(i), sampling=sampling))
        rows = torch.tensor(accepted_rows, dtype=torch.long)
        final = {k: batch.final_root_poses[k].index_select(0, rows.to(batch.final_root_poses[k].device)).cpu()
                 for k in scene.recorded_keys}
        return final, blocks, u.num_envs

    def _settle(self) -> None:
        u, p = self.u, self.params
        actions = torch.zeros(u.num_envs, _action_dim(u), device=u.device)
        total = p.num_steps
        every = max(1, math.ceil(total / p.progress_lines))
        for step in range(1, total + 1):
            raise_if_interrupted()  # a stop signal during a recording waits for this check (deferred_stops)
            self.env.step(actions)
            if step % every == 0 or step == total:
                p.emit(f"[placement] {step * self.decimation}/{total * self.decimation} physics steps")
        lengths = u.episode_length_buf.cpu()
        if not bool((lengths == total).all()):
            bad = torch.nonzero(lengths != total).flatten().tolist()
            raise RuntimeError(f"envs {bad} were reset while settling (episode lengths {lengths[bad].tolist()} of "
                               f"{total} steps); a termination fired mid-settle: raise episode_length_s or remove "
                               "terminations that fire at rest")

    def skip_batch(self) -> None:
        """Consumes the next layout of every env without physics (a resumed share fast-forwards its pool past the
        batches it already recorded, so later batches get the layouts an uninterrupted run gets)."""
        pool = self.scene.pool
        if pool.params.resolve_on_reset:
            pool.next_layouts(torch.arange(self.u.num_envs, dtype=torch.long))
        self.batches += 1

    # -- many batches ----------------------------------------------------------------------------------------------
    def collect(self, max_batches: int, target: int | None = None, on_batch: Callable | None = None) -> CollectedPlacements:
        """Runs batches until ``target`` layouts are accepted (all ``max_batches`` when None).

        ``on_batch(batch, accepted, layouts)`` is called after every batch with the running count and that batch's
        accepted layouts (None when it accepted none; never more than ``target`` in all).
        """
        parts: list[PlacementLayouts] = []
        accepted = 0
        for b in range(1, max_batches + 1):
            raise_if_interrupted()
            final, vblocks, _ = self.run_batch(b)
            layouts = None
            take = len(vblocks) if target is None else min(len(vblocks), target - accepted)
            if take > 0:
                layouts = self._layouts(final, vblocks, take)
                parts.append(layouts)
                accepted += take
            if on_batch is not None:
                on_batch(b, accepted, layouts)
            if target is not None and accepted >= target:
                break
        layouts = PlacementLayouts.concatenate(parts) if parts else None
        return CollectedPlacements(layouts, self.summary.attempted, self.batches, self.summary)

    def _layouts(self, final: dict[str, torch.Tensor], blocks: list[dict], n: int) -> PlacementLayouts:
        """The first ``n`` accepted layouts of a batch (settled poses, source ``settled``)."""
        keys = self.scene.recorded_keys
        stacked = torch.stack([final[k] for k in keys], dim=1)[:n]
        return PlacementLayouts(tuple(keys), stacked[:, :, :3].contiguous(), _unit(stacked[:, :, 3:]),
                                sources=[SETTLED_SOURCE] * n, validation=blocks[:n],
                                physical_properties=self._drawn_properties(blocks[:n]))

    def _drawn_properties(self, blocks: list[dict]) -> list[dict]:
        """The physical properties drawn for each accepted layout's env at this batch's reset
        (``{asset: {field: value}}``; empty when the scene draws none)."""
        from isaaclab_arena.environments.property_draws import drawn_values

        drawn = drawn_values(self.env)
        if not drawn:
            return []
        local = {g: i for i, g in enumerate(self.global_env_ids)}  # sampling names the global env id
        rows = [local[int(b["sampling"]["env_id"])] for b in blocks]
        return [{asset: {f: values[e] for f, values in fields.items()} for asset, fields in drawn.items()}
                for e in rows]


def _unit(q: torch.Tensor) -> torch.Tensor:
    """Renormalised xyzw quaternions (simulator float32 output is within ~1e-7 of unit)."""
    return (q / torch.linalg.vector_norm(q, dim=-1, keepdim=True).clamp_min(1e-12)).contiguous()


def _action_dim(u) -> int:
    manager = getattr(u, "action_manager", None)
    return int(manager.total_action_dim) if manager is not None else 0


def _validators(spec: Any, scene: RecordingScene) -> list[PostPhysicsPlacementValidator]:
    if spec is None:
        spec = default_validator_settings()
    if isinstance(spec, (list, tuple)):
        spec = {v.check: v for v in spec}
    return build_post_physics_validators(spec, has_clutter=scene.has_clutter,
                                         has_articulated_task_objects=scene.has_articulated_task_objects,
                                         clutter_supports=scene.support_bounds() if scene.has_clutter else None)


# ---- public API ---------------------------------------------------------------------------------------------------
def collect_settled_placements(env, num_batches: int = 1, params: SettledPlacementParams | None = None,
                               scene_assets: Iterable[Any] | None = None) -> CollectedPlacements:
    """Runs ``num_batches`` reset-and-settle batches on ``env`` and returns the accepted layouts in memory.

    Needs an env with the relation-placement pool (``ArenaEnvBuilder``, solve_relations on); leaves it open.
    Consumes pool entries and leaves the env in its final settled state.
    """
    if isinstance(num_batches, bool) or not isinstance(num_batches, int) or num_batches < 1:
        raise RecordingConfigError(f"num_batches must be an integer >= 1, got {num_batches!r}")
    collector = SettledPlacementCollector(env, params, scene_assets)
    return collector.collect(num_batches)


__all__ = ["CLUTTER_REQUIRED_CHECKS", "CollectedPlacements", "RecordingResult", "SettledPlacementCollector",
           "SettledPlacementParams", "collect_settled_placements"]

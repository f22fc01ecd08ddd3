"""One recording job over several processes (torchrun): env shares, per-rank shards, resume, and the merge on rank 0.

    scripts/arena_python.sh -m torch.distributed.run --standalone --nproc_per_node=2 \\
        isaaclab_arena/scripts/record_placement_layouts.py <Hydra overrides> --distributed

* Shares: ``num_envs`` stays the job's (global) env count. Rank ``r`` of ``W`` simulates a contiguous block of the
  global envs (:func:`env_share`: the first ``num_envs % W`` ranks get one env more). Its placement pool solves
  with the global env ids and the global env count (``ArenaEnvBuilderCfg.global_env_ids`` /
  ``PooledObjectPlacer(global_env_ids=, global_num_envs=)``), so its local env ``i`` gets exactly the layouts
  global env ``share[i]`` gets in a single-process run; ``validation.sampling.env_id`` is the global id.
* Lockstep: after every batch the ranks ``all_reduce`` their accepted counts, so every rank stops after the batch
  at which the single-process run stops (the first batch whose running total reaches ``min_layouts``).
* Shards: after every batch each rank rewrites, atomically, ``<output>.shards/rank<r>-of-<W>.jsonl`` (its
  accepted lines, exactly as the output file holds them) and then ``rank<r>-of-<W>.json`` (its manifest:
  world size, seed, num_envs, env spec, the other settings the layouts depend on, batches done and the accepted
  count of each). Placement diagnostics go to ``<output>.shards/rank<r>/``, one folder per rank.
* Merge: rank 0 gathers every rank's lines (``gather_object``), orders them as a single-process run writes them
  (batch, then global env id), keeps the first ``min_layouts`` and writes the output atomically (never over an
  existing file). The shard files are then removed (the diagnostics folders stay). With ``env_spacing=0`` (every
  env at one origin, so an env's physics does not depend on its slot) the output is byte-identical to a
  single-process run with the same overrides.
* Resume: a rank that finds its shard and manifest (a restart by ``torchrun --max-restarts``, or the same
  command run again after the job died) keeps the lines of the batches its manifest lists as done, consumes
  those batches' layouts from its pool without physics (so later batches get the same layouts) and records only
  the rest: no line is lost or duplicated. Physics after a restart starts from a fresh simulator, so its
  settled poses may differ in the last bits from an uninterrupted run. A manifest in the folder whose world
  size, seed, num_envs, env spec or settings differ from this run is refused in one line naming both values.
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import json
import os
import re
import shutil
import sys
import time
from typing import Callable

from isaaclab_arena.utils.atomic_files import commit, fsync_dir, temp_beside, write_text_atomic
from isaaclab_arena.utils.distributed import RankContext, agree_or_refuse, init_rank, torchrun_vars  # noqa: F401
from isaaclab_arena.utils.distributed import require_torchrun as _require_torchrun
from isaaclab_arena.utils.interrupts import stop_status
from isaaclab_arena.utils.progress import advance_to, close_bar, paused, progress_bar

TORCHRUN_COMMAND = ("scripts/arena_python.sh -m torch.distributed.run --standalone --nproc_per_node=2 "
                    "isaaclab_arena/scripts/record_placement_layouts.py <overrides> --distributed")
#: Manifest keys a resume must match (beside ``settings``), in the order a refusal checks them.
IDENTITY_KEYS = ("world_size", "seed", "num_envs", "env_spec")


class DistributedRecordingError(ValueError):
    """A distributed recording refused before anything is simulated (one line)."""


class ShardsKept(KeyboardInterrupt):
    """Ctrl-C / SIGTERM stopped a distributed recording; the shards keep every completed batch."""

    def __init__(self, kept: int, folder: str, signal_name: str = "SIGINT"):
        super().__init__(kept, folder, signal_name)
        self.kept, self.folder, self.signal_name = kept, folder, signal_name

    def line(self) -> str:
        return (f"interrupted: this rank kept {self.kept} accepted layouts in {self.folder}; run the same command "
                "again to resume")

    @property
    def exit_status(self) -> int:
        return stop_status(self.signal_name)


def require_torchrun() -> dict:
    """torchrun's variables, or ``DistributedRecordingError`` (one line naming torchrun) outside it."""
    try:
        return _require_torchrun(command=TORCHRUN_COMMAND + " (or drop --distributed for a single-process recording)")
    except ValueError as err:
        raise DistributedRecordingError(str(err)) from None


def env_share(num_envs: int, world_size: int, rank: int) -> list[int]:
    """The global env ids rank ``rank`` simulates: a contiguous block; the first ``num_envs % world_size`` ranks
    get one env more than the others."""
    if num_envs < world_size:
        raise DistributedRecordingError(f"num_envs={num_envs} is below the world size {world_size}: every rank needs "
                                        f"at least one env; raise num_envs to >= {world_size} or start fewer ranks")
    base, extra = divmod(num_envs, world_size)
    start = rank * base + min(rank, extra)
    return list(range(start, start + base + (1 if rank < extra else 0)))


def shards_folder(output: str) -> str:
    return os.path.abspath(output) + ".shards"


def line_key(line: str) -> tuple[int, int]:
    """(batch, global env id) of an output line (its ``validation.sampling``)."""
    sampling = json.loads(line)["validation"]["sampling"]
    return int(sampling["batch"]), int(sampling["env_id"])


class RankShard:
    """One rank's accepted lines and manifest on disk (``<output>.shards/rank<r>-of-<W>.jsonl`` / ``.json``).

    Args:
        output: The job's output JSONL.
        ctx: The rank.
        identity: What a resume must match: ``world_size``, ``seed``, ``num_envs``, ``env_spec`` and ``settings``.
    """

    def __init__(self, output: str, ctx: RankContext, identity: dict):
        self.folder = shards_folder(output)
        self.ctx = ctx
        self.identity = dict(identity)
        stem = f"rank{ctx.rank}-of-{ctx.world_size}"
        self.path = os.path.join(self.folder, stem + ".jsonl")
        self.manifest_path = os.path.join(self.folder, stem + ".json")

    def refusal(self) -> str | None:
        """One line when a manifest in the folder belongs to a run with other settings (None: new or resumable)."""
        for path in sorted(glob.glob(os.path.join(self.folder, "rank*-of-*.json"))):
            try:
                with open(path, encoding="utf-8") as f:
                    saved = json.load(f)
            except (OSError, ValueError) as err:
                return f"resume of {self.folder}: cannot read {os.path.basename(path)} ({err}); remove the folder to " \
                       "start afresh"
            for key in (*IDENTITY_KEYS, "settings"):
                if saved.get(key) != self.identity[key]:
                    what = {"world_size": "world size (--nproc_per_node x nodes)"}.get(key, key)
                    return (f"resume of {self.folder}: {what} was {saved.get(key)!r} when these shards were written "
                            f"({os.path.basename(path)}), this run has {self.identity[key]!r}; resume with the same "
                            "settings, or remove the folder / choose another output to start afresh")
        return None

    def load(self) -> tuple[list[str], list[int]]:
        """(lines, accepted count per done batch) an earlier start of this rank saved; ``([], [])`` when new.
        Lines of a batch the manifest does not list as done (a start killed between the two writes) are dropped."""
        if not os.path.isfile(self.manifest_path):
            return [], []
        with open(self.manifest_path, encoding="utf-8") as f:
            counts = [int(c) for c in json.load(f)["accepted_per_batch"]]
        lines = []
        if os.path.isfile(self.path):
            with open(self.path, encoding="utf-8") as f:
                lines = [ln for ln in f.read().splitlines(keepends=True) if ln.strip()]
        done = len(counts)
        lines = [ln for ln in lines if line_key(ln)[0] <= done]
        if len(lines) != sum(counts):
            raise RuntimeError(f"{self.path} holds {len(lines)} lines of batches 1..{done}, its manifest counts "
                               f"{sum(counts)}; remove {self.folder} to start afresh")
        return lines, counts

    def save(self, lines: list[str], counts: list[int], share: list[int]) -> None:
        """Rewrites the shard, then the manifest, each atomically (a resume trusts the manifest's batch count)."""
        os.makedirs(self.folder, exist_ok=True)
        write_text_atomic(self.path, "".join(lines))
        manifest = dict(self.identity, rank=self.ctx.rank, global_env_ids=list(share), batches_done=len(counts),
                        accepted_per_batch=list(counts), pid=os.getpid())
        write_text_atomic(self.manifest_path, json.dumps(manifest, indent=1) + "\n")

    def remove(self) -> None:
        for path in (self.path, self.manifest_path):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)


def merge_lines(per_rank: list[list[str]], min_layouts: int) -> list[str]:
    """Every rank's lines in single-process order (batch, then global env id), the first ``min_layouts``."""
    keyed = [(line_key(ln), ln) for lines in per_rank for ln in lines]
    keys = [k for k, _ in keyed]
    if len(set(keys)) != len(keys):
        raise RuntimeError("the shards hold a (batch, env_id) twice; remove the .shards folder and record again")
    return [ln for _, ln in sorted(keyed, key=lambda kl: kl[0])][:min_layouts]


def write_output(path: str, lines: list[str]) -> str:
    """Writes ``lines`` to a new file at ``path`` atomically (never over an existing file)."""
    path = os.path.abspath(path)
    fd, tmp = temp_beside(path, suffix=".partial")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write("".join(lines).encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())
        commit(tmp, path, overwrite=False)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(os.path.dirname(path))
    return path


def _settings_identity(cfg) -> dict:
    """The settings besides the identity keys that fix the layouts (a resume must keep them)."""
    from isaaclab_arena.offline_placement.recording_config import _to_container

    settle = _to_container(cfg.settle)
    validators = settle.get("validators") or {}
    settle["validators"] = {k: (v if isinstance(v, (dict, list, str, int, float, bool, type(None))) else repr(v))
                            for k, v in validators.items()}
    return json.loads(json.dumps({"env_spacing": float(cfg.env_spacing), "layouts_per_env": cfg.layouts_per_env,
                                  "presets": cfg.presets, "settle": settle}, sort_keys=True, default=repr))


# ---- the job ------------------------------------------------------------------------------------------------------
def record_distributed(cfg, device: str = "cpu", verbose: bool = True, log: Callable[[str], None] | None = None):
    """Runs this rank's share of the recording ``cfg`` (``PlacementRecordingCfg``) and, on rank 0, writes the merged
    output. Returns a ``RecordingResult`` (on every rank: the job's totals; ``output`` only on rank 0).

    Raises:
        DistributedRecordingError: refused (outside torchrun, num_envs below the world size, a resume with other
            settings), before anything is simulated; on ranks other than 0 ``SystemExit(2)`` instead (rank 0 says it).
        ShardsKept: Ctrl-C / SIGTERM; the shards keep every completed batch (run the command again to resume).
    """
    import torch
    import torch.distributed as dist

    from isaaclab_arena.offline_placement.recording import (
        SETTLED_SOURCE,
        RecordingResult,
        SettledPlacementCollector,
        SettledPlacementParams,
    )
    from isaaclab_arena.env_spec.spec_issue import EnvSpecError
    from isaaclab_arena.offline_placement.recording_config import RecordingConfigError, build_post_physics_validators
    from isaaclab_arena.offline_placement.recording_output import (
        StopRequested,
        apply_spec_recording,
        _builder_physics,
        _ignore_further_stops,
        stop_signals,
        time_left_text,
    )
    from isaaclab_arena.offline_placement.recording_scene import clutter_support_bounds
    from isaaclab_arena.utils.interrupts import raise_if_interrupted

    ctx = init_rank(device)
    emit = log or (lambda line: print(line, flush=True))  # verbose only holds back Isaac Lab's own messages
    say = emit if ctx.is_main else (lambda line: None)
    refusal, share, shard = None, [], None
    try:
        cfg = apply_spec_recording(cfg, log=say)  # the spec's recording: block, as single-process (a no-op if applied)
        cfg.validate(check_spec=True)
        share = env_share(cfg.num_envs, ctx.world_size, ctx.rank)
        shard = RankShard(cfg.output, ctx, {"world_size": ctx.world_size, "seed": cfg.seed, "num_envs": cfg.num_envs,
                                            "env_spec": os.path.abspath(cfg.env_spec),
                                            "settings": _settings_identity(cfg)})
        refusal = shard.refusal()
    except (RecordingConfigError, DistributedRecordingError, EnvSpecError) as err:
        refusal = str(err)
    agree_or_refuse(ctx, refusal)
    lines, counts = shard.load()
    if counts:
        emit(f"[recording] rank {ctx.rank}: resuming after batch {len(counts)} ({len(lines)} accepted layouts kept "
             f"in {shard.path})")

    from isaaclab_arena.environments.quiet_output import held_output, quiet_warp_init

    quiet_warp_init(verbose)
    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.environments.launch import kitless_session
    from isaaclab_arena.environments.physics import check_backend_available

    arena_env = ArenaEnvGraphSpec.from_yaml(cfg.env_spec).to_arena_env()
    refusal = None
    if arena_env.placement_layouts is not None:
        refusal = (f"environment '{arena_env.name}' replays placement_layouts; recording solves and settles new "
                   "layouts, remove placement_layouts")
    supports = clutter_support_bounds(arena_env.get_placement_assets())
    if supports and refusal is None:
        try:
            build_post_physics_validators(cfg.settle.validators, has_clutter=True, clutter_supports=supports)
        except RecordingConfigError as err:
            refusal = str(err)
    agree_or_refuse(ctx, refusal)
    placer_params = dataclasses.replace(arena_env.placer_params, min_unique_layouts_per_env=cfg.layouts_per_env)
    arena_env = dataclasses.replace(arena_env, placer_params=placer_params)
    settle_time = cfg.settle.num_steps * ArenaEnvBuilderCfg.decimation * ArenaEnvBuilderCfg.sim_dt
    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(
        num_envs=len(share), env_spacing=cfg.env_spacing, device=ctx.device, physics=_builder_physics(cfg.presets),
        seed=cfg.seed, placement_seed=cfg.seed, episode_length_s=max(5.0, 2.0 * settle_time + 1.0),
        enhanced_determinism=cfg.env_spacing == 0,  # co-located envs: each settles as it would alone
        gym_id=f"arena_record_{arena_env.name}", output_dir=os.path.join(shard.folder, f"rank{ctx.rank}"),
        global_env_ids=tuple(share), global_num_envs=cfg.num_envs))
    check_backend_available(builder.physics, ctx.device)
    robot_keys = tuple(arena_env.embodiment.get_scene_root_keys()) if arena_env.embodiment is not None else ()
    params = SettledPlacementParams(num_steps=cfg.settle.num_steps, validators=cfg.settle.validators, seed=cfg.seed,
                                    robot_keys=robot_keys, log=log, verbose=ctx.is_main)
    min_layouts, max_batches = cfg.min_layouts, cfg.max_batches
    say(f"[recording] {ctx.world_size} ranks, {cfg.num_envs} envs: rank r simulates a contiguous block of them; "
        f"shards in {shard.folder}")
    total, batches, attempted = 0, 0, 0
    with stop_signals():
        try:
            env_cfg = builder.compose_manager_cfg()
            if cfg.viewer_eye is not None:
                env_cfg.viewer.eye = tuple(float(v) for v in cfg.viewer_eye)
                env_cfg.viewer.lookat = tuple(float(v) for v in cfg.viewer_lookat)
            with kitless_session(env_cfg, ctx.device):
                with held_output(verbose):
                    env = builder.make_registered(env_cfg)
                bar = None
                try:
                    collector = SettledPlacementCollector(env, params, arena_env.get_placement_assets())
                    started = time.monotonic()
                    bar = progress_bar(min_layouts, "[recording] layouts", "layout") if ctx.is_main else None
                    for b in range(1, max_batches + 1):
                        raise_if_interrupted()
                        if b <= len(counts):  # done before a restart: its lines are in the shard
                            collector.skip_batch()
                            n_local = counts[b - 1]
                        else:
                            final, blocks, _ = collector.run_batch(b)
                            new = []
                            if blocks:
                                layouts = collector._layouts(final, blocks, len(blocks))
                                layouts.check_values()
                                new = layouts.jsonl_lines(SETTLED_SOURCE)
                            lines = lines + new
                            counts = counts + [len(new)]
                            shard.save(lines, counts, share)
                            n_local = len(new)
                        box = torch.tensor([n_local], dtype=torch.long,
                                           device=ctx.device if ctx.backend == "nccl" else "cpu")
                        dist.all_reduce(box, op=dist.ReduceOp.SUM)
                        total += int(box.item())
                        batches, attempted = b, b * cfg.num_envs
                        done = min(total, min_layouts)
                        left = time_left_text(time.monotonic() - started, done, min_layouts, b, max_batches)
                        with paused(bar):
                            say(f"[recording] batch {b}/{max_batches}: {done}/{min_layouts} collected{left}")
                        advance_to(bar, done, f"batch {b}/{max_batches}")
                        if total >= min_layouts:
                            break
                    summaries = [None] * ctx.world_size if ctx.is_main else None
                    dist.gather_object(collector.summary.lines(), summaries, dst=0)
                finally:
                    if bar is not None and sys.exc_info()[0] is not None:
                        bar.disable = True  # an interruption's or refusal's one line, not a half bar
                    close_bar(bar)
                    with held_output(verbose):
                        env.close()
        except KeyboardInterrupt as err:
            _ignore_further_stops()
            signal_name = err.args[0] if isinstance(err, StopRequested) else "SIGINT"
            raise ShardsKept(len(lines), shard.folder, signal_name) from None
    gathered = [None] * ctx.world_size if ctx.is_main else None
    dist.gather_object([ln for ln in lines if line_key(ln)[0] <= batches], gathered, dst=0)
    path, accepted = None, min(total, min_layouts)
    if ctx.is_main:
        merged = merge_lines(gathered, min_layouts)
        accepted = len(merged)
        if merged:
            path = write_output(cfg.output, merged)
            say(f"Saved {accepted}/{attempted} accepted layouts: {path} (merged from {ctx.world_size} ranks)")
        for r, rank_lines in enumerate(summaries):
            for line in rank_lines:
                say(f"[rank {r}] {line}" if ctx.world_size > 1 else line)
        if accepted < min_layouts:
            import logging

            logging.getLogger(__name__).error(
                "[recording] shortfall: only %d/%d layouts were accepted in %d batches (%d attempted)%s", accepted,
                min_layouts, batches, attempted, f"; they were written to {path}" if path else "; no file was written")
    dist.barrier()  # the output is in place: the shards are no longer needed
    shard.remove()
    if ctx.is_main:
        with contextlib.suppress(OSError):
            leftovers = [p for p in os.listdir(shard.folder) if re.fullmatch(r"rank\d+-of-\d+\.(jsonl|json)", p)]
            if not leftovers and not os.listdir(shard.folder):
                shutil.rmtree(shard.folder, ignore_errors=True)
    dist.destroy_process_group()
    return RecordingResult(path, accepted, attempted, {}, min_layouts, batches)


__all__ = ["DistributedRecordingError", "RankContext", "RankShard", "ShardsKept", "TORCHRUN_COMMAND", "env_share", "init_rank",
           "merge_lines", "record_distributed", "require_torchrun", "torchrun_vars", "write_output"]

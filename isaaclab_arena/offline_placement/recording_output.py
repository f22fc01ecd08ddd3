"""Recording to a JSONL file: accepted layouts are appended batch by batch, so an interruption keeps them.

While a recording runs, every batch's accepted layouts are appended to a hidden temporary file beside the
output (``.<name>.<random>.partial``), flushed and fsynced. At the end the file is put in place atomically (a
hard link that refuses an existing output); with nothing accepted no file is written. Ctrl-C (SIGINT) or
SIGTERM ends the recording the same way with what was accepted so far, and raises :class:`RecordingInterrupted`
(``interrupted: kept N accepted layouts in <file>``). Files get the user's umask.

Python API::

    result = record_settled_placement_layouts(cfg, device="cpu")      # builds the env, records, closes it
    result = record_placements_to_jsonl(env, "out.jsonl", min_layouts=8, max_batches=4,
                                        params=SettledPlacementParams(num_steps=60),
                                        scene_assets=arena_env.get_placement_assets())
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import logging
import os
import signal
import threading
import time
from typing import Any, Callable, Iterable

from omegaconf import MISSING

from isaaclab_arena.offline_placement.recording import (
    SETTLED_SOURCE,
    RecordingResult,
    SettledPlacementCollector,
    SettledPlacementParams,
)
from isaaclab_arena.offline_placement.recording_config import (
    PlacementRecordingCfg,
    RecordingConfigError,
    build_post_physics_validators,
    merge_recording_settings,
    spec_settings_line,
)
from isaaclab_arena.offline_placement.recording_scene import clutter_support_bounds
from isaaclab_arena.offline_placement.placement_layouts import PlacementLayouts
from isaaclab_arena.utils.atomic_files import commit, fsync_dir, temp_beside
from isaaclab_arena.utils.interrupts import StopRequested, deferred_stops, stop_status
from isaaclab_arena.utils.progress import advance_to, close_bar, paused, progress_bar
from isaaclab_arena.utils.shipped_paths import shipped_path

logger = logging.getLogger(__name__)


class RecordingInterrupted(KeyboardInterrupt):
    """A recording ended by Ctrl-C or SIGTERM; the layouts accepted before it are kept in ``path``.

    Attributes:
        kept: Accepted layouts written.
        path: The JSONL file holding them, or None when none had been accepted (no file is written then).
        signal_name: ``SIGINT`` or ``SIGTERM``.
    """

    def __init__(self, kept: int, path: str | None, signal_name: str = "SIGINT"):
        super().__init__(kept, path, signal_name)
        self.kept, self.path, self.signal_name = kept, path, signal_name

    def line(self) -> str:
        if self.path is None:
            return "interrupted: kept 0 accepted layouts; no file was written"
        return f"interrupted: kept {self.kept} accepted layouts in {self.path}"

    @property
    def exit_status(self) -> int:
        return stop_status(self.signal_name)


class AppendingLayoutsFile:
    """A new JSONL file filled batch by batch: lines go to a temporary file beside ``path`` until :meth:`commit`.

    Raises:
        FileExistsError: ``path`` exists (it is never overwritten).
    """

    def __init__(self, path: str | os.PathLike):
        self.path = os.path.abspath(os.fspath(path))
        if os.path.exists(self.path):
            raise FileExistsError(f"output '{self.path}' already exists; the recorder never overwrites a file, "
                                  "choose a new output path")
        fd, self.tmp = temp_beside(self.path, suffix=".partial")
        self._fh = os.fdopen(fd, "wb")
        # (layouts, bytes) written completely; one assignment, so an interruption never splits the two
        self._done = (0, 0)

    @property
    def count(self) -> int:
        return self._done[0]

    def append(self, layouts: PlacementLayouts) -> None:
        """Appends ``layouts`` (source ``settled``), flushed and fsynced."""
        layouts.check_values()
        data = "".join(layouts.jsonl_lines(SETTLED_SOURCE)).encode("utf-8")
        self._fh.write(data)
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._done = (self._done[0] + len(layouts), self._done[1] + len(data))

    def commit(self) -> str | None:
        """Puts the complete lines in place at ``path`` (atomic, never overwriting); returns ``path``, or None
        (and removes the temporary file) when nothing was appended."""
        count, size = self._done
        self._close(size)
        if count == 0:
            self.discard()
            return None
        try:
            commit(self.tmp, self.path, overwrite=False)
        except BaseException:
            self.discard()
            raise
        fsync_dir(os.path.dirname(self.path))
        return self.path

    def discard(self) -> None:
        self._close(None)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.tmp)

    def _close(self, size: int | None) -> None:
        if self._fh.closed:
            return
        with contextlib.suppress(OSError, ValueError):
            self._fh.flush()
        if size is not None:  # drop a batch an interruption cut short
            os.ftruncate(self._fh.fileno(), size)
        self._fh.close()


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def time_left_text(elapsed_s: float, done: int, target: int, batch: int, max_batches: int) -> str:
    """`` (<elapsed>; about <eta> left)`` of a recording: the remaining layouts at the rate so far, capped by the
    remaining batches at the time per batch so far (the run stops at ``max_batches`` either way)."""
    if done >= target or batch <= 0:
        return f" ({_duration(elapsed_s)})"
    per_batch = elapsed_s / batch
    by_batches = per_batch * (max_batches - batch)
    left = min(by_batches, elapsed_s / done * (target - done)) if done > 0 else by_batches
    return f" ({_duration(elapsed_s)}; about {_duration(left)} left)"


#: Inside the block SIGINT and SIGTERM stop the recording at its next check (a settle step or a batch), as
#: :class:`StopRequested`; the handlers are restored after (``utils.interrupts.deferred_stops``).
stop_signals = deferred_stops


def _ignore_further_stops() -> None:
    """After the first interruption, a second Ctrl-C must not cut the file's commit or the env's close short."""
    if threading.current_thread() is threading.main_thread():
        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, signal.SIG_IGN)


def apply_spec_recording(cfg: "PlacementRecordingCfg", spec_recording: Optional[Mapping[str, Any]] = None,
                         log=None) -> "PlacementRecordingCfg":
    """``cfg`` with the recording settings of its spec applied (``merge_recording_settings``); what the recorder,
    single-process and ``--distributed`` alike, calls once before it validates the settings.

    ``spec_recording`` defaults to the ``recording:`` block of ``cfg.env_spec`` (read, not built; a spec that does
    not load raises ``EnvSpecError``; a missing file is left to ``validate``). The keys given on the command line
    are those ``compose_recording_cfg`` recorded (``given_overrides``); a cfg made in Python counts its non-default
    settings as given. A cfg already merged is returned as it is. ``log`` (e.g. ``print``) receives the
    ``[recording] from the spec: ...`` line.
    """
    if getattr(cfg, "_spec_recording_applied", False):
        return cfg
    if spec_recording is None:
        spec = cfg.env_spec
        if not isinstance(spec, str) or not spec or spec == MISSING or not os.path.isfile(shipped_path(spec)):
            return cfg
        from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec  # not in recording_config: cycle

        spec_recording = ArenaEnvGraphSpec.from_yaml(spec).recording
    merged, taken = merge_recording_settings(cfg, spec_recording, getattr(cfg, "_given_overrides", None))
    merged = copy.copy(merged) if merged is cfg else merged  # never marks the caller's object
    merged._given_overrides = getattr(cfg, "_given_overrides", None)
    merged._spec_recording_applied = True
    line = spec_settings_line(taken)
    if line is not None and log is not None:
        log(line)
    return merged


def record_placements_to_jsonl(env, output: str | os.PathLike, min_layouts: int = 1, max_batches: int = 5,
                               params: SettledPlacementParams | None = None,
                               scene_assets: Iterable[Any] | None = None) -> RecordingResult:
    """Records settled layouts of ``env`` into a new JSONL file (the env is left open).

    Runs batches until ``min_layouts`` layouts are accepted or ``max_batches`` ran, appending each batch's accepted
    layouts (at most ``min_layouts`` in all; fewer on a shortfall, which is logged as an error); the file appears
    at ``output`` only at the end, atomically. Writes nothing when no layout is accepted.

    Raises:
        FileExistsError: ``output`` exists (it is never overwritten and is left untouched).
        RecordingConfigError / RecordingSceneError: settings or scene that cannot be recorded.
        RecordingInterrupted: Ctrl-C or SIGTERM; the layouts accepted so far are in ``err.path``.
    """
    for key, value in (("min_layouts", min_layouts), ("max_batches", max_batches)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise RecordingConfigError(f"{key} must be an integer >= 1, got {value!r}")
    if os.path.exists(os.fspath(output)):
        raise FileExistsError(f"output '{os.fspath(output)}' already exists; the recorder never overwrites a file, "
                              "choose a new output path")
    params = params or SettledPlacementParams()
    collector = SettledPlacementCollector(env, params, scene_assets)
    out = AppendingLayoutsFile(output)

    started = time.monotonic()
    bar = progress_bar(min_layouts, "[recording] layouts", "layout")

    def on_batch(b: int, accepted: int, layouts: PlacementLayouts | None) -> None:
        if layouts is not None:
            out.append(layouts)
        done = min(accepted, min_layouts)
        with paused(bar):
            params.emit(f"[recording] batch {b}/{max_batches}: {done}/{min_layouts} collected"
                        f"{time_left_text(time.monotonic() - started, done, min_layouts, b, max_batches)}")
        advance_to(bar, done, f"batch {b}/{max_batches}")

    try:
        collected = collector.collect(max_batches, target=min_layouts, on_batch=on_batch)
    except KeyboardInterrupt as err:
        if bar is not None:  # the interruption's one line, not a half bar
            bar.disable = True
        _ignore_further_stops()
        kept = out.count
        path = out.commit()
        raise RecordingInterrupted(kept, path, err.args[0] if isinstance(err, StopRequested) else "SIGINT") from None
    except BaseException:
        out.discard()
        raise
    finally:
        close_bar(bar)
    summary = collected.rejections
    path = out.commit()
    if path is not None:
        params.emit(f"Saved {collected.accepted}/{collected.attempted} accepted layouts: {path}")
    for line in summary.lines():
        params.emit(line)
    accepted = collected.accepted
    if accepted < min_layouts:
        what = (f"no layout was accepted in {collected.batches} batches ({collected.attempted} attempted); no file was "
                f"written" if accepted == 0 else
                f"only {accepted}/{min_layouts} layouts were accepted in {collected.batches} batches "
                f"({collected.attempted} attempted); the accepted layouts were written to {path}")
        logger.error("[recording] shortfall: %s; see the Rejected lines, adjust the scene or the limits, or raise "
                     "max_batches", what)
    return RecordingResult(path, accepted, collected.attempted, summary.counts, min_layouts, collected.batches, summary)


def _builder_physics(presets: str | None) -> str | None:
    return None if presets is None else {"physx": "ovphysx", "newton": "newton_mjwarp"}[presets]


def record_settled_placement_layouts(cfg: PlacementRecordingCfg, device: str = "cpu", arena_env=None,
                                     log: Callable[[str], None] | None = None, verbose: bool = True
                                     ) -> RecordingResult:
    """Builds the env of ``cfg.env_spec`` (or ``arena_env``), records settled layouts to ``cfg.output``, closes it.

    The recording overrides the placement seed (``cfg.seed``) and the pool refill size
    (``cfg.layouts_per_env``); do not reuse them for replay. Kit-less: the env is launched with
    ``isaaclab.app.launch_simulation`` (OV PhysX unless ``cfg.presets`` / the environment say otherwise).
    SIGTERM interrupts like Ctrl-C while it runs (:class:`RecordingInterrupted`).

    Args:
        cfg: The recording settings (``record_placement_layouts.py``'s Hydra configuration).
        device: ``cpu`` or ``cuda:0``.
        arena_env: An ``IsaacLabArenaEnvironment`` to record instead of loading ``cfg.env_spec``.
        log: Console sink (default ``print``).
        verbose: False holds back Isaac Lab's manager tables and the simulators' start-up messages.
    """
    emit = log or (lambda line: print(line, flush=True))
    # defaults < the spec's (or arena_env's) recording: block < the command line; a no-op once applied (the CLI)
    cfg = apply_spec_recording(cfg, (getattr(arena_env, "recording", None) or {}) if arena_env is not None else None,
                               log=emit)
    if arena_env is not None and (not isinstance(cfg.env_spec, str) or not cfg.env_spec or cfg.env_spec == "???"):
        cfg = dataclasses.replace(cfg, env_spec=f"<python environment '{arena_env.name}'>")
    cfg.validate(check_spec=arena_env is None)
    from isaaclab_arena.environments.quiet_output import held_output, quiet_warp_init

    quiet_warp_init(verbose)
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.environments.launch import kitless_session
    from isaaclab_arena.environments.physics import check_backend_available

    if arena_env is None:
        from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec

        arena_env = ArenaEnvGraphSpec.from_yaml(cfg.env_spec).to_arena_env()
    if arena_env.placement_layouts is not None:
        raise RecordingConfigError(f"environment '{arena_env.name}' replays placement_layouts; recording solves and "
                                   "settles new layouts, remove placement_layouts")
    supports = clutter_support_bounds(arena_env.get_placement_assets())
    if supports:  # e.g. a bin without a minimum resting height: refused before anything is solved
        build_post_physics_validators(cfg.settle.validators, has_clutter=True, clutter_supports=supports)
    placer_params = dataclasses.replace(arena_env.placer_params, min_unique_layouts_per_env=cfg.layouts_per_env)
    arena_env = dataclasses.replace(arena_env, placer_params=placer_params)
    settle_time = cfg.settle.num_steps * ArenaEnvBuilderCfg.decimation * ArenaEnvBuilderCfg.sim_dt
    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(
        num_envs=cfg.num_envs, env_spacing=cfg.env_spacing, device=device, physics=_builder_physics(cfg.presets),
        seed=cfg.seed, placement_seed=cfg.seed, episode_length_s=max(5.0, 2.0 * settle_time + 1.0),
        enhanced_determinism=cfg.env_spacing == 0,  # co-located envs: each settles as it would alone
        gym_id=f"arena_record_{arena_env.name}"))
    check_backend_available(builder.physics, device)  # before the solver runs
    robot_keys = tuple(arena_env.embodiment.get_scene_root_keys()) if arena_env.embodiment is not None else ()
    params = SettledPlacementParams(num_steps=cfg.settle.num_steps, validators=cfg.settle.validators, seed=cfg.seed,
                                    robot_keys=robot_keys, log=log)
    with stop_signals():
        env_cfg = builder.compose_manager_cfg()
        if cfg.viewer_eye is not None:
            env_cfg.viewer.eye = tuple(float(v) for v in cfg.viewer_eye)
            env_cfg.viewer.lookat = tuple(float(v) for v in cfg.viewer_lookat)
        with kitless_session(env_cfg, device):
            with held_output(verbose):
                env = builder.make_registered(env_cfg)
            try:
                return record_placements_to_jsonl(env, cfg.output, min_layouts=cfg.min_layouts,
                                                  max_batches=cfg.max_batches, params=params,
                                                  scene_assets=arena_env.get_placement_assets())
            finally:
                with held_output(verbose):
                    env.close()


__all__ = ["AppendingLayoutsFile", "RecordingInterrupted", "StopRequested", "record_placements_to_jsonl",
           "record_settled_placement_layouts", "stop_signals"]

"""Record settled placement layouts (Hydra configuration, kit-less Isaac Lab; OV PhysX on the CPU by default).

    scripts/arena_python.sh isaaclab_arena/scripts/record_placement_layouts.py \\
        env_spec=isaaclab_arena_environments/tabletop/mug_bowl_table.yaml \\
        output=outputs/placements/mug_bowl.jsonl \\
        num_envs=4 env_spacing=2 min_layouts=16 max_batches=5 seed=42 \\
        settle.num_steps=120 \\
        +settle.validators.max_root_height._target_=isaaclab_arena_environments.placement_validators.MaxRootHeightValidator \\
        +settle.validators.max_root_height.max_height_m=1.5 \\
        render=false --device cpu --viz none

Paths (env_spec, output) and custom validator modules are taken from your working directory: a module
my_validators.py there is +settle.validators.<check>._target_=my_validators.<Class>. Accepted layouts are
appended batch by batch; Ctrl-C or SIGTERM stops the recording and keeps them ("interrupted: kept N accepted
layouts in <file>"). Isaac Lab's manager tables are printed only with --verbose.

Hydra keys (``PlacementRecordingCfg``): env_spec, output (must not exist), num_envs [1], env_spacing [30.0],
viewer_eye / viewer_lookat, layouts_per_env [5], min_layouts [1], max_batches [5], seed [42],
presets [physx | newton], render [false], settle.num_steps [5], settle.validators.<check>.<setting>,
+settle.validators.<name>._target_=module.Class, and
+settle.validators.support_containment.minimum_resting_heights_m.<support key>=<metres>.
A spec's own ``recording:`` block sets any of them but env_spec / output; the command line wins over it, and the
settings taken from the spec are said in one line ("[recording] from the spec: settle.num_steps=60").

Launcher flags (argparse style, mixed freely with the Hydra overrides): ``--device cpu|cuda:0``,
``--viz none|kit`` (``kit`` needs Isaac Sim and a display; this install is kit-less), ``--verbose`` and
``--distributed`` (one job over the ranks of torchrun; ``num_envs`` is the job's total, each rank simulates a
contiguous block of it, rank 0 writes the merged output; shards and resume in ``<output>.shards``)::

    scripts/arena_python.sh -m torch.distributed.run --standalone --nproc_per_node=2 \\
        isaaclab_arena/scripts/record_placement_layouts.py <overrides> env_spacing=0 --distributed

With env_spacing=0 the merged file is byte-identical to a single-process run (docs/RECORD_REPLAY.md).

Exit status:
  0  at least one layout was accepted and written; a shortfall below min_layouts (max_batches ran out) still
     writes every accepted layout and is logged as an error, but the exit status stays 0;
  1  no layout was accepted: no file is written (read the "Rejected <count>: <check>: <detail>" lines);
  2  a configuration error (unknown flag or key, bad value, missing spec, existing output, scene that cannot be
     recorded, a device this machine does not have), reported in one line before anything is simulated;
  130 / 143  interrupted by Ctrl-C / SIGTERM: the layouts accepted so far are written.
"""

from __future__ import annotations

if __name__ == "__main__":  # Ctrl-C during start-up (imports take seconds): one line, no traceback
    import _signal  # loaded with the interpreter (importing ``signal`` runs Python code a Ctrl-C can land in)

    _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGINT})  # held until quiet_interrupts() has its handler
    from isaaclab_arena.utils.interrupts import quiet_interrupts
    from isaaclab_arena.utils.runner_gc import collect_rarely, skip_collection_at_exit

    quiet_interrupts()
    collect_rarely()  # full garbage collections 100x rarer: 0.5-1.5 s less per run (utils/runner_gc.py)
    skip_collection_at_exit()  # and none at exit: about 1 s less

import argparse
import difflib
import re
import sys


def split_launcher_flags(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """Separates ``--device`` / ``--viz`` / ``--verbose`` / ``--distributed`` (and ``-h``) from the Hydra overrides.

    Raises:
        SystemExit(2): an unknown ``--flag`` (Hydra overrides never start with ``--``), in one line.
    """
    from isaaclab_arena.utils.arena_argparse import ArenaArgumentParser

    parser = ArenaArgumentParser(prog="record_placement_layouts.py", add_help=True,
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 description=__doc__.split("\n\nHydra keys")[0],
                                 epilog="Hydra keys" + __doc__.split("\n\nHydra keys", 1)[1])
    parser.add_argument("--device", default="cpu", help="simulation device: cpu or cuda:0 (default cpu)")
    parser.add_argument("--viz", default="none", choices=("none", "kit"), help="viewer (default none)")
    parser.add_argument("--verbose", action="store_true",
                        help="also print Isaac Lab's manager tables and the simulator's start-up messages")
    parser.add_argument("--distributed", action="store_true",
                        help="one recording over the ranks of torchrun (python -m torch.distributed.run "
                             "--nproc_per_node=N ... --distributed); num_envs is the total over the ranks")
    flags, rest = parser.parse_known_args(argv)
    unknown = [a for a in rest if a.startswith("-")]
    if unknown:
        parser.error(f"unknown flag(s) {unknown}: the launcher flags are --device, --viz, --verbose and --distributed; everything "
                     "else is a Hydra override key=value (e.g. num_envs=4, +settle.validators.<name>._target_="
                     "module.Class)")
    return flags, rest


def compose_recording_cfg(overrides: list[str]):
    """``PlacementRecordingCfg`` from Hydra overrides (the structured config registered in Hydra's ConfigStore).

    The overrides are kept on the result (``_given_overrides``): ``apply_spec_recording`` takes from the spec's
    ``recording:`` block only the keys they do not give."""
    from hydra import compose, initialize

    from isaaclab_arena.offline_placement.recording_config import PlacementRecordingCfg, register_recording_config

    name = register_recording_config()
    with initialize(version_base=None, config_path=None):
        node = compose(config_name=name, overrides=list(overrides))
    cfg = PlacementRecordingCfg.from_config(node)
    cfg._given_overrides = list(overrides)
    return cfg


def hydra_error_line(err: Exception) -> str:
    """One clear line for a Hydra composition error: an unknown key names the accepted ones (and the closest),
    instead of Hydra's advice to append it with ``+``, which would only fail later."""
    from isaaclab_arena.offline_placement.post_physics_checks import BUILTIN_POST_PHYSICS_VALIDATORS
    from isaaclab_arena.offline_placement.recording_config import PlacementRecordingCfg

    text = str(err)
    found = re.search(r"Could not override '([^']+)'", text)
    if not found:
        return " ".join(text.split())
    key = found.group(1)
    if key.startswith("settle.validators."):
        name = key.split(".")[2]
        if name not in BUILTIN_POST_PHYSICS_VALIDATORS:
            return (f"settle.validators.{name} is not a built-in check ({', '.join(sorted(BUILTIN_POST_PHYSICS_VALIDATORS))});"
                    f" a custom check is added with +settle.validators.{name}._target_=module.Class")
        return f"unknown setting '{key}' of the built-in check '{name}'"
    import dataclasses

    accepted = [f.name for f in dataclasses.fields(PlacementRecordingCfg) if f.name != "settle"]
    accepted += ["settle.num_steps", "settle.validators"]
    close = difflib.get_close_matches(key, accepted, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"unknown recording key '{key}'{hint}; accepted keys: {', '.join(accepted)}"


def _error(message: str, quiet: bool = False) -> int:
    """Prints the one ``error:`` line (not on ranks other than 0 of a distributed job: rank 0 says it) -> 2."""
    if not quiet:
        print(f"error: {message}", file=sys.stderr, flush=True)
    return 2


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    flags, overrides = split_launcher_flags(argv)
    quiet = False
    if flags.distributed:
        from isaaclab_arena.offline_placement.distributed_recording import DistributedRecordingError, require_torchrun

        try:
            quiet = require_torchrun()["rank"] != 0
        except DistributedRecordingError as err:
            return _error(str(err))
    if flags.viz == "kit":
        return _error("--viz kit needs Isaac Sim (Kit) and a display; this install is kit-less. Use --viz none.", quiet)
    from isaaclab_arena.environments.physics import check_backend_available

    try:
        check_backend_available("ovphysx", flags.device)  # the device first; the backend once the spec is read
    except (ValueError, RuntimeError) as err:
        return _error(str(err), quiet)
    from isaaclab_arena.environments.quiet_output import held_output, quiet_warp_init

    quiet_warp_init(flags.verbose)
    from hydra.errors import HydraException

    from isaaclab_arena.env_spec.spec_issue import EnvSpecError
    from isaaclab_arena.offline_placement.recording_config import RecordingConfigError

    with held_output(flags.verbose):  # Isaac Lab's import-time messages
        from isaaclab_arena.offline_placement.recording_output import apply_spec_recording
    try:
        cfg = compose_recording_cfg(overrides)
        # defaults < the spec's recording: block < the command line (the same call in record_distributed)
        cfg = apply_spec_recording(cfg, log=None if quiet else (lambda line: print(line, flush=True)))
        cfg.validate(check_spec=True)
    except HydraException as err:
        return _error(hydra_error_line(err), quiet)
    except (RecordingConfigError, EnvSpecError) as err:
        return _error(str(err), quiet)
    if cfg.render and not quiet:
        print("[recording] render=true: nothing is rendered without a viewer (--viz none, kit-less)", flush=True)
    from isaaclab_arena.environments.cli import is_user_error
    from isaaclab_arena.utils.interrupts import stop_signal_of, stop_status

    with held_output(flags.verbose):  # Isaac Lab's import-time messages
        from isaaclab_arena.offline_placement.recording_output import (
            RecordingInterrupted,
            record_settled_placement_layouts,
        )
    from isaaclab_arena.utils.runner_gc import freeze_imports

    freeze_imports()  # no later collection walks the imported modules' objects (utils/runner_gc.py)
    if flags.distributed:
        return _main_distributed(cfg, flags, quiet)
    try:
        result = record_settled_placement_layouts(cfg, device=flags.device, verbose=flags.verbose)
    except RecordingInterrupted as stop:
        print(stop.line(), file=sys.stderr, flush=True)
        return stop.exit_status
    except (KeyboardInterrupt, Exception) as err:  # noqa: BLE001 - a stop or refused input: one line; else a traceback
        stop = stop_signal_of(err)  # before the recording loop (building the env), or what a swallowed Ctrl-C caused
        if stop is not None:
            print("interrupted: kept 0 accepted layouts; no file was written", file=sys.stderr, flush=True)
            return stop_status(stop)
        if not is_user_error(err):
            raise
        return _error(str(err.args[0]) if isinstance(err, KeyError) and err.args else str(err))
    return 0 if result.output is not None else 1


def _main_distributed(cfg, flags, quiet: bool) -> int:
    """One rank of a ``--distributed`` recording (``offline_placement/distributed_recording.py``)."""
    from isaaclab_arena.environments.cli import is_user_error
    from isaaclab_arena.offline_placement.distributed_recording import (
        DistributedRecordingError,
        ShardsKept,
        record_distributed,
    )
    from isaaclab_arena.utils.interrupts import stop_signal_of, stop_status

    try:
        result = record_distributed(cfg, device=flags.device, verbose=flags.verbose)
    except DistributedRecordingError as err:
        return _error(str(err), quiet)
    except ShardsKept as stop:
        print(stop.line(), file=sys.stderr, flush=True)
        return stop.exit_status
    except (KeyboardInterrupt, Exception) as err:  # noqa: BLE001 - a stop or refused input: one line; else a traceback
        stop = stop_signal_of(err)  # a stop signal, or the error a swallowed Ctrl-C caused
        if stop is not None:
            print("interrupted: nothing was recorded yet", file=sys.stderr, flush=True)
            return stop_status(stop)
        if not is_user_error(err):
            raise
        return _error(str(err.args[0]) if isinstance(err, KeyError) and err.args else str(err), quiet)
    return 0 if result.accepted > 0 else 1


if __name__ == "__main__":
    sys.exit(main())

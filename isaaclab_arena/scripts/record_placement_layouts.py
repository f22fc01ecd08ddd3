"""Record settled placement layouts (Hydra configuration, kit-less Isaac Lab; OV PhysX on the CPU by default).

    PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" \\
    scripts/arena_python.sh isaaclab_arena/scripts/record_placement_layouts.py \\
        env_spec=isaaclab_arena_environments/tabletop/mug_bowl_table.yaml \\
        output=outputs/placements/mug_bowl.jsonl \\
        num_envs=4 env_spacing=2 min_layouts=16 max_batches=5 seed=42 \\
        settle.num_steps=120 \\
        settle.validators.pose_shift.max_translation_m=0.015 \\
        +settle.validators.max_root_height._target_=placement_validators.MaxRootHeightValidator \\
        +settle.validators.max_root_height.max_height_m=1.5 \\
        render=false --device cpu --viz none

Hydra keys (``PlacementRecordingCfg``): env_spec, output (must not exist), num_envs [1], env_spacing [30.0],
viewer_eye / viewer_lookat, layouts_per_env [5], min_layouts [1], max_batches [5], seed [42],
presets [physx | newton], render [false], settle.num_steps [5], settle.validators.<check>.<setting>,
+settle.validators.<name>._target_=module.Class, and
+settle.validators.support_containment.minimum_resting_heights_m.<support key>=<metres>.

Launcher flags (argparse style, mixed freely with the Hydra overrides): ``--device cpu|cuda:0`` and
``--viz none|kit`` (``kit`` needs Isaac Sim and a display; this install is kit-less).

Exit status:
  0  at least one layout was accepted and written; a shortfall below min_layouts (max_batches ran out) still
     writes every accepted layout and is logged as an error, but the exit status stays 0;
  1  no layout was accepted: no file is written (read the "Rejected <count>: <check>: <detail>" lines);
  2  a configuration error (unknown flag or key, bad value, existing output, scene that cannot be recorded).
"""

from __future__ import annotations

import argparse
import sys


def split_launcher_flags(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """Separates ``--device`` / ``--viz`` (and ``-h``) from the Hydra overrides; returns (flags, overrides).

    Raises:
        SystemExit(2): an unknown ``--flag`` (Hydra overrides never start with ``--``).
    """
    parser = argparse.ArgumentParser(prog="record_placement_layouts.py", add_help=True,
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     description=__doc__.split("\n\nHydra keys")[0],
                                     epilog="Hydra keys" + __doc__.split("\n\nHydra keys", 1)[1])
    parser.add_argument("--device", default="cpu", help="simulation device: cpu or cuda:0 (default cpu)")
    parser.add_argument("--viz", default="none", choices=("none", "kit"), help="viewer (default none)")
    flags, rest = parser.parse_known_args(argv)
    unknown = [a for a in rest if a.startswith("-")]
    if unknown:
        parser.error(f"unknown flag(s) {unknown}: the launcher flags are --device and --viz; everything else is a "
                     "Hydra override key=value (e.g. num_envs=4, +settle.validators.<name>._target_=module.Class)")
    return flags, rest


def compose_recording_cfg(overrides: list[str]):
    """``PlacementRecordingCfg`` from Hydra overrides (the structured config registered in Hydra's ConfigStore)."""
    from hydra import compose, initialize

    from isaaclab_arena.offline_placement.recording_config import PlacementRecordingCfg, register_recording_config

    name = register_recording_config()
    with initialize(version_base=None, config_path=None):
        node = compose(config_name=name, overrides=list(overrides))
    return PlacementRecordingCfg.from_config(node)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    flags, overrides = split_launcher_flags(argv)
    from hydra.errors import HydraException

    from isaaclab_arena.offline_placement.recording_config import RecordingConfigError
    from isaaclab_arena.offline_placement.recording_scene import RecordingSceneError

    if flags.viz == "kit":
        print("error: --viz kit needs Isaac Sim (Kit) and a display; this install is kit-less. Use --viz none.",
              file=sys.stderr)
        return 2
    try:
        cfg = compose_recording_cfg(overrides)
        cfg.validate()
    except (HydraException, RecordingConfigError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if cfg.render:
        print("[recording] render=true: nothing is rendered without a viewer (--viz none, kit-less)", flush=True)
    from isaaclab_arena.offline_placement.recording import record_settled_placement_layouts

    try:
        result = record_settled_placement_layouts(cfg, device=flags.device)
    except (RecordingConfigError, RecordingSceneError, FileExistsError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0 if result.output is not None else 1


if __name__ == "__main__":
    sys.exit(main())

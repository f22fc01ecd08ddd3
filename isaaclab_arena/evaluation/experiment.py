"""Experiment files: named evaluation runs (environment x policy x episodes x variations) run by ``eval_runner.py``.

::

    name: franka_policies                 # the experiment's name (output folder ./outputs/experiments/<name>)
    output_dir: outputs/franka            # optional, from the working directory
    defaults: {num_envs: 4, num_episodes: 8, placement_seed: 7}   # optional: any run key, for every run
    runs:
      - name: scripted                    # unique, letters / digits / _ / -
        environment: franka_table_pick_and_place   # a registered environment ...
        env_args: {pick_up_object: cube_4cm}        # ... and its own flags (without --)
        policy: {type: scripted_pick_and_place}
      - name: mine
        env_spec: scenes/my_scene.yaml    # ... or a YAML spec (relative to this file)
        policy: {type: my_policies.MyPolicy, settings: {gain: 2.0}, checkpoint_path: ckpt.pt}
        placement_layouts: recorded.jsonl # evaluate on recorded layouts instead of solving
        factors: [object_x_m, object_distance_from_robot_m]

Run keys: ``name``, ``environment`` | ``env_spec``, ``env_args``, ``policy`` (``type``, ``settings``,
``checkpoint_path``), ``num_episodes``, ``num_envs``, ``env_spacing`` (metres), ``placement_seed``,
``placement_layouts``, ``factors``, ``seed`` (simulation), ``device``, ``physics``, ``episode_length_s``
(seconds). Every run's variations are its layouts (placement seed and draw id per episode) and its factors.
Refusals name the file and the key (``exp.yaml: runs[1].policy.type: ...``); every run is checked before the
first one starts.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from isaaclab_arena.utils.shipped_paths import shipped_path, where_paths_are_looked_for

#: Keys a run accepts (and ``defaults``).
RUN_KEYS = ("name", "environment", "env_spec", "env_args", "policy", "num_episodes", "num_envs", "env_spacing",
            "placement_seed", "placement_layouts", "factors", "seed", "device", "physics", "episode_length_s")
POLICY_KEYS = ("type", "settings", "checkpoint_path")
TOP_KEYS = ("name", "output_dir", "defaults", "runs")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


class ExperimentError(ValueError):
    """An experiment file that cannot be run (one line naming the file and the key)."""


@dataclass
class ExperimentRun:
    """One run of an experiment, checked (paths absolute)."""

    name: str
    policy_type: str
    policy_settings: dict
    num_episodes: int
    environment: str | None = None
    env_spec: str | None = None
    env_args: dict = field(default_factory=dict)
    num_envs: int = 1
    env_spacing: float | None = None
    placement_seed: int | None = None
    placement_layouts: str | None = None
    factors: list[str] | None = None
    seed: int = 42
    device: str = "cpu"
    physics: str | None = None
    episode_length_s: float | None = None


@dataclass
class Experiment:
    name: str
    output_dir: str
    runs: list[ExperimentRun]
    path: str


def _int(value, where: str, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or (minimum is not None and value < minimum):
        raise ExperimentError(f"{where}: must be an integer{f' >= {minimum}' if minimum is not None else ''}, "
                              f"got {value!r}")
    return value


def _number(value, where: str, positive: bool = False, allow_zero: bool = True) -> float:
    import math

    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or (positive and (value < 0 or (value == 0 and not allow_zero))):
        raise ExperimentError(f"{where}: must be a finite number{' > 0' if positive and not allow_zero else ''}, "
                              f"got {value!r}")
    return float(value)


def _path(value, base: str, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ExperimentError(f"{where}: must be a file path, got {value!r}")
    path = value if os.path.isabs(value) else os.path.join(base, value)
    if not os.path.isfile(path):
        raise ExperimentError(f"{where}: no such file '{value}' (relative paths are taken from the experiment file's "
                              f"folder {base})")
    return os.path.abspath(path)


def _run(raw: dict, defaults: dict, base: str, where: str) -> ExperimentRun:
    from isaaclab_arena.environments.physics import PHYSICS_CHOICES

    if not isinstance(raw, dict):
        raise ExperimentError(f"{where}: a run is a mapping of {', '.join(RUN_KEYS)}, got {raw!r}")
    merged = {**defaults, **raw}
    unknown = [k for k in merged if k not in RUN_KEYS]
    if unknown:
        raise ExperimentError(f"{where}.{unknown[0]}: unknown run key; accepted: {', '.join(RUN_KEYS)}")
    name = merged.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ExperimentError(f"{where}.name: a run needs a name of letters, digits, '_' and '-' (it names its output "
                              f"folder), got {name!r}")
    where = f"{where} ({name})"
    if ("environment" in merged) == ("env_spec" in merged):
        raise ExperimentError(f"{where}: give exactly one of 'environment' (a registered environment) and 'env_spec' "
                              "(a YAML spec)")
    policy = merged.get("policy")
    if not isinstance(policy, dict) or "type" not in policy:
        raise ExperimentError(f"{where}.policy: must be a mapping with 'type' (a built-in policy or package.module."
                              f"Class), got {policy!r}")
    bad = [k for k in policy if k not in POLICY_KEYS]
    if bad:
        raise ExperimentError(f"{where}.policy.{bad[0]}: unknown key; accepted: {', '.join(POLICY_KEYS)}")
    settings = policy.get("settings") or {}
    if not isinstance(settings, dict):
        raise ExperimentError(f"{where}.policy.settings: must be a mapping of keyword settings, got {settings!r}")
    settings = dict(settings)
    if policy.get("checkpoint_path") is not None:
        settings["checkpoint_path"] = _path(policy["checkpoint_path"], base, f"{where}.policy.checkpoint_path")
    env_args = merged.get("env_args") or {}
    if not isinstance(env_args, dict):
        raise ExperimentError(f"{where}.env_args: must be a mapping of the environment's flags (without --), got "
                              f"{env_args!r}")
    run = ExperimentRun(name=name, policy_type=str(policy["type"]), policy_settings=settings,
                        num_episodes=_int(merged.get("num_episodes", 1), f"{where}.num_episodes", 1),
                        environment=merged.get("environment"), env_args=dict(env_args),
                        num_envs=_int(merged.get("num_envs", 1), f"{where}.num_envs", 1),
                        seed=_int(merged.get("seed", 42), f"{where}.seed"),
                        device=str(merged.get("device", "cpu")))
    if "env_spec" in merged:
        run.env_spec = _path(merged["env_spec"], base, f"{where}.env_spec")
    if merged.get("env_spacing") is not None:
        run.env_spacing = _number(merged["env_spacing"], f"{where}.env_spacing", positive=True)
    if merged.get("placement_seed") is not None:
        run.placement_seed = _int(merged["placement_seed"], f"{where}.placement_seed")
    if merged.get("placement_layouts") is not None:
        run.placement_layouts = _path(merged["placement_layouts"], base, f"{where}.placement_layouts")
    if merged.get("factors") is not None:
        factors = merged["factors"]
        if not isinstance(factors, list) or not all(isinstance(f, str) for f in factors):
            raise ExperimentError(f"{where}.factors: must be a list of factor names, got {factors!r}")
        run.factors = list(factors)
    if merged.get("physics") is not None:
        if merged["physics"] not in PHYSICS_CHOICES:
            raise ExperimentError(f"{where}.physics: {merged['physics']!r} is not accepted; use one of "
                                  f"{', '.join(PHYSICS_CHOICES)}")
        run.physics = merged["physics"]
    if merged.get("episode_length_s") is not None:
        run.episode_length_s = _number(merged["episode_length_s"], f"{where}.episode_length_s", positive=True,
                                       allow_zero=False)
    return run


def load_experiment(path: str, output_dir: str | None = None) -> Experiment:
    """Reads and checks an experiment file (runs are not built yet: :func:`make_builder` does that)."""
    import yaml

    given, path = path, shipped_path(path)
    if not os.path.isfile(path):
        raise ExperimentError(f"--experiment {given}: no such file ({where_paths_are_looked_for()})")
    try:
        with open(path) as f:
            raw = yaml.safe_load(f)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ExperimentError(f"{path}{line}: not valid YAML ({getattr(err, 'problem', None) or err})") from None
    if not isinstance(raw, dict):
        raise ExperimentError(f"{path}: an experiment is a mapping with keys {', '.join(TOP_KEYS)}")
    unknown = [k for k in raw if k not in TOP_KEYS]
    if unknown:
        raise ExperimentError(f"{path}: {unknown[0]}: unknown key; accepted: {', '.join(TOP_KEYS)}")
    name = raw.get("name") or os.path.splitext(os.path.basename(path))[0]
    if not isinstance(name, str) or not _NAME.match(name):
        raise ExperimentError(f"{path}: name: letters, digits, '_' and '-' only, got {name!r}")
    defaults = raw.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise ExperimentError(f"{path}: defaults: must be a mapping of run keys, got {defaults!r}")
    bad = [k for k in defaults if k not in RUN_KEYS or k == "name"]
    if bad:
        raise ExperimentError(f"{path}: defaults.{bad[0]}: not a run key that defaults can set; accepted: "
                              f"{', '.join(k for k in RUN_KEYS if k != 'name')}")
    runs_raw = raw.get("runs")
    if not isinstance(runs_raw, list) or not runs_raw:
        raise ExperimentError(f"{path}: runs: must be a non-empty list of runs")
    base = os.path.dirname(os.path.abspath(path))
    runs = [_run(r, defaults, base, f"{path}: runs[{i}]") for i, r in enumerate(runs_raw)]
    names = [r.name for r in runs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ExperimentError(f"{path}: runs: run name '{dup[0]}' is used twice; run names name output folders")
    out = output_dir or raw.get("output_dir") or os.path.join("outputs", "experiments", name)
    return Experiment(name, os.path.abspath(os.path.expanduser(out)), runs, os.path.abspath(path))


def make_builder(run: ExperimentRun, output_dir: str, where: str = ""):
    """The run's ``ArenaEnvBuilder`` (not composed): a registered environment with its flags, or a YAML spec."""

    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.utils.arena_argparse import ArenaArgumentParser

    if run.environment is not None:
        from isaaclab_arena_environments.registered import get_registered_environment

        try:
            add_args, build = get_registered_environment(run.environment)
        except KeyError as err:
            raise ExperimentError(f"{where}.environment: {err.args[0]}") from None
        parser = ArenaArgumentParser(prog=run.environment, add_help=False)
        add_args(parser)
        argv = []
        for key, value in run.env_args.items():
            if isinstance(value, list):
                argv += [f"--{key}", *map(str, value)]
            elif isinstance(value, bool):
                argv += [f"--{key}"] if value else []
            else:
                argv += [f"--{key}", str(value)]
        try:
            ns, extra = parser.parse_known_args(argv)
        except SystemExit:
            raise ExperimentError(f"{where}.env_args: {run.env_args!r} are not flags of environment "
                                  f"'{run.environment}'") from None
        if extra:
            raise ExperimentError(f"{where}.env_args: {extra[0]} is not a flag of environment '{run.environment}'")
        arena_env = build(ns)
    else:
        from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec

        if run.env_args:
            raise ExperimentError(f"{where}.env_args: only registered environments take env_args; a spec run sets "
                                  "its values in the YAML spec")
        arena_env = ArenaEnvGraphSpec.from_yaml(run.env_spec).to_arena_env()
    cfg = ArenaEnvBuilderCfg(num_envs=run.num_envs, env_spacing=run.env_spacing, device=run.device,
                             physics=run.physics, seed=run.seed, placement_seed=run.placement_seed,
                             output_dir=output_dir, episode_length_s=run.episode_length_s,
                             gym_id=f"arena_eval_{run.name}")
    return ArenaEnvBuilder(arena_env, cfg)


__all__ = ["Experiment", "ExperimentError", "ExperimentRun", "load_experiment", "make_builder"]

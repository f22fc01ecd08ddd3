"""Configuration of ``record_placement_layouts.py`` (Hydra) and the post-physics validators it builds.

Hydra keys (defaults in brackets)::

    env_spec=<yaml> [required]  output=<jsonl> [required, must not exist]  num_envs [1]  env_spacing [30.0]
    (paths, and custom validator modules, are taken from the working directory)
    viewer_eye=[x,y,z] viewer_lookat=[x,y,z] [None; each requires the other]  layouts_per_env [5]
    min_layouts [1]  max_batches [5]  seed [42]  presets [None: physx | newton]  render [false]
    settle.num_steps [5]
    settle.validators.<check>.<field>=<value>                 built-in check settings
    +settle.validators.<name>._target_=module.Class           a custom PostPhysicsPlacementValidator
    +settle.validators.support_containment.minimum_resting_heights_m.<support key>=<metres>

A spec's ``recording:`` block sets any of these keys but env_spec / output (defaults < the spec's block < the command
line: ``merge_recording_settings``, applied by ``recording_output.apply_spec_recording``).

Settle time is ``num_steps x decimation x physics_dt_s`` (env steps, physics steps per env step, seconds).
"""

import contextlib
import copy
import dataclasses
import importlib
import math
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

from omegaconf import MISSING

from isaaclab_arena.offline_placement.post_physics_checks import (
    BUILTIN_POST_PHYSICS_VALIDATORS,
    SupportContainmentValidator,
)
from isaaclab_arena.offline_placement.post_physics_validation import (
    PostPhysicsConfigError,
    PostPhysicsPlacementValidator,
)
from isaaclab_arena.utils.shipped_paths import shipped_path, where_paths_are_looked_for

DEFAULT_SETTLE_NUM_STEPS = 5
#: Accepted ``presets`` values (None keeps the environment's physics preset).
ACCEPTED_PRESETS = ("physx", "newton")
#: Hydra ConfigStore name of the recorder's configuration.
RECORDING_CONFIG_NAME = "placement_recording"


class RecordingConfigError(ValueError):
    """A recorder setting that cannot be used; the message names the Hydra key."""


def default_validator_settings() -> Dict[str, Any]:
    """``settle.validators`` defaults: every built-in check with its default settings."""
    out: Dict[str, Any] = {}
    for name, cls in BUILTIN_POST_PHYSICS_VALIDATORS.items():
        inst = cls()
        out[name] = {f.name: getattr(inst, f.name) for f in dataclasses.fields(cls)}
    return out


@dataclass
class SettleCfg:
    """Settling pass of one batch."""

    num_steps: int = DEFAULT_SETTLE_NUM_STEPS
    """Environment steps per batch before the post-physics checks (> 0)."""
    validators: Dict[str, Any] = field(default_factory=default_validator_settings)
    """Check name -> settings (a dict, with ``_target_`` for custom classes) or a validator instance."""


@dataclass
class PlacementRecordingCfg:
    """Settings of one recording (``record_placement_layouts.py``; Hydra keys are the field names)."""

    env_spec: str = MISSING
    """Environment YAML (required)."""
    output: str = MISSING
    """JSONL path to write; must not already exist (required)."""
    num_envs: int = 1
    """Parallel environments, one candidate each per batch."""
    env_spacing: float = 30.0
    """Metres between environment origins (>= 0; 0 puts every env at one origin, where an env's physics does not
    depend on its slot: what byte-identical distributed recordings need)."""
    viewer_eye: Optional[List[float]] = None
    """Viewer camera position [x, y, z] in metres; requires viewer_lookat."""
    viewer_lookat: Optional[List[float]] = None
    """Viewer target [x, y, z] in metres; requires viewer_eye."""
    layouts_per_env: int = 5
    """Solver layouts added per environment when the pool refills (not the output count)."""
    min_layouts: int = 1
    """Accepted-layout target."""
    max_batches: int = 5
    """Maximum reset-and-settle rounds; max_batches * num_envs >= min_layouts."""
    seed: int = 42
    """Placement and reset seed."""
    presets: Optional[str] = None
    """Physics preset override: physx or newton (None: the environment's preset)."""
    render: bool = False
    """Render physics steps (pair with --viz)."""
    settle: SettleCfg = field(default_factory=SettleCfg)

    def validate(self, check_output: bool = True, check_spec: bool = False) -> "PlacementRecordingCfg":
        """Raises ``RecordingConfigError`` naming the key of the first unusable setting; returns self.

        Paths (``env_spec``, ``output``) are taken from the working directory (a shipped ``env_spec`` also from the
        checkout: ``utils/shipped_paths.py``); ``check_spec`` requires the ``env_spec`` file to exist.
        """
        for key in ("env_spec", "output"):
            value = getattr(self, key)
            if not isinstance(value, str) or not value or value == MISSING:
                raise RecordingConfigError(f"{key} is required: pass {key}=<path> on the command line")
        if check_spec:
            given, self.env_spec = self.env_spec, shipped_path(self.env_spec)
            if not os.path.isfile(self.env_spec):
                raise RecordingConfigError(f"env_spec={given}: no such file ({where_paths_are_looked_for()})")
        for key in ("num_envs", "layouts_per_env", "min_layouts", "max_batches"):
            _int(getattr(self, key), key, minimum=1)
        _int(self.seed, "seed", minimum=None)
        _int(self.settle.num_steps, "settle.num_steps", minimum=1)
        if isinstance(self.env_spacing, bool) or not isinstance(self.env_spacing, (int, float)) or \
                not math.isfinite(self.env_spacing) or self.env_spacing < 0:
            raise RecordingConfigError(f"env_spacing must be a number of metres >= 0 (0: every env at one origin), got "
                                       f"{self.env_spacing!r}")
        if self.max_batches * self.num_envs < self.min_layouts:
            raise RecordingConfigError(f"max_batches * num_envs = {self.max_batches} * {self.num_envs} = "
                                       f"{self.max_batches * self.num_envs} is below min_layouts={self.min_layouts}; "
                                       "raise max_batches or num_envs, or lower min_layouts")
        if (self.viewer_eye is None) != (self.viewer_lookat is None):
            given, other = ("viewer_eye", "viewer_lookat") if self.viewer_lookat is None else ("viewer_lookat", "viewer_eye")
            raise RecordingConfigError(f"{given} is set but {other} is not; each requires the other, e.g. "
                                       "'viewer_eye=[4.0,4.0,6.3]' 'viewer_lookat=[0.0,0.0,0.5]'")
        for key in ("viewer_eye", "viewer_lookat"):
            value = getattr(self, key)
            if value is not None:
                vals = list(value)
                if len(vals) != 3 or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                             and math.isfinite(v) for v in vals):
                    raise RecordingConfigError(f"{key} must be three finite numbers [x, y, z] in metres, got {value!r}")
        if self.presets is not None and self.presets not in ACCEPTED_PRESETS:
            raise RecordingConfigError(f"presets={self.presets!r} is not accepted; use one of {list(ACCEPTED_PRESETS)} "
                                       "or leave it unset for the environment's preset")
        if not isinstance(self.render, bool):
            raise RecordingConfigError(f"render must be true or false, got {self.render!r}")
        if check_output and os.path.exists(self.output):
            raise RecordingConfigError(f"output '{self.output}' already exists; the recorder never overwrites a file, "
                                       "choose a new output path")
        validators = build_post_physics_validators(self.settle.validators)
        if not any(v.enabled for v in validators):
            raise RecordingConfigError("every post-physics check under settle.validators is disabled; at least one "
                                       "applicable check must remain enabled")
        return self

    @property
    def settle_validators(self) -> list[PostPhysicsPlacementValidator]:
        return build_post_physics_validators(self.settle.validators)

    @classmethod
    def from_config(cls, cfg: Any) -> "PlacementRecordingCfg":
        """Builds the dataclass from a Hydra/OmegaConf config (or a plain dict) with the keys above."""
        data = _to_container(cfg)
        if not isinstance(data, dict):
            raise RecordingConfigError(f"the recording configuration must be a mapping, got {type(data).__name__}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise RecordingConfigError(f"unknown recording keys {unknown}; accepted: {sorted(known)}")
        settle = dict(data.pop("settle", None) or {})
        unknown = sorted(set(settle) - {"num_steps", "validators"})
        if unknown:
            raise RecordingConfigError(f"unknown settle keys {['settle.' + k for k in unknown]}; accepted: "
                                       "settle.num_steps, settle.validators")
        settle_cfg = SettleCfg(**settle)
        if settle_cfg.validators is None:
            settle_cfg.validators = {}
        return cls(**data, settle=settle_cfg)


# ---- the spec's own settings (YAML ``recording:``) -----------------------------------------------------------------
def given_override_keys(overrides: Sequence[str]) -> frozenset[str]:
    """Dotted keys the Hydra ``overrides`` set or delete (``key=v``, ``+key=v``, ``++key=v``, ``~key``)."""
    keys = set()
    for item in overrides:
        key = str(item).split("=", 1)[0].strip().lstrip("~+").split("@", 1)[0]
        if key:
            keys.add(key)
    return frozenset(keys)


def _leaves(data: Mapping[str, Any], prefix: str = "") -> List[tuple]:
    """``(dotted path, value)`` of every leaf of nested mappings (a non-empty mapping is not a leaf)."""
    out: List[tuple] = []
    for key, value in data.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.extend(_leaves(value, path + "."))
        else:
            out.append((path, value))
    return out


def _is_given(path: str, given: frozenset) -> bool:
    """The command line gave ``path``, a key above it (``settle.validators.x={...}``) or a key below it."""
    return any(path == g or path.startswith(g + ".") or g.startswith(path + ".") for g in given)


def _default_given(cfg: "PlacementRecordingCfg") -> frozenset:
    """Without an override list (a cfg made in Python): every setting that differs from the default counts as given."""
    ours = dict(_leaves(_to_container(cfg)))
    defaults = dict(_leaves(_to_container(PlacementRecordingCfg(env_spec=cfg.env_spec, output=cfg.output))))
    return frozenset(k for k, v in ours.items() if k not in defaults or defaults[k] != v)


def _set_path(data: Dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    node = data
    for key in parents:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    node[last] = value


def merge_recording_settings(cfg: "PlacementRecordingCfg", spec_recording: Optional[Mapping[str, Any]],
                             overrides: Optional[Sequence[str]] = None) -> tuple["PlacementRecordingCfg", List[str]]:
    """The recording settings with the spec's ``recording:`` block applied: recorder defaults < the spec's block <
    the command line.

    Args:
        cfg: The composed settings (defaults plus the command line's overrides).
        spec_recording: The spec's ``recording:`` block (``SpecGraph.recording`` / ``IsaacLabArenaEnvironment
            .recording``): ``PlacementRecordingCfg`` keys in their nested shape, without env_spec / output.
        overrides: The Hydra overrides the user gave (their keys win over the spec, a key above or below a spec
            setting included); None: every setting of ``cfg`` that differs from its default counts as given.

    Returns:
        ``(merged cfg, ["dotted.key=value", ...])``: a new ``PlacementRecordingCfg`` and the settings taken from the
        spec, in the block's order.
    """
    if not spec_recording:
        return cfg, []
    given = given_override_keys(overrides) if overrides is not None else _default_given(cfg)
    data = _to_container(cfg)
    taken: List[str] = []
    for path, value in _leaves(_to_container(dict(spec_recording))):
        if path.split(".", 1)[0] in ("env_spec", "output"):
            raise RecordingConfigError(f"the spec's recording block cannot set '{path}'; give it on the command line")
        if _is_given(path, given):
            continue
        _set_path(data, path, copy.deepcopy(value))
        taken.append(f"{path}={_value_text(value)}")
    merged = PlacementRecordingCfg.from_config(data)
    return merged, taken


def _value_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_value_text(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}:{_value_text(v)}" for k, v in value.items()) + "}"
    return str(value)


def spec_settings_line(taken: Sequence[str]) -> Optional[str]:
    """The console line naming the settings taken from the spec (None when there are none)."""
    return f"[recording] from the spec: {', '.join(taken)}" if taken else None


def register_recording_config(name: str = RECORDING_CONFIG_NAME) -> str:
    """Stores ``PlacementRecordingCfg`` in Hydra's ConfigStore under ``name``; returns the name."""
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().store(name=name, node=PlacementRecordingCfg)
    return name


def _int(value, key: str, minimum: Optional[int]) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or (minimum is not None and value < minimum):
        bound = f" >= {minimum}" if minimum is not None else ""
        raise RecordingConfigError(f"{key} must be an integer{bound}, got {value!r}")
    return value


def _to_container(cfg: Any) -> Any:
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf
    except ImportError:  # pragma: no cover - omegaconf ships with hydra-core
        return cfg
    if isinstance(cfg, (DictConfig, ListConfig)):
        return OmegaConf.to_container(cfg, resolve=True)
    if dataclasses.is_dataclass(cfg) and not isinstance(cfg, type):
        return {f.name: _to_container(getattr(cfg, f.name)) for f in dataclasses.fields(cfg)}
    if isinstance(cfg, Mapping):
        return {k: _to_container(v) for k, v in cfg.items()}
    return cfg


@contextlib.contextmanager
def _working_directory_importable():
    """A validators module in the caller's working directory imports like one on PYTHONPATH (a script's own
    folder, not the working directory, is what Python puts on ``sys.path``)."""
    cwd = os.getcwd()
    added = cwd not in sys.path and "" not in sys.path
    if added:
        sys.path.append(cwd)
    try:
        yield
    finally:
        if added:
            with contextlib.suppress(ValueError):
                sys.path.remove(cwd)


def _import_class(target: str, key: str):
    module_name, _, cls_name = str(target).rpartition(".")
    if not module_name:
        raise RecordingConfigError(f"settle.validators.{key}._target_={target!r} must be 'module.Class'")
    try:
        with _working_directory_importable():
            module = importlib.import_module(module_name)
    except ImportError as err:
        raise RecordingConfigError(f"settle.validators.{key}._target_={target!r}: cannot import module "
                                   f"'{module_name}' ({err}); modules are looked up in the working directory "
                                   f"{os.getcwd()} and on PYTHONPATH") from None
    try:
        return getattr(module, cls_name)
    except AttributeError:
        raise RecordingConfigError(f"settle.validators.{key}._target_={target!r}: module '{module_name}' has no "
                                   f"'{cls_name}'") from None


def build_post_physics_validators(validators_cfg: Optional[Mapping[str, Any]], *, has_clutter: Optional[bool] = None,
                                  has_articulated_task_objects: Optional[bool] = None,
                                  clutter_supports: Optional[Mapping[str, Any]] = None
                                  ) -> list[PostPhysicsPlacementValidator]:
    """Builds the post-physics validators of ``settle.validators``.

    Args:
        validators_cfg: ``{key: settings}``: settings of a built-in check (key = its name), a mapping with
            ``_target_: module.Class`` (a ``PostPhysicsPlacementValidator`` subclass whose ``check`` equals
            the key), a validator instance, or None to drop the entry.
        has_clutter: When known: True adds ``support_containment`` with defaults if absent.
        has_articulated_task_objects: When known (with ``has_clutter``), the scene facts for the check that at
            least one enabled check applies.
        clutter_supports: ``{support_key: (local_min, local_max, flat_top)}`` of the ClutterOn supports; when
            given, ``minimum_resting_heights_m`` is checked against them (unknown keys, out-of-bounds heights).

    Raises:
        RecordingConfigError: an unknown check without ``_target_``, a key that differs from the class's
            ``check``, a class that is not a ``PostPhysicsPlacementValidator``, an unknown setting, a bad
            value, or no enabled check that applies to the scene.
    """
    cfg = _to_container(validators_cfg) if validators_cfg is not None else {}
    if not isinstance(cfg, dict):
        raise RecordingConfigError(f"settle.validators must map check names to settings, got {type(cfg).__name__}")
    out: list[PostPhysicsPlacementValidator] = []
    for key, value in cfg.items():
        key = str(key)
        if value is None:
            continue
        if isinstance(value, PostPhysicsPlacementValidator):
            if value.check != key:
                raise RecordingConfigError(f"settle.validators.{key}: the validator's check is '{value.check}'; the key "
                                           "must equal the check name")
            out.append(value)
            continue
        if not isinstance(value, dict):
            raise RecordingConfigError(f"settle.validators.{key} must be a mapping of settings, got {value!r}")
        settings = dict(value)
        target = settings.pop("_target_", None)
        if target is not None:
            cls = _import_class(target, key)
            if not (isinstance(cls, type) and issubclass(cls, PostPhysicsPlacementValidator)):
                raise RecordingConfigError(f"settle.validators.{key}._target_={target!r} is not a "
                                           "PostPhysicsPlacementValidator subclass")
            if cls.check != key:
                raise RecordingConfigError(f"settle.validators.{key}._target_={target!r}: the class's check is "
                                           f"'{cls.check}'; the configuration key must equal it (use "
                                           f"+settle.validators.{cls.check}._target_=...)")
        elif key in BUILTIN_POST_PHYSICS_VALIDATORS:
            cls = BUILTIN_POST_PHYSICS_VALIDATORS[key]
        else:
            raise RecordingConfigError(f"settle.validators.{key}: unknown post-physics check; built-in checks: "
                                       f"{sorted(BUILTIN_POST_PHYSICS_VALIDATORS)}; a custom check needs "
                                       f"+settle.validators.{key}._target_=module.Class")
        if dataclasses.is_dataclass(cls):
            accepted = [f.name for f in dataclasses.fields(cls) if f.init]
            unknown = sorted(set(settings) - set(accepted))
            if unknown:
                raise RecordingConfigError(f"settle.validators.{key}: unknown settings {unknown} for {cls.__name__}; "
                                           f"accepted: {accepted}")
        try:
            out.append(cls(**settings))
        except PostPhysicsConfigError as err:
            raise RecordingConfigError(str(err)) from None
        except (TypeError, ValueError) as err:
            raise RecordingConfigError(f"settle.validators.{key} ({cls.__name__}): {err}") from None
    if has_clutter and not any(v.check == SupportContainmentValidator.check for v in out):
        out.append(SupportContainmentValidator())
    if clutter_supports is not None:
        for v in out:
            if isinstance(v, SupportContainmentValidator):
                try:
                    v.check_supports(dict(clutter_supports))
                except PostPhysicsConfigError as err:
                    raise RecordingConfigError(str(err)) from None
    if has_clutter is not None and has_articulated_task_objects is not None:
        usable = [v.check for v in out if v.enabled and v.applies_to_scene(has_clutter, has_articulated_task_objects)]
        if not usable:
            raise RecordingConfigError(f"no enabled post-physics check applies to this scene (configured: "
                                       f"{[v.check for v in out]}, enabled: {[v.check for v in out if v.enabled]}); "
                                       "at least one applicable check must remain enabled")
    return out

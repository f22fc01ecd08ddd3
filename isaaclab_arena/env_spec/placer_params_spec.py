"""The ``placer_params:`` block: a nested override of ``ObjectPlacerParams`` by field name.

Nested blocks ``solver_params`` (``RelationSolverParams``) and ``reachability_config``
(``ReachabilityConfig``) override their own fields. Code-bearing values (``solver_params.strategies``,
``reachability_config.embodiment``) cannot come from YAML and are rejected; so is any unknown key. Values
are type-checked against the dataclass annotations, then the dataclasses' own checks run.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import types
import typing
from typing import Any

from isaaclab_arena.env_spec.blame import blame_parameter
from isaaclab_arena.env_spec.spec_issue import SpecIssue
from isaaclab_arena.env_spec.yaml_lines import line_of, start_line
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams, ReachabilityConfig
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams
from isaaclab_arena.utils.checks import short_repr
from isaaclab_arena.utils.plain_data import plain

#: Nested dataclass fields and their classes.
NESTED = {(ObjectPlacerParams, "solver_params"): RelationSolverParams,
          (ObjectPlacerParams, "reachability_config"): ReachabilityConfig}
#: Fields that hold code (loss strategy objects, an embodiment) and are set from Python only.
CODE_BEARING = {(RelationSolverParams, "strategies"): "loss strategy objects",
                (ReachabilityConfig, "embodiment"): "an embodiment object"}
#: Keys of the older ``placement_validators`` block, which map onto ``placer_params`` fields.
PLACEMENT_VALIDATOR_KEYS = ("enabled_checks", "required_checks", "debug_visualize", "debug_visualize_output_path")


def _type_text(hint) -> str:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_text(a) for a in typing.get_args(hint))
    if hint is type(None):
        return "null"
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return "one of " + ", ".join(repr(m.value) for m in hint)
    if origin is list:
        return f"a list of {_type_text(typing.get_args(hint)[0])}"
    if origin is tuple:
        return f"a list of {_type_text(typing.get_args(hint)[0])}"
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string"}.get(hint, str(hint))


def _matches(value, hint) -> bool:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, a) for a in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if hint is str:
        return isinstance(value, str)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return isinstance(value, hint) or (isinstance(value, str) and value.lower() in {m.value for m in hint})
    if origin in (list, tuple):
        inner = typing.get_args(hint)[0]
        return isinstance(value, (list, tuple)) and all(_matches(v, inner) for v in value)
    return False


def _parse_block(cls, raw: Any, path: str, line: int | None) -> Any:
    if isinstance(raw, cls):
        return raw
    if not isinstance(raw, dict):
        raise SpecIssue(f"'{path}' must be a mapping of {cls.__name__} field names to values, got {short_repr(raw)}",
                        where="placer_params", key=path, line=line)
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    kwargs = {}
    for key, value in raw.items():
        key_path, kline = f"{path}.{key}", line_of(raw, key) or line
        if key not in names:
            accepted = ", ".join(n for n in names if (cls, n) not in CODE_BEARING)
            raise SpecIssue(f"unknown key '{key_path}'; {cls.__name__} fields accepted here: {accepted}",
                            where="placer_params", key=key_path, line=kline)
        if (cls, key) in CODE_BEARING:
            raise SpecIssue(f"'{key_path}' holds {CODE_BEARING[(cls, key)]} and cannot be set from YAML; set it in "
                            f"Python on {cls.__name__}", where="placer_params", key=key_path, line=kline)
        nested = NESTED.get((cls, key))
        if nested is not None:
            kwargs[key] = _parse_block(nested, value, key_path, kline)
            continue
        if not _matches(value, hints[key]):
            raise SpecIssue(f"'{key_path}' must be {_type_text(hints[key])}, got "
                            f"{short_repr(value)}", where="placer_params",
                            key=key_path, line=kline)
        kwargs[key] = tuple(value) if typing.get_origin(hints[key]) is tuple else (
            list(value) if isinstance(value, list) else value)
    try:
        return cls(**kwargs)
    except (ValueError, TypeError) as err:
        key = blame_parameter(lambda given: cls(**given), kwargs, err)
        raise SpecIssue(str(err), where="placer_params", key=f"{path}.{key}" if key else path,
                        line=line_of(raw, key) if key else line) from None


def parse_placer_params(raw: Any, line: int | None = None) -> ObjectPlacerParams:
    """``ObjectPlacerParams`` with the fields of ``raw`` (a nested mapping) overriding the defaults."""
    if raw is None:
        return ObjectPlacerParams()
    return _parse_block(ObjectPlacerParams, raw, "placer_params", start_line(raw) or line)


def _diff(obj, default, path: str) -> dict:
    out = {}
    cls = type(obj)
    for f in dataclasses.fields(cls):
        mine, theirs = getattr(obj, f.name), getattr(default, f.name)
        if (cls, f.name) in NESTED:
            sub = _diff(mine, theirs, f"{path}.{f.name}")
            if sub:
                out[f.name] = sub
            continue
        if plain(mine) == plain(theirs):
            continue
        if (cls, f.name) in CODE_BEARING:
            raise SpecIssue(f"'{path}.{f.name}' holds {CODE_BEARING[(cls, f.name)]} that differ from the defaults; "
                            "they cannot be written to a YAML spec", where="placer_params", key=f"{path}.{f.name}")
        out[f.name] = plain(mine)
    return out


def placer_params_to_dict(params: ObjectPlacerParams) -> dict:
    """The fields of ``params`` that differ from ``ObjectPlacerParams()``, as a nested YAML mapping."""
    return _diff(params, ObjectPlacerParams(), "placer_params")

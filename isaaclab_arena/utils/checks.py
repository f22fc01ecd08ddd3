"""One validation helper for configs and parameters (assets, relations, params).

Every check takes the value, the ``owner`` (what the value belongs to, as the user would name it: ``"asset
'mug'"``, ``"On"``, ``"RelationSolverParams"``) and the ``field`` name, and returns the accepted value
(numbers as ``float``, enums as members, vectors as tuples). Anything else raises ``ValueError`` with one
line: ``"<owner>: <field> must be ..., got <value>"`` saying what would be accepted (``instance_of`` raises
``TypeError`` instead). No units are assumed:
the caller's field names carry them (``clearance_m``, ``yaw_rad``).
"""

from __future__ import annotations

import difflib
import math
import re
from enum import Enum
from typing import Any, TypeVar

E = TypeVar("E", bound=Enum)


#: Most characters of a value quoted in a message (``short_repr``).
QUOTE_LIMIT = 200


def short_repr(value: Any, limit: int = QUOTE_LIMIT) -> str:
    """``repr(value)`` cut to at most ``limit`` characters (``...`` marks the cut). Containers are walked only
    as far as the limit reaches, so a huge (or self-referencing) value costs no more than a short one."""
    parts: list[str] = []
    room = [limit + 1]

    def emit(text: str) -> None:
        parts.append(text)
        room[0] -= len(text)

    def walk(v: Any, depth: int) -> None:
        if room[0] <= 0:
            return
        if depth > 16:
            emit("...")
        elif isinstance(v, dict):
            emit("{")
            for i, (k, x) in enumerate(v.items()):
                if room[0] <= 0:
                    break
                emit(", " if i else "")
                walk(k, depth + 1)
                emit(": ")
                walk(x, depth + 1)
            emit("}")
        elif isinstance(v, (list, tuple)):
            emit("[" if isinstance(v, list) else "(")
            for i, x in enumerate(v):
                if room[0] <= 0:
                    break
                emit(", " if i else "")
                walk(x, depth + 1)
            emit("]" if isinstance(v, list) else ("," if len(v) == 1 else "") + ")")
        elif isinstance(v, (str, bytes)):
            emit(repr(v[:limit + 1]) if len(v) > limit else repr(v))
        else:
            text = repr(v)
            emit(text[:limit + 1])

    walk(value, 0)
    text = "".join(parts)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def number(value: Any, owner: str, field: str, *, optional: bool = False, minimum: float | None = None,
           maximum: float | None = None, strict_minimum: bool = False, strict_maximum: bool = False) -> float | None:
    """A finite number (bools refused) within the given bounds; None passes when ``optional``."""
    if value is None and optional:
        return None
    if not _is_number(value):
        raise ValueError(f"{owner}: {field} must be a number{' or None' if optional else ''}, got {short_repr(value)}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{owner}: {field} must be finite, got {short_repr(value)}")
    if minimum is not None and (value <= minimum if strict_minimum else value < minimum):
        raise ValueError(f"{owner}: {field} must be {'>' if strict_minimum else '>='} {minimum:g}, got {value:g}")
    if maximum is not None and (value >= maximum if strict_maximum else value > maximum):
        raise ValueError(f"{owner}: {field} must be {'<' if strict_maximum else '<='} {maximum:g}, got {value:g}")
    return value


def positive(value: Any, owner: str, field: str, *, optional: bool = False) -> float | None:
    """A finite number > 0; None passes when ``optional``."""
    return number(value, owner, field, optional=optional, minimum=0.0, strict_minimum=True)


def integer(value: Any, owner: str, field: str, *, optional: bool = False, minimum: int | None = None) -> int | None:
    """An ``int`` (bools and floats refused) >= ``minimum``; None passes when ``optional``."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{owner}: {field} must be an integer{' or None' if optional else ''}, got "
                         f"{short_repr(value)}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{owner}: {field} must be an integer >= {minimum}, got {value}")
    return int(value)


def flag(value: Any, owner: str, field: str) -> bool:
    """Exactly ``True`` or ``False`` (1, 0 and strings refused)."""
    if not isinstance(value, bool):
        raise ValueError(f"{owner}: {field} must be true or false, got {short_repr(value)}")
    return value


def enum_member(enum_cls: type[E], value: Any, owner: str, field: str, *, optional: bool = False) -> E | None:
    """A member of ``enum_cls``, or its value as a string in any case (``"BBOX"`` -> ``CollisionMode.BBOX``)."""
    if value is None and optional:
        return None
    if isinstance(value, enum_cls):
        return value
    if isinstance(value, str):
        for member in enum_cls:
            if str(member.value).lower() == value.lower():
                return member
    accepted = ", ".join(repr(m.value) for m in enum_cls)
    raise ValueError(f"{owner}: {field}={short_repr(value)} is not a valid {enum_cls.__name__}; accepted: {accepted}")


def vector(value: Any, owner: str, field: str, length: int, *, minimum: float | None = None,
           maximum: float | None = None, strict_minimum: bool = False) -> tuple[float, ...]:
    """A list or tuple of ``length`` finite numbers, each within the bounds (element errors name ``field[i]``)."""
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__len__") or len(value) != length:
        raise ValueError(f"{owner}: {field} must be a list of {length} numbers, got {short_repr(value)}")
    return tuple(number(v, owner, f"{field}[{i}]", minimum=minimum, maximum=maximum, strict_minimum=strict_minimum)
                 for i, v in enumerate(value))


def identifier(value: Any, owner: str, field: str) -> str:
    """A non-empty name of letters, digits and ``_`` (scene keys, registry names)."""
    if not isinstance(value, str) or not value or not value.replace("_", "a").isalnum():
        raise ValueError(f"{owner}: {field} must be a non-empty identifier (letters, digits, _), got "
                         f"{short_repr(value)}")
    return value


#: Asset ids (scene keys, USD prim names under the env prim): ASCII letters, digits and ``_``, not starting with
#: a digit, which is what ``Sdf.Path.IsValidIdentifier`` accepts (``my mug``, ``a/b``, ``mug-1``, ``1mug`` are not).
ASSET_ID_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ASSET_ID_RULE = "ASCII letters, digits and _, not starting with a digit (a USD prim name)"
#: Environment names (the gymnasium id is ``Isaac-Arena-<name>``, the output folders carry it): ASCII letters,
#: digits, ``_`` and ``-``, starting with a letter. Gymnasium refuses spaces; ``/`` would split the id into a
#: namespace and ``.`` / ``:`` mean other things in an id, so they are refused too.
ENV_NAME_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
ENV_NAME_RULE = "ASCII letters, digits, _ and -, starting with a letter (it becomes part of a gymnasium id)"


def asset_id_problem(value: Any) -> str | None:
    """Why ``value`` cannot be an asset id (``must be ..., got ...``), else None."""
    if isinstance(value, str) and ASSET_ID_PATTERN.fullmatch(value):
        return None
    return f"must be {ASSET_ID_RULE}, got {short_repr(value)}"


def env_name_problem(value: Any) -> str | None:
    """Why ``value`` cannot be an environment name (``must be ..., got ...``), else None."""
    if isinstance(value, str) and ENV_NAME_PATTERN.fullmatch(value):
        return None
    return f"must be {ENV_NAME_RULE}, got {short_repr(value)}"


def asset_id(value: Any, owner: str, field: str) -> str:
    """An asset id (``ASSET_ID_PATTERN``)."""
    problem = asset_id_problem(value)
    if problem is not None:
        raise ValueError(f"{owner}: {field} {problem}")
    return value


def env_name(value: Any, owner: str, field: str) -> str:
    """An environment name (``ENV_NAME_PATTERN``)."""
    problem = env_name_problem(value)
    if problem is not None:
        raise ValueError(f"{owner}: {field} {problem}")
    return value


def instance_of(value: Any, cls: type | tuple[type, ...], owner: str, field: str, what: str, *,
                optional: bool = False) -> Any:
    """``value`` when it is an instance of ``cls`` (``what`` says it in words); None passes when ``optional``.

    The one check that raises ``TypeError``: it guards Python API objects (a ``Pose``, an asset), which YAML
    never produces.
    """
    if value is None and optional:
        return None
    if not isinstance(value, cls):
        raise TypeError(f"{owner}: {field} must be {what}{' or None' if optional else ''}, got {short_repr(value)}")
    return value


def member_list(objects: Any, owner: str) -> list:
    """``objects`` as a non-empty list (an object set's or pool's members); ``TypeError`` / ``ValueError`` naming
    ``owner`` otherwise. The members' own types are checked by the caller."""
    if isinstance(objects, (str, bytes)) or not hasattr(objects, "__iter__"):
        raise TypeError(f"{owner}: objects must be a list of Objects, got {objects!r}")
    objects = list(objects)
    if not objects:
        raise ValueError(f"{owner}: objects must hold at least one member")
    return objects


def did_you_mean(name: Any, known) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``known`` to ``name``, or ``""`` when none is close."""
    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""

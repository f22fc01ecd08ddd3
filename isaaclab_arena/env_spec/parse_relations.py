"""Parsing the ``relations:`` list of a spec into ``RelationNode`` entries.

An entry is ``{id?, kind, subject, reference?, params?}``. Kinds come from ``RELATION_KINDS`` (plus
``RELATION_KIND_ALIASES``: ``position_limits`` is ``position_limits_box``). Parameters may sit under
``params:`` or directly in the entry; enum parameters take their string values (``side: positive_x``,
``axis: z``). ``reference: null`` is the same as no reference. ``id`` (optional, unique among the
relations) names the relation in every message about it. Parameter values are checked when the relation
is built (``build.py``), by the relation's own constructor.
"""

from __future__ import annotations

import inspect
from typing import Any

from isaaclab_arena.env_spec.nodes import RelationNode
from isaaclab_arena.env_spec.spec_issue import SpecIssue
from isaaclab_arena.env_spec.yaml_lines import line_of, line_text, start_line
from isaaclab_arena.relations.relations import (
    RELATION_KIND_ALIASES,
    RELATION_KINDS,
    Relation,
    RelationBase,
)
from isaaclab_arena.utils.checks import did_you_mean, short_repr
from isaaclab_arena.utils.plain_data import plain

ENTRY_KEYS = ("id", "kind", "subject", "reference", "params")
REQUIRED = inspect.Parameter.empty


def known_kinds_text() -> str:
    aliases = ", ".join(f"{a} (= {k})" for a, k in RELATION_KIND_ALIASES.items())
    return f"{', '.join(sorted(RELATION_KINDS))}; aliases: {aliases}"


def relation_parameters(cls: type[RelationBase]) -> dict[str, Any]:
    """Constructor parameters of a relation class other than ``parent``: name -> default (``REQUIRED``
    for parameters without one)."""
    if cls.__init__ is object.__init__:
        return {}
    out = {}
    for i, p in enumerate(inspect.signature(cls.__init__).parameters.values()):
        if i == 0 or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.name == "parent" and issubclass(cls, Relation):
            continue
        out[p.name] = p.default
    return out


def params_text(accepted: dict) -> str:
    """``a (required), b=0.01, ...`` for the parameters of a relation class."""
    if not accepted:
        return "none"
    return ", ".join(f"{n} (required)" if d is REQUIRED else f"{n}={short_repr(plain(d))}" for n, d in accepted.items())


def resolve_kind(kind: Any, *, where: str, line: int | None) -> type[RelationBase]:
    """The relation class of YAML ``kind`` (aliases resolved)."""
    if kind is True:
        raise SpecIssue("kind is the boolean true: YAML 1.1 reads an unquoted on/yes/true as a boolean; "
                        "quote it: kind: 'on'", where=where, key="kind", line=line)
    if kind is False:
        raise SpecIssue("kind is the boolean false: YAML 1.1 reads an unquoted off/no/false as a boolean; quote the "
                        f"kind. Accepted kinds: {known_kinds_text()}", where=where, key="kind", line=line)
    if not isinstance(kind, str) or not kind:
        raise SpecIssue(f"kind must be a relation kind string, got {short_repr(kind)}; accepted kinds: "
                        f"{known_kinds_text()}",
                        where=where, key="kind", line=line)
    canonical = RELATION_KIND_ALIASES.get(kind, kind)
    if canonical not in RELATION_KINDS:
        hint = did_you_mean(kind, list(RELATION_KINDS) + list(RELATION_KIND_ALIASES))
        raise SpecIssue(f"unknown relation kind {short_repr(kind)}{hint}; accepted kinds: {known_kinds_text()}",
                        where=where, key="kind", line=line)
    return RELATION_KINDS[canonical]


def _entry_where(label: str, raw: dict, kind: str | None = None) -> str:
    parts = [f"id '{raw['id']}'"] if isinstance(raw.get("id"), str) else []
    if kind is not None:
        parts.append(f"kind '{kind}'")
    parts += [f"{k} '{raw[k]}'" for k in ("subject", "reference") if isinstance(raw.get(k), str)]
    return f"{label} ({', '.join(parts)})" if parts else label


def _relation_id(raw: dict, where: str, line: int | None) -> str | None:
    if "id" not in raw or raw["id"] is None:
        return None
    value = raw["id"]
    if not isinstance(value, str) or not value.strip():
        raise SpecIssue(f"'id' of a relation must be a non-empty string naming it, got "
                        f"{short_repr(value)}", where=where,
                        key="id", line=line_of(raw, "id") or line)
    return value


def _parameters(cls, raw: dict, where: str, line: int | None) -> tuple[dict, dict]:
    """Given parameter values and their lines (``params.<name>``), from ``params:`` and the entry itself."""
    accepted = relation_parameters(cls)
    params: dict[str, Any] = {}
    lines: dict[str, int | None] = {}
    nested = raw.get("params")
    if nested is not None and not isinstance(nested, dict):
        raise SpecIssue(f"'params' must be a mapping of parameter names to values, got "
                        f"{short_repr(nested)}", where=where,
                        key="params", line=line_of(raw, "params"))
    inline = {k: v for k, v in raw.items() if k not in ENTRY_KEYS}
    for prefix, mapping, lines_from in (("params.", nested or {}, nested), ("", inline, raw)):
        for name, value in mapping.items():
            key, pline = f"{prefix}{name}", line_of(lines_from, name) or line
            if not isinstance(name, str):
                raise SpecIssue(f"parameter name {short_repr(name)} is not a string (quote "
                                f"it)", where=where, key=key, line=pline)
            if name not in accepted:
                raise SpecIssue(f"unknown parameter '{name}'{did_you_mean(name, accepted)} for {cls.__name__}; "
                                f"accepted parameters: "
                                f"{params_text(accepted)}", where=where, key=key, line=pline)
            if name in params:
                raise SpecIssue(f"parameter '{name}' is given twice (inline and under params)", where=where, key=key,
                                line=pline)
            params[name] = value
            lines[f"params.{name}"] = pline
    missing = [n for n, d in accepted.items() if d is REQUIRED and n not in params]
    if missing:
        raise SpecIssue(f"{cls.__name__} needs parameter '{missing[0]}'; accepted parameters: "
                        f"{params_text(accepted)}", where=where, key=f"params.{missing[0]}", line=line)
    return params, lines


def parse_relation_entry(raw: Any, index: int, list_line: int | None) -> RelationNode:
    """Checks the shape of one entry (id, kind, subject, reference, parameter names); the assets it names
    are resolved when it is built."""
    label = f"relations[{index}]"
    if not isinstance(raw, dict):
        raise SpecIssue(f"each relation must be a mapping {{id?, kind, subject, reference?, params?}}, got "
                        f"{short_repr(raw)}",
                        where=label, line=list_line)
    line = start_line(raw) or list_line
    for key in raw:
        if not isinstance(key, str):
            raise SpecIssue(f"key {short_repr(key)} is not a string (YAML reads unquoted on/off/yes/no as booleans; "
                            f"quote it)",
                            where=label, line=line_of(raw, key))
    relation_id = _relation_id(raw, label, line)
    if "kind" not in raw:
        raise SpecIssue(f"missing 'kind'; accepted kinds: {known_kinds_text()}", where=_entry_where(label, raw),
                        line=line)
    cls = resolve_kind(raw["kind"], where=_entry_where(label, raw), line=line_of(raw, "kind"))
    where = _entry_where(label, {k: raw[k] for k in ("id", "subject") if k in raw}, cls.yaml_kind)
    subject = raw.get("subject")
    if not isinstance(subject, str) or not subject:
        raise SpecIssue(f"'subject' must name an asset id, got {short_repr(subject)}", where=where, key="subject",
                        line=line_of(raw, "subject") if "subject" in raw else line)
    reference = raw.get("reference")
    if issubclass(cls, Relation):
        if reference is None:
            raise SpecIssue(f"kind '{cls.yaml_kind}' relates two assets and needs a 'reference' (the asset id it "
                            "refers to)", where=where, key="reference", line=line)
        if not isinstance(reference, str) or not reference:
            raise SpecIssue(f"'reference' must name an asset id, got "
                            f"{short_repr(reference)}", where=where, key="reference",
                            line=line_of(raw, "reference"))
        where = _entry_where(label, raw, cls.yaml_kind)
    elif reference is not None:
        raise SpecIssue(f"Relation kind '{cls.yaml_kind}' must not define relation.reference (it applies to its "
                        "subject only; reference: null is accepted)", where=where, key="reference",
                        line=line_of(raw, "reference"))
    params, param_lines = _parameters(cls, raw, where, line)
    key_lines = {k: line_of(raw, k) for k in ("id", "kind", "subject", "reference") if k in raw}
    key_lines.update(param_lines)
    return RelationNode(cls.yaml_kind, subject, reference if issubclass(cls, Relation) else None, params,
                        relation_id, line=line, key_lines=key_lines, label=label)


def parse_relations(entries: list, list_line: int | None) -> list[RelationNode]:
    """Every entry of the ``relations:`` list; relation ids must be unique."""
    nodes = [parse_relation_entry(raw, i, line_of(entries, i) or list_line) for i, raw in enumerate(entries)]
    seen: dict[str, RelationNode] = {}
    for node in nodes:
        if node.id is None:
            continue
        first = seen.get(node.id)
        if first is not None:
            at = f" ({line_text(first.line, node.line)})" if first.line else ""
            raise SpecIssue(f"duplicate relation id '{node.id}': already used by {first.label}{at}; relation ids "
                            "name one relation each", where=node.where, key="id", line=node.key_line("id"))
        seen[node.id] = node
    return nodes

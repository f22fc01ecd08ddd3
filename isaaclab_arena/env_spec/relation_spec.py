"""The ``relations:`` list of a spec: entries ``{kind, subject, reference?, params?}`` <-> relation objects.

Kinds come from ``RELATION_KINDS`` (plus ``RELATION_KIND_ALIASES``: ``position_limits`` is
``position_limits_box``). Parameters may sit under ``params:`` or directly in the entry. Enum
parameters take their string values (``side: positive_x``, ``axis: z``). Relation objects are made with
their own constructors, so their range checks apply, and attached with ``add_relation``.
"""

from __future__ import annotations

import difflib
import enum
import inspect
import re
from dataclasses import dataclass, field
from typing import Any

from isaaclab_arena.env_spec.spec_issue import SpecIssue
from isaaclab_arena.env_spec.yaml_lines import line_of, start_line
from isaaclab_arena.relations.relations import RELATION_KIND_ALIASES, RELATION_KINDS, Relation, RelationBase

ENTRY_KEYS = ("kind", "subject", "reference", "params")
_EMPTY = inspect.Parameter.empty


@dataclass
class RelationNode:
    """One ``relations:`` entry. ``kind`` is canonical (aliases resolved); ``params`` hold only given values."""

    kind: str
    subject: str
    reference: str | None = None
    params: dict = field(default_factory=dict)
    line: int | None = field(default=None, compare=False, repr=False)
    key_lines: dict = field(default_factory=dict, compare=False, repr=False)
    #: Lines of the entry's own keys (kind, subject, reference).
    field_lines: dict = field(default_factory=dict, compare=False, repr=False)

    def describe(self, index: int | None = None) -> str:
        head = f"relations[{index}] " if index is not None else "relation "
        ref = f", reference '{self.reference}'" if self.reference is not None else ""
        return f"{head}(kind '{self.kind}', subject '{self.subject}'{ref})"

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"kind": self.kind, "subject": self.subject}
        if self.reference is not None:
            out["reference"] = self.reference
        if self.params:
            out["params"] = _plain(self.params)
        return out


def _plain(value):
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def known_kinds_text() -> str:
    aliases = ", ".join(f"{a} (= {k})" for a, k in RELATION_KIND_ALIASES.items())
    return f"{', '.join(sorted(RELATION_KINDS))}; aliases: {aliases}"


def relation_parameters(cls: type[RelationBase]) -> dict[str, Any]:
    """Constructor parameters of a relation class other than ``parent``: name -> default (``_EMPTY`` if required)."""
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


def resolve_kind(kind: Any, *, where: str, line: int | None) -> type[RelationBase]:
    if kind is True:
        raise SpecIssue("kind is the boolean true: YAML 1.1 reads an unquoted on/yes/true as a boolean; "
                        "quote it: kind: 'on'", where=where, key="kind", line=line)
    if kind is False:
        raise SpecIssue("kind is the boolean false: YAML 1.1 reads an unquoted off/no/false as a boolean; quote the "
                        f"kind. Accepted kinds: {known_kinds_text()}", where=where, key="kind", line=line)
    if not isinstance(kind, str) or not kind:
        raise SpecIssue(f"kind must be a relation kind string, got {kind!r}; accepted kinds: {known_kinds_text()}",
                        where=where, key="kind", line=line)
    canonical = RELATION_KIND_ALIASES.get(kind, kind)
    if canonical not in RELATION_KINDS:
        close = difflib.get_close_matches(kind, list(RELATION_KINDS) + list(RELATION_KIND_ALIASES), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise SpecIssue(f"unknown relation kind {kind!r}{hint}; accepted kinds: {known_kinds_text()}",
                        where=where, key="kind", line=line)
    return RELATION_KINDS[canonical]


def parse_relation_entry(raw: Any, index: int, list_line: int | None) -> RelationNode:
    """Checks the shape of one entry (kind, subject, reference, parameter names); assets are resolved later."""
    where = f"relations[{index}]"
    if not isinstance(raw, dict):
        raise SpecIssue(f"each relation must be a mapping {{kind, subject, reference?, params?}}, got {raw!r}",
                        where=where, line=list_line)
    line = start_line(raw) or list_line
    for key in raw:
        if not isinstance(key, str):
            raise SpecIssue(f"key {key!r} is not a string (YAML reads unquoted on/off/yes/no as booleans; quote it)",
                            where=where, line=line_of(raw, key))
    named = [f"{k} '{raw[k]}'" for k in ("subject", "reference") if isinstance(raw.get(k), str)]
    if named:
        where = f"relations[{index}] ({', '.join(named)})"
    if "kind" not in raw:
        raise SpecIssue(f"missing 'kind'; accepted kinds: {known_kinds_text()}", where=where, line=line)
    cls = resolve_kind(raw["kind"], where=where, line=line_of(raw, "kind"))
    kind = cls.yaml_kind
    subject = raw.get("subject")
    where = f"relations[{index}] (kind '{kind}'" + (f", subject '{subject}')" if isinstance(subject, str) else ")")
    if not isinstance(subject, str) or not subject:
        raise SpecIssue(f"'subject' must name an asset id, got {subject!r}", where=where, key="subject",
                        line=line_of(raw, "subject") if "subject" in raw else line)
    reference = raw.get("reference")
    binary = issubclass(cls, Relation)
    if binary:
        if reference is None:
            raise SpecIssue(f"kind '{kind}' relates two assets and needs a 'reference' (the asset id it refers to)",
                            where=where, key="reference", line=line)
        if not isinstance(reference, str) or not reference:
            raise SpecIssue(f"'reference' must name an asset id, got {reference!r}", where=where, key="reference",
                            line=line_of(raw, "reference"))
        where = where[:-1] + f", reference '{reference}')"
    elif "reference" in raw:
        raise SpecIssue(f"Relation kind '{kind}' must not define relation.reference (it applies to its subject only)",
                        where=where, key="reference", line=line_of(raw, "reference"))

    accepted = relation_parameters(cls)
    params: dict[str, Any] = {}
    key_lines: dict[str, int | None] = {}
    nested = raw.get("params")
    if nested is not None and not isinstance(nested, dict):
        raise SpecIssue(f"'params' must be a mapping of parameter names to values, got {nested!r}", where=where,
                        key="params", line=line_of(raw, "params"))
    sources = [("params.", nested or {}), ("", {k: v for k, v in raw.items() if k not in ENTRY_KEYS})]
    for prefix, mapping in sources:
        for name, value in mapping.items():
            key, pline = f"{prefix}{name}", line_of(mapping, name) or line
            if not isinstance(name, str):
                raise SpecIssue(f"parameter name {name!r} is not a string (quote it)", where=where, key=key, line=pline)
            if name not in accepted:
                raise SpecIssue(_unknown_param_text(cls, name, accepted), where=where, key=key, line=pline)
            if name in params:
                raise SpecIssue(f"parameter '{name}' is given twice (inline and under params)", where=where, key=key,
                                line=pline)
            params[name] = value
            key_lines[name] = pline
    missing = [n for n, d in accepted.items() if d is _EMPTY and n not in params]
    if missing:
        raise SpecIssue(f"{cls.__name__} needs parameter '{missing[0]}'; accepted parameters: "
                        f"{_params_text(accepted)}", where=where, key=f"params.{missing[0]}", line=line)
    field_lines = {k: line_of(raw, k) for k in ("kind", "subject", "reference") if k in raw}
    return RelationNode(kind, subject, reference if binary else None, params, line, key_lines, field_lines)


def _params_text(accepted: dict) -> str:
    if not accepted:
        return "none"
    return ", ".join(f"{n} (required)" if d is _EMPTY else f"{n}={_plain(d)!r}" for n, d in accepted.items())


def _unknown_param_text(cls, name: str, accepted: dict) -> str:
    close = difflib.get_close_matches(name, list(accepted), n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return f"unknown parameter '{name}'{hint} for {cls.__name__}; accepted parameters: {_params_text(accepted)}"


def build_relation(node: RelationNode, index: int, assets: dict) -> tuple[Any, RelationBase]:
    """Makes the relation of ``node`` and attaches it to its subject. Returns ``(subject, relation)``."""
    where = node.describe(index)
    cls = RELATION_KINDS[node.kind]
    known = ", ".join(sorted(assets)) or "none"
    subject = assets.get(node.subject)
    if subject is None:
        raise SpecIssue(f"unknown subject '{node.subject}'; asset ids defined in this spec: {known}", where=where,
                        key="subject", line=node.field_lines.get("subject") or node.line)
    args = []
    if node.reference is not None:
        if node.reference == node.subject:
            raise SpecIssue(f"a relation to itself: subject and reference are both '{node.subject}'; a relation needs "
                            "another asset as its reference", where=where, key="reference",
                            line=node.field_lines.get("reference") or node.line)
        parent = assets.get(node.reference)
        if parent is None:
            raise SpecIssue(f"unknown reference '{node.reference}'; asset ids defined in this spec: {known}",
                            where=where, key="reference", line=node.field_lines.get("reference") or node.line)
        args.append(parent)
    try:
        relation = cls(*args, **node.params)
    except (ValueError, TypeError) as err:
        name = _mentioned(str(err), node.params)
        raise SpecIssue(str(err), where=where, key=f"params.{name}" if name else None,
                        line=node.key_lines.get(name, node.line) if name else node.line) from None
    try:
        subject.add_relation(relation)
    except (ValueError, TypeError) as err:
        raise SpecIssue(str(err), where=where, line=node.line) from None
    return subject, relation


def _mentioned(message: str, params: dict) -> str | None:
    message = message.split("; accepted")[0]
    for name in sorted(params, key=len, reverse=True):
        if re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", message):
            return name
    return None


def relation_to_node(subject_name: str, relation: RelationBase) -> RelationNode:
    """The spec entry of ``relation`` on ``subject_name``; only parameters that differ from the defaults."""
    cls = type(relation)
    if RELATION_KINDS.get(cls.yaml_kind) is not cls:
        raise SpecIssue(f"{cls.__name__} is not a relation kind YAML knows (kinds: {known_kinds_text()}), so it "
                        "cannot be written to a spec", where=f"asset '{subject_name}'")
    accepted = relation_parameters(cls)
    params = {}
    for name, value in relation.params().items():
        if name not in accepted:
            continue
        default = accepted[name]
        if default is not _EMPTY and _plain(default) == _plain(value):
            continue
        params[name] = _plain(value)
    reference = relation.parent.name if relation.parent is not None else None
    return RelationNode(cls.yaml_kind, subject_name, reference, params)

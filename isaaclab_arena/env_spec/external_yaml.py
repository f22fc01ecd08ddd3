"""Reading spec files and merging ``external_yaml`` includes (a scene file merged into a task file).

``external_yaml`` is a path (or a list of paths) of spec files, relative to the including file's folder
(absolute paths are taken as they are; for a spec given as a dict, relative to the working directory).
Each referenced file is read, its own ``external_yaml`` merged first (nested includes), then its top-level
keys are merged *under* the including file's keys:

* node lists (``objects``, ``object_sets``, ``object_references``, ``relations``, ``cli_override_specs``)
  are concatenated: included files' entries first (in the order listed), then the including file's;
* every other key (scalars such as ``env_name`` / ``num_envs``, mappings such as ``background`` /
  ``placer_params`` / ``env_cfg_override``) is taken whole from the including file when it sets it; between
  several included files the later one wins.

An id defined twice across the files is refused by the spec's duplicate-id check, which names both files and
lines. A file that includes itself, directly or through others, is refused naming the chain. Every line
recorded in merged data is a ``SourceLine`` naming its own file, so errors point into the right file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from isaaclab_arena.env_spec.spec_issue import SpecIssue
from isaaclab_arena.env_spec.yaml_lines import LineDict, LineList, line_of, load_yaml_file, start_line
from isaaclab_arena.utils.checks import short_repr

#: Top-level keys whose lists are concatenated across included files.
LIST_KEYS = ("objects", "object_sets", "object_references", "relations", "cli_override_specs")


@dataclass
class Includes:
    """What ``merge_external_yaml`` merged in.

    Attributes:
        paths: Absolute paths of the files the spec itself lists in ``external_yaml`` (in order).
        sources: Source names (as they appear in error messages and ``SourceLine.source``) of every file merged
            in, nested includes too.
    """

    paths: list[str] = field(default_factory=list)
    sources: set[str] = field(default_factory=set)


def read_included_file(path: str, from_line: int | None) -> Any:
    """Parsed YAML (``SourceLine`` lines naming ``path``) of an included spec file.

    Raises ``SpecIssue``: at ``from_line`` (the including file's ``external_yaml`` entry) when the file is
    missing or not a file, else at the included file's own line (not UTF-8, invalid YAML).
    """
    if not os.path.exists(path):
        raise SpecIssue(f"included spec file '{path}' does not exist (relative paths are taken from the including "
                        "file's folder)", key="external_yaml", line=from_line)
    if not os.path.isfile(path):
        raise SpecIssue(f"included spec file '{path}' is not a file; give the path of a .yaml spec",
                        key="external_yaml", line=from_line)
    return load_yaml_file(path)


def _refs(data: dict) -> list[tuple[str, int | None]]:
    raw = data.get("external_yaml")
    kline = line_of(data, "external_yaml")
    if raw is None:
        return []
    items = [raw] if isinstance(raw, str) else raw
    if not isinstance(items, list) or not items:
        raise SpecIssue(f"'external_yaml' must be a spec file path or a non-empty list of paths, got {short_repr(raw)}",
                        key="external_yaml", line=kline)
    out = []
    for i, item in enumerate(items):
        line = line_of(items, i) if items is raw else kline
        if not isinstance(item, str) or not item.strip():
            raise SpecIssue(f"external_yaml[{i}] must be a spec file path, got {short_repr(item)}", key="external_yaml",
                            line=line or kline)
        out.append((item, line or kline))
    return out


def _resolve(ref: str, source: str) -> str:
    if os.path.isabs(ref):
        return os.path.normpath(ref)
    folder = os.path.dirname(source) if source != "<dict>" else ""
    return os.path.normpath(os.path.join(folder, ref))


def _merge_into(dst: LineDict, src: dict) -> None:
    """``src``'s keys over ``dst``'s: lists of ``LIST_KEYS`` concatenated, anything else replaced."""
    for key, value in src.items():
        kline = line_of(src, key)
        if key in LIST_KEYS:
            if value is not None and not isinstance(value, list):
                raise SpecIssue(f"'{key}' must be a list, got {short_repr(value)}", where=str(key), line=kline)
            old = dst.get(key)
            if isinstance(old, list):
                merged = LineList(list(old) + list(value or []))
                merged.line = start_line(old)
                merged.item_lines = [line_of(old, i) for i in range(len(old))] + \
                                    [line_of(value, i) for i in range(len(value or []))]
                dst[key] = merged
                if key not in dst.key_lines:
                    dst.key_lines[key] = kline
                continue
        dst[key] = value
        dst.key_lines[key] = kline


def merge_external_yaml(data: Any, source: str, _chain: tuple[tuple[str, str], ...] = ()) -> tuple[Any, Includes]:
    """``data`` (a spec mapping read from ``source``) with its ``external_yaml`` files merged in (see the module
    docstring); the result has no ``external_yaml`` key. Raises ``SpecIssue`` naming the file and line."""
    includes = Includes()
    if not isinstance(data, dict) or "external_yaml" not in data:
        return data, includes
    if not _chain and source != "<dict>":
        _chain = ((os.path.realpath(source), source),)
    merged = LineDict()
    merged.line = start_line(data)
    for ref, line in _refs(data):
        path = _resolve(ref, source)
        real = os.path.realpath(path)
        if real in (c[0] for c in _chain):
            names = " -> ".join([c[1] for c in _chain] + [path])
            raise SpecIssue(f"external_yaml cycle: {names}; a spec cannot include itself, directly or through "
                            "other files", key="external_yaml", line=line)
        sub = read_included_file(path, line)
        if not isinstance(sub, dict):
            raise SpecIssue(f"included spec file '{path}' is not a spec: its top level must be a mapping, got "
                            f"{type(sub).__name__}", key="external_yaml", line=line)
        sub, nested = merge_external_yaml(sub, path, _chain + ((real, path),))
        includes.paths.append(os.path.abspath(path))
        includes.sources |= {path} | nested.sources
        _merge_into(merged, sub)
    own = {k: v for k, v in data.items() if k != "external_yaml"}
    own_dict = LineDict(own)
    own_dict.key_lines = {k: line_of(data, k) for k in own}
    _merge_into(merged, own_dict)
    return merged, includes

"""YAML loading that remembers where every mapping, key and list item was written (1-based lines).

``load_yaml_with_lines(text)`` returns plain Python data whose mappings are ``LineDict`` and whose lists
are ``LineList``: ordinary ``dict`` / ``list`` subclasses that also carry ``line`` (where the node starts),
``key_lines`` (key -> line of the key) and ``item_lines`` (line of each item). Duplicate keys in one
mapping are an error (plain PyYAML silently keeps the last one). Scalars follow YAML 1.1 as PyYAML does,
so an unquoted ``on`` / ``off`` / ``yes`` / ``no`` reads as a boolean.

Given a ``source`` (the file name), every recorded line is a ``SourceLine``: an ``int`` that also knows the
file it was read from, so data merged from several files (``external_yaml``) still names the right file.
"""

from __future__ import annotations

import math
from typing import Any, Iterator

import yaml
from yaml.constructor import ConstructorError

from isaaclab_arena.env_spec.spec_issue import SpecIssue
from isaaclab_arena.utils.checks import short_repr


class SourceLine(int):
    """A 1-based line number that remembers its file (``source``); compares and prints as the plain int."""

    source: str | None

    def __new__(cls, line: int, source: str | None = None):
        obj = super().__new__(cls, line)
        obj.source = source
        return obj

    def __reduce__(self):
        return SourceLine, (int(self), self.source)


def source_of(line) -> str | None:
    """The file a line number was read from (a ``SourceLine``), else None."""
    return getattr(line, "source", None)


class LineDict(dict):
    """A mapping with ``line`` (start of the mapping) and ``key_lines`` (key -> line of that key)."""

    line: int | None = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.key_lines: dict = {}

    def line_of(self, key) -> int | None:
        return self.key_lines.get(key, self.line)


class LineList(list):
    """A list with ``line`` (start of the list) and ``item_lines`` (line of each item)."""

    line: int | None = None

    def __init__(self, *args):
        super().__init__(*args)
        self.item_lines: list[int] = []

    def line_of(self, index: int) -> int | None:
        return self.item_lines[index] if 0 <= index < len(self.item_lines) else self.line


class _LineLoader(yaml.SafeLoader):
    """SafeLoader whose mappings and sequences record their lines (``SourceLine`` when ``source`` is set)."""

    source: str | None = None

    def mark_line(self, mark) -> int:
        return SourceLine(mark.line + 1, self.source) if self.source is not None else mark.line + 1


def _construct_map(loader: _LineLoader, node: yaml.MappingNode) -> Iterator[LineDict]:
    data = LineDict()
    data.line = loader.mark_line(node.start_mark)
    yield data
    loader.flatten_mapping(node)
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise ConstructorError("while constructing a mapping", node.start_mark,
                                   "found an unhashable key", key_node.start_mark) from None
        if key in data:
            raise ConstructorError("while constructing a mapping", node.start_mark,
                                   f"found duplicate key {short_repr(key)} (first at line {data.key_lines[key]})",
                                   key_node.start_mark)
        data[key] = loader.construct_object(value_node, deep=True)
        data.key_lines[key] = loader.mark_line(key_node.start_mark)


def _construct_seq(loader: _LineLoader, node: yaml.SequenceNode) -> Iterator[LineList]:
    data = LineList()
    data.line = loader.mark_line(node.start_mark)
    data.item_lines = [loader.mark_line(child.start_mark) for child in node.value]
    yield data
    data.extend(loader.construct_object(child, deep=True) for child in node.value)


_LineLoader.add_constructor("tag:yaml.org,2002:map", _construct_map)
_LineLoader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)


#: Most YAML nodes (mappings, lists, scalars; keys included) one document may hold with every alias (``*name``)
#: expanded. A spec holds a few hundred; a few lines of nested aliases can expand to billions
#: ("billion laughs"), which is refused before anything walks the data.
MAX_YAML_NODES = 100_000


class YamlTooLargeError(yaml.YAMLError):
    """A document whose aliases expand to more than ``MAX_YAML_NODES`` nodes, or refer to themselves."""

    def __init__(self, problem: str, problem_mark):
        super().__init__(problem)
        self.problem, self.problem_mark, self.context = problem, problem_mark, None


def check_node_budget(root: yaml.Node | None, limit: int = MAX_YAML_NODES) -> None:
    """Raises ``YamlTooLargeError`` when ``root`` expands (aliases followed) to more than ``limit`` nodes or an
    alias refers to a node that contains it. Each distinct node is visited once (sizes are memoised), so the
    check costs the size of the text, not of the expansion. The mark is that of the first top-level entry whose
    expansion crosses the limit."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            raise YamlTooLargeError("an alias refers to a node that contains it (a recursive alias); specs are "
                                    "trees", node.start_mark)
        open_nodes.add(key)
        total = 1
        if isinstance(node, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            total += sum(size(child) for child in node.value)
        open_nodes.discard(key)
        sizes[key] = min(total, limit + 1)  # capped: nothing above the limit needs its exact size
        return sizes[key]

    if root is None or size(root) <= limit:
        return
    mark, running = root.start_mark, 1
    entries = list(root.value) if isinstance(root, yaml.MappingNode) else \
        [(c, c) for c in root.value] if isinstance(root, yaml.SequenceNode) else []
    for first, second in entries:  # a mapping entry is marked at its key
        running += size(first) + (size(second) if second is not first else 0)
        if running > limit:
            mark = first.start_mark
            break
    raise YamlTooLargeError(f"the document expands to more than {limit} YAML nodes through aliases (&anchor / "
                            f"*alias; the limit is MAX_YAML_NODES in isaaclab_arena/env_spec/yaml_lines.py); "
                            "write the values out or use fewer nested aliases", mark)


def load_yaml_with_lines(text: str, source: str | None = None) -> Any:
    """Parses one YAML document; raises ``yaml.YAMLError`` (with a problem mark) for invalid YAML, and
    ``YamlTooLargeError`` (a ``yaml.YAMLError``) for a document that expands to more than ``MAX_YAML_NODES``
    nodes through its aliases (checked on the composed nodes, before any Python data is made).

    With ``source`` (the file name), recorded lines are ``SourceLine`` values naming that file.
    """
    loader = _LineLoader(text)
    loader.source = source
    try:
        node = loader.get_single_node()
        check_node_budget(node)
        return loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()


def yaml_error_line(err: yaml.YAMLError) -> int | None:
    """1-based line of the parser's problem mark (else its context mark)."""
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    return mark.line + 1 if mark is not None else None


def load_yaml_file(path: str) -> Any:
    """Parsed YAML of the existing file ``path`` (lines are ``SourceLine`` values naming ``path``).

    Raises ``SpecIssue`` at the file's own line when it is not UTF-8 text (line 1) or not valid YAML (the
    parser's problem mark).
    """
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError as err:
        raise SpecIssue(f"is not YAML: the file is not UTF-8 text ({err.reason})", line=SourceLine(1, path)) from None
    try:
        return load_yaml_with_lines(text, path)
    except YamlTooLargeError as err:
        raise SpecIssue(f"is refused: {err.problem}", line=SourceLine(yaml_error_line(err) or 1, path)) from None
    except yaml.YAMLError as err:
        problem = getattr(err, "problem", None) or str(err)
        context = getattr(err, "context", None)
        raise SpecIssue(f"is not valid YAML: {problem}" + (f" ({context})" if context else ""),
                        line=SourceLine(yaml_error_line(err) or 1, path)) from None


def line_text(line, here=None) -> str:
    """``scene.yaml line 4`` for a ``SourceLine`` from another file than line ``here``'s, else ``line 4``."""
    source = getattr(line, "source", None)
    same = source is None or source == getattr(here, "source", None)
    return f"line {int(line)}" if same else f"{source} line {int(line)}"


def line_of(container: Any, key) -> int | None:
    """Line of ``container[key]`` when ``container`` came from ``load_yaml_with_lines``, else None."""
    fn = getattr(container, "line_of", None)
    return fn(key) if fn is not None else None


def start_line(container: Any) -> int | None:
    """Line where ``container`` (a mapping or list from ``load_yaml_with_lines``) starts, else None."""
    return getattr(container, "line", None)


def find_non_finite(data: Any, path: str = "") -> tuple[str, Any, int | None] | None:
    """The first NaN or infinite number in ``data``: ``(key path, value, line)``, or None."""
    if isinstance(data, float) and not math.isfinite(data):
        return path, data, None
    if isinstance(data, dict):
        for key, value in data.items():
            found = find_non_finite(value, f"{path}.{key}" if path else str(key))
            if found is not None:
                return found[0], found[1], found[2] if found[2] is not None else line_of(data, key)
    elif isinstance(data, list):
        for i, value in enumerate(data):
            found = find_non_finite(value, f"{path}[{i}]")
            if found is not None:
                return found[0], found[1], found[2] if found[2] is not None else line_of(data, i)
    return None

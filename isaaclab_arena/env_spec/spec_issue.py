"""The problem a parser or builder step finds (``SpecIssue``) and the error a spec load raises (``EnvSpecError``).

``issue_error`` turns a ``SpecIssue`` into an ``EnvSpecError`` naming the file the offending line was read
from (``yaml_lines.SourceLine``), so a node merged in through ``external_yaml`` names its own file.
``EnvSpecWarning`` is issued for values that load but are probably not meant (``plausibility.py``).
"""

from __future__ import annotations


class SpecIssue(ValueError):
    """One problem in a spec: ``message`` plus where it is (``where``: the node, ``key``, ``line``)."""

    def __init__(self, message: str, *, where: str | None = None, key: str | None = None, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.where = where
        self.key = key
        self.line = line


class EnvSpecError(ValueError):
    """A spec that cannot be loaded, built or written.

    Attributes:
        source: The spec file (or ``<dict>``) holding the offending line; for a node merged in through
            ``external_yaml`` this is the included file.
        line: 1-based line of the offending node or key, when known.
        where: The node: ``objects[1] (id 'mug', ...)``, ``relations[2] (kind 'on', subject 'mug', ...)``.
        key: The offending key within the node (``params.clearance_m``), when known.
        detail: The problem and what would be accepted.
    """

    def __init__(self, detail: str, *, source: str = "<dict>", line: int | None = None, where: str | None = None,
                 key: str | None = None):
        self.source, self.line, self.where, self.key, self.detail = source, line, where, key, detail
        head = source + (f":{int(line)}" if line else "")
        loc = ", ".join(p for p in (where, f"key '{key}'" if key else None) if p)
        super().__init__(f"{head}: {loc + ': ' if loc else ''}{detail}")


class EnvSpecWarning(UserWarning):
    """A spec value that loads but is probably not meant; the message names file, line, node and key."""


def issue_error(issue: SpecIssue, source: str) -> EnvSpecError:
    """``issue`` as an ``EnvSpecError``: in the file its line came from (else ``source``), naming the including
    file when they differ."""
    line_source = getattr(issue.line, "source", None)
    detail = issue.message
    if line_source is not None and line_source != source:
        detail += f" ({line_source} is merged into {source} through external_yaml)"
    return EnvSpecError(detail, source=line_source or source, line=issue.line, where=issue.where, key=issue.key)

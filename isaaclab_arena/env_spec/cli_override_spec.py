"""``cli_override_specs``: runner flags that swap a node's ``registry_name``.

Each entry ``{arg: object, target_node_id: mug}`` declares the runner flag ``--object``; giving
``--object cube_8cm`` builds node ``mug`` (the background or an ``objects`` entry) from registry entry
``cube_8cm`` instead, keeping the node's id and ``params``. ``add_cli_override_flags(parser, spec)`` adds
the declared flags to an ``argparse`` parser and ``cli_override_values(args, spec)`` reads them back for
``ArenaEnvGraphSpec.apply_cli_overrides``.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field
from typing import Any

from isaaclab_arena.env_spec.spec_issue import EnvSpecError, SpecIssue
from isaaclab_arena.env_spec.yaml_lines import line_of, start_line

CLI_OVERRIDE_KEYS = ("arg", "target_node_id")
_ARG = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


@dataclass
class CliOverrideNode:
    """One ``cli_override_specs`` entry: flag ``--<arg>`` sets the ``registry_name`` of node ``target_node_id``."""

    arg: str
    target_node_id: str
    line: int | None = field(default=None, compare=False, repr=False)
    key_lines: dict = field(default_factory=dict, compare=False, repr=False)
    where: str = field(default="", compare=False, repr=False)

    @property
    def flag(self) -> str:
        return f"--{self.arg}"

    @property
    def dest(self) -> str:
        return f"cli_override_{self.arg}"

    def to_dict(self) -> dict:
        return {"arg": self.arg, "target_node_id": self.target_node_id}


def line_text(line, here=None) -> str:
    """``scene.yaml line 4`` for a ``SourceLine`` from another file than line ``here``'s, else ``line 4``."""
    source = getattr(line, "source", None)
    same = source is None or source == getattr(here, "source", None)
    return f"line {int(line)}" if same else f"{source} line {int(line)}"


def parse_cli_override_specs(entries: list, targets: dict[str, Any], list_line: int | None) -> list[CliOverrideNode]:
    """Validates the ``cli_override_specs`` list; ``targets`` maps the ids of nodes with a ``registry_name``
    (background and objects) to their nodes."""
    out: list[CliOverrideNode] = []
    for i, raw in enumerate(entries):
        where = f"cli_override_specs[{i}]"
        line = line_of(entries, i) or list_line
        if not isinstance(raw, dict):
            raise SpecIssue(f"must be a mapping {{arg: <flag name>, target_node_id: <node id>}}, got {raw!r}",
                            where=where, line=line)
        line = start_line(raw) or line
        for key in raw:
            if key not in CLI_OVERRIDE_KEYS:
                raise SpecIssue(f"unknown key {key!r}; accepted keys: {', '.join(CLI_OVERRIDE_KEYS)}", where=where,
                                key=str(key), line=line_of(raw, key) or line)
        arg = raw.get("arg")
        if not isinstance(arg, str) or not _ARG.match(arg):
            hint = " (write it without the leading dashes)" if isinstance(arg, str) and arg.startswith("-") else ""
            raise SpecIssue(f"'arg' must be a flag name (a letter, then letters, digits or _){hint}, got {arg!r}",
                            where=where, key="arg", line=line_of(raw, "arg") if "arg" in raw else line)
        where = f"{where} (arg '{arg}')"
        target = raw.get("target_node_id")
        accepted = ", ".join(targets) or "none defined"
        if not isinstance(target, str) or target not in targets:
            raise SpecIssue(f"'target_node_id' {target!r} is not the id of the background or of an objects entry "
                            f"(nodes with a registry_name): {accepted}", where=where, key="target_node_id",
                            line=line_of(raw, "target_node_id") if "target_node_id" in raw else line)
        for other in out:
            if other.arg == arg:
                at = f" ({line_text(other.line, line_of(raw, 'arg') or line)})" if other.line else ""
                raise SpecIssue(f"flag --{arg} is already declared by {other.where}{at}; declare each arg once",
                                where=where, key="arg", line=line_of(raw, "arg") or line)
        out.append(CliOverrideNode(arg, target, line, {k: line_of(raw, k) for k in raw}, where))
    return out


def add_cli_override_flags(parser: argparse.ArgumentParser, spec) -> list[CliOverrideNode]:
    """Adds ``--<arg>`` for every declared override of ``spec`` to ``parser``; a flag the parser already has
    raises ``EnvSpecError`` naming the entry's file and line."""
    for node in spec.cli_override_specs:
        current = spec.asset_node(node.target_node_id).registry_name
        try:
            parser.add_argument(node.flag, dest=node.dest, default=None, metavar="REGISTRY_NAME",
                                help=f"registry_name of node '{node.target_node_id}' (spec: {current})")
        except argparse.ArgumentError:
            raise EnvSpecError(f"flag {node.flag} is already a runner flag; choose another 'arg'",
                               source=getattr(node.line, "source", None) or spec.source, line=node.line,
                               where=node.where, key="arg") from None
    return list(spec.cli_override_specs)


def cli_override_values(args: argparse.Namespace, spec) -> dict[str, str]:
    """``{arg: registry name}`` of the declared override flags given on the command line."""
    return {n.arg: getattr(args, n.dest) for n in spec.cli_override_specs if getattr(args, n.dest, None) is not None}

"""``cli_override_specs``: runner flags that swap a node's ``registry_name``.

Each entry ``{arg: object, target_node_id: mug}`` declares the runner flag ``--object``; giving
``--object cube_8cm`` builds node ``mug`` (the background or an ``objects`` entry) from registry entry
``cube_8cm`` instead, keeping the node's id and ``params``. The path is: ``parse_cli_override_specs`` (YAML ->
``CliOverrideNode``), ``add_cli_override_flags(parser, spec)`` (nodes -> ``argparse`` flags),
``cli_override_values(args, spec)`` (parsed flags -> ``{arg: registry name}``) and
``apply_cli_overrides(spec, values)`` (-> a new, validated spec).
"""

from __future__ import annotations

import argparse
import copy
import re
from typing import Any

from isaaclab_arena.env_spec.build import build_environment
from isaaclab_arena.env_spec.nodes import CliOverrideNode, SpecGraph
from isaaclab_arena.env_spec.spec_issue import EnvSpecError, SpecIssue
from isaaclab_arena.env_spec.yaml_lines import line_of, line_text, source_of, start_line
from isaaclab_arena.utils.checks import short_repr

CLI_OVERRIDE_KEYS = ("arg", "target_node_id")
_ARG = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def parse_cli_override_specs(entries: list, targets: dict[str, Any], list_line: int | None) -> list[CliOverrideNode]:
    """Validates the ``cli_override_specs`` list; ``targets`` maps the ids of nodes with a ``registry_name``
    (background and objects) to their nodes."""
    out: list[CliOverrideNode] = []
    for i, raw in enumerate(entries):
        label = f"cli_override_specs[{i}]"
        line = line_of(entries, i) or list_line
        if not isinstance(raw, dict):
            raise SpecIssue(f"must be a mapping {{arg: <flag name>, target_node_id: <node id>}}, got {short_repr(raw)}",
                            where=label, line=line)
        line = start_line(raw) or line
        for key in raw:
            if key not in CLI_OVERRIDE_KEYS:
                raise SpecIssue(f"unknown key {short_repr(key)}; accepted keys: "
                                f"{', '.join(CLI_OVERRIDE_KEYS)}", where=label,
                                key=str(key), line=line_of(raw, key) or line)
        arg = raw.get("arg")
        if not isinstance(arg, str) or not _ARG.match(arg):
            hint = " (write it without the leading dashes)" if isinstance(arg, str) and arg.startswith("-") else ""
            raise SpecIssue(f"'arg' must be a flag name (a letter, then letters, digits or _){hint}, got "
                            f"{short_repr(arg)}",
                            where=label, key="arg", line=line_of(raw, "arg") if "arg" in raw else line)
        node = CliOverrideNode(arg, "", line=line, key_lines={str(k): line_of(raw, k) for k in raw}, label=label)
        target = raw.get("target_node_id")
        if not isinstance(target, str) or target not in targets:
            raise SpecIssue(f"'target_node_id' {short_repr(target)} is not the id of the background or of an "
                            f"objects entry "
                            f"(nodes with a registry_name): {', '.join(targets) or 'none defined'}", where=node.where,
                            key="target_node_id", line=node.key_line("target_node_id"))
        node.target_node_id = target
        for other in out:
            if other.arg == arg:
                at = f" ({line_text(other.line, node.key_line('arg'))})" if other.line else ""
                raise SpecIssue(f"flag --{arg} is already declared by {other.where}{at}; declare each arg once",
                                where=node.where, key="arg", line=node.key_line("arg"))
        out.append(node)
    return out


def add_cli_override_flags(parser: argparse.ArgumentParser, spec: SpecGraph) -> list[CliOverrideNode]:
    """Adds ``--<arg>`` for every declared override of ``spec`` to ``parser``; a flag the parser already has
    raises ``EnvSpecError`` naming the entry's file and line."""
    for node in spec.cli_override_specs:
        current = spec.asset_node(node.target_node_id).registry_name
        try:
            parser.add_argument(node.flag, dest=node.dest, default=None, metavar="REGISTRY_NAME",
                                help=f"registry_name of node '{node.target_node_id}' (spec: {current})")
        except argparse.ArgumentError:
            raise EnvSpecError(f"flag {node.flag} is already a runner flag; choose another 'arg'",
                               source=source_of(node.line) or spec.source, line=node.key_line("arg"),
                               where=node.where, key="arg") from None
    return list(spec.cli_override_specs)


def cli_override_values(args: argparse.Namespace, spec: SpecGraph) -> dict[str, str]:
    """``{arg: registry name}`` of the declared override flags given on the command line."""
    return {n.arg: getattr(args, n.dest) for n in spec.cli_override_specs if getattr(args, n.dest, None) is not None}


def apply_cli_overrides(spec: SpecGraph, values: dict[str, str | None]) -> SpecGraph:
    """A copy of ``spec`` whose override targets use the registry names in ``values`` (declared ``arg`` ->
    registry name; None: flag not given). The copy is validated by building it once; ``spec`` itself is never
    changed. ``EnvSpecError`` names the flag, the node and the accepted names."""
    from isaaclab_arena.adapters.asset_registry import UnknownAssetError, get_registered_asset, list_registered_assets

    declared = {n.arg: n for n in spec.cli_override_specs}
    new = copy.deepcopy(spec)
    changes = []
    for arg, name in values.items():
        if arg not in declared:
            raise EnvSpecError(f"no cli override '{arg}' is declared; declared args: {', '.join(declared) or 'none'} "
                               "(cli_override_specs)", source=spec.source, key="cli_override_specs")
        if name is None:
            continue
        entry = declared[arg]
        node = new.asset_node(entry.target_node_id)
        try:
            if not isinstance(name, str):
                raise UnknownAssetError(f"registry names are strings, got {short_repr(name)}")
            get_registered_asset(name)
        except UnknownAssetError:
            raise EnvSpecError(f"{entry.flag} {short_repr(name)}: unknown registry name for node '{node.id}' "
                               f"({node.where}); "
                               f"accepted names: {', '.join(list_registered_assets())}",
                               source=source_of(entry.line) or spec.source, line=entry.key_line("arg"),
                               where=entry.where, key="arg") from None
        node.registry_name = name
        changes.append(f"{entry.flag} {short_repr(name)} (node '{node.id}')")
    if changes:
        try:
            build_environment(new)
        except EnvSpecError as err:
            raise EnvSpecError(f"with {', '.join(changes)}: {err.detail}", source=err.source, line=err.line,
                               where=err.where, key=err.key) from None
    return new


def override_embodiment(spec: SpecGraph, registry_name: str) -> SpecGraph:
    """A copy of ``spec`` whose robot is made by embodiment registry entry ``registry_name`` (runner flag
    ``--embodiment``), validated by building it once; ``spec`` itself is never changed."""
    if spec.embodiment is None:
        raise EnvSpecError(f"--embodiment {short_repr(registry_name)}: the spec has no 'embodiment' node to change; "
                           f"add "
                           "'embodiment: {id: robot, registry_name: ...}' to it", source=spec.source, key="embodiment")
    new = copy.deepcopy(spec)
    new.embodiment.registry_name = registry_name
    try:
        build_environment(new)
    except EnvSpecError as err:
        raise EnvSpecError(f"with --embodiment {short_repr(registry_name)}: "
                           f"{err.detail}", source=err.source, line=err.line,
                           where=err.where, key=err.key) from None
    return new

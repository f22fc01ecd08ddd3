"""Registered Python environments: ``name -> (add_cli_args(parser), build(args) -> IsaacLabArenaEnvironment)``.

Used by ``isaaclab_arena/evaluation/policy_runner.py <name> [env flags]`` (runner flags precede the name).
"""

from __future__ import annotations

import argparse
from typing import Callable

from isaaclab_arena.assets.object_reference import ObjectReference
from isaaclab_arena.environments.isaaclab_arena_environment import IsaacLabArenaEnvironment
from isaaclab_arena.relations.relations import IsAnchor, NextTo, On
from isaaclab_arena_environments.assets import library

REGISTERED_ENVIRONMENTS: dict[str, tuple[Callable, Callable]] = {}


def register_environment(name: str):
    def deco(pair):
        REGISTERED_ENVIRONMENTS[name] = pair
        return pair

    return deco


def _table_pick_and_place_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--additional_table_objects", nargs="*", default=[],
                   help=f"extra objects On(table), by registry name: {sorted(library.FACTORIES)}")


def _table_pick_and_place(args) -> IsaacLabArenaEnvironment:
    """Table background with its tabletop anchored through an ObjectReference; mug and bowl On(table), bowl
    NextTo(mug); any ``--additional_table_objects`` On(table)."""
    bg = library.table_background("table_background")
    table = ObjectReference("table", "{ENV_REGEX_NS}/table_background/table", bg, object_type="base")
    table.add_relation(IsAnchor())
    mug = library.mug("mug").add_relation(On(table))
    bowl = library.bowl("bowl").add_relation(On(table)).add_relation(NextTo(mug))
    assets = [bg, table, mug, bowl]
    for i, reg in enumerate(args.additional_table_objects or []):
        if reg not in library.FACTORIES or reg == "table_background":
            raise SystemExit(f"--additional_table_objects: unknown object '{reg}'; accepted: "
                             f"{sorted(k for k in library.FACTORIES if k != 'table_background')}")
        assets.append(library.FACTORIES[reg](f"{reg}_{i}").add_relation(On(table)))
    return IsaacLabArenaEnvironment("table_pick_and_place", assets)


register_environment("table_pick_and_place")((_table_pick_and_place_args, _table_pick_and_place))


def get_registered_environment(name: str):
    try:
        return REGISTERED_ENVIRONMENTS[name]
    except KeyError:
        raise KeyError(f"unknown registered environment '{name}'; registered: {sorted(REGISTERED_ENVIRONMENTS)}") from None

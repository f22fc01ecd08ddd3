"""Registered Python environments: ``name -> (add_cli_args(parser), build(args) -> IsaacLabArenaEnvironment)``.

Used by ``isaaclab_arena/evaluation/policy_runner.py <name> [env flags]`` (runner flags precede the name).

Importing this module and calling the ``add_cli_args`` functions must stay cheap (no torch, no Isaac Lab): the
runner's ``--help`` lists every environment's flags from them. Import assets and relations inside ``build``.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from isaaclab_arena.environments.isaaclab_arena_environment import IsaacLabArenaEnvironment

#: ``Side`` values (``relations.relation_base.Side``), spelled out so that the flags need no import.
SIDES = ("positive_x", "negative_x", "positive_y", "negative_y")

REGISTERED_ENVIRONMENTS: dict[str, tuple[Callable, Callable]] = {}


def register_environment(name: str):
    def deco(pair):
        REGISTERED_ENVIRONMENTS[name] = pair
        return pair

    return deco


def _table_pick_and_place_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--additional_table_objects", nargs="*", default=[], metavar="REGISTRY_NAME",
                   help="extra objects On(table), by asset registry name (e.g. cube_8cm box_flat)")


def _table_pick_and_place(args) -> IsaacLabArenaEnvironment:
    """Table background with its tabletop anchored through an ObjectReference; mug and bowl On(table), bowl
    NextTo(mug); any ``--additional_table_objects`` On(table)."""
    from isaaclab_arena.assets.object_reference import ObjectReference
    from isaaclab_arena.environments.isaaclab_arena_environment import IsaacLabArenaEnvironment
    from isaaclab_arena.relations.relations import IsAnchor, NextTo, On
    from isaaclab_arena_environments.assets import library

    bg = library.table_background("table_background")
    table = ObjectReference("table", "{ENV_REGEX_NS}/table_background/table", bg, object_type="base")
    table.add_relation(IsAnchor())
    mug = library.mug("mug").add_relation(On(table))
    bowl = library.bowl("bowl").add_relation(On(table)).add_relation(NextTo(mug))
    assets = [bg, table, mug, bowl]
    for i, reg in enumerate(args.additional_table_objects or []):
        if reg not in library.FACTORIES or reg == "table_background":
            raise ValueError(f"--additional_table_objects: unknown object '{reg}'; accepted: "
                             f"{sorted(k for k in library.FACTORIES if k != 'table_background')}")
        assets.append(library.FACTORIES[reg](f"{reg}_{i}").add_relation(On(table)))
    return IsaacLabArenaEnvironment("table_pick_and_place", assets)


register_environment("table_pick_and_place")((_table_pick_and_place_args, _table_pick_and_place))


#: Heading of a robot standing on each side of the table, facing it (radians about world Z).
_FACING = {"negative_x": 0.0, "positive_x": 3.141592653589793, "negative_y": 1.5707963267948966,
           "positive_y": -1.5707963267948966}


def _franka_table_pick_and_place_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--embodiment", default="franka_panda",
                   help="robot by embodiment registry name (franka_panda, kuka_iiwa, or any registered one)")
    p.add_argument("--pick_up_object", default="cube_4cm", help="object to pick up, by registry name (e.g. cube_4cm, "
                                                                 "box_tall)")
    p.add_argument("--robot_side", default="negative_x", choices=SIDES,
                   help="side of the table the robot stands on (it faces the table)")
    p.add_argument("--episode_length_s", type=float, default=8.0, help="time-out of an episode, seconds")


def _franka_table_pick_and_place(args) -> IsaacLabArenaEnvironment:
    """A robot arm on its stand (``--embodiment``: the Franka by default, or ``kuka_iiwa``; its TCP, joints and
    gripper come from its RobotDescription) placed by relations beside a 1.2 x 0.8 m table: On(floor),
    NextTo(table, side, 5 cm), turned to face the table (RotateAroundSolution); a pick-up object (default a 4 cm
    cube) and a bowl On(table);
    task PickAndPlaceTask(object -> bowl). The object (by the task) and the bowl are marked RequiresReachability,
    so ``ik_reachable`` keeps layouts where the robot reaches both. Actions: ``ik_rel`` (TCP deltas in the robot
    base frame) + gripper."""
    from isaaclab_arena.assets.object_reference import ObjectReference
    from isaaclab_arena.embodiments import make_embodiment
    from isaaclab_arena.environments.isaaclab_arena_environment import IsaacLabArenaEnvironment
    from isaaclab_arena.relations.relations import IsAnchor, NextTo, On, RequiresReachability, RotateAroundSolution, Side
    from isaaclab_arena.tasks import PickAndPlaceTask
    from isaaclab_arena_environments.assets import library

    side = Side(args.robot_side)
    floor = library.floor("floor").add_relation(IsAnchor())
    bg = library.table_background("table_background")
    table = ObjectReference("table", "{ENV_REGEX_NS}/table_background/table", bg, object_type="base")
    table.add_relation(IsAnchor())
    robot = make_embodiment(args.embodiment, "robot", {"action_mode": "ik_rel"})
    robot.add_relation(On(floor)).add_relation(NextTo(table, side=side, distance_m=0.05))
    robot.add_relation(RotateAroundSolution(yaw_rad=_FACING[side.value]))
    if args.pick_up_object not in library.FACTORIES or args.pick_up_object in ("table_background", "floor"):
        raise ValueError(f"--pick_up_object: unknown object '{args.pick_up_object}'; accepted: "
                         f"{sorted(k for k in library.FACTORIES if k not in ('table_background', 'floor'))}")
    obj = library.FACTORIES[args.pick_up_object]("pick_up_object").add_relation(On(table))
    bowl = library.bowl("bowl").add_relation(On(table)).add_relation(RequiresReachability())
    task = PickAndPlaceTask(obj, bowl, background_scene=bg, episode_length_s=args.episode_length_s,
                            description=f"pick up the {args.pick_up_object} and put it on the bowl")
    return IsaacLabArenaEnvironment("franka_table_pick_and_place", [floor, bg, table, obj, bowl], embodiment=robot,
                                    task=task)


register_environment("franka_table_pick_and_place")((_franka_table_pick_and_place_args, _franka_table_pick_and_place))


def get_registered_environment(name: str):
    try:
        return REGISTERED_ENVIRONMENTS[name]
    except KeyError:
        raise KeyError(f"unknown registered environment '{name}'; registered: {sorted(REGISTERED_ENVIRONMENTS)}") from None

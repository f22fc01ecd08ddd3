"""Factors of an evaluation episode: numbers drawn with its layout that may explain success or failure.

Each factor is computed from the episode's env-local poses at reset (metres, radians), batched over episodes:

==============================  ===========================================================================
``object_x_m``, ``object_y_m``  the task object's position on the table (env-local x, y)
``object_yaw_rad``              the task object's heading about world Z, in (-pi, pi]
``object_distance_from_robot_m`` horizontal distance from the robot's base to the task object
``object_to_destination_m``     horizontal distance from the task object to the task's destination
``robot_yaw_rad``               the robot base's heading about world Z
==============================  ===========================================================================

The task object is the task's ``pick_up_object``; without a task, the first relation-placed object. Factors
that need what the scene lacks (a robot, a destination) are left out of that scene's list
(:func:`available_factors`); naming one of them, or an unknown name, is refused in one line.
"""

from __future__ import annotations

import math

import torch
from isaaclab.utils.math import euler_xyz_from_quat

#: Every factor name and what it needs (``object``, ``robot``, ``destination``).
FACTORS = {
    "object_x_m": ("object",),
    "object_y_m": ("object",),
    "object_yaw_rad": ("object",),
    "object_distance_from_robot_m": ("object", "robot"),
    "object_to_destination_m": ("object", "destination"),
    "robot_yaw_rad": ("robot",),
}


def _yaw(q: torch.Tensor) -> torch.Tensor:
    """(N,) heading about world Z of (N, 4) xyzw quaternions, radians."""
    return euler_xyz_from_quat(q)[2]


def scene_roles(builder) -> dict[str, str]:
    """``{"object": key, "robot": key, "destination": key}`` scene keys of the factor roles the scene has."""
    from isaaclab_arena.embodiments.embodiment import ROBOT_SCENE_KEY

    roles = {}
    task = builder.arena_env.task
    if task is not None:
        roles["object"] = task.pick_up_object.get_scene_root_keys()[0]
        dest_keys = task.destination_location.get_scene_root_keys()
        roles["destination"] = dest_keys[0] if dest_keys else task.destination_location.name
    else:
        names, keys = builder.placed_names_and_keys()
        objects = [k for k in keys if k != ROBOT_SCENE_KEY]
        if objects:
            roles["object"] = objects[0]
    if builder.arena_env.embodiment is not None:
        roles["robot"] = ROBOT_SCENE_KEY
    return roles


def available_factors(roles: dict[str, str]) -> list[str]:
    """The factor names a scene with these roles can compute, in :data:`FACTORS` order."""
    return [name for name, needs in FACTORS.items() if all(r in roles for r in needs)]


def check_factors(names, roles: dict[str, str], where: str = "factors") -> list[str]:
    """``names`` (None: every available factor) after refusing unknown ones and ones the scene cannot compute."""
    available = available_factors(roles)
    if names is None:
        return available
    out = []
    for name in names:
        if name not in FACTORS:
            raise ValueError(f"{where}: unknown factor '{name}'; accepted: {', '.join(FACTORS)}")
        if name not in available:
            missing = [r for r in FACTORS[name] if r not in roles]
            raise ValueError(f"{where}: factor '{name}' needs a {' and a '.join(missing)} in the scene; this scene's "
                             f"factors: {', '.join(available) or 'none'}")
        if name not in out:
            out.append(name)
    return out


def compute_factors(names: list[str], poses: dict[str, torch.Tensor], roles: dict[str, str]) -> dict[str, torch.Tensor]:
    """``{factor: (N,) float64}`` from env-local poses ``{scene key: (N, 7)}`` at reset."""
    def pose(role):
        return poses[roles[role]].to(torch.float64)

    out = {}
    for name in names:
        if name == "object_x_m":
            v = pose("object")[:, 0]
        elif name == "object_y_m":
            v = pose("object")[:, 1]
        elif name == "object_yaw_rad":
            v = _yaw(pose("object")[:, 3:])
        elif name == "object_distance_from_robot_m":
            v = (pose("object")[:, :2] - pose("robot")[:, :2]).norm(dim=-1)
        elif name == "object_to_destination_m":
            v = (pose("object")[:, :2] - pose("destination")[:, :2]).norm(dim=-1)
        elif name == "robot_yaw_rad":
            v = _yaw(pose("robot")[:, 3:])
        else:  # check_factors refuses unknown names first
            raise ValueError(f"unknown factor '{name}'")
        out[name] = v
    return out


def round_factor(value: float) -> float:
    """Factor values as stored in records: 6 decimals (micrometres / microradians)."""
    return round(float(value), 6) if math.isfinite(value) else float("nan")


__all__ = ["FACTORS", "available_factors", "check_factors", "compute_factors", "scene_roles"]

"""Whether, and how, the solver turns a placed object about world Z: the one definition that the compile stage,
the checks before solving, the feasibility pre-check, the chain rooms and the pair geometry read."""

from __future__ import annotations

from isaaclab_arena.relations.kernels.tables import YawMode
from isaaclab_arena.relations.relations import ClutterOn, FaceTo


def yaw_mode(asset, random_yaw_init: bool) -> YawMode:
    """How the solver sets a placed object's yaw.

    ``FACE_TO``: a FaceTo relation turns it toward its target. ``RANDOM``: its yaw is drawn uniformly, by
    ``ClutterOn(random_yaw=True)`` or, for an object that no ClutterOn releases, by the placer's
    ``random_yaw_init``. ``FIXED``: its RotateAroundSolution rotation, or none.
    """
    if asset.get_relations_of(FaceTo):
        return YawMode.FACE_TO
    clutter = asset.get_relations_of(ClutterOn)
    if (clutter and clutter[0].random_yaw) or (random_yaw_init and not clutter):
        return YawMode.RANDOM
    return YawMode.FIXED

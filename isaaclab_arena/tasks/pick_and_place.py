"""``PickAndPlaceTask``: pick an object up and put it on or in a destination.

Success is measured from the simulator at every env step (``environments/task_terms.py``): the object's
centre lies inside the destination's footprint (its box turned by the destination's yaw), its bottom is
between the destination's bottom and ``success_height_tolerance_m`` above its top, and it moves slower than
``success_speed_m_s``. The episode ends with success, or with a time-out after ``episode_length_s``. The
object's and the destination's env-local poses are observations. The pick-up object gets a
``RequiresReachability`` marker when the task is made (unless it has one), so ``ik_reachable`` keeps only
layouts where the robot can reach it. Lengths in metres, speeds in m/s, times in seconds.
"""

from __future__ import annotations

import math

from isaaclab_arena.relations.markers import RequiresReachability


def _asset(value, owner: str, field: str):
    if not all(hasattr(value, a) for a in ("name", "get_bounding_box", "add_relation", "get_scene_root_keys")):
        raise TypeError(f"{owner}: {field} must be an asset of the environment (an Object, ObjectReference or "
                        f"RigidObjectSet), got {value!r}")
    return value


def _positive(value, owner: str, field: str, optional: bool = False) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{owner}: {field} must be a number > 0, got {value!r}")
    return float(value)


class PickAndPlaceTask:
    """Pick ``pick_up_object`` up and put it on or in ``destination_location``.

    Args:
        pick_up_object: The object to move (a rigid asset of the environment).
        destination_location: Where it goes: an object, an object set, or an object reference (e.g. a tabletop).
        background_scene: The background the task happens in (informational; YAML ``background_scene``).
        episode_length_s: Time-out, seconds (None: the env builder's ``episode_length_s``).
        description: Free text (YAML ``task.description``).
        success_height_tolerance_m: How far above the destination's top the object's bottom may rest, metres.
        success_speed_m_s: Largest object speed that counts as resting, m/s.
    """

    yaml_kind = "PickAndPlaceTask"

    def __init__(self, pick_up_object, destination_location, background_scene=None, episode_length_s: float | None = None,
                 description: str = "", success_height_tolerance_m: float = 0.02, success_speed_m_s: float = 0.05):
        owner = "PickAndPlaceTask"
        self.pick_up_object = _asset(pick_up_object, owner, "pick_up_object")
        self.destination_location = _asset(destination_location, owner, "destination_location")
        if self.pick_up_object is self.destination_location or pick_up_object.name == destination_location.name:
            raise ValueError(f"{owner}: pick_up_object and destination_location are both '{pick_up_object.name}'; "
                             "the destination must be another asset")
        if getattr(pick_up_object, "is_anchor", False):
            raise ValueError(f"{owner}: pick_up_object '{pick_up_object.name}' is an anchor (fixed); pick a movable "
                             "object")
        self.background_scene = _asset(background_scene, owner, "background_scene") if background_scene is not None \
            else None
        self.episode_length_s = _positive(episode_length_s, owner, "episode_length_s", optional=True)
        if not isinstance(description, str):
            raise TypeError(f"{owner}: description must be a string, got {description!r}")
        self.description = description
        self.success_height_tolerance_m = _positive(success_height_tolerance_m, owner, "success_height_tolerance_m")
        self.success_speed_m_s = _positive(success_speed_m_s, owner, "success_speed_m_s")
        if not pick_up_object.get_relations_of(RequiresReachability):
            marker = RequiresReachability()
            marker.stamped_by = owner  # written back to YAML as the task, not as a relation
            pick_up_object.add_relation(marker)

    @property
    def asset_names(self) -> list[str]:
        """Names of the assets the task refers to."""
        names = [self.pick_up_object.name, self.destination_location.name]
        return names + ([self.background_scene.name] if self.background_scene is not None else [])

    def params(self) -> dict:
        """YAML ``params`` of the task (asset names, seconds)."""
        out = {"pick_up_object": self.pick_up_object.name, "destination_location": self.destination_location.name}
        if self.background_scene is not None:
            out["background_scene"] = self.background_scene.name
        if self.episode_length_s is not None:
            out["episode_length_s"] = self.episode_length_s
        return out

    def __repr__(self) -> str:
        return f"PickAndPlaceTask({', '.join(f'{k}={v!r}' for k, v in self.params().items())})"

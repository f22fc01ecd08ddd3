"""``PickAndPlaceTask``: pick an object up and put it on or in a destination.

Success is measured from the simulator at every env step (``environments/task_terms.py``, one definition of each
quantity, batched over envs). The episode ends with success when, continuously for ``success_hold_s``:

* **inside the opening**: the object's box centre, in the destination's frame, lies inside the destination's
  opening (``tasks/destination_opening.py``): a disc for round destinations (radius from the inner wall of an
  open container such as a hollow bowl, else the outer radius less ``success_wall_margin_m``), the inner
  rectangle of a box or bin (its walls measured on the mesh, else its bounding box less the wall margin);
* **below the rim**: the object's lowest point, in the destination's frame, is at most
  ``success_rim_tolerance_m`` above the rim (the top of the destination) and at most that much below the
  opening's floor (the inner floor of an open container, the top of a closed one);
* **released**: (with a robot) every gripper joint is open to at least ``success_gripper_open_fraction`` of its
  closed-to-open travel, and the tool frame (TCP) is farther than ``success_release_distance_m`` from the
  object's box (no finger can touch it); without a robot nothing can hold the object, so it counts as released;
* **still**: the object's linear speed is below ``success_speed_m_s``.

Otherwise it ends with a time-out after ``episode_length_s``. The object's and the destination's env-local poses
are observations. The pick-up object gets a ``RequiresReachability`` marker when the task is made (unless it has
one), so ``ik_reachable`` keeps only layouts where the robot can reach it. Lengths in metres, speeds in m/s,
times in seconds.

Rewards (for reinforcement learning; ``environments/task_rewards.py``) are weighted by
:class:`PickAndPlaceRewardWeights`, the task's ``reward_weights``. They do not change success, time-out or the
observations.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from isaaclab_arena.relations.markers import RequiresReachability


def _asset(value, owner: str, field: str):
    if not all(hasattr(value, a) for a in ("name", "get_bounding_box", "add_relation", "get_scene_root_keys")):
        raise TypeError(f"{owner}: {field} must be an asset of the environment (an Object, ObjectReference or "
                        f"RigidObjectSet), got {value!r}")
    return value


def _positive(value, owner: str, field: str, optional: bool = False, zero_ok: bool = False,
              at_most: float | None = None) -> float | None:
    if value is None and optional:
        return None
    bad = isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
        or value < 0 or (value == 0 and not zero_ok) or (at_most is not None and value > at_most)
    if bad:
        rng = (">= 0" if zero_ok else "> 0") + (f" and <= {at_most:g}" if at_most is not None else "")
        raise ValueError(f"{owner}: {field} must be a number {rng}, got {value!r}")
    return float(value)


#: Success parameters of :class:`PickAndPlaceTask` and their defaults (seconds, metres, m/s, a fraction).
SUCCESS_DEFAULTS = {
    "success_hold_s": 0.5,
    "success_speed_m_s": 0.05,
    "success_rim_tolerance_m": 0.005,
    "success_wall_margin_m": 0.005,
    "success_gripper_open_fraction": 0.9,
    "success_release_distance_m": 0.05,
}


@dataclass(frozen=True)
class PickAndPlaceRewardWeights:
    """Weights and shapes of the reward terms of a :class:`PickAndPlaceTask` (``environments/task_rewards.py``).

    Isaac Lab's reward manager sums ``weight * term`` over the terms and multiplies by the env step duration
    (seconds), so an episode's return is a time integral: a weight is "reward per second at term value 1".
    A weight of 0 leaves its term out. Terms marked *robot* are added only when the env has an embodiment.

    Attributes:
        reaching: *robot*; term ``1 - tanh(d / reaching_std_m)`` in [0, 1], ``d`` the distance (m) from the tool
            frame (TCP) to the pick-up object's box centre.
        lifting: Term in [0, 1]: the object's centre height above its height at the episode's start, divided by
            ``lift_height_m`` and capped at 1; 0 below ``min_lift_m`` (resting, jitter) and, with a robot, while
            the TCP is farther than ``grasp_radius_m`` from the object's centre (a held object, not a knocked one).
        placing: Term in [0, 1]: ``1 - tanh(e / placing_std_m)`` while the object is lifted (above ``min_lift_m``),
            else 0; ``e`` the distance (m) from the object's centre to the point above the destination's footprint
            centre where the object would rest on the destination's top.
        success: Term ``1 / step_dt`` on the step the task's ``success`` termination fires, else 0, so the weight
            is the reward of one success (unitless); it makes ending the episode by success worth more than
            holding the object near the destination until the time-out.
        action_rate: *robot*; penalty term ``sum((a_t - a_{t-1})^2)`` over the action vector (action units; keep
            the weight <= 0).
        joint_vel: *robot*; penalty term ``sum(qd^2)`` over the robot's joints, (rad/s)^2 (keep the weight <= 0).
        reaching_std_m: Distance scale of ``reaching``, metres (> 0).
        placing_std_m: Distance scale of ``placing``, metres (> 0).
        lift_height_m: Lift (metres, > 0) at which ``lifting`` reaches 1.
        min_lift_m: Lift (metres, > 0) below which the object counts as resting.
        grasp_radius_m: TCP-to-object-centre distance (metres, > 0) within which a lifted object counts as held.
    """

    reaching: float = 1.0
    lifting: float = 15.0
    placing: float = 16.0
    success: float = 200.0
    action_rate: float = -1e-4
    joint_vel: float = -1e-4
    reaching_std_m: float = 0.3
    placing_std_m: float = 0.3
    lift_height_m: float = 0.1
    min_lift_m: float = 0.01
    grasp_radius_m: float = 0.08

    #: Fields that weight a term (the others shape the terms).
    WEIGHT_FIELDS = ("reaching", "lifting", "placing", "success", "action_rate", "joint_vel")

    def __post_init__(self):
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"PickAndPlaceRewardWeights.{f.name} must be a finite number, got {v!r}")
            if f.name not in self.WEIGHT_FIELDS and v <= 0:
                raise ValueError(f"PickAndPlaceRewardWeights.{f.name} must be > 0 (metres), got {v!r}")
            object.__setattr__(self, f.name, float(v))

    def weights(self) -> dict[str, float]:
        """``{term name: weight}`` of every term (zero weights included)."""
        return {name: getattr(self, name) for name in self.WEIGHT_FIELDS}


class PickAndPlaceTask:
    """Pick ``pick_up_object`` up and put it on or in ``destination_location``.

    Args:
        pick_up_object: The object to move (a rigid asset of the environment).
        destination_location: Where it goes: an object, an object set, or an object reference (e.g. a tabletop).
        background_scene: The background the task happens in (informational; YAML ``background_scene``).
        episode_length_s: Time-out, seconds (None: the env builder's ``episode_length_s``).
        description: Free text (YAML ``task.description``).
        success_hold_s: How long every success condition must hold without a break, seconds (>= 0; 0: one env
            step). Counted per env in env steps (``n * step_dt >= success_hold_s``), from 0 at every reset.
        success_speed_m_s: The object is still below this linear speed, m/s (> 0).
        success_rim_tolerance_m: How far the object's lowest point may be above the rim, or below the opening's
            floor, metres (> 0): contact offsets and a solid destination's top, not a held object.
        success_wall_margin_m: Wall thickness assumed where it cannot be measured (a closed top, no mesh): the
            opening is the footprint shrunk by this much on every side, metres (>= 0).
        success_gripper_open_fraction: Released needs every gripper joint at least this fraction of the way from
            closed to open (0 < f <= 1; the Franka holding a 4 cm cube is at 0.5).
        success_release_distance_m: Released needs the tool frame (TCP) farther than this from the object's box,
            metres (> 0; more than the open fingers reach from the TCP: about 0.05 m for the Franka).
        reward_weights: Weights and distance scales (metres) of the reward terms (:class:`PickAndPlaceRewardWeights`;
            default: its defaults). Rewards affect training only, never success or time-out.
    """

    yaml_kind = "PickAndPlaceTask"
    #: Parameters that name assets of the environment (YAML: asset ids).
    ASSET_PARAMS = ("pick_up_object", "destination_location", "background_scene")
    #: Parameters given as numbers (YAML: scalars; seconds, metres, m/s, a fraction).
    SCALAR_PARAMS = ("episode_length_s", *SUCCESS_DEFAULTS)

    def __init__(self, pick_up_object, destination_location, background_scene=None, episode_length_s: float | None = None,
                 description: str = "", success_hold_s: float = SUCCESS_DEFAULTS["success_hold_s"],
                 success_speed_m_s: float = SUCCESS_DEFAULTS["success_speed_m_s"],
                 success_rim_tolerance_m: float = SUCCESS_DEFAULTS["success_rim_tolerance_m"],
                 success_wall_margin_m: float = SUCCESS_DEFAULTS["success_wall_margin_m"],
                 success_gripper_open_fraction: float = SUCCESS_DEFAULTS["success_gripper_open_fraction"],
                 success_release_distance_m: float = SUCCESS_DEFAULTS["success_release_distance_m"],
                 reward_weights: PickAndPlaceRewardWeights | None = None):
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
        self.success_hold_s = _positive(success_hold_s, owner, "success_hold_s", zero_ok=True)
        self.success_speed_m_s = _positive(success_speed_m_s, owner, "success_speed_m_s")
        self.success_rim_tolerance_m = _positive(success_rim_tolerance_m, owner, "success_rim_tolerance_m")
        self.success_wall_margin_m = _positive(success_wall_margin_m, owner, "success_wall_margin_m", zero_ok=True)
        self.success_gripper_open_fraction = _positive(success_gripper_open_fraction, owner,
                                                       "success_gripper_open_fraction", at_most=1.0)
        self.success_release_distance_m = _positive(success_release_distance_m, owner, "success_release_distance_m")
        if reward_weights is None:
            reward_weights = PickAndPlaceRewardWeights()
        if not isinstance(reward_weights, PickAndPlaceRewardWeights):
            raise TypeError(f"{owner}: reward_weights must be a PickAndPlaceRewardWeights, got {reward_weights!r}")
        self.reward_weights = reward_weights
        if not pick_up_object.get_relations_of(RequiresReachability):
            marker = RequiresReachability()
            marker.stamped_by = owner  # written back to YAML as the task, not as a relation
            pick_up_object.add_relation(marker)

    @property
    def asset_names(self) -> list[str]:
        """Names of the assets the task refers to."""
        names = [self.pick_up_object.name, self.destination_location.name]
        return names + ([self.background_scene.name] if self.background_scene is not None else [])

    def success_params(self) -> dict[str, float]:
        """``{name: value}`` of every success parameter (seconds, metres, m/s, a fraction)."""
        return {name: getattr(self, name) for name in SUCCESS_DEFAULTS}

    def params(self) -> dict:
        """YAML ``params`` of the task: asset names, ``episode_length_s`` (seconds) and the success parameters that
        differ from their defaults (:data:`SUCCESS_DEFAULTS`)."""
        out = {"pick_up_object": self.pick_up_object.name, "destination_location": self.destination_location.name}
        if self.background_scene is not None:
            out["background_scene"] = self.background_scene.name
        if self.episode_length_s is not None:
            out["episode_length_s"] = self.episode_length_s
        out.update({k: v for k, v in self.success_params().items() if v != SUCCESS_DEFAULTS[k]})
        return out

    def __repr__(self) -> str:
        return f"PickAndPlaceTask({', '.join(f'{k}={v!r}' for k, v in self.params().items())})"

"""Robot embodiments: placeable robots on stands, a registry, the Franka Panda and the KUKA iiwa.

``make_embodiment("franka_panda", "robot", {"stand_height_m": 0.75})`` builds one; ``list_embodiments()``
names the registered ones. The Isaac Lab side (articulation, actions, observations, reset) is in
``isaaclab_arena.environments.embodiment_terms``.
"""

from isaaclab_arena.embodiments.embodiment import ACTION_MODES, ROBOT_SCENE_KEY, Embodiment, RobotDescription, StandCfg
from isaaclab_arena.embodiments.registry import (
    UnknownEmbodimentError,
    list_embodiments,
    make_embodiment,
    register_embodiment,
)

__all__ = ["ACTION_MODES", "ROBOT_SCENE_KEY", "Embodiment", "RobotDescription", "StandCfg", "UnknownEmbodimentError",
           "list_embodiments", "make_embodiment", "register_embodiment"]

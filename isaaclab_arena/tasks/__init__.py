"""Tasks of Arena environments (what the robot is asked to do): ``PickAndPlaceTask``.

A task names assets of its environment; the Isaac Lab terms it needs (success, time-out, observations) are
made by ``isaaclab_arena.environments.task_terms``. YAML ``task.subtasks[].kind`` names a class of
:data:`TASK_KINDS`.
"""

from isaaclab_arena.tasks.pick_and_place import PickAndPlaceRewardWeights, PickAndPlaceTask

#: YAML ``kind`` -> task class.
TASK_KINDS = {"PickAndPlaceTask": PickAndPlaceTask}

__all__ = ["PickAndPlaceRewardWeights", "PickAndPlaceTask", "TASK_KINDS"]

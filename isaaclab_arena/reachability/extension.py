"""The reachability extension: the ``ik_reachable`` check (batched IK, ``ik_validator.py``) as a
``PlacementExtension`` a caller hands to ``ObjectPlacer(params, extensions=[...])``. It is in the default set
(``isaaclab_arena.placement_extensions.default_extensions``)."""

from __future__ import annotations

from isaaclab_arena.reachability.ik_validator import IKReachableValidator
from isaaclab_arena.relations.extensions import PlacementExtension

#: ``ik_reachable``: every ``RequiresReachability`` object reachable by a top-down grasp from the candidate's
#: robot base (applies when ``reachability_config.embodiment`` has a kinematic model).
REACHABILITY = PlacementExtension("reachability", validators=(IKReachableValidator,))

"""The ``ik_reachable`` check: can the robot reach a top-down grasp at every ``RequiresReachability`` object?

An expensive pre-physics check (``ValidationCost.EXPENSIVE``): the validate stage runs it only on the candidates
that passed every required inexpensive check. Per candidate, the robot's base pose is the one solved for that
candidate when the embodiment is placed by relations (its row in the batch), else its fixed pose
(``Embodiment.get_world_pose()``); the objects' positions are the candidate's (or their fixed poses). The IK
backend is chosen by ``backends.ik_backend_for`` (the builtin batched IK by default); thresholds come from
``ObjectPlacerParams.reachability_config`` (``grasp_z_offset_m``, ``ik_position_threshold_m``,
``ik_rotation_threshold_rad``); joint limits are respected by every backend.

The check applies only when ``reachability_config.embodiment`` holds an embodiment with a kinematic model
(``ArenaEnvBuilder`` puts the env's embodiment there); a scene without ``RequiresReachability`` objects passes
it trivially. Not registered by import: ``reachability/extension.py::REACHABILITY`` hands it to the placers a caller
builds with it (the default set has it).
Positions env-local metres, rotations xyzw.
"""

from __future__ import annotations

from typing import Sequence

import torch

from isaaclab_arena.reachability.backends import has_kinematic_model, ik_backend_for
from isaaclab_arena.relations.validation.pre_physics import PrePhysicsPlacementValidator
from isaaclab_arena.relations.validation.types import CheckOutcome, PlacementCheck, ValidationCost

CHECK = PlacementCheck.IK_REACHABLE.value


def robot_base_poses(embodiment, problem, positions: torch.Tensor, rotations: torch.Tensor) -> torch.Tensor:
    """(B, 7) env-local base pose per candidate: the solved row of a relation-placed robot, else its fixed pose."""
    if embodiment.name in problem.object_names:
        k = problem.object_names.index(embodiment.name)
        return torch.cat([positions[:, k], rotations[:, k]], dim=-1)
    if embodiment.has_placement_relations:
        raise ValueError(f"embodiment '{embodiment.name}' is placed by relations, but the placement does not hold it; "
                         "pass the embodiment among the placer's assets (ArenaEnvBuilder does)")
    pose = embodiment.get_world_pose()
    row = torch.tensor([*pose.position_xyz, *pose.rotation_xyzw], dtype=positions.dtype, device=positions.device)
    return row.expand(positions.shape[0], 7)


def target_positions(problem, positions: torch.Tensor) -> torch.Tensor:
    """(B, K, 3) env-local origins of the problem's ``RequiresReachability`` objects (placed or fixed)."""
    cols = []
    for name in problem.reachability_targets:
        if name in problem.object_names:
            cols.append(positions[:, problem.object_names.index(name)])
        else:
            fixed = problem.fixed_origins[problem.fixed_names.index(name)].to(positions.device, positions.dtype)
            cols.append(fixed.expand(positions.shape[0], 3))
    if not cols:
        return positions.new_zeros(positions.shape[0], 0, 3)
    return torch.stack(cols, dim=1)


def object_reachability(placer_params, problem, positions: torch.Tensor, rotations: torch.Tensor):
    """``(names, reachable (B, K), result)`` of the ``RequiresReachability`` objects for layouts ``positions``
    (B, n, 3) / ``rotations`` (B, n, 4) in the problem's object order (``result`` None without targets)."""
    config = placer_params.reachability_config
    names = list(problem.reachability_targets)
    b = positions.shape[0]
    if not names:
        return names, torch.ones(b, 0, dtype=torch.bool, device=positions.device), None
    embodiment = config.embodiment
    if embodiment is None:
        raise ValueError(f"objects {names} are marked RequiresReachability, but reachability_config.embodiment is "
                         "None; give the environment an embodiment (ArenaEnvBuilder wires it in)")
    checker = ik_backend_for(embodiment, str(positions.device))
    result = checker.check_config(robot_base_poses(embodiment, problem, positions, rotations),
                                  target_positions(problem, positions), config)
    return names, result.reachable.to(positions.device), result


class IKReachableValidator(PrePhysicsPlacementValidator):
    """``ik_reachable``: every ``RequiresReachability`` object of a candidate is reachable by a top-down grasp
    from the robot base pose of that candidate (see the module docstring)."""

    check = CHECK
    cost = ValidationCost.EXPENSIVE

    @classmethod
    def applies_to(cls, placer_params) -> bool:
        config = getattr(placer_params, "reachability_config", None)
        return config is not None and has_kinematic_model(config.embodiment)

    def settings(self) -> dict:
        config = self.placer_params.reachability_config
        return {"embodiment": getattr(config.embodiment, "name", None), "grasp_z_offset_m": config.grasp_z_offset_m,
                "ik_position_threshold_m": config.ik_position_threshold_m,
                "ik_rotation_threshold_rad": config.ik_rotation_threshold_rad}

    def validate_batch(self, batch, collision_objects: Sequence) -> CheckOutcome:
        """Verdicts (True when every ``RequiresReachability`` object of the candidate is reachable) and, per failing
        candidate, its first unreachable object with the IK's remaining position error (metres) as the miss."""
        names, reachable, result = object_reachability(self.placer_params, batch.problem, batch.positions,
                                                       batch.rotations)
        passed = reachable.all(dim=-1)
        if result is None:
            return CheckOutcome(passed)
        robot = getattr(self.placer_params.reachability_config.embodiment, "name", "robot")
        first = (~reachable).int().argmax(dim=-1)  # first unreachable object (0 where all are reachable)
        miss = result.position_error_m.to(reachable.device).float().gather(1, first.unsqueeze(1)).squeeze(1)
        causes = tuple(f"'{n}' out of reach of '{robot}' (top-down grasp; IK position error)" for n in names)
        return CheckOutcome(passed, causes, torch.where(passed, -1, first), miss)

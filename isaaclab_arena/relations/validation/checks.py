"""The built-in inexpensive checks. Each reads its verdict slot of the check kernel, whose violation
functions are the ones the solver's loss uses (``kernels/violations.py``). A check whose relation kind
is not in the scene passes trivially."""

from __future__ import annotations

from typing import ClassVar

from isaaclab_arena.relations.placement_problem import CHECK_SLOTS
from isaaclab_arena.relations.validation.kernel_checks import kernel_verdicts
from isaaclab_arena.relations.validation.pre_physics import PrePhysicsPlacementValidator
from isaaclab_arena.relations.validation.registry import register_validator


class KernelCheckValidator(PrePhysicsPlacementValidator):
    """A check computed by the batched check kernel (one launch for all built-in checks)."""

    kernel_slot: ClassVar[int] = -1

    def validate_batch(self, batch, collision_objects):
        return kernel_verdicts(batch)[:, self.kernel_slot].bool()


def _make(check: str, doc: str):
    cls = type(f"{''.join(w.title() for w in check.split('_'))}Validator", (KernelCheckValidator,),
               {"check": check, "kernel_slot": CHECK_SLOTS.index(check), "__doc__": doc})
    return register_validator(cls)


NoOverlapValidator = _make("no_overlap", "No two placed bounding boxes intersect (movables vs movables, anchors and "
                                         "passive obstacles; On/ClutterOn child-parent pairs exempt; touching allowed).")
OnRelationValidator = _make("on_relation", "Every On holds: footprint inside the parent inset by edge_margin_m "
                                           "(overlap=True: intersecting on X and Y), bottom in (top - tol, top + "
                                           "clearance_m + tol] with tol = on_relation_z_tolerance_m.")
ClutterOnRelationValidator = _make("clutter_on_relation", "Every ClutterOn release lies inside its release region "
                                                          "and clears the support by clearance_m (1 um slack).")
NextToValidator = _make("next_to", "Every NextTo holds: right side and cross position within tolerance_m, gap in "
                                   "[distance_m, distance_m + tolerance_m].")
NotNextToValidator = _make("not_next_to", "Every NotNextTo keep-out region is cleared within tolerance_m.")
AlignWithValidator = _make("align_with", "Every AlignWith centre error is within tolerance_m.")
FaceToValidator = _make("face_to", "Every FaceTo subject has a defined heading (not at its target's XY).")

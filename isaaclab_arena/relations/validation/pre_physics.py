"""Pre-physics validators: they check solved candidate batches before physics is advanced."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Sequence

from isaaclab_arena.relations.validation.types import ValidationCost, ValidationStage
from isaaclab_arena.relations.validation.validator import PlacementValidator

if TYPE_CHECKING:
    from isaaclab_arena.relations.solving.placement_candidate import PlacementCandidateBatch


class PrePhysicsPlacementValidator(PlacementValidator):
    """Checks solved candidates before physics. Subclass, set ``check``, implement ``validate_batch``
    returning one bool per candidate in batch order, and decorate with ``@register_validator``.

    ``cost`` is ``inexpensive`` (runs on every candidate) or ``expensive`` (runs only on candidates that
    passed every required inexpensive check). The batch is read-only: positions ``(B, n, 3)`` env-local
    metres, ``candidates`` per-candidate views.
    """

    stage: ClassVar[ValidationStage] = ValidationStage.PRE_PHYSICS
    cost: ClassVar[ValidationCost] = ValidationCost.INEXPENSIVE

    def __init__(self, placer_params=None):
        self.placer_params = placer_params

    @classmethod
    def is_available(cls) -> bool:
        """False when the validator's dependencies are missing (it is then not used)."""
        return True

    @classmethod
    def applies_to(cls, placer_params) -> bool:
        """False when the check has nothing to judge under these settings (``ik_reachable`` without an embodiment);
        the placer then leaves it out, as if it were unavailable."""
        return True

    def validate_batch(self, batch: "PlacementCandidateBatch", collision_objects: Sequence) -> Sequence[bool]:
        raise NotImplementedError(f"{type(self).__name__}.validate_batch")

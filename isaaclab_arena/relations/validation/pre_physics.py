"""Base classes of placement validators (pre-physics: they check solved candidate batches)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, ClassVar, Sequence

from isaaclab_arena.relations.validation.types import PlacementValidatorReport, ValidationCost, ValidationStage

if TYPE_CHECKING:
    from isaaclab_arena.relations.placement_candidate import PlacementCandidateBatch


class PlacementValidator:
    """Common base: a unique ``check`` name and the stage it runs in."""

    check: ClassVar[str] = ""
    stage: ClassVar[ValidationStage] = ValidationStage.PRE_PHYSICS

    def settings(self) -> dict[str, Any]:
        if dataclasses.is_dataclass(self):
            return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {}

    def report(self, passed: bool, reason: str = "") -> PlacementValidatorReport:
        return PlacementValidatorReport(check=self.check, passed=bool(passed), reason=reason, settings=self.settings())


class PrePhysicsPlacementValidator(PlacementValidator):
    """Checks solved candidates before physics. Subclass, set ``check``, implement ``validate_batch``
    returning one bool per candidate in batch order, and decorate with ``@register_validator``.

    ``cost`` is ``inexpensive`` (runs on every candidate) or ``expensive`` (runs only on candidates that
    passed every required inexpensive check).
    """

    cost: ClassVar[ValidationCost] = ValidationCost.INEXPENSIVE

    def __init__(self, placer_params=None):
        self.placer_params = placer_params

    @classmethod
    def is_available(cls) -> bool:
        """False when the validator's dependencies are missing (it is then not registered for use)."""
        return True

    def validate_batch(self, batch: "PlacementCandidateBatch", collision_objects: Sequence) -> Sequence[bool]:
        raise NotImplementedError(f"{type(self).__name__}.validate_batch")

"""The check registry: every check name, built-in or registered, and the validator class behind it.

Built-in pre-physics checks (``no_overlap`` and each relation kind's check) are computed by the solve
stage's evaluation (``kinds.CHECK_SLOTS``); ``@register_validator`` adds a validator class (pre- or
post-physics) under its ``check`` name (a user's custom validator, registered when its module is imported).
Optional backends (``ik_reachable``: the builtin batched IK; the cuRobo IK backend) are not registered here: they
are ``PlacementExtension`` values (``relations/extensions.py``) that the caller hands to the placer.
"""

from __future__ import annotations

from isaaclab_arena.relations.kinds import CHECK_SLOTS
from isaaclab_arena.relations.validation.types import ValidationStage
from isaaclab_arena.relations.validation.validator import PlacementValidator

_REGISTRY: dict[str, type[PlacementValidator]] = {}


def register_validator(cls):
    """Class decorator registering a ``PlacementValidator`` subclass under ``cls.check``.

    Re-registering the same check name replaces the earlier class (re-imported modules). The name must be a
    non-empty string that is not a built-in check.
    """
    if not isinstance(cls, type) or not issubclass(cls, PlacementValidator):
        raise TypeError(f"register_validator: {cls!r} is not a PrePhysicsPlacementValidator or "
                        "PostPhysicsPlacementValidator subclass")
    check = getattr(cls, "check", "")
    if not isinstance(check, str) or not check:
        raise ValueError(f"register_validator: {cls.__name__} must set a non-empty class attribute 'check'")
    if check in CHECK_SLOTS:
        raise ValueError(f"register_validator: '{check}' is a built-in check; choose another name for "
                         f"{cls.__name__}")
    _REGISTRY[check] = cls
    return cls


def unregister_validator(check: str) -> None:
    """Removes a registered check (tests, plugins)."""
    _REGISTRY.pop(check, None)


def registered_validators(stage: ValidationStage | None = None) -> dict[str, type[PlacementValidator]]:
    """Check name -> validator class registered with ``@register_validator``, of one stage or all."""
    return {k: v for k, v in _REGISTRY.items() if stage is None or v.stage == stage}


def builtin_checks() -> tuple[str, ...]:
    """The built-in pre-physics checks, in verdict-slot order."""
    return CHECK_SLOTS

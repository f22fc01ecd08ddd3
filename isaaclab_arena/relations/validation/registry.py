"""The check registry: ``@register_validator`` adds a pre-physics validator class under its check name."""

from __future__ import annotations

from isaaclab_arena.relations.validation.pre_physics import PrePhysicsPlacementValidator

_REGISTRY: dict[str, type[PrePhysicsPlacementValidator]] = {}


def register_validator(cls):
    """Class decorator registering a ``PrePhysicsPlacementValidator`` subclass under ``cls.check``.

    Re-registering the same check name replaces the earlier class (re-imported modules); the name must be
    a non-empty string.
    """
    if not isinstance(cls, type) or not issubclass(cls, PrePhysicsPlacementValidator):
        raise TypeError(f"register_validator: {cls!r} is not a PrePhysicsPlacementValidator subclass")
    check = getattr(cls, "check", "")
    if not isinstance(check, str) or not check:
        raise ValueError(f"register_validator: {cls.__name__} must set a non-empty class attribute 'check'")
    _REGISTRY[check] = cls
    return cls


def registered_validators() -> dict[str, type[PrePhysicsPlacementValidator]]:
    """Check name -> validator class, built-in checks included (optional ones only when available)."""
    _load_builtin()
    return dict(_REGISTRY)


def unregister_validator(check: str) -> None:
    """Removes a registered check (tests, plugins)."""
    _REGISTRY.pop(check, None)


_loaded = False


def _load_builtin() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    import isaaclab_arena.relations.validation.checks  # noqa: F401  (registers the inexpensive checks)

    try:
        from isaaclab_arena_curobo import is_curobo_available
    except ImportError:  # pragma: no cover - the package ships with the repo
        return
    if is_curobo_available():  # pragma: no cover - cuRobo is not installed on CPU machines
        import importlib

        try:
            importlib.import_module("isaaclab_arena_curobo.reachability")
        except ImportError:
            pass

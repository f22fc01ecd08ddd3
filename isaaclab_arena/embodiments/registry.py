"""The embodiment registry: registry names (YAML ``embodiment.registry_name``, CLI ``--embodiment``) ->
factories ``factory(instance_name: str, **params) -> Embodiment``.

Built-in embodiments (``isaaclab_arena.embodiments.franka_panda``, ``...kuka_iiwa``) are loaded on the first lookup.
"""

from __future__ import annotations

import copy
import importlib
import inspect
from typing import Any, Callable

from isaaclab_arena.utils.checks import did_you_mean

EmbodimentFactory = Callable[..., Any]

_REGISTRY: dict[str, EmbodimentFactory] = {}
_BUILTIN_MODULES = ("isaaclab_arena.embodiments.franka_panda", "isaaclab_arena.embodiments.kuka_iiwa")
_loaded = False


class UnknownEmbodimentError(KeyError):
    """A registry name no embodiment factory is registered under."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def register_embodiment(registry_name: str) -> Callable[[EmbodimentFactory], EmbodimentFactory]:
    """Decorator registering ``factory(instance_name, **params)`` under ``registry_name``.

    Registering a different factory under a taken name raises ``ValueError`` naming both.
    """
    if not isinstance(registry_name, str) or not registry_name or not registry_name.replace("_", "a").isalnum():
        raise ValueError(f"register_embodiment: registry_name must be a non-empty identifier, got {registry_name!r}")

    def decorator(factory: EmbodimentFactory) -> EmbodimentFactory:
        existing = _REGISTRY.get(registry_name)
        if existing is not None and existing is not factory and (
                existing.__module__, existing.__qualname__) != (factory.__module__, factory.__qualname__):
            raise ValueError(f"register_embodiment: '{registry_name}' is already registered by "
                             f"{existing.__module__}.{existing.__qualname__}")
        _REGISTRY[registry_name] = factory
        return factory

    return decorator


def _ensure_loaded() -> None:
    global _loaded
    if not _loaded:
        for module in _BUILTIN_MODULES:
            importlib.import_module(module)
        _loaded = True


def list_embodiments() -> list[str]:
    """Sorted registry names of every registered embodiment."""
    _ensure_loaded()
    return sorted(_REGISTRY)


def get_embodiment_factory(registry_name: str) -> EmbodimentFactory:
    """The factory registered as ``registry_name``; :class:`UnknownEmbodimentError` names the known ones."""
    _ensure_loaded()
    try:
        return _REGISTRY[registry_name]
    except (KeyError, TypeError):
        known = sorted(_REGISTRY)
        raise UnknownEmbodimentError(f"Unknown embodiment registry_name {registry_name!r}"
                                     f"{did_you_mean(registry_name, known)}; registered "
                                     f"embodiments: {', '.join(known)}") from None


def make_embodiment(registry_name: str, instance_name: str = "robot", params: dict | None = None):
    """Builds the embodiment registered as ``registry_name`` with ``params``.

    Raises:
        UnknownEmbodimentError: ``registry_name`` is not registered (the message lists the known names).
        ValueError: A parameter the factory does not take (the message lists the accepted ones).
    """
    factory = get_embodiment_factory(registry_name)
    params = dict(params or {})
    sig = inspect.signature(factory)
    accepted = [p.name for i, p in enumerate(sig.parameters.values()) if i > 0]
    unknown = [k for k in params if k not in accepted]
    if unknown:
        raise ValueError(f"embodiment '{instance_name}' (registry_name '{registry_name}'): unknown parameter "
                         f"{unknown[0]!r}; accepted parameters: {', '.join(accepted) or 'none'}")
    embodiment = factory(instance_name, **copy.deepcopy(params))
    if embodiment.registry_name is None:
        embodiment.registry_name = registry_name
        embodiment.registry_params = copy.deepcopy(params)
    return embodiment

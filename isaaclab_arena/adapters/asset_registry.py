"""The asset registry: registry names (YAML ``registry_name``) -> asset factories (adapter layer).

A factory builds one scene asset: ``factory(instance_name: str, **params) -> Object | Background``.
Register one with the decorator::

    from isaaclab_arena.adapters.asset_registry import register_asset

    @register_asset("mug")
    def make_mug(instance_name: str, initial_pose=None, collision_mode=None):
        return Object(instance_name, UsdFileCfg(...), ...)

Lookups (``get_registered_asset``, ``list_registered_assets``, ``build_registered_asset``) first load the
built-in procedural entries (``isaaclab_arena.adapters.procedural``: ``box``, ``cylinder``, ``sphere``,
``usd_file``, ``static_box``, ``usd_background``) and, once, the example assets in
``isaaclab_arena_environments.assets`` when that module exists. It lives in the adapter layer because both
build Isaac Lab spawner configs; importing it installs the USD geometry reader (``isaaclab_arena.adapters``).
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import inspect
from typing import Any, Callable

from isaaclab_arena.assets.asset import Object
from isaaclab_arena.utils import checks
from isaaclab_arena.utils.checks import did_you_mean

AssetFactory = Callable[..., Any]

_REGISTRY: dict[str, AssetFactory] = {}
_LOADED_MODULES: set[str] = set()
#: Modules imported on the first lookup: the built-in entries, then the example assets (if present).
_ENTRY_MODULES = ("isaaclab_arena.adapters.procedural", "isaaclab_arena_environments.assets")


class UnknownAssetError(KeyError):
    """A registry name that no factory is registered under."""

    def __str__(self) -> str:  # KeyError would print the message with quotes around it
        return str(self.args[0]) if self.args else ""


def _qualname(fn: AssetFactory) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def register_asset(registry_name: str) -> Callable[[AssetFactory], AssetFactory]:
    """Decorator that registers ``factory(instance_name, **params)`` under ``registry_name``.

    Re-registering the same module-level function (a module imported twice) is allowed; registering a
    different factory under a name already taken raises ``ValueError`` naming both.
    """
    checks.identifier(registry_name, "register_asset", "registry_name")

    def decorator(factory: AssetFactory) -> AssetFactory:
        if not callable(factory):
            raise TypeError(f"register_asset('{registry_name}'): the factory must be callable, got {factory!r}")
        existing = _REGISTRY.get(registry_name)
        # the same module-level function imported again (a reload) may re-register; anything else may not
        same = existing is factory or (existing is not None and _qualname(existing) == _qualname(factory)
                                       and "<locals>" not in _qualname(factory))
        if existing is not None and not same:
            raise ValueError(f"register_asset: registry name '{registry_name}' is already taken by "
                             f"{_qualname(existing)}; {_qualname(factory)} needs another name")
        _REGISTRY[registry_name] = factory
        return factory

    return decorator


def _ensure_loaded() -> None:
    for module in _ENTRY_MODULES:
        if module in _LOADED_MODULES:
            continue
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # the parent package is missing
            found = False
        if found:
            try:
                importlib.import_module(module)
            except Exception as err:
                raise ImportError(f"asset registry: importing the asset module '{module}' failed: "
                                  f"{type(err).__name__}: {err}") from err
        _LOADED_MODULES.add(module)


def list_registered_assets() -> list[str]:
    """Sorted registry names of every registered asset factory."""
    _ensure_loaded()
    return sorted(_REGISTRY)


def get_registered_asset(registry_name: str) -> AssetFactory:
    """The factory registered under ``registry_name``; ``UnknownAssetError`` lists the known names."""
    _ensure_loaded()
    try:
        return _REGISTRY[registry_name]
    except (KeyError, TypeError):
        known = sorted(_REGISTRY)
        raise UnknownAssetError(f"Unknown asset registry_name {registry_name!r}{did_you_mean(registry_name, known)}; "
                                f"registered assets: "
                                f"{', '.join(known)}") from None


def accepted_params(factory: AssetFactory) -> list[str] | None:
    """Keyword parameters ``factory`` accepts besides ``instance_name``; None when it takes ``**params``.

    A factory can state its parameters in an ``accepted_params`` attribute (a list of names).
    """
    declared = getattr(factory, "accepted_params", None)
    if declared is not None:
        return list(declared)
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):
        return None
    names = []
    for i, p in enumerate(sig.parameters.values()):
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            return None
        if i == 0 or p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.POSITIONAL_ONLY):
            continue  # the first parameter is the instance name
        names.append(p.name)
    return names


def build_registered_asset(registry_name: str, instance_name: str, params: dict | None = None):
    """Builds ``instance_name`` from the factory registered as ``registry_name`` with ``params``.

    Unknown parameter names raise ``ValueError`` naming the asset and the accepted parameters. The
    returned asset keeps ``registry_name`` and ``registry_params`` (a copy of ``params``) so that a spec
    can be written back out.
    """
    factory = get_registered_asset(registry_name)
    params = dict(params or {})
    accepted = accepted_params(factory)
    if accepted is not None:
        unknown = [k for k in params if k not in accepted]
        if unknown:
            raise ValueError(f"asset '{instance_name}' (registry_name '{registry_name}'): unknown parameter "
                             f"{unknown[0]!r}; accepted parameters: {', '.join(accepted) or 'none'}")
    asset = factory(instance_name, **copy.deepcopy(params))
    if not isinstance(asset, Object):
        raise TypeError(f"asset '{instance_name}': the factory registered as '{registry_name}' "
                        f"({_qualname(factory)}) returned {asset!r}; it must return an Object or Background")
    if asset.name != instance_name:
        raise ValueError(f"asset '{instance_name}': the factory registered as '{registry_name}' returned an asset "
                         f"named '{asset.name}'; it must use the instance name it is given")
    if asset.registry_name is None:
        asset.registry_name = registry_name
        asset.registry_params = _plain_copy(params)
    return asset


def _plain_copy(value):
    """A copy of ``value`` made of plain dicts and lists (YAML loaders may hand in dict/list subclasses)."""
    if isinstance(value, dict):
        return {k: _plain_copy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain_copy(v) for v in value]
    return copy.deepcopy(value)

"""The interface through which optional backends plug into placement: ``PlacementExtension``.

The placement core knows no optional backend by name. A backend (the ``ik_reachable`` check with batched IK,
the cuRobo IK backend, the Rerun debug view) implements this interface in its own package and the *caller*
chooses which ones a placer gets: ``ObjectPlacer(params, extensions=[...])`` (``PooledObjectPlacer`` and
``ArenaEnvBuilder`` pass theirs through). ``extensions=None`` means the documented default set,
``isaaclab_arena.placement_extensions.default_extensions()``: the reachability check, the cuRobo IK backend
where its package imports, and the debug view.

What an extension can contribute:

- ``validators``: pre-physics validator classes (``PrePhysicsPlacementValidator`` subclasses, each with its own
  ``check`` name). They join the built-in checks and the ones registered with ``@register_validator``; which of
  them run is then decided by ``ObjectPlacerParams.enabled_checks`` / ``required_checks`` alone.
- ``open_view``: ``open_view(params) -> PlacementView``, the view a placer opens when ``debug_visualize`` or
  ``debug_visualize_output_path`` is set.
- ``setup``: called once by each placer built with the extension, before its checks are chosen (the cuRobo
  extension registers its IK backend there, so that ``ik_reachable`` may use it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence, runtime_checkable


@runtime_checkable
class PlacementView(Protocol):
    """What a placer calls on its debug view: once per compiled scene, once per validated batch."""

    def on_compile(self, problem, assets) -> None:
        """``problem``: the compiled ``PlacementProblem``; ``assets``: the scene's assets."""

    def on_batch(self, validated_batch) -> None:
        """``validated_batch``: the ``ValidatedBatch`` that ``place_problem`` returns."""


@dataclass(frozen=True)
class PlacementExtension:
    """An optional backend, as a placer sees it.

    Attributes:
        name: Short name (``reachability``, ``curobo``, ``debug_view``), used in messages.
        validators: Pre-physics validator classes the extension adds (each a ``PrePhysicsPlacementValidator``
            subclass with a unique ``check``).
        open_view: ``open_view(params: ObjectPlacerParams) -> PlacementView``, or None.
        setup: ``setup() -> None`` run by each placer built with the extension, or None.
    """

    name: str
    validators: tuple[type, ...] = ()
    open_view: Callable[[Any], PlacementView] | None = None
    setup: Callable[[], None] | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"PlacementExtension: name must be a non-empty string, got {self.name!r}")
        from isaaclab_arena.relations.validation.pre_physics import PrePhysicsPlacementValidator

        for cls in self.validators:
            if not (isinstance(cls, type) and issubclass(cls, PrePhysicsPlacementValidator)):
                raise TypeError(f"PlacementExtension '{self.name}': validators must be PrePhysicsPlacementValidator "
                                f"subclasses, got {cls!r}")
        if self.open_view is not None and not callable(self.open_view):
            raise TypeError(f"PlacementExtension '{self.name}': open_view must be callable, got {self.open_view!r}")
        if self.setup is not None and not callable(self.setup):
            raise TypeError(f"PlacementExtension '{self.name}': setup must be callable, got {self.setup!r}")


def checked_extensions(extensions: Sequence[PlacementExtension]) -> tuple[PlacementExtension, ...]:
    """``extensions`` as a tuple, each checked to be a ``PlacementExtension`` and its validators' check names
    unique across the set. (The default set for None is the placer's business: this module imports no
    backend, so that the backends can import it.)"""
    if isinstance(extensions, PlacementExtension) or not isinstance(extensions, (list, tuple)):
        raise TypeError(f"extensions must be a list of PlacementExtension (or None for the default set), got "
                        f"{extensions!r}")
    seen: dict[str, str] = {}
    for ext in extensions:
        if not isinstance(ext, PlacementExtension):
            raise TypeError(f"extensions must hold PlacementExtension values, got {ext!r}")
        for cls in ext.validators:
            if cls.check in seen and seen[cls.check] != ext.name:
                raise ValueError(f"check '{cls.check}' is added by both extension '{seen[cls.check]}' and "
                                 f"'{ext.name}'; pass only one of them")
            seen[cls.check] = ext.name
    return tuple(extensions)


def extension_validators(extensions: Sequence[PlacementExtension]) -> dict[str, type]:
    """Check name -> validator class of every validator the extensions add."""
    return {cls.check: cls for ext in extensions for cls in ext.validators}


def view_opener(extensions: Sequence[PlacementExtension]) -> Callable[[Any], PlacementView] | None:
    """The ``open_view`` of the first extension that has one, or None."""
    return next((ext.open_view for ext in extensions if ext.open_view is not None), None)

"""The catalog of registered assets: one record per registry name (YAML ``registry_name``), for ``--list_assets``
and ``docs/ASSETS.md`` (adapter layer: it builds the assets, which needs the spawner configs and, for USD files,
pxr; never a simulator).

A record holds the registry name, the kind (``Object`` or ``Background``, and the ``object_type``), the size
(extents x, y, z in metres of the asset's axis-aligned bounding box in its own root frame, as the placer sees it:
``Object.get_bounding_box()``), the asset's own collision mode (None: the solver's), the parameters its factory
accepts (with defaults where the factory states them) and the first paragraph of the factory's docstring.

Parameters are read, in this order, from the factory's ``params_cls`` dataclass (the built-in entries,
``isaaclab_arena.adapters.procedural``), its ``accepted_params`` list (defaults from its signature, else from the
parameters every entry shares), or its signature. A factory that takes ``**params`` and declares none of these
has parameters nobody can list: :func:`describe_asset` refuses it with ``AssetCatalogError``.

An asset with a required parameter (``box`` needs ``size``, ``usd_file`` a ``usd_path``) is not built: its size
is "set by parameters" (``size_m`` None) and its kind comes from the factory's return annotation.
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import MISSING, dataclass
from typing import Any, Callable

from isaaclab_arena.assets.asset import Background, Object
from isaaclab_arena.assets.bounding_box import AxisAlignedBoundingBox

#: Parameters every registry entry takes (procedural ``CommonParams``, the example library's ``COMMON_PARAMS``).
COMMON_PARAMS = ("initial_pose", "collision_mode")
#: Shown in place of a size when the asset's size depends on its parameters.
SET_BY_PARAMETERS = "set by parameters"
#: A parameter whose default the factory does not state.
UNSTATED = object()


class AssetCatalogError(ValueError):
    """A registered asset the catalog cannot describe (unreadable parameters, a factory that fails to build)."""


@dataclass(frozen=True)
class AssetParam:
    """One parameter a factory accepts: ``required``, else its ``default`` (``UNSTATED`` when not stated)."""

    name: str
    required: bool = False
    default: Any = UNSTATED

    def label(self) -> str:
        """``size (required)``, ``mass_kg=0.2``, ``color=[0.6, 0.6, 0.6]``, or the bare name (no default, or None)."""
        if self.required:
            return f"{self.name} (required)"
        if self.default is UNSTATED or self.default is None:
            return self.name
        return f"{self.name}={_plain_text(self.default)}"


@dataclass(frozen=True)
class AssetRecord:
    """What a user needs to know to use one registry entry (lengths in metres, the asset's root frame)."""

    registry_name: str
    kind: str  # "Object" or "Background"
    object_type: str | None  # "rigid", "articulation", "base"; None when the asset is not built
    bounds: AxisAlignedBoundingBox | None  # None: set by parameters
    collision_mode: str | None  # the asset's own ("bbox" / "mesh"); None: the solver's collision_mode
    params: tuple[AssetParam, ...]
    summary: str  # first paragraph of the factory's docstring, on one line
    problem: str | None = None  # set instead of raising by build_catalog(strict=False)

    @property
    def size_m(self) -> tuple[float, float, float] | None:
        """Bounding box extents (x, y, z) in metres; None when set by parameters (or not known)."""
        return None if self.bounds is None else self.bounds.size

    @property
    def needs_params(self) -> bool:
        return any(p.required for p in self.params)

    @property
    def kind_label(self) -> str:
        """``Object (rigid)``, ``Background (base)``, or the bare kind when the asset is not built."""
        return f"{self.kind} ({self.object_type})" if self.object_type else self.kind

    @property
    def size_label(self) -> str:
        if self.problem is not None and self.bounds is None:
            return "?"
        return SET_BY_PARAMETERS if self.bounds is None else format_size(self.bounds.size)

    @property
    def collision_label(self) -> str:
        return self.collision_mode or "default"

    def own_params(self) -> tuple[AssetParam, ...]:
        """The parameters besides ``initial_pose`` and ``collision_mode`` when it takes both (listed once,
        for every asset), else all of them."""
        names = {p.name for p in self.params}
        if all(c in names for c in COMMON_PARAMS):
            return tuple(p for p in self.params if p.name not in COMMON_PARAMS)
        return self.params


def format_size(size) -> str:
    """``0.080 x 0.080 x 0.100`` (metres, millimetre precision)."""
    return " x ".join(f"{float(v):.3f}" for v in size)


def _plain_text(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_plain_text(v) for v in value) + "]"
    if hasattr(value, "value") and isinstance(getattr(value, "value"), str):  # enums
        return value.value
    return repr(value) if isinstance(value, str) else str(value)


def _qualname(factory: Callable) -> str:
    return f"{getattr(factory, '__module__', '?')}.{getattr(factory, '__qualname__', repr(factory))}"


def _common_defaults() -> dict[str, Any]:
    from isaaclab_arena.adapters.procedural import CommonParams

    return {f.name: f.default for f in dataclasses.fields(CommonParams)}


def factory_params(registry_name: str, factory: Callable) -> tuple[AssetParam, ...]:
    """The parameters ``factory`` accepts besides the instance name (see the module doc for where they are read).

    Raises ``AssetCatalogError`` naming the asset when they cannot be read (``**params`` and nothing declared).
    """
    params_cls = getattr(factory, "params_cls", None)
    if params_cls is not None and dataclasses.is_dataclass(params_cls):
        fields = {f.name: f for f in dataclasses.fields(params_cls)}
        order = getattr(factory, "accepted_params", None) or list(fields)
        out = []
        for name in order:
            f = fields[name]
            if f.default is not MISSING:
                out.append(AssetParam(name, default=f.default))
            elif f.default_factory is not MISSING:
                out.append(AssetParam(name, default=f.default_factory()))
            else:
                out.append(AssetParam(name, required=True))
        return tuple(out)
    try:
        sig_params = list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):
        sig_params = None
    declared = getattr(factory, "accepted_params", None)
    if declared is not None:
        by_name = {p.name: p for p in (sig_params or [])[1:]}
        common = _common_defaults()
        out = []
        for name in declared:
            p = by_name.get(str(name))
            if p is not None and p.kind is not inspect.Parameter.VAR_KEYWORD:
                out.append(AssetParam(p.name, required=p.default is inspect.Parameter.empty,
                                      default=UNSTATED if p.default is inspect.Parameter.empty else p.default))
            else:
                out.append(AssetParam(str(name), default=common.get(str(name), UNSTATED)))
        return tuple(out)
    where = f"asset '{registry_name}' ({_qualname(factory)})"
    if sig_params is None:
        raise AssetCatalogError(f"{where}: its signature cannot be read, so its parameters cannot be listed; give the "
                                "factory an accepted_params list")
    out = []
    for i, p in enumerate(sig_params):
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            raise AssetCatalogError(f"{where}: it takes **{p.name} and declares no accepted_params, so its parameters "
                                    "cannot be listed; give the factory an accepted_params list of names (or keyword "
                                    "parameters instead of **)")
        if i == 0 or p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.POSITIONAL_ONLY):
            continue  # the first parameter is the instance name
        required = p.default is inspect.Parameter.empty
        out.append(AssetParam(p.name, required=required, default=UNSTATED if required else p.default))
    return tuple(out)


def _summary(factory: Callable) -> str:
    doc = inspect.getdoc(factory) or ""
    return " ".join(doc.split("\n\n", 1)[0].split())


def _declared_kind(factory: Callable) -> str:
    """``Background`` or ``Object`` from the factory's return annotation (a class or its name); Object otherwise."""
    try:
        ann = inspect.signature(factory).return_annotation
    except (TypeError, ValueError):
        return "Object"
    if isinstance(ann, type):
        return "Background" if issubclass(ann, Background) else "Object"
    return "Background" if str(ann).rsplit(".", 1)[-1].strip("'\"") == "Background" else "Object"


def describe_asset(registry_name: str, factory: Callable | None = None) -> AssetRecord:
    """The record of ``registry_name`` (its registered factory unless ``factory`` is given).

    Builds the asset when no parameter is required and reads its bounds (metres); raises ``AssetCatalogError``
    naming the asset when its parameters cannot be read or it cannot be built or measured.
    """
    if factory is None:
        from isaaclab_arena.adapters.asset_registry import get_registered_asset

        factory = get_registered_asset(registry_name)
    params = factory_params(registry_name, factory)
    summary = _summary(factory)
    if any(p.required for p in params):
        return AssetRecord(registry_name, _declared_kind(factory), "base" if _declared_kind(factory) == "Background"
                           else None, None, None, params, summary)
    where = f"asset '{registry_name}' ({_qualname(factory)})"
    try:
        asset = factory(registry_name)
    except Exception as err:  # noqa: BLE001 - reported with the asset's name
        raise AssetCatalogError(f"{where}: building it without parameters failed: {type(err).__name__}: {err}") from err
    if not isinstance(asset, Object):
        raise AssetCatalogError(f"{where}: the factory returned {asset!r}; it must return an Object or Background")
    try:
        bounds = asset.get_bounding_box()
    except Exception as err:  # noqa: BLE001
        raise AssetCatalogError(f"{where}: its bounds cannot be read: {type(err).__name__}: {err}") from err
    kind = "Background" if isinstance(asset, Background) else "Object"
    mode = asset.collision_mode.value if asset.collision_mode is not None else None
    return AssetRecord(registry_name, kind, asset.object_type.value, bounds, mode, params, summary)


def build_catalog(strict: bool = True, names: list[str] | None = None) -> list[AssetRecord]:
    """Records of every registered asset (or of ``names``), sorted by registry name.

    ``strict``: an asset that cannot be described raises ``AssetCatalogError``; otherwise its record carries
    the reason in ``problem`` (size "?", parameters as far as they could be read).
    """
    from isaaclab_arena.adapters.asset_registry import get_registered_asset, list_registered_assets

    records = []
    for name in sorted(names if names is not None else list_registered_assets()):
        factory = get_registered_asset(name)
        try:
            records.append(describe_asset(name, factory))
        except AssetCatalogError as err:
            if strict:
                raise
            try:
                params = factory_params(name, factory)
            except AssetCatalogError:
                params = ()
            records.append(AssetRecord(name, _declared_kind(factory), None, None, None, params, _summary(factory),
                                       problem=str(err)))
    return records


def format_table(records: list[AssetRecord]) -> str:
    """The records as a plain-text table (name, kind, size in m, collision, parameters) with a short legend."""
    shared = all(all(c in {p.name for p in r.params} for c in COMMON_PARAMS) for r in records if r.problem is None)
    rows = [("name", "kind", "size x y z (m)", "collision", "parameters")]
    for r in records:
        params = r.own_params() if shared else r.params
        text = ", ".join(p.label() for p in params) or "-"
        if r.problem is not None:
            text = "? (see below)"
        rows.append((r.registry_name, r.kind_label, r.size_label, r.collision_label, text))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row[:4], widths)) + "  " + row[4] for row in rows]
    lines.insert(1, "-" * min(max(len(ln) for ln in lines), 110))
    lines.append("")
    lines.append(f"{len(records)} registered assets (YAML registry_name). Size: bounding box extents in the asset's "
                 "own frame, metres;")
    lines.append(f"'{SET_BY_PARAMETERS}': the asset needs the parameters marked (required); name=value is a "
                 "default, a bare name is optional.")
    lines.append("Collision 'default': the solver's collision_mode (bbox unless placer_params sets it).")
    if shared:
        lines.append(f"Every asset also takes {' and '.join(COMMON_PARAMS)} (bbox | mesh). Pictures and "
                     "descriptions: docs/ASSETS.md.")
    for r in records:
        if r.problem is not None:
            lines.append(f"problem: {r.problem}")
    return "\n".join(lines)

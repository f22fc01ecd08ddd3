"""Asset prototypes of an exported layout stage: every distinct spawner config authored once, as a class prim.

A prototype lives under ``/Prototypes`` (a root ``class`` prim beside ``/World``: abstract, so neither a viewer nor
a physics parser sees it, and a stage that references the file's default prim ``/World`` does not bring it in).
Each env's object prim references its prototype (an internal reference) and authors only its own pose.

What a prototype holds, mirroring what Isaac Lab spawns for the same config:

* procedural shapes (``CuboidCfg``, ``SphereCfg``, ``CylinderCfg``, ``CapsuleCfg``, ``ConeCfg`` and their
  ``Mesh*`` variants): an ``Xform`` root carrying ``UsdPhysics.RigidBodyAPI`` and ``UsdPhysics.MassAPI`` (from
  ``rigid_props`` / ``mass_props``), a ``geometry/mesh`` child of the matching ``UsdGeom`` type and size
  (a cuboid is a cube of the smallest side scaled to the others, as Isaac Lab spawns it) with
  ``UsdPhysics.CollisionAPI`` (``collision_props``), the colour as ``primvars:displayColor`` and a
  ``UsdPreviewSurface`` material, and a ``UsdPhysics.MaterialAPI`` material when ``physics_material`` is set;
* USD files (``UsdFileCfg``): a reference to the file (its own APIs kept), the config's ``rigid_props`` /
  ``mass_props`` applied on the root, its ``scale`` and ``variants``;
* static assets (backgrounds, ``ObjectType.BASE``): the same without rigid body and mass (colliders only).

Schema fragments other than the plain UsdPhysics ones (e.g. ``PhysxRigidBodyCfg(disable_gravity=True)``) are
written as Isaac Lab 3.0 names them: the fragment's applied schema, attributes ``<namespace>:<camelCaseField>``.
"""

from __future__ import annotations

import math
import re

from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade, Vt

#: Root class prim holding every prototype.
PROTOTYPES_ROOT = "/Prototypes"
#: Procedural shapes, recognised by spawner class name (``CuboidCfg``, ``MeshCylinderCfg``, ...).
SHAPES = ("Cuboid", "Sphere", "Cylinder", "Capsule", "Cone")
_TYPED = {  # UsdPhysics fragments written through the typed API: cfg field -> attribute creator name
    "RigidBodyAPI": {"rigid_body_enabled": "CreateRigidBodyEnabledAttr", "kinematic_enabled": "CreateKinematicEnabledAttr",
                     "starts_asleep": "CreateStartsAsleepAttr"},
    "MassAPI": {"mass": "CreateMassAttr", "density": "CreateDensityAttr"},
    "CollisionAPI": {"collision_enabled": "CreateCollisionEnabledAttr"},
}


def shape_kind(spawn_cfg) -> str | None:
    """``Cuboid`` / ``Sphere`` / ``Cylinder`` / ``Capsule`` / ``Cone`` for a procedural shape spawner, else None."""
    name = type(spawn_cfg).__name__
    return next((s for s in SHAPES if s in name), None)


def prototype_key(spawn_cfg, static: bool) -> str:
    """Identity of a prototype: two assets share one when their spawner configs are equal (and both static or both
    not). ``repr`` of a configclass lists every field."""
    return f"{'static' if static else 'dynamic'}:{type(spawn_cfg).__module__}.{spawn_cfg!r}"


# ---- schema fragments (rigid_props, mass_props, collision_props, articulation_props) ------------------------------
def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _value_type(value):
    if isinstance(value, bool):
        return Sdf.ValueTypeNames.Bool, value
    if isinstance(value, int):
        return Sdf.ValueTypeNames.Int, value
    if isinstance(value, float):
        return Sdf.ValueTypeNames.Float, value
    if isinstance(value, str):
        return Sdf.ValueTypeNames.Token, value
    if isinstance(value, (tuple, list)) and len(value) == 3 and all(isinstance(v, (int, float)) for v in value):
        return Sdf.ValueTypeNames.Float3, Gf.Vec3f(*map(float, value))
    return None, None


def _fields(cfg) -> list[tuple[str, object, type]]:
    """(field, value, declaring class) of every set (non-None) data field of a fragment config."""
    out = []
    for name in getattr(cfg, "__dataclass_fields__", {}):
        if name == "func" or name.startswith("_"):
            continue
        value = getattr(cfg, name, None)
        if value is None:
            continue
        owner = next((k for k in type(cfg).__mro__ if name in k.__dict__.get("__annotations__", {})), type(cfg))
        out.append((name, value, owner))
    return out


def apply_fragment(prim: Usd.Prim, cfg, implied: str | None = None) -> list[str]:
    """Writes one schema fragment config (or a list of them) on ``prim``; returns what was not written.

    ``implied`` is the UsdPhysics API the fragment's slot stands for (``RigidBodyAPI`` for ``rigid_props``,
    ``MassAPI``, ``CollisionAPI``): it is applied even when no field is set, as Isaac Lab does."""
    if cfg is None:
        return []
    if isinstance(cfg, (list, tuple)):
        return [s for c in cfg for s in apply_fragment(prim, c, implied)]
    skipped = []
    typed = getattr(UsdPhysics, implied).Apply(prim) if implied is not None else None
    exceptions = {f: (schema, ns) for schema, (ns, fs) in (getattr(cfg, "_usd_field_exceptions", None) or {}).items()
                  for f in fs}
    for name, value, owner in _fields(cfg):
        if name in exceptions:
            schema, namespace = exceptions[name]
        else:
            schema, namespace = getattr(owner, "_usd_applied_schema", None), getattr(owner, "_usd_namespace", None)
        creator = _TYPED.get(implied or "", {}).get(name) if namespace == "physics" else None
        if creator is not None and typed is not None:
            getattr(typed, creator)(value)
            continue
        type_name, usd_value = _value_type(value)
        if namespace is None or type_name is None:
            skipped.append(f"{type(cfg).__name__}.{name}")
            continue
        if schema and schema not in prim.GetAppliedSchemas():
            prim.AddAppliedSchema(schema)
        prim.CreateAttribute(f"{namespace}:{_camel(name)}", type_name).Set(usd_value)
    return skipped


# ---- materials -----------------------------------------------------------------------------------------------------
def _visual_material(stage: Usd.Stage, geom: Usd.Prim, path: str, material_cfg) -> None:
    color = getattr(material_cfg, "diffuse_color", None)
    if color is None:
        return
    rgb = Gf.Vec3f(*map(float, color))
    UsdGeom.Gprim(geom).CreateDisplayColorAttr(Vt.Vec3fArray([rgb]))
    material = UsdShade.Material.Define(stage, path)
    shader = UsdShade.Shader.Define(stage, f"{path}/Shader")
    shader.CreateIdAttr("UsdPreviewSurface")
    shader.CreateInput("diffuseColor", Sdf.ValueTypeNames.Color3f).Set(rgb)
    for name in ("roughness", "metallic", "opacity"):
        value = getattr(material_cfg, name, None)
        if value is not None:
            shader.CreateInput(name, Sdf.ValueTypeNames.Float).Set(float(value))
    emissive = getattr(material_cfg, "emissive_color", None)
    if emissive is not None:
        shader.CreateInput("emissiveColor", Sdf.ValueTypeNames.Color3f).Set(Gf.Vec3f(*map(float, emissive)))
    material.CreateSurfaceOutput().ConnectToSource(shader.ConnectableAPI(), "surface")
    UsdShade.MaterialBindingAPI.Apply(geom).Bind(material)


def _physics_material(stage: Usd.Stage, geom: Usd.Prim, path: str, material_cfg) -> list[str]:
    material = UsdShade.Material.Define(stage, path)
    api = UsdPhysics.MaterialAPI.Apply(material.GetPrim())
    skipped = []
    for name, value, _ in _fields(material_cfg):
        creator = {"static_friction": api.CreateStaticFrictionAttr, "dynamic_friction": api.CreateDynamicFrictionAttr,
                   "restitution": api.CreateRestitutionAttr, "density": api.CreateDensityAttr}.get(name)
        if creator is not None:
            creator(float(value))
        else:
            skipped.append(f"{type(material_cfg).__name__}.{name}")
    UsdShade.MaterialBindingAPI.Apply(geom).Bind(material, UsdShade.Tokens.weakerThanDescendants, "physics")
    return skipped


# ---- procedural shapes ---------------------------------------------------------------------------------------------
def _shape_geometry(stage: Usd.Stage, path: str, cfg, kind: str) -> Usd.Prim:
    """The ``UsdGeom`` prim of a procedural shape at ``path``, sized from the config's own fields (metres)."""
    axis = str(getattr(cfg, "axis", "Z")).upper()
    if kind == "Cuboid":
        size = tuple(float(v) for v in cfg.size)
        side = min(size)
        geom = UsdGeom.Cube.Define(stage, path)
        geom.CreateSizeAttr(side)
        geom.CreateExtentAttr(Vt.Vec3fArray([Gf.Vec3f(-side / 2), Gf.Vec3f(side / 2)]))
        if any(not math.isclose(v, side) for v in size):
            UsdGeom.Xformable(geom).AddScaleOp().Set(Gf.Vec3f(*[v / side for v in size]))
        return geom.GetPrim()
    if kind == "Sphere":
        r = float(cfg.radius)
        geom = UsdGeom.Sphere.Define(stage, path)
        geom.CreateRadiusAttr(r)
        geom.CreateExtentAttr(Vt.Vec3fArray([Gf.Vec3f(-r), Gf.Vec3f(r)]))
        return geom.GetPrim()
    schema = {"Cylinder": UsdGeom.Cylinder, "Capsule": UsdGeom.Capsule, "Cone": UsdGeom.Cone}[kind]
    r, h = float(cfg.radius), float(cfg.height)
    geom = schema.Define(stage, path)
    geom.CreateRadiusAttr(r)
    geom.CreateHeightAttr(h)
    geom.CreateAxisAttr(axis)
    half_len = h / 2 + (r if kind == "Capsule" else 0.0)
    half = [r, r, r]
    half["XYZ".index(axis)] = half_len
    geom.CreateExtentAttr(Vt.Vec3fArray([Gf.Vec3f(*[-v for v in half]), Gf.Vec3f(*half)]))
    return geom.GetPrim()


def author_shape(stage: Usd.Stage, path: str, cfg, static: bool) -> list[str]:
    """A procedural shape prototype at ``path`` (see the module docstring); returns the config fields not written."""
    kind = shape_kind(cfg)
    root = stage.CreateClassPrim(path)
    root.SetTypeName("Xform")
    UsdGeom.Xform.Define(stage, f"{path}/geometry")
    geom = _shape_geometry(stage, f"{path}/geometry/mesh", cfg, kind)
    skipped = []
    if getattr(cfg, "collision_props", None) is not None:
        skipped += apply_fragment(geom, cfg.collision_props, "CollisionAPI")
    if getattr(cfg, "visual_material", None) is not None:
        _visual_material(stage, geom, f"{path}/geometry/{_material_name(cfg, 'visual_material_path')}", cfg.visual_material)
    if getattr(cfg, "physics_material", None) is not None:
        name = _material_name(cfg, "physics_material_path")
        if name == _material_name(cfg, "visual_material_path"):
            name += "_physics"
        skipped += _physics_material(stage, geom, f"{path}/geometry/{name}", cfg.physics_material)
    if getattr(cfg, "visible", True) is False:
        UsdGeom.Imageable(geom).CreateVisibilityAttr(UsdGeom.Tokens.invisible)
    if not static:
        skipped += apply_fragment(root, getattr(cfg, "mass_props", None), "MassAPI")
        skipped += apply_fragment(root, getattr(cfg, "rigid_props", None), "RigidBodyAPI")
    return skipped


def _material_name(cfg, field: str) -> str:
    name = str(getattr(cfg, field, None) or "material").strip("/").split("/")[-1]
    return name if Sdf.Path.IsValidIdentifier(name) else "material"


# ---- USD files -----------------------------------------------------------------------------------------------------
def author_usd_file(stage: Usd.Stage, path: str, cfg, static: bool, asset_path: str) -> list[str]:
    """A prototype referencing the USD file ``asset_path`` (as written in the stage) with the config's overrides.

    Returns the config fields not written. The prototype root has no type of its own: it takes the file's."""
    root = stage.CreateClassPrim(path)
    root.GetReferences().AddReference(asset_path)
    variants = getattr(cfg, "variants", None)
    if isinstance(variants, dict):
        for vset, choice in variants.items():
            root.GetVariantSets().AddVariantSet(str(vset)).SetVariantSelection(str(choice))
    skipped = []
    if not static:
        skipped += apply_fragment(root, getattr(cfg, "mass_props", None), "MassAPI")
        skipped += apply_fragment(root, getattr(cfg, "rigid_props", None), "RigidBodyAPI")
    if getattr(cfg, "collision_props", None) is not None:  # Isaac Lab modifies the colliders the file has
        for prim in Usd.PrimRange(root, Usd.PrimAllPrimsPredicate):
            if prim.HasAPI(UsdPhysics.CollisionAPI):
                skipped += apply_fragment(prim, cfg.collision_props, "CollisionAPI")
    for name in ("articulation_props", "visual_material", "physics_material", "joint_drive_props"):
        if getattr(cfg, name, None) is not None:
            skipped.append(f"{type(cfg).__name__}.{name}")
    return sorted(set(skipped))


def scale_of(cfg) -> tuple[float, float, float] | None:
    """A USD file config's ``scale`` as three floats, None when it is absent or 1."""
    scale = getattr(cfg, "scale", None)
    if scale is None:
        return None
    values = (float(scale),) * 3 if isinstance(scale, (int, float)) else tuple(float(v) for v in scale)
    return None if all(math.isclose(v, 1.0) for v in values) else values


def matching_prims(root: Usd.Prim, pattern: str, predicate) -> list[Usd.Prim]:
    """Prims below ``root`` whose path relative to it (``/a/b``) matches the regex ``pattern`` and ``predicate``."""
    base = str(root.GetPath())
    regex = re.compile(pattern)
    return [p for p in Usd.PrimRange(root, Usd.PrimAllPrimsPredicate)
            if p != root and predicate(p) and regex.fullmatch(str(p.GetPath())[len(base):])]

"""Collision meshes read from USD with pxr and trimesh (adapter side: the placement core never imports this).

``usd_collision_mesh(usd_path, prim_path)`` returns the colliders of a prim subtree as triangle meshes in the
asset's root frame (the file's default prim, its own transform excluded; every transform and scale below it
applied; metres via ``metersPerUnit``; times the spawner's ``scale``). It honours what PhysX would collide
with:

- prims carrying ``PhysicsCollisionAPI`` (with ``physics:collisionEnabled`` not false), active, instance
  proxies included;
- ``Mesh`` prims by their ``PhysicsMeshCollisionAPI`` approximation: ``convexHull`` -> the hull of the points,
  ``convexDecomposition`` -> convex parts (CoACD, seeded, at most ``physxConvexDecompositionCollision:
  maxConvexHulls`` parts when authored), ``boundingCube`` -> the local box of the points, ``boundingSphere``
  -> the enclosing sphere, ``none`` (the schema default), ``meshSimplification`` and ``sdf`` -> the
  triangles themselves;
- procedural ``Cube``, ``Sphere``, ``Cylinder``, ``Capsule`` and ``Cone`` prims as their meshes.

A subtree without any collider raises ``NoCollisionMeshError`` naming the asset, the prim and the file.
``spawn_cfg_collision_mesh`` does the same for an Isaac Lab spawner config (procedural shapes, USD files).
"""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass

import numpy as np

from isaaclab_arena.assets.geometry_reader import ROUND_SECTIONS, shape_mesh
from isaaclab_arena.utils.lazy_import import trimesh  # imported on first use (0.5 s with scipy and networkx)

#: Approximations whose collider is the authored triangles.
TRIANGLE_APPROXIMATIONS = ("none", "meshSimplification", "sdf")


class NoCollisionMeshError(ValueError):
    """The prim subtree has no collider whose mesh can be extracted."""


@dataclass(frozen=True)
class CollisionPart:
    """One collider: ``prim_path`` (absolute in the file), how it is approximated, its mesh (root frame, m)."""

    prim_path: str
    approximation: str
    mesh: trimesh.Trimesh


@dataclass(frozen=True)
class CollisionMesh:
    """The colliders of one asset (or prim subtree) in the asset's root frame, metres."""

    asset: str
    source: str
    parts: tuple[CollisionPart, ...]

    @functools.cached_property
    def mesh(self) -> trimesh.Trimesh:
        """All parts as one mesh (closed parts stay closed shells; overlapping shells are not merged)."""
        return trimesh.util.concatenate([p.mesh for p in self.parts])

    @property
    def vertices(self) -> np.ndarray:
        """(V, 3) float64 vertices of :attr:`mesh`."""
        return np.asarray(self.mesh.vertices, dtype=np.float64)

    @property
    def faces(self) -> np.ndarray:
        """(F, 3) int64 triangles of :attr:`mesh`."""
        return np.asarray(self.mesh.faces, dtype=np.int64)


# ------------------------------------------------------------------------------------- stage access
def _open(usd_path: str):
    from pxr import Usd

    path = os.path.abspath(usd_path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"USD file not found: {usd_path}")
    stage = Usd.Stage.Open(path)
    if stage is None:
        raise ValueError(f"USD file could not be opened: {usd_path}")
    return stage


def _root_prim(stage, where: str):
    root = stage.GetDefaultPrim()
    if not root or not root.IsValid():
        children = list(stage.GetPseudoRoot().GetChildren())
        if not children:
            raise NoCollisionMeshError(f"{where}: the file has no prims")
        root = children[0]
    return root


def _to_numpy(matrix) -> np.ndarray:
    """A Gf.Matrix4d (row vectors, p' = p M) as a 4x4 numpy transform for column vectors."""
    return np.array(matrix, dtype=np.float64).reshape(4, 4).T


def _axis_rotation(axis: str) -> np.ndarray:
    """Rotation taking trimesh's +Z shape axis to the USD prim's ``axis`` token."""
    if axis == "X":
        return trimesh.transformations.rotation_matrix(np.pi / 2, [0, 1, 0])
    if axis == "Y":
        return trimesh.transformations.rotation_matrix(-np.pi / 2, [1, 0, 0])
    return np.eye(4)


# ------------------------------------------------------------------------------------ one collider
def _mesh_triangles(prim, where: str) -> trimesh.Trimesh:
    """The triangles of a ``Mesh`` prim in its own frame (polygons fanned, left-handed winding flipped)."""
    from pxr import UsdGeom

    mesh = UsdGeom.Mesh(prim)
    points = np.asarray(mesh.GetPointsAttr().Get() or [], dtype=np.float64).reshape(-1, 3)
    counts = np.asarray(mesh.GetFaceVertexCountsAttr().Get() or [], dtype=np.int64)
    indices = np.asarray(mesh.GetFaceVertexIndicesAttr().Get() or [], dtype=np.int64)
    if len(points) == 0 or len(counts) == 0 or counts.sum() != len(indices) or np.any(counts < 3):
        raise NoCollisionMeshError(f"{where}: Mesh prim {prim.GetPath()} has no valid points/faces "
                                   f"({len(points)} points, {len(counts)} faces)")
    if len(indices) and (indices.min() < 0 or indices.max() >= len(points)):
        raise NoCollisionMeshError(f"{where}: Mesh prim {prim.GetPath()} has face indices outside its "
                                   f"{len(points)} points")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    # polygon with n corners -> n - 2 triangles (first corner, k, k + 1)
    tri_poly = np.repeat(np.arange(len(counts)), counts - 2)
    tri_k = np.arange(len(tri_poly)) - np.repeat(np.cumsum(counts - 2) - (counts - 2), counts - 2) + 1
    first = indices[starts[tri_poly]]
    faces = np.c_[first, indices[starts[tri_poly] + tri_k], indices[starts[tri_poly] + tri_k + 1]]
    if mesh.GetOrientationAttr().Get() == UsdGeom.Tokens.leftHanded:
        faces = faces[:, ::-1]
    return trimesh.Trimesh(points, faces, process=True)


@functools.lru_cache(maxsize=32)
def _coacd_parts(key: str, vertices: bytes, faces: bytes, max_hulls: int, seed: int) -> tuple:
    import coacd

    coacd.set_log_level("error")
    v = np.frombuffer(vertices, dtype=np.float64).reshape(-1, 3)
    f = np.frombuffer(faces, dtype=np.int64).reshape(-1, 3)
    parts = coacd.run_coacd(coacd.Mesh(v, f), threshold=0.05, max_convex_hull=max_hulls, seed=seed,
                            mcts_iterations=60, resolution=1000)
    return tuple((np.asarray(pv, dtype=np.float64), np.asarray(pf, dtype=np.int64)) for pv, pf in parts)


def convex_decomposition(mesh: trimesh.Trimesh, max_hulls: int = -1, seed: int = 0) -> list[trimesh.Trimesh]:
    """Convex parts of ``mesh`` (CoACD: concavity threshold 0.05, 60 tree-search iterations, seeded; cached
    by content; seconds per mesh on a CPU core), each as its convex hull."""
    v = np.ascontiguousarray(mesh.vertices, dtype=np.float64)
    f = np.ascontiguousarray(mesh.faces, dtype=np.int64)
    key = hashlib.sha1(v.tobytes() + f.tobytes()).hexdigest()
    parts = _coacd_parts(key, v.tobytes(), f.tobytes(), int(max_hulls), int(seed))
    return [trimesh.convex.convex_hull(pv) for pv, _ in parts]


def _approximated(prim, where: str) -> list[tuple[str, trimesh.Trimesh]]:
    """(approximation, mesh in the prim's own frame) for each collider the prim stands for."""
    from pxr import UsdGeom, UsdPhysics

    type_name = prim.GetTypeName()
    if type_name == "Mesh":
        approx = "none"
        if prim.HasAPI(UsdPhysics.MeshCollisionAPI):
            approx = str(UsdPhysics.MeshCollisionAPI(prim).GetApproximationAttr().Get() or "none")
        tri = _mesh_triangles(prim, where)
        if approx in TRIANGLE_APPROXIMATIONS:
            return [(approx, tri)]
        if approx == "convexHull":
            return [(approx, trimesh.convex.convex_hull(tri.vertices))]
        if approx == "convexDecomposition":
            attr = prim.GetAttribute("physxConvexDecompositionCollision:maxConvexHulls")
            max_hulls = int(attr.Get()) if attr and attr.HasAuthoredValue() else -1
            return [(approx, part) for part in convex_decomposition(tri, max_hulls)]
        if approx == "boundingCube":
            lo, hi = tri.vertices.min(0), tri.vertices.max(0)
            box = trimesh.creation.box(extents=hi - lo,
                                       transform=trimesh.transformations.translation_matrix(0.5 * (lo + hi)))
            return [(approx, box)]
        if approx == "boundingSphere":
            centre = 0.5 * (tri.vertices.min(0) + tri.vertices.max(0))
            radius = float(np.linalg.norm(tri.vertices - centre, axis=1).max())
            sphere = trimesh.creation.icosphere(subdivisions=2, radius=radius)
            sphere.apply_translation(centre)
            return [(approx, sphere)]
        raise NoCollisionMeshError(f"{where}: Mesh prim {prim.GetPath()} has physics:approximation '{approx}'; "
                                   f"accepted: none, convexHull, convexDecomposition, boundingCube, "
                                   f"boundingSphere, meshSimplification, sdf")
    if type_name == "Cube":
        size = float(UsdGeom.Cube(prim).GetSizeAttr().Get())
        return [("shape", trimesh.creation.box(extents=(size, size, size)))]
    if type_name == "Sphere":
        radius = float(UsdGeom.Sphere(prim).GetRadiusAttr().Get())
        return [("shape", trimesh.creation.icosphere(subdivisions=3, radius=radius))]
    if type_name in ("Cylinder", "Capsule", "Cone"):
        gprim = getattr(UsdGeom, type_name)(prim)
        radius = float(gprim.GetRadiusAttr().Get())
        height = float(gprim.GetHeightAttr().Get())
        if type_name == "Cylinder":
            shape = trimesh.creation.cylinder(radius=radius, height=height, sections=ROUND_SECTIONS)
        elif type_name == "Capsule":  # USD height is the cylinder part; trimesh's is centre to centre too
            shape = trimesh.creation.capsule(height=height, radius=radius, count=[ROUND_SECTIONS, ROUND_SECTIONS])
        else:
            shape = trimesh.creation.cone(radius=radius, height=height, sections=ROUND_SECTIONS)
            shape.apply_translation((0.0, 0.0, -0.5 * height))  # USD cones are centred on their origin
        shape.apply_transform(_axis_rotation(str(gprim.GetAxisAttr().Get())))
        return [("shape", shape)]
    return []


def _is_collider(prim) -> bool:
    from pxr import UsdPhysics

    if not prim.HasAPI(UsdPhysics.CollisionAPI):
        return False
    enabled = UsdPhysics.CollisionAPI(prim).GetCollisionEnabledAttr().Get()
    return enabled is None or bool(enabled)


# ------------------------------------------------------------------------------------------ public
def stage_collision_mesh(stage, prim_path: str = "", asset_name: str = "asset", source: str = "",
                         scale=(1.0, 1.0, 1.0), exclude_prims: tuple[str, ...] = ()) -> CollisionMesh:
    """Colliders under ``prim_path`` (relative to the default prim; empty: the whole asset) of an open stage,
    less the subtrees ``exclude_prims`` (relative to the default prim; a path not in the file is an error)."""
    from pxr import Usd, UsdGeom

    source = source or stage.GetRootLayer().identifier
    where = f"asset '{asset_name}' ({source})"
    root = _root_prim(stage, where)
    rel = str(prim_path or "").strip("/")
    prim = stage.GetPrimAtPath(root.GetPath().AppendPath(rel)) if rel else root
    if not prim or not prim.IsValid():
        raise NoCollisionMeshError(f"{where}: prim '{prim_path}' does not exist under {root.GetPath()}")
    skip = []
    for ex in exclude_prims:
        ex_prim = stage.GetPrimAtPath(root.GetPath().AppendPath(str(ex).strip("/")))
        if not ex_prim or not ex_prim.IsValid():
            raise NoCollisionMeshError(f"{where}: prim '{ex}' to leave out does not exist under {root.GetPath()}")
        skip.append(ex_prim.GetPath())
    xf = UsdGeom.XformCache(Usd.TimeCode.Default())
    root_inv = _to_numpy(xf.GetLocalToWorldTransform(root).GetInverse())
    mpu = float(UsdGeom.GetStageMetersPerUnit(stage) or 1.0)
    post = np.diag([*(mpu * float(s) for s in scale), 1.0])
    parts = []
    for p in Usd.PrimRange(prim, Usd.TraverseInstanceProxies()):
        if not _is_collider(p) or any(p.GetPath().HasPrefix(s) for s in skip):
            continue
        to_root = post @ root_inv @ _to_numpy(xf.GetLocalToWorldTransform(p))
        for approx, mesh in _approximated(p, where):
            mesh = mesh.copy()
            mesh.apply_transform(to_root)
            parts.append(CollisionPart(str(p.GetPath()), approx, mesh))
    if not parts:
        raise NoCollisionMeshError(f"{where}: prim {prim.GetPath()} has no collider (no Mesh, Cube, Sphere, "
                                   "Cylinder, Capsule or Cone prim with PhysicsCollisionAPI under it"
                                   + (f", leaving out {list(exclude_prims)}" if exclude_prims else "")
                                   + "), so it has no collision mesh")
    return CollisionMesh(asset_name, source, tuple(parts))


def usd_collision_mesh(usd_path: str, prim_path: str = "", asset_name: str | None = None,
                       scale=(1.0, 1.0, 1.0), exclude_prims: tuple[str, ...] = ()) -> CollisionMesh:
    """Colliders of ``usd_path`` under ``prim_path`` (relative to the default prim) in the root frame, metres,
    less the subtrees ``exclude_prims`` (relative to the default prim too)."""
    name = asset_name or os.path.splitext(os.path.basename(usd_path))[0]
    return stage_collision_mesh(_open(usd_path), prim_path, name, usd_path, scale, exclude_prims)


def spawn_cfg_collision_mesh(spawn_cfg, asset_name: str, exclude_prims: tuple[str, ...] = ()) -> CollisionMesh:
    """The collision mesh an Isaac Lab spawner config creates, in the spawned prim's frame (metres).

    Procedural shapes (``CuboidCfg``, ``SphereCfg``, ``CylinderCfg``, ``CapsuleCfg``, ``ConeCfg`` and their
    mesh variants) become their meshes (``geometry_reader.shape_mesh``); ``UsdFileCfg`` is read with
    :func:`usd_collision_mesh` (times its ``scale``), less the prim subtrees ``exclude_prims`` (relative to the
    default prim). Anything else raises ``NoCollisionMeshError`` naming the asset.
    """
    name = type(spawn_cfg).__name__
    if hasattr(spawn_cfg, "usd_path") and "Usd" in name:
        return usd_collision_mesh(spawn_cfg.usd_path, "", asset_name, tuple(getattr(spawn_cfg, "scale", None) or (1, 1, 1)),
                                  exclude_prims)
    shape = shape_mesh(spawn_cfg)
    if shape is None:
        raise NoCollisionMeshError(f"asset '{asset_name}': spawner {name} has no collision mesh the project can "
                                   "derive; use a procedural shape or a UsdFileCfg whose prims carry "
                                   "PhysicsCollisionAPI")
    return CollisionMesh(asset_name, name, (CollisionPart("", "shape", shape),))

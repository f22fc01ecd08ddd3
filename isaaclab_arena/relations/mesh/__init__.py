"""MESH collision geometry for the solver and the ``no_overlap`` check (placement core: warp, torch, numpy,
trimesh; nothing from USD or Isaac Lab).

In MESH mode a movable subject is covered by up to ``num_spheres`` spheres (``sphere_cover``) and a target
is a warp ``Mesh`` queried for signed distance (``target_mesh``, ``sdf``). Every geometry is in its asset's
root frame, in metres; poses are env-local world (position, xyzw quaternion).

- ``sphere_cover.fit_sphere_cover(vertices, faces, num_spheres=30, seed=0) -> SphereCover``
- ``target_mesh.prepare_target(name, vertices, faces, allow_open_mesh=False) -> TargetMesh``
- ``geometry_tables.MeshGeometry.build(...)``, ``no_mesh(name, reason)`` (``[NoCollision]`` once) and
  ``pack_mesh_tables(geometries, geom_index, device) -> MeshTablesHandle`` (the ``MeshTables`` warp struct)
- ``sdf``: the ``@wp.func`` helpers a kernel thread calls: ``mesh_sdf``, ``has_mesh_pair``,
  ``sphere_set_penetration``
- ``penetration.MeshPairQuery`` / ``max_penetration``: B candidates at once, ``cpu`` or ``cuda:0``
"""

from isaaclab_arena.relations.mesh.geometry_tables import MeshGeometry, MeshTablesHandle, no_mesh, pack_mesh_tables
from isaaclab_arena.relations.mesh.penetration import MeshPairQuery, Penetration, max_penetration, mesh_signed_distance
from isaaclab_arena.relations.mesh.sdf import MeshTables, has_mesh_pair, mesh_sdf, sphere_set_penetration
from isaaclab_arena.relations.mesh.sphere_cover import (
    DEFAULT_NUM_SPHERES,
    CoverStats,
    SphereCover,
    cover_stats,
    fit_sphere_cover,
)
from isaaclab_arena.relations.mesh.target_mesh import TargetMesh, is_closed, prepare_target

__all__ = [
    "DEFAULT_NUM_SPHERES",
    "CoverStats",
    "MeshGeometry",
    "MeshPairQuery",
    "MeshTables",
    "MeshTablesHandle",
    "Penetration",
    "SphereCover",
    "TargetMesh",
    "cover_stats",
    "fit_sphere_cover",
    "has_mesh_pair",
    "is_closed",
    "max_penetration",
    "mesh_sdf",
    "mesh_signed_distance",
    "no_mesh",
    "pack_mesh_tables",
    "prepare_target",
    "sphere_set_penetration",
]

"""Collision meshes extracted from USD (``isaaclab_arena/adapters/usd_mesh.py``): approximations, transforms,
procedural prims, spawner configs and the errors for prims without colliders. Expected values are computed
independently with trimesh/numpy in float64."""

from __future__ import annotations

import math

import numpy as np
import pytest

pxr = pytest.importorskip("pxr")
from pxr import Gf, Usd, UsdGeom, UsdPhysics, Vt  # noqa: E402

from isaaclab_arena.adapters.usd_mesh import (  # noqa: E402
    NoCollisionMeshError,
    spawn_cfg_collision_mesh,
    usd_collision_mesh,
)
from isaaclab_arena_environments.assets import library, mesh_shapes  # noqa: E402

# An L-shaped prism: a 0.2 x 0.1 x 0.05 m block with a 0.1 x 0.05 notch cut out of one corner (not convex).
L_OUTLINE = [(0.0, 0.0), (0.2, 0.0), (0.2, 0.05), (0.1, 0.05), (0.1, 0.1), (0.0, 0.1)]
L_HEIGHT = 0.05
L_VOLUME = (0.2 * 0.1 - 0.1 * 0.05) * L_HEIGHT


def _l_prism_polygons():
    """Points and polygons of the L prism: two hexagons (bottom, top) and six quads (sides)."""
    n = len(L_OUTLINE)
    pts = [(x, y, 0.0) for x, y in L_OUTLINE] + [(x, y, L_HEIGHT) for x, y in L_OUTLINE]
    polys = [list(range(n))[::-1], list(range(n, 2 * n))]  # bottom faces -Z, top +Z (counter-clockwise)
    polys += [[i, (i + 1) % n, n + (i + 1) % n, n + i] for i in range(n)]
    return pts, polys


def _stage(path, meters_per_unit=1.0):
    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, meters_per_unit)
    root = UsdGeom.Xform.Define(stage, "/Root")
    stage.SetDefaultPrim(root.GetPrim())
    return stage, root


def _l_mesh(stage, path, approximation=None, left_handed=False):
    pts, polys = _l_prism_polygons()
    if left_handed:
        polys = [p[::-1] for p in polys]
    mesh = UsdGeom.Mesh.Define(stage, path)
    mesh.CreatePointsAttr(Vt.Vec3fArray([Gf.Vec3f(*p) for p in pts]))
    mesh.CreateFaceVertexCountsAttr(Vt.IntArray([len(p) for p in polys]))
    mesh.CreateFaceVertexIndicesAttr(Vt.IntArray([i for p in polys for i in p]))
    if left_handed:
        mesh.CreateOrientationAttr(UsdGeom.Tokens.leftHanded)
    UsdPhysics.CollisionAPI.Apply(mesh.GetPrim())
    if approximation is not None:
        UsdPhysics.MeshCollisionAPI.Apply(mesh.GetPrim()).CreateApproximationAttr(approximation)
    return mesh


@pytest.mark.parametrize("approximation, volume, parts", [
    (None, L_VOLUME, 1),  # no MeshCollisionAPI: the schema default, the triangles
    ("none", L_VOLUME, 1),
    ("meshSimplification", L_VOLUME, 1),
    ("convexHull", 0.2 * 0.1 * L_HEIGHT - 0.5 * 0.1 * 0.05 * L_HEIGHT, 1),  # the notch's diagonal half is filled
    ("boundingCube", 0.2 * 0.1 * L_HEIGHT, 1),
])
def test_mesh_approximations(tmp_path, approximation, volume, parts):
    stage, _ = _stage(tmp_path / "l.usda")
    _l_mesh(stage, "/Root/l", approximation)
    stage.Save()
    cm = usd_collision_mesh(str(tmp_path / "l.usda"))
    assert len(cm.parts) == parts
    assert cm.parts[0].approximation == (approximation or "none")
    assert cm.mesh.is_watertight
    assert cm.mesh.volume == pytest.approx(volume, rel=1e-6)
    np.testing.assert_allclose(cm.mesh.bounds, [[0, 0, 0], [0.2, 0.1, L_HEIGHT]], atol=1e-7)


def test_bounding_sphere_and_left_handed_winding(tmp_path):
    stage, _ = _stage(tmp_path / "s.usda")
    _l_mesh(stage, "/Root/sphere", "boundingSphere")
    _l_mesh(stage, "/Root/flipped", left_handed=True)
    stage.Save()
    sphere = usd_collision_mesh(str(tmp_path / "s.usda"), "sphere").mesh
    radius = math.sqrt(0.1 ** 2 + 0.05 ** 2 + (0.5 * L_HEIGHT) ** 2)  # corner to the centre of the L's box
    assert np.linalg.norm(sphere.vertices - (0.1, 0.05, 0.5 * L_HEIGHT), axis=1).max() == pytest.approx(radius, rel=1e-6)
    flipped = usd_collision_mesh(str(tmp_path / "s.usda"), "flipped").mesh
    assert flipped.volume == pytest.approx(L_VOLUME, rel=1e-6)  # leftHanded polygons wind the other way


@pytest.mark.slow
def test_convex_decomposition_gives_convex_parts_that_fill_the_mesh(tmp_path):
    stage, _ = _stage(tmp_path / "d.usda")
    mesh = _l_mesh(stage, "/Root/l", "convexDecomposition")
    mesh.GetPrim().CreateAttribute("physxConvexDecompositionCollision:maxConvexHulls",
                                   pxr.Sdf.ValueTypeNames.Int).Set(4)
    stage.Save()
    cm = usd_collision_mesh(str(tmp_path / "d.usda"))
    assert 2 <= len(cm.parts) <= 4  # an L needs at least two convex pieces
    for part in cm.parts:
        assert part.approximation == "convexDecomposition"
        assert part.mesh.is_convex
    # the pieces fill the L: points sampled inside it are inside some piece, points in the notch are not
    rng = np.random.default_rng(0)
    inside = rng.random((400, 3)) * (0.1, 0.1, L_HEIGHT)
    inside[:200, 0] += 0.1
    inside[:200, 1] *= 0.5
    notch = (0.1, 0.05, 0.0) + rng.random((200, 3)) * (0.1, 0.05, L_HEIGHT)
    notch = notch[(notch[:, 0] > 0.11) & (notch[:, 1] > 0.06)]
    covered = np.zeros(len(inside), bool)
    in_notch = np.zeros(len(notch), bool)
    for part in cm.parts:
        covered |= part.mesh.contains(inside)
        in_notch |= part.mesh.contains(notch)
    assert covered.mean() > 0.97
    assert in_notch.mean() < 0.03


def test_transforms_scale_and_units_are_applied_in_the_root_frame(tmp_path):
    stage, root = _stage(tmp_path / "t.usda", meters_per_unit=0.01)  # centimetres
    root.AddTranslateOp().Set(Gf.Vec3d(500.0, 0.0, 0.0))  # the root's own transform is not part of the asset
    group = UsdGeom.Xform.Define(stage, "/Root/group")
    group.AddTranslateOp().Set(Gf.Vec3d(10.0, 0.0, 0.0))
    group.AddRotateZOp().Set(90.0)
    group.AddScaleOp().Set(Gf.Vec3f(2.0, 2.0, 2.0))
    cube = UsdGeom.Cube.Define(stage, "/Root/group/box")
    cube.CreateSizeAttr(1.0)
    cube.AddTranslateOp().Set(Gf.Vec3d(1.0, 0.0, 0.0))
    UsdPhysics.CollisionAPI.Apply(cube.GetPrim())
    stage.Save()
    cm = usd_collision_mesh(str(tmp_path / "t.usda"), scale=(1.0, 3.0, 1.0))
    # cube centre: group (10, 0, 0) + Rz(90) * 2 * (1, 0, 0) = (10, 2, 0) cm; side 2 cm; spawner scale y x3
    np.testing.assert_allclose(cm.mesh.bounds, [[0.09, 0.03, -0.01], [0.11, 0.09, 0.01]], atol=1e-9)
    assert cm.parts[0].approximation == "shape"


@pytest.mark.parametrize("kind, axis, bounds", [
    ("Cube", None, [[-0.05, -0.05, -0.05], [0.05, 0.05, 0.05]]),
    ("Sphere", None, [[-0.05, -0.05, -0.05], [0.05, 0.05, 0.05]]),
    ("Cylinder", "X", [[-0.1, -0.05, -0.05], [0.1, 0.05, 0.05]]),
    ("Capsule", "Y", [[-0.05, -0.15, -0.05], [0.05, 0.15, 0.05]]),
    ("Cone", "Z", [[-0.05, -0.05, -0.1], [0.05, 0.05, 0.1]]),
])
def test_procedural_prims_become_their_meshes(tmp_path, kind, axis, bounds):
    stage, _ = _stage(tmp_path / "p.usda")
    prim = getattr(UsdGeom, kind).Define(stage, "/Root/shape")
    if kind == "Cube":
        prim.CreateSizeAttr(0.1)
    else:
        prim.CreateRadiusAttr(0.05)
    if kind in ("Cylinder", "Capsule", "Cone"):
        prim.CreateHeightAttr(0.2)
        prim.CreateAxisAttr(axis)
    UsdPhysics.CollisionAPI.Apply(prim.GetPrim())
    stage.Save()
    mesh = usd_collision_mesh(str(tmp_path / "p.usda")).mesh
    assert mesh.is_watertight
    np.testing.assert_allclose(mesh.bounds, bounds, atol=1e-3)  # sphere facets lie on the sphere: <= 1 mm


def test_disabled_colliders_and_visual_meshes_are_ignored(tmp_path):
    stage, _ = _stage(tmp_path / "v.usda")
    visual = UsdGeom.Cube.Define(stage, "/Root/visual")  # no CollisionAPI: render only
    visual.CreateSizeAttr(1.0)
    off = UsdGeom.Cube.Define(stage, "/Root/disabled")
    off.CreateSizeAttr(2.0)
    UsdPhysics.CollisionAPI.Apply(off.GetPrim()).CreateCollisionEnabledAttr(False)
    on = UsdGeom.Sphere.Define(stage, "/Root/ball")
    on.CreateRadiusAttr(0.1)
    UsdPhysics.CollisionAPI.Apply(on.GetPrim())
    stage.Save()
    cm = usd_collision_mesh(str(tmp_path / "v.usda"), asset_name="thing")
    assert [p.prim_path for p in cm.parts] == ["/Root/ball"]
    with pytest.raises(NoCollisionMeshError, match=r"asset 'thing' .*v\.usda.*prim /Root/visual has no collider"):
        usd_collision_mesh(str(tmp_path / "v.usda"), "visual", asset_name="thing")
    with pytest.raises(NoCollisionMeshError, match=r"asset 'thing' .*prim 'nope' does not exist under /Root"):
        usd_collision_mesh(str(tmp_path / "v.usda"), "nope", asset_name="thing")


def test_mesh_with_bad_indices_is_refused(tmp_path):
    stage, _ = _stage(tmp_path / "b.usda")
    mesh = UsdGeom.Mesh.Define(stage, "/Root/broken")
    mesh.CreatePointsAttr(Vt.Vec3fArray([Gf.Vec3f(0, 0, 0), Gf.Vec3f(1, 0, 0), Gf.Vec3f(0, 1, 0)]))
    mesh.CreateFaceVertexCountsAttr(Vt.IntArray([3]))
    mesh.CreateFaceVertexIndicesAttr(Vt.IntArray([0, 1, 7]))
    UsdPhysics.CollisionAPI.Apply(mesh.GetPrim())
    stage.Save()
    with pytest.raises(NoCollisionMeshError, match=r"asset 'b'.*/Root/broken has face indices outside its 3 points"):
        usd_collision_mesh(str(tmp_path / "b.usda"))


# ------------------------------------------------------------------------------------- shipped assets
def test_shipped_dynamic_assets_collide_with_their_convex_parts():
    for path, parts, visual in ((library.BOWL_USD, 65, mesh_shapes.bowl_visual()),
                                (library.MUG_USD, 27, mesh_shapes.mug_visual())):
        cm = usd_collision_mesh(path)
        assert len(cm.parts) == parts
        assert {p.approximation for p in cm.parts} == {"convexHull"}
        assert all(p.prim_path.split("/")[2] == "collision" for p in cm.parts)  # the visual mesh is no collider
        np.testing.assert_allclose(cm.mesh.bounds, visual.bounds, atol=1e-6)


def test_kitchen_counter_colliders_and_prims():
    cm = usd_collision_mesh(library.KITCHEN_COUNTER_USD)
    approx = {p.prim_path.rsplit("/", 1)[-1]: p.approximation for p in cm.parts}
    assert approx["counter_top"] == "none" and approx["sink"] == "none"
    assert approx["body"] == "convexHull" and approx["burner_0"] == "shape" and approx["cabinet"] == "shape"
    top = usd_collision_mesh(library.KITCHEN_COUNTER_USD, "counter_top").mesh
    # the sink cut-out is a hole through the slab: its centre is outside, the slab next to it inside
    assert top.contains([[-0.3, 0.0, 0.88]]).tolist() == [False]
    assert top.contains([[0.0, 0.0, 0.88]]).tolist() == [True]
    stove = usd_collision_mesh(library.KITCHEN_COUNTER_USD, "stove").mesh
    np.testing.assert_allclose(stove.bounds, [[0.25, -0.28, 0.90], [0.75, 0.28, 0.99]], atol=1e-6)


def test_spawner_configs():
    import isaaclab.sim as sim_utils

    box = spawn_cfg_collision_mesh(sim_utils.CuboidCfg(size=(0.1, 0.2, 0.3)), "box").mesh
    np.testing.assert_allclose(box.bounds, [[-0.05, -0.1, -0.15], [0.05, 0.1, 0.15]], atol=1e-9)
    cyl = spawn_cfg_collision_mesh(sim_utils.CylinderCfg(radius=0.04, height=0.1, axis="X"), "cyl").mesh
    np.testing.assert_allclose(cyl.bounds, [[-0.05, -0.04, -0.04], [0.05, 0.04, 0.04]], atol=1e-6)
    mug = spawn_cfg_collision_mesh(sim_utils.UsdFileCfg(usd_path=library.MUG_USD, scale=(2.0, 2.0, 2.0)), "mug")
    np.testing.assert_allclose(mug.mesh.bounds, 2.0 * mesh_shapes.mug_visual().bounds, atol=1e-6)
    with pytest.raises(NoCollisionMeshError, match=r"asset 'lamp': spawner DomeLightCfg has no collision mesh"):
        spawn_cfg_collision_mesh(sim_utils.DomeLightCfg(), "lamp")

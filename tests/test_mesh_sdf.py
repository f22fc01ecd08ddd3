"""MESH geometry of the placement core (``isaaclab_arena/relations/mesh``): signed distances and sphere-set
penetration re-checked against trimesh and plain float64 numpy, sphere covers measured, watertightness,
``[MeshSDF]`` / ``[NoCollision]`` logging, and free space that boxes reject but meshes accept."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch
import trimesh

from isaaclab_arena.relations.mesh import (
    MeshGeometry,
    MeshPairQuery,
    cover_stats,
    fit_sphere_cover,
    is_closed,
    max_penetration,
    mesh_signed_distance,
    no_mesh,
    pack_mesh_tables,
    prepare_target,
)
from isaaclab_arena.relations.mesh.logs import forget_logged
from isaaclab_arena_environments.assets import mesh_shapes

DEVICES = ["cpu"] + (["cuda:0"] if torch.cuda.is_available() else [])


# ---------------------------------------------------------------------------- float64 references
def _inside_any(shells: list[trimesh.Trimesh], points: np.ndarray) -> np.ndarray:
    inside = np.zeros(len(points), bool)
    for shell in shells:
        inside |= shell.contains(points)
    return inside


def _reference_sd(mesh: trimesh.Trimesh, shells: list[trimesh.Trimesh], points: np.ndarray) -> np.ndarray:
    """Distance to the nearest triangle (trimesh, float64), negative inside any closed shell."""
    _, dist, _ = trimesh.proximity.closest_point(mesh, points)
    return np.where(_inside_any(shells, points), -dist, dist)


def _rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotates rows of v by xyzw quaternions q (float64)."""
    xyz, w = q[..., :3], q[..., 3:]
    t = 2.0 * np.cross(xyz, v)
    return v + w * t + np.cross(xyz, t)


def _probe_points(mesh: trimesh.Trimesh, rng: np.random.Generator, n: int = 600) -> np.ndarray:
    """Points all round and inside the mesh's box, plus points 1 mm either side of its surface."""
    lo, hi = mesh.bounds
    box = lo - 0.02 + rng.random((n, 3)) * (hi - lo + 0.04)
    surf, face = trimesh.sample.sample_surface(mesh, n // 2, seed=int(rng.integers(1 << 30)))
    normal = mesh.face_normals[face]
    return np.vstack([box, surf + 0.001 * normal, surf - 0.001 * normal])


@pytest.fixture(scope="module")
def bowl():
    return mesh_shapes.bowl_visual()


@pytest.fixture(scope="module")
def mug_parts():
    return mesh_shapes.mug_convex_parts()


# ----------------------------------------------------------------------------------- signed distance
@pytest.mark.parametrize("device", DEVICES)
def test_signed_distance_matches_trimesh_on_a_closed_bowl(bowl, device):
    target = prepare_target("bowl", bowl.vertices, bowl.faces)
    assert target.watertight and not target.uses_hull
    pts = _probe_points(bowl, np.random.default_rng(1))
    sd, grad = mesh_signed_distance(target, pts, device)
    ref = -trimesh.proximity.signed_distance(bowl, pts)  # trimesh: positive inside
    np.testing.assert_allclose(sd.cpu().numpy(), ref, atol=2e-5)
    assert np.all(np.sign(sd.cpu().numpy()) == np.sign(ref))
    # the gradient points where the signed distance grows: a small step along it adds that much distance
    step = 2e-4
    moved, _ = mesh_signed_distance(target, pts + step * grad.cpu().numpy(), device)
    far = np.abs(ref) > 2e-3  # away from the medial axis and the surface
    np.testing.assert_allclose((moved - sd).cpu().numpy()[far], step, atol=5e-5)


def test_signed_distance_of_overlapping_convex_parts(mug_parts):
    mesh = trimesh.util.concatenate(mug_parts)
    target = prepare_target("mug", mesh.vertices, mesh.faces)
    assert target.watertight and not target.uses_hull  # closed shells that share corners and overlap
    pts = _probe_points(mesh_shapes.mug_visual(), np.random.default_rng(2))
    sd, _ = mesh_signed_distance(target, pts)
    ref = _reference_sd(mesh, mug_parts, pts)
    np.testing.assert_allclose(sd.numpy(), ref, atol=2e-5)
    assert (ref < 0).sum() > 100 and (ref > 0).sum() > 100


# ------------------------------------------------------------------------------ sphere-set penetration
def _random_poses(rng, b, centre, spread, tilt=True):
    pos = centre + (rng.random((b, 3)) - 0.5) * spread
    q = rng.normal(size=(b, 4)) if tilt else np.c_[np.zeros((b, 2)), rng.normal(size=(b, 2))]
    return np.c_[pos, q / np.linalg.norm(q, axis=1, keepdims=True)]


@pytest.mark.parametrize("device", DEVICES)
def test_penetration_depth_matches_a_float64_recheck(mug_parts, device):
    box = trimesh.creation.box(extents=(0.03, 0.02, 0.04))
    cover = fit_sphere_cover(box.vertices, box.faces, 12, seed=3)
    mesh = trimesh.util.concatenate(mug_parts)
    target = prepare_target("mug", mesh.vertices, mesh.faces)
    rng = np.random.default_rng(4)
    b = 300
    subject = _random_poses(rng, b, (0.02, 0.0, 0.05), (0.2, 0.16, 0.16))
    tpose = np.r_[0.3, -0.2, 0.7, 0.0, 0.0, np.sin(0.35), np.cos(0.35)]  # the mug yawed by 0.7 rad, moved
    subject[:, :3] += tpose[:3]
    clearance = 0.004
    out = max_penetration(cover, target, torch.tensor(subject, device=device), torch.tensor(tpose, device=device),
                          clearance)
    # float64: sphere centres into the target frame, depth_k = r_k + clearance - sd_k
    world = subject[:, None, :3] + _rotate(subject[:, None, 3:], cover.centers[None])
    tq_inv = np.r_[-tpose[3:6], tpose[6]]
    local = _rotate(np.broadcast_to(tq_inv, world.shape[:2] + (4,)), world - tpose[:3])
    sd = _reference_sd(mesh, mug_parts, local.reshape(-1, 3)).reshape(b, -1)
    depth = (cover.radii[None] + clearance - sd).max(1)
    got = out.depth.cpu().numpy()
    exact = depth > -0.01  # the kernel is exact down to -NEAR_BAND (0.01 m), a bound below
    np.testing.assert_allclose(got[exact], depth[exact], atol=3e-5)
    assert np.all(got[~exact] <= -0.01 + 1e-6) and np.all(depth[~exact] <= -0.01)
    assert exact.sum() > 100 and (depth > 0).sum() > 50 and (depth < 0).sum() > 50
    deepest = out.deepest.cpu().numpy()
    hit = depth > 0
    np.testing.assert_allclose((cover.radii[None] + clearance - sd)[np.arange(b)[hit], deepest[hit]], depth[hit],
                               atol=3e-5)


def test_push_separates_and_check_mode_gives_the_same_verdicts(mug_parts):
    box = trimesh.creation.box(extents=(0.03, 0.03, 0.03))
    cover = fit_sphere_cover(box.vertices, box.faces, 10)
    mesh = trimesh.util.concatenate(mug_parts)
    query = MeshPairQuery(cover, prepare_target("mug", mesh.vertices, mesh.faces))
    rng = np.random.default_rng(5)
    subject = torch.tensor(_random_poses(rng, 400, (0.02, 0.0, 0.05), (0.14, 0.12, 0.12), tilt=False),
                           dtype=torch.float32)
    ident = torch.tensor([0, 0, 0, 0, 0, 0, 1.0])
    full = query(subject, ident)
    check = query(subject, ident, stop_above=0.0)
    assert torch.equal(full.depth > 0, check.depth > 0)
    broadcast = query(subject, ident.expand(400, 7))
    torch.testing.assert_close(broadcast.depth, full.depth)
    # a small step along the push makes a shallow overlap shallower
    shallow = (full.depth > 0) & (full.depth < 0.004)
    assert shallow.sum() > 5
    moved = subject.clone()
    moved[:, :3] += 5e-4 * full.push / full.push.norm(dim=1, keepdim=True).clamp_min(1e-9)
    after = query(moved, ident)
    assert torch.all(after.depth[shallow] < full.depth[shallow])


def test_bad_pose_shapes_are_refused(bowl):
    cover = fit_sphere_cover(bowl.vertices, bowl.faces, 4)
    query = MeshPairQuery(cover, prepare_target("bowl", bowl.vertices, bowl.faces))
    with pytest.raises(ValueError, match=r"subject_pose must be \(B, 7\).*got shape \(4, 6\)"):
        query(torch.zeros(4, 6), torch.zeros(7))
    with pytest.raises(ValueError, match="target_pose must have 1 or 4 rows"):
        query(torch.zeros(4, 7), torch.zeros(3, 7))
    with pytest.raises(ValueError, match=r"geom_index must be \(E, n_objects\)"):
        pack_mesh_tables([None], np.array([[0, 1]]))


# ------------------------------------------------------------------------------ free space vs boxes
def _aabb_overlap(a_lo, a_hi, b_lo, b_hi) -> bool:
    return bool(np.all(np.minimum(a_hi, b_hi) > np.maximum(a_lo, b_lo)))


@pytest.mark.parametrize("where, position, free", [
    ("in the bowl's hollow", (0.0, 0.0, mesh_shapes.BOWL_FLOOR + 0.016), True),  # 6 mm over its floor
    ("through the bowl's wall", (0.068, 0.0, 0.04), False),
])
def test_small_object_in_the_bowl(bowl, where, position, free):
    cube = trimesh.creation.box(extents=(0.02, 0.02, 0.02))
    cover = fit_sphere_cover(cube.vertices, cube.faces, 30)
    pose = torch.tensor([[*position, 0.0, 0.0, 0.0, 1.0]])
    depth = max_penetration(cover, prepare_target("bowl", bowl.vertices, bowl.faces), pose,
                            torch.tensor([0, 0, 0, 0, 0, 0, 1.0])).depth
    assert _aabb_overlap(np.array(position) - 0.01, np.array(position) + 0.01, *bowl.bounds)  # boxes overlap
    assert bool(depth.item() <= 0.0) == free, f"{where}: depth {depth.item():.4f} m"
    # float64 recheck of the verdict: every sphere stays out of the bowl (or one does not)
    ref = _reference_sd(bowl, [bowl], cover.centers + np.array(position))
    assert bool(np.all(ref >= cover.radii)) == free


@pytest.mark.parametrize("position, free", [
    ((0.06, 0.028, 0.05), True),  # beside the handle, inside the mug's box
    ((0.06, 0.0, 0.09), False),  # on the handle's top bend
])
def test_small_object_beside_the_mug_handle(mug_parts, position, free):
    cube = trimesh.creation.box(extents=(0.016, 0.016, 0.016))
    cover = fit_sphere_cover(cube.vertices, cube.faces, 30)
    mesh = trimesh.util.concatenate(mug_parts)
    depth = max_penetration(cover, prepare_target("mug", mesh.vertices, mesh.faces),
                            torch.tensor([[*position, 0.0, 0.0, 0.0, 1.0]]), torch.tensor([0, 0, 0, 0, 0, 0, 1.0])).depth
    assert _aabb_overlap(np.array(position) - 0.008, np.array(position) + 0.008, *mesh.bounds)
    assert bool(depth.item() <= 0.0) == free, f"depth {depth.item():.4f} m"
    ref = _reference_sd(mesh, mug_parts, cover.centers + np.array(position))
    assert bool(np.all(ref >= cover.radii)) == free


# ------------------------------------------------------------------------------------- sphere covers
@pytest.mark.parametrize("name, make, max_ratio", [
    ("cube", lambda: trimesh.creation.box(extents=(0.04, 0.04, 0.04)), 1.7),
    ("mug", mesh_shapes.mug_visual, 1.3),
    ("bowl", mesh_shapes.bowl_visual, 1.2),
])
def test_sphere_cover_holds_the_whole_surface(name, make, max_ratio):
    mesh = make()
    cover = fit_sphere_cover(mesh.vertices, mesh.faces, 30, seed=0)
    assert 1 <= cover.num_spheres <= 30
    stats = cover_stats(cover, mesh.vertices, mesh.faces, num_samples=20000, seed=11)
    assert stats.coverage == 1.0 and stats.max_gap_m == 0.0
    # independent float64 recheck on other samples: every surface point lies inside some sphere
    surf, _ = trimesh.sample.sample_surface(mesh, 5000, seed=12)
    gap = (np.linalg.norm(surf[:, None] - cover.centers[None], axis=-1) - cover.radii[None]).min(1)
    assert gap.max() <= 0.0
    assert stats.volume_ratio < max_ratio, f"{name}: union / box volume {stats.volume_ratio:.2f}"


def test_sphere_cover_is_deterministic_and_respects_its_budget():
    mesh = mesh_shapes.mug_visual()
    a = fit_sphere_cover(mesh.vertices, mesh.faces, 12, seed=5)
    b = fit_sphere_cover(mesh.vertices.copy(), mesh.faces.copy(), 12, seed=5)
    c = fit_sphere_cover(mesh.vertices, mesh.faces, 12, seed=6)
    np.testing.assert_array_equal(a.centers, b.centers)
    np.testing.assert_array_equal(a.radii, b.radii)
    assert a.num_spheres <= 12 and c.num_spheres <= 12
    assert not (a.num_spheres == c.num_spheres and np.array_equal(a.centers, c.centers))
    one = fit_sphere_cover(mesh.vertices, mesh.faces, 1)
    assert one.num_spheres == 1 and np.all(np.linalg.norm(mesh.vertices - one.centers[0], axis=1) <= one.radii[0])
    with pytest.raises(ValueError, match="num_spheres must be a positive integer, got 0"):
        fit_sphere_cover(mesh.vertices, mesh.faces, 0)


# -------------------------------------------------------------------------------- closedness and logs
def test_is_closed_rejects_holes_and_flipped_triangles():
    box = trimesh.creation.box()
    two = trimesh.util.concatenate([box, box.copy().apply_translation((0.3, 0.2, 0.1))])
    assert is_closed(box.faces) and is_closed(two.faces)
    assert not is_closed(box.faces[1:])
    flipped = box.faces.copy()
    flipped[0] = flipped[0, ::-1]
    assert not is_closed(flipped)


def test_open_target_uses_its_hull_or_logs_unreliable_signs(bowl, caplog):
    forget_logged()
    open_bowl = trimesh.Trimesh(bowl.vertices, bowl.faces[10:])  # a hole in the foot
    with caplog.at_level(logging.WARNING, logger="isaaclab_arena.relations.mesh"):
        hull = prepare_target("open_bowl", open_bowl.vertices, open_bowl.faces)
        prepare_target("open_bowl", open_bowl.vertices, open_bowl.faces)
        kept = prepare_target("open_bowl", open_bowl.vertices, open_bowl.faces, allow_open_mesh=True)
        prepare_target("open_bowl", open_bowl.vertices, open_bowl.faces, allow_open_mesh=True)
    assert hull.uses_hull and hull.reliable and not hull.watertight
    assert not kept.uses_hull and not kept.reliable
    lines = [r.getMessage() for r in caplog.records]
    assert sum("[MeshSDF] asset 'open_bowl'" in m and "convex hull" in m for m in lines) == 1
    assert sum("[MeshSDF] asset 'open_bowl'" in m and "unreliable" in m for m in lines) == 1
    # the hull fills the hollow: a point above the inner floor is inside it
    sd, _ = mesh_signed_distance(hull, [[0.0, 0.0, 0.03]])
    assert sd.item() < 0.0


def test_unreliable_queries_are_logged_once(bowl, caplog):
    forget_logged()
    cover = fit_sphere_cover(bowl.vertices, bowl.faces, 4)
    query = MeshPairQuery(cover, prepare_target("bowl", bowl.vertices, bowl.faces))
    bad = torch.tensor([[float("nan"), 0.0, 0.0, 0.0, 0.0, 0.0, 1.0], [0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]])
    with caplog.at_level(logging.WARNING, logger="isaaclab_arena.relations.mesh"):
        out = query(bad, torch.tensor([0, 0, 0, 0, 0, 0, 1.0]))
        query(bad, torch.tensor([0, 0, 0, 0, 0, 0, 1.0]))
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and lines[0].startswith("[MeshSDF] asset 'bowl': 1 of 2 candidates had a signed-distance query")
    assert out.depth[1].item() <= -0.01 and out.deepest[1].item() == -1  # far away: culled, nothing queried


def test_missing_mesh_is_reported_once(caplog):
    forget_logged()
    with caplog.at_level(logging.WARNING, logger="isaaclab_arena.relations.mesh"):
        no_mesh("lamp", "spawner DomeLightCfg has no collision mesh")
        no_mesh("lamp", "spawner DomeLightCfg has no collision mesh")
    assert [r.getMessage() for r in caplog.records] == [
        "[NoCollision] asset 'lamp' has no collision mesh (spawner DomeLightCfg has no collision mesh); its "
        "collision pairs use its bounding box"]


def test_flat_or_empty_meshes_are_refused():
    square = trimesh.Trimesh([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], [[0, 1, 2], [0, 2, 3]])
    with pytest.raises(ValueError, match=r"asset 'rug': the collision mesh is empty or flat"):
        prepare_target("rug", square.vertices, square.faces)
    with pytest.raises(ValueError, match=r"asset 'ghost': a collision mesh needs \(V, 3\) vertices"):
        prepare_target("ghost", np.zeros((0, 3)), np.zeros((0, 3)))


def test_geometry_tables_pack_subjects_and_targets(bowl):
    geo = MeshGeometry.build("bowl", bowl.vertices, bowl.faces, num_spheres=8)
    handle = pack_mesh_tables([geo, None, MeshGeometry("lid", None, geo.target)], np.array([[0, -1, 2]]))
    start = handle.tables.sph_start.numpy()
    assert start.tolist() == [0, geo.cover.num_spheres, geo.cover.num_spheres, geo.cover.num_spheres]
    ids = handle.tables.mesh_id.numpy()
    assert ids[0] != 0 and ids[1] == 0 and ids[2] == ids[0]
    assert handle.tables.geom.numpy().tolist() == [[0, -1, 2]]

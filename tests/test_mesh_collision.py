"""MESH collision in the solver and the checks, and oriented boxes in BBOX mode, re-checked in float64.

- OBB: a box turned about Z against another is judged by its rotated box (separating axes), not by the
  axis-aligned box around it: the kernels' depth equals a float64 separating-axis depth, and layouts whose
  AABBs overlap but whose boxes do not pass.
- MESH pairs: the kernels' pair depth equals the float64 depth of the same sphere cover against the same
  mesh (trimesh closest points, containment per convex part), and a layout the check passes has no
  surface point of either object inside the other (sampled surfaces, trimesh, float64).
- MESH support terms: a footprint over the kitchen counter's sink cut-out fails ``on_relation`` with its own
  cause; over the slab it passes (rays cast down with trimesh decide which is which).
- Bad input: a MESH background without a collision mesh is refused naming it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import trimesh

from isaaclab_arena.adapters.usd_mesh import usd_collision_mesh
from isaaclab_arena.assets.asset import Background
from isaaclab_arena.assets.bounding_box import AxisAlignedBoundingBox
from isaaclab_arena.assets.object_reference import ObjectReference
from isaaclab_arena.relations.kinds.on import OnCause
from isaaclab_arena.relations.object_placer import ObjectPlacer
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.relations.compiler.placement_restrictions import PlacementConfigError
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams
from isaaclab_arena.relations.relations import IsAnchor, On
from isaaclab_arena.benchmarks.scenes import cuboid, table
from isaaclab_arena.utils.pose import Pose
from isaaclab_arena_environments.assets import library

TOP = 0.75


def placer(mode: str = "mesh", **kw) -> ObjectPlacer:
    return ObjectPlacer(ObjectPlacerParams(placement_seed=5, solver_params=RelationSolverParams(
        verbose=False, collision_mode=mode), **kw))


def yaw_q(yaw: float) -> tuple[float, float, float, float]:
    return (0.0, 0.0, math.sin(0.5 * yaw), math.cos(0.5 * yaw))


def rot(q) -> np.ndarray:
    x, y, z, w = (float(v) for v in q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


# ---------------------------------------------------------------------------------------------- OBB
def sat_depth(size_a, pa, qa, size_b, pb, qb) -> float:
    """Float64 penetration of two centred boxes turned about Z: the least overlap over the four edge
    directions and Z (<= 0: apart or touching)."""
    ha, hb = np.asarray(size_a) / 2, np.asarray(size_b) / 2
    ra, rb = rot(qa)[:2, :2], rot(qb)[:2, :2]
    d = np.asarray(pa, float) - np.asarray(pb, float)
    depth = ha[2] + hb[2] - abs(d[2])
    for n in (ra[:, 0], ra[:, 1], rb[:, 0], rb[:, 1]):
        r = sum(ha[k] * abs(n @ ra[:, k]) + hb[k] * abs(n @ rb[:, k]) for k in range(2))
        depth = min(depth, r - abs(n @ d[:2]))
    return depth


@pytest.mark.slow
def test_obb_depth_matches_float64_and_accepts_what_the_aabb_rejects():
    t = table()
    size_o, size_c = (0.40, 0.06, 0.10), (0.06, 0.06, 0.06)
    q_o = yaw_q(math.pi / 4)
    obstacle = cuboid("bar", size_o, Pose((0.0, 0.0, TOP + 0.05), q_o))  # a bar turned 45 degrees
    cube = cuboid("cube", size_c)
    cube.add_relation(On(t, clearance_m=0.0))
    pl = placer("bbox")
    problem = pl.compile([t, obstacle, cube], 1)
    assert [problem.pair_mode(k) for k in range(len(problem.pairs))] == ["obb"]
    rng = np.random.default_rng(0)
    n = 600
    pos = np.c_[rng.uniform(-0.2, 0.2, (n, 2)), np.full(n, TOP + 0.03)]
    yaw = rng.uniform(-math.pi, math.pi, n)
    quat = np.array([yaw_q(y) for y in yaw])
    vb = pl.validate_poses([t, obstacle, cube], pos[:, None], quat[:, None])
    depth = vb.solved.overlap_depth.numpy().astype(np.float64)
    ref = np.array([sat_depth(size_c, p, q, size_o, (0, 0, TOP + 0.05), q_o) for p, q in zip(pos, quat)])
    np.testing.assert_allclose(depth, ref, atol=2e-6)
    passed = vb.check_results["no_overlap"].numpy()
    clear = np.abs(ref) > 1e-5
    assert np.array_equal(passed[clear], ref[clear] <= 0.0)
    # the axis-aligned box around the turned bar covers 0.31 x 0.31 m: many free cubes lie inside it
    aabb_half = 0.5 * (0.40 + 0.06) / math.sqrt(2)
    inside_aabb = (np.abs(pos[:, 0]) < aabb_half) & (np.abs(pos[:, 1]) < aabb_half)
    assert int((passed & inside_aabb).sum()) >= 50


def test_solved_yaw_layouts_keep_their_turned_boxes_apart():
    t = table()
    boxes = [t] + [cuboid(f"b{k}", (0.20, 0.05, 0.08)) for k in range(6)]
    for b in boxes[1:]:
        b.add_relation(On(t))
    pl = placer("bbox", random_yaw_init=True)
    batch = pl.place_batch(boxes, torch.arange(64), torch.zeros(64, dtype=torch.long), num_envs=64)
    assert float(batch.passed.float().mean()) >= 0.99
    for c in batch.candidates:
        names = list(c.positions)
        for a_i in range(len(names)):
            for b_i in range(a_i + 1, len(names)):
                a, b = names[a_i], names[b_i]
                d = sat_depth((0.20, 0.05, 0.08), c.positions[a], c.rotations[a], (0.20, 0.05, 0.08),
                              c.positions[b], c.rotations[b])
                assert d <= 1e-5 or not c.passed


# --------------------------------------------------------------------------------------------- MESH
@pytest.fixture(scope="module")
def meshes():
    return {name: usd_collision_mesh(path) for name, path in
            (("mug", library.MUG_USD), ("bowl", library.BOWL_USD), ("shelf", library.SHELF_USD))}


def world(mesh: trimesh.Trimesh, pos, quat) -> trimesh.Trimesh:
    m = mesh.copy()
    tf = np.eye(4)
    tf[:3, :3] = rot(quat)
    tf[:3, 3] = pos
    m.apply_transform(tf)
    return m


def inside_any(parts, pts: np.ndarray) -> np.ndarray:
    inside = np.zeros(len(pts), bool)
    for part in parts:
        inside |= part.contains(pts)
    return inside


def reference_depth(geo_subject, pose_s, target_mesh, target_parts, pose_t, anchor_geo=None, anchor_pose=None):
    """Float64: max over the subject's spheres of radius - signed distance to the target (closest points on
    the target's triangles, inside = inside any convex part), and the other object's anchor point depth."""
    c = geo_subject.cover.centers @ rot(pose_s[1]).T + pose_s[0]
    local = (c - pose_t[0]) @ rot(pose_t[1])
    _, dist, _ = trimesh.proximity.closest_point(target_mesh, local)
    sd = np.where(inside_any(target_parts, local), -dist, dist)
    depth = float(np.max(geo_subject.cover.radii - sd))
    if anchor_geo is not None:
        p = (anchor_geo.anchor @ rot(anchor_pose[1]).T + anchor_pose[0] - pose_t[0]) @ rot(pose_t[1])
        _, da, _ = trimesh.proximity.closest_point(target_mesh, p[None])
        if inside_any(target_parts, p[None])[0]:
            depth = max(depth, float(da[0]))
    return depth


@pytest.mark.slow
def test_mesh_pair_depth_and_verdicts_match_a_float64_recheck(meshes):
    t = table()
    bowl_pose = Pose((0.0, 0.0, TOP), yaw_q(0.4))
    bowl = library.hollow_bowl("bowl", initial_pose=bowl_pose)
    mug = library.mug_with_handle("mug")
    mug.add_relation(On(t, clearance_m=0.0))
    scene = [t, bowl, mug]
    pl = placer("mesh")
    problem = pl.compile(scene, 1)
    geo = problem.pair_geometry
    assert [problem.pair_mode(k) for k in range(len(problem.pairs))] == ["mesh"] and geo.sphere_side(0) == "i"
    g_mug, g_bowl = geo.rows[geo.geom[0, 0]], geo.rows[geo.geom[0, 2]]
    rng = np.random.default_rng(3)
    n = 160
    ang = rng.uniform(-math.pi, math.pi, n)
    rad = rng.uniform(0.05, 0.16, n)
    pos = np.c_[rad * np.cos(ang), rad * np.sin(ang), np.full(n, TOP)]
    quat = np.array([yaw_q(y) for y in rng.uniform(-math.pi, math.pi, n)])
    vb = pl.validate_poses(scene, pos[:, None], quat[:, None])
    depth = vb.solved.overlap_depth.numpy()
    target = g_bowl.target
    tmesh = trimesh.Trimesh(target.vertices, target.faces, process=False)
    parts = meshes["bowl"].parts
    bp = (np.asarray(bowl_pose.position_xyz), bowl_pose.rotation_xyzw)
    ref = np.array([reference_depth(g_mug, (p, q), tmesh, [x.mesh for x in parts], bp, g_bowl, bp)
                    for p, q in zip(pos, quat)])
    exact = ref > -0.009  # depths are exact down to 1 cm of clearance; beyond, only their sign counts
    assert exact.sum() > 60 and (ref > 0).sum() > 20 and (ref < 0).sum() > 20
    np.testing.assert_allclose(depth[exact], ref[exact], atol=1e-4)
    assert np.all(depth[~exact] < 0)
    passed = vb.check_results["no_overlap"].numpy()
    assert np.array_equal(passed, depth <= problem.slack)
    # what the check passes does not interpenetrate: no surface point of either inside the other
    mug_surf = trimesh.sample.sample_surface(meshes["mug"].mesh, 1500, seed=1)[0]
    bowl_surf = trimesh.sample.sample_surface(meshes["bowl"].mesh, 1500, seed=2)[0]
    bowl_parts = [world(x.mesh, *bp) for x in parts]
    for k in np.flatnonzero(passed)[:25]:
        mug_parts = [world(x.mesh, pos[k], quat[k]) for x in meshes["mug"].parts]
        assert not inside_any(bowl_parts, mug_surf @ rot(quat[k]).T + pos[k]).any()
        assert not inside_any(mug_parts, bowl_surf @ rot(bp[1]).T + bp[0]).any()


def test_bbox_rejects_free_space_under_a_shelf_that_mesh_accepts(meshes):
    """Cubes confined under a shelf standing on the table: every such layout is inside the shelf's box (BBOX
    valid rate 0), between its legs and below its board (MESH valid rate 1); independent check with trimesh."""
    def scene():
        t = table()
        shelf = library.shelf("shelf", initial_pose=Pose((0.3, 0.0, TOP)))
        from isaaclab_arena.relations.relations import PositionLimitsBox

        cubes = []
        for k in range(3):
            c = library.cube_4cm(f"cube{k}")
            c.add_relation(On(t, clearance_m=0.0))
            c.add_relation(PositionLimitsBox(x_limits=(0.22, 0.38), y_limits=(-0.16, 0.16)))
            cubes.append(c)
        return [t, shelf] + cubes

    n = 128
    rates = {}
    for mode in ("bbox", "mesh"):
        batch = placer(mode).place_batch(scene(), torch.arange(n), torch.zeros(n, dtype=torch.long), num_envs=n)
        rates[mode] = float(batch.passed.float().mean())
    assert rates == {"bbox": 0.0, "mesh": 1.0}
    shelf_parts = [world(p.mesh, (0.3, 0.0, TOP), (0, 0, 0, 1)) for p in meshes["shelf"].parts]
    cube_surf = trimesh.sample.sample_surface(trimesh.creation.box(extents=(0.04, 0.04, 0.04)), 600, seed=3)[0]
    for c in batch.candidates[:32]:
        for name, p in c.positions.items():
            assert not inside_any(shelf_parts, cube_surf @ rot(c.rotations[name]).T + p).any()


# ------------------------------------------------------------------------------------ support terms
def test_footprint_over_the_sink_fails_on_relation_with_its_own_cause():
    kitchen = library.kitchen_counter("kitchen", collision_mode="mesh")
    top = ObjectReference("counter_top", "counter_top", kitchen)
    top.add_relation(IsAnchor())
    cube = library.cube_8cm("cube")
    cube.add_relation(On(top, clearance_m=0.0))
    scene = [kitchen, top, cube]
    pl = placer("bbox")
    problem = pl.compile(scene, 1)
    assert problem.pair_geometry.n_support == 1
    slab = usd_collision_mesh(library.KITCHEN_COUNTER_USD, "counter_top").mesh
    z = 0.90 + 0.04
    xy = [(-0.30, 0.0), (-0.12, 0.0), (-0.05, 0.0), (-0.65, 0.2), (-0.30, 0.20), (-0.30, 0.16), (0.0, -0.2)]
    vb = pl.validate_poses(scene, [[(x, y, z)] for x, y in xy])
    on = vb.check_results["on_relation"].numpy()
    cause = vb.solved.relation_cause[:, 0].numpy()
    for k, (x, y) in enumerate(xy):
        corners = np.array([(x + sx * 0.04, y + sy * 0.04, 1.0) for sx in (-1, 1) for sy in (-1, 1)])
        hits = [len(slab.ray.intersects_location([c], [[0, 0, -1]])[0]) > 0 for c in corners]
        assert on[k] == all(hits), (x, y)
        assert cause[k] == (0 if all(hits) else int(OnCause.UNSUPPORTED))


def test_mesh_background_without_a_mesh_is_refused_naming_it():
    t = table()
    room = Background("room", bounding_box=AxisAlignedBoundingBox((-2, -2, 0), (2, 2, 3)), collision_mode="mesh")
    cube = cuboid("cube", (0.05, 0.05, 0.05))
    cube.add_relation(On(t))
    with pytest.raises(PlacementConfigError, match="asset 'room': a Background with collision_mode='mesh' is an "
                                                   "obstacle from its collision mesh, which cannot be extracted"):
        placer("bbox").compile([t, room, cube], 1)

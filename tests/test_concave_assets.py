"""The concave example assets: shipped files match their build step, convex parts follow the visual
surface, the registry and YAML find them, and in a real kit-less env (OV PhysX, CPU) they rest where their
collision meshes say: dynamic bodies upright on a table, small cubes inside the bowl and the mug and under
the shelf, and on, into and beside the kitchen counter's sink and stove.

Expected heights come from the meshes extracted by ``usd_mesh`` (rays cast down with trimesh), not from
bounding boxes. One env per fixture; each closes its env so the next can build one.
"""

from __future__ import annotations

import filecmp
import os

import numpy as np
import pytest
import torch
import trimesh
import yaml

from isaaclab_arena.adapters.usd_mesh import usd_collision_mesh
from isaaclab_arena_environments.assets import generate_mesh_usd, library, mesh_shapes

TABLE_TOP_Z = 0.75
REST_TOL_M = 2e-3
TILT_TOL = 0.02  # |qx|, |qy| below this: within about 2.3 degrees of upright


def test_shipped_usd_files_match_the_build_step(tmp_path):
    for path in generate_mesh_usd.write_all(str(tmp_path)):
        shipped = os.path.join(library.USD_DIR, os.path.basename(path))
        assert filecmp.cmp(path, shipped, shallow=False), f"{shipped} is stale: rerun generate_mesh_usd"


@pytest.mark.parametrize("visual, parts", [
    (mesh_shapes.bowl_visual, mesh_shapes.bowl_convex_parts),
    (mesh_shapes.mug_visual, mesh_shapes.mug_convex_parts),
])
def test_convex_parts_follow_the_visual_surface(visual, parts):
    vis = visual()
    pieces = parts()
    assert vis.is_watertight and all(p.is_convex and p.volume > 0 for p in pieces)
    union = trimesh.util.concatenate(pieces)
    # no part sticks out of the visual solid (trimesh: signed distance positive inside), and the visual
    # surface is covered by the parts
    assert trimesh.proximity.signed_distance(vis, union.vertices).min() > -1e-6
    surf, _ = trimesh.sample.sample_surface(vis, 3000, seed=0)
    _, d, _ = trimesh.proximity.closest_point(union, surf)
    assert d.max() < 2e-3  # flat facets across a curved sector: within its sagitta
    # the hollow stays hollow: its centre is in no part
    centre = [[0.0, 0.0, 0.5 * (vis.bounds[1][2] + 0.01)]]
    assert not any(p.contains(centre)[0] for p in pieces)


def test_registry_and_yaml_find_the_assets(tmp_path):
    from isaaclab_arena.adapters.asset_registry import build_registered_asset
    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec

    sizes = {"hollow_bowl": (0.16, 0.16, 0.06), "mug_with_handle": (0.116, 0.08, 0.10),
             "shelf": (0.24, 0.40, 0.315), "kitchen_counter": (1.6, 0.7, 0.99)}
    for name, size in sizes.items():
        asset = build_registered_asset(name, name)
        box = asset.get_bounding_box()
        np.testing.assert_allclose(np.subtract(box.max_point, box.min_point), size, atol=1e-6)
    spec = {"env_name": "concave", "background": {"id": "kitchen", "registry_name": "kitchen_counter",
                                                  "params": {"collision_mode": "mesh"}},
            "objects": [{"id": "mug", "registry_name": "mug_with_handle",
                         "params": {"initial_pose": {"position_xyz": [0.0, 0.0, 0.91]}}}]}
    path = tmp_path / "concave.yaml"
    path.write_text(yaml.safe_dump(spec))
    env = ArenaEnvGraphSpec.from_yaml(str(path)).to_arena_env()
    assert env.get_asset("kitchen").collision_mode.value == "mesh"
    assert env.get_asset("mug").registry_name == "mug_with_handle"


# ------------------------------------------------------------------------------------------ physics
def _top_below(mesh: trimesh.Trimesh, x: float, y: float, z_from: float) -> float:
    """Highest collision surface under (x, y) below ``z_from`` (metres), by a ray cast straight down."""
    hits, _, _ = mesh.ray.intersects_location([[x, y, z_from]], [[0.0, 0.0, -1.0]])
    return float(hits[:, 2].max())


def _write_spec(tmp_path, name, background, objects):
    spec = {"env_name": name, "background": {"id": "bg", "registry_name": background},
            "objects": [{"id": k, "registry_name": reg, "params": {"initial_pose": {"position_xyz": [float(c) for c in p]}}}
                        for k, (reg, p) in objects.items()]}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return str(path)


def _settle(spec_path, gym_id, names, steps=90):
    from isaaclab.app import launch_simulation

    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg

    arena_env = ArenaEnvGraphSpec.from_yaml(spec_path).to_arena_env()
    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=2, env_spacing=3.0, gym_id=gym_id))
    env_cfg = builder.compose_manager_cfg()
    with launch_simulation(env_cfg, {"headless": True, "device": "cpu"}):
        env = builder.make_registered(env_cfg)
        try:
            env.reset()
            for _ in range(steps):
                env.step(torch.zeros(2, 0))
            u = env.unwrapped
            return {n: (torch.cat([u.scene[n].data.root_pos_w.torch - u.scene.env_origins,
                                   u.scene[n].data.root_quat_w.torch], -1).clone(),
                        u.scene[n].data.root_lin_vel_w.torch.norm(dim=-1).clone()) for n in names}
        finally:
            env.close()


def _assert_rest(state, name, z, xy):
    pose, speed = state[name]
    assert torch.all((pose[:, 2] - z).abs() < REST_TOL_M), f"{name} rests at {pose[:, 2].tolist()}, expected {z:.4f}"
    assert torch.all(pose[:, 3:5].abs() < TILT_TOL), f"{name} tipped: {pose[:, 3:].tolist()}"
    assert torch.all((pose[:, :2] - torch.tensor(xy)).norm(dim=-1) < 5e-3), f"{name} slid: {pose[:, :2].tolist()}"
    assert torch.all(speed < 1e-2), f"{name} still moving: {speed.tolist()}"


@pytest.mark.sim
def test_dynamic_assets_rest_on_a_table_where_their_meshes_say(tmp_path):
    # (registry name, x, y); each is released 5 mm above the table, a 4 cm cube 2 cm above its inner floor
    bodies = {"bowl": ("hollow_bowl", -0.35, 0.15, library.BOWL_USD),
              "mug": ("mug_with_handle", 0.0, 0.2, library.MUG_USD),
              "shelf": ("shelf", 0.3, -0.1, library.SHELF_USD)}
    objects = {}
    expected = {}
    for name, (reg, x, y, usd) in bodies.items():
        mesh = usd_collision_mesh(usd).mesh
        objects[name] = (reg, (x, y, TABLE_TOP_Z - mesh.bounds[0][2] + 0.005))
        expected[name] = (TABLE_TOP_Z - mesh.bounds[0][2], (x, y))
        inner = _top_below(mesh, 0.0, 0.0, mesh.bounds[1][2] + 0.1) if name != "shelf" else mesh.bounds[0][2]
        cube_z = TABLE_TOP_Z - mesh.bounds[0][2] + inner + 0.02  # its origin is 2 cm above what it rests on
        objects[f"cube_in_{name}"] = ("cube_4cm", (x, y, cube_z + 0.02))
        expected[f"cube_in_{name}"] = (cube_z, (x, y))
    spec = _write_spec(tmp_path, "concave_on_table", "table_background", objects)
    state = _settle(spec, "test_concave_on_table", list(objects))
    for name, (z, xy) in expected.items():
        _assert_rest(state, name, z, xy)
    # the cubes rest on the inner floors (8 mm above the base), not on a box top or the table
    assert abs(expected["cube_in_bowl"][0] - (TABLE_TOP_Z + mesh_shapes.BOWL_FLOOR + 0.02)) < 1e-6
    assert abs(expected["cube_in_mug"][0] - (TABLE_TOP_Z + mesh_shapes.MUG_FLOOR + 0.02)) < 1e-6
    assert abs(expected["cube_in_shelf"][0] - (TABLE_TOP_Z + 0.02)) < 1e-6  # under the shelf, on the table


@pytest.mark.sim
def test_kitchen_counter_sink_and_stove_hold_objects_where_their_meshes_say(tmp_path):
    counter = usd_collision_mesh(library.KITCHEN_COUNTER_USD).mesh
    spots = {"cube_on_counter": (0.05, 0.0), "cube_in_sink": (-0.3, 0.0), "cube_on_stove": (0.5, 0.0),
             "cube_on_burner": (0.39, -0.13)}
    objects, expected = {}, {}
    for name, (x, y) in spots.items():
        z = _top_below(counter, x, y, 2.0) + 0.02
        objects[name] = ("cube_4cm", (x, y, z + 0.01))
        expected[name] = (z, (x, y))
    mug = usd_collision_mesh(library.MUG_USD).mesh
    objects["mug"] = ("mug_with_handle", (-0.65, 0.2, 0.905))
    expected["mug"] = (0.90 - mug.bounds[0][2], (-0.65, 0.2))
    spec = _write_spec(tmp_path, "kitchen_counter_drop", "kitchen_counter", objects)
    state = _settle(spec, "test_kitchen_counter_drop", list(objects))
    for name, (z, xy) in expected.items():
        _assert_rest(state, name, z, xy)
    # the three surfaces differ: the sink floor is 22 cm below the counter, the stove 8 cm (+1 cm burner) above
    assert expected["cube_in_sink"][0] == pytest.approx(0.68 + 0.02, abs=1e-6)
    assert expected["cube_on_counter"][0] == pytest.approx(0.90 + 0.02, abs=1e-6)
    assert expected["cube_on_stove"][0] == pytest.approx(0.98 + 0.02, abs=1e-6)
    assert expected["cube_on_burner"][0] == pytest.approx(0.99 + 0.02, abs=1e-6)

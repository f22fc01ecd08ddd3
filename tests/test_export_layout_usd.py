"""USD export of placement layouts (``isaaclab_arena/export/``, ``isaaclab_arena/scripts/export_layout_usd.py``).

Poses are read back with pxr and compared in float64 numpy with the solved / recorded poses plus Isaac Lab's grid
origins; prototypes must be authored once; the command line is run from a folder outside the repository; the
exported stage is loaded into a kit-less Isaac Lab env (OV PhysX, CPU) and stepped: the objects rest where
exported, less the release gap of the On relation.
"""

from __future__ import annotations

import dataclasses
import math
import os

import numpy as np
import pytest
import torch
from pxr import Sdf, Usd, UsdGeom, UsdPhysics

from _outside import arena, refusal
from isaaclab_arena import ARENA_ROOT

SPEC = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "tabletop", "mug_bowl_table.yaml")
ROBOT_SPEC = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "robot", "franka_pick_and_place.yaml")
SCRIPT = "isaaclab_arena/scripts/export_layout_usd.py"
SEED = 7
SPACING = 2.5
TOL_M = 1e-6
PLACED = ("mug", "bowl")
MASS_KG = {"mug": 0.25, "bowl": 0.3}
HALF_HEIGHT_M = {"mug": 0.05, "bowl": 0.03}
TABLE_TOP_Z = 0.75


def _env(spec=SPEC):
    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec

    return ArenaEnvGraphSpec.from_yaml(spec).to_arena_env()


def _solve(num_envs: int):
    """``ObjectPlacer.place`` results of the spec (seed SEED) as (positions, rotations) mappings."""
    from isaaclab_arena.export.env_layouts import poses_from_results
    from isaaclab_arena.relations.object_placer import ObjectPlacer

    arena_env = _env()
    params = dataclasses.replace(arena_env.placer_params, placement_seed=SEED)
    results = ObjectPlacer(params).place(arena_env.get_placement_assets(), num_envs=num_envs)
    assert all(r.success for r in results)
    return poses_from_results(results)


def _rotation(xyzw) -> np.ndarray:
    x, y, z, w = np.asarray(xyzw, np.float64) / np.linalg.norm(xyzw)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _world(stage: Usd.Stage, path: str) -> np.ndarray:
    prim = stage.GetPrimAtPath(path)
    assert prim.IsValid(), path
    return np.array(UsdGeom.XformCache().GetLocalToWorldTransform(prim), dtype=np.float64).T  # column vectors


def _isaac_lab_origins(num_envs: int, spacing: float) -> np.ndarray:
    from isaaclab.cloner.clone_plan import grid_transforms

    return grid_transforms(num_envs, spacing)[0].astype(np.float64)


def _pose_errors(stage, positions, rotations, env_ids, num_envs, spacing) -> tuple[float, float]:
    """Largest position error (m) and rotation-matrix element error of every placed prim vs solved + origin."""
    origins = _isaac_lab_origins(num_envs, spacing)
    dp = dr = 0.0
    for env in env_ids:
        for key in positions:
            m = _world(stage, f"/World/envs/env_{env}/{key}")
            expected = origins[env] + np.asarray(positions[key][env], np.float64)
            dp = max(dp, float(np.abs(m[:3, 3] - expected).max()))
            dr = max(dr, float(np.abs(m[:3, :3] - _rotation(rotations[key][env])).max()))
    return dp, dr


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """One env and a 16-env grid of mug_bowl_table (seed SEED), .usda and .usd, through the Python function."""
    from isaaclab_arena.export.layout_usd import export_layout_usd

    folder = tmp_path_factory.mktemp("export")
    one, grid = _solve(1), _solve(16)
    out = {"one": one, "grid": grid, "folder": folder}
    for ext in (".usda", ".usd"):
        out[f"one{ext}"] = export_layout_usd(_env(), *one, folder / f"one{ext}", env_spacing=SPACING)
        out[f"grid{ext}"] = export_layout_usd(_env(), *grid, folder / f"grid{ext}", env_spacing=SPACING)
    sizes = {k: out[k].size_bytes for k in ("one.usda", "grid.usda", "one.usd", "grid.usd")}
    print(f"\n[export sizes] {sizes}; 16 x one env: .usda {16 * sizes['one.usda']}, .usd {16 * sizes['one.usd']}")
    return out


def test_env_origins_are_isaac_labs_grid():
    from isaaclab_arena.export.layout_usd import grid_env_origins

    for n in (1, 2, 3, 5, 16, 17):
        for spacing in (2.5, 1.3, 0.0):
            np.testing.assert_array_equal(grid_env_origins(n, spacing), _isaac_lab_origins(n, spacing) + 0.0)


@pytest.mark.parametrize("ext", [".usda", ".usd"])
def test_poses_are_the_solved_poses_plus_env_origins(exported, ext):
    for name, n in (("one", 1), ("grid", 16)):
        done = exported[f"{name}{ext}"]
        stage = Usd.Stage.Open(done.path)
        assert UsdGeom.GetStageMetersPerUnit(stage) == 1.0 and UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z
        assert stage.GetDefaultPrim().GetPath() == Sdf.Path("/World")
        positions, rotations = exported[name]
        dp, dr = _pose_errors(stage, positions, rotations, range(n), n, SPACING)
        print(f"[export pose error] {name}{ext}: position {dp:.3g} m, rotation {dr:.3g}")
        assert dp < TOL_M and dr < TOL_M
        assert done.env_ids == tuple(range(n)) and done.num_envs == n
        table = _world(stage, f"/World/envs/env_{n - 1}/table_background")  # fixed assets at their own pose
        np.testing.assert_allclose(table[:3, 3], _isaac_lab_origins(n, SPACING)[n - 1], atol=TOL_M)
        data = stage.GetRootLayer().customLayerData
        assert data["arena:num_envs"] == n and data["arena:env_spacing"] == SPACING


def _layer_prims(layer: Sdf.Layer) -> list[Sdf.PrimSpec]:
    specs = []
    layer.Traverse(Sdf.Path.absoluteRootPath,
                   lambda p: specs.append(layer.GetPrimAtPath(p)) if p.IsPrimPath() else None)
    return specs


def test_prototypes_are_authored_once_with_their_physics(exported):
    stage = Usd.Stage.Open(exported["grid.usda"].path)
    specs = _layer_prims(stage.GetRootLayer())
    gprims = [s for s in specs if s.typeName in ("Cube", "Cylinder", "Sphere", "Capsule", "Cone", "Mesh")]
    assert sorted(str(s.path) for s in gprims) == ["/Prototypes/bowl/geometry/mesh", "/Prototypes/mug/geometry/mesh"]
    table_refs = [s for s in specs if any("table_background.usda" in r.assetPath
                                          for r in s.referenceList.GetAddedOrExplicitItems())]
    assert [str(s.path) for s in table_refs] == ["/Prototypes/table_background"]
    assert stage.GetPrimAtPath("/Prototypes").IsAbstract()
    # composed: every env holds its own mug, bowl and table (5 cubes), all through references
    composed = [p for p in Usd.PrimRange(stage.GetPrimAtPath("/World/envs")) if p.IsA(UsdGeom.Gprim)]
    assert len(composed) == 16 * (2 + 5)
    for env in range(16):
        for key in PLACED:
            prim = stage.GetPrimAtPath(f"/World/envs/env_{env}/{key}")
            assert prim.HasAPI(UsdPhysics.RigidBodyAPI) and prim.HasAPI(UsdPhysics.MassAPI)
            assert math.isclose(UsdPhysics.MassAPI(prim).GetMassAttr().Get(), MASS_KG[key], rel_tol=1e-6)
            geom = stage.GetPrimAtPath(f"{prim.GetPath()}/geometry/mesh")
            assert geom.HasAPI(UsdPhysics.CollisionAPI) and geom.IsA(UsdGeom.Cylinder)
            assert math.isclose(UsdGeom.Cylinder(geom).GetHeightAttr().Get(), 2 * HALF_HEIGHT_M[key])
            assert UsdGeom.Gprim(geom).GetDisplayColorAttr().Get() is not None
        table = list(Usd.PrimRange(stage.GetPrimAtPath(f"/World/envs/env_{env}/table_background")))
        assert not any(p.HasAPI(UsdPhysics.RigidBodyAPI) for p in table)  # static: colliders only
        assert sum(p.HasAPI(UsdPhysics.CollisionAPI) for p in table) == 5


def test_a_grid_is_far_smaller_than_single_env_files(exported):
    for ext, factor in ((".usda", 2.5), (".usd", 5.0)):
        one, grid = exported[f"one{ext}"].size_bytes, exported[f"grid{ext}"].size_bytes
        assert grid * factor < 16 * one, (ext, one, grid)


def test_recorded_layouts_are_exported_as_replay_hands_them_out(tmp_path):
    from isaaclab_arena.export.env_layouts import export_arena_env_usd
    from isaaclab_arena.relations.placement_layouts import PlacementLayouts

    yaw = [0.0, 0.7, -2.0]
    rot = [[[0.0, 0.0, math.sin(a / 2), math.cos(a / 2)], [0.0, 0.0, 0.0, 1.0]] for a in yaw]
    pos = [[[-0.3 + 0.1 * i, 0.05 * i, 0.80], [0.1 + 0.1 * i, -0.2, 0.78]] for i in range(3)]
    path = tmp_path / "recorded.jsonl"
    PlacementLayouts(("mug", "bowl"), torch.tensor(pos), torch.tensor(rot)).write_episode_jsonl(path, source="settled")
    recorded = PlacementLayouts.from_episode_jsonl(path)
    done = export_arena_env_usd(_env(), tmp_path / "recorded.usda", num_envs=4, env_spacing=3.0,
                                placement_layouts=str(path))
    stage = Usd.Stage.Open(done.path)
    ids = [i % 3 for i in range(4)]  # env i replays layout i % N at its first reset
    positions = {k: recorded.position(k).double().numpy()[ids] for k in PLACED}
    rotations = {k: recorded.rotation(k).double().numpy()[ids] for k in PLACED}
    dp, dr = _pose_errors(stage, positions, rotations, range(4), 4, 3.0)
    assert dp < TOL_M and dr < TOL_M
    assert "recorded layouts" in stage.GetRootLayer().customLayerData["arena:source"]


def test_robot_is_referenced_at_its_pose_with_joints_at_home(tmp_path):
    from isaaclab_arena.export.layout_usd import export_layout_usd
    from isaaclab_arena.reachability.chain_fk import ChainFK
    from isaaclab_arena.reachability.urdf_chain import load_urdf_chain

    arena_env = _env(ROBOT_SPEC)
    half = math.sqrt(0.5)
    positions = {"robot": [[-0.3, -0.6, 0.76], [-0.2, -0.62, 0.76]], "cube": [[0.0, 0.1, 0.77], [0.1, 0.0, 0.77]],
                 "bowl": [[0.2, -0.1, 0.78], [-0.2, 0.1, 0.78]]}
    rotations = {"robot": [[0.0, 0.0, half, half], [0.0, 0.0, 0.0, 1.0]]}
    done = export_layout_usd(arena_env, positions, rotations, tmp_path / "robot.usda", env_spacing=4.0)
    stage = Usd.Stage.Open(done.path)
    dp, dr = _pose_errors(stage, {"robot": positions["robot"]},
                          {"robot": [rotations["robot"][0], rotations["robot"][1]]}, range(2), 2, 4.0)
    assert dp < TOL_M and dr < TOL_M
    d = arena_env.embodiment.description
    chain = load_urdf_chain(d.urdf_path, d.root_link, d.tcp_link)
    q = torch.tensor([[d.default_joint_pos[j] for j in chain.joint_names]], dtype=torch.float64)
    tcp_pos, tcp_rot = (t[0].numpy() for t in ChainFK(chain, dtype=torch.float64).forward(q))
    links = "/".join(f"panda_link{i}" for i in range(9))
    for env in range(2):
        base = _world(stage, f"/World/envs/env_{env}/robot")
        tcp = np.linalg.inv(base) @ _world(stage, f"/World/envs/env_{env}/robot/Geometry/{links}/panda_hand/"
                                                  f"{d.tcp_link}")
        assert np.abs(tcp[:3, 3] - tcp_pos).max() < TOL_M and np.abs(tcp[:3, :3] - tcp_rot).max() < TOL_M
    joint = stage.GetPrimAtPath("/World/envs/env_0/robot/Physics/panda_joint4")
    assert math.isclose(joint.GetAttribute("drive:angular:physics:targetPosition").Get(), -135.0, abs_tol=1e-4)
    assert math.isclose(joint.GetAttribute("state:angular:physics:position").Get(), -135.0, abs_tol=1e-4)
    assert stage.GetPrimAtPath(f"/World/envs/env_1/robot/Geometry/panda_link0/stand").HasAPI(UsdPhysics.CollisionAPI)
    assert set(done.robot_joints) == set(d.default_joint_pos)
    robot_specs = [s for s in _layer_prims(stage.GetRootLayer()) if str(s.path).startswith("/Prototypes/robot")]
    assert robot_specs and all(not str(s.path).startswith("/World") for s in robot_specs)  # authored once


def test_refusals_of_the_function_leave_files_alone(tmp_path, exported):
    from isaaclab_arena.export.layout_usd import export_layout_usd

    positions, rotations = exported["one"]
    target = tmp_path / "taken.usda"
    target.write_text("keep me")
    with pytest.raises(FileExistsError, match="never overwritten"):
        export_layout_usd(_env(), positions, rotations, target)
    assert target.read_text() == "keep me"
    with pytest.raises(ValueError, match="must end in"):
        export_layout_usd(_env(), positions, rotations, tmp_path / "stage.txt")
    with pytest.raises(ValueError, match="not spawned assets"):
        export_layout_usd(_env(), {**positions, "cup": [[0.0, 0.0, 1.0]]}, rotations, tmp_path / "a.usda")
    with pytest.raises(ValueError, match="placed by relations"):
        export_layout_usd(_env(), {"mug": positions["mug"]}, None, tmp_path / "b.usda")
    with pytest.raises(ValueError, match="env_ids"):
        export_layout_usd(_env(), positions, rotations, tmp_path / "c.usda", env_ids=[3])
    assert sorted(os.listdir(tmp_path)) == ["taken.usda"]  # nothing written, no temporary file left


@pytest.mark.slow
def test_command_line_from_outside_the_repository(tmp_path):
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.export.env_layouts import first_reset_layouts

    out = arena(tmp_path, SCRIPT, "--env_spec", SPEC, "--placement_seed", SEED, "--num_envs", 4, "--env_ids", "1,3",
                "--env_spacing", SPACING, "--output", "stage.usda")
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"Exported {tmp_path / 'stage.usda'}" in out.stdout
    assert sorted(os.listdir(tmp_path)) == ["stage.usda"]  # no temporary file left beside it
    stage = Usd.Stage.Open(str(tmp_path / "stage.usda"))
    assert [p.GetName() for p in stage.GetPrimAtPath("/World/envs").GetChildren()] == ["env_1", "env_3"]
    builder = ArenaEnvBuilder(_env(), ArenaEnvBuilderCfg(num_envs=4, placement_seed=SEED))
    builder.compose_manager_cfg()  # what environment_runner.py --placement_seed 7 --num_envs 4 resets into
    positions, rotations = first_reset_layouts(builder)
    dp, dr = _pose_errors(stage, positions, rotations, (1, 3), 4, SPACING)
    assert dp < TOL_M and dr < TOL_M
    before = (tmp_path / "stage.usda").read_bytes()
    again = arena(tmp_path, SCRIPT, "--env_spec", SPEC, "--output", "stage.usda")
    assert "stage.usda already exists" in refusal(again)
    assert (tmp_path / "stage.usda").read_bytes() == before
    assert "must end in" in refusal(arena(tmp_path, SCRIPT, "--env_spec", SPEC, "--output", "stage.txt"))
    assert "not both" in refusal(arena(tmp_path, SCRIPT, "--env_spec", SPEC, "--placement_seed", 1,
                                       "--placement_layouts", SPEC, "--output", "x.usda"))
    line = refusal(arena(tmp_path, SCRIPT, "--env_spec", SPEC, "--num_envs", 4, "--env_ids", "2-5", "--output", "y.usda"))
    assert "env 5 does not exist" in line
    assert sorted(os.listdir(tmp_path)) == ["stage.usda"]


@pytest.mark.sim
def test_exported_stage_rests_in_a_kitless_isaac_lab_env(exported):
    """The 16-env grid loaded as one global prim of a 1-env scene (OV PhysX, CPU); ``RigidObjectCfg(spawn=None)``
    views bind to the exported bodies. 60 env steps (1 s): every object rests where exported, lowered by the On
    relation's release gap (1 cm)."""
    import isaaclab.sim as sim_utils
    from isaaclab.app import launch_simulation
    from isaaclab.assets import AssetBaseCfg, RigidObjectCfg
    from isaaclab.envs import ManagerBasedEnv, ManagerBasedEnvCfg
    from isaaclab.scene import InteractiveSceneCfg
    from isaaclab.utils import configclass

    from isaaclab_arena.environments.physics import make_physics_cfg

    @configclass
    class _Empty:
        pass

    done = exported["grid.usda"]
    positions, rotations = exported["grid"]
    expected = {k: done.env_origins + np.asarray(positions[k], np.float64) for k in PLACED}
    scene = InteractiveSceneCfg(num_envs=1, env_spacing=0.0)
    scene.exported = AssetBaseCfg(prim_path="/World/exported", spawn=sim_utils.UsdFileCfg(usd_path=done.path))
    for key in PLACED:
        setattr(scene, key, RigidObjectCfg(prim_path=f"/World/exported/envs/env_.*/{key}", spawn=None))
    cfg = ManagerBasedEnvCfg(scene=scene, actions=_Empty(), observations=_Empty(), events=_Empty())
    cfg.decimation, cfg.sim.dt, cfg.sim.device = 2, 1.0 / 120.0, "cpu"
    cfg.sim.physics = make_physics_cfg("ovphysx", "cpu")
    with launch_simulation(cfg, {"headless": True, "device": "cpu"}):
        env = ManagerBasedEnv(cfg=cfg)
        try:
            def read(key):
                data = env.scene[key].data
                return (data.root_pos_w.torch.double().numpy().copy(), data.root_quat_w.torch.double().numpy().copy(),
                        data.root_lin_vel_w.torch.norm(dim=-1).numpy().copy())

            start = {k: read(k) for k in PLACED}
            for _ in range(60):
                env.step(torch.zeros(1, 0))
            rest = {k: read(k) for k in PLACED}
        finally:
            env.close()
    for key in PLACED:
        # match each simulated body to its exported env by position (envs are 2.5 m apart)
        order = np.argmin(np.linalg.norm(start[key][0][:, None, :2] - expected[key][None, :, :2], axis=-1), axis=1)
        assert sorted(order.tolist()) == list(range(16))
        exp = expected[key][order]
        assert np.abs(start[key][0] - exp).max() < 1e-5  # loaded where exported (float32 in the simulator)
        drift_xy = np.linalg.norm(rest[key][0][:, :2] - exp[:, :2], axis=1)
        drop = exp[:, 2] - rest[key][0][:, 2]
        print(f"[export rest] {key}: xy drift max {drift_xy.max() * 1000:.2f} mm, drop {drop.min() * 1000:.2f}-"
              f"{drop.max() * 1000:.2f} mm, speed max {rest[key][2].max():.2g} m/s")
        assert drift_xy.max() < 0.002
        assert np.all(drop >= -0.001) and np.all(drop < 0.012)  # the 1 cm release gap, nothing more
        np.testing.assert_allclose(rest[key][0][:, 2], TABLE_TOP_Z + HALF_HEIGHT_M[key], atol=0.002)
        assert rest[key][2].max() < 0.01
        rot_err = 1.0 - np.abs(np.sum(rest[key][1] * start[key][1], axis=1))
        assert rot_err.max() < 1e-4


def test_equal_spawner_configs_share_one_prototype(tmp_path):
    """table_clutter's cube_a and cube_b are both ``cube_4cm``: one prototype, two prims per env."""
    from isaaclab_arena.export.layout_usd import export_layout_usd

    positions = {"cube_a": [0.0, 0.0, 0.77], "cube_b": [0.1, 0.0, 0.77], "cube_c": [-0.1, 0.1, 0.79],
                 "tray": [0.1, 0.2, 0.77]}
    done = export_layout_usd(_env(os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "clutter",
                                               "table_clutter.yaml")), positions, None, tmp_path / "c.usda",
                             num_envs=3, env_spacing=2.0)
    assert sorted(done.prototypes) == ["/Prototypes/cube_a", "/Prototypes/cube_c", "/Prototypes/table_background",
                                       "/Prototypes/tray"]
    stage = Usd.Stage.Open(done.path)
    for env in range(3):
        for key in ("cube_a", "cube_b"):
            prim = stage.GetPrimAtPath(f"/World/envs/env_{env}/{key}")
            assert [r.primPath for r in prim.GetMetadata("references").GetAddedOrExplicitItems()] == \
                [Sdf.Path("/Prototypes/cube_a")]
            cube = UsdGeom.Cube(stage.GetPrimAtPath(f"{prim.GetPath()}/geometry/mesh"))
            assert math.isclose(cube.GetSizeAttr().Get(), 0.04)
        box = stage.GetPrimAtPath(f"/World/envs/env_{env}/tray/geometry/mesh")  # 0.16 x 0.10 x 0.04 m
        bound = UsdGeom.BBoxCache(Usd.TimeCode.Default(), ["default"]).ComputeLocalBound(box).ComputeAlignedRange()
        np.testing.assert_allclose(np.array(bound.GetSize()), [0.16, 0.10, 0.04], atol=1e-6)


def test_relative_asset_paths_resolve_from_the_output_folder(tmp_path, exported):
    from isaaclab_arena.export.layout_usd import export_layout_usd

    positions, rotations = exported["one"]
    done = export_layout_usd(_env(), positions, rotations, tmp_path / "deep" / "one.usda", relative_asset_paths=True)
    text = (tmp_path / "deep" / "one.usda").read_text()
    assert "@/" not in text and "@../" in text  # no absolute asset path
    stage = Usd.Stage.Open(done.path)
    table = list(Usd.PrimRange(stage.GetPrimAtPath("/World/envs/env_0/table_background")))
    assert sum(p.HasAPI(UsdPhysics.CollisionAPI) for p in table) == 5
    assert stage.GetPrimAtPath("/World/ground/CollisionPlane").HasAPI(UsdPhysics.CollisionAPI)

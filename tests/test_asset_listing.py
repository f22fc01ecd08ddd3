"""Asset names and parameters are listed, not only found in error messages: the catalog
(``isaaclab_arena.adapters.asset_catalog``) has one record per registry name with its size (bounding box extents in
the asset's root frame, metres) and parameters, ``--list_assets`` prints it from any folder without a scene or a
simulation, ``docs/ASSETS.md`` is what ``scripts/generate_assets_doc.py`` writes, and a factory whose parameters
cannot be read is refused by name."""

from __future__ import annotations

import itertools
import os

import numpy as np
import pytest

from isaaclab_arena import ARENA_ROOT
from isaaclab_arena.adapters import asset_registry
from isaaclab_arena.adapters.asset_catalog import (
    SET_BY_PARAMETERS,
    AssetCatalogError,
    build_catalog,
    describe_asset,
    format_table,
)
from isaaclab_arena.assets.asset import Object
from isaaclab_arena.environments.cli import get_isaaclab_arena_cli_parser
from isaaclab_arena_environments.assets.library import MUG_USD, TABLE_USD
from _outside import POLICY_RUNNER, RUNNER, arena

DOCS = os.path.join(ARENA_ROOT, "docs")
GENERATOR = os.path.join(ARENA_ROOT, "scripts", "generate_assets_doc.py")


def _records() -> dict:
    return {r.registry_name: r for r in build_catalog()}


def _usd_extents(usd_path: str) -> np.ndarray:
    """Extents (x, y, z) in metres of every visible Mesh / Cube prim of ``usd_path`` in its default prim's frame,
    from the raw points and transforms (float64), not from a bounds cache."""
    from pxr import Usd, UsdGeom

    stage = Usd.Stage.Open(usd_path)
    root = stage.GetDefaultPrim()
    t = Usd.TimeCode.Default()
    world_to_root = np.array(UsdGeom.Xformable(root).ComputeLocalToWorldTransform(t).GetInverse(), np.float64)
    points = []
    for prim in Usd.PrimRange(root):
        if not prim.IsA(UsdGeom.Gprim) or UsdGeom.Imageable(prim).ComputeVisibility(t) == UsdGeom.Tokens.invisible:
            continue
        if prim.IsA(UsdGeom.Mesh):
            local = np.array(UsdGeom.Mesh(prim).GetPointsAttr().Get(), np.float64)
        elif prim.IsA(UsdGeom.Cube):
            h = 0.5 * float(UsdGeom.Cube(prim).GetSizeAttr().Get())
            local = np.array(list(itertools.product((-h, h), repeat=3)), np.float64)
        else:
            raise AssertionError(f"{prim.GetPath()}: {prim.GetTypeName()} is not handled here")
        to_root = np.array(UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(t), np.float64) @ world_to_root
        points.append((np.c_[local, np.ones(len(local))] @ to_root)[:, :3])  # Gf: row vectors, p' = p M
    p = np.concatenate(points) * float(UsdGeom.GetStageMetersPerUnit(stage))
    return p.max(0) - p.min(0)


# -- (a) the catalog ------------------------------------------------------------------------------------------
def test_the_catalog_has_every_registered_name_with_a_size_or_its_parameters():
    records = _records()
    assert sorted(records) == asset_registry.list_registered_assets()
    for name, r in records.items():
        assert r.problem is None and r.kind in ("Object", "Background"), (name, r)
        assert {"initial_pose", "collision_mode"} <= {p.name for p in r.params}, name
        if r.needs_params:
            assert r.size_m is None and r.size_label == SET_BY_PARAMETERS, name
        else:
            assert r.size_m is not None and all(v > 0 for v in r.size_m), (name, r.size_m)
            assert r.object_type in ("rigid", "articulation", "base"), name
    # the built-in entries that need parameters say which, with the defaults of the others
    required = {n: [p.name for p in r.params if p.required] for n, r in records.items() if r.needs_params}
    assert required == {"box": ["size"], "cylinder": ["radius", "height"], "sphere": ["radius"],
                        "static_box": ["size"], "usd_file": ["usd_path"], "usd_background": ["usd_path"]}
    box = {p.name: p for p in records["box"].params}
    assert box["mass_kg"].default == 0.2 and box["mass_kg"].label() == "mass_kg=0.2"
    assert records["static_box"].kind_label == "Background (base)" and records["box"].kind_label == "Object"
    assert records["table_background"].kind_label == "Background (base)"
    assert records["mug"].kind_label == "Object (rigid)" and records["mug"].collision_label == "default"
    assert records["mug"].summary.startswith("Mug proxy: a rigid cylinder of radius 0.04 m")


def test_sizes_match_an_independent_computation():
    records = _records()
    # the mug is a cylinder of radius 0.04 m and height 0.10 m (its factory's spawner): 2r x 2r x h
    np.testing.assert_allclose(np.array(records["mug"].size_m, np.float64), [0.08, 0.08, 0.10], rtol=0, atol=1e-12)
    # USD assets: points and transforms read with pxr, float64, against the catalog (pxr BBoxCache underneath)
    for name, usd in (("mug_with_handle", MUG_USD), ("table_background", TABLE_USD)):
        np.testing.assert_allclose(np.array(records[name].size_m, np.float64), _usd_extents(usd), rtol=0, atol=1e-6,
                                   err_msg=name)
    np.testing.assert_allclose(_usd_extents(MUG_USD), [0.116, 0.08, 0.10], atol=1e-6)  # handle to x = 0.076 m
    np.testing.assert_allclose(_usd_extents(TABLE_USD), [1.2, 0.8, 0.75], atol=1e-6)  # top at z = 0.75 m


# -- (b) docs/ASSETS.md is what the generator writes ----------------------------------------------------------
@pytest.mark.slow
def test_the_assets_page_is_up_to_date(tmp_path):
    out = arena(tmp_path, GENERATOR, "--out_dir", tmp_path / "docs", timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    with open(tmp_path / "docs" / "ASSETS.md") as f:
        fresh = f.read()
    with open(os.path.join(DOCS, "ASSETS.md")) as f:
        committed = f.read()
    assert committed == fresh, ("docs/ASSETS.md is out of date: run scripts/arena_python.sh "
                                "scripts/generate_assets_doc.py and commit docs/ASSETS.md and docs/images/assets/")
    fresh_pngs = sorted(os.listdir(tmp_path / "docs" / "images" / "assets"))
    committed_pngs = sorted(os.listdir(os.path.join(DOCS, "images", "assets")))
    assert committed_pngs == fresh_pngs
    from PIL import Image

    for name in committed_pngs:
        path = os.path.join(DOCS, "images", "assets", name)
        assert f"(images/assets/{name})" in committed
        with Image.open(path) as im:
            assert im.size == (160, 160), name
        assert os.path.getsize(path) < 16_000, name
    for name in asset_registry.list_registered_assets():
        assert f"| `{name}` |" in committed


# -- (c) --list_assets as a user runs it ------------------------------------------------------------------------
def _rows(stdout: str) -> dict[str, str]:
    return {line.split()[0]: line for line in stdout.splitlines() if line.strip()}


@pytest.mark.slow
def test_list_assets_prints_the_table_from_any_folder_without_a_scene(tmp_path):
    out = arena(tmp_path, RUNNER, "--list_assets", timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Traceback" not in out.stderr and "error" not in out.stderr.lower(), out.stderr[-3000:]
    rows = _rows(out.stdout)
    assert out.stdout.splitlines()[0].split()[:2] == ["name", "kind"]
    for name in asset_registry.list_registered_assets():
        assert name in rows, name
    assert "Object (rigid)" in rows["mug"] and "0.080 x 0.080 x 0.100" in rows["mug"]
    assert "Object (rigid)" in rows["bowl"] and "0.160 x 0.160 x 0.060" in rows["bowl"]
    assert "set by parameters" in rows["box"] and "size (required)" in rows["box"] and "mass_kg=0.2" in rows["box"]
    assert "Background (base)" in rows["table_background"] and "1.200 x 0.800 x 0.750" in rows["table_background"]
    assert "usd_path (required)" in rows["usd_file"]
    # nothing solved, simulated or written
    assert "[solver]" not in out.stdout and "[placement]" not in out.stdout and "placement seed" not in out.stdout
    assert os.listdir(tmp_path) == []
    # the policy runner shares the parser, so it lists the same (no env name needed)
    out2 = arena(tmp_path, POLICY_RUNNER, "--list_assets", timeout=600)
    assert out2.returncode == 0 and out2.stdout == out.stdout, out2.stderr[-3000:]


LIST_PROBE = """\
import runpy, sys
sys.argv = [{script!r}, "--list_assets"]
try:
    runpy.run_path({script!r}, run_name="__main__")
except SystemExit as e:
    print("EXIT=" + str(e.code))
loaded = sorted(m for m in ("isaaclab.app", "isaaclab.envs", "isaaclab.sim.simulation_context",
                            "isaaclab_arena.environments.arena_env_builder", "isaaclab_arena.environments.run_loop",
                            "isaaclab_arena.relations.object_placer") if m in sys.modules)
print("LOADED=" + ",".join(loaded))
"""


@pytest.mark.slow
def test_list_assets_loads_no_simulation_or_solver(tmp_path):
    out = arena(tmp_path, "-c", LIST_PROBE.format(script=os.path.join(ARENA_ROOT, RUNNER)), timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-2:] == ["EXIT=0", "LOADED="], out.stdout[-1000:]


# -- (d) what the catalog refuses --------------------------------------------------------------------------------
def _opaque(instance_name: str, **params) -> Object:
    """A factory that takes anything and says nothing about it."""
    from isaaclab_arena.assets.bounding_box import AxisAlignedBoundingBox

    return Object(instance_name, bounding_box=AxisAlignedBoundingBox.from_size((0.1, 0.1, 0.1)))


def _keywords(instance_name: str, edge_m: float = 0.1, *, colour) -> Object:
    """A factory whose parameters are its keywords."""
    return _opaque(instance_name)


def _broken(instance_name: str = "broken", **params) -> Object:
    """A factory that cannot build its asset."""
    raise FileNotFoundError("/nowhere/widget.usda")


_broken.accepted_params = ["initial_pose"]


def test_a_factory_whose_parameters_cannot_be_read_is_refused_by_name():
    with pytest.raises(AssetCatalogError, match=r"asset 'opaque_widget' \([\w.]*_opaque\): it takes "
                                                r"\*\*params and declares no accepted_params"):
        describe_asset("opaque_widget", _opaque)
    # declaring them (the registry's accepted_params) makes it listable, with a size read from the built asset
    _opaque.accepted_params = ["initial_pose", "collision_mode"]
    try:
        r = describe_asset("opaque_widget", _opaque)
    finally:
        del _opaque.accepted_params
    assert [p.name for p in r.params] == ["initial_pose", "collision_mode"] and r.size_m == pytest.approx((0.1,) * 3)
    # keyword parameters are read from the signature; a required one leaves the size to the parameters
    r = describe_asset("keyword_widget", _keywords)
    assert [(p.name, p.required, p.label()) for p in r.params] == [("edge_m", False, "edge_m=0.1"),
                                                                   ("colour", True, "colour (required)")]
    assert r.size_m is None and r.size_label == SET_BY_PARAMETERS
    with pytest.raises(AssetCatalogError, match="asset 'broken_widget' .*building it without parameters failed: "
                                                "FileNotFoundError: /nowhere/widget.usda"):
        describe_asset("broken_widget", _broken)


def test_list_assets_names_an_entry_it_cannot_describe_and_exits_1(monkeypatch, capsys):
    asset_registry.list_registered_assets()  # the built-in and example entries are loaded first
    monkeypatch.setitem(asset_registry._REGISTRY, "opaque_widget", _opaque)
    with pytest.raises(AssetCatalogError, match="opaque_widget"):
        build_catalog(strict=True)  # what generate_assets_doc.py uses: no page with a hole in it
    records = build_catalog(strict=False)
    assert [r.registry_name for r in records if r.problem] == ["opaque_widget"]
    assert "problem: asset 'opaque_widget'" in format_table(records)
    with pytest.raises(SystemExit) as exit_info:
        get_isaaclab_arena_cli_parser().parse_args(["--list_assets"])
    assert exit_info.value.code == 1
    text = capsys.readouterr().out
    assert "opaque_widget" in _rows(text) and "? (see below)" in _rows(text)["opaque_widget"]
    assert "problem: asset 'opaque_widget' (" in text and "_opaque): it takes **params" in text

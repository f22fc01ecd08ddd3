"""The committed robot assets (the Franka Panda, the KUKA iiwa) are what their build step declares (manifest
hashes), and each USD agrees with the URDF it was built from (joints, limits, fixed base, drives)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import xml.etree.ElementTree as ET

import pytest

from isaaclab_arena import ARENA_ROOT

ROBOTS = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "assets", "robots")
#: Asset folder -> (URDF, USD, a phrase of its LICENSE.txt).
ASSETS = {"franka_panda": ("panda.urdf", "panda.usda", "Apache License"),
          "kuka_iiwa": ("lbr_iiwa.urdf", "lbr_iiwa.usda", "zlib license")}
pytestmark = pytest.mark.parametrize("asset", sorted(ASSETS))


def _manifest(asset):
    with open(os.path.join(ROBOTS, asset, "manifest.json")) as f:
        return json.load(f)


def _sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_committed_files_match_the_manifest(asset):
    folder = os.path.join(ROBOTS, asset)
    manifest = _manifest(asset)
    on_disk = sorted(os.path.relpath(os.path.join(d, f), folder) for d, _, fs in os.walk(folder) for f in fs
                     if f != "manifest.json")
    assert on_disk == sorted(manifest["files"]), f"files differ from the manifest: rebuild with build_robot.sh {asset}"
    for rel, digest in manifest["files"].items():
        assert _sha256(os.path.join(folder, rel)) == digest, f"{rel} differs from the build output in manifest.json"
    total = sum(os.path.getsize(os.path.join(folder, r)) for r in manifest["files"])
    assert total < 5_000_000, f"asset is {total} bytes; keep it under ~5 MB"


def test_manifest_declares_the_build_inputs(asset):
    """The manifest names the same source and converter the build script pins (the robot's section
    ``build_<asset>.py`` and the shared ``robot_usd_build.py``)."""
    import ast

    consts = {}
    for script in (f"build_{asset}.py", "robot_usd_build.py"):
        with open(os.path.join(ROBOTS, script)) as f:
            consts.update(_constants(ast.parse(f.read())))
    source = _manifest(asset)["source"]
    assert (source["package"], source["version"], source["sdist_sha256"], source["licence"]) == \
        (consts["PACKAGE"], consts["VERSION"], consts["SDIST_SHA256"], consts["LICENCE"])
    assert _manifest(asset)["converter"] == consts["CONVERTER"]
    with open(os.path.join(ROBOTS, asset, "LICENSE.txt")) as f:
        assert ASSETS[asset][2] in f.read(4000)


def _constants(tree) -> dict:
    import ast

    consts = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and isinstance(node.value, ast.Constant):
                    consts[target.id] = node.value.value
                elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    for t, v in zip(target.elts, node.value.elts):
                        if isinstance(v, ast.Constant):
                            consts[t.id] = v.value
    return consts


def _urdf_joints(asset):
    root = ET.parse(os.path.join(ROBOTS, asset, ASSETS[asset][0])).getroot()
    out = {}
    for j in root.findall("joint"):
        limit = j.find("limit")
        out[j.get("name")] = (j.get("type"), None if limit is None else (float(limit.get("lower", "nan")),
                                                                         float(limit.get("upper", "nan"))))
    return out


def test_usd_joints_limits_root_and_drives_follow_the_urdf(asset):
    pytest.importorskip("pxr")
    from pxr import Usd, UsdPhysics

    stage = Usd.Stage.Open(os.path.join(ROBOTS, asset, ASSETS[asset][1]))
    root = stage.GetDefaultPrim()
    assert root.GetPath().pathString == _manifest(asset)["root_prim"]
    assert root.HasAPI(UsdPhysics.ArticulationRootAPI), "fixed base needs the articulation root on the robot prim"
    assert not stage.GetPrimAtPath(_manifest(asset)["root_link"]).HasAPI(UsdPhysics.ArticulationRootAPI)
    urdf = _urdf_joints(asset)
    seen = {}
    for prim in stage.Traverse():
        if prim.IsA(UsdPhysics.RevoluteJoint):
            j = UsdPhysics.RevoluteJoint(prim)
            lo, hi = math.radians(j.GetLowerLimitAttr().Get()), math.radians(j.GetUpperLimitAttr().Get())
            seen[prim.GetName()] = ("revolute", (lo, hi))
            assert prim.HasAPI(UsdPhysics.DriveAPI, "angular"), prim.GetName()
        elif prim.IsA(UsdPhysics.PrismaticJoint):
            j = UsdPhysics.PrismaticJoint(prim)
            seen[prim.GetName()] = ("prismatic", (j.GetLowerLimitAttr().Get(), j.GetUpperLimitAttr().Get()))
            assert prim.HasAPI(UsdPhysics.DriveAPI, "linear"), prim.GetName()
    movable = {n: v for n, v in urdf.items() if v[0] in ("revolute", "prismatic")}
    assert sorted(seen) == sorted(movable)
    for name, (kind, (lo, hi)) in movable.items():
        assert seen[name][0] == kind
        assert seen[name][1] == pytest.approx((lo, hi), abs=1e-4), name

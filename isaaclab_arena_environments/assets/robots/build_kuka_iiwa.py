"""Builds the shipped KUKA LBR iiwa USD (arm from the pybullet sdist, gripper authored here). Runs in the tool venv.

Run it through ``build_robot.sh kuka_iiwa``: the shared steps are in ``robot_usd_build.py``; this file is the
iiwa's section. The arm is ``pybullet_data/kuka_iiwa/model.urdf`` (BSD-2-Clause, R. Krug & T. Stoyanov, AASS
Orebro; the notice stays in the shipped URDF; pybullet itself is zlib). It has no gripper, so the fix-ups add one:

* a parallel two-finger gripper authored by the project, written into the URDF before conversion, so the USD
  and the IK (which reads the shipped URDF) see the same kinematics: a box hand ``iiwa_hand`` fixed on the
  flange (``lbr_iiwa_link_7``, 0.045 m along its z), two box fingers on prismatic joints
  ``iiwa_finger_joint1`` (+y) and ``iiwa_finger_joint2`` (-y), 0 (closed: inner faces touch) to 0.04 m
  (open: 8 cm between the inner faces), no mimic joint (both are driven to the same target), and a fixed
  tool frame ``iiwa_grasptarget`` between the fingertips, 0.085 m along the hand's z (the fingertips reach
  0.015 m past it); lengths in metres, frames as in the URDF;
* collision meshes: the convex hull of each link's STL (PhysX uses a convex hull anyway), as small OBJ files;
  the visual OBJ meshes are kept;
* ``LICENSE.txt``: pybullet's zlib licence and the URDF's BSD-2-Clause notice.

Shipped: ``lbr_iiwa.usda`` + ``Payload/``, ``lbr_iiwa.urdf``, ``LICENSE.txt``, ``manifest.json``.
"""

from __future__ import annotations

import os
import re
import sys

if __package__:  # imported as a module of the package (tests); run as a script by build_robot.sh
    from .robot_usd_build import Recipe, main, pybullet_data
else:
    from robot_usd_build import Recipe, main, pybullet_data

SDIST_DIR = pybullet_data("kuka_iiwa")
LICENCE = "BSD-2-Clause (URDF) and Zlib (pybullet)"
URDF = "lbr_iiwa.urdf"

#: The authored gripper, metres and kilograms: hand box (x, y, z) on the flange, finger boxes, TCP offset.
FLANGE_Z = 0.045
HAND_BOX, HAND_MASS = (0.05, 0.14, 0.04), 0.5
FINGER_BOX, FINGER_MASS = (0.02, 0.012, 0.06), 0.05
FINGER_TRAVEL, FINGER_EFFORT = 0.04, 100.0
TCP_Z = 0.085


def _box_inertia(size, mass) -> str:
    x, y, z = size
    i = (mass * (y * y + z * z) / 12, mass * (x * x + z * z) / 12, mass * (x * x + y * y) / 12)
    return f'<inertia ixx="{i[0]:.6g}" ixy="0" ixz="0" iyy="{i[1]:.6g}" iyz="0" izz="{i[2]:.6g}"/>'


def _box_link(name: str, size, centre, mass: float, colour: str) -> str:
    xyz = " ".join(f"{v:g}" for v in centre)
    box = " ".join(f"{v:g}" for v in size)
    geometry = f'<origin rpy="0 0 0" xyz="{xyz}"/><geometry><box size="{box}"/></geometry>'
    return (f'  <link name="{name}">\n    <inertial><origin rpy="0 0 0" xyz="{xyz}"/><mass value="{mass:g}"/>'
            f'{_box_inertia(size, mass)}</inertial>\n    <visual>{geometry}<material name="{colour}"/></visual>\n'
            f'    <collision>{geometry}</collision>\n  </link>\n')


def gripper_xml() -> str:
    """URDF links and joints of the authored gripper (appended to the arm's URDF)."""
    hz = HAND_BOX[2]
    fy, fz = FINGER_BOX[1] / 2, FINGER_BOX[2] / 2
    parts = ["  <!-- Parallel two-finger gripper authored by isaaclab_arena (build_kuka_iiwa.py), not part of the\n"
             "       original model: box hand on the flange, two prismatic box fingers, a fixed tool frame. -->\n",
             '  <joint name="iiwa_hand_joint" type="fixed"><parent link="lbr_iiwa_link_7"/><child link="iiwa_hand"/>'
             f'<origin rpy="0 0 0" xyz="0 0 {FLANGE_Z:g}"/></joint>\n',
             _box_link("iiwa_hand", HAND_BOX, (0.0, 0.0, hz / 2), HAND_MASS, "Grey")]
    for i, sign in ((1, 1), (2, -1)):
        parts.append(f'  <joint name="iiwa_finger_joint{i}" type="prismatic"><parent link="iiwa_hand"/>'
                     f'<child link="iiwa_finger{i}"/><origin rpy="0 0 0" xyz="0 0 {hz:g}"/><axis xyz="0 {sign} 0"/>'
                     f'<limit effort="{FINGER_EFFORT:g}" lower="0.0" upper="{FINGER_TRAVEL:g}" velocity="0.2"/>'
                     '</joint>\n')
        parts.append(_box_link(f"iiwa_finger{i}", FINGER_BOX, (0.0, sign * fy, fz), FINGER_MASS, "Grey"))
    parts.append('  <link name="iiwa_grasptarget"><inertial><origin rpy="0 0 0" xyz="0 0 0"/><mass value="0.0"/>'
                 '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>\n')
    parts.append('  <joint name="iiwa_grasptarget_hand" type="fixed"><parent link="iiwa_hand"/>'
                 f'<child link="iiwa_grasptarget"/><origin rpy="0 0 0" xyz="0 0 {TCP_Z:g}"/></joint>\n')
    return "".join(parts)


def prepare(src: str) -> list[str]:
    import trimesh

    os.makedirs(os.path.join(src, "meshes", "collision"), exist_ok=True)
    for i in range(8):
        hull = trimesh.load(os.path.join(src, "meshes", f"link_{i}.stl"), force="mesh").convex_hull
        hull.export(os.path.join(src, "meshes", "collision", f"link_{i}.obj"), include_normals=False)
    with open(os.path.join(src, "model.urdf")) as f:
        text = f.read()
    text, n = re.subn(r'filename="meshes/(link_\d)\.stl"', r'filename="meshes/collision/\1.obj"', text)
    if n != 8 or text.count("</robot>") != 1:
        raise SystemExit(f"build kuka_iiwa: model.urdf is not the expected one ({n} collision meshes)")
    text = text.replace("</robot>", gripper_xml() + "</robot>")
    with open(os.path.join(src, URDF), "w") as f:
        f.write(text)
    notice = re.search(r"<!--LICENSE:.*?-->\n(.*?)<robot", text, re.S).group(0)
    notice = "\n".join(line.strip()[4:-3].rstrip() for line in notice.splitlines() if line.strip().startswith("<!--"))
    with open(os.path.join(src, "_extra", "LICENSE.txt")) as f:
        zlib = f.read()
    with open(os.path.join(src, "LICENSE.txt"), "w") as f:
        f.write("kuka_iiwa/lbr_iiwa.urdf and its meshes come from the pybullet 3.2.7 sdist "
                f"({SDIST_DIR}).\n\nThe URDF model (its header):\n\n{notice}\n\n"
                f"pybullet (LICENSE.txt of the sdist):\n\n{zlib}\nThe gripper (iiwa_hand, iiwa_finger1/2, iiwa_grasptarget) is authored by isaaclab_arena.\n")
    return ["collision meshes: convex hull of each link's STL (trimesh), as OBJ",
            f"parallel two-finger gripper authored into {URDF} (iiwa_hand on the flange, prismatic "
            f"iiwa_finger_joint1/2 0-{FINGER_TRAVEL:g} m, TCP iiwa_grasptarget {TCP_Z:g} m along the hand's z)",
            "LICENSE.txt: pybullet's zlib licence + the URDF's BSD-2-Clause notice"]


RECIPE = Recipe(asset="kuka_iiwa", licence=LICENCE, path_in_sdist=SDIST_DIR, urdf=URDF, root_prim="/lbr_iiwa",
                root_link="/lbr_iiwa/Geometry/lbr_iiwa_link_0", prepare=prepare, extract_also=("LICENSE.txt",))

if __name__ == "__main__":
    sys.exit(main(RECIPE, __doc__.splitlines()[0]))

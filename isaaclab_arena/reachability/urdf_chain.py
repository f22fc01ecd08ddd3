"""A robot arm's serial kinematic chain read from its URDF (the description its USD was built from).

Only the links from ``base_link`` to ``tcp_link`` are kept: visuals, collisions, side branches (fingers)
and inertials are dropped, so no mesh is read. Lengths in metres, angles in radians, frames as in the
URDF (``base_link`` is the robot's root frame).
"""

from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np

_MOVABLE = ("revolute", "prismatic", "continuous")


@dataclass(frozen=True)
class ChainJoint:
    """One URDF joint of the chain: parent-to-joint transform, type, axis and limits."""

    name: str
    type: str
    origin: np.ndarray  # (4, 4) float64, parent link frame -> joint frame at q = 0
    axis: np.ndarray  # (3,) unit axis in the joint frame
    lower: float
    upper: float


@dataclass(frozen=True)
class UrdfChain:
    """The serial chain ``base_link -> tcp_link`` of a URDF.

    Attributes:
        base_link: Root link (the robot's root frame).
        tcp_link: Tool frame the grasp is measured at.
        joints: Every joint on the path, fixed ones included, base first.
        urdf_xml: A URDF holding only this chain (the seed library's cache key, the robot pictures' link tree).
    """

    base_link: str
    tcp_link: str
    joints: tuple[ChainJoint, ...]
    urdf_xml: str

    @property
    def movable(self) -> tuple[ChainJoint, ...]:
        return tuple(j for j in self.joints if j.type in _MOVABLE)

    @property
    def joint_names(self) -> list[str]:
        """Names of the chain's movable joints, in chain order (the IK coordinates)."""
        return [j.name for j in self.movable]

    @property
    def lower(self) -> np.ndarray:
        return np.array([j.lower for j in self.movable], dtype=np.float64)

    @property
    def upper(self) -> np.ndarray:
        return np.array([j.upper for j in self.movable], dtype=np.float64)

    def folded_transforms(self) -> tuple[list[np.ndarray], np.ndarray]:
        """The fixed transforms folded together, float64 (4, 4): for each movable joint, the one from the previous
        movable joint's frame (the base for the first) to this joint's frame at q = 0, its own origin included;
        and the one from the last movable joint's frame to the TCP."""
        folded, pending = [], np.eye(4)
        for joint in self.joints:
            pending = pending @ joint.origin
            if joint.type in _MOVABLE:
                folded.append(pending)
                pending = np.eye(4)
        return folded, pending


def _rpy_matrix(rpy) -> np.ndarray:
    r, p, y = (float(v) for v in rpy)
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def _floats(text: str | None, default: str, what: str) -> list[float]:
    values = (text if text is not None else default).split()
    if len(values) != 3:
        raise ValueError(f"{what}: expected 3 numbers, got {text!r}")
    return [float(v) for v in values]


def load_urdf_chain(urdf_path: str, base_link: str, tcp_link: str) -> UrdfChain:
    """Parses ``urdf_path`` and returns the chain from ``base_link`` to ``tcp_link``.

    Raises:
        FileNotFoundError: The URDF does not exist.
        ValueError: A link is missing, ``tcp_link`` does not descend from ``base_link``, or a movable
            joint has no limits (names the joint).
    """
    if not os.path.isfile(urdf_path):
        raise FileNotFoundError(f"robot description not found: {urdf_path}")
    root = ET.parse(urdf_path).getroot()
    links = {link.get("name") for link in root.findall("link")}
    for role, name in (("base_link", base_link), ("tcp_link", tcp_link)):
        if name not in links:
            raise ValueError(f"{urdf_path}: {role} '{name}' is not a link; links: {sorted(links)}")
    by_child = {j.find("child").get("link"): j for j in root.findall("joint")}
    path, link = [], tcp_link
    while link != base_link:
        if link not in by_child:
            raise ValueError(f"{urdf_path}: tcp_link '{tcp_link}' does not descend from base_link '{base_link}'")
        joint = by_child[link]
        path.append(joint)
        link = joint.find("parent").get("link")
    path.reverse()

    joints = []
    for j in path:
        name, jtype = j.get("name"), j.get("type")
        origin = j.find("origin")
        xyz = _floats(None if origin is None else origin.get("xyz"), "0 0 0", f"joint '{name}' origin xyz")
        rpy = _floats(None if origin is None else origin.get("rpy"), "0 0 0", f"joint '{name}' origin rpy")
        transform = np.eye(4)
        transform[:3, :3] = _rpy_matrix(rpy)
        transform[:3, 3] = xyz
        axis_el = j.find("axis")
        axis = np.array(_floats(None if axis_el is None else axis_el.get("xyz"), "1 0 0", f"joint '{name}' axis"))
        if jtype in _MOVABLE:
            norm = np.linalg.norm(axis)
            if norm == 0:
                raise ValueError(f"{urdf_path}: joint '{name}' has a zero axis")
            axis = axis / norm
        lower, upper = -math.inf, math.inf
        limit = j.find("limit")
        if jtype in ("revolute", "prismatic"):
            if limit is None or limit.get("lower") is None or limit.get("upper") is None:
                raise ValueError(f"{urdf_path}: joint '{name}' ({jtype}) needs <limit lower= upper=>")
            lower, upper = float(limit.get("lower")), float(limit.get("upper"))
        joints.append(ChainJoint(name, jtype, transform, axis, lower, upper))

    # a URDF of the chain alone: its links without geometry, its joints
    keep_links = {base_link} | {j.find("child").get("link") for j in path}
    keep_joints = {j.get("name") for j in path}
    for link_el in list(root.findall("link")):
        if link_el.get("name") not in keep_links:
            root.remove(link_el)
            continue
        for tag in ("visual", "collision", "contact"):
            for el in link_el.findall(tag):
                link_el.remove(el)
    for joint_el in list(root.findall("joint")):
        if joint_el.get("name") not in keep_joints:
            root.remove(joint_el)
    for other in [e for e in root if e.tag not in ("link", "joint")]:
        root.remove(other)
    return UrdfChain(base_link, tcp_link, tuple(joints), ET.tostring(root, encoding="unicode"))

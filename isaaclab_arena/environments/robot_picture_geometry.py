"""What a layout picture draws of a robot, seen from above: its arm at the home pose, its heading and its
reach annulus at grasp height (numbers only; ``placement_pictures.py`` draws them).

Frames and units: lengths in metres, angles in radians, quaternions xyzw. The *base frame* is the robot's
root frame (the URDF base link, ``RobotDescription.root_link``: the top centre of the stand); env-local poses
are the placer's.

- **Arm**: the origin of every link on the chain base link -> TCP link (``RobotDescription.tcp_link``), at the
  embodiment's home joint positions (``Embodiment.reachability_robot.home_joint_pos``; a chain joint it does
  not name sits at the middle of its limits, as in the IK). Computed once per robot with the project's forward
  kinematics (:class:`~isaaclab_arena.reachability.chain_fk.ChainFK`, float64, run on each prefix of the
  chain read by :func:`~isaaclab_arena.reachability.urdf_chain.load_urdf_chain`), in the base frame; every
  env's base pose then takes the points to env-local coordinates (one batched product), and the picture keeps
  x and y (orthographic projection onto the floor). The first point is the base link origin: the base position.
- **Heading**: the base frame's +X axis in env-local XY, a unit vector (cos yaw, sin yaw) for a level base:
  the direction the arm faces (the Franka's home pose holds the TCP 0.31 m along +X).
- **Reach annulus at grasp height**: the grasp height of an env is the env-local z at which ``ik_reachable``
  puts the TCP for the scene's first ``RequiresReachability`` object: its position z plus
  ``ReachabilityConfig.grasp_z_offset_m``. Its height above the base, ``h`` (m, rounded to the millimetre),
  selects the ring: radii ``r_in <= r_out`` (m, horizontal distance from the base link origin, which lies on
  joint 1's vertical axis) between which the robot reaches a top-down grasp at height ``h`` — the grasp
  ``ik_reachable`` checks, answered by the same IK backend (``reachability.backends.ik_backend_for``) with the
  config's thresholds. See :func:`reach_annulus_radii` for how they are found.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np
import torch
from isaaclab.utils.math import matrix_from_quat

from isaaclab_arena.reachability.chain_fk import ChainFK
from isaaclab_arena.reachability.urdf_chain import UrdfChain, load_urdf_chain

#: Radial sample spacing of the first reach pass, metres.
ANNULUS_STEP_M = 0.01
#: Bisection rounds refining each radius after the sampling pass: ``ANNULUS_STEP_M / 2**4`` = 0.625 mm.
ANNULUS_BISECTIONS = 4
#: Length of the heading arrow drawn from the base, metres (longer than the Franka's home reach of 0.31 m, so its
#: head shows past the arm drawn over it).
HEADING_ARROW_M = 0.4

_CHAINS: dict[tuple, "ArmChain"] = {}
_ANNULI: dict[tuple, tuple[float, float]] = {}


@dataclass(frozen=True)
class ArmChain:
    """A robot arm's link origins at its home pose, in the base frame.

    Attributes:
        link_names: The base link, then the child link of every joint on the chain to the TCP link.
        origins_b: (L, 3) float64 link origins in the base frame, metres (coinciding origins are kept).
        home_joint_pos: (n_joints,) float64 home positions of the chain's movable joints (rad or m).
    """

    link_names: tuple[str, ...]
    origins_b: np.ndarray
    home_joint_pos: np.ndarray


@dataclass(frozen=True)
class RobotTopDown:
    """The robot as a picture draws it, for E envs (env-local metres, XY).

    Attributes:
        link_names: Names of the arm's points, base link first (:class:`ArmChain`).
        arm_xy: (E, L, 2) float64 link origins projected onto the floor; ``arm_xy[:, 0]`` is the base position.
        base_xy: (E, 2) float64 base link origin.
        heading_xy: (E, 2) float64 unit vector: the base frame's +X axis in XY.
        grasp_target: Name of the ``RequiresReachability`` object whose grasp height sets the annulus, or None.
        grasp_height_m: (E,) env-local z of the TCP at that grasp (NaN without a target).
        annulus_m: (E, 2) inner and outer radius of the reach annulus around ``base_xy`` (NaN without a
            target, without a kinematic model, or where no radius at that height is reachable).
    """

    link_names: tuple[str, ...]
    arm_xy: np.ndarray
    base_xy: np.ndarray
    heading_xy: np.ndarray
    grasp_target: str | None
    grasp_height_m: np.ndarray
    annulus_m: np.ndarray


def _robot_key(embodiment) -> tuple:
    robot = embodiment.reachability_robot
    return (robot.urdf_path, robot.base_link, robot.tcp_link, tuple(sorted(robot.home_joint_pos.items())))


def home_arm_chain(embodiment) -> ArmChain:
    """The arm's link origins (base frame, metres) at ``embodiment``'s home pose; computed once per robot."""
    key = _robot_key(embodiment)
    if key not in _CHAINS:
        robot = embodiment.reachability_robot
        chain = load_urdf_chain(robot.urdf_path, robot.base_link, robot.tcp_link)
        child = {j.get("name"): j.find("child").get("link") for j in ET.fromstring(chain.urdf_xml).findall("joint")}
        home = np.array([robot.home_joint_pos.get(n, 0.5 * (lo + hi))
                         for n, lo, hi in zip(chain.joint_names, chain.lower, chain.upper)], dtype=np.float64)
        q = torch.tensor(home[None], dtype=torch.float64)
        origins = [np.zeros(3)]
        for i, joint in enumerate(chain.joints):  # the chain up to each link, through the project's FK
            prefix = UrdfChain(chain.base_link, child[joint.name], chain.joints[:i + 1], "")
            origins.append(ChainFK(prefix, "cpu", torch.float64).forward(q)[0][0].numpy())
        names = (chain.base_link, *(child[j.name] for j in chain.joints))
        _CHAINS[key] = ArmChain(names, np.stack(origins), home)
    return _CHAINS[key]


def _reach_bound_m(embodiment) -> float:
    """No TCP position lies farther than this from the base link origin (metres): the chain's offsets added up."""
    robot = embodiment.reachability_robot
    chain = load_urdf_chain(robot.urdf_path, robot.base_link, robot.tcp_link)
    return float(sum(np.linalg.norm(j.origin[:3, 3]) for j in chain.joints))


def reach_annulus_radii(embodiment, heights_m, config) -> np.ndarray:
    """Reach annulus radii (H, 2) ``[r_in, r_out]`` metres for TCP heights ``heights_m`` (H,) above the base.

    For each height ``h`` (rounded to the millimetre) the IK backend of ``ik_reachable``
    (``ik_backend_for(embodiment, "cpu").check_config``, thresholds of ``config``, a ``ReachabilityConfig``) is
    asked for a top-down grasp with the TCP at ``(r, 0, h)`` in the base frame (the base at the origin, level):

    1. ``r = 0, ANNULUS_STEP_M, 2 * ANNULUS_STEP_M, ...`` up to the chain's offsets added up (no TCP is
       farther from the base), all heights in one batched call; ``r_in`` is the smallest reachable sample,
       ``r_out`` the largest;
    2. ``ANNULUS_BISECTIONS`` batched bisection rounds between each of them and its unreachable neighbour
       sample (``r_in = 0`` stays), keeping the reachable end: both radii within 0.625 mm of the IK's boundary
       along that line.

    Joint 1 turns the whole arm about the base's vertical axis and a top-down grasp's tool turns with the
    azimuth, so the radii along +X hold around the base (measured for the Franka, the ring behind it, at
    azimuth 180 degrees, has the same radii within one sample). Samples between ``r_in`` and ``r_out`` that the
    IK misses are not cut out of the ring. A height with no reachable sample gets NaN radii. Results are
    cached per (robot, thresholds, height).
    """
    from isaaclab_arena.reachability.backends import backend_name_for, ik_backend_for

    mm = np.round(np.asarray(heights_m, dtype=np.float64).reshape(-1) * 1000.0).astype(np.int64)
    prefix = (backend_name_for(embodiment, "cpu"), _robot_key(embodiment), float(config.grasp_z_offset_m),
              float(config.ik_position_threshold_m), float(config.ik_rotation_threshold_rad))
    todo = sorted({int(h) for h in mm} - {k[-1] for k in _ANNULI if k[:-1] == prefix})
    if todo:
        checker = ik_backend_for(embodiment, "cpu")
        h = torch.tensor(todo, dtype=torch.float64) / 1000.0
        n_h = len(todo)
        base = torch.tensor([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]).expand(n_h, 7)

        def reachable(r: torch.Tensor) -> torch.Tensor:
            """(n_h, K) radii -> (n_h, K) verdicts of a top-down grasp with the TCP at (r, 0, h)."""
            z = (h[:, None] - config.grasp_z_offset_m).expand_as(r)  # object position: the TCP goes offset above
            objects = torch.stack([r, torch.zeros_like(r), z], -1).float()
            return checker.check_config(base, objects, config).reachable.cpu()

        n_r = int(math.ceil(_reach_bound_m(embodiment) / ANNULUS_STEP_M)) + 1
        radii = torch.arange(n_r, dtype=torch.float64) * ANNULUS_STEP_M
        ok = reachable(radii.expand(n_h, n_r))
        any_ok = ok.any(dim=1)
        first = ok.int().argmax(dim=1)
        last = n_r - 1 - ok.flip(1).int().argmax(dim=1)
        r_in, r_out = radii[first], radii[last]
        # brackets [reachable, unreachable] of each boundary: inner (r_in, r_in - step), outer (r_out, r_out + step)
        good = torch.stack([r_in, r_out], 1)
        bad = torch.stack([r_in - ANNULUS_STEP_M, r_out + ANNULUS_STEP_M], 1)
        for _ in range(ANNULUS_BISECTIONS):
            mid = 0.5 * (good + bad)
            hit = reachable(mid)
            good, bad = torch.where(hit, mid, good), torch.where(hit, bad, mid)
        inner = torch.where(r_in > 0, good[:, 0], torch.zeros_like(r_in))  # a disc needs no inner bisection
        for k, h_mm in enumerate(todo):
            _ANNULI[(*prefix, h_mm)] = (float(inner[k]), float(good[k, 1])) if bool(any_ok[k]) else (math.nan, math.nan)
    return np.array([_ANNULI[(*prefix, int(h))] for h in mm], dtype=np.float64).reshape(-1, 2)


def robot_top_down(embodiment, base_poses, grasp_target: str | None = None, grasp_object_z=None,
                   config=None) -> RobotTopDown:
    """The robot's arm, heading and reach annulus for E envs (see the module docstring).

    Args:
        embodiment: An ``Embodiment`` with ``reachability_robot`` (its URDF chain and home pose).
        base_poses: (E, 7) env-local base poses: x, y, z (m), qx, qy, qz, qw.
        grasp_target: Name of the ``RequiresReachability`` object that sets the grasp height (for the record).
        grasp_object_z: (E,) env-local z of that object's position, metres; None: no annulus.
        config: ``ReachabilityConfig`` (grasp offset, IK thresholds); None uses its defaults.
    """
    from isaaclab_arena.reachability.backends import has_kinematic_model
    from isaaclab_arena.relations.object_placer_params import ReachabilityConfig

    config = config if config is not None else ReachabilityConfig()
    poses = torch.as_tensor(base_poses).detach().to("cpu", torch.float64).reshape(-1, 7)
    rot = matrix_from_quat(poses[:, 3:] / poses[:, 3:].norm(dim=-1, keepdim=True)).numpy()  # (E, 3, 3)
    pos = poses[:, :3].numpy()
    chain = home_arm_chain(embodiment)
    arm = pos[:, None, :] + np.einsum("eij,lj->eli", rot, chain.origins_b)  # (E, L, 3) env-local
    heading = rot[:, :2, 0]
    heading = heading / np.linalg.norm(heading, axis=-1, keepdims=True)
    n = poses.shape[0]
    height = np.full(n, math.nan)
    annulus = np.full((n, 2), math.nan)
    if grasp_object_z is not None:
        z = torch.as_tensor(grasp_object_z).detach().to("cpu", torch.float64).reshape(n).numpy()
        height = z + config.grasp_z_offset_m
        if has_kinematic_model(embodiment):
            annulus = reach_annulus_radii(embodiment, height - pos[:, 2], config)
    return RobotTopDown(chain.link_names, arm[..., :2], pos[:, :2].copy(), heading,
                        grasp_target if grasp_object_z is not None else None, height, annulus)

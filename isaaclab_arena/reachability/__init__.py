"""Batched IK reachability of top-down grasps (torch + warp; no Isaac Lab, no USD).

``IKReachabilityChecker(robot).check(base_pose (B, 7), object_positions (B, K, 3))`` -> (B, K) verdicts and
residuals. The robot is described by a :class:`ReachabilityRobot` (URDF path, base and tool links, home
joint positions); an embodiment provides one (``Embodiment.reachability_robot``).
"""

from isaaclab_arena.reachability.ik_reachability import IKReachabilityChecker, ReachabilityResult, ReachabilityRobot

__all__ = ["IKReachabilityChecker", "ReachabilityResult", "ReachabilityRobot"]

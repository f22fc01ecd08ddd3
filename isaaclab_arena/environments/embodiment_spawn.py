"""Spawns a robot USD with its stand: a box collider authored with pxr under the robot's base link.

The stand belongs to the base link's rigid body (no body of its own, no mass of its own: the link's mass
is authored), so it moves with the robot root and needs no pose writes. Its box is given in the robot
root frame, metres (:meth:`isaaclab_arena.embodiments.StandCfg.bounding_box`).
"""

from __future__ import annotations

from collections.abc import Callable

import isaaclab.sim as sim_utils
from isaaclab.sim.utils import clone, get_current_stage
from isaaclab.utils import configclass


@clone
def spawn_robot_on_stand(prim_path: str, cfg: "RobotOnStandCfg", translation=None, orientation=None, **kwargs):
    """Spawns ``cfg.usd_path`` at ``prim_path`` (like ``spawn_from_usd``), then the stand box under
    ``{prim_path}/{cfg.stand_parent}/stand``. Returns the robot prim."""
    from pxr import Gf, UsdGeom, UsdPhysics

    prim = sim_utils.spawn_from_usd(prim_path, cfg, translation, orientation, **kwargs)
    stage = get_current_stage()
    parent = f"{prim_path}/{cfg.stand_parent}"
    if not stage.GetPrimAtPath(parent).IsValid():
        raise ValueError(f"robot USD {cfg.usd_path}: the stand parent '{cfg.stand_parent}' is not a prim below the "
                         f"robot (looked for {parent})")
    lo, hi = cfg.stand_min, cfg.stand_max
    cube = UsdGeom.Cube.Define(stage, f"{parent}/stand")
    cube.CreateSizeAttr(1.0)
    xform = UsdGeom.Xformable(cube.GetPrim())
    xform.ClearXformOpOrder()
    xform.AddTranslateOp().Set(Gf.Vec3d(*[(a + b) / 2 for a, b in zip(lo, hi)]))
    xform.AddScaleOp().Set(Gf.Vec3f(*[b - a for a, b in zip(lo, hi)]))
    cube.CreateDisplayColorAttr([Gf.Vec3f(*cfg.stand_color)])
    UsdPhysics.CollisionAPI.Apply(cube.GetPrim())
    return prim


@configclass
class RobotOnStandCfg(sim_utils.UsdFileCfg):
    """``UsdFileCfg`` plus a stand box under the robot's base link.

    Attributes:
        stand_parent: Path of the base link below the spawned prim (e.g. ``Geometry/panda_link0``).
        stand_min: Stand box min corner in the base-link frame, metres.
        stand_max: Stand box max corner in the base-link frame, metres.
        stand_color: Display colour (RGB 0-1).
    """

    func: Callable | str = spawn_robot_on_stand
    stand_parent: str = ""
    stand_min: tuple[float, float, float] = (-0.15, -0.15, -0.75)
    stand_max: tuple[float, float, float] = (0.15, 0.15, 0.0)
    stand_color: tuple[float, float, float] = (0.3, 0.3, 0.33)

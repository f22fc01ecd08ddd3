"""The robot prototype of an exported layout stage: the embodiment's USD, its stand, its joints at the home pose.

Authored once under ``/Prototypes/robot`` (each env's ``robot`` prim references it and carries the root pose):

* a reference to the robot's USD (``RobotDescription.usd_path``), its own physics kept;
* the stand box under the base link (``root_link_prim``/``stand``: a ``Cube`` with ``CollisionAPI`` and a display
  colour, no body of its own), as ``environments/embodiment_spawn.py`` spawns it;
* the spawn config's schema fragments of the env's articulation (``embodiment_terms.articulation_cfg``): the
  articulation settings on the articulation root, the per-link rigid-body settings (links ignore gravity, as in the
  env) on every link with a rigid body;
* the joints at the home pose (``RobotDescription.default_joint_pos``, or the positions given): the links' local
  transforms are set by forward kinematics through the USD joints' frames (so any viewer shows the pose), each
  driven joint's ``drive:<angular|linear>:physics:targetPosition`` holds the position, and
  ``PhysicsJointStateAPI:<angular|linear>`` its ``state:...:physics:position`` (velocity 0). Angular values are
  degrees, as USD Physics writes them. The drives take the actuator gains of the env (``ActuatorGroup``: stiffness
  and damping per radian converted to per degree, the effort limit as ``maxForce``).
"""

from __future__ import annotations

import math
import re

import numpy as np
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, Vt

from isaaclab_arena.export.prototypes import apply_fragment, matching_prims
from isaaclab_arena.utils.pose_math import matrix_from_quat

STAND_COLOR = (0.3, 0.3, 0.33)


def _matrix(position, rotation_wxyz) -> np.ndarray:
    """4x4 column-vector transform from a translation and a (w, x, y, z) quaternion."""
    w, x, y, z = (float(v) for v in rotation_wxyz)
    n = math.sqrt(w * w + x * x + y * y + z * z) or 1.0
    m = np.eye(4)
    m[:3, :3] = matrix_from_quat(np.array([x, y, z, w]) / n)  # USD's (w, x, y, z) -> xyzw
    m[:3, 3] = [float(v) for v in position]
    return m


def _world(cache: UsdGeom.XformCache, prim: Usd.Prim) -> np.ndarray:
    """The prim's transform (column-vector 4x4) in the stage's frame."""
    return np.array(cache.GetLocalToWorldTransform(prim), dtype=np.float64).T


def _joint_motion(kind: str, axis: str, q: float) -> np.ndarray:
    m = np.eye(4)
    i = "XYZ".index(axis)
    if kind == "prismatic":
        m[i, 3] = q
    else:
        c, s = math.cos(q), math.sin(q)
        j, k = (i + 1) % 3, (i + 2) % 3
        m[j, j], m[j, k], m[k, j], m[k, k] = c, -s, s, c
    return m


def _frame(joint: UsdPhysics.Joint, side: int) -> np.ndarray:
    pos = (joint.GetLocalPos0Attr() if side == 0 else joint.GetLocalPos1Attr()).Get() or Gf.Vec3f(0, 0, 0)
    rot = (joint.GetLocalRot0Attr() if side == 0 else joint.GetLocalRot1Attr()).Get() or Gf.Quatf(1, 0, 0, 0)
    return _matrix(pos, (rot.GetReal(), *rot.GetImaginary()))


def _set_local(prim: Usd.Prim, local: np.ndarray) -> None:
    """Sets a link's local transform (rigid, column-vector 4x4) keeping its own scale ops."""
    xf = UsdGeom.Xformable(prim)
    ops = xf.GetOrderedXformOps()
    translate = Gf.Vec3d(*local[:3, 3])
    rotation = Gf.Matrix3d(*local[:3, :3].T.ravel()).ExtractRotation().GetQuat()  # Gf is row-vector
    kinds = [op.GetOpType() for op in ops]
    if kinds[:2] == [UsdGeom.XformOp.TypeTranslate, UsdGeom.XformOp.TypeOrient] and all(
            k == UsdGeom.XformOp.TypeScale for k in kinds[2:]):
        ops[0].Set(translate if ops[0].GetPrecision() == UsdGeom.XformOp.PrecisionDouble else Gf.Vec3f(translate))
        ops[1].Set(rotation if ops[1].GetPrecision() == UsdGeom.XformOp.PrecisionDouble else Gf.Quatf(rotation))
        return
    scales = [op for op in ops if op.GetOpType() == UsdGeom.XformOp.TypeScale]
    xf.ClearXformOpOrder()
    xf.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble, "pose").Set(translate)
    xf.AddOrientOp(UsdGeom.XformOp.PrecisionDouble, "pose").Set(rotation)
    xf.SetXformOpOrder([*xf.GetOrderedXformOps(), *scales])


def _joints(root: Usd.Prim) -> list[tuple[UsdPhysics.Joint, str, str, Usd.Prim, Usd.Prim]]:
    """(joint, kind, axis, body0, body1) of every revolute / prismatic joint below ``root``, parents first."""
    stage = root.GetStage()
    out = []
    for prim in Usd.PrimRange(root, Usd.PrimAllPrimsPredicate):
        kind = "revolute" if prim.IsA(UsdPhysics.RevoluteJoint) else "prismatic" if prim.IsA(UsdPhysics.PrismaticJoint) \
            else None
        if kind is None:
            continue
        joint = UsdPhysics.Joint(prim)
        b0, b1 = joint.GetBody0Rel().GetTargets(), joint.GetBody1Rel().GetTargets()
        if not b0 or not b1:
            continue
        body0, body1 = stage.GetPrimAtPath(b0[0]), stage.GetPrimAtPath(b1[0])
        if not body0.IsValid() or not body1.IsValid():
            continue
        axis = (UsdPhysics.RevoluteJoint(prim).GetAxisAttr() if kind == "revolute"
                else UsdPhysics.PrismaticJoint(prim).GetAxisAttr()).Get() or "X"
        out.append((joint, kind, str(axis), body0, body1))
    return sorted(out, key=lambda j: j[4].GetPath().pathElementCount)


def pose_joints(root: Usd.Prim, joint_positions: dict[str, float], actuators: dict | None = None) -> list[str]:
    """Poses the articulation below ``root`` at ``joint_positions`` (joint prim name -> rad or m): link transforms,
    drive targets, joint states, actuator gains. Returns the names of the joints posed."""
    posed = []
    for joint, kind, axis, body0, body1 in _joints(root):
        name = joint.GetPrim().GetName()
        if name not in joint_positions:
            continue
        q = float(joint_positions[name])
        cache = UsdGeom.XformCache()
        t1 = _world(cache, body0) @ _frame(joint, 0) @ _joint_motion(kind, axis, q) @ np.linalg.inv(_frame(joint, 1))
        _set_local(body1, np.linalg.inv(_world(cache, body1.GetParent())) @ t1)
        instance = "angular" if kind == "revolute" else "linear"
        value = math.degrees(q) if kind == "revolute" else q
        prim = joint.GetPrim()
        drive = UsdPhysics.DriveAPI.Apply(prim, instance)
        drive.CreateTargetPositionAttr(float(value))
        prim.AddAppliedSchema(f"PhysicsJointStateAPI:{instance}")
        prim.CreateAttribute(f"state:{instance}:physics:position", Sdf.ValueTypeNames.Float).Set(float(value))
        prim.CreateAttribute(f"state:{instance}:physics:velocity", Sdf.ValueTypeNames.Float).Set(0.0)
        _drive_gains(drive, name, kind, actuators or {})
        posed.append(name)
    return posed


def _drive_gains(drive: UsdPhysics.DriveAPI, joint: str, kind: str, actuators: dict) -> None:
    per = math.pi / 180.0 if kind == "revolute" else 1.0  # USD angular gains are per degree
    for group in actuators.values():
        if not any(re.fullmatch(expr, joint) for expr in group.joint_names_expr):
            continue
        drive.CreateStiffnessAttr(float(group.stiffness) * per)
        drive.CreateDampingAttr(float(group.damping) * per)
        limit = group.effort_limit
        if isinstance(limit, dict):
            limit = next((v for expr, v in limit.items() if re.fullmatch(expr, joint)), None)
        if limit is not None:
            drive.CreateMaxForceAttr(float(limit))
        return


def author_robot(stage: Usd.Stage, path: str, embodiment, asset_path: str,
                 joint_positions: dict[str, float] | None = None) -> dict:
    """The robot prototype at ``path`` (see the module docstring); ``asset_path`` is the robot USD as written in the
    stage. Returns ``{"joints": [posed joint names], "skipped": [config fields not written]}``."""
    d = embodiment.description
    root = stage.CreateClassPrim(path)
    root.GetReferences().AddReference(asset_path)
    base = stage.GetPrimAtPath(f"{path}/{d.root_link_prim}")
    if not base.IsValid():
        raise ValueError(f"embodiment '{embodiment.name}': robot USD {d.usd_path} has no base link prim "
                         f"'{d.root_link_prim}'")
    box = embodiment.stand.bounding_box()
    stand = UsdGeom.Cube.Define(stage, f"{base.GetPath()}/stand")
    stand.CreateSizeAttr(1.0)
    stand.CreateExtentAttr(Vt.Vec3fArray([Gf.Vec3f(-0.5), Gf.Vec3f(0.5)]))
    xf = UsdGeom.Xformable(stand)
    xf.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble).Set(
        Gf.Vec3d(*[(a + b) / 2 for a, b in zip(box.min_point, box.max_point)]))
    xf.AddScaleOp().Set(Gf.Vec3f(*[b - a for a, b in zip(box.min_point, box.max_point)]))
    stand.CreateDisplayColorAttr(Vt.Vec3fArray([Gf.Vec3f(*STAND_COLOR)]))
    UsdPhysics.CollisionAPI.Apply(stand.GetPrim())
    skipped = _articulation_settings(root, embodiment)
    joints = pose_joints(root, dict(joint_positions if joint_positions is not None else d.default_joint_pos),
                         d.actuators)
    return {"joints": joints, "skipped": skipped}


def _articulation_settings(root: Usd.Prim, embodiment) -> list[str]:
    """The env's articulation spawn settings (``articulation_props`` on the articulation root, ``rigid_props`` on
    the links) written on the prototype; the config fields that could not be written are returned."""
    from isaaclab_arena.environments.embodiment_terms import articulation_cfg

    spawn = articulation_cfg(embodiment).spawn
    skipped = []
    roots = [root] if root.HasAPI(UsdPhysics.ArticulationRootAPI) else \
        matching_prims(root, ".*", lambda p: p.HasAPI(UsdPhysics.ArticulationRootAPI))
    for prim in roots:
        skipped += apply_fragment(prim, getattr(spawn, "articulation_props", None))
    rigid = getattr(spawn, "rigid_props", None)
    if isinstance(rigid, dict):
        for pattern, cfgs in rigid.items():
            for prim in matching_prims(root, pattern, lambda p: p.HasAPI(UsdPhysics.RigidBodyAPI)):
                skipped += apply_fragment(prim, cfgs)
    elif rigid is not None:
        skipped += apply_fragment(root, rigid, "RigidBodyAPI")
    return sorted(set(skipped))

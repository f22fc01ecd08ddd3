"""Top-down pictures of placed layouts (matplotlib, headless): one panel per env.

Each panel shows the supports' footprints (anchors, dashed), every placed object's footprint at its
current layout pose (rotated by its yaw, labelled), and, when the layout failed a required check (a
best-loss fallback), a red frame and the failed checks in the title. With ``ik_reachable`` in use, each
``RequiresReachability`` object gets a ring: green when the robot reaches a top-down grasp at it from that
layout's robot base pose, red when not. Objects and obstacles whose collision meshes the placer used (MESH
collision) are drawn as their top-down mesh silhouettes, their boxes dashed around them, and a MESH background
as its upward-facing surfaces shaded by height (``mesh_pictures.py``). A robot (an embodiment among the assets)
is drawn over its stand: its arm at the home pose (link origins from forward kinematics, projected top-down: a
polyline from the base with the joints as dots), its heading (an arrow along the base's +X axis) and, when the
scene has a ``RequiresReachability`` object, its reach annulus at that object's grasp height (shaded ring;
``robot_picture_geometry.py`` says how each is computed). Env-local metres, X right, Y up.
"""

from __future__ import annotations

import math
import os

import torch
from isaaclab.utils.math import euler_xyz_from_quat

from isaaclab_arena.utils.parking_spots import PARKED_ABOVE_M
from isaaclab_arena.assets.object_set import RigidObjectSet
from isaaclab_arena.environments import mesh_pictures, robot_picture_geometry

#: Colour of the robot's heading arrow and reach annulus.
ROBOT_COLOR = "tab:purple"


def _yaw(q) -> float:
    """Heading about Z (radians) of one xyzw quaternion."""
    return float(euler_xyz_from_quat(torch.tensor([[float(v) for v in q]], dtype=torch.float64))[2][0])


def _footprint(box, pos, yaw):
    lo, hi = box.min_point, box.max_point
    corners = [(lo[0], lo[1]), (hi[0], lo[1]), (hi[0], hi[1]), (lo[0], hi[1])]
    c, s = math.cos(yaw), math.sin(yaw)
    return [(pos[0] + c * x - s * y, pos[1] + s * x + c * y) for x, y in corners]


def reachability_rings(pool, poses):
    """``{object name: (xy (E, 2), reachable (E,))}`` of the ``RequiresReachability`` objects for layouts ``poses``
    (E, n, 7) when the pool's placer runs ``ik_reachable``, else ``{}``."""
    placer = getattr(pool, "placer", None)
    runner = getattr(placer, "runner", None)
    if runner is None or not any(v.check == "ik_reachable" for v in runner.validators):
        return {}
    from isaaclab_arena.reachability.ik_validator import object_reachability, target_positions

    problem = placer.compile(pool.assets, pool.num_envs, str(pool.device))
    pos, rot = poses[..., :3].contiguous(), poses[..., 3:].contiguous()
    names, reach, _ = object_reachability(placer.params, problem, pos, rot)
    xy = target_positions(problem, pos)[..., :2]
    return {n: (xy[:, k].cpu(), reach[:, k].cpu()) for k, n in enumerate(names)}


def robot_geometry(assets, names: list[str], poses, placer_params=None):
    """What the pictures draw of the scene's robot for layouts ``poses`` ((E, n, 7) env-local, ``names`` order):
    a :class:`~isaaclab_arena.environments.robot_picture_geometry.RobotTopDown` over the E envs, or None when no
    embodiment with a kinematic chain is among ``assets``.

    The base pose is the robot's row of ``poses`` when it is placed, else its fixed pose; the grasp height is that
    of the first asset marked ``RequiresReachability`` (its row, or its fixed pose) plus the grasp offset of
    ``placer_params.reachability_config`` (its defaults without params); no such asset: no annulus."""
    import torch

    from isaaclab_arena.relations.markers import RequiresReachability

    assets = list(assets.values()) if isinstance(assets, dict) else list(assets)
    robot = next((a for a in assets if getattr(a, "is_embodiment", False)), None)
    if robot is None or getattr(robot, "reachability_robot", None) is None:
        return None
    poses = torch.as_tensor(poses).detach().to("cpu", torch.float64)

    def rows(asset):  # (E, 7) poses of an asset: its placed rows, else its fixed pose in every env
        if asset.name in names:
            return poses[:, names.index(asset.name)]
        pose = asset.get_world_pose()
        if pose is None:
            return None
        return torch.tensor([*pose.position_xyz, *pose.rotation_xyzw], dtype=torch.float64).expand(poses.shape[0], 7)

    base = rows(robot)
    if base is None:
        return None
    target = next((a for a in assets if a is not robot and a.get_relations_of(RequiresReachability)
                   and rows(a) is not None), None)
    config = getattr(placer_params, "reachability_config", None)
    return robot_picture_geometry.robot_top_down(robot, base, None if target is None else target.name,
                                                 None if target is None else rows(target)[:, 2], config)


def draw_robot(ax, geo, i: int) -> None:
    """Draws the robot of panel ``i`` of ``geo`` (a ``RobotTopDown``) on ``ax``: reach annulus (gid
    ``reach_annulus``), arm polyline with its joints as dots (``robot_arm``), heading arrow (``robot_heading``,
    ``HEADING_ARROW_M`` long, from the base) and a line naming the annulus (``reach_label``)."""
    from matplotlib.colors import to_rgba
    from matplotlib.patches import Annulus, Circle

    (bx, by), (r_in, r_out) = geo.base_xy[i], geo.annulus_m[i]
    if math.isfinite(r_out):
        style = dict(fc=to_rgba(ROBOT_COLOR, 0.10), ec=to_rgba(ROBOT_COLOR, 0.6), lw=0.8, ls="--", zorder=0.5,
                     gid="reach_annulus")
        # reachable up to the base's axis (r_in = 0): a disc
        ax.add_patch(Annulus((bx, by), r_out, r_out - r_in, **style) if r_in > 0 else Circle((bx, by), r_out, **style))
    if geo.grasp_target is not None:
        reach = (f"reach {r_in:.3f}-{r_out:.3f} m" if math.isfinite(r_out) else "out of reach")
        ax.text(0.01, 0.01, f"{reach} at z={geo.grasp_height_m[i]:.3f} m ({geo.grasp_target} grasp)",
                transform=ax.transAxes, fontsize=5.5, color=ROBOT_COLOR, gid="reach_label")
    xy = geo.arm_xy[i]
    ax.plot(xy[:, 0], xy[:, 1], "-o", color="0.1", lw=2.0, ms=3.5, mfc="white", mec="0.1", zorder=4,
            gid="robot_arm")
    tip = geo.base_xy[i] + robot_picture_geometry.HEADING_ARROW_M * geo.heading_xy[i]
    ax.annotate("", xy=(float(tip[0]), float(tip[1])), xytext=(float(bx), float(by)), zorder=5,
                arrowprops=dict(arrowstyle="-|>", color=ROBOT_COLOR, lw=1.8, shrinkA=0, shrinkB=0),
                gid="robot_heading")


def write_layout_picture(pool, path: str, max_envs: int = 16, assets=None, report: dict | None = None,
                         env_ids: list[int] | None = None, poses=None, note: str = "") -> str:
    """Draws the current layout of the first ``max_envs`` envs (or of ``env_ids``) of a ``PooledObjectPlacer``;
    returns ``path``.

    ``report``, when given, receives ``{env: [failed checks]}`` for every panel drawn highlighted. ``poses``
    ((num_envs, n, 7) env-local, ``pool.object_names`` order) replaces the pool's layouts (e.g. poses read back
    from the simulator); ``note`` is added to the figure title. When fewer envs are drawn than exist, the
    title says ``showing <k> of <n> envs``.
    """
    # a bare Figure (rendered by Agg when saved), not pyplot: no GUI backend and 0.1 s less start-up per run
    from matplotlib.figure import Figure
    from matplotlib.patches import Polygon

    assets = {a.name: a for a in (assets or pool.assets)}
    names = pool.object_names
    if poses is None:
        poses = pool.current_poses if pool.current_poses is not None else pool.poses[:, 0]
    envs = picture_envs(poses.shape[0], max_envs, env_ids)
    n_env = len(envs)
    cols = min(4, n_env)
    rows = math.ceil(n_env / cols)
    fig = Figure(figsize=(4 * cols, 3.2 * rows))
    axes = fig.subplots(rows, cols, squeeze=False)
    anchors = [a for a in assets.values() if a.is_anchor]
    rings = reachability_rings(pool, poses)  # indexed by env below
    robot = robot_geometry(assets, names, poses[envs], getattr(getattr(pool, "placer", None), "params", None))
    outlines = mesh_pictures.mesh_outlines(pool)
    fixed = [a for a in assets.values() if a.name in outlines and a.name not in names and a.get_world_pose()]
    for e in range(rows * cols):
        ax = axes[e // cols][e % cols]
        if e >= n_env:
            ax.axis("off")
            continue
        panel, e = e, envs[e]  # the env this panel shows
        for a in fixed:  # MESH obstacles and backgrounds at their fixed poses
            pose = a.get_world_pose()
            v, f = outlines[a.name]
            if type(a).__name__ == "Background":
                mesh_pictures.draw_background(ax, v, f, pose.position_xyz, pose.rotation_xyzw)
            else:
                mesh_pictures.draw_silhouette(ax, v, f, pose.position_xyz, pose.rotation_xyzw, "0.25", alpha=0.6)
                ax.text(pose.position_xyz[0], pose.position_xyz[1], a.name, fontsize=6, color="0.2", ha="center")
        for a in anchors:
            pose = a.get_world_pose()
            if pose is None:
                continue
            pts = _footprint(a.get_bounding_box(), pose.position_xyz, _yaw(pose.rotation_xyzw))
            ax.add_patch(Polygon(pts, closed=True, fill=False, ls="--", ec="0.4"))
            ax.text(pts[0][0], pts[0][1], a.name, fontsize=6, color="0.4", va="top")
        failed = []
        if pool.current_passed is not None and not bool(pool.current_passed[e]):
            failed = [c for c, ok in zip(pool.check_names, pool.current_checks[e].tolist()) if not ok]
        for j, name in enumerate(names):
            asset = assets.get(name)
            if asset is None:
                continue
            if isinstance(asset, RigidObjectSet) and name in pool.member_indices:
                box = asset.objects[pool.member_indices[name][e]].get_bounding_box()
            else:
                box = asset.get_bounding_box()
            p = poses[e, j].tolist()
            if p[2] > PARKED_ABOVE_M:  # a parked pool member: not in this env's scene
                continue
            pts = _footprint(box, p[:3], _yaw(p[3:]))
            if name in outlines:  # its mesh's silhouette, its box dashed around it
                mesh_pictures.draw_silhouette(ax, *outlines[name], p[:3], p[3:], f"C{j % 10}")
                ax.add_patch(Polygon(pts, closed=True, fill=False, ls=":", ec="k", lw=0.6))
            else:
                ax.add_patch(Polygon(pts, closed=True, alpha=0.5, fc=f"C{j % 10}", ec="k"))
            ax.text(p[0], p[1], object_label(asset, name, pool.member_indices, e), fontsize=7, ha="center",
                    va="center")
        for name, (xy, ok) in rings.items():
            reached = bool(ok[e])
            ax.plot(float(xy[e, 0]), float(xy[e, 1]), "o", ms=16, mfc="none", mew=2.5,
                    mec="tab:green" if reached else "tab:red")
        if robot is not None:
            draw_robot(ax, robot, panel)
        ax.set_aspect("equal")
        ax.autoscale_view()
        ax.margins(0.05)
        title = f"env {e}"
        if failed:
            if report is not None:
                report[e] = list(failed)
            title += " FAILED: " + ", ".join(failed)
            for sp in ax.spines.values():
                sp.set_color("red")
                sp.set_linewidth(2.5)
        ax.set_title(title, fontsize=8, color="red" if failed else "black")
        ax.tick_params(labelsize=6)
        ax.set_xlabel("x (m, env-local)", fontsize=6)
        ax.set_ylabel("y (m, env-local)", fontsize=6)
    heading = figure_heading(n_env, poses.shape[0], note)
    if heading:
        fig.suptitle(heading, fontsize=9)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    from isaaclab_arena.utils.atomic_files import written_whole

    with written_whole(path, "wb", suffix=".tmp.png") as f:  # a Ctrl-C while drawing leaves no temporary file
        fig.savefig(f, dpi=90, format="png")
    return path


def picture_envs(num_envs: int, max_envs: int = 16, env_ids: list[int] | None = None) -> list[int]:
    """The envs a picture draws: ``env_ids`` (each must exist) or the first ``max_envs``.

    Raises:
        ValueError: an env index outside ``0 .. num_envs - 1`` (the message names ``--picture_envs``).
    """
    if env_ids is None:
        return list(range(min(max_envs, num_envs)))
    bad = [e for e in env_ids if not 0 <= int(e) < num_envs]
    if bad or not env_ids:
        raise ValueError(f"--picture_envs: env(s) {bad or '(none)'} do not exist; this run has envs 0..{num_envs - 1}")
    return [int(e) for e in env_ids]


def figure_heading(drawn: int, total: int, note: str = "") -> str:
    """``"showing 16 of 1024 envs"`` when not every env is drawn, plus ``note``."""
    parts = [note] if note else []
    if drawn < total:
        parts.append(f"showing {drawn} of {total} envs (pick others with --picture_envs)")
    return "; ".join(parts)


def object_label(asset, name: str, member_indices: dict, env: int) -> str:
    """An object's label in a panel: its name, and for an object set the member this env got (``cube: cube_8cm``)."""
    if isinstance(asset, RigidObjectSet) and name in member_indices:
        member = asset.objects[member_indices[name][env]]
        return f"{name}: {getattr(member, 'registry_name', None) or member.name}"
    return name


def write_poses_picture(assets, names: list[str], poses, path: str, member_indices: dict | None = None,
                        env_ids: list[int] | None = None, note: str = "") -> str:
    """Draws given poses ((num_envs, n, 7) env-local, ``names`` order; e.g. read back from the simulator on a
    replay run, or after physics settled a clutter scene) with the same panels, without check verdicts."""
    from types import SimpleNamespace

    view = SimpleNamespace(assets=list(assets), object_names=list(names), current_poses=None, poses=None,
                           current_passed=None, current_checks=None, check_names=[],
                           member_indices=dict(member_indices or {}))
    return write_layout_picture(view, path, assets=list(assets), env_ids=env_ids, poses=poses, note=note)

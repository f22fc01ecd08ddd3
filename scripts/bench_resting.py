"""Resting contact of every shipped example on each physics backend: height error and speed after N steps.

    scripts/arena_python.sh scripts/bench_resting.py                      # every example, ovphysx and newton_mjwarp
    scripts/arena_python.sh scripts/bench_resting.py --physics newton_mjwarp --examples mug_bowl_table \\
        --newton enable_multiccd=true --newton shape_gap_m=0.002    # try other Newton contact settings

Each (example, backend) runs in its own process: build the env (placement seed fixed), reset, step ``--steps``
env steps with zero actions, then read every object's root pose and velocity back from the simulator.

- height error: an object's lowest point (root z + its bounds' min z; objects are upright) minus the top of
  what it stands on (its ``On`` parent, or for a fixed-pose object the anchor under it): 0 = resting on the
  surface, negative = sunk into it. Clutter (``ClutterOn``) lands in any orientation on anything: no height
  error, speed only.
- speed: linear speed of the object's root (m/s).
- env-steps/s: the stepping rate of those ``--steps`` steps (wall clock, this machine's load included).

Prints one ``bench resting ...`` line per run and a table: worst |height error| (mm, and which object), worst
speed (m/s), and ``rests`` = every object within ``--max_error_mm`` of its support and slower than
``--max_speed``. ``--json`` writes the rows.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(REPO, "isaaclab_arena_environments")
BACKENDS = ("ovphysx", "newton_mjwarp")


def shipped_examples() -> dict[str, str]:
    """``{example name: yaml path}`` of every YAML example under ``isaaclab_arena_environments/``."""
    paths = sorted(glob.glob(os.path.join(EXAMPLES, "**", "*.yaml"), recursive=True))
    return {os.path.splitext(os.path.basename(p))[0]: p for p in paths}


def _parse_setting(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"--newton takes key=value, got {text!r}")
    low = value.strip().lower()
    if low in ("true", "false"):
        return key, low == "true"
    for cast in (int, float):
        try:
            return key, cast(value)
        except ValueError:
            pass
    return key, value


def _z_extent(asset, q) -> tuple[float, float]:
    """(lowest, highest) z of ``asset``'s bounds relative to its root when rotated by ``q`` (x, y, z, w), metres."""
    box = asset.get_bounding_box()
    lo, hi = box.min_point, box.max_point
    from isaaclab_arena.utils.pose_math import matrix_from_quat

    r20, r21, r22 = matrix_from_quat(np.asarray([float(v) for v in q]))[2]  # z row of R(q)
    zs = [r20 * cx + r21 * cy + r22 * cz for cx in (lo[0], hi[0]) for cy in (lo[1], hi[1]) for cz in (lo[2], hi[2])]
    return min(zs), max(zs)


def _top_z(asset, pose) -> float:
    """Env-local z of the top of ``asset``'s bounds at ``pose`` (a ``Pose`` or [x, y, z, qx, qy, qz, qw])."""
    if isinstance(pose, (list, tuple)):
        return pose[2] + _z_extent(asset, pose[3:])[1]
    return pose.position_xyz[2] + _z_extent(asset, pose.rotation_xyzw)[1]


def _inside_footprint(asset, pose, xy) -> bool:
    box = asset.get_bounding_box()
    px, py = pose.position_xyz[0], pose.position_xyz[1]
    return (px + box.min_point[0] - 1e-6 <= xy[0] <= px + box.max_point[0] + 1e-6
            and py + box.min_point[1] - 1e-6 <= xy[1] <= py + box.max_point[1] + 1e-6)


def measure(spec: str, physics: str, num_envs: int, steps: int, seed: int, newton: dict) -> dict:
    """Builds ``spec`` on ``physics``, steps, and returns the worst height error and speed (see module doc)."""
    import torch

    from isaaclab.app import launch_simulation

    from isaaclab_arena.assets.object_set import RigidObjectSet
    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.environments.physics import NEWTON_CONTACT_SETTINGS
    from isaaclab_arena.relations.relations import ClutterOn, On

    arena_env = ArenaEnvGraphSpec.from_yaml(spec).to_arena_env()
    cfg = ArenaEnvBuilderCfg(num_envs=num_envs, physics=physics, placement_seed=seed, gym_id=f"rest_{physics}",
                             newton_contact=NEWTON_CONTACT_SETTINGS.replace(**newton) if newton else None,
                             episode_length_s=max(5.0, (steps + 10) * 2 / 120.0))
    builder = ArenaEnvBuilder(arena_env, cfg)
    env_cfg = builder.compose_manager_cfg()
    assets = {a.name: a for a in arena_env.assets}
    anchors = [a for a in arena_env.assets if a.is_anchor and a.get_world_pose() is not None]
    with launch_simulation(env_cfg, {"headless": True, "device": "cpu"}):
        env = builder.make_registered(env_cfg)
        try:
            env.reset()
            u = env.unwrapped
            start = {}
            for name in assets:
                if name in u.scene.keys() and hasattr(u.scene[name], "data"):
                    start[name] = (u.scene[name].data.root_pos_w.torch - u.scene.env_origins).clone()
            act = torch.zeros(u.num_envs, u.action_manager.total_action_dim if hasattr(u, "action_manager") else 0)
            t0 = time.perf_counter()
            for _ in range(steps):
                env.step(act)
            step_s = time.perf_counter() - t0
            pos = {n: (u.scene[n].data.root_pos_w.torch - u.scene.env_origins).double() for n in start}
            quat = {n: u.scene[n].data.root_quat_w.torch.double() for n in start}
            vel = {n: torch.linalg.vector_norm(u.scene[n].data.root_lin_vel_w.torch, dim=-1).double() for n in start}
        finally:
            env.close()
    worst_err, worst_name, errors, speeds = 0.0, "", [], []
    for name, asset in assets.items():
        if name not in pos or asset.is_anchor:
            continue
        speeds.append((float(vel[name].max()), name))
        if asset.get_relations_of(ClutterOn):
            continue
        on = asset.get_relations_of(On)
        for e in range(num_envs):
            member = asset.objects[builder.member_indices[name][e]] if isinstance(asset, RigidObjectSet) else asset
            p, q = pos[name][e].tolist(), quat[name][e].tolist()
            bottom = p[2] + _z_extent(member, q)[0]
            if on:
                parent = on[0].parent
                if parent.name in pos:
                    top = _top_z(parent, pos[parent.name][e].tolist() + quat[parent.name][e].tolist())
                else:
                    top = _top_z(parent, parent.get_world_pose())
            else:
                below = [_top_z(a, a.get_world_pose()) for a in anchors
                         if _inside_footprint(a, a.get_world_pose(), p[:2])]
                below = [t for t in below if t <= float(start[name][e, 2]) + 0.05]
                if not below:
                    continue
                top = max(below)
            err = bottom - top
            errors.append(err)
            if abs(err) > abs(worst_err):
                worst_err, worst_name = err, name
    top_speed = max(speeds) if speeds else (0.0, "")
    return {"example": os.path.splitext(os.path.basename(spec))[0], "physics": physics, "num_envs": num_envs,
            "steps": steps, "height_error_mm": None if not errors else round(worst_err * 1000.0, 3),
            "height_error_object": worst_name or None,
            "median_abs_error_mm": None if not errors else round(1000.0 * sorted(map(abs, errors))[len(errors) // 2], 3),
            "speed_m_s": float(f"{top_speed[0]:.3g}"), "speed_object": top_speed[1] or None,
            "env_steps_per_s": round(steps * num_envs / step_s, 1) if step_s > 0 else None,
            "newton": newton or None}


def _child(args) -> int:
    row = measure(args.child[0], args.child[1], args.num_envs, args.steps, args.placement_seed, dict(args.newton))
    print("ROW " + json.dumps(row), flush=True)
    return 0


def _run_one(spec: str, physics: str, args) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", spec, physics, "--num_envs", str(args.num_envs),
           "--steps", str(args.steps), "--placement_seed", str(args.placement_seed)]
    for k, v in args.newton:
        cmd += ["--newton", f"{k}={v}"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    rows = [line[4:] for line in out.stdout.splitlines() if line.startswith("ROW ")]
    if out.returncode != 0 or not rows:
        tail = (out.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"example": os.path.splitext(os.path.basename(spec))[0], "physics": physics, "error": tail}
    return json.loads(rows[-1])


def _verdict(row: dict, args) -> str:
    if "error" in row:
        return "error"
    ok_h = row["height_error_mm"] is None or abs(row["height_error_mm"]) <= args.max_error_mm
    ok_v = row["speed_m_s"] <= args.max_speed
    return "yes" if ok_h and ok_v else "no"


def main(argv: list[str] | None = None) -> int:
    from isaaclab_arena.utils.arena_argparse import ArenaArgumentParser

    p = ArenaArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--examples", nargs="*", default=None, help="example names (default: all shipped)")
    p.add_argument("--physics", nargs="*", default=list(BACKENDS), choices=BACKENDS)
    p.add_argument("--num_envs", type=int, default=4)
    p.add_argument("--steps", type=int, default=240, help="env steps (2 physics steps of 1/120 s each)")
    p.add_argument("--placement_seed", type=int, default=3)
    p.add_argument("--newton", type=_parse_setting, action="append", default=[],
                   help="a NewtonContactSettings override key=value (repeatable)")
    p.add_argument("--max_error_mm", type=float, default=1.0)
    p.add_argument("--max_speed", type=float, default=0.005, help="m/s")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per run")
    p.add_argument("--json", default=None, help="write the rows to this file")
    p.add_argument("--child", nargs=2, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return _child(args)
    examples = shipped_examples()
    names = args.examples or list(examples)
    unknown = [n for n in names if n not in examples]
    if unknown:
        p.error(f"unknown example(s) {unknown}; shipped: {sorted(examples)}")
    rows = []
    for name in names:
        for physics in args.physics:
            row = _run_one(examples[name], physics, args)
            rows.append(row)
            print("bench resting " + " ".join(f"{k}={v}" for k, v in row.items() if k != "newton")
                  + (f" newton={json.dumps(row.get('newton'), separators=(',', ':'))}" if row.get("newton") else ""),
                  flush=True)
    print()
    print(f"| example | backend | height error (mm, worst) | object | speed after {args.steps} steps (m/s) | rests "
          "| env-steps/s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        if "error" in r:
            print(f"| {r['example']} | {r['physics']} | error: {r['error'][:80]} | | | error | |")
            continue
        h = "n/a (clutter)" if r["height_error_mm"] is None else f"{r['height_error_mm']:+.3f}"
        print(f"| {r['example']} | {r['physics']} | {h} | {r['height_error_object'] or ''} | {r['speed_m_s']:.2g} "
              f"| {_verdict(r, args)} | {r.get('env_steps_per_s') or ''} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

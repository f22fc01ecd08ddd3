"""Episode records (one JSON object per evaluated episode) and the files of an evaluation run.

A record::

    {"run": "default", "episode": 0, "policy": "scripted_pick_and_place",
     "env_id": 3, "draw_id": 0, "placement_seed": 7,
     "layout": {"source": "solver", "file": null, "index": 3, "line": null},
     "fallback": false,
     "joined_objects": ["bowl", "dice", "can"], "parked_objects": ["crate", "block", "tray", "bottle", "ball"],
     "poses_at_reset": {"pick_up_object": [x, y, z, qx, qy, qz, qw], "bowl": [...], "robot": [...]},
     "factors": {"object_x_m": 0.12, ...},
     "success": true, "termination": "success", "episode_length_steps": 225, "episode_length_s": 3.75,
     "sim_seed": 42}

* ``episode``: the global episode index; it fixes the layout (episode ``k`` runs layout ``k``), whatever the
  number of envs or processes.
* ``env_id`` / ``draw_id`` / ``placement_seed``: re-create a solved layout (partition ``env_id``, draw ``draw_id``
  of the spec solved with ``placement_seed``); for recorded layouts they are the recording's (or null) and
  ``layout.file`` / ``layout.line`` name the JSONL line.
* ``fallback``: the layout failed a placement check and was kept as a best-loss fallback.
* ``joined_objects`` / ``parked_objects`` (only in scenes with object pools, ``assets/object_pool.py``): the pool
  members that joined the episode's layout and those parked, in the scene's order, as the env reported them at the
  episode's reset (``env.extras["arena_pool_joined"]``); they must agree with the layout's poses (a parked member
  sits at its parking spot), else the record is refused.
* ``poses_at_reset``: env-local poses (metres, xyzw) of every placed object, fixed object and the robot base,
  as written at the episode's reset; ``factors`` are computed from them (``factors.py``).
* ``success``: the task's ``success`` termination term fired (the simulator's signal); ``termination`` names
  the term that ended the episode (``success``, ``time_out``, another term, or ``cut_off`` when the runner's
  step limit ended it). Records hold no wall-clock time and no env slot, so a deterministic policy gives
  byte-identical records run after run.

Files of a run (all written atomically, never half): ``episodes.jsonl`` (records in episode order),
``eval_summary.json`` and ``report.html``.
"""

from __future__ import annotations

import json

import torch

from isaaclab_arena.utils.atomic_files import write_text_atomic

RECORDS_FILE = "episodes.jsonl"
SUMMARY_FILE = "eval_summary.json"
REPORT_FILE = "report.html"
#: Decimals of poses in records (0.1 micrometre).
POSE_DECIMALS = 7


def pose_list(row) -> list[float]:
    """A (7,) pose as a list of rounded floats (positions metres, xyzw quaternion)."""
    return [round(float(v), POSE_DECIMALS) for v in row]


def records_text(records: list[dict]) -> str:
    """JSONL text of records (sorted keys: the same records give the same bytes)."""
    return "".join(json.dumps(r, sort_keys=True) + "\n" for r in records)


def write_json_atomic(path: str, data) -> str:
    return write_text_atomic(path, json.dumps(data, indent=1, sort_keys=True) + "\n")


def read_records(path: str) -> list[dict]:
    """Records of a JSONL file; a line that is not a JSON object is refused naming ``path:line``."""
    out = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{n}: not a JSON episode record ({err.msg})") from None
            if not isinstance(rec, dict):
                raise ValueError(f"{path}:{n}: an episode record must be a JSON object")
            out.append(rec)
    return out


def comparable(record: dict) -> dict:
    """A record without the fields that name where it ran (``run``): what two evaluations of the same layouts
    and policy must agree on."""
    return {k: v for k, v in record.items() if k != "run"}


def static_poses(builder) -> dict[str, list[float]]:
    """Env-local poses of what the episode table does not hold: fixed objects, a robot not placed by relations,
    and a task destination that spawns nothing (an object reference such as a tabletop)."""
    from isaaclab_arena.embodiments.embodiment import ROBOT_SCENE_KEY

    out = {}
    _, keys = builder.placed_names_and_keys()
    for a in builder._rigid_assets():
        if a.name not in keys:
            pose = a.placed_pose or a.initial_pose
            if pose is not None:
                out[a.name] = [*pose.position_xyz, *pose.rotation_xyzw]
    robot = builder.arena_env.embodiment
    if robot is not None and ROBOT_SCENE_KEY not in keys:
        pose = robot.get_world_pose()
        out[ROBOT_SCENE_KEY] = [*pose.position_xyz, *pose.rotation_xyzw]
    task = builder.arena_env.task
    if task is not None and not task.destination_location.get_scene_root_keys():
        pose = task.destination_location.get_world_pose()
        out[task.destination_location.name] = [*pose.position_xyz, *pose.rotation_xyzw]
    return out


def _world_xy_extent(asset) -> tuple[list[float], list[float]] | None:
    """(min_xy, max_xy) env-local of an asset's box at its world pose (its 8 corners turned), or None."""
    from isaaclab.utils.math import quat_apply

    box, pose = asset.get_bounding_box(), asset.get_world_pose()
    if box is None or pose is None:
        return None
    lo, hi = torch.tensor(box.min_point, dtype=torch.float64), torch.tensor(box.max_point, dtype=torch.float64)
    sel = torch.tensor([[i >> 2 & 1, i >> 1 & 1, i & 1] for i in range(8)], dtype=torch.float64)
    corners = lo + sel * (hi - lo)
    q = torch.tensor(pose.rotation_xyzw, dtype=torch.float64).expand(8, 4)
    world = quat_apply(q, corners) + torch.tensor(pose.position_xyz, dtype=torch.float64)
    return ([round(float(v), 4) for v in world[:, :2].min(0).values],
            [round(float(v), 4) for v in world[:, :2].max(0).values])


def scene_outline(builder) -> list[dict]:
    """Top-down rectangles (env-local x/y, metres) of the anchored supports (the table top), for the report."""
    out = []
    for a in builder.arena_env.assets:
        if not getattr(a, "is_anchor", False) or a.name == "floor":
            continue
        try:
            extent = _world_xy_extent(a)
        except (ValueError, KeyError, FileNotFoundError):  # an outline is decoration; no bounds, no rectangle
            extent = None
        if extent is not None:
            out.append({"name": a.name, "kind": "support", "min_xy": extent[0], "max_xy": extent[1]})
    return out


def _pool_fields(episode: int, joined: dict[str, bool] | None, names: list[str], row: torch.Tensor) -> dict:
    """``joined_objects`` / ``parked_objects`` of one episode from the env's joined flags, checked against the
    layout row ``row`` (K, 7) of objects ``names``; {} without pools."""
    from isaaclab_arena.utils.parking_spots import is_parked

    if not joined:
        return {}
    out = {"joined_objects": [m for m, j in joined.items() if j],
           "parked_objects": [m for m, j in joined.items() if not j]}
    in_layout = [m for m in joined if m in names and bool(is_parked(row[names.index(m), :3]))]
    if in_layout != out["parked_objects"]:
        raise RuntimeError(f"episode {episode}: the env parked {out['parked_objects']} but its layout parks "
                           f"{in_layout}")
    return out


def build_records(settings, table, episodes: list[int], outcomes: dict[int, dict],
                  static: dict, roles: dict, factor_names: list[str], step_dt: float, sim_seed: int) -> list[dict]:
    """One record per episode of the share (see ``episode_records.py``), in global episode order."""
    from isaaclab_arena.evaluation.factors import compute_factors, round_factor

    local = table.select(episodes)
    rows = local.layouts.root_poses()  # (n, K, 7) env-local
    names = list(local.layouts.object_names)
    poses = {k: rows[:, j] for j, k in enumerate(names)}
    n = len(episodes)
    for key, pose in static.items():
        poses.setdefault(key, torch.tensor(pose, dtype=torch.float32).expand(n, 7))
    factors = compute_factors(factor_names, poses, roles)
    records = []
    for i, k in enumerate(episodes):
        meta, out = local.meta[i], outcomes[i]
        pools = _pool_fields(int(k), out.get("pool_joined"), names, rows[i])
        records.append({
            "run": settings.run, "episode": int(k), "policy": settings.policy_type,
            "env_id": meta["env_id"], "draw_id": meta["draw_id"], "placement_seed": meta["placement_seed"],
            "layout": dict(meta["layout"]), "fallback": bool(meta["fallback"]), **pools,
            "poses_at_reset": {key: pose_list(p[i]) for key, p in sorted(poses.items())},
            "factors": {f: round_factor(v[i]) for f, v in factors.items()},
            "success": bool(out["success"]), "termination": out["termination"],
            "episode_length_steps": out["episode_length_steps"],
            "episode_length_s": round(out["episode_length_steps"] * step_dt, 6), "sim_seed": sim_seed})
    return records


__all__ = ["RECORDS_FILE", "REPORT_FILE", "SUMMARY_FILE", "build_records", "comparable", "pose_list", "read_records",
           "records_text", "scene_outline", "static_poses", "write_json_atomic", "write_text_atomic"]

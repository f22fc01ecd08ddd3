"""Shared run loop of the runners: launch kit-less, create the env, reset, step, report what was placed.

Console: the placement seed (drawn ones say how to reuse them), the replayed file on replay runs, the placed
poses after reset and after the steps, the picture and the summary paths. Isaac Lab's manager tables and the
simulators' start-up messages are held back unless ``verbose`` (``--verbose``).

``run_summary.json`` (in the output folder) holds the run's settings, its placement seed (``placement_seed``,
``placement_seed_drawn``), the working directory and ``reproduce``: the command line that repeats the run (with
``--placement_seed`` added when the seed was drawn).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time

import torch

from isaaclab_arena.environments.run_outcome import placement_outcome, summary_block
from isaaclab_arena.utils.interrupts import raise_if_interrupted
from isaaclab_arena.utils.parking_spots import is_parked


def placed_poses(env, names: list[str]) -> dict[str, torch.Tensor]:
    """Env-local root poses ``(num_envs, 7)`` (xyz metres + xyzw) read back from the simulator."""
    u = env.unwrapped
    out = {}
    for n in names:
        data = u.scene[n].data
        pos = data.root_pos_w.torch - u.scene.env_origins
        out[n] = torch.cat([pos, data.root_quat_w.torch], dim=-1).detach().cpu().clone()
    return out


def format_poses(title: str, poses: dict[str, torch.Tensor], max_envs: int = 4) -> str:
    """``title`` and one line per object of its (E, 3) env-local positions (metres) in the first ``max_envs`` envs;
    an object pool's member parked in an env (``utils/parking_spots.py``) reads ``parked`` there."""
    lines = [title]
    for name, p in poses.items():
        parked = is_parked(p).tolist()
        cells = [f"env{i}: parked" if parked[i] else
                 f"env{i}: ({p[i, 0]:+.3f}, {p[i, 1]:+.3f}, {p[i, 2]:+.3f})" for i in range(min(max_envs, p.shape[0]))]
        more = f" ... (+{p.shape[0] - max_envs} envs)" if p.shape[0] > max_envs else ""
        lines.append(f"  {name:<16s} " + "  ".join(cells) + more)
    return "\n".join(lines)


def zero_actions(env) -> torch.Tensor:
    u = env.unwrapped
    dim = u.action_manager.total_action_dim if hasattr(u, "action_manager") else 0
    return torch.zeros(u.num_envs, dim, device=u.device)


def reproduce_command(command: list[str] | None, seed: int | None, drawn: bool) -> str | None:
    """The command line that repeats a run: the launcher (``scripts/arena_python.sh`` when the run came through it,
    else this Python), the script and its arguments, plus ``--placement_seed <seed>`` when the seed was drawn."""
    if not command:
        return None
    launcher = os.environ.get("ARENA_LAUNCHER") or sys.executable
    args = list(command)
    if drawn and seed is not None:
        args += ["--placement_seed", str(seed)]
    return shlex.join([launcher, *args])


def _seed_facts(builder) -> tuple[int | None, bool]:
    """(placement seed, drawn) of a solving run; (None, False) when nothing is solved."""
    if builder.placer is None:
        return None, False
    return builder.placer.placement_seed, builder.placer_params.placement_seed is None


def _replay_origin(builder) -> str | None:
    if builder.cfg.placement_layouts_path:
        return builder.cfg.placement_layouts_path
    layouts = builder.arena_env.placement_layouts
    return getattr(layouts, "origin", None) if layouts is not None else None


def _release_gap(builder) -> str | None:
    """The On clearances (release gaps, metres) of the placed objects, e.g. ``"0.01 m"``; None without any."""
    from isaaclab_arena.relations.relations import On

    gaps = sorted({float(r.clearance_m) for a in builder.arena_env.assets if hasattr(a, "get_relations_of")
                   for r in a.get_relations_of(On) if float(r.clearance_m) > 0.0})
    return ", ".join(f"{g:g} m" for g in gaps) if gaps else None


def _has_clutter(builder) -> bool:
    from isaaclab_arena.relations.relations import ClutterOn

    return any(a.get_relations_of(ClutterOn) for a in builder.arena_env.assets if hasattr(a, "get_relations_of"))


def _write_picture(builder, env, names, output_dir, picture_envs, phase: str, summary: dict) -> None:
    """The top-down picture: the solver's layouts (``phase="reset"``), or the simulator's poses on replay runs
    (``"replay"``) and for clutter after physics (``"settled"``)."""
    from isaaclab_arena.environments import placement_pictures as pics

    path = os.path.join(output_dir, "layouts.png")
    notes = {"reset": "solver layouts at reset", "replay": "replayed layouts, read back after reset",
             "settled": "poses after physics settled"}
    num_envs = builder.cfg.num_envs
    drawn = len(pics.picture_envs(num_envs, env_ids=picture_envs))
    if phase == "reset":
        failed: dict = {}
        pics.write_layout_picture(builder.placer, path, report=failed, env_ids=picture_envs, note=notes[phase])
        summary["picture_failed_checks"] = {str(k): v for k, v in failed.items()}
        extra = [f"failed checks highlighted in envs {sorted(failed)}"] if failed else []
    else:
        poses = placed_poses(env, names)
        stacked = torch.stack([poses[n] for n in names], dim=1)
        robot = [builder.arena_env.embodiment] if builder.arena_env.embodiment is not None else []
        pics.write_poses_picture([*builder.arena_env.assets, *robot], names, stacked, path, builder.member_indices,
                                 env_ids=picture_envs, note=notes[phase])
        extra = []
    heading = pics.figure_heading(drawn, num_envs, notes[phase])
    print(f"[arena] layout picture: {path} ({'; '.join([heading, *extra])})", flush=True)
    summary.update(picture=path, picture_shows=notes[phase], picture_envs=drawn)


def run(builder, num_steps: int, output_dir: str | None, pictures: bool = True, policy=None,
        picture_envs: list[int] | None = None, verbose: bool = False, command: list[str] | None = None) -> dict:
    """Launches (kit-less), creates the env, resets, steps ``num_steps`` times; prints and returns a summary.

    Args:
        builder: An ``ArenaEnvBuilder`` (not composed yet).
        num_steps: Env steps after the first reset.
        output_dir: Folder of the picture, diagnostics and ``run_summary.json`` (None: none written).
        pictures: Write ``layouts.png``.
        policy: ``policy(env) -> actions``; None steps zero actions.
        picture_envs: Envs drawn (default: the first 16).
        verbose: Print Isaac Lab's manager tables and the simulators' start-up messages.
        command: The runner's script and arguments, for the ``reproduce`` line of the summary.
    """
    from isaaclab_arena.environments.physics import check_backend_available
    from isaaclab_arena.environments.quiet_output import held_output, quiet_warp_init

    check_backend_available(builder.physics, builder.cfg.device)  # before the solver runs
    if pictures and picture_envs is not None:
        from isaaclab_arena.environments.placement_pictures import picture_envs as chosen_envs

        chosen_envs(builder.cfg.num_envs, env_ids=picture_envs)  # refuses envs that do not exist
    quiet_warp_init(verbose)
    if output_dir:
        output_dir = os.path.abspath(output_dir)
    t0 = time.perf_counter()
    try:
        env_cfg = builder.compose_manager_cfg()
    except Exception as err:
        _report_failed_placement(builder, output_dir, pictures, picture_envs, command, err,
                                 time.perf_counter() - t0)
        raise
    t_compose = time.perf_counter() - t0
    seed, drawn = _seed_facts(builder)
    if seed is not None:
        how = f" (drawn; rerun the same layouts with --placement_seed {seed})" if drawn else ""
        print(f"[arena] placement seed {seed}{how}", flush=True)
    replayed = _replay_origin(builder)
    names = builder.pose_source.object_names if builder.pose_source is not None else []
    summary = _base_summary(builder, command, t_compose)
    if replayed is not None:
        summary["placement_layouts"] = os.path.abspath(replayed)
        print(f"[arena] replaying recorded layouts from {os.path.abspath(replayed)}", flush=True)
    from isaaclab_arena.environments.launch import kitless_session

    with kitless_session(env_cfg, builder.cfg.device):
        with held_output(verbose):  # Isaac Lab's manager tables, the simulator's start-up warnings
            env = builder.make_registered(env_cfg)
        try:
            env.reset()
            after_reset = placed_poses(env, names)
            print(format_poses("[arena] placed after reset (env-local x, y, z in m):", after_reset), flush=True)
            gap = _release_gap(builder) if builder.placer is not None else None
            if gap:
                print(f"[arena] heights: On places an object clearance_m above its support ({gap}), so it drops "
                      "that much when physics starts (the release gap)", flush=True)
            clutter = _has_clutter(builder)
            if pictures and output_dir and names:
                if builder.placer is not None and not clutter:
                    _write_picture(builder, env, names, output_dir, picture_envs, "reset", summary)
                elif replayed is not None:
                    _write_picture(builder, env, names, output_dir, picture_envs, "replay", summary)
            act = zero_actions(env)
            t1 = time.perf_counter()
            for _ in range(num_steps):
                raise_if_interrupted()
                env.step(policy(env) if policy is not None else act)
            dt = time.perf_counter() - t1
            final = placed_poses(env, names)
            print(format_poses(f"[arena] after {num_steps} steps (env-local x, y, z in m):", final), flush=True)
            if pictures and output_dir and names and clutter and replayed is None and builder.placer is not None:
                _write_picture(builder, env, names, output_dir, picture_envs, "settled", summary)
            sps = num_steps * env.unwrapped.num_envs / dt if dt > 0 and num_steps else 0.0
            print(f"[arena] {num_steps} steps x {env.unwrapped.num_envs} envs in {dt:.2f} s ({sps:.0f} env-steps/s)")
            summary.update(steps=num_steps, env_steps_per_s=round(sps, 1),
                           after_reset={k: v.tolist() for k, v in after_reset.items()},
                           final={k: v.tolist() for k, v in final.items()})
            if builder.placer is not None:
                summary["placement"] = builder.placer.summary()
        finally:
            with held_output(verbose):
                env.close()
    outcome = placement_outcome(builder.placer)
    if outcome is not None:
        summary["placement_outcome"] = outcome
    if output_dir:
        _write_summary(output_dir, summary)
    if outcome is not None and outcome["status"] != "ok":
        print(summary_block(outcome, _outcome_files(builder, output_dir, summary)), flush=True)
    return summary


def _base_summary(builder, command: list[str] | None, t_compose: float) -> dict:
    seed, drawn = _seed_facts(builder)
    return {"env": builder.arena_env.name, "num_envs": builder.cfg.num_envs, "env_spacing": builder.env_spacing,
            "physics": builder.physics, "device": builder.cfg.device, "compose_s": round(t_compose, 3),
            "placement_seed": seed, "placement_seed_drawn": drawn, "cwd": os.getcwd(),
            "reproduce": reproduce_command(command, seed, drawn)}


def _outcome_files(builder, output_dir: str | None, summary: dict) -> dict[str, str | None]:
    """The files a failed or fallback run points to: picture, summary, diagnostics, debug view (.rrd)."""
    view = getattr(getattr(builder.placer, "placer", None), "debug_view", None)
    diagnostics = builder.placer.diagnostics.path if builder.placer is not None else None
    return {"picture:": summary.get("picture"),
            "summary:": os.path.join(output_dir, "run_summary.json") if output_dir else None,
            "diagnostics:": diagnostics if diagnostics and os.path.exists(diagnostics) else None,
            "debug view:": getattr(view, "path", None)}


def _report_failed_placement(builder, output_dir, pictures, picture_envs, command, err, t_compose) -> None:
    """A pool that could not be filled: the picture of the best-loss candidates, ``run_summary.json`` with the
    outcome and the error, and the summary block, before the error propagates (the runner then prints it)."""
    outcome = placement_outcome(builder.placer)
    if outcome is None or outcome["status"] != "failed":
        return
    summary = _base_summary(builder, command, t_compose)
    summary.update(placement_outcome=outcome, error=str(err))
    if output_dir and pictures:
        from isaaclab_arena.environments import placement_pictures as pics

        path = os.path.join(output_dir, "layouts.png")
        failed: dict = {}
        note = "NOT PLACED: best-loss candidates of the failed fill"
        pics.write_layout_picture(builder.placer, path, report=failed, env_ids=picture_envs, note=note)
        summary.update(picture=path, picture_shows=note, picture_failed_checks={str(k): v for k, v in failed.items()})
    if output_dir:
        _write_summary(output_dir, summary)
    print(summary_block(outcome, _outcome_files(builder, output_dir, summary)), flush=True)


def _write_summary(output_dir: str, summary: dict) -> None:
    os.makedirs(output_dir, exist_ok=True)
    path = os.path.join(output_dir, "run_summary.json")
    from isaaclab_arena.utils.atomic_files import written_whole

    with written_whole(path) as f:
        json.dump(summary, f, indent=1)
    print(f"[arena] summary: {path}")

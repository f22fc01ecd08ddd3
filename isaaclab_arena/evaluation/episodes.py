"""Evaluates a policy over episodes of a task env: every episode on a layout fixed in advance, one record each.

Episode ``k`` runs layout ``k`` of the episode table (``episode_layouts.py``: solved one per episode from the
spec and placement seed, or lines of a recording). The env's envs run episodes side by side; a resetting env
takes the next episode in reset-request order. An episode ends when a termination term fires: ``success``
(the task's term: a success), ``time_out`` or another term (a failure); the runner's step limit (the episode
length times the episodes per env, plus one) cuts off what is still open (``cut_off``, a failure).

A deterministic policy gives byte-identical records run after run. On the CPU the runners use one OpenMP /
torch intra-op thread (``OMP_NUM_THREADS=1`` unless you set it, and ``torch.set_num_threads(1)``), so batched
ops give the same bits for any batch size. With ``--env_spacing 0`` every env also shares one origin (Isaac Lab
filters collisions between envs, so they do not touch) and PhysX runs with enhanced determinism (an env's bodies
simulate the same whatever the other envs hold): an episode's physics is then the same whichever env slot runs
it, and the records are identical for any ``--num_envs`` and any split over processes (measured: scripted
pick-and-place, 16 recorded layouts, 4 vs 16 envs; without enhanced determinism 3 of 16 episodes ended 1-3
steps apart). With envs spread apart (the default spacing) the float rounding of world coordinates differs per
env, and an episode may end a step earlier or later with another env count (measured: 2 of 16 episodes by one
step). Co-located envs cost broad-phase work (measured about 2x slower at 4 Franka envs on this CPU). Kit-less,
CPU or GPU; no Python loop over envs per step.
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass, field

import torch

from isaaclab_arena.evaluation.episode_loop import EpisodeLoop, replay_source_of
from isaaclab_arena.evaluation.episode_records import (
    RECORDS_FILE,
    REPORT_FILE,
    SUMMARY_FILE,
    build_records,
    records_text,
    scene_outline,
    static_poses,
    write_json_atomic,
    write_text_atomic,
)
from isaaclab_arena.utils.progress import progress_bar


@dataclass
class EvaluationSettings:
    """One evaluation run.

    Attributes:
        policy_type: Built-in policy name or dotted class path (``evaluation/policy.py``).
        num_episodes: Episodes to evaluate (> 0).
        policy_settings: Keyword settings of the policy's constructor.
        run: The run's name in records (experiments name their runs).
        output_dir: Records, summary and report go here (None: nothing written).
        placement_layouts: A JSONL recording to evaluate on (episode ``k`` -> line ``k mod N``); None solves one
            layout per episode from the spec.
        factors: Factor names recorded per episode (None: every factor the scene has; ``factors.py``).
        episodes: The global episode indices this process runs (a rank's share); None: all.
        max_steps: Env steps after which open episodes are cut off (None: episode length x episodes per env + 1).
        progress: Show a progress bar with an ETA (on stderr).
        report: Write ``report.html``.
        verbose: Isaac Lab's manager tables and start-up messages.
        command: The runner's script and arguments, for the ``reproduce`` line.
        seed_flag: The command takes ``--placement_seed`` (a drawn seed is added to ``reproduce``).
    """

    policy_type: str = "zero_action"
    num_episodes: int = 1
    policy_settings: dict = field(default_factory=dict)
    run: str = "default"
    output_dir: str | None = None
    placement_layouts: str | None = None
    factors: list[str] | None = None
    episodes: list[int] | None = None
    max_steps: int | None = None
    progress: bool = True
    report: bool = True
    verbose: bool = False
    command: list[str] | None = None
    seed_flag: bool = True

    def __post_init__(self):
        n = self.num_episodes
        if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
            raise ValueError(f"num_episodes must be a positive integer, got {n!r}")
        if self.max_steps is not None and (isinstance(self.max_steps, bool) or not isinstance(self.max_steps, int)
                                           or self.max_steps <= 0):
            raise ValueError(f"max_steps must be a positive integer or None, got {self.max_steps!r}")
        if not isinstance(self.policy_settings, dict):
            raise ValueError(f"policy settings must be a mapping of keyword settings, got {self.policy_settings!r}")


def _log(line: str) -> None:
    print(line, flush=True)


def episode_table(builder, settings: EvaluationSettings, episodes: list[int]):
    """The layouts of ``episodes`` (solved for those only, or the whole recording), refusing what cannot be
    evaluated before any simulation."""
    from isaaclab_arena.assets.object_set import RigidObjectSet
    from isaaclab_arena.evaluation.episode_layouts import recorded_episode_layouts, solve_episode_layouts

    sets = [a.name for a in builder.arena_env.assets if isinstance(a, RigidObjectSet) and a.has_placement_relations]
    if sets:
        raise ValueError(f"evaluation fixes one layout per episode, but RigidObjectSet '{sets[0]}' picks its member per "
                         "env; evaluate with concrete objects (one object per set member and run)")
    if settings.placement_layouts is not None:
        path = os.path.abspath(settings.placement_layouts)
        builder.cfg = dataclasses.replace(builder.cfg, placement_layouts_path=path)
        builder._replay_layouts()  # the replay checks: seeds, resolve_on_reset, coverage (one line each)
        builder.cfg = dataclasses.replace(builder.cfg, placement_layouts_path=None)
        return recorded_episode_layouts(path)
    return solve_episode_layouts(builder, settings.num_episodes, verbose=settings.verbose, episodes=episodes)


def summarize(settings: EvaluationSettings, builder, table, records: list[dict], factor_names: list[str],
              roles: dict, extra: dict | None = None) -> dict:
    """The run's summary: rates with Wilson intervals (all / clean / fallback), terminations, seed, reproduce."""
    from collections import Counter

    from isaaclab_arena.environments.run_loop import reproduce_command
    from isaaclab_arena.evaluation.statistics import success_summary

    seed, drawn = table.placement_seed, table.placement_seed_drawn
    rates = success_summary(records)
    summary = {
        "run": settings.run, "env": builder.arena_env.name, "policy": settings.policy_type,
        "policy_settings": settings.policy_settings, "num_episodes": len(records), "num_envs": builder.cfg.num_envs,
        "env_spacing": builder.env_spacing, "physics": builder.physics, "device": builder.cfg.device,
        "sim_seed": builder.cfg.seed, "rates": rates, "success_rate": rates["all"]["success_rate"],
        "terminations": dict(sorted(Counter(r["termination"] for r in records).items())),
        "placement_seed": seed, "placement_seed_drawn": drawn,
        "placement_layouts": os.path.abspath(settings.placement_layouts) if settings.placement_layouts else None,
        "fallback_layouts": sum(r["fallback"] for r in records),
        "placement_checks": table.checks, "required_checks": table.required_checks,
        "factors": factor_names, "object_key": roles.get("object"), "destination_key": roles.get("destination"),
        "robot_key": roles.get("robot"), "scene_outline": scene_outline(builder),
        "reproduce": reproduce_command(settings.command, seed, drawn and settings.seed_flag
                                       and settings.placement_layouts is None),
        "cwd": os.getcwd(),
    }
    summary.update(extra or {})
    return summary


def resummarize(summary: dict, records: list[dict], extra: dict | None = None) -> dict:
    """``summary`` (of one part of a run) with every record-derived field recomputed from ``records`` (the whole
    run): rates, success rate, terminations, episode and fallback counts."""
    from collections import Counter

    from isaaclab_arena.evaluation.statistics import success_summary

    rates = success_summary(records)
    out = dict(summary, rates=rates, success_rate=rates["all"]["success_rate"], num_episodes=len(records),
               terminations=dict(sorted(Counter(r["termination"] for r in records).items())),
               fallback_layouts=sum(r["fallback"] for r in records))
    out.update(extra or {})
    return out


def write_run_files(output_dir: str, summary: dict, records: list[dict], report: bool = True) -> dict:
    """Writes ``episodes.jsonl``, ``eval_summary.json`` and (``report``) ``report.html`` into ``output_dir``;
    returns ``{"records", "summary", "report"}`` paths."""
    os.makedirs(output_dir, exist_ok=True)
    paths = {"records": os.path.join(output_dir, RECORDS_FILE), "summary": os.path.join(output_dir, SUMMARY_FILE),
             "report": os.path.join(output_dir, REPORT_FILE) if report else None}
    write_text_atomic(paths["records"], records_text(records))
    summary = dict(summary, records=paths["records"], report=paths["report"])
    if report:
        from isaaclab_arena.evaluation.report import write_report

        write_report(paths["report"], [{"summary": summary, "records": records}])
    write_json_atomic(paths["summary"], summary)
    return paths


def _run_episodes(builder, settings: EvaluationSettings, table, todo: list[int], static: dict, roles: dict,
                  factor_names: list[str], on_records=None) -> tuple[list[dict], dict]:
    """Runs the episodes ``todo`` in a fresh env; returns (records, timing). ``on_records(records)`` is called with
    every finished record so far, at most once a second (and at the end): a rank's shard."""
    from isaaclab_arena.environments.launch import kitless_session
    from isaaclab_arena.environments.quiet_output import held_output
    from isaaclab_arena.evaluation.policy import make_policy

    builder.episode_layouts = table.select(todo).layouts
    env_cfg = builder.compose_manager_cfg()
    saved = {"t": 0.0}

    def records_of(outcomes: dict[int, dict], step_dt: float) -> list[dict]:
        done = sorted(outcomes)
        return build_records(settings, table, [todo[i] for i in done], {j: outcomes[i] for j, i in enumerate(done)},
                             static, roles, factor_names, step_dt, builder.cfg.seed)

    with kitless_session(env_cfg, builder.cfg.device):
        with held_output(settings.verbose):
            env = builder.make_registered(env_cfg)
        try:
            step_dt, num_envs = float(env.unwrapped.step_dt), env.unwrapped.num_envs

            def progress(outcomes):
                if on_records is not None and time.perf_counter() - saved["t"] >= 1.0:
                    on_records(records_of(outcomes, step_dt))
                    saved["t"] = time.perf_counter()

            policy = make_policy(settings.policy_type, env, settings.policy_settings)
            bar = progress_bar(len(todo), "[eval] episodes", "ep", enabled=settings.progress)
            t1 = time.perf_counter()
            try:
                loop = EpisodeLoop(env, policy, settings.policy_type, len(todo),
                                   replay_source_of(builder.pose_source), settings.max_steps, bar, progress)
                outcomes = loop.run()
            except BaseException:
                if bar is not None:  # a refusal or Ctrl-C ends the run: its one line, not a half bar
                    bar.disable = True
                raise
            if bar is not None:
                bar.close()
            wall = time.perf_counter() - t1
            close = getattr(policy, "close", None)
            if callable(close):
                close()
        finally:
            with held_output(settings.verbose):
                env.close()
    records = records_of(outcomes, step_dt)
    if on_records is not None:
        on_records(records)
    return records, {"env_steps": loop.steps * num_envs, "wall_s": wall}


def evaluate(builder, settings: EvaluationSettings, log=_log, dist=None) -> dict:
    """Solves (or loads) the episode layouts, runs the policy over every episode and returns the summary (with
    ``"records_list"``); writes the run's files when ``settings.output_dir`` is set.

    Args:
        builder: An ``ArenaEnvBuilder`` (not composed).
        settings: The run.
        log: Where console lines go.
        dist: A ``utils.distributed.RankContext`` under torchrun: this rank runs its share of the episodes, keeps a
            shard (resumed after a restart), and rank 0 gathers, merges and writes; None: one process.

    Refused input (bad policy, layouts, factors, sizes, a resume with other settings) raises ``ValueError``
    subclasses before or right after the env is created; the runners turn them into one ``error:`` line and
    exit status 2.
    """
    from isaaclab_arena.environments.physics import check_backend_available
    from isaaclab_arena.environments.quiet_output import quiet_warp_init
    from isaaclab_arena.evaluation.factors import check_factors, scene_roles
    from isaaclab_arena.evaluation.policy import load_policy_class

    check_backend_available(builder.physics, builder.cfg.device)
    load_policy_class(settings.policy_type)  # a class path that does not import: refused before solving
    roles = scene_roles(builder)
    factor_names = check_factors(settings.factors, roles)
    quiet_warp_init(settings.verbose)
    if str(builder.cfg.device).startswith("cpu"):
        torch.set_num_threads(1)  # batched ops then give the same bits for any env count (module docstring)
    if builder.env_spacing == 0.0 and not builder.cfg.enhanced_determinism:  # the exact mode (module docstring)
        builder.cfg = dataclasses.replace(builder.cfg, enhanced_determinism=True)
    main = dist is None or dist.is_main
    say = log if main else (lambda line: None)
    episodes = list(range(settings.num_episodes)) if settings.episodes is None else list(settings.episodes)
    if dist is not None:
        from isaaclab_arena.evaluation.distributed import share

        episodes = [k for k in share(dist, settings.num_episodes) if k in set(episodes)]
    out_dir = os.path.abspath(settings.output_dir) if settings.output_dir else None
    if out_dir and dist is None:  # the run's placement diagnostics beside its records
        builder.cfg = dataclasses.replace(builder.cfg, output_dir=out_dir)
    seed_drawn = False
    shard = None
    done: list[dict] = []
    if dist is not None:
        from isaaclab_arena.evaluation.distributed import ShardStore

        if out_dir is None:
            raise ValueError("--distributed needs --output_dir: each rank keeps its records in a shard there")
        builder.cfg = dataclasses.replace(builder.cfg, output_dir=os.path.join(out_dir, f"rank{dist.rank}"))
        if builder.placer_params.placement_seed is None and settings.placement_layouts is None:
            from isaaclab_arena.evaluation.distributed import shared_placement_seed

            builder.cfg = dataclasses.replace(builder.cfg, placement_seed=shared_placement_seed(dist, out_dir))
            seed_drawn = True
        shard = ShardStore(out_dir, dist, {
            "env": builder.arena_env.name, "policy": settings.policy_type, "policy_settings": settings.policy_settings,
            "num_episodes": settings.num_episodes, "placement_seed": builder.placer_params.placement_seed,
            "placement_layouts": os.path.abspath(settings.placement_layouts) if settings.placement_layouts else None,
            "sim_seed": builder.cfg.seed, "run": settings.run})
        from isaaclab_arena.utils.distributed import agree_or_refuse

        try:
            done, refused = [r for r in shard.load() if r["episode"] in set(episodes)], None
        except ValueError as err:
            done, refused = [], str(err)
        agree_or_refuse(dist, refused)  # every rank checks its shard; one line (rank 0's), every rank exits 2
    todo = sorted(set(episodes) - {r["episode"] for r in done})
    where = f"{dist.world_size} ranks x " if dist is not None else ""
    say(f"[eval] {builder.arena_env.name}: policy {settings.policy_type}, {settings.num_episodes if dist else len(episodes)} "
        f"episodes on {where}{builder.cfg.num_envs} envs ({builder.cfg.device}, {builder.physics})")
    if done:
        log(f"[eval] rank {dist.rank}: resuming, {len(done)} of its {len(episodes)} episodes already in {shard.path}")
    t0 = time.perf_counter()
    table = episode_table(builder, settings, episodes)
    table.placement_seed_drawn = table.placement_seed_drawn or seed_drawn
    if table.placement_seed is not None:
        how = f" (drawn; rerun the same layouts with --placement_seed {table.placement_seed})" \
            if table.placement_seed_drawn else ""
        say(f"[eval] placement seed {table.placement_seed}{how}")
    source = "solved" if settings.placement_layouts is None else f"from {os.path.abspath(settings.placement_layouts)}"
    fallbacks = table.select(episodes).fallback_count()
    mine = f" (rank {dist.rank}'s share)" if dist is not None else ""
    say(f"[eval] layouts{mine}: {len(table)} {source}, {fallbacks} of {len(episodes)} are best-loss fallbacks "
        f"({time.perf_counter() - t0:.1f} s)" + (f"; diagnostics: {table.diagnostics_path}" if table.diagnostics_path
                                                  else ""))
    if fallbacks and table.explanation:
        say(f"[eval] fallback layouts fail a placement check: {table.explanation[:300]}")
    static = static_poses(builder)
    timing = {"env_steps": 0, "wall_s": 0.0}
    records = list(done)
    if todo:
        new, timing = _run_episodes(builder, settings, table, todo, static, roles, factor_names,
                                    on_records=(lambda recs: shard.save(done + recs)) if shard is not None else None)
        records = sorted(done + new, key=lambda r: r["episode"])
    if dist is not None:
        from isaaclab_arena.utils.distributed import gather_to_main

        import torch.distributed as tdist

        tdist.barrier()  # every rank done: what follows is the merge's own cost
        t_merge = time.perf_counter()
        parts = gather_to_main(dist, {"records": records, "timing": timing})
        if not main:
            return {"rank": dist.rank, "records_list": records}
        records = sorted((r for p in parts for r in p["records"]), key=lambda r: r["episode"])
        merge_s = time.perf_counter() - t_merge
        timing = {"env_steps": sum(p["timing"]["env_steps"] for p in parts),
                  "wall_s": max(p["timing"]["wall_s"] for p in parts)}
    wall = timing["wall_s"]
    extra = {"env_steps": timing["env_steps"], "wall_s": round(wall, 2),
             "env_steps_per_s": round(timing["env_steps"] / wall, 1) if wall > 0 else None}
    if dist is not None:
        extra.update(world_size=dist.world_size, backend=dist.backend, merge_s=round(merge_s, 4))
        if settings.command:  # the reproduce line starts the same torchrun job
            settings = dataclasses.replace(settings, command=["-m", "torch.distributed.run",
                                                              f"--nproc_per_node={dist.world_size}", *settings.command])
    summary = summarize(settings, builder, table, records, factor_names, roles, extra)
    return _report(settings, summary, records, out_dir, log)


def _report(settings: EvaluationSettings, summary: dict, records: list[dict], out_dir: str | None, log) -> dict:
    """Prints the result lines, writes the run's files; returns the summary with ``records_list``."""
    from isaaclab_arena.evaluation.statistics import format_rate

    rates = summary["rates"]
    log(f"[eval] success rate {format_rate(rates['all'])}; clean layouts {format_rate(rates['clean'])}; "
        f"fallback layouts {format_rate(rates['fallback'])} (95 % Wilson intervals)")
    log("[eval] terminations: " + ", ".join(f"{k} {v}" for k, v in summary["terminations"].items())
        + f"; {summary['env_steps_per_s']} env-steps/s")
    if out_dir:
        paths = write_run_files(out_dir, summary, records, settings.report)
        summary.update(records=paths["records"], report=paths["report"], summary_path=paths["summary"])
        log(f"[eval] records: {paths['records']}")
        log(f"[eval] summary: {paths['summary']}" + (f"; report: {paths['report']}" if paths["report"] else ""))
    if summary["reproduce"]:
        log(f"[eval] reproduce: {summary['reproduce']}")
    summary["records_list"] = records
    return summary


__all__ = ["EvaluationSettings", "evaluate", "resummarize", "summarize", "write_run_files"]

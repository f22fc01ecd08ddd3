"""The layout of every evaluation episode, fixed before the first step: episode ``k`` runs layout ``k``.

Two sources:

* **solved** (:func:`solve_episode_layouts`): the spec's pooled placer solves one partition per episode
  (``num_envs = num_episodes``, one layout each); episode ``k`` gets the first layout of partition ``k``, so its
  layout is a pure function of (spec, placement_seed, k) and re-created from ``env_id = k`` and its ``draw_id``.
  Best-loss fallbacks (a partition whose candidates all failed a check) are kept and marked.
* **recorded** (:func:`recorded_episode_layouts`): episode ``k`` gets line ``k mod N`` of a JSONL recording
  (``--placement_layouts``), so two policies evaluated on one file see identical layouts.

Either way the table is replayed through the builder's replay queue (``ArenaEnvBuilder.episode_layouts``):
resetting envs take consecutive layouts in reset-request order, and the runner reads which queue position
(= episode) each env slot took. Poses are env-local (metres, xyzw).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from isaaclab_arena.offline_placement.placement_layouts import PlacementLayouts


@dataclass
class EpisodeLayouts:
    """Per-episode layouts and where each came from.

    Attributes:
        layouts: The layout rows.
        meta: One dict per row: ``env_id``, ``draw_id``, ``placement_seed`` (None when unknown), ``fallback``
            (bool), ``layout`` ({``source``: "solver" | "recorded", ``file``, ``index``, ``line``}).
        episodes: The global episode of each row (solved tables); None: episode ``k`` runs row ``k mod len``
            (recordings).
        placement_seed: The seed of a solved table (None for recordings).
        placement_seed_drawn: True when no seed was given and the placer drew one.
        explanation: Why fallback layouts failed (the pool's closest misses), or "".
        diagnostics_path: The pool's diagnostics file, if written.
        checks / required_checks: The placement checks a solved table ran / required (None for recordings).
    """

    layouts: PlacementLayouts
    meta: list[dict]
    episodes: list[int] | None = None
    placement_seed: int | None = None
    placement_seed_drawn: bool = False
    explanation: str = ""
    diagnostics_path: str | None = None
    checks: list[str] | None = None
    required_checks: list[str] | None = None

    def __len__(self) -> int:
        return len(self.layouts)

    def row_of(self, episode: int) -> int:
        if self.episodes is None:
            return episode % len(self)
        try:
            return self.episodes.index(episode)
        except ValueError:
            raise KeyError(f"episode {episode} was not solved in this table") from None

    def select(self, episodes: list[int]) -> "EpisodeLayouts":
        """The layouts of the given episodes, in that order (a rank's share)."""
        rows = [self.row_of(k) for k in episodes]
        return dataclasses.replace(self, layouts=self.layouts.select(rows), meta=[dict(self.meta[i]) for i in rows],
                                   episodes=list(episodes))

    def fallback_count(self) -> int:
        return sum(bool(m["fallback"]) for m in self.meta)


def solve_episode_layouts(builder, num_episodes: int, verbose: bool = False,
                          episodes: list[int] | None = None) -> EpisodeLayouts:
    """Solves one layout per episode with the builder's placer settings (robot reachability included): partition
    ``k`` is filled as the pool fills an env (``min_unique_layouts_per_env`` ranked layouts) and episode ``k``
    takes its first.

    Args:
        builder: An ``ArenaEnvBuilder`` (not composed yet); its ``placer_params`` (seed, checks, fallbacks) apply.
        num_episodes: Episodes of the whole evaluation (= partitions of the pool).
        verbose: Print the solver's and the pool's per-batch lines (else only the diagnostics file has them).
        episodes: The episodes to solve (a rank's share); None: all. Each partition's layouts depend only on
            its own index, so a share solves exactly the layouts the whole table would have there.
    """
    from isaaclab_arena.relations.pooled_object_placer import PooledObjectPlacer

    names, keys = builder.placed_names_and_keys()
    if not names:
        raise ValueError(f"environment '{builder.arena_env.name}' places nothing by relations; there are no layouts "
                         "to evaluate on (give --placement_layouts, or add relations)")
    episodes = list(range(num_episodes)) if episodes is None else list(episodes)
    params = builder.placer_params
    if not verbose:
        params = dataclasses.replace(params, verbose=False,
                                     solver_params=dataclasses.replace(params.solver_params, verbose=False))
    pool = PooledObjectPlacer(builder.arena_env.get_placement_assets(), params, num_envs=num_episodes,
                              device=builder.cfg.device, output_dir=builder.cfg.output_dir)
    pool.diagnostics.verbose = verbose
    if episodes:
        pool.fill(torch.tensor(episodes, dtype=torch.long), "creation")
    ids = torch.tensor(episodes, dtype=torch.long, device=pool.device)
    index = torch.tensor([pool.object_names.index(n) for n in names], dtype=torch.long, device=pool.device)
    poses = pool.poses[ids, 0].index_select(1, index).cpu()
    seed = pool.placement_seed
    drawn = params.placement_seed is None
    layouts = PlacementLayouts(tuple(keys), poses[..., :3].contiguous(), poses[..., 3:].contiguous(),
                               sources=["solver"] * len(episodes))
    draws = pool.slot_draw[ids, 0].tolist()
    fallback = pool.slot_fallback[ids, 0].tolist()
    meta = [{"env_id": k, "draw_id": int(d), "placement_seed": seed, "fallback": bool(f),
             "layout": {"source": "solver", "file": None, "index": k, "line": None}}
            for k, d, f in zip(episodes, draws, fallback)]
    explanation = "; ".join(f.explanation for f in pool.diagnostics.fills if f.explanation)
    return EpisodeLayouts(layouts, meta, episodes, seed, drawn, explanation, pool.diagnostics.path,
                          list(pool.check_names), list(pool.required_check_names))


def recorded_episode_layouts(path: str) -> EpisodeLayouts:
    """The layouts of a JSONL recording, in file order; each keeps the recording's env id, draw id and seed
    (``validation.sampling``) when the line has them, and is a fallback when its pre-physics checks failed."""
    import os

    layouts = PlacementLayouts.from_episode_jsonl(path)
    lines = layouts.line_numbers or [None] * len(layouts)
    meta = []
    for i, block in enumerate(layouts.validation):
        sampling = block.get("sampling") or {}
        pre = block.get("pre_physics") or {}
        meta.append({"env_id": sampling.get("env_id"), "draw_id": sampling.get("draw_id"),
                     "placement_seed": sampling.get("seed"), "fallback": pre.get("passed") is False,
                     "layout": {"source": "recorded", "file": os.path.abspath(path), "index": i, "line": lines[i]}})
    return EpisodeLayouts(layouts, meta, None)


__all__ = ["EpisodeLayouts", "recorded_episode_layouts", "solve_episode_layouts"]

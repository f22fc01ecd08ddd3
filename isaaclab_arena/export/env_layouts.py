"""The layouts an export writes: what each env gets at its first reset, solved or recorded, as the runners give them.

:func:`export_arena_env_usd` builds the env config the way ``environment_runner.py`` does (``ArenaEnvBuilder``: the
same ``num_envs``, ``env_spacing``, ``placement_seed`` and ``placement_layouts`` meanings, nothing simulated), reads
the layout each env's first reset writes (:func:`first_reset_layouts`: the placement pool's first layout of each env,
or recorded layouts ``i % N`` in env order, plus the fixed poses of unplaced rigid objects) and exports them with
``layout_usd.export_layout_usd``. :func:`poses_from_results` and :func:`poses_from_layouts` turn a direct
``ObjectPlacer.place(...)`` or a ``PlacementLayouts`` into the same ``(positions, rotations)`` mappings.
"""

from __future__ import annotations

import os

import numpy as np

from isaaclab_arena.export.layout_usd import LayoutUsdExport, check_output_path, export_layout_usd


def poses_from_results(results) -> tuple[dict, dict]:
    """``(positions, rotations)`` (scene key -> ``(num_envs, 3)`` / ``(num_envs, 4)``) of ``ObjectPlacer.place()``
    results, one per env in env order. Refuses a failed result (``success`` False) naming its env."""
    results = sorted(results, key=lambda r: r.env_id)
    failed = [r.env_id for r in results if not r.success]
    if failed:
        raise ValueError(f"placement failed for envs {failed}; export only layouts that passed "
                         f"({results[[r.env_id for r in results].index(failed[0])].explanation})")
    if [r.env_id for r in results] != list(range(len(results))):
        raise ValueError(f"results must hold envs 0..{len(results) - 1} once each, got {[r.env_id for r in results]}")
    keys = list(results[0].positions)
    return ({k: np.array([r.positions[k] for r in results], np.float64) for k in keys},
            {k: np.array([r.rotations[k] for r in results], np.float64) for k in keys})


def poses_from_layouts(layouts, num_envs: int | None = None) -> tuple[dict, dict]:
    """``(positions, rotations)`` of ``PlacementLayouts`` as replay hands them out at the first reset: env ``i``
    gets layout ``i % len(layouts)`` (``num_envs`` default: one env per layout)."""
    n = len(layouts) if num_envs is None else int(num_envs)
    ids = [i % len(layouts) for i in range(n)]
    pos = layouts.positions.detach().cpu().double().numpy()[ids]
    rot = layouts.rotations.detach().cpu().double().numpy()[ids]
    return ({k: pos[:, j] for j, k in enumerate(layouts.object_names)},
            {k: rot[:, j] for j, k in enumerate(layouts.object_names)})


def first_reset_layouts(builder) -> tuple[dict, dict]:
    """``(positions, rotations)`` every env of a composed ``ArenaEnvBuilder`` gets at its first reset (scene key ->
    ``(num_envs, 3)`` / ``(num_envs, 4)`` float64, env-local); empty when nothing has a pose source."""
    import torch

    source = builder.pose_source
    if source is None:
        return {}, {}
    poses = source.peek(torch.arange(builder.cfg.num_envs)).detach().cpu().double().numpy()
    names = list(source.object_names)
    return ({k: poses[:, j, :3] for j, k in enumerate(names)}, {k: poses[:, j, 3:] for j, k in enumerate(names)})


def export_arena_env_usd(arena_env, path, *, num_envs: int | None = None, env_ids=None,
                         env_spacing: float | None = None, placement_seed: int | None = None,
                         placement_layouts: str | None = None, device: str = "cpu",
                         relative_asset_paths: bool = False, overwrite: bool = False) -> LayoutUsdExport:
    """Solves (or replays) the layouts of ``arena_env`` as ``environment_runner.py`` would and exports the first reset
    of every env, or of ``env_ids``, to ``path``. ``num_envs`` / ``env_spacing`` None: the environment's, else 1 env
    and the scene's spacing; ``placement_seed`` None draws one (recorded in the stage as ``arena:placement_seed``);
    ``placement_layouts``: a recorded JSONL (``PlacementLayouts.from_episode_jsonl``) replayed instead of solving."""
    path = check_output_path(path, overwrite)  # before anything is solved
    if placement_layouts is not None and not os.path.isfile(placement_layouts):
        raise FileNotFoundError(f"placement_layouts {placement_layouts}: no such file")
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg

    layouts_path = None if placement_layouts is None else os.path.abspath(placement_layouts)
    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(
        num_envs=num_envs, env_spacing=env_spacing, device=device, placement_seed=placement_seed,
        placement_layouts_path=layouts_path))
    builder.compose_manager_cfg()
    positions, rotations = first_reset_layouts(builder)
    seed = builder.placer.placement_seed if builder.placer is not None else builder.placer_params.placement_seed
    source = f"recorded layouts {layouts_path}" if layouts_path else f"solved, placement_seed {seed}"
    return export_layout_usd(arena_env, positions, rotations, path, num_envs=builder.cfg.num_envs, env_ids=env_ids,
                             env_spacing=builder.env_spacing,
                             member_indices=builder.member_indices, placement_seed=seed, source=source,
                             relative_asset_paths=relative_asset_paths, overwrite=overwrite)

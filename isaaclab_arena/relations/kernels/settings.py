"""Per-launch solver settings (Adam, iteration caps, checkpoints, what to write)."""

from __future__ import annotations

import warp as wp

HISTORY_EVERY = wp.constant(10)  # iterations between position-history snapshots


@wp.struct
class SolveSettings:
    seed: int  # placement seed (random streams derive from it, the env id and the draw id)
    init_tries: int  # initial draws per object
    max_iters: int  # iteration cap per candidate
    lr: float  # Adam learning rate (metres per step scale)
    beta1: float
    beta2: float
    eps: float
    margin: float  # metres the penalised terms push past their limit
    do_post: int  # 1: FaceTo headings and RandomAroundSolution after solving
    write_checks: int  # 1: write per-relation excess/cause and the check verdicts
    checkpoints: wp.array(dtype=int)  # cumulative iteration counts where the checks' thresholds are tested
    n_checkpoints: int
    conv_loss: float  # convergence_threshold: penalty-loss stop (guarded by the checks' thresholds)
    history_slots: int  # 0: no position history; else snapshots every HISTORY_EVERY iterations
    scene_bounds: int  # 1: candidates drawn by the kernels (an unrotated object keeps its scene bounds, so its
    #   interval may come from ``T.static_iv``); 0: given candidates, whose rotations may turn any object

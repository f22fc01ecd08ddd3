"""Settings of the relation solver (lengths in metres)."""

from __future__ import annotations

from dataclasses import dataclass, field

from isaaclab_arena.assets.collision_mode import CollisionMode
from isaaclab_arena.utils import checks
from isaaclab_arena.relations.optimization.losses.relation_loss_strategies import (
    NoCollisionLossStrategy,
    default_strategies,
)


def available_cores() -> int:
    """CPU cores this process may run on."""
    import os

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # platforms without affinity
        return max(1, os.cpu_count() or 1)


@dataclass
class RelationSolverParams:
    """Solver settings.

    Attributes:
        max_iters: Iteration cap per candidate (>= 0).
        checkpoint_iters: Cumulative iteration counts where a solve may be inspected or stopped; positive,
            strictly increasing, unique; capped by ``max_iters`` in ``get_checkpoints()``.
        lr: Optimiser learning rate (metres per step scale).
        convergence_threshold: A candidate stops once its penalty loss (slope x weight x positive
            violation, summed over the penalised terms: pair overlap with the solver clearance, NotNextTo,
            cylindrical limits, relations to a movable parent) is below this AND every penalised term
            already holds at the checks' thresholds (no clearance, NotNextTo tolerance), so a low loss
            never stops a layout the checks reject. 0 disables this stop (the solver-clearance exit and
            the checkpoint stops remain).
        verbose: Print one ``[solver]`` line per solve call: candidates, how many converged (stopped before
            ``max_iters``), iterations median/max, final loss median/max, wall time in ms (one reduction of
            the batch's tensors; on CUDA one host read per call).
        profile: Print one ``[solver profile]`` line per solve call: wall time, batch size, pair count,
            per-kernel times and ms/iter (the iterate kernel's time over the largest iteration count); on
            CUDA the launches are synchronised to time them.
        save_position_history: Keep position snapshots every 10 iterations:
            ``PlacementCandidateBatch.position_history`` / ``RelationSolver.last_position_history``,
            (B, max_iters // 10 + 1, n, 3), NaN after a candidate stopped. Off: no buffer, no writes.
        collision_mode: Default no-overlap geometry of every asset that does not set its own: ``bbox`` (boxes,
            turned about Z with the object) or ``mesh`` (sphere covers against collision meshes; yaw only).
        num_spheres: Most spheres covering a MESH object's collision mesh (seeded, deterministic).
        clearance_m: Pairwise clearance between non-anchor objects (>= 0).
        strategies: Relation class -> loss strategy; an unregistered relation type raises ``ValueError``.
        collision_strategy: Slope of the pairwise no-overlap penalty.
        beta1, beta2, eps: Adam moment decay rates and denominator guard of the per-candidate optimiser.
        penalty_margin_m: Extra depth (metres) the penalised terms push past their limit, so that a
            candidate's exit test (every violation <= 0) fires after a finite number of steps.
        init_attempts: Initial samples drawn per object (the first one that is free of overlap with the
            objects placed before it is kept, else the least overlapping one). The draws stop at the first
            free one, so more attempts cost little where free space is easy to find and spare optimiser
            iterations where it is not (32 instead of 8 made crowded14 and boxes10 faster: fewer candidates
            left to the optimiser; ``scripts/bench_placement.py --scenes crowded14 boxes10`` measures them).
        cpu_threads: On the CPU, batches of 256 or more candidates are split over this many threads (each
            candidate is solved by one thread from its own random stream, so the layouts are the same for
            every value); None (the default) uses the cores this process may run on.
    """

    max_iters: int = 600
    checkpoint_iters: tuple[int, ...] = (25, 50, 100, 200, 400, 600)
    lr: float = 0.01
    convergence_threshold: float = 1e-4
    verbose: bool = True
    profile: bool = False
    save_position_history: bool = False
    collision_mode: CollisionMode = CollisionMode.BBOX
    num_spheres: int = 30
    clearance_m: float = 0.01
    strategies: dict = field(default_factory=default_strategies)
    collision_strategy: NoCollisionLossStrategy = field(default_factory=NoCollisionLossStrategy)
    beta1: float = 0.5
    beta2: float = 0.99
    eps: float = 1e-8
    penalty_margin_m: float = 1e-3
    init_attempts: int = 32
    cpu_threads: int | None = None

    def __post_init__(self):
        owner = "RelationSolverParams"
        self.collision_mode = checks.enum_member(CollisionMode, self.collision_mode, owner, "collision_mode")
        self.max_iters = checks.integer(self.max_iters, owner, "max_iters", minimum=0)
        cps = tuple(self.checkpoint_iters)
        for k, c in enumerate(cps):
            checks.integer(c, owner, f"checkpoint_iters[{k}]", minimum=1)
        if not cps or any(b <= a for a, b in zip(cps, cps[1:])):
            raise ValueError(f"{owner}: checkpoint_iters must be positive, strictly increasing and unique, got {cps!r}")
        self.checkpoint_iters = cps
        for name in ("lr", "convergence_threshold", "clearance_m", "eps", "penalty_margin_m"):
            setattr(self, name, checks.number(getattr(self, name), owner, name, minimum=0.0))
        for name in ("beta1", "beta2"):
            setattr(self, name, checks.number(getattr(self, name), owner, name, minimum=0.0, maximum=1.0,
                                              strict_maximum=True))
        for name in ("init_attempts", "num_spheres"):
            setattr(self, name, checks.integer(getattr(self, name), owner, name, minimum=1))
        if self.cpu_threads is None:
            self.cpu_threads = available_cores()
        self.cpu_threads = checks.integer(self.cpu_threads, owner, "cpu_threads", minimum=1)
        for name in ("verbose", "profile", "save_position_history"):
            checks.flag(getattr(self, name), owner, name)
        checks.instance_of(self.collision_strategy, NoCollisionLossStrategy, owner, "collision_strategy",
                           "a NoCollisionLossStrategy")

    def get_checkpoints(self) -> tuple[int, ...]:
        """Checkpoints capped by ``max_iters`` (``max_iters`` itself is always the last one)."""
        cps = [c for c in self.checkpoint_iters if c < self.max_iters]
        return tuple(cps + [self.max_iters]) if self.max_iters > 0 else ()

    def strategy_for(self, relation_type: type):
        try:
            return self.strategies[relation_type]
        except KeyError:
            raise ValueError(f"no loss strategy registered for {relation_type.__name__}; add one to "
                             "RelationSolverParams.strategies") from None

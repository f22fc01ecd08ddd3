"""Settings of the object placer and the pooled placer."""

from __future__ import annotations

from dataclasses import dataclass, field

from isaaclab_arena.relations.relation_solver_params import RelationSolverParams
from isaaclab_arena.utils import checks


@dataclass
class ReachabilityConfig:
    """IK reachability settings (used by ``ik_reachable`` when an embodiment has a cuRobo config)."""

    embodiment: object | None = None
    grasp_z_offset_m: float = 0.02
    ik_position_threshold_m: float = 0.01
    ik_rotation_threshold_rad: float = 0.1


@dataclass
class ObjectPlacerParams:
    """Placer settings.

    Attributes:
        solver_params: Solver settings.
        random_yaw_init: Draw a uniform [-pi, pi) yaw about world Z for every non-anchor (not optimised).
        max_placement_attempts: Candidates solved and ranked per result; also caps pool refill batches.
        apply_positions_to_objects: After a successful single-env ``ObjectPlacer.place()``, write each
            placed asset's solved pose to ``asset.placed_pose`` (``initial_pose`` stays unset).
        verbose: Print progress and validation failures.
        placement_seed: Seed of placement randomness; None uses the current RNG state.
        on_relation_z_tolerance_m: Valid On Z band is (top - tol, top + clearance_m + tol], metres.
        resolve_on_reset: Draw a fresh pooled layout at every reset.
        min_unique_layouts_per_env: The pool stores this many layouts per env.
        allow_best_loss_fallbacks: Fill slots with best-ranked failing candidates when valid ones run out.
        enabled_checks: Checks that run; None runs every registered check.
        required_checks: Checks that must pass; None requires every enabled check.
        reachability_config: IK settings.
        debug_visualize: Open the debug viewer.
        debug_visualize_output_path: Write the debug recording here (headless runs).
        max_objects: Most placed objects (assets placed by relations) a scene may have; a larger scene is
            refused when it is compiled, before anything grows with the object count (its no_overlap pairs
            grow as n^2). None: no limit. See "Budgets" in docs/SOLVER.md.
        memory_budget_gb: Most memory (GB, 1e9 bytes) the compile and one solve batch may be estimated to
            allocate, checked before allocating (host; on CUDA also the device); None: half the memory
            available when the scene is compiled (``psutil`` or /proc/meminfo; ``torch.cuda.mem_get_info``).
    """

    solver_params: RelationSolverParams = field(default_factory=RelationSolverParams)
    random_yaw_init: bool = False
    max_placement_attempts: int = 10
    apply_positions_to_objects: bool = True
    verbose: bool = False
    placement_seed: int | None = None
    on_relation_z_tolerance_m: float = 5e-3
    resolve_on_reset: bool = True
    min_unique_layouts_per_env: int = 5
    allow_best_loss_fallbacks: bool = True
    enabled_checks: list[str] | None = None
    required_checks: list[str] | None = None
    reachability_config: ReachabilityConfig = field(default_factory=ReachabilityConfig)
    debug_visualize: bool = False
    debug_visualize_output_path: str | None = None
    max_objects: int | None = 2000
    memory_budget_gb: float | None = None

    def __post_init__(self):
        owner = "ObjectPlacerParams"
        for name in ("max_placement_attempts", "min_unique_layouts_per_env"):
            setattr(self, name, checks.integer(getattr(self, name), owner, name, minimum=1))
        self.placement_seed = checks.integer(self.placement_seed, owner, "placement_seed", optional=True)
        self.max_objects = checks.integer(self.max_objects, owner, "max_objects", optional=True, minimum=1)
        self.memory_budget_gb = checks.number(self.memory_budget_gb, owner, "memory_budget_gb", optional=True,
                                              minimum=0.0, strict_minimum=True)
        self.on_relation_z_tolerance_m = checks.number(self.on_relation_z_tolerance_m, owner,
                                                       "on_relation_z_tolerance_m", minimum=0.0)
        for name in ("random_yaw_init", "apply_positions_to_objects", "verbose", "resolve_on_reset",
                     "allow_best_loss_fallbacks", "debug_visualize"):
            checks.flag(getattr(self, name), owner, name)
        for name in ("enabled_checks", "required_checks"):
            v = getattr(self, name)
            if v is not None:
                if isinstance(v, str) or not all(isinstance(c, str) for c in v):
                    raise ValueError(f"{owner}: {name} must be a list of check names, got {v!r}")
                setattr(self, name, list(v))
        if self.enabled_checks is not None and self.required_checks is not None:
            extra = sorted(set(self.required_checks) - set(self.enabled_checks))
            if extra:
                raise ValueError(f"{owner}: required_checks {extra} are not in enabled_checks {self.enabled_checks}")

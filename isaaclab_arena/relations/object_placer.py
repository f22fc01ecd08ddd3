"""``ObjectPlacer``: the public entry point of placement. It compiles a scene once, then runs the stages on
candidate batches — solve (generate, optimise, modifiers and evaluation, fused), validate, rank — and
``place()`` returns the best layout per env.

A layout is a pure function of (scene, placement seed, env id, draw id): batch size and env count never
change it. Positions are env-local metres, rotations xyzw.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field

import torch

from isaaclab_arena.relations.compiler.compile_problem import compile_placement_problem, placement_signature
from isaaclab_arena.relations.extensions import (
    PlacementExtension,
    checked_extensions,
    extension_validators,
    view_opener,
)
from isaaclab_arena.relations.solving.evaluation import evaluate_poses
from isaaclab_arena.relations.kinds.not_next_to import keep_out_notices
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.relations.solving.placement_candidate_generator import as_id_tensor, checked_ids
from isaaclab_arena.relations.diagnostics.placement_diagnostics import (
    ClosestMiss,
    FailureTally,
    batch_diagnostics,
    explanation_text,
)
from isaaclab_arena.relations.compiler.placement_problem import PlacementProblem
from isaaclab_arena.relations.compiler.placement_restrictions import PlacementConfigError
from isaaclab_arena.relations.solving.ranking import best_per_env
from isaaclab_arena.relations.relation_solver import RelationSolver
from isaaclab_arena.relations.validation.results import ValidatedBatch
from isaaclab_arena.relations.validation.runner import PlacementValidationRunner
from isaaclab_arena.relations.validation.types import PlacementCheck
from isaaclab_arena.utils.pose import Pose

logger = logging.getLogger(__name__)

#: The check that RequiresReachability objects need.
REACHABILITY_CHECK = PlacementCheck.IK_REACHABLE.value


@dataclass
class PlacementResult:
    """The best-ranked candidate of one env.

    Attributes:
        env_id: Environment.
        success: Every required check passed (callers must check it before using the poses).
        positions / rotations: Object name -> env-local origin (m) / xyzw quaternion.
        loss: Solver loss of the candidate.
        check_results: Check -> verdict.
        sample_id: Draw index of the candidate.
        rejections: Why no candidate of this env passed (empty on success): every required relation, no_overlap
            pair or check that failed, with the smallest violation (metres) any of the env's candidates had,
            largest first (the same ``ClosestMiss`` entries the pool's error lists).
        explanation: The same as one text (empty on success), as the pool's error words it.
    """

    env_id: int
    success: bool
    positions: dict[str, tuple[float, float, float]]
    rotations: dict[str, tuple[float, float, float, float]]
    loss: float
    check_results: dict[str, bool]
    sample_id: int = 0
    rejections: list[ClosestMiss] = field(default_factory=list)
    explanation: str = ""


class ObjectPlacer:
    """Places relation-driven assets for every env.

    Args:
        params: Placer settings; ``placement_seed=None`` draws one seed from torch's RNG at construction
            (``self.placement_seed``), so the layouts of one placer stay consistent.
        extensions: The optional backends this placer uses (``PlacementExtension``: extra checks, the debug
            view); None: the default set, ``isaaclab_arena.placement_extensions.default_extensions()`` (the
            ``ik_reachable`` check, the cuRobo IK backend where it imports, the Rerun debug view); ``[]``: none.
    """

    def __init__(self, params: ObjectPlacerParams | None = None,
                 extensions: list[PlacementExtension] | tuple[PlacementExtension, ...] | None = None):
        self.params = params or ObjectPlacerParams()
        if extensions is None:
            # the composition root of the default set (a plain import: it imports the backends, none imports it)
            from isaaclab_arena.placement_extensions import default_extensions

            extensions = default_extensions()
        #: The extensions this placer was built with (a tuple; the default set when none were given).
        self.extensions = checked_extensions(extensions)
        for ext in self.extensions:
            if ext.setup is not None:
                ext.setup()
        solver_params = self.params.solver_params
        #: The debug view (None unless a debug field is set); it logs every batch ``place_problem`` validates.
        self.debug_view = None
        if self.params.debug_visualize or self.params.debug_visualize_output_path:
            open_view = view_opener(self.extensions)
            if open_view is None:
                raise PlacementConfigError(
                    "ObjectPlacerParams.debug_visualize / debug_visualize_output_path is set, but none of this "
                    f"placer's extensions {[e.name for e in self.extensions]} opens a debug view; pass one that does "
                    "(isaaclab_arena.debug.extension.DEBUG_VIEW) or leave extensions=None for the default set")
            self.debug_view = open_view(self.params)
            # the view plots the loss per iteration from the snapshots (the flag does not change the solve)
            solver_params = dataclasses.replace(solver_params, save_position_history=True)
        seed = self.params.placement_seed
        self.placement_seed = int(seed) if seed is not None else int(torch.randint(0, 2**31 - 1, (1,)).item())
        self.solver = RelationSolver(solver_params)
        self._runner: PlacementValidationRunner | None = None
        self._problems: dict[tuple, PlacementProblem] = {}
        self._printed_notices: list[str] = []

    @property
    def runner(self) -> PlacementValidationRunner:
        """Validators chosen once from the built-in checks, the extensions' and registered validators, and the
        enabled/required checks."""
        if self._runner is None:
            self._runner = PlacementValidationRunner.from_params(self.params, extension_validators(self.extensions))
        return self._runner

    def compile(self, assets, num_envs: int, device: str = "cpu") -> PlacementProblem:
        """The compiled scene (cached until the assets, relations or settings change)."""
        assets = list(assets)
        key = placement_signature(assets, num_envs, self.params, device)
        problem = self._problems.get(key)
        if problem is None:
            if len(self._problems) > 8:
                self._problems.clear()
            problem = compile_placement_problem(assets, num_envs, self.placement_seed, self.params, device)
            self._check_reachability_robot(assets, problem)
            self._problems[key] = problem
            notices = keep_out_notices(assets)
            if notices and notices != self._printed_notices and self.solver.params.verbose:  # the solver's console
                print("\n".join(notices), flush=True)
                self._printed_notices = notices
            if self.debug_view is not None:
                self.debug_view.on_compile(problem, assets)
        return problem

    def _check_reachability_robot(self, assets, problem: PlacementProblem) -> None:
        """A scene with ``RequiresReachability`` objects has its ``ik_reachable`` check run by a robot: the one in
        ``reachability_config.embodiment``, else the embodiment among ``assets`` (an environment's
        ``get_placement_assets()`` holds it), wired into this placer's params. Refuses (``PlacementConfigError``)
        a placer whose check would silently not run: no robot, or one without a kinematic model, while
        ``ik_reachable`` is enabled (``enabled_checks`` None or naming it)."""
        if not problem.reachability_targets:
            return
        config = self.params.reachability_config
        if config.embodiment is None:
            robots = [a for a in assets if a.is_embodiment]
            if robots:
                self.params = dataclasses.replace(
                    self.params, reachability_config=dataclasses.replace(config, embodiment=robots[0]))
                self._runner = None  # chosen again with the robot
        enabled = self.params.enabled_checks
        if enabled is not None and REACHABILITY_CHECK not in enabled:
            return
        if REACHABILITY_CHECK not in self.runner.checks:
            robot = self.params.reachability_config.embodiment
            if REACHABILITY_CHECK not in extension_validators(self.extensions):
                why = (f"none of this placer's extensions {[e.name for e in self.extensions]} provides it: pass "
                       "isaaclab_arena.reachability.extension.REACHABILITY among ObjectPlacer's extensions (or leave "
                       "extensions=None for the default set)")
            elif robot is None:
                why = ("no robot is given: pass the environment's embodiment among the placer's assets "
                       "(IsaacLabArenaEnvironment.get_placement_assets() holds it) or in "
                       "ObjectPlacerParams.reachability_config.embodiment")
            else:
                why = f"embodiment '{robot.name}' has no kinematic model to check it with"
            raise PlacementConfigError(f"objects {list(problem.reachability_targets)} require reachability "
                                       f"(RequiresReachability), but {REACHABILITY_CHECK} cannot run: {why}; or leave "
                                       f"{REACHABILITY_CHECK} out of ObjectPlacerParams.enabled_checks")

    def validate(self, problem: PlacementProblem, candidates) -> ValidatedBatch:
        """The validate stage on an evaluated batch."""
        runner = self.runner
        needs_objects = runner.custom or runner.expensive
        return ValidatedBatch(candidates, runner.validate(candidates, problem.collision_objects if needs_objects
                                                          else None))

    def place_problem(self, problem: PlacementProblem, env_ids: torch.Tensor, draw_ids: torch.Tensor) -> ValidatedBatch:
        """Solve -> validate for an already-compiled ``problem`` (the hot path). ``env_ids`` / ``draw_ids``:
        (B,) int64 on the problem's device."""
        vb = self.validate(problem, self.solver.solve(problem, env_ids, draw_ids))
        if self.debug_view is not None:
            self.debug_view.on_batch(vb)
        return vb

    def place_batch(self, assets, env_ids, draw_ids, num_envs: int, device: str = "cpu",
                    problem: PlacementProblem | None = None) -> ValidatedBatch:
        """Solves and validates candidates (env_ids[k], draw_ids[k]) of the scene ``assets``; ``problem``: what
        :meth:`compile` returned for them just before (a caller placing several batches of one compile skips the
        cache's look-up, which reads every relation)."""
        if problem is None:
            problem = self.compile(assets, num_envs, device)
        env_ids, draw_ids = checked_ids(problem, env_ids, draw_ids)
        vb = self.place_problem(problem, env_ids, draw_ids)
        if self.params.verbose:
            print("\n".join(batch_diagnostics(vb).console_lines()), flush=True)
        return vb

    def validate_poses(self, assets, positions, rotations=None, env_ids=None, num_envs: int = 1,
                       device: str = "cpu") -> ValidatedBatch:
        """Runs the enabled checks on given layouts (no solving): ``positions`` (B, n, 3) env-local metres and
        ``rotations`` (B, n, 4) xyzw (identity when None) in the order of the compiled ``object_names``, or a
        dict name -> (x, y, z) for a single layout."""
        problem = self.compile(assets, num_envs, device)
        names = problem.object_names
        if isinstance(positions, dict):
            missing = [n for n in names if n not in positions]
            if missing:
                raise ValueError(f"validate_poses: positions lack placed objects {missing}; expected {names}")
            positions = [[positions[n] for n in names]]
            if isinstance(rotations, dict):
                rotations = [[rotations.get(n, (0.0, 0.0, 0.0, 1.0)) for n in names]]
        pos = torch.as_tensor(positions, dtype=torch.float32, device=device).reshape(-1, len(names), 3)
        b = pos.shape[0]
        if rotations is None:
            rot = torch.zeros((b, len(names), 4), dtype=torch.float32, device=device)
            rot[..., 3] = 1.0
        else:
            rot = torch.as_tensor(rotations, dtype=torch.float32, device=device).reshape(b, len(names), 4)
        env = (torch.zeros(b, dtype=torch.int64, device=device) if env_ids is None
               else as_id_tensor(env_ids, device, "env_ids"))
        return self.validate(problem, evaluate_poses(problem, env, pos, rot))

    def place(self, assets, num_envs: int = 1, device: str = "cpu", draw_offset: int = 0) -> list[PlacementResult]:
        """``max_placement_attempts`` candidates per env, ranked; the best one per env as a result.

        With ``apply_positions_to_objects`` (the default) and ``num_envs == 1``, a successful result is written
        back to the placed assets as ``asset.placed_pose`` (env-local, metres, xyzw; see
        ``apply_placement_result``). Results of several envs, or a failed one, leave the assets untouched.

        Raises ``PlacementConfigError`` (a ``ValueError``) only for scenes refused before solving (restrictions,
        the feasibility pre-check, budgets); a solved env that fails a required check is a result with
        ``success=False`` and its ``explanation``, never an exception.
        """
        assets = list(assets)
        n = self.params.max_placement_attempts
        env_ids = torch.arange(num_envs, device=device).repeat_interleave(n)
        draw_ids = torch.arange(n, device=device).repeat(num_envs) + int(draw_offset)
        vb = self.place_batch(assets, env_ids, draw_ids, num_envs, device)
        envs, best = best_per_env(vb)
        sub = vb.select(best)
        passed = sub.passed.cpu().tolist()
        tally = FailureTally()
        if not all(passed):
            tally.add(vb)
        results = []
        for k, cand in enumerate(sub.candidates):
            misses, kept = ([], []) if passed[k] else tally.explain([int(envs[k])])
            results.append(PlacementResult(
                env_id=int(envs[k]), success=passed[k], positions=cand.positions, rotations=cand.rotations,
                loss=cand.loss, check_results=cand.check_results, sample_id=cand.sample_id, rejections=misses,
                explanation="" if passed[k] else f"env {int(envs[k])}: {explanation_text(misses, kept)}"))
        if self.params.apply_positions_to_objects and num_envs == 1:
            apply_placement_result(assets, results[0])
        return results


def apply_placement_result(assets, result: PlacementResult) -> list[str]:
    """Writes a successful result's poses to the placed assets' ``placed_pose``; returns their names.

    ``placed_pose`` (not ``initial_pose``) holds the solved pose: a relation-placed asset must not have an
    initial pose, so the scene can be placed again (by ``place()`` or the pooled placer) unchanged. A
    builder spawning the assets at fixed poses reads ``asset.placed_pose`` when it is set. A failed result
    writes nothing (callers must check ``success``).
    """
    if not result.success:
        return []
    written = []
    for asset in assets:
        if asset.name in result.positions:
            asset.placed_pose = Pose(tuple(result.positions[asset.name]), tuple(result.rotations[asset.name]))
            written.append(asset.name)
    return written

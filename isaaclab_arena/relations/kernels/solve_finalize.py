"""FaceTo headings, RandomAroundSolution and the final evaluation (loss, per-relation violations, verdicts)."""

from __future__ import annotations

import warp as wp

from isaaclab_arena.relations.kernels.evaluate import (
    evaluate_candidate,
    evaluate_candidate_general,
    evaluate_candidate_rule,
)
from isaaclab_arena.relations.kernels.geometry import (
    candidate_rng,
    rotated_offsets,
    rpy_quat,
)
from isaaclab_arena.relations.kernels.poses import face_to_update
from isaaclab_arena.relations.kernels.projection import project
from isaaclab_arena.relations.kernels.settings import SolveSettings
from isaaclab_arena.relations.kernels.tables import (
    OF_RANDOM_POS,
    OF_RANDOM_ROT,
    OI_ORDER,
    OI_RANDOM,
    CandidateState,
    SceneTables,
    SolveOutputs,
)
from isaaclab_arena.relations.kinds.dispatch import FACE_TO, track_kind_sources

FACE_ROUNDS = wp.constant(32)  # most heading / projection rounds after solving (FaceTo scenes)


def _finalize_kernel(general: bool, plain: bool = False, rule: bool = False):
    """The finalize kernel; ``general``: of scenes with OBB / MESH pairs or MESH support terms; ``plain``: of plain
    scenes (``tables.plain_scene``: no FaceTo heading, no RandomAroundSolution), compiled without those steps;
    ``rule``: of scenes whose pairs follow the rule (``kernels/pair_rule.py``) (a module of its own per variant,
    each keyed on the kinds' sources)."""
    module = __name__ + ("_general" if general else "") + ("_plain" if plain else "") + ("_rule" if rule else "")
    track_kind_sources(module)
    evaluate = evaluate_candidate_general if general else (evaluate_candidate_rule if rule else evaluate_candidate)

    @wp.kernel(enable_backward=False, module=module)
    def finalize_kernel(
        # Model:
        T: SceneTables,
        # Data in/out (state of candidate b):
        S: CandidateState,
        # Data in:
        P: SolveSettings,
        env_ids: wp.array(dtype=wp.int64),
        draw_ids: wp.array(dtype=wp.int64),
        # Data out:
        O: SolveOutputs,
        # Candidates [tid * rows, min((tid + 1) * rows, count)) per thread (``launch.py``):
        rows: int,
        count: int,
    ):
        """FaceTo headings, RandomAroundSolution, then the final evaluation: with ``P.write_checks`` every
        relation's violation and cause and the built-in checks' verdicts of the final poses, and the loss (of
        the solved poses, before RandomAroundSolution offsets, which ranking must not penalise)."""
        b0 = wp.tid() * rows
        for b in range(b0, wp.min(b0 + rows, count)):
            if O.iters[b] < 0:  # the optimisation loop was skipped (no candidate of the launch needed it)
                O.iters[b] = 0
            e = int(env_ids[b])
            n = T.n_mov
            st = candidate_rng(P.seed ^ 0x5BD1E995, e, int(draw_ids[b]))
            has_face = T.kind_start[FACE_TO + 1] > T.kind_start[FACE_TO]
            solved_loss = float(-1.0)
            if not wp.static(plain) and P.do_post != 0:
                if has_face:
                    # final headings toward the solved targets, each followed by a projection with the refit bounds,
                    # until the projection no longer moves anything (then the headings are those of the final
                    # positions to within 1e-7 m of motion, and the bounds the checks see fit the supports)
                    for rnd in range(FACE_ROUNDS):
                        face_to_update(T, S, b, e)
                        moved = float(0.0)
                        for k in range(n):
                            i = T.obj_i[k][OI_ORDER]
                            x0 = S.x[b, i]
                            st = project(T, S, b, e, i, 0, 0, st, P.scene_bounds)
                            moved = wp.max(moved, wp.length(S.x[b, i] - x0))
                        if moved <= 1.0e-7:
                            break
            # one evaluation call site (so that it inlines): step 0 scores the solved layout when RandomAroundSolution
            # offsets follow (ranking uses the solved layout's loss: the random offsets are not the solution's
            # fault), then draws the offsets; step 1 judges the final poses
            step = int(1)
            if not wp.static(plain) and P.do_post != 0:
                for i in range(n):
                    if T.obj_i[i][OI_RANDOM] != 0:
                        step = 0
            loss = float(0.0)
            while step < 2:
                value = wp.static(evaluate)(T, S, b, e, P.write_checks * step, O)
                if not wp.static(plain) and step == 0:
                    solved_loss = value
                    for i in range(n):
                        if T.obj_i[i][OI_RANDOM] != 0:
                            of = T.obj_f[i]
                            d = wp.vec3(wp.randf(st, -1.0, 1.0) * of[OF_RANDOM_POS],
                                        wp.randf(st, -1.0, 1.0) * of[OF_RANDOM_POS + 1],
                                        wp.randf(st, -1.0, 1.0) * of[OF_RANDOM_POS + 2])
                            S.x[b, i] = S.x[b, i] + d
                            dq = rpy_quat(wp.randf(st, -1.0, 1.0) * of[OF_RANDOM_ROT],
                                          wp.randf(st, -1.0, 1.0) * of[OF_RANDOM_ROT + 1],
                                          wp.randf(st, -1.0, 1.0) * of[OF_RANDOM_ROT + 2])
                            q = wp.normalize(dq * S.rot[b, i])
                            S.rot[b, i] = q
                            lo, hi = rotated_offsets(q, T.local_lo[e, i], T.local_hi[e, i])
                            S.olo[b, i] = lo
                            S.ohi[b, i] = hi
                else:
                    loss = value
                step += 1
            if solved_loss >= 0.0:
                loss = solved_loss
            O.loss[b] = loss

    return finalize_kernel


#: Scenes whose pairs are all axis-aligned boxes.
finalize_kernel = _finalize_kernel(False)
#: Scenes with OBB / MESH pairs or MESH support terms.
finalize_kernel_general = _finalize_kernel(True)
#: Plain scenes.
finalize_kernel_plain = _finalize_kernel(False, plain=True)
#: Scenes whose pairs follow the rule (large scenes of axis-aligned boxes).
finalize_kernel_rule = _finalize_kernel(False, rule=True)
#: Plain scenes whose pairs follow the rule.
finalize_kernel_plain_rule = _finalize_kernel(False, plain=True, rule=True)

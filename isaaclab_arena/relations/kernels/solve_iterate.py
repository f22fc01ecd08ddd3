"""The per-candidate projected-Adam loop (the solve stage)."""

from __future__ import annotations

import warp as wp

from isaaclab_arena.relations.kernels.evaluate import passes
from isaaclab_arena.relations.kernels.penalties import penalties, penalties_general, penalties_rule
from isaaclab_arena.relations.kernels.poses import face_to_update
from isaaclab_arena.relations.kernels.projection import project, repair_shift
from isaaclab_arena.relations.kernels.sampling import kick, kick_general, kick_rule
from isaaclab_arena.relations.kernels.settings import HISTORY_EVERY, SolveSettings
from isaaclab_arena.relations.kernels.tables import (
    FLAG_MOVABLE_PARENT,
    OI_FLAGS,
    OI_ORDER,
    REDRAW_IN_INTERVAL,
    REDRAW_NONE,
    CandidateState,
    SceneTables,
    SolveOutputs,
)
from isaaclab_arena.relations.kinds.dispatch import FACE_TO, track_kind_sources

KICK_FROM_ITER = wp.constant(100)  # first checkpoint (iterations) where a stuck candidate is restarted
KICK_FROM_ITER_GENERAL = wp.constant(25)  # the same in scenes with OBB / MESH pairs or MESH support terms


def _iterate_kernel(general: bool, rule: bool = False):
    """The optimisation kernel; ``general``: of scenes with OBB / MESH pairs or MESH support terms, ``rule``: of
    scenes whose pairs follow the rule (``kernels/pair_rule.py``) (its own module per variant, each keyed on the
    kinds' sources; box scenes keep the penalty function inlined)."""
    module = __name__ + ("_general" if general else "") + ("_rule" if rule else "")
    track_kind_sources(module)
    pen = penalties_general if general else (penalties_rule if rule else penalties)
    restart = kick_general if general else (kick_rule if rule else kick)

    @wp.kernel(enable_backward=False, module=module)
    def iterate_kernel(
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
        """Projected Adam on candidate b until its own exit test passes.

        Exit tests, in order, each iteration: every penalised violation <= 0 at the solver's thresholds
        (clearance included); the penalty loss below ``P.conv_loss`` (convergence_threshold) AND every penalised
        term passing at the checks' thresholds; at a checkpoint, the checks' thresholds alone. A checkpoint from
        KICK_FROM_ITER on whose checks still fail restarts the candidate (``kick``: one object re-drawn from the
        candidate's seeded stream, everything re-projected, Adam moments reset). With ``P.history_slots`` > 0,
        slot k of ``O.history`` gets the positions after 10 k iterations."""
        b0 = wp.tid() * rows
        for b in range(b0, wp.min(b0 + rows, count)):
            n = T.n_mov
            if O.iters[b] < 0:  # penalty-free initial candidate of an init_exact scene: nothing to solve
                O.iters[b] = 0
                if P.history_slots > 0:
                    for i in range(n):
                        O.history[b, 0, i] = S.x[b, i]
                continue
            e = int(env_ids[b])
            zero = wp.vec3(0.0)
            has_face = T.kind_start[FACE_TO + 1] > T.kind_start[FACE_TO]
            # Each pass: FaceTo headings from the current positions (bounds refit), projection (skipped before the
            # first step of a scene without FaceTo: the initial candidate is already projected), penalties and
            # exit tests, then one Adam step. The projection has one call site, so that it inlines.
            it = int(0)
            cp = int(0)
            b1t = float(1.0)
            b2t = float(1.0)
            kicked = int(0)
            kicked_obj = int(-1)
            kick_draw = int(0)
            st_kick = wp.uint32(0)
            kick_from = wp.static(KICK_FROM_ITER_GENERAL if general else KICK_FROM_ITER)
            while True:
                if has_face:
                    # FaceTo is re-evaluated during optimisation: the penalties, the exit tests and the projections
                    # see the bounds of the current headings
                    face_to_update(T, S, b, e)
                if it > 0 or has_face or kicked != 0:
                    for k in range(n):
                        i = T.obj_i[k][OI_ORDER]
                        # after a restart, as in initial sampling: the restarted object is drawn anew over what its
                        # relations allow, and a movable parent that an object's relation cannot be met beside (e.g.
                        # NextTo leaving the table) is shifted, then both re-projected (one projection call site)
                        repair = kicked != 0 and (T.obj_i[i][OI_FLAGS] & FLAG_MOVABLE_PARENT) != 0
                        target = i
                        pstep = int(0)
                        while pstep >= 0:
                            redraw = int(REDRAW_NONE)
                            if kicked != 0 and pstep == 0 and i == kicked_obj and kick_draw != 0:
                                redraw = REDRAW_IN_INTERVAL
                            st_kick = project(T, S, b, e, target, 0, redraw, st_kick, P.scene_bounds)
                            nxt = int(-1)
                            if pstep == 0 and repair:
                                target = repair_shift(T, S, b, e, i)
                                if target >= 0:
                                    nxt = 1
                            elif pstep == 1:
                                target = i
                                nxt = 2
                            pstep = nxt
                kicked = 0
                for i in range(n):
                    S.g[b, i] = zero
                vmax, ploss = wp.static(pen)(T, S, b, e, 0, P.margin, 1)
                if P.history_slots > 0:
                    if it % HISTORY_EVERY == 0:
                        for i in range(n):
                            O.history[b, it // HISTORY_EVERY, i] = S.x[b, i]
                if vmax <= 0.0 or it >= P.max_iters:
                    break
                # the checks' thresholds are tested when the penalty loss is below convergence_threshold (a low loss
                # alone never stops a candidate the checks would reject) and at each checkpoint
                check = ploss < P.conv_loss
                at_cp = False
                if cp < P.n_checkpoints:
                    if it >= P.checkpoints[cp]:
                        cp += 1
                        check = True
                        at_cp = True
                if check:
                    vc, lc = wp.static(pen)(T, S, b, e, 1, 0.0, 0)
                    if passes(vc, T.slack):
                        break
                    # a candidate still failing at a late checkpoint is in a local minimum (e.g. a NextTo pair
                    # straddling a third object): restart the worst pair's object from a fresh draw
                    if at_cp and it >= kick_from:
                        kicked_obj, st_kick, kick_draw = wp.static(restart)(
                            T, S, b, e, P.seed ^ (0x68E31DA4 + 7919 * cp), int(draw_ids[b]))
                        if kicked_obj >= 0:
                            kicked = 1
                            b1t = float(1.0)
                            b2t = float(1.0)
                            for i in range(n):
                                S.m[b, i] = zero
                                S.v[b, i] = zero
                            continue
                it += 1
                b1t = b1t * P.beta1
                b2t = b2t * P.beta2
                lr_t = P.lr * wp.sqrt(1.0 - b2t) / (1.0 - b1t)
                for i in range(n):
                    g = S.g[b, i]
                    m = P.beta1 * S.m[b, i] + (1.0 - P.beta1) * g
                    v = P.beta2 * S.v[b, i] + (1.0 - P.beta2) * wp.cw_mul(g, g)
                    S.m[b, i] = m
                    S.v[b, i] = v
                    step = wp.vec3(m[0] / (wp.sqrt(v[0]) + P.eps), m[1] / (wp.sqrt(v[1]) + P.eps),
                                   m[2] / (wp.sqrt(v[2]) + P.eps))
                    S.x[b, i] = S.x[b, i] - lr_t * step
            O.iters[b] = it

    return iterate_kernel


#: Scenes whose pairs are all axis-aligned boxes.
iterate_kernel = _iterate_kernel(False)
#: Scenes with OBB / MESH pairs or MESH support terms.
iterate_kernel_general = _iterate_kernel(True)
#: Scenes whose pairs follow the rule (large scenes of axis-aligned boxes).
iterate_kernel_rule = _iterate_kernel(False, rule=True)

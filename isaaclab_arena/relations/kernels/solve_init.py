"""Initial candidates (the generate stage), one thread per candidate.

Each solve kernel lives in a module of its own, so that each compiled module holds its own copy of the
helper functions with few call sites (the CPU compiler then inlines them).
"""

from __future__ import annotations

import warp as wp

from isaaclab_arena.relations.kernels.broad_phase import sweep_insert, sweep_refresh, sweep_width
from isaaclab_arena.relations.kernels.geometry import BIG, PI, candidate_rng, parked, yaw_quat
from isaaclab_arena.relations.kernels.poses import face_to_update, solver_offsets
from isaaclab_arena.relations.kernels.projection import (
    SCENE_BOUNDS_ALL_STATIC,
    SCENE_BOUNDS_FLAGGED,
    project,
    record_static_intervals,
    repair_shift,
)
from isaaclab_arena.relations.kernels.sampling import (
    clutter_miss,
    clutter_raise,
    clutter_raise_rule,
    placed_penetration,
    placed_penetration_sweep,
    placed_penetration_sweep_rule,
    placed_general,
    placed_relation_penalty,
)
from isaaclab_arena.relations.kernels.settings import SolveSettings
from isaaclab_arena.relations.kernels.tables import (
    FLAG_GENERAL_PAIRS,
    FLAG_MOVABLE_PARENT,
    FLAG_PENALISED,
    FLAG_ROTATED,
    INIT_EXACT_EVERY,
    INIT_EXACT_NONE,
    OF_QX,
    OI_CLUTTER,
    OI_FLAGS,
    OI_ORDER,
    OI_RANDOM,
    OI_RANK,
    OI_SUPPORT,
    OI_YAW,
    REDRAW_IN_INTERVAL,
    REDRAW_IN_RECORDED_INTERVAL,
    REDRAW_NONE,
    YAW_FACE_TO,
    YAW_RANDOM,
    CandidateState,
    SceneTables,
    SolveOutputs,
    obj_bounds,
)
from isaaclab_arena.relations.kinds import clutter_on
from isaaclab_arena.relations.kinds.dispatch import track_kind_sources


def _init_kernel(general: bool, plain: bool = False, rule: bool = False):
    """The init kernel; ``general`` adds the OBB / MESH pair and MESH support scores of the initial draws (a
    kernel of its own: the general code inlined into every scene's init kernel slowed box scenes by 7-20 %).
    ``plain``: the variant of plain scenes (``tables.plain_scene``: box pairs only, every object drawn in its
    static interval, nothing turned, shifted, raised or penalised), compiled without those steps: the same draws,
    arithmetic and layouts as the box variant, whose code for them such a scene never runs (the init kernel of
    boxes3 takes a third less time, with the intervals recorded only for candidates that iterate)."""

    # a module of its own per variant (each with its own inlined copy of the helpers), its cache keyed on the
    # kinds' sources as every kernel module's
    module = __name__ + ("_general" if general else "") + ("_plain" if plain else "") + ("_rule" if rule else "")
    raise_clutter = clutter_raise_rule if rule else clutter_raise
    penetration_sweep = placed_penetration_sweep_rule if rule else placed_penetration_sweep
    # the static interval of every object (projection.SCENE_BOUNDS_ALL_STATIC) in a plain scene
    bounds = SCENE_BOUNDS_ALL_STATIC if plain else SCENE_BOUNDS_FLAGGED
    track_kind_sources(module)

    @wp.kernel(enable_backward=False, module=module)
    def init_kernel(
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
        """Initial candidate b: rotations, then positions in parents-first order, each object drawn uniformly over
        what its relations allow (``projection.py::draw_pose``), projected onto its relation intervals (a movable
        parent whose relation cannot be met is shifted), ClutterOn releases raised; of ``init_tries`` draws the
        first free of penetration with what is already placed is kept, else the least penetrating."""
        b0 = wp.tid() * rows
        for b in range(b0, wp.min(b0 + rows, count)):
            e = int(env_ids[b])
            st = candidate_rng(P.seed, e, int(draw_ids[b]))
            n = T.n_mov
            zero = wp.vec3(0.0)
            for i in range(n):
                of = T.obj_f[i]
                q = wp.quat(of[OF_QX], of[OF_QX + 1], of[OF_QX + 2], of[OF_QX + 3])
                if not wp.static(plain) and T.obj_i[i][OI_YAW] == YAW_RANDOM:
                    q = yaw_quat(wp.randf(st, -PI, PI)) * q
                S.rot[b, i] = q
                if not wp.static(plain) and (T.obj_i[i][OI_FLAGS] & FLAG_ROTATED) != 0:
                    lo, hi = solver_offsets(q, T.local_lo[e, i], T.local_hi[e, i], T.obj_f[i], T.obj_i[i][OI_RANDOM])
                    S.olo[b, i] = lo
                    S.ohi[b, i] = hi
                else:
                    S.olo[b, i] = T.local_lo[e, i]
                    S.ohi[b, i] = T.local_hi[e, i]
                if not parked(S.x[b, i]):  # a parked pool member starts (and stays) at its parking spot
                    slo, shi = obj_bounds(T, S, b, e, T.obj_i[i][OI_SUPPORT])
                    S.x[b, i] = 0.5 * (slo + shi)
            clean = int(T.init_exact != INIT_EXACT_NONE)
            # broad phase (T.sweep): the placed objects, sorted by low X, grow by one as each is placed
            count = int(0)
            wmax = float(0.0)
            for k in range(n):
                i = T.obj_i[k][OI_ORDER]
                if parked(S.x[b, i]):
                    if T.sweep != 0:
                        count = sweep_insert(S, b, i, count)
                    continue
                oi = T.obj_i[i]
                rank_i = oi[OI_RANK]
                cl = oi[OI_CLUTTER]
                # a ClutterOn release with random yaw draws a fresh yaw on every try after the first, so a
                # footprint that does not fit the release region at one heading can fit at another
                turn = cl >= 0 and oi[OI_YAW] == YAW_RANDOM and not wp.static(plain)
                # a try ends with i projected last (after any heading or parent shift of that try) and nothing moves
                # after it, so unless this try turns i anew, the interval its last projection recorded is the one
                # object_interval would compute: a try after the first draws in it (REDRAW_IN_RECORDED_INTERVAL)
                same_interval = int(not turn)
                best = S.x[b, i]
                best_rot = S.rot[b, i]
                best_pen = float(BIG)
                best_score = float(BIG)
                for t in range(P.init_tries):
                    if turn and t > 0:
                        of = T.obj_f[i]
                        q = yaw_quat(wp.randf(st, -PI, PI)) * wp.quat(of[0], of[1], of[2], of[3])
                        S.rot[b, i] = q
                        lo, hi = solver_offsets(q, T.local_lo[e, i], T.local_hi[e, i], of, oi[OI_RANDOM])
                        S.olo[b, i] = lo
                        S.ohi[b, i] = hi
                    # draw i over what its relations allow; a FaceTo subject turns toward its target from there and is
                    # re-projected with the turned bounds; a movable parent that i's relation cannot be met beside is
                    # shifted and re-projected, then i again. One projection call site (so it inlines).
                    target = i
                    step = int(0)
                    moved_placed = int(0)  # objects already in the broad phase's list turned or shifted
                    while step >= 0:
                        redraw = int(REDRAW_NONE)
                        if step == 0:
                            redraw = REDRAW_IN_INTERVAL
                            # (a plain scene's project reads the static interval on every try and records none)
                            if not wp.static(plain) and same_interval != 0 and t > 0:
                                redraw = REDRAW_IN_RECORDED_INTERVAL
                        st = project(T, S, b, e, target, 1, redraw, st, wp.static(bounds))
                        nxt = int(-1)
                        if wp.static(plain):
                            pass  # one projection: nothing turns or shifts
                        elif step == 0 and oi[OI_YAW] == YAW_FACE_TO:
                            face_to_update(T, S, b, e)
                            moved_placed = 1
                            nxt = 1
                        elif step <= 1 and (oi[OI_FLAGS] & FLAG_MOVABLE_PARENT) != 0:
                            target = repair_shift(T, S, b, e, i)
                            if target >= 0:
                                moved_placed = 1
                                nxt = 2
                        elif step == 2:
                            target = i
                            nxt = 3
                        step = nxt
                    # the try kept is the one with the least penetration, then the least release-region miss
                    # (which solving cannot repair: it does not turn objects)
                    miss = float(0.0)
                    if not wp.static(plain) and cl >= 0:
                        wp.static(raise_clutter)(T, S, b, e, i, rank_i, T.rel_f[cl][clutter_on.GAP])
                        miss = clutter_miss(T, S, b, e, cl)
                    if moved_placed != 0:  # a repair moved a placed object after its check
                        clean = clean * int(T.init_exact == INIT_EXACT_EVERY)
                    pen = float(0.0)
                    if T.sweep != 0:
                        if moved_placed != 0:
                            wmax = sweep_refresh(S, b, count)
                        pen = wp.static(penetration_sweep)(T, S, b, e, i, count, wmax)
                    else:
                        pen = placed_penetration(T, S, b, e, i, rank_i)
                    if not wp.static(plain) and (oi[OI_FLAGS] & FLAG_PENALISED) != 0:
                        pen += placed_relation_penalty(T, S, b, e, i, rank_i)
                    if wp.static(general):
                        if (oi[OI_FLAGS] & FLAG_GENERAL_PAIRS) != 0:
                            pen += placed_general(T, S, b, e, i, rank_i)
                    score = pen + miss
                    if score < best_score:
                        best_score = score
                        best_pen = pen
                        best = S.x[b, i]
                        best_rot = S.rot[b, i]
                    if score <= 0.0:
                        break
                if best_pen > 0.0:
                    clean = 0
                S.x[b, i] = best
                if not wp.static(plain) and (oi[OI_YAW] == YAW_FACE_TO or turn):
                    S.rot[b, i] = best_rot
                    lo, hi = solver_offsets(best_rot, T.local_lo[e, i], T.local_hi[e, i], T.obj_f[i], oi[OI_RANDOM])
                    S.olo[b, i] = lo
                    S.ohi[b, i] = hi
                if T.sweep != 0:
                    count = sweep_insert(S, b, i, count)
                    wmax = wp.max(wmax, sweep_width(S, b, i))
            O.iters[b] = -clean
            if clean == 0:  # to the optimisation loop, from Adam moments of zero (a clean candidate skips it)
                wp.atomic_add(O.pending, 0, 1)
                if wp.static(plain):
                    record_static_intervals(T, S, b, e, 1)
                for i in range(n):
                    S.m[b, i] = zero
                    S.v[b, i] = zero

    return init_kernel


#: Initial candidates of scenes whose pairs are all axis-aligned boxes.
init_kernel = _init_kernel(False)
#: Initial candidates of scenes with OBB / MESH pairs or MESH support terms.
init_kernel_general = _init_kernel(True)
#: Initial candidates of plain scenes (``tables.plain_scene``).
init_kernel_plain = _init_kernel(False, plain=True)
#: Scenes whose pairs follow the rule (``kernels/pair_rule.py``): large scenes of axis-aligned boxes.
init_kernel_rule = _init_kernel(False, rule=True)
#: Plain scenes whose pairs follow the rule.
init_kernel_plain_rule = _init_kernel(False, plain=True, rule=True)

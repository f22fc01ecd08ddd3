"""FaceTo headings, RandomAroundSolution and the final evaluation (loss, checks, ranking keys)."""

from __future__ import annotations

import warp as wp

from isaaclab_arena.relations.kernels.evaluate import evaluate_candidate
from isaaclab_arena.relations.kernels.geometry import candidate_rng, rotated_offsets, rpy_quat
from isaaclab_arena.relations.kernels.solve import SolveSettings, face_to_update
from isaaclab_arena.relations.kernels.tables import (
    KIND_FACE_TO,
    NUM_SLOTS,
    OI_RANDOM,
    CandidateState,
    SceneTables,
)


@wp.kernel(enable_backward=False)
def finalize_kernel(T: SceneTables, S: CandidateState, P: SolveSettings, env_ids: wp.array(dtype=wp.int64),
                 draw_ids: wp.array(dtype=wp.int64), rel_excess: wp.array2d(dtype=float),
                 rel_cause: wp.array2d(dtype=int), checks: wp.array2d(dtype=wp.bool), ov_pair: wp.array(dtype=int),
                 ov_depth: wp.array(dtype=float), loss_out: wp.array(dtype=float), iters_out: wp.array(dtype=int),
                 counts: wp.array2d(dtype=int), passed: wp.array(dtype=wp.bool), pending: wp.array(dtype=int)):
    """FaceTo headings, RandomAroundSolution, then the final evaluation: loss and, with
    ``P.write_checks``, the inexpensive checks' verdicts and per-relation violations."""
    b = wp.tid()
    if iters_out[b] < 0:  # the optimisation loop was skipped (no candidate of the launch needed it)
        iters_out[b] = 0
    e = int(env_ids[b])
    n = T.n_mov
    st = candidate_rng(P.seed ^ 0x5BD1E995, e, int(draw_ids[b]))
    has_face = T.kind_start[KIND_FACE_TO + 1] > T.kind_start[KIND_FACE_TO]
    # ---- after solving: FaceTo headings, RandomAroundSolution (RotateAroundSolution is the base rotation)
    if P.do_post != 0:
        if has_face:
            face_to_update(T, S, b, e)
        for i in range(n):
            if T.obj_i[i][OI_RANDOM] != 0:
                of = T.obj_f[i]
                d = wp.vec3(wp.randf(st, -1.0, 1.0) * of[4], wp.randf(st, -1.0, 1.0) * of[5],
                            wp.randf(st, -1.0, 1.0) * of[6])
                S.x[b, i] = S.x[b, i] + d
                dq = rpy_quat(wp.randf(st, -1.0, 1.0) * of[7], wp.randf(st, -1.0, 1.0) * of[8],
                              wp.randf(st, -1.0, 1.0) * of[9])
                q = wp.normalize(dq * S.rot[b, i])
                S.rot[b, i] = q
                lo, hi = rotated_offsets(q, T.local_lo[e, i], T.local_hi[e, i])
                S.olo[b, i] = lo
                S.ohi[b, i] = hi
    loss_out[b] = evaluate_candidate(T, S, b, e, P.write_checks, rel_excess, rel_cause, checks, ov_pair, ov_depth)
    if P.write_checks != 0:
        # ranking keys over the built-in checks: slot_mode 2 required, 1 optional, 0 not enabled
        req = int(0)
        opt = int(0)
        for s in range(NUM_SLOTS):
            mode = P.slot_mode[s]
            if not checks[b, s]:
                if mode == 2:
                    req += 1
                elif mode == 1:
                    opt += 1
        counts[b, 0] = req
        counts[b, 1] = opt
        passed[b] = req == 0

"""The inexpensive-check kernel: one thread per candidate evaluates every relation and pair of given poses."""

from __future__ import annotations

import warp as wp

from isaaclab_arena.relations.kernels.evaluate import (
    evaluate_candidate,
    evaluate_candidate_general,
    evaluate_candidate_rule,
)
from isaaclab_arena.relations.kernels.geometry import rotated_offsets
from isaaclab_arena.relations.kernels.tables import (
    is_box_scene,
    CandidateState,
    SceneTables,
    SolveOutputs,
)
from isaaclab_arena.relations.kinds.dispatch import track_kind_sources


def _validate_kernel(general: bool, rule: bool = False):
    """The check kernel; ``general``: of scenes with OBB / MESH pairs or MESH support terms, ``rule``: of scenes
    whose pairs follow the rule (``kernels/pair_rule.py``) (a module of its own per variant, each keyed on the
    kinds' sources)."""
    module = __name__ + ("_general" if general else "") + ("_rule" if rule else "")
    track_kind_sources(module)
    evaluate = evaluate_candidate_general if general else (evaluate_candidate_rule if rule else evaluate_candidate)

    @wp.kernel(enable_backward=False, module=module)
    def validate_kernel(
        # Model:
        T: SceneTables,
        # Data in (x, rot), scratch (olo, ohi):
        S: CandidateState,
        # Data in:
        env_ids: wp.array(dtype=wp.int64),
        # Data out:
        O: SolveOutputs,
        # Candidates [tid * rows, min((tid + 1) * rows, count)) per thread (``launch.py``):
        rows: int,
        count: int,
    ):
        """Refits each object's bounds to its rotation, then writes per-relation excess/cause, the worst
        overlapping pair, one verdict per check slot and the loss of the layout (``O``'s solver-only fields
        are unused)."""
        b0 = wp.tid() * rows
        for b in range(b0, wp.min(b0 + rows, count)):
            e = int(env_ids[b])
            for i in range(T.n_mov):
                lo, hi = rotated_offsets(S.rot[b, i], T.local_lo[e, i], T.local_hi[e, i])
                S.olo[b, i] = lo
                S.ohi[b, i] = hi
            O.loss[b] = wp.static(evaluate)(T, S, b, e, 1, O)

    return validate_kernel


#: Scenes whose pairs are all axis-aligned boxes.
validate_kernel = _validate_kernel(False)
#: Scenes with OBB / MESH pairs or MESH support terms.
validate_kernel_general = _validate_kernel(True)
#: Scenes whose pairs follow the rule (large scenes of axis-aligned boxes).
validate_kernel_rule = _validate_kernel(False, rule=True)


def validate_kernel_for(tables):
    """The check kernel of a problem whose ``SceneTables`` are ``tables``."""
    if tables.pair_rule:
        return validate_kernel_rule
    return validate_kernel if is_box_scene(tables) else validate_kernel_general

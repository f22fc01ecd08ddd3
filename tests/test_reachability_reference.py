"""The batched reference IK (``reachability_reference.py``): a target solved among others gets what it gets alone.

``PinocchioReach.solve_many`` runs every target's multi-seed descent in one batch, with per-target stopping;
``solve`` is a batch of one. Targets: top-down grasps in the Franka's base frame (metres), reachable ones,
unreachable ones and ones near the reach boundary (where the balanced re-descent runs).
"""

from __future__ import annotations

import numpy as np
from reachability_reference import PinocchioReach, top_down_target


def test_a_batch_gives_each_target_its_own_verdict_and_solution():
    ref = PinocchioReach()
    # reachable from the informed seed, far out of reach, above the reach, reachable, reachable only past the
    # informed seed (score 0.5-1), out of reach, just out of reach (score 1-3: the balanced re-descent runs)
    objects = [(0.45, 0.1, 0.1), (1.4, 0.0, 0.3), (0.0, 0.0, 1.3), (-0.3, 0.5, 0.0), (0.83, 0.0, 0.2),
               (0.6, -0.6, 0.4), (0.85, 0.0, 0.2)]
    targets = [top_down_target((0, 0, 0), (0, 0, 0, 1), o, 0.02, ref.yaw_offset) for o in objects]
    p_t, r_t = np.array([p for p, _ in targets]), np.array([r for _, r in targets])
    scores, q = ref.solve_many(p_t, r_t)
    assert scores.shape == (len(objects),) and q.shape == (len(objects), ref.model.nq)
    alone = [ref.solve(p, r) for p, r in targets]
    assert [s <= 1.0 for s in scores] == [s <= 1.0 for s, _ in alone]
    np.testing.assert_allclose(scores, [s for s, _ in alone], rtol=1e-6, atol=1e-9)
    assert 0 < sum(s <= 1.0 for s in scores) < len(objects)  # both verdicts occur
    for s, q_row, (p, r) in zip(scores, q, targets):
        assert np.all(q_row >= ref.lower) and np.all(q_row <= ref.upper)
        if s <= 1.0:  # the returned configuration reaches the target within both thresholds
            p_q, r_q = ref.fk(q_row)
            assert np.linalg.norm(p_q - p) <= 0.01 + 1e-9
            assert np.arccos(np.clip((np.trace(r_q.T @ r) - 1) / 2, -1, 1)) <= 0.1 + 1e-9
    assert ref.solve_many(np.zeros((0, 3)), np.zeros((0, 3, 3)))[0].shape == (0,)

"""Placement pictures of a robot scene ring every RequiresReachability object: green where the robot reaches a
top-down grasp at it from that layout's solved base, red where not (no simulator)."""

from __future__ import annotations

import numpy as np
import torch
from test_ik_reachable_check import _scene

from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams, ReachabilityConfig
from isaaclab_arena.relations.pooled_object_placer import PooledObjectPlacer
from isaaclab_arena.relations.validation.registry import builtin_checks

GREEN, RED = np.array([0.173, 0.627, 0.173]), np.array([0.839, 0.153, 0.157])  # tab:green, tab:red


def _pixels(image: np.ndarray, rgb: np.ndarray) -> int:
    return int((np.abs(image[..., :3] - rgb).max(axis=-1) < 0.03).sum())


def test_rings_mark_reachable_green_and_unreachable_red(tmp_path):
    from isaaclab_arena.environments.placement_pictures import reachability_rings, write_layout_picture
    import matplotlib.image

    assets, robot = _scene()
    # ik_reachable runs but is optional, one candidate per env: some layouts keep an unreachable cube
    params = ObjectPlacerParams(placement_seed=11, reachability_config=ReachabilityConfig(embodiment=robot),
                                required_checks=list(builtin_checks()), max_placement_attempts=1,
                                min_unique_layouts_per_env=1)
    pool = PooledObjectPlacer(assets, params, num_envs=8)
    pool.initialize()
    poses = pool.poses[:, 0]
    rings = reachability_rings(pool, poses)
    assert list(rings) == ["cube"]
    xy, ok = rings["cube"]
    torch.testing.assert_close(xy, poses[:, pool.object_names.index("cube"), :2])
    k = pool.check_names.index("ik_reachable")
    assert torch.equal(ok, pool.slot_checks[:, 0, k].cpu())
    assert 0 < int(ok.sum()) < 8, ok  # both verdicts occur
    path = write_layout_picture(pool, str(tmp_path / "layouts.png"))
    image = matplotlib.image.imread(path)
    assert _pixels(image, GREEN) > 20 and _pixels(image, RED) > 20

    # without ik_reachable in use there are no rings
    plain = PooledObjectPlacer(assets, ObjectPlacerParams(placement_seed=11, max_placement_attempts=1,
                                                          min_unique_layouts_per_env=1), num_envs=2)
    plain.initialize()
    assert reachability_rings(plain, plain.poses[:, 0]) == {}

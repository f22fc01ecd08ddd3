"""The two MESH example environments, placed and then simulated.

- ``tabletop/mesh_tucked_objects.yaml``: cubes under a shelf, beside a mug's handle and a bowl's rim, inside
  those objects' boxes. BBOX finds no valid layout, MESH finds only valid ones; trimesh (float64) confirms no
  cube surface point lies inside the shelf, mug or bowl colliders.
- ``kitchen/kitchen_counter_mesh.yaml``: objects on a kitchen counter whose background is a MESH obstacle.
  In every layout no object's surface point lies inside the stove, sink or cabinet colliders, and every
  object's footprint stands on the counter top's slab (rays cast down with trimesh): no bottom vertex hangs
  over the sink cut-out by more than 1 mm (the support term checks the footprint's outline, simplified to
  0.5 mm, at 2.5 mm from the cut-out's edge; between two outline points a corner of the cut-out may reach
  under the footprint's edge by less than that).
- Physics (OV PhysX, the default backend, CPU), 64 envs of each example: after settling no object moved by
  more than the pose-shift limits (2 mm, 2 degrees: ``PoseShiftValidator``'s defaults). The kitchen with its
  background on boxes (BBOX: the background is no obstacle) is the control: there, objects placed on the
  stove fall off it.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest
import torch
import trimesh

from isaaclab_arena import ARENA_ROOT
from isaaclab_arena.adapters.usd_mesh import usd_collision_mesh
from isaaclab_arena.offline_placement.post_physics_checks import PoseShiftValidator
from isaaclab_arena.relations.object_placer import ObjectPlacer
from isaaclab_arena_environments.assets import library

TUCKED = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "tabletop", "mesh_tucked_objects.yaml")
KITCHEN = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "kitchen", "kitchen_counter_mesh.yaml")
N = 256
COUNTER_TOP_Z = 0.90


def load(path):
    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec

    return ArenaEnvGraphSpec.from_yaml(path).to_arena_env()


def solve(arena_env, mode: str | None = None, n: int = N):
    params = arena_env.placer_params
    sp = dataclasses.replace(params.solver_params, verbose=False,
                             **({"collision_mode": mode} if mode is not None else {}))
    placer = ObjectPlacer(dataclasses.replace(params, solver_params=sp, placement_seed=11))
    return placer.place_batch(arena_env.get_placement_assets(), torch.arange(n), torch.zeros(n, dtype=torch.long),
                              num_envs=n)


def rot(q) -> np.ndarray:
    x, y, z, w = (float(v) for v in q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def placed(mesh: trimesh.Trimesh, pos, quat) -> trimesh.Trimesh:
    tf = np.eye(4)
    tf[:3, :3] = rot(quat)
    tf[:3, 3] = pos
    m = mesh.copy()
    m.apply_transform(tf)
    return m


def inside_any(parts, pts) -> np.ndarray:
    out = np.zeros(len(pts), bool)
    for p in parts:
        out |= p.contains(pts)
    return out


def collision_mesh_of(asset):
    cfg = asset.spawn_cfg
    if hasattr(cfg, "usd_path"):
        return usd_collision_mesh(cfg.usd_path)
    from isaaclab_arena.adapters.usd_mesh import spawn_cfg_collision_mesh

    return spawn_cfg_collision_mesh(cfg, asset.name)


# ---------------------------------------------------------------------------------------------- placement
@pytest.mark.slow
def test_tucked_objects_bbox_finds_nothing_mesh_finds_only_valid_layouts():
    env = load(TUCKED)
    rates = {mode: float(solve(env, mode).passed.float().mean()) for mode in ("bbox", "mesh")}
    assert rates == {"bbox": 0.0, "mesh": 1.0}, rates
    batch = solve(env)
    obstacles = {a.name: a for a in env.assets if a.name in ("shelf", "mug", "bowl")}
    parts = {name: [placed(p.mesh, a.initial_pose.position_xyz, a.initial_pose.rotation_xyzw)
                    for p in collision_mesh_of(a).parts] for name, a in obstacles.items()}
    cube = trimesh.sample.sample_surface(trimesh.creation.box(extents=(0.04, 0.04, 0.04)), 800, seed=4)[0]
    for c in batch.candidates[:64]:
        for name, p in c.positions.items():
            pts = cube @ rot(c.rotations[name]).T + np.asarray(p)
            for obstacle, obstacle_parts in parts.items():
                assert not inside_any(obstacle_parts, pts).any(), (name, obstacle)


@pytest.mark.slow
def test_kitchen_objects_never_touch_the_stove_or_stand_over_the_sink():
    env = load(KITCHEN)
    batch = solve(env)
    assert float(batch.passed.float().mean()) >= 0.99
    slab = usd_collision_mesh(library.KITCHEN_COUNTER_USD, "counter_top").mesh
    rest = usd_collision_mesh(library.KITCHEN_COUNTER_USD)  # stove, sink basin, cabinet, apron (and the slab)
    obstacles = [p.mesh for p in rest.parts if not p.prim_path.endswith("counter_top")]
    assert len(obstacles) >= 5
    objects = {a.name: collision_mesh_of(a) for a in env.assets if a.has_placement_relations}
    samples = {n: trimesh.sample.sample_surface(m.mesh, 1200, seed=5)[0] for n, m in objects.items()}
    bottoms = {}
    for n, m in objects.items():
        v = m.vertices
        bottoms[n] = v[v[:, 2] <= v[:, 2].min() + 1e-3]
    from isaaclab_arena_environments.assets.generate_mesh_usd import SINK_HOLE_HI, SINK_HOLE_LO

    over_stove_region = 0
    for c in (batch.candidates[k] for k in np.flatnonzero(batch.passed.numpy())[:96]):
        for n, p in c.positions.items():
            r, t = rot(c.rotations[n]), np.asarray(p, np.float64)
            assert not inside_any(obstacles, samples[n] @ r.T + t).any(), n
            feet = bottoms[n] @ r.T + t
            starts = np.c_[feet[:, :2], np.full(len(feet), COUNTER_TOP_Z + 0.05)]
            hit = slab.ray.intersects_any(starts, np.tile([0.0, 0.0, -1.0], (len(feet), 1)))
            # how far a bottom vertex lies inside the sink cut-out (its distance to the cut-out's nearest edge)
            into = np.min(np.c_[feet[:, :2] - SINK_HOLE_LO, SINK_HOLE_HI - feet[:, :2]], axis=1)
            assert np.all(hit | (into <= 1e-3)), f"{n}: hangs {into.max():.4f} m over the sink cut-out"
            assert hit.sum() >= 0.9 * len(hit), f"{n}: footprint off the counter top"
            over_stove_region += int(0.25 <= t[0] <= 0.75)
    # the stove block fills x in [0.25, 0.75] across the counter: nothing stands there
    assert over_stove_region == 0


# ------------------------------------------------------------------------------------------------ physics
def settle(path, gym_id: str, num_envs: int = 64, steps: int = 60, background_mode: str | None = None):
    """(initial, final) env-local root poses (E, 7) of every relation-placed object and passive obstacle after
    ``steps`` physics steps of a real kit-less env built from the spec."""
    from isaaclab.app import launch_simulation

    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg

    arena_env = load(path)
    if background_mode is not None:
        for a in arena_env.assets:
            if type(a).__name__ == "Background":
                a.collision_mode = background_mode
    names = [a.name for a in arena_env.assets if a.has_placement_relations
             or (type(a).__name__ == "Object" and a.initial_pose is not None and not a.get_relations())]
    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=num_envs, gym_id=gym_id, placement_seed=11))
    cfg = builder.compose_manager_cfg()
    with launch_simulation(cfg, {"headless": True, "device": "cpu"}):
        env = builder.make_registered(cfg)
        try:
            env.reset()
            u = env.unwrapped

            def poses():
                return {n: torch.cat([u.scene[n].data.root_pos_w.torch - u.scene.env_origins,
                                      u.scene[n].data.root_quat_w.torch], -1).clone() for n in names}

            first = poses()
            for _ in range(steps):
                env.step(torch.zeros(num_envs, 0))
            return first, poses()
        finally:
            env.close()


def shifts(first: dict, last: dict):
    """Per object: (E,) translation (m) and rotation (deg) between the two poses."""
    out = {}
    for n in first:
        trans = torch.linalg.vector_norm(last[n][:, :3] - first[n][:, :3], dim=-1)
        dot = (last[n][:, 3:] * first[n][:, 3:]).sum(-1).abs().clamp(max=1.0)
        out[n] = (trans, torch.rad2deg(2.0 * torch.acos(dot)))
    return out


@pytest.mark.sim
@pytest.mark.parametrize("path, gym_id", [(TUCKED, "MeshTucked-v0"), (KITCHEN, "MeshKitchen-v0")])
def test_mesh_layouts_do_not_move_when_simulated(path, gym_id):
    limits = PoseShiftValidator()
    first, last = settle(path, gym_id)
    for n, (trans, ang) in shifts(first, last).items():
        assert trans.shape[0] == 64
        worst = int(torch.argmax(trans))
        assert float(trans.max()) <= limits.max_translation_m, f"{n} moved {float(trans.max()):.4f} m in env {worst}"
        assert float(ang.max()) <= limits.max_rotation_deg, f"{n} turned {float(ang.max()):.2f} deg"


@pytest.mark.sim
def test_kitchen_on_boxes_is_the_control_objects_on_the_stove_move():
    limits = PoseShiftValidator()
    first, last = settle(KITCHEN, "MeshKitchenBox-v0", background_mode="bbox")
    moved = sum(int((trans > limits.max_translation_m).sum()) for trans, _ in shifts(first, last).values())
    on_stove = sum(int(((p[:, 0] >= 0.25) & (p[:, 0] <= 0.75)).sum()) for p in first.values())
    assert on_stove > 0 and moved > 0

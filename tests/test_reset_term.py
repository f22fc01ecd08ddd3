"""The reset term and its root writers in a real kit-less Isaac Lab env (OV PhysX, CPU).

The pose source reaches the term as a parameter, by reference, through Isaac Lab's config copies (no registry
keeps it alive); the OV PhysX batched writer and the public per-asset API leave the same simulator state
(read back through the assets' own PhysX views, not the cached buffers); unverified Isaac Lab versions or a
failure building the bindings fall back to the public API with one warning naming the reason and versions.
"""

from __future__ import annotations

import copy
import gc
import os
import warnings
import weakref

import pytest
import torch
import warp as wp

from isaaclab_arena.environments import ovphysx_root_writer as orw
from isaaclab_arena.environments.reset_events import (
    ArenaPoseResetTerm,
    FixedPoseSource,
    PoseSourceRef,
    arena_pose_reset_term_cfg,
)

from _helpers import TABLETOP, build_pooled_env

NAMES = ["mug", "bowl"]
VERIFIED = {"isaaclab": "3.0.0", "ovphysx": "0.6.4.72118723"}


@pytest.fixture(scope="module")
def tabletop(tmp_path_factory):
    builder, env, ctx = build_pooled_env("mug_bowl_table.yaml", 4, tmp_path_factory.mktemp("reset_term"))
    env.reset()
    yield builder, env.unwrapped
    env.close()
    ctx.__exit__(None, None, None)


def _sim_state(u, name):
    """(pose (N, 7) world, velocity (N, 6)) of ``name`` read from PhysX through the asset's own view."""
    import isaaclab_ov.tensor_types as TT

    view = u.scene[name].root_view
    return (wp.to_torch(view.get_attribute(TT.RIGID_BODY_POSE)).clone(),
            wp.to_torch(view.get_attribute(TT.RIGID_BODY_VELOCITY)).clone())


def _random_poses(n, k, seed):
    """(n, k, 7) env-local poses above the table (metres), unit xyzw quaternions with w > 0."""
    g = torch.Generator().manual_seed(seed)
    pos = torch.rand(n, k, 3, generator=g) * torch.tensor([0.6, 0.4, 0.2]) + torch.tensor([-0.3, -0.2, 1.0])
    q = torch.randn(n, k, 4, generator=g)
    q = q / q.norm(dim=-1, keepdim=True)
    q = torch.where(q[..., 3:] < 0, -q, q)
    return torch.cat([pos, q], -1)


def _term(u, source, **kw):
    cfg = arena_pose_reset_term_cfg(source, **kw)
    return ArenaPoseResetTerm(cfg, u), cfg.params


@pytest.mark.sim
def test_the_term_gets_the_live_pose_source_through_config_copies(tabletop):
    builder, u = tabletop
    term_cfg = u.event_manager.get_term_cfg("arena_placement")
    assert isinstance(term_cfg.params["pose_source"], PoseSourceRef)
    # Isaac Lab deep-copied the events config; the term still draws from the builder's (the pool's) source
    assert term_cfg.func.source is builder.pose_source
    assert term_cfg.params["pose_source"].source is builder.pose_source
    for copied in (copy.deepcopy(builder.env_cfg), builder.env_cfg.copy()):
        assert copied.events.arena_placement.params["pose_source"].source is builder.pose_source
    builder.env_cfg.validate()  # config walkers do not descend into the live source
    # a reset consumes the pool the builder holds
    consumed = builder.placer.consumed.clone()
    u.reset(env_ids=torch.tensor([1]))
    assert (builder.placer.consumed - consumed).tolist() == [0, 1, 0, 0]


def test_a_pose_source_is_not_kept_alive_after_its_config_is_dropped():
    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg

    arena_env = ArenaEnvGraphSpec.from_yaml(os.path.join(TABLETOP, "mug_bowl_table.yaml")).to_arena_env()
    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=2, solve_relations=False))
    cfg = builder.compose_manager_cfg()
    assert cfg.events.arena_placement.params["pose_source"].source is builder.pose_source
    alive = weakref.ref(builder.pose_source)
    del builder, cfg
    gc.collect()
    assert alive() is None, "something outside the config still holds the pose source"


@pytest.mark.sim
def test_the_term_refuses_a_bare_source_and_the_ref_refuses_a_non_source(tabletop):
    from isaaclab.managers import EventTermCfg

    _, u = tabletop
    source = FixedPoseSource(NAMES, torch.zeros(2, 7))
    with pytest.raises(TypeError, match=r"params\['pose_source'\] must be a PoseSourceRef"):
        ArenaPoseResetTerm(EventTermCfg(func=ArenaPoseResetTerm, mode="reset", params={"pose_source": source}), u)
    with pytest.raises(TypeError, match="PoseSourceRef needs a pose source"):
        PoseSourceRef(torch.zeros(2, 7))


@pytest.mark.sim
def test_batched_and_per_asset_writes_leave_the_same_simulator_state(tabletop):
    _, u = tabletop
    origins = u.scene.env_origins
    ids = torch.tensor([0, 2])
    for seed, kw in ((1, {}), (2, {"batched_writes": False})):
        # objects in the air, then stepped: they fall, so the velocity writes have something to zero
        lift = _random_poses(4, 2, seed + 10)
        term, params = _term(u, FixedPoseSource(NAMES, lift), **kw)
        assert term.writer.name == ("per_asset" if kw else "ovphysx_batched")
        term(u, slice(None), **params)
        for _ in range(6):
            u.sim.step(render=False)
            u.scene.update(u.physics_dt)
        before = {n: _sim_state(u, n) for n in NAMES}
        assert before["mug"][1][:, 2].max() < -0.05, "objects should be falling"
        poses = _random_poses(4, 2, seed)
        term.source = FixedPoseSource(NAMES, poses)
        term(u, ids, **params)
        for j, n in enumerate(NAMES):
            pose, vel = _sim_state(u, n)
            expect = poses[ids, j].clone()
            expect[:, :3] += origins[ids]
            torch.testing.assert_close(pose[ids], expect, atol=1e-6, rtol=0)
            assert vel[ids].abs().max() == 0.0
            untouched = torch.tensor([1, 3])
            torch.testing.assert_close(pose[untouched], before[n][0][untouched], atol=0, rtol=0)
            torch.testing.assert_close(vel[untouched], before[n][1][untouched], atol=0, rtol=0)
            # the cached buffers agree with the simulator (what observations and the runners read)
            data = u.scene[n].data
            torch.testing.assert_close(data.root_link_pose_w.torch, pose, atol=1e-6, rtol=0)
            torch.testing.assert_close(data.root_com_vel_w.torch, vel, atol=1e-6, rtol=0)
            torch.testing.assert_close(data.root_pos_w.torch[ids] - origins[ids], poses[ids, j, :3], atol=1e-5, rtol=0)


def test_version_check_accepts_only_the_verified_versions():
    assert orw.version_mismatch(VERIFIED) is None
    assert orw.version_mismatch({"isaaclab": "3.0.0", "ovphysx": "0.6.4"}) is None
    for bad, word in (({"isaaclab": "3.1.0"}, "isaaclab 3.1.0"), ({"ovphysx": "0.6.40.1"}, "ovphysx 0.6.40.1"),
                      ({"isaaclab": "missing"}, "isaaclab missing")):
        reason = orw.version_mismatch({**VERIFIED, **bad})
        assert reason is not None and word in reason and "verified" in reason, reason
    assert orw.version_mismatch() is None  # the pinned environment is a verified one


def _fallback_terms(u, monkeypatch, count=2):
    monkeypatch.setattr(orw, "_said", set())
    source = FixedPoseSource(NAMES, _random_poses(4, 2, 5))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        terms = [_term(u, source) for _ in range(count)]
    said = [w for w in caught if issubclass(w.category, RuntimeWarning) and "batched root writes" in str(w.message)]
    return terms, said


@pytest.mark.sim
def test_unverified_versions_fall_back_to_the_public_api_and_say_so_once(tabletop, monkeypatch):
    _, u = tabletop
    monkeypatch.setattr(orw, "installed_versions", lambda: {"isaaclab": "3.1.0", "ovphysx": "0.7.0"})
    terms, said = _fallback_terms(u, monkeypatch)
    assert [t.writer.name for t, _ in terms] == ["per_asset", "per_asset"]
    assert len(said) == 1, [str(w.message) for w in said]
    msg = str(said[0].message)
    assert "isaaclab 3.1.0" in msg and "3.0.0" in msg and "per asset" in msg and "\n" not in msg
    term, params = terms[0]
    term(u, torch.tensor([3]), **params)  # the fallback still writes exactly
    for j, n in enumerate(NAMES):
        pose, _ = _sim_state(u, n)
        expect = term.source.poses[3, j].clone()
        expect[:3] += u.scene.env_origins[3]
        torch.testing.assert_close(pose[3], expect, atol=1e-6, rtol=0)


@pytest.mark.sim
def test_a_failure_building_the_bindings_falls_back_and_names_it(tabletop, monkeypatch):
    _, u = tabletop

    def refuse(scene, asset):
        raise RuntimeError(f"prim path {asset.cfg.prim_path!r} is not a plain path")

    monkeypatch.setattr(orw, "env_prim_paths", refuse)
    terms, said = _fallback_terms(u, monkeypatch)
    assert [t.writer.name for t, _ in terms] == ["per_asset", "per_asset"]
    assert len(said) == 1 and "RuntimeError: prim path" in str(said[0].message)
    monkeypatch.undo()
    term, _ = _term(u, FixedPoseSource(NAMES, torch.zeros(2, 7)))
    assert term.writer.name == "ovphysx_batched"

"""Physical property draws (friction, restitution, mass) per env at reset: Python and YAML refusals, the YAML
round trip, the pure draw, and in one kit-less OV PhysX env: values read back from the physics view, their
reproducibility, Isaac Lab's stock terms, and friction measured by the stopping distance of a sliding box."""

from __future__ import annotations

import math

import pytest
import torch

from isaaclab_arena.assets.physical_properties import (
    PhysicalPropertyRanges,
    draw_physical_properties,
    set_physical_property_ranges,
)

G = 9.81
DEFAULT_MU = 0.5  # PhysX's default material (the ground plane and a box spawned without a material)

SPEC = """\
env_name: property_draws
num_envs: 4
env_spacing: 3.0
objects:
  - id: slider
    registry_name: box
    params:
      size: [0.1, 0.1, 0.1]
      mass_kg: 1.0
      initial_pose: {position_xyz: [0.0, 0.0, 0.05]}
      physical_properties:
        static_friction: [0.2, 0.9]
        dynamic_friction: [0.2, 0.9]
        restitution: [0.0, 0.0]
        mass_kg: [0.5, 1.5]
  - id: plain
    registry_name: box
    params:
      size: [0.1, 0.1, 0.1]
      mass_kg: 1.0
      initial_pose: {position_xyz: [0.0, 1.0, 0.05]}
      physical_properties: {mass_scale: [0.5, 2.0]}
  - id: stock
    registry_name: box
    params:
      size: [0.1, 0.1, 0.1]
      initial_pose: {position_xyz: [0.0, -1.0, 0.05]}
"""


# ---- Python ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, fragment", [
    ({"static_friction": (0.9, 0.4)}, "static_friction must be a range [lo, hi] with lo <= hi"),
    ({"dynamic_friction": (-0.1, 0.4)}, "dynamic_friction must be a range [lo, hi] with lo <= hi, values >= 0"),
    ({"restitution": (0.0, 1.5)}, "restitution must be a range [lo, hi] with lo <= hi, values in [0, 1]"),
    ({"mass_kg": (0.0, 1.0)}, "mass_kg must be a range [lo, hi] with lo <= hi, values > 0 (kilograms)"),
    ({"mass_kg": "heavy"}, "mass_kg must be a range"),
    ({"mass_kg": (1, 2), "mass_scale": (1, 2)}, "mass_kg and mass_scale exclude each other"),
])
def test_constructor_refusals_are_one_line(kwargs, fragment):
    with pytest.raises(ValueError) as info:
        PhysicalPropertyRanges(**kwargs)
    assert fragment in str(info.value) and "\n" not in str(info.value), str(info.value)
    assert str(info.value).startswith("PhysicalPropertyRanges: ")


def test_single_number_fixes_a_value_and_unknown_keys_are_refused():
    r = PhysicalPropertyRanges.from_mapping({"static_friction": 0.7, "mass_kg": [1, 2]}, "asset 'box'")
    assert r.static_friction == (0.7, 0.7) and r.mass_kg == (1.0, 2.0) and r.drawn_fields == ("static_friction", "mass_kg")
    with pytest.raises(ValueError, match=r"asset 'box': unknown physical property 'static_fricton' \(did you mean "
                                         r"'static_friction'\?\)"):
        PhysicalPropertyRanges.from_mapping({"static_fricton": [0, 1]}, "asset 'box'")


def test_draw_is_a_pure_function_of_seed_env_and_reset_count():
    r = PhysicalPropertyRanges(static_friction=(0.2, 0.9), dynamic_friction=(0.2, 0.9), restitution=(0.0, 0.5),
                               mass_kg=(0.5, 1.5))
    envs, counts = torch.arange(1024), torch.zeros(1024, dtype=torch.long)
    a = draw_physical_properties(r, 7, "box", envs, counts)
    torch.manual_seed(123)  # the global RNG plays no part
    b = draw_physical_properties(r, 7, "box", envs.flip(0), counts)  # order / grouping plays no part
    for f in a:
        assert torch.equal(a[f], b[f].flip(0)), f
        lo, hi = getattr(r, f)
        assert float(a[f].min()) >= lo and float(a[f].max()) <= hi, f
    assert bool((a["dynamic_friction"] <= a["static_friction"]).all())
    # spread over the range, and different for another seed, asset, env or reset count
    assert float(a["mass_kg"].std()) > 0.25 and abs(float(a["mass_kg"].mean()) - 1.0) < 0.05
    other = [draw_physical_properties(r, 8, "box", envs, counts), draw_physical_properties(r, 7, "cup", envs, counts),
             draw_physical_properties(r, 7, "box", envs, counts + 1)]
    for o in other:
        assert float((o["mass_kg"] == a["mass_kg"]).float().mean()) < 0.01


# ---- YAML -----------------------------------------------------------------------------------------------------
def _load(tmp_path, text):
    from isaaclab_arena.env_spec import ArenaEnvGraphSpec

    path = tmp_path / "scene.yaml"
    path.write_text(text)
    return ArenaEnvGraphSpec.from_yaml(str(path)), str(path)


def _line(text, fragment):
    return next(i + 1 for i, line in enumerate(text.splitlines()) if fragment in line)


def test_yaml_attaches_ranges_and_round_trips(tmp_path):
    from isaaclab_arena.env_spec import ArenaEnvGraphSpec

    text = SPEC + """\
object_sets:
  - id: pool
    members: [cube_4cm, cube_8cm]
    params: {physical_properties: {dynamic_friction: [0.3, 0.6]}}
"""
    spec, _ = _load(tmp_path, text)
    env = spec.to_arena_env()
    slider, plain, pool = env.get_asset("slider"), env.get_asset("plain"), env.get_asset("pool")
    assert slider.physical_property_ranges == PhysicalPropertyRanges(
        static_friction=(0.2, 0.9), dynamic_friction=(0.2, 0.9), restitution=(0.0, 0.0), mass_kg=(0.5, 1.5))
    assert plain.physical_property_ranges.mass_scale == (0.5, 2.0)
    assert pool.physical_property_ranges.dynamic_friction == (0.3, 0.6)
    assert getattr(env.get_asset("stock"), "physical_property_ranges", None) is None
    assert "physical_properties" not in slider.registry_params
    out = tmp_path / "out.yaml"
    spec.to_yaml(str(out))
    assert ArenaEnvGraphSpec.from_yaml(str(out)) == spec
    # a Python environment written out keeps its ranges too
    spec2 = ArenaEnvGraphSpec.from_arena_env(env)
    assert spec2.to_arena_env().get_asset("slider").physical_property_ranges == slider.physical_property_ranges
    assert spec2.to_arena_env().get_asset("pool").physical_property_ranges == pool.physical_property_ranges


@pytest.mark.parametrize("old, new, fragment, key", [
    ("dynamic_friction: [0.2, 0.9]", "dynamic_friction: [0.9, 0.2]", "dynamic_friction must be a range [lo, hi] with "
     "lo <= hi", "params.physical_properties.dynamic_friction"),
    ("restitution: [0.0, 0.0]", "restitution: [0.0, 2.0]", "values in [0, 1]", "params.physical_properties.restitution"),
    ("restitution: [0.0, 0.0]", "restitutoin: [0.0, 0.0]", "unknown physical property 'restitutoin' (did you mean "
     "'restitution'?)", "params.physical_properties.restitutoin"),
    ("mass_kg: [0.5, 1.5]", "mass_kg: [0.5, 1.5]\n        mass_scale: [1, 2]", "mass_kg and mass_scale exclude each "
     "other", "params.physical_properties.mass_scale"),
])
def test_yaml_refusals_name_key_and_line(tmp_path, old, new, fragment, key):
    from isaaclab_arena.env_spec import EnvSpecError

    text = SPEC.replace(old, new)
    with pytest.raises(EnvSpecError) as info:
        _load(tmp_path, text)[0].to_arena_env()
    err, msg = info.value, str(info.value)
    want_line = _line(text, key.split(".")[-1] + ":")
    assert msg.startswith(f"{tmp_path / 'scene.yaml'}:{want_line}: "), msg
    assert err.key == key and fragment in msg and "\n" not in msg, msg
    assert "objects[0] (id 'slider'" in msg, msg


# ---- simulation (one kit-less OV PhysX start) -------------------------------------------------------------------
def _material_rows(asset):
    import warp as wp
    import isaaclab_ov.tensor_types as TT

    return wp.to_torch(asset.root_view.get_attribute(TT.RIGID_BODY_SHAPE_FRICTION_AND_RESTITUTION)).clone().cpu()


def _masses(asset):
    import warp as wp
    import isaaclab_ov.tensor_types as TT

    return wp.to_torch(asset.root_view.get_attribute(TT.RIGID_BODY_MASS)).clone().cpu().reshape(-1)


def _slide(u, names, v0: float, seconds: float) -> dict[str, torch.Tensor]:
    """Every env's ``names`` boxes get vx = v0 from rest; returns the x distance each travelled (float64)."""
    start = {}
    for n in names:
        a = u.scene[n]
        vel = torch.zeros(u.num_envs, 6, device=u.device)
        vel[:, 0] = v0
        a.write_root_velocity_to_sim_index(root_velocity=vel, env_ids=torch.arange(u.num_envs, device=u.device))
        start[n] = a.data.root_pos_w.torch[:, 0].clone().double().cpu()
    dt = u.sim.get_physics_dt()
    for _ in range(int(round(seconds / dt))):
        u.sim.step(render=False)
        u.scene.update(dt)
    return {n: u.scene[n].data.root_pos_w.torch[:, 0].double().cpu() - start[n] for n in names}


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    """Builds the SPEC env (4 envs) with the stock Isaac Lab terms on 'stock', resets it, reads back, slides."""
    from isaaclab.app import launch_simulation

    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.environments.property_draws import isaaclab_property_terms, property_terms_of

    spec, _ = _load(tmp_path_factory.mktemp("spec"), SPEC)
    arena_env = spec.to_arena_env()
    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(seed=11, physics="ovphysx", gym_id="test_property_draws"))
    cfg = builder.compose_manager_cfg()
    stock_ranges = PhysicalPropertyRanges(static_friction=(0.6, 0.7), dynamic_friction=(0.6, 0.7),
                                          restitution=(0.0, 0.0), mass_kg=(2.0, 3.0))
    stock_terms = isaaclab_property_terms(cfg, "stock", stock_ranges, mode="reset")
    out = {"builder": builder, "stock_ranges": stock_ranges, "stock_terms": stock_terms}
    with launch_simulation(cfg, {"headless": True, "device": "cpu"}):
        env = builder.make_registered(cfg)
        try:
            u = env.unwrapped
            env.reset()
            terms = property_terms_of(env)
            out["terms"] = sorted(terms)
            out["values0"] = {n: {f: v.clone() for f, v in t.values.items()} for n, t in terms.items()}
            out["counts0"] = {n: t.reset_counts.clone() for n, t in terms.items()}
            out["material0"] = {n: _material_rows(u.scene[n]) for n in ("slider", "plain", "stock")}
            out["mass0"] = {n: _masses(u.scene[n]) for n in ("slider", "plain", "stock")}
            out["slide0"] = _slide(u, ["slider", "plain", "stock"], v0=1.0, seconds=1.0)
            # reset env 2 alone (its second draw), then envs 3, 0 in that order
            torch.manual_seed(999)
            u.event_manager.apply(mode="reset", env_ids=torch.tensor([2]), global_env_step_count=0)
            u.event_manager.apply(mode="reset", env_ids=torch.tensor([3, 0]), global_env_step_count=0)
            out["values1"] = {n: {f: v.clone() for f, v in t.values.items()} for n, t in terms.items()}
            out["counts1"] = {n: t.reset_counts.clone() for n, t in terms.items()}
            out["material1"] = {n: _material_rows(u.scene[n]) for n in ("slider",)}
            out["mass1"] = {n: _masses(u.scene[n]) for n in ("slider",)}
            # replay: env 1's next reset applies given values
            terms["slider"].set_override([1], [{"static_friction": 0.8, "dynamic_friction": 0.25, "mass_kg": 0.75}])
            u.event_manager.apply(mode="reset", env_ids=torch.tensor([1]), global_env_step_count=0)
            out["material_replay"] = _material_rows(u.scene["slider"])
            out["mass_replay"] = _masses(u.scene["slider"])
            out["slide_replay"] = _slide(u, ["slider"], v0=1.0, seconds=1.0)
        finally:
            env.close()
    return out


def _mu_from_distance(d, v0=1.0):
    return v0 * v0 / (2.0 * G * d)


@pytest.mark.sim
def test_sim_drawn_values_are_applied_and_lie_in_the_ranges(sim):
    assert sim["terms"] == ["plain", "slider"]
    v, mat, mass = sim["values0"]["slider"], sim["material0"]["slider"], sim["mass0"]["slider"]
    assert sim["counts0"]["slider"].tolist() == [1, 1, 1, 1]
    for f, col in (("static_friction", 0), ("dynamic_friction", 1), ("restitution", 2)):
        assert torch.allclose(mat[:, :, col].double(), v[f][:, None], atol=1e-6), (f, mat, v[f])
    assert torch.allclose(mass.double(), v["mass_kg"], atol=1e-6), (mass, v["mass_kg"])
    assert float(v["static_friction"].min()) >= 0.2 and float(v["static_friction"].max()) <= 0.9
    assert float(v["mass_kg"].min()) >= 0.5 and float(v["mass_kg"].max()) <= 1.5
    assert len(set(v["dynamic_friction"].tolist())) == 4  # every env its own value
    # 'plain': mass scaled from the spawned 1.0 kg, friction left at the default
    p = sim["values0"]["plain"]
    assert torch.allclose(sim["mass0"]["plain"].double(), p["mass_scale"] * 1.0, atol=1e-6)
    assert torch.allclose(sim["material0"]["plain"][:, :, :2], torch.full_like(sim["material0"]["plain"][:, :, :2],
                                                                                DEFAULT_MU))


@pytest.mark.sim
def test_sim_draws_reproduce_per_env_whatever_the_grouping(sim):
    b = sim["builder"]
    seed = b.property_seed
    assert seed == 11  # no placement seed in the spec: the builder's seed
    ranges = b.arena_env.get_asset("slider").physical_property_ranges
    v0, v1, c1 = sim["values0"]["slider"], sim["values1"]["slider"], sim["counts1"]["slider"]
    assert c1.tolist() == [2, 1, 2, 2]
    first = draw_physical_properties(ranges, seed, "slider", torch.arange(4), torch.zeros(4, dtype=torch.long))
    second = draw_physical_properties(ranges, seed, "slider", torch.arange(4), torch.ones(4, dtype=torch.long))
    for f in v0:
        assert torch.equal(v0[f], first[f]), f  # first reset: all four together
        want = torch.where(c1 == 2, second[f], first[f])  # env 2 alone, then 3 and 0, global RNG reseeded between
        assert torch.equal(v1[f], want), f
    assert torch.allclose(sim["material1"]["slider"][:, 0, 1].double(), v1["dynamic_friction"], atol=1e-6)
    assert torch.allclose(sim["mass1"]["slider"].double(), v1["mass_kg"], atol=1e-6)


@pytest.mark.sim
def test_sim_stock_isaaclab_terms_run_at_reset_on_ovphysx(sim):
    r = sim["stock_ranges"]
    mat, mass = sim["material0"]["stock"], sim["mass0"]["stock"]
    assert float(mat[:, :, 0].min()) >= r.static_friction[0] - 1e-6 and float(mat[:, :, 0].max()) <= r.static_friction[1] + 1e-6
    assert float(mass.min()) >= 2.0 - 1e-6 and float(mass.max()) <= 3.0 + 1e-6


@pytest.mark.sim
def test_sim_friction_measured_by_stopping_distance(sim):
    """A box given vx = 1 m/s on the ground stops after d = v0^2 / (2 mu g); PhysX averages the two materials'
    dynamic friction (the ground's is 0.5), so mu = (mu_box + 0.5) / 2."""
    d = sim["slide0"]["slider"]
    mu_drawn = sim["values0"]["slider"]["dynamic_friction"]
    expected_mu = (mu_drawn + DEFAULT_MU) / 2.0
    measured_mu = _mu_from_distance(d)
    rel = (measured_mu - expected_mu).abs() / expected_mu
    assert bool((rel < 0.08).all()), (mu_drawn.tolist(), expected_mu.tolist(), measured_mu.tolist())
    lo, hi = int(mu_drawn.argmin()), int(mu_drawn.argmax())
    assert float(mu_drawn[hi] - mu_drawn[lo]) > 0.1 and float(d[lo]) > 1.2 * float(d[hi])  # two envs, two frictions
    # failure case: 'plain' has no friction range; it slides as the default material, whatever 'slider' drew
    mu_plain = _mu_from_distance(sim["slide0"]["plain"])
    assert bool(((mu_plain - DEFAULT_MU).abs() / DEFAULT_MU < 0.08).all()), mu_plain.tolist()
    # the stock term's friction is measured too
    mu_stock_box = sim["material0"]["stock"][:, 0, 1].double()
    mu_stock = _mu_from_distance(sim["slide0"]["stock"])
    assert bool((((mu_stock - (mu_stock_box + DEFAULT_MU) / 2).abs()) / mu_stock < 0.08).all())
    sim["report"] = {"drawn_mu_box": mu_drawn.tolist(), "expected_mu": expected_mu.tolist(),
                     "measured_mu": measured_mu.tolist(), "distance_m": d.tolist(), "plain_mu": mu_plain.tolist()}
    print(sim["report"])


@pytest.mark.sim
def test_sim_replay_override_applies_given_values(sim):
    mat, mass = sim["material_replay"], sim["mass_replay"]
    assert torch.allclose(mat[1, :, 0], torch.tensor(0.8)) and torch.allclose(mat[1, :, 1], torch.tensor(0.25))
    assert math.isclose(float(mass[1]), 0.75, rel_tol=1e-6)
    mu = _mu_from_distance(float(sim["slide_replay"]["slider"][1]))
    assert abs(mu - (0.25 + DEFAULT_MU) / 2) / mu < 0.08, mu

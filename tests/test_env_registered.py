"""Runners on real kit-less envs (OV PhysX, CPU), run in-process one after another (each run closes its env):

* ``policy_runner.py --policy_type zero_action --seed 42 --placement_seed 42 --num_steps N table_pick_and_place``
  (the registered Python environment) places, steps and writes summary, diagnostics and picture;
* ``--placement_layouts layouts.jsonl`` before the env name replays recorded layouts in a registered env;
* a Python env whose env 2 cannot be placed falls back, says so, and the picture highlights the failed check;
* bad input (unknown registered env, unknown env flag value, missing USD named by a YAML spec) is refused
  at build time with a message naming it.
"""

from __future__ import annotations

import json
import os

import pytest
import torch

TOP_Z = 0.75


@pytest.mark.sim
def test_policy_runner_places_and_steps_the_registered_env(tmp_path, capsys):
    from isaaclab_arena.evaluation.policy_runner import main

    out = str(tmp_path / "run")
    summary = main(["--policy_type", "zero_action", "--seed", "42", "--placement_seed", "42", "--num_steps", "40",
                    "--num_envs", "2", "--env_spacing", "2.5", "--output_dir", out,
                    "table_pick_and_place", "--additional_table_objects", "cube_8cm"])
    printed = capsys.readouterr().out
    assert "[placement] Validated 10 candidate layout(s); passed per check: no_overlap=" in printed
    assert "[arena] placed after reset (env-local x, y, z in m):" in printed
    assert summary["env"] == "table_pick_and_place" and summary["physics"] == "ovphysx"
    assert set(summary["after_reset"]) == {"mug", "bowl", "cube_8cm_0"}
    assert summary["placement"]["fallback_envs"] == [] and summary["placement"]["consumed_per_env"] == [1, 1]
    for name, half in (("mug", 0.05), ("bowl", 0.03), ("cube_8cm_0", 0.04)):
        z = torch.tensor(summary["final"][name])[:, 2]
        assert torch.all((z - (TOP_Z + half)).abs() < 3e-3), (name, z.tolist())
    assert os.path.isfile(os.path.join(out, "layouts.png")) and summary["picture_failed_checks"] == {}
    diag = json.load(open(os.path.join(out, "placement_diagnostics.json")))
    assert diag["fills"][0]["reason"] == "creation" and diag["fills"][0]["envs"] == [0, 1]
    assert json.load(open(os.path.join(out, "run_summary.json")))["steps"] == 40


@pytest.mark.sim
def test_placement_layouts_before_the_env_name_replays_in_a_registered_env(tmp_path):
    from isaaclab_arena.evaluation.policy_runner import main
    from isaaclab_arena.relations.placement_layouts import layouts_from_root_poses

    poses = {"mug": torch.tensor([[0.1, 0.1, 0.80, 0, 0, 0, 1], [-0.2, 0.0, 0.80, 0, 0, 0, 1],
                                  [0.3, -0.2, 0.80, 0, 0, 0, 1]]),
             "bowl": torch.tensor([[-0.3, 0.2, 0.78, 0, 0, 0, 1], [0.2, 0.2, 0.78, 0, 0, 0, 1],
                                   [-0.1, -0.2, 0.78, 0, 0, 0, 1]])}
    path = layouts_from_root_poses(poses).write_episode_jsonl(str(tmp_path / "layouts.jsonl"), source="solver")
    summary = main(["--num_envs", "2", "--env_spacing", "2.5", "--num_steps", "1", "--placement_layouts", path,
                    "--output_dir", str(tmp_path / "run"), "table_pick_and_place"])
    for name in ("mug", "bowl"):
        got = torch.tensor(summary["after_reset"][name])
        torch.testing.assert_close(got, poses[name][:2], atol=1e-4, rtol=0)
    assert "placement" not in summary  # nothing was solved


@pytest.mark.sim
def test_fallback_env_is_reported_and_highlighted(tmp_path, capsys):
    from isaaclab_arena.assets.object_reference import ObjectReference
    from isaaclab_arena.assets.object_set import RigidObjectSet
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.environments.isaaclab_arena_environment import IsaacLabArenaEnvironment
    from isaaclab_arena.environments.run_loop import run
    from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
    from isaaclab_arena.relations.relations import IsAnchor, NextTo, On, Side
    from isaaclab_arena_environments.assets import library as L

    bg = L.table_background("table_background")
    table = ObjectReference("table", "{ENV_REGEX_NS}/table_background/table", bg, object_type="base")
    table.add_relation(IsAnchor())
    mug = L.mug("mug").add_relation(On(table))
    # mug + 0.9 m + 16 cm box = 1.14 m does not fit the 1.1 m usable table length; the cubes do
    cube = RigidObjectSet("cube", [L.cube_4cm("a"), L.cube_8cm("b"), L.box_flat("c")])
    cube.add_relation(On(table)).add_relation(NextTo(mug, side=Side.POSITIVE_X, distance_m=0.9))
    params = ObjectPlacerParams(max_placement_attempts=2, min_unique_layouts_per_env=2)
    arena_env = IsaacLabArenaEnvironment("fallback_scene", [bg, table, mug, cube], placer_params=params)
    out = str(tmp_path / "run")
    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=3, env_spacing=2.5, placement_seed=1,
                                                            output_dir=out, gym_id="test_fallback_scene"))
    summary = run(builder, 1, out)
    printed = capsys.readouterr().out
    assert "[placement] best-loss fallback used for 2 layout slot(s) in env(s) [2]" in printed
    assert "  next_to: 'cube' next_to(mug, positive_x): " in printed
    assert summary["placement"]["fallback_envs"] == [2]
    assert summary["picture_failed_checks"] == {"2": ["next_to"]}
    # the fallback layout is still written into env 2 (best loss), the others are valid layouts
    pool = builder.placer
    assert pool.current_passed.tolist() == [True, True, False]
    k = pool.object_names.index("cube")
    torch.testing.assert_close(torch.tensor(summary["after_reset"]["cube"]), pool.current_poses[:, k], atol=1e-4, rtol=0)


def test_unknown_registered_env_is_refused_naming_it(capsys):
    from isaaclab_arena.evaluation.policy_runner import build_from_args

    with pytest.raises(SystemExit):
        build_from_args(["--num_steps", "1", "pick_and_place_maple_table"])
    err = capsys.readouterr().err
    assert "unknown registered environment 'pick_and_place_maple_table'; registered: ['franka_table_pick_and_place', 'table_pick_and_place']" in err
    with pytest.raises(SystemExit):
        build_from_args(["--num_steps", "1"])
    assert "name a registered environment after the runner flags" in capsys.readouterr().err
    with pytest.raises(ValueError, match="--additional_table_objects: unknown object .chair."):
        build_from_args(["table_pick_and_place", "--additional_table_objects", "chair"])


def test_yaml_spec_naming_a_missing_usd_file_is_refused_with_its_line(tmp_path):
    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec

    spec = tmp_path / "scene.yaml"
    spec.write_text("env_name: bad_usd\nobjects:\n  - id: chair\n    registry_name: usd_file\n"
                    "    params:\n      usd_path: /no/such/chair.usda\n      initial_pose: {position_xyz: [0, 0, 1]}\n")
    from isaaclab_arena.env_spec.arena_env_graph_spec import EnvSpecError

    with pytest.raises(EnvSpecError, match=r"scene\.yaml:6: objects\[0\] \(id 'chair', registry_name 'usd_file'\), key "
                                          r"'params\.usd_path'.*'/no/such/chair\.usda' does not exist"):
        ArenaEnvGraphSpec.from_yaml(str(spec)).to_arena_env()

"""Forbidden replay configurations (recorded layouts with re-solving or a placement seed), refused through the
real entry points.

Builder configuration (``ArenaEnvBuilderCfg``), runner flags (``environment_runner.py`` / ``policy_runner.py``),
YAML ``placer_params`` and the environment's defaults; bad layout files through the builder. Every error names
the setting (or ``file:line``), the file on disk is left byte-for-byte as it was, and nothing is launched:
the configuration is refused while the env config is composed, before any simulator starts.
"""

from __future__ import annotations

import os

import pytest
import torch

from isaaclab_arena import ARENA_ROOT
from isaaclab_arena.relations.placement_layouts import PlacementLayouts, PlacementLayoutsError
from isaaclab_arena.offline_placement.placement_replay import ReplayConfigError

TABLE_SCENE = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "tabletop", "mug_bowl_table.yaml")
with open(TABLE_SCENE) as _fh:
    TABLE_YAML = _fh.read()
IDENTITY = [0.0, 0.0, 0.0, 1.0]


def _layouts(names=("mug", "bowl"), n=2) -> PlacementLayouts:
    pos = torch.tensor([[0.1 * i - 0.1, 0.1, 0.80] for i in range(len(names))]).expand(n, -1, -1).clone()
    return PlacementLayouts(tuple(names), pos, torch.tensor(IDENTITY).expand(n, len(names), 4).clone())


@pytest.fixture()
def layouts_file(tmp_path):
    return _layouts().write_episode_jsonl(tmp_path / "layouts.jsonl", source="settled")


def _compose(spec=TABLE_SCENE, *, layouts=None, **cfg):
    """Builds the builder of ``spec`` (a path) and composes its env config; returns the builder."""
    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg

    arena_env = ArenaEnvGraphSpec.from_yaml(spec).to_arena_env()
    if layouts is not None:
        arena_env.placement_layouts = layouts
    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=2, **cfg))
    builder.compose_manager_cfg()
    return builder


def _spec(tmp_path, text, name="scene.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_control_a_valid_replay_configuration_composes(layouts_file):
    builder = _compose(placement_layouts_path=str(layouts_file))
    assert builder.placer is None
    assert {"mug", "bowl"} <= set(builder.pose_source.object_names)


# ---- placement_seed: CLI, builder configuration, placer_params ----------------------------------------------------
def test_placement_seed_in_builder_cfg_is_refused(layouts_file):
    with open(layouts_file, "rb") as fh:
        before = fh.read()
    with pytest.raises(ReplayConfigError, match=r"ArenaEnvBuilderCfg\.placement_seed=3 is set; remove explicit "
                                                r"placement_seed settings"):
        _compose(placement_layouts_path=str(layouts_file), placement_seed=3)
    with open(layouts_file, "rb") as fh:
        assert fh.read() == before


def test_placement_seed_in_yaml_placer_params_is_refused(tmp_path, layouts_file):
    spec = _spec(tmp_path, TABLE_YAML + "placer_params:\n  placement_seed: 7\n")
    with pytest.raises(ReplayConfigError, match=r"placer_params\.placement_seed=7 is set"):
        _compose(spec, placement_layouts_path=str(layouts_file))


@pytest.mark.parametrize("runner", ["environment_runner", "policy_runner"])
def test_placement_seed_flag_is_refused_by_the_runners(runner, layouts_file, tmp_path):
    args = ["--placement_layouts", str(layouts_file), "--placement_seed", "5", "--num_steps", "0",
            "--output_dir", str(tmp_path / "out"), "--no-pictures"]
    with pytest.raises(ReplayConfigError, match=r"--placement_seed / ArenaEnvBuilderCfg\.placement_seed=5 is set"):
        _run(runner, args)
    assert not (tmp_path / "out").exists()


def _run(runner, args):
    if runner == "environment_runner":
        from isaaclab_arena.scripts import environment_runner

        return environment_runner.main(["--env_spec", TABLE_SCENE, *args])
    from isaaclab_arena.evaluation import policy_runner

    return policy_runner.main([*args, "table_pick_and_place"])


# ---- resolve_on_reset: --no-resolve_on_reset, builder cfg, the environment's default ---------------------------------
@pytest.mark.parametrize("runner", ["environment_runner", "policy_runner"])
def test_no_resolve_on_reset_flag_is_refused(runner, layouts_file, tmp_path):
    args = ["--placement_layouts", str(layouts_file), "--no-resolve_on_reset", "--num_steps", "0",
            "--output_dir", str(tmp_path / "out"), "--no-pictures"]
    with pytest.raises(ReplayConfigError, match=r"--resolve_on_reset / ArenaEnvBuilderCfg\.resolve_on_reset is False; "
                                                r"recorded layouts need resolve_on_reset=True"):
        _run(runner, args)


def test_resolve_on_reset_false_in_builder_cfg_is_refused(layouts_file):
    with pytest.raises(ReplayConfigError, match=r"ArenaEnvBuilderCfg\.resolve_on_reset is False"):
        _compose(placement_layouts_path=str(layouts_file), resolve_on_reset=False)


def test_false_environment_default_resolve_on_reset_is_refused(tmp_path, layouts_file):
    spec = _spec(tmp_path, TABLE_YAML + "placer_params:\n  resolve_on_reset: false\n")
    with pytest.raises(ReplayConfigError, match=r"placer_params\.resolve_on_reset is False"):
        _compose(spec, placement_layouts_path=str(layouts_file))
    # The same environment default in Python (a registered environment's ObjectPlacerParams).
    import argparse
    import dataclasses

    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena_environments.registered import get_registered_environment

    add_args, build = get_registered_environment("table_pick_and_place")
    parser = argparse.ArgumentParser()
    add_args(parser)
    arena_env = build(parser.parse_args([]))
    arena_env.placer_params = dataclasses.replace(arena_env.placer_params, resolve_on_reset=False)
    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=2, placement_layouts_path=str(layouts_file)))
    with pytest.raises(ReplayConfigError, match=r"placer_params\.resolve_on_reset is False"):
        builder.compose_manager_cfg()


# ---- both a path and a PlacementLayouts object --------------------------------------------------------------------
def test_path_and_object_together_are_refused(layouts_file):
    with pytest.raises(ReplayConfigError, match=r"both a placement layouts path .*placement_layouts_path / "
                                                r"--placement_layouts\) and a PlacementLayouts object"):
        _compose(layouts=_layouts(), placement_layouts_path=str(layouts_file))


def test_placement_layouts_attribute_of_the_wrong_type_is_refused():
    with pytest.raises(ReplayConfigError, match="placement_layouts must be a PlacementLayouts"):
        _compose(layouts="layouts.jsonl")


# ---- scene: object sets, RandomAroundSolution, missing placed objects ------------------------------------------------
OBJECT_SET_YAML = TABLE_YAML + """object_sets:
  - id: thing
    members: [box_flat, cube_4cm]
"""


def test_recorded_object_set_is_refused(tmp_path):
    spec = _spec(tmp_path, OBJECT_SET_YAML.replace("relations:\n", "relations:\n  - {kind: 'on', subject: thing, "
                                                                   "reference: table}\n"))
    with pytest.raises(ReplayConfigError, match="recorded asset 'thing' is a RigidObjectSet; replay needs concrete "
                                                "assets"):
        _compose(spec, layouts=_layouts(("mug", "bowl", "thing")))
    # Leaving the set out of the recording is no way around it: it is a placed object.
    with pytest.raises(ReplayConfigError, match="missing placed object 'thing'"):
        _compose(spec, layouts=_layouts(("mug", "bowl")))


def test_random_around_solution_on_a_recorded_asset_is_refused(tmp_path, layouts_file):
    spec = _spec(tmp_path, TABLE_YAML + "  - kind: random_around_solution\n    subject: mug\n"
                                        "    params: {x_half_m: 0.01}\n")
    with pytest.raises(ReplayConfigError, match="recorded asset 'mug' uses RandomAroundSolution; remove it"):
        _compose(spec, placement_layouts_path=str(layouts_file))


def test_missing_non_anchor_relation_object_is_refused(tmp_path):
    path = _layouts(("mug",)).write_episode_jsonl(tmp_path / "mug_only.jsonl", source="settled")
    with pytest.raises(ReplayConfigError, match=r"mug_only\.jsonl: missing placed object 'bowl' .*every non-anchor "
                                                r"asset with spatial relations must be in the recording"):
        _compose(placement_layouts_path=str(path))


def test_unknown_recorded_key_is_refused(tmp_path):
    path = _layouts(("mug", "bowl", "plate")).write_episode_jsonl(tmp_path / "plate.jsonl", source="settled")
    with pytest.raises(ReplayConfigError, match="Unknown cached object 'plate'"):
        _compose(placement_layouts_path=str(path))


def test_missing_file_names_the_path_and_working_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"placement layouts file '.*nope\.jsonl' does not exist \(paths are "
                                                r"relative to the working directory"):
        _compose(placement_layouts_path=str(tmp_path / "nope.jsonl"))


# ---- bad layout files through the builder: file:line, and the file is left as it was --------------------------------
GOOD = ('{"source": "settled", "variations": {"scene.relation_placement": {"poses": {'
        '"mug": {"position_xyz": [0.1, 0.1, 0.8], "rotation_xyzw": [0, 0, 0, 1]}, '
        '"bowl": {"position_xyz": [-0.1, 0.1, 0.78], "rotation_xyzw": [0, 0, 0, 1]}}}}, "episode": 3}')


@pytest.mark.parametrize("bad,expected", [
    ('{"variations": {"scene.relation_placement": {"poses": {', r":3: malformed JSON"),
    (GOOD.replace("[0.1, 0.1, 0.8]", "[0.1, NaN, 0.8]"), r":3: object 'mug': position_xyz is not finite"),
    (GOOD.replace("[0.1, 0.1, 0.8]", "[0.1, Infinity, 0.8]"), r":3: object 'mug': position_xyz is not finite"),
    (GOOD.replace('"rotation_xyzw": [0, 0, 0, 1]}, "bowl"', '"rotation_xyzw": [0, 0, 0.1, 1]}, "bowl"'),
     r":3: object 'mug': rotation_xyzw \[0.0, 0.0, 0.1, 1.0\] is not a unit quaternion \(norm 1.004988"),
    (GOOD.replace(', "bowl": {"position_xyz": [-0.1, 0.1, 0.78], "rotation_xyzw": [0, 0, 0, 1]}', ""),
     r":3: missing objects \['bowl'\] versus line 1"),
    (GOOD.replace('"bowl": {', '"plate": {"position_xyz": [0, 0, 0.8], "rotation_xyzw": [0, 0, 0, 1]}, "bowl": {'),
     r":3: extra objects \['plate'\] versus line 1"),
    ('{"source": "settled", "episode": 3, "variations": {"scene.other": {}}}',
     r":3: no placement block .*episodes without placement records cannot be loaded"),
], ids=["malformed_json", "nan", "infinity", "non_unit_quaternion", "missing_object", "extra_object",
        "no_placement_block"])
def test_bad_file_line_is_refused_with_file_and_line(tmp_path, bad, expected):
    path = tmp_path / "bad.jsonl"
    text = GOOD + "\n\n" + bad + "\n" + GOOD + "\n"  # line 2 is blank (skipped), line 3 is bad
    path.write_text(text)
    before = path.read_bytes()
    with pytest.raises(PlacementLayoutsError, match=r"bad\.jsonl" + expected):
        _compose(placement_layouts_path=str(path))
    assert path.read_bytes() == before, "a refused file must be left exactly as it was"


def test_extra_episode_fields_are_ignored_and_blank_lines_skipped(tmp_path):
    path = tmp_path / "extra.jsonl"
    path.write_text(GOOD + "\n\n   \n" + GOOD.replace('"episode": 3', '"episode": 4, "policy": {"name": "zero"}') + "\n")
    builder = _compose(placement_layouts_path=str(path))
    layouts = builder.pose_source.sources[-1].layouts if hasattr(builder.pose_source, "sources") else \
        builder.pose_source.layouts
    assert len(layouts) == 2 and layouts.line_numbers == [1, 4]


def test_recorded_static_background_is_refused(tmp_path):
    """The table background is not an anchor here (its tabletop reference is), but it has no writable root."""
    path = _layouts(("mug", "bowl", "table_background")).write_episode_jsonl(tmp_path / "bg.jsonl", source="settled")
    with pytest.raises(ReplayConfigError, match=r"recorded object 'table_background' \(Background 'table_background', "
                                                r"object_type 'base'\) has no writable physics root"):
        _compose(placement_layouts_path=str(path))

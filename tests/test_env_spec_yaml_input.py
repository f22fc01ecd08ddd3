"""What a spec says reaches the env, and what it cannot mean is refused: YAML ``num_envs`` / ``env_spacing`` (CLI
wins), ``reference: null`` on unary kinds, relation ``id`` named in every message and written back, values larger
than the scene and position limits that exclude every support refused with file, line and key. The user-facing
cases run ``environment_runner.py`` in a subprocess from a temporary folder outside the repository."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import pytest

from isaaclab_arena import ARENA_ROOT
from isaaclab_arena.env_spec import ArenaEnvGraphSpec, EnvSpecWarning
from isaaclab_arena.relations.relations import IsAnchor, On
from _spec_helpers import check_error, line_no, load_error, write

RUNNER = os.path.join(ARENA_ROOT, "isaaclab_arena", "scripts", "environment_runner.py")

#: The README scene with relation ids, ``reference: null`` on the anchor and run settings. Table top: a
#: 1.2 x 0.8 m prim at z = 0.75 m (x -0.6 .. 0.6, y -0.4 .. 0.4), so the scene size is 1.2 m.
SCENE = """\
env_name: ids_and_nulls
num_envs: 3
env_spacing: 1.75
background: {id: table_background, registry_name: table_background}
object_references:
  - {id: table, parent_id: table_background, prim_path: table, object_type: base}
objects:
  - {id: mug, registry_name: mug}
  - {id: bowl, registry_name: bowl}
relations:
  - kind: is_anchor
    subject: table
    reference: null
  - id: mug_on_table
    kind: 'on'
    subject: mug
    reference: table
  - id: bowl_on_table
    kind: 'on'
    subject: bowl
    reference: table
    params:
      clearance_m: 0.01
  - id: bowl_beside_mug
    kind: next_to
    subject: bowl
    reference: mug
  - id: mug_left_half
    kind: position_limits
    subject: mug
    params:
      x_limits: [null, 0.1]
"""


def _run(cwd, *args):
    """``environment_runner.py`` from ``cwd`` (outside the repository), with this checkout on the path."""
    env = dict(os.environ, PYTHONPATH=ARENA_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, RUNNER, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


def _refused(out) -> str:
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    return out.stderr.strip().splitlines()[-1]


def _load(tmp_path, text: str):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spec = ArenaEnvGraphSpec.from_yaml(write(tmp_path, text))
    return spec, [str(w.message) for w in caught if issubclass(w.category, EnvSpecWarning)]


# -- reference: null and relation ids --------------------------------------------------------------------------
def test_reference_null_and_relation_ids_load_and_round_trip(tmp_path):
    spec, notes = _load(tmp_path, SCENE)
    assert notes == []
    assert spec.relations[0].reference is None and [r.id for r in spec.relations] == \
        [None, "mug_on_table", "bowl_on_table", "bowl_beside_mug", "mug_left_half"]
    env = spec.to_arena_env()
    assert env.get_asset("table").get_relations() == [IsAnchor()]
    assert env.get_asset("mug").get_relations()[0] == On(env.get_asset("table"))
    data = spec.to_dict()
    assert data["relations"][0] == {"kind": "is_anchor", "subject": "table"}  # null written as no reference
    assert data["relations"][1] == {"id": "mug_on_table", "kind": "on", "subject": "mug", "reference": "table"}
    again = ArenaEnvGraphSpec.from_yaml(spec.to_yaml(tmp_path / "again.yaml"))
    assert again == spec and [r.id for r in again.relations] == [r.id for r in spec.relations]
    assert ArenaEnvGraphSpec.from_dict(data) == spec


def test_reference_null_on_a_binary_kind_is_still_missing(tmp_path):
    text = SCENE.replace("  - id: mug_on_table\n    kind: 'on'\n    subject: mug\n    reference: table\n",
                         "  - id: mug_on_table\n    kind: 'on'\n    subject: mug\n    reference: null\n")
    err, path = load_error(tmp_path, text)
    check_error(err, path, line_no(text, "- id: mug_on_table"), "relations[1] (id 'mug_on_table', kind 'on', subject "
                "'mug')", "kind 'on' relates two assets and needs a 'reference'", key="reference")


@pytest.mark.parametrize("old,new,fragment,key", [
    ("kind: next_to\n", "kind: next_to\n    distance: 0.1\n", "unknown parameter 'distance' (did you mean "
     "'distance_m'?)", "distance"),  # parse time
    ("clearance_m: 0.01", "clearance_m: -0.01", "On: clearance_m must be >= 0", "params.clearance_m"),  # constructor
    ("clearance_m: 0.01", "clearance_m: 5.0", "On: clearance_m=5 m is larger than its support 'table'",
     "params.clearance_m"),  # constructor: a length above its support
])
def test_relation_id_names_the_relation_in_messages(tmp_path, old, new, fragment, key):
    text = SCENE.replace(old, new)
    err, path = load_error(tmp_path, text)
    line = line_no(text, new.strip().splitlines()[-1])
    check_error(err, path, line, "(id 'bowl_", fragment, key=key)


def test_relation_id_names_a_restriction_error_and_duplicates_are_refused(tmp_path):
    text = SCENE + "  - {id: face_bowl, kind: face_to, subject: mug, reference: bowl}\n" \
                   "  - {id: face_bowl_again, kind: face_to, subject: mug, reference: bowl}\n"
    err, path = load_error(tmp_path, text)
    # both relations are the same; the second one is what breaks the restriction, so it is the one named
    check_error(err, path, line_no(text, "face_bowl_again"), "relations[6] (id 'face_bowl_again', kind 'face_to'",
                "a subject can have only one FaceTo")
    text = SCENE + "  - {id: mug_on_table, kind: 'on', subject: bowl, reference: table}\n"
    err, path = load_error(tmp_path, text)
    check_error(err, path, len(text.splitlines()), "duplicate relation id 'mug_on_table': already used by relations[1] "
                f"(line {line_no(text, 'id: mug_on_table')})", key="id")
    text = SCENE.replace("id: mug_left_half", "id: [1]")
    err, path = load_error(tmp_path, text)
    check_error(err, path, line_no(text, "id: [1]"), "'id' of a relation must be a non-empty string", key="id")


# -- build errors are attributed to the node and key being built ------------------------------------------------
@pytest.mark.parametrize("entry,key", [
    ("{kind: position_limits_cylindrical, subject: bowl, center_x: 0, center_y: 0, radius_min: 0.5, radius_max: 0.2}",
     "params.radius_max"),  # two values conflict: the one written last
    ("{kind: position_limits_cylindrical, subject: bowl, center_x: 0, center_y: 0, radius_max: 0.2, radius_min: 0.5}",
     "params.radius_min"),
    ("{kind: align_with, subject: bowl, reference: mug, tolerance_m: 0.1, axis: w}", "params.axis"),  # required one
])
def test_constructor_errors_name_the_key_that_fails(tmp_path, entry, key):
    text = SCENE + f"  - {entry}\n"
    err, path = load_error(tmp_path, text)
    check_error(err, path, len(text.splitlines()), "relations[5]", key=key)


def test_asset_errors_name_the_parameter_that_fails(tmp_path):
    text = SCENE.replace("  - {id: mug, registry_name: mug}\n",
                         "  - id: mug\n    registry_name: box\n    params:\n      mass_kg: 0.2\n      size: [0.1, -0.1, 0.1]\n")
    err, path = load_error(tmp_path, text)
    check_error(err, path, line_no(text, "size: [0.1, -0.1"), "objects[0] (id 'mug', registry_name 'box')",
                "size[1] must be > 0, got -0.1", key="params.size")
    radius = SCENE.replace("  - {id: mug, registry_name: mug}\n",
                           "  - id: mug\n    registry_name: cylinder\n    params:\n      height: 0.1\n      radius: -0.04\n")
    err, path = load_error(tmp_path, radius)
    check_error(err, path, line_no(radius, "radius: -0.04"), "radius must be > 0", key="params.radius")


def test_without_a_single_culprit_only_the_node_is_named(tmp_path):
    """Two required parameters, one wrong: leaving out either fails differently, so no key is named."""
    text = SCENE + "  - kind: position_limits_cylindrical\n    subject: bowl\n    center_x: 0.0\n    center_y: abc\n" \
                   "    radius_max: 0.3\n"
    err, path = load_error(tmp_path, text)
    check_error(err, path, line_no(text, "kind: position_limits_cylindrical"), "relations[5] (kind "
                "'position_limits_cylindrical', subject 'bowl')", "center_y must be a number, got 'abc'")
    assert err.key is None


# -- values that cannot be meant -------------------------------------------------------------------------------
@pytest.mark.parametrize("entry,key,fragment", [
    ("{kind: next_to, subject: mug, reference: bowl, distance_m: 1.5}", "params.distance_m", "distance_m=1.5 m"),
    ("{kind: align_with, subject: bowl, reference: mug, axis: x, offset_m: -2.0}", "params.offset_m", "offset_m=-2 m"),
    ("{kind: position_limits, subject: bowl, x_limits: [1.0, 2.0]}", "params.x_limits", "no position over its support"),
    ("{kind: position_limits, subject: bowl, y_limits: [null, -0.6]}", "params.y_limits", "no position over its support"),
    ("{kind: position_limits, subject: bowl, z_limits: [0.0, 0.4]}", "params.z_limits", "no position over its support"),
    ("{kind: position_limits_cylindrical, subject: bowl, center_x: 2.0, center_y: 0.0, radius_max: 1.0}",
     "params.radius_max", "no position over its support 'table'"),
    ("{kind: position_limits_cylindrical, subject: bowl, center_x: 0.0, center_y: 0.0, radius_min: 1.0}",
     "params.radius_min", "no position over its support 'table'"),
    ("{kind: at_position, subject: bowl, x: 0.9}", "params.x", "no position over its support 'table'"),
])
def test_values_that_cannot_be_meant_are_refused(tmp_path, entry, key, fragment):
    text = SCENE + f"  - {entry}\n"
    err, path = load_error(tmp_path, text)
    check_error(err, path, len(text.splitlines()), "relations[5]", fragment, key=key)


def test_refusal_thresholds_leave_meant_values_alone(tmp_path):
    """Limits that leave room over the table (the bowl, 8 cm in radius, fits with its centre up to x = 0.52 m), a
    large clearance smaller than the scene, a relation id with no limits at all, and every shipped example load
    without a refusal or a warning."""
    import glob

    text = SCENE.replace("clearance_m: 0.01", "clearance_m: 0.5") + \
        "  - {kind: position_limits, subject: bowl, x_limits: [0.4, 2.0]}\n" \
        "  - {kind: position_limits_cylindrical, subject: bowl, center_x: 1.2, center_y: 0.0, radius_max: 0.75}\n"
    spec, notes = _load(tmp_path, text)
    assert notes == [] and len(spec.relations) == 7
    for path in glob.glob(os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "**", "*.yaml"), recursive=True):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ArenaEnvGraphSpec.from_yaml(path)
        assert [w for w in caught if issubclass(w.category, EnvSpecWarning)] == [], path


def test_doubtful_values_are_warned_with_file_line_and_key(tmp_path):
    text = SCENE.replace("  - {id: bowl, registry_name: bowl}\n",
                         "  - {id: bowl, registry_name: bowl}\n  - {id: lamp, registry_name: cube_4cm}\n")
    text += "  - {kind: next_to, subject: mug, reference: bowl, side: negative_x, tolerance_m: 2.0}\n"
    text += "  - {kind: at_position, subject: lamp, x: 4.0, z: 0.02}\n"
    spec, notes = _load(tmp_path, text)
    path = str(tmp_path / "scene.yaml")
    assert len(notes) == 2, notes
    assert notes[0].startswith(f"{path}:{line_no(text, 'tolerance_m: 2.0')}: relations[5] (kind 'next_to'")
    assert "key 'params.tolerance_m'" in notes[0] and "constrains nothing" in notes[0]
    assert notes[1].startswith(f"{path}:{len(text.splitlines())}: relations[6] (kind 'at_position', subject 'lamp')")
    assert "key 'params.x'" in notes[1] and "neighbouring env" in notes[1]
    assert spec.to_arena_env().get_asset("lamp").get_relations()[0].x == 4.0  # warned, not refused


# -- num_envs / env_spacing --------------------------------------------------------------------------------------
def test_spec_run_settings_reach_the_builder_and_the_cli_wins(tmp_path):
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg
    from isaaclab_arena.environments.cli import builder_cfg_from_args, get_isaaclab_arena_cli_parser

    env = ArenaEnvGraphSpec.from_yaml(write(tmp_path, SCENE)).to_arena_env()
    assert (env.num_envs, env.env_spacing) == (3, 1.75)
    parser = get_isaaclab_arena_cli_parser()
    builder = ArenaEnvBuilder(env, builder_cfg_from_args(parser.parse_args([])))
    assert (builder.cfg.num_envs, builder.env_spacing) == (3, 1.75)
    builder = ArenaEnvBuilder(env, builder_cfg_from_args(parser.parse_args(["--num_envs", "2", "--env_spacing", "4"])))
    assert (builder.cfg.num_envs, builder.env_spacing) == (2, 4.0)
    builder = ArenaEnvBuilder(env, ArenaEnvBuilderCfg(num_envs=5))
    assert (builder.cfg.num_envs, builder.env_spacing) == (5, 1.75)
    with pytest.raises(SystemExit):
        parser.parse_args(["--num_env", "4"])  # no prefix matching: --num_env is not --num_envs
    bare = ArenaEnvGraphSpec.from_yaml(os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "tabletop",
                                                    "mug_bowl_table.yaml")).to_arena_env()
    builder = ArenaEnvBuilder(bare, ArenaEnvBuilderCfg())
    assert (builder.cfg.num_envs, builder.env_spacing) == (1, 2.5)  # 1.2 m table at the origin: 2 * 0.6 + 1 -> 2.5


def test_default_env_spacing_follows_the_scene_extent(tmp_path):
    from isaaclab_arena.environments.env_spacing import FALLBACK_ENV_SPACING_M, default_env_spacing

    def spacing(background: str) -> float:
        text = f"env_name: s\nbackground: {background}\nobjects:\n  - {{id: cube, registry_name: cube_4cm}}\n"
        return default_env_spacing(ArenaEnvGraphSpec.from_yaml(write(tmp_path, text)).to_arena_env().assets)

    assert spacing("{id: floor, registry_name: static_box, params: {size: [3.0, 1.0, 0.1]}}") == 4.0  # 2 * 1.5 + 1
    off_centre = "{id: floor, registry_name: static_box, params: {size: [1.0, 1.0, 0.1], " \
                 "initial_pose: {position_xyz: [2.0, 0.0, 0.05]}}}"
    assert spacing(off_centre) == 6.0  # reaches x = 2.5 m: 2 * 2.5 + 1
    text = "env_name: s\nobjects:\n  - {id: cube, registry_name: cube_4cm}\n"
    assert default_env_spacing(ArenaEnvGraphSpec.from_yaml(write(tmp_path, text)).to_arena_env().assets) == \
        FALLBACK_ENV_SPACING_M


@pytest.mark.sim
def test_real_env_gets_the_spec_env_count_and_spacing(tmp_path):
    """A kit-less env built without any count or spacing in the builder cfg has the spec's 3 envs, 1.75 m apart."""
    import torch
    from isaaclab.app import launch_simulation

    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg

    env = ArenaEnvGraphSpec.from_yaml(write(tmp_path, SCENE)).to_arena_env()
    builder = ArenaEnvBuilder(env, ArenaEnvBuilderCfg(placement_seed=3, output_dir=str(tmp_path),
                                                      gym_id="test_env_spec_yaml_input"))
    env_cfg = builder.compose_manager_cfg()
    with launch_simulation(env_cfg, {"headless": True, "device": "cpu"}):
        gym_env = builder.make_registered(env_cfg)
        try:
            gym_env.reset()
            origins = gym_env.unwrapped.scene.env_origins.double()
            assert origins.shape == (3, 3)
            gaps = torch.cdist(origins, origins) + torch.eye(3, dtype=torch.float64) * 1e9
            assert float(gaps.min()) == pytest.approx(1.75, abs=1e-5)
        finally:
            gym_env.close()


# -- through the runner, from a folder outside the repository ----------------------------------------------------
@pytest.mark.sim
@pytest.mark.slow
def test_runner_uses_the_spec_run_settings(tmp_path):
    (tmp_path / "scene.yaml").write_text(SCENE)
    out = _run(tmp_path, "--env_spec", "scene.yaml", "--num_steps", "1", "--no-pictures", "--placement_seed", "5")
    assert out.returncode == 0, out.stderr[-2000:]
    with open(tmp_path / "outputs" / "arena" / "run_summary.json") as f:
        summary = json.load(f)
    assert (summary["num_envs"], summary["env_spacing"]) == (3, 1.75)
    assert len(summary["after_reset"]["mug"]) == 3
    mug_x = [row[0] for row in summary["after_reset"]["mug"]]
    assert max(mug_x) <= 0.1 + 1e-4  # the position limit with an id and the null reference were honoured


@pytest.mark.slow
@pytest.mark.parametrize("old,new,fragments", [
    ("clearance_m: 0.01", "clearance_m: 5.0", ("relations[2] (id 'bowl_on_table'", "key 'params.clearance_m'",
                                                "larger than its support 'table'")),
    ("x_limits: [null, 0.1]", "x_limits: [null, -1.0]", ("relations[4] (id 'mug_left_half'", "key 'params.x_limits'",
                                                          "no position over its support 'table'")),
    ("{id: mug, registry_name: mug}", "{id: mug, registry_name: box, params: {size: [0.08, -0.08, 0.1]}}",
     ("objects[0] (id 'mug', registry_name 'box')", "key 'params.size'", "size[1] must be > 0")),
], ids=["clearance", "limits", "negative_size"])
def test_runner_refuses_values_that_cannot_be_meant(tmp_path, old, new, fragments):
    text = SCENE.replace(old, new)
    (tmp_path / "scene.yaml").write_text(text)
    last = _refused(_run(tmp_path, "--env_spec", "scene.yaml", "--num_steps", "1"))
    assert last.startswith(f"error: scene.yaml:{line_no(text, new)}: "), last
    for fragment in fragments:
        assert fragment in last, last
    assert not (tmp_path / "outputs").exists()  # refused before anything ran

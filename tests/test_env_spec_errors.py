"""YAML environment specs, bad input: every message names the file, the line, the node and the key, and says
what is accepted."""

from __future__ import annotations

import pytest

from isaaclab_arena.env_spec import ArenaEnvGraphSpec, EnvSpecError
from _spec_helpers import BASE, check_error, line_no, load_error, write_room_usd

_check = check_error


def test_unknown_kind(tmp_path):
    text = BASE.replace("kind: next_to", "kind: next_too")
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "next_too"), "relations[2]", "unknown relation kind 'next_too'",
           "did you mean 'next_to'?", "position_limits (= position_limits_box)", key="kind")


def test_unquoted_on_is_a_boolean(tmp_path):
    text = BASE.replace("kind: 'on'", "kind: on", 1)
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "kind: on"), "relations[1] (subject 'mug', reference 'table')",
           "YAML 1.1 reads an unquoted on", "quote it: kind: 'on'", key="kind")


def test_unknown_subject_and_reference(tmp_path):
    text = BASE.replace("subject: mug\n    reference: table", "subject: cup\n    reference: table")
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "subject: cup"), "relations[1] (kind 'on', subject 'cup', reference 'table')",
           "unknown subject 'cup'", "asset ids defined in this spec: bowl, mug, table", key="subject")
    text = BASE.replace("reference: mug", "reference: plate")
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "reference: plate"), "relations[2] (kind 'next_to', subject 'bowl', "
           "reference 'plate')", "unknown reference 'plate'", key="reference")


def test_missing_reference_for_binary_relation(tmp_path):
    text = BASE + "  - kind: face_to\n    subject: mug\n"
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "kind: face_to"), "relations[4] (kind 'face_to', subject 'mug')",
           "kind 'face_to' relates two assets and needs a 'reference'", key="reference")


def test_reference_on_unary_relation(tmp_path):
    text = BASE.replace("  - kind: is_anchor\n    subject: table\n", "  - kind: is_anchor\n    subject: table\n"
                        "    reference: mug\n")
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "reference: mug"), "relations[0] (kind 'is_anchor', subject 'table')",
           "Relation kind 'is_anchor' must not define relation.reference", key="reference")


def test_unknown_parameter(tmp_path):
    text = BASE.replace("params: {clearance_m: 0.02}", "params:\n      clearence_m: 0.02")
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "clearence_m"), "relations[3] (kind 'on', subject 'bowl', reference 'table')",
           "unknown parameter 'clearence_m' (did you mean 'clearance_m'?) for On",
           "accepted parameters: relation_loss_weight=1.0, clearance_m=0.01, edge_margin_m=0.05, overlap=False",
           key="params.clearence_m")


@pytest.mark.parametrize("value,fragment", [
    ("abc", "On: clearance_m must be a number, got 'abc'"),
    ("-0.5", "On: clearance_m must be >= 0, got -0.5"),
    ("true", "On: clearance_m must be a number, got True"),
    ("[0.1]", "On: clearance_m must be a number, got [0.1]"),
])
def test_mistyped_parameter(tmp_path, value, fragment):
    text = BASE.replace("params: {clearance_m: 0.02}", f"params:\n      clearance_m: {value}")
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "clearance_m:"), "relations[3] (kind 'on', subject 'bowl'", fragment,
           key="params.clearance_m")


def test_mistyped_enum_parameter(tmp_path):
    text = BASE.replace("side: negative_y", "side: left")
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "side: left"), "relations[2] (kind 'next_to', subject 'bowl', reference 'mug')",
           "NextTo: side='left' is not a valid Side; accepted: 'positive_x'", key="params.side")


def test_missing_required_parameter(tmp_path):
    text = BASE + "  - kind: align_with\n    subject: bowl\n    reference: mug\n"
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "kind: align_with"), "relations[4] (kind 'align_with', subject 'bowl'",
           "AlignWith needs parameter 'axis'", key="params.axis")


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf"])
def test_non_finite_relation_number(tmp_path, value):
    text = BASE.replace("distance_m: 0.03", f"distance_m: {value}")
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "distance_m"), "relations[2] (kind 'next_to', subject 'bowl', reference 'mug')",
           "is not a finite number; NaN and infinite values are not accepted", key="relations[2].params.distance_m")


def test_non_finite_asset_number(tmp_path):
    text = BASE.replace("size: [0.08, 0.08, 0.1]", "size: [0.08, .inf, 0.1]")
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, ".inf"), "objects[0] (id 'mug')", "inf is not a finite number",
           key="objects[0].params.size[1]")


def test_relation_to_itself(tmp_path):
    text = BASE.replace("reference: mug", "reference: bowl")
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "reference: bowl"), "relations[2] (kind 'next_to', subject 'bowl', "
           "reference 'bowl')", "a relation to itself", key="reference")


def test_duplicate_asset_names(tmp_path):
    text = BASE.replace("  - id: bowl\n", "  - id: mug\n")
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "- id: mug", 2), "objects[1] (id 'mug', registry_name 'cylinder')",
           f"duplicate asset id 'mug': already defined by objects[0] (line {line_no(text, '- id: mug')})", key="id")
    text = BASE.replace("  - id: bowl\n", "  - id: table\n")
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "- id: table"), "duplicate asset id 'table': already defined by background")


def test_spec_file_missing_or_not_yaml(tmp_path):
    missing = str(tmp_path / "nope.yaml")
    with pytest.raises(EnvSpecError) as info:
        ArenaEnvGraphSpec.from_yaml(missing)
    assert str(info.value).startswith(f"{missing}: spec file does not exist")
    text = "env_name: broken\nobjects:\n  - id: mug\n    registry_name: [box\n"
    err, path = load_error(tmp_path, text)
    assert str(err).startswith(f"{path}:") and "is not valid YAML" in str(err) and err.line is not None
    err, path = load_error(tmp_path, "env_name: x\n\tobjects: []\n")
    assert "is not valid YAML" in str(err) and err.line == 2
    (tmp_path / "binary.yaml").write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(EnvSpecError, match="is not YAML: the file is not UTF-8"):
        ArenaEnvGraphSpec.from_yaml(tmp_path / "binary.yaml")
    err, path = load_error(tmp_path, "- kind: is_anchor\n")
    assert str(err) == f"{path}:1: is not a spec: the top level must be a mapping with keys env_name, embodiment, " \
                       "background, objects, object_sets, object_pools, object_references, relations, task, placer_params, num_envs, " \
                       "env_spacing, default_physics_backend, external_yaml, cli_override_specs, env_cfg_override, " \
                       "recording, got LineList"
    err, path = load_error(tmp_path, "")
    assert "the spec file is empty" in str(err)
    with pytest.raises(EnvSpecError, match="spec path is not a file"):
        ArenaEnvGraphSpec.from_yaml(tmp_path)


def test_duplicate_key_in_a_mapping(tmp_path):
    text = BASE.replace("    subject: mug\n    reference: table\n", "    subject: mug\n    subject: bowl\n"
                        "    reference: table\n")
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "subject: bowl"), "found duplicate key 'subject'")


def test_missing_kind_and_bad_entry(tmp_path):
    text = BASE.replace("  - kind: is_anchor\n    subject: table\n", "  - subject: table\n")
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "- subject: table"), "relations[0]", "missing 'kind'")
    text = BASE.replace("  - kind: is_anchor\n    subject: table\n", "  - is_anchor\n")
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "- is_anchor"), "relations[0]", "each relation must be a mapping")


def test_unknown_registry_name_and_asset_parameter(tmp_path):
    text = BASE.replace("registry_name: cylinder", "registry_name: cilinder")
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "cilinder"), "objects[1] (id 'bowl', registry_name 'cilinder')",
           "Unknown asset registry_name 'cilinder' (did you mean 'cylinder'?)", key="registry_name")
    text = BASE.replace("mass_kg: 0.25}", "mass_kg: 0.25,\n             weight: 1}")
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "weight: 1"), "objects[0] (id 'mug', registry_name 'box')",
           "unknown parameter 'weight'; accepted parameters: size, mass_kg, color, initial_pose, collision_mode",
           key="params.weight")
    text = BASE.replace("mass_kg: 0.25}", "mass_kg: heavy}")
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "heavy"), "objects[0] (id 'mug'", "mass_kg must be a number, got 'heavy'",
           key="params.mass_kg")
    text = BASE.replace("  - id: bowl\n", "  - id: bowl\n    colour: red\n")
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "colour"), "objects[1]", "unknown key 'colour'; accepted keys: id, registry_name, "
           "params", key="colour")


def test_background_must_be_a_background(tmp_path):
    text = BASE.replace("registry_name: static_box", "registry_name: box")
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "id: table"), "background (id 'table', registry_name 'box')",
           "makes a Object, not a Background", key="registry_name")


def test_top_level_keys(tmp_path):
    # embodiment and task (their own checks: tests/test_env_spec_robot.py); external_yaml & co:
    # tests/test_env_spec_extensions.py
    text = BASE + "task: {}\n"
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "task:"), "composition 'atomic' requires exactly one atomic task", key="subtasks")
    text = BASE + "embodiment: {}\n"
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "embodiment:"), "'registry_name' must be the name of a registered embodiment",
           key="registry_name")
    text = BASE + "seed: 4\n"
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "seed: 4"), "unknown top-level key 'seed'; accepted keys: env_name, embodiment, "
           "background", key="seed")
    text = BASE + "num_envs: 0\n"
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "num_envs"), "'num_envs' must be a positive integer, got 0", key="num_envs")


@pytest.mark.parametrize("block,fragment,key", [
    ("{placement_seed: 'x'}", "'placer_params.placement_seed' must be an integer or null, got 'x'",
     "placer_params.placement_seed"),
    ("{seed: 3}", "unknown key 'placer_params.seed'; ObjectPlacerParams fields accepted here: solver_params",
     "placer_params.seed"),
    ("{solver_params: {strategies: {}}}", "'placer_params.solver_params.strategies' holds loss strategy objects and "
     "cannot be set from YAML", "placer_params.solver_params.strategies"),
    ("{reachability_config: {embodiment: droid}}", "'placer_params.reachability_config.embodiment' holds an "
     "embodiment object", "placer_params.reachability_config.embodiment"),
    ("{solver_params: {lr: -1.0}}", "RelationSolverParams: lr must be >= 0, got -1",
     "placer_params.solver_params.lr"),
    ("{solver_params: {collision_mode: sdf}}", "must be one of 'bbox', 'mesh'",
     "placer_params.solver_params.collision_mode"),
    ("{enabled_checks: [on_relation], required_checks: [no_overlap]}", "required_checks ['no_overlap'] are not in "
     "enabled_checks", "placer_params.required_checks"),
])
def test_bad_placer_params(tmp_path, block, fragment, key):
    text = BASE + f"placer_params: {block}\n"
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "placer_params"), "placer_params", fragment, key=key)


def test_restriction_errors_name_the_file_and_line(tmp_path):
    text = BASE.replace("initial_pose: {position_xyz: [0.0, 0.0, 0.375]}",
                        "initial_pose: {position_xyz: [0.0, 0.0, 0.375], rotation_xyzw: [0.0, 0.0, 0.2588190, 0.9659258]}")
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "kind: is_anchor"), "relations[0] (kind 'is_anchor', subject 'table')",
           "asset 'table', relation is_anchor()", "not a multiple of 90 degrees about world Z")
    text = BASE.replace("params: {size: [0.08, 0.08, 0.1], mass_kg: 0.25}", "params: {size: [0.95, 0.08, 0.1]}")
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "kind: 'on'"), "relations[1] (kind 'on', subject 'mug', reference 'table')",
           "asset 'mug', relation on(table)", "larger than the 0.900 m")


def test_object_reference_errors(tmp_path):
    room = write_room_usd(tmp_path / "room.usda")
    head = f"env_name: refs\nbackground:\n  id: room\n  registry_name: usd_background\n  params: {{usd_path: {room}}}\n"
    text = head + "object_references:\n  - id: top\n    parent_id: room\n    prim_path: counter\n"
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "prim_path: counter"), "object_references[0] (id 'top')",
           "prim_path '{ENV_REGEX_NS}/usd_background/counter'", "prim 'counter' is not in", key="prim_path")
    text = head + "object_references:\n  - id: top\n    parent_id: kitchen\n    prim_path: table\n"
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "parent_id: kitchen"), "unknown parent_id 'kitchen'", "room", key="parent_id")
    text = head + "object_references:\n  - id: top\n    parent_id: room\n    prim_path: table\n    object_type: static\n"
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "object_type"), "'object_type' 'static' is not accepted; use one of rigid, base, "
           "articulation", key="object_type")
    text = "env_name: refs\nobject_references:\n  - id: top\n    parent_id: room\n    prim_path: table\n"
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "prim_path"), "relative prim_path 'table'", "the spec has no background",
           key="prim_path")


def test_object_set_errors(tmp_path):
    text = BASE + "object_sets:\n  - id: fruit\n    members: [cube_4cm, banana]\n"
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "members"), "object_sets[0] (id 'fruit')", "Unknown asset registry_name 'banana'",
           key="members[1]")
    text = BASE + "object_sets:\n  - id: fruit\n    members: [cube_4cm]\n    params: {scale: 2}\n"
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "scale"), "unknown parameter 'scale' of an object set", key="params.scale")
    text = BASE + "object_sets:\n  - id: fruit\n    members: []\n"
    err, path = load_error(tmp_path, text)
    _check(err, path, line_no(text, "members"), "'members' must be a non-empty list", key="members")



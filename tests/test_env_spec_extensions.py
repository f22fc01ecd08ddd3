"""Env-spec keys external_yaml, cli_override_specs and env_cfg_override: their effect on the loaded spec, the
built assets, the composed Isaac Lab env cfg and a real kit-less env; every bad input names file, line and key."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from isaaclab_arena import ARENA_ROOT
from isaaclab_arena.env_spec import ArenaEnvGraphSpec, EnvSpecError, spec_from_arena_env
from isaaclab_arena.env_spec.cli_override_spec import add_cli_override_flags, cli_override_values
from isaaclab_arena.environments.env_cfg_override import apply_env_cfg_overrides
from isaaclab_arena.environments.cli import get_isaaclab_arena_cli_parser
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams

RUNNER = os.path.join(ARENA_ROOT, "isaaclab_arena", "scripts", "environment_runner.py")

SCENE = """\
# a table scene, included by task files
env_name: table_scene
num_envs: 2
env_spacing: 3.0
background:
  id: table
  registry_name: static_box
  params:
    size: [1.0, 0.8, 0.75]
    initial_pose: {position_xyz: [0.0, 0.0, 0.375]}
objects:
  - id: mug
    registry_name: cube_8cm
placer_params:
  placement_seed: 1
  solver_params: {clearance_m: 0.03}
relations:
  - kind: is_anchor
    subject: table
  - kind: 'on'
    subject: mug
    reference: table
"""

TASK = """\
env_name: pick_task
external_yaml: ../scenes/table.yaml
num_envs: 4
objects:
  - id: bowl
    registry_name: cylinder
    params: {radius: 0.07, height: 0.05}
relations:
  - kind: 'on'
    subject: bowl
    reference: table
placer_params:
  placement_seed: 5
cli_override_specs:
  - {arg: object, target_node_id: mug}
"""


# -- helpers ---------------------------------------------------------------------------------------------------
def write(path, text: str) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return str(path)


def line_no(text: str, fragment: str, occurrence: int = 1) -> int:
    hits = [i + 1 for i, line in enumerate(text.splitlines()) if fragment in line]
    assert len(hits) >= occurrence, f"{fragment!r} not in the text"
    return hits[occurrence - 1]


def check(err: EnvSpecError, path: str, line: int | None, *fragments: str, key: str | None = None):
    msg = str(err)
    head = f"{path}:{line}: " if line else f"{path}: "
    assert msg.startswith(head), msg
    assert err.source == path and err.line == line, msg
    if key is not None:
        assert err.key == key and f"key '{key}'" in msg, msg
    for fragment in fragments:
        assert fragment in msg, msg


def load_error(path) -> EnvSpecError:
    with pytest.raises(EnvSpecError) as info:
        ArenaEnvGraphSpec.from_yaml(path)
    return info.value


@pytest.fixture
def files(tmp_path):
    scene = write(tmp_path / "scenes" / "table.yaml", SCENE)
    task = write(tmp_path / "tasks" / "pick.yaml", TASK)
    return scene, task


# -- external_yaml ---------------------------------------------------------------------------------------------
def test_external_yaml_merges_scene_under_task(files):
    scene, task = files
    spec = ArenaEnvGraphSpec.from_yaml(task)
    assert spec.env_name == "pick_task"  # the including file wins on scalars
    assert spec.num_envs == 4 and spec.env_spacing == 3.0  # own value; inherited value
    assert spec.background.id == "table" and spec.background.params["size"] == [1.0, 0.8, 0.75]
    assert [n.id for n in spec.objects] == ["mug", "bowl"]  # lists concatenated, included file first
    assert [(r.kind, r.subject) for r in spec.relations] == [("is_anchor", "table"), ("on", "mug"), ("on", "bowl")]
    assert spec.placer_params == {"placement_seed": 5}  # a mapping is taken whole from the including file
    assert spec.external_yaml == [os.path.abspath(scene)]
    # every node keeps its own file and line
    assert spec.objects[0].line.source == os.path.normpath(os.path.join(os.path.dirname(task), "../scenes/table.yaml"))
    assert int(spec.objects[0].line) == line_no(SCENE, "- id: mug")
    assert spec.objects[1].line.source == task and int(spec.objects[1].line) == line_no(TASK, "- id: bowl")
    env = spec.to_arena_env()
    assert [a.name for a in env.assets] == ["table", "mug", "bowl"]
    assert env.placer_params.placement_seed == 5
    # the scene's solver_params were not merged in: the task's placer_params replaced the scene's whole
    assert env.placer_params.solver_params.clearance_m == RelationSolverParams().clearance_m != 0.03


def test_nested_and_absolute_includes(tmp_path):
    base = write(tmp_path / "base.yaml", SCENE)
    mid = write(tmp_path / "lib" / "mid.yaml", f"external_yaml: [{base}]\nobjects:\n"
                "  - {id: box, registry_name: cube_4cm}\nrelations:\n"
                "  - {kind: 'on', subject: box, reference: table}\n")
    top = write(tmp_path / "top.yaml", "external_yaml:\n  - lib/mid.yaml\nobjects:\n  - {id: bowl, registry_name: bowl}\n"
                "relations:\n  - {kind: 'on', subject: bowl, reference: table}\n")
    spec = ArenaEnvGraphSpec.from_yaml(top)
    assert [n.id for n in spec.objects] == ["mug", "box", "bowl"]
    assert spec.env_name == "table_scene"  # inherited: the top file sets none
    assert spec.external_yaml == [os.path.abspath(mid)]  # only the direct include; mid includes base itself
    assert [a.name for a in spec.to_arena_env().assets] == ["table", "mug", "box", "bowl"]


def test_include_cycle_names_the_chain(tmp_path):
    a = str(tmp_path / "a.yaml")
    b = write(tmp_path / "b.yaml", "objects: []\nexternal_yaml: a.yaml\n")
    write(a, SCENE + "external_yaml: b.yaml\n")
    err = load_error(a)
    check(err, b, 2, f"external_yaml cycle: {a} -> {b} -> {a}", key="external_yaml")
    err = load_error(write(tmp_path / "self.yaml", "external_yaml: self.yaml\n"))
    assert "external_yaml cycle" in str(err) and err.line == 1


def test_id_defined_in_both_files_names_both(files):
    scene, task = files
    text = TASK.replace("id: bowl", "id: mug")
    write(task, text)
    err = load_error(task)
    scene_name = os.path.normpath(os.path.join(os.path.dirname(task), "../scenes/table.yaml"))
    check(err, task, line_no(text, "- id: mug"), "duplicate asset id 'mug': already defined by objects[0] "
          f"({scene_name} line {line_no(SCENE, '- id: mug')})", key="id")


def test_errors_in_an_included_file_name_that_file(files):
    scene, task = files
    scene_name = os.path.normpath(os.path.join(os.path.dirname(task), "../scenes/table.yaml"))
    text = SCENE.replace("kind: is_anchor", "kind: is_anchorr")
    write(scene, text)
    check(load_error(task), scene_name, line_no(text, "is_anchorr"), "unknown relation kind",
          f"merged into {task} through external_yaml")
    text = SCENE.replace("registry_name: cube_8cm", "registry_name: cube_8cmm")
    write(scene, text)
    check(load_error(task), scene_name, line_no(text, "cube_8cmm"), "Unknown asset registry_name 'cube_8cmm'",
          key="registry_name")
    write(scene, SCENE + "task: {}\n")
    check(load_error(task), scene_name, len(SCENE.splitlines()) + 1, "composition 'atomic' requires exactly one "
          "atomic task", key="subtasks")
    write(scene, SCENE.replace("objects:\n  - id: mug\n    registry_name: cube_8cm\n", "objects: {mug: 1}\n"))
    err = load_error(task)
    assert err.source == scene_name and "'objects' must be a list" in str(err)
    write(scene, "env_name: [broken\n")
    err = load_error(task)
    assert err.source == scene_name and "is not valid YAML" in str(err)


def test_bad_external_yaml_values(files, tmp_path):
    scene, task = files
    text = TASK.replace("../scenes/table.yaml", "../scenes/nope.yaml")
    write(task, text)
    missing = os.path.normpath(os.path.join(os.path.dirname(task), "../scenes/nope.yaml"))
    check(load_error(task), task, line_no(text, "external_yaml"), f"included spec file '{missing}' does not exist",
          "relative paths are taken from the including file's folder", key="external_yaml")
    text = TASK.replace("external_yaml: ../scenes/table.yaml", "external_yaml: 3")
    write(task, text)
    check(load_error(task), task, line_no(text, "external_yaml"), "'external_yaml' must be a spec file path or a "
          "non-empty list of paths, got 3", key="external_yaml")
    text = TASK.replace("external_yaml: ../scenes/table.yaml", "external_yaml:\n  - ../scenes/table.yaml\n  - 7")
    write(task, text)
    check(load_error(task), task, line_no(text, "  - 7"), "external_yaml[1] must be a spec file path, got 7",
          key="external_yaml")
    listed = write(tmp_path / "list.yaml", "- a\n")
    text = TASK.replace("../scenes/table.yaml", listed)
    write(task, text)
    check(load_error(task), task, line_no(text, "external_yaml"), "is not a spec: its top level must be a mapping",
          key="external_yaml")


def test_round_trip_keeps_external_yaml(files, tmp_path):
    scene, task = files
    spec = ArenaEnvGraphSpec.from_yaml(task)
    own = spec.to_dict()
    assert own["external_yaml"] == [os.path.abspath(scene)]
    assert [o["id"] for o in own["objects"]] == ["bowl"] and "background" not in own and "env_spacing" not in own
    assert own["num_envs"] == 4 and own["placer_params"] == {"placement_seed": 5}
    assert own["cli_override_specs"] == [{"arg": "object", "target_node_id": "mug"}]
    os.makedirs(tmp_path / "elsewhere")
    out = spec.to_yaml(tmp_path / "elsewhere" / "copy.yaml")
    with open(out) as f:
        written = f.read()
    assert "external_yaml: ../scenes/table.yaml\n" in written  # relative to the written file (tmp/elsewhere)
    again = ArenaEnvGraphSpec.from_yaml(out)
    assert again == spec and again.to_dict() == own
    assert ArenaEnvGraphSpec.from_dict(own) == spec  # absolute paths load from a dict too
    flat = spec.to_dict(flatten=True)
    assert "external_yaml" not in flat and [o["id"] for o in flat["objects"]] == ["mug", "bowl"]
    assert ArenaEnvGraphSpec.from_dict(flat).to_dict() == flat
    spec.objects[0].params["initial_pose"] = {"position_xyz": [0.0, 0.0, 1.0]}  # an included node changed
    with pytest.raises(EnvSpecError, match="came from included file .* was changed after loading"):
        spec.to_dict()
    assert spec.to_dict(flatten=True)["objects"][0]["params"]["initial_pose"]["position_xyz"] == [0.0, 0.0, 1.0]


# -- cli_override_specs ----------------------------------------------------------------------------------------
def test_cli_override_swaps_registry_name_and_bounds(files):
    _, task = files
    spec = ArenaEnvGraphSpec.from_yaml(task)
    [override] = spec.cli_overrides()
    assert (override.arg, override.target_node_id, override.flag) == ("object", "mug", "--object")
    assert spec.to_arena_env().get_asset("mug").get_bounding_box().size == pytest.approx((0.08, 0.08, 0.08))
    swapped = spec.apply_cli_overrides({"object": "cube_12cm"})
    assert swapped is not spec and swapped.asset_node("mug").registry_name == "cube_12cm"
    assert spec.asset_node("mug").registry_name == "cube_8cm"  # the loaded spec is left as it was
    mug = swapped.to_arena_env().get_asset("mug")
    assert mug.registry_name == "cube_12cm" and mug.get_bounding_box().size == pytest.approx((0.12, 0.12, 0.12))
    assert spec.to_arena_env().get_asset("mug").get_bounding_box().size == pytest.approx((0.08, 0.08, 0.08))
    assert swapped.apply_cli_overrides({"object": None}) == swapped  # flag not given: same spec
    assert swapped.to_dict(flatten=True)["objects"][0]["registry_name"] == "cube_12cm"


def test_cli_override_bad_values_leave_the_spec_unchanged(files):
    _, task = files
    spec = ArenaEnvGraphSpec.from_yaml(task)
    with pytest.raises(EnvSpecError) as info:
        spec.apply_cli_overrides({"object": "cube_9cm"})
    check(info.value, task, line_no(TASK, "arg: object"), "--object 'cube_9cm': unknown registry name for node "
          "'mug'", "accepted names: ", "cube_8cm", "cube_12cm", key="arg")
    assert spec.asset_node("mug").registry_name == "cube_8cm"
    with pytest.raises(EnvSpecError, match=r"no cli override 'bowl' is declared; declared args: object"):
        spec.apply_cli_overrides({"bowl": "mug"})
    with pytest.raises(EnvSpecError) as info:
        spec.apply_cli_overrides({"object": "box"})  # box needs a size; mug gives none
    assert str(info.value).startswith(f"{spec.objects[0].line.source}:{line_no(SCENE, '- id: mug')}: ")
    assert "with --object 'box' (node 'mug'): " in str(info.value) and "size" in str(info.value)
    assert spec.asset_node("mug").registry_name == "cube_8cm"
    assert spec.to_arena_env().get_asset("mug").registry_name == "cube_8cm"


@pytest.mark.parametrize("entry,fragment,key", [
    ("{arg: object, target_node_id: mugg}", "'target_node_id' 'mugg' is not the id of the background or of an "
     "objects entry (nodes with a registry_name): table, mug, bowl", "target_node_id"),
    ("{arg: --object, target_node_id: mug}", "'arg' must be a flag name (a letter, then letters, digits or _) "
     "(write it without the leading dashes), got '--object'", "arg"),
    ("{arg: object, target_node_id: mug, help: x}", "unknown key 'help'; accepted keys: arg, target_node_id", "help"),
    ("{target_node_id: mug}", "'arg' must be a flag name", "arg"),
])
def test_bad_cli_override_specs(files, entry, fragment, key):
    _, task = files
    text = TASK.replace("{arg: object, target_node_id: mug}", entry)
    write(task, text)
    check(load_error(task), task, line_no(text, entry), fragment, key=key)


def test_cli_override_declared_twice(files):
    _, task = files
    text = TASK + "  - {arg: object, target_node_id: bowl}\n"
    write(task, text)
    check(load_error(task), task, len(text.splitlines()), "flag --object is already declared by cli_override_specs[0] "
          f"(arg 'object') (line {line_no(TASK, 'arg: object')})", key="arg")


def test_runner_parser_gets_the_declared_flags(files):
    _, task = files
    spec = ArenaEnvGraphSpec.from_yaml(task)
    parser = get_isaaclab_arena_cli_parser()
    add_cli_override_flags(parser, spec)
    args = parser.parse_args(["--env_spec", task, "--object", "cube_4cm"])
    assert cli_override_values(args, spec) == {"object": "cube_4cm"}
    assert cli_override_values(parser.parse_args(["--env_spec", task]), spec) == {}
    assert "registry_name of node 'mug' (spec: cube_8cm)" in parser.format_help()
    text = TASK.replace("arg: object", "arg: seed")  # clashes with the runner's --seed
    write(task, text)
    with pytest.raises(EnvSpecError) as info:
        add_cli_override_flags(get_isaaclab_arena_cli_parser(), ArenaEnvGraphSpec.from_yaml(task))
    check(info.value, task, line_no(text, "arg: seed"), "flag --seed is already a runner flag; choose another 'arg'",
          key="arg")


@pytest.mark.slow
def test_environment_runner_refuses_an_unknown_override(files):
    _, task = files
    out = subprocess.run([sys.executable, RUNNER, "--env_spec", task, "--object", "cube_9cm"], cwd=ARENA_ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: {task}:{line_no(TASK, 'arg: object')}:") and "--object 'cube_9cm'" in last
    assert "node 'mug'" in last and "cube_12cm" in last


# -- env_cfg_override ------------------------------------------------------------------------------------------
CFG_OVERRIDE = """\
env_cfg_override:
  sim.dt: 0.005
  decimation: 4
  episode_length_s: 8
  viewer.eye: [2.0, 2.0, 1.5]
  scene.light.spawn.intensity: 500.0
"""


def _compose(spec):
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg

    return ArenaEnvBuilder(spec.to_arena_env(), ArenaEnvBuilderCfg(num_envs=2, solve_relations=False)).compose_manager_cfg()


def test_env_cfg_override_changes_the_composed_cfg(files):
    _, task = files
    write(task, TASK + CFG_OVERRIDE)
    spec = ArenaEnvGraphSpec.from_yaml(task)
    assert spec.env_cfg_override["sim.dt"] == 0.005
    env = spec.to_arena_env()
    assert env.env_cfg_overrides == {"sim.dt": 0.005, "decimation": 4, "episode_length_s": 8,
                                     "viewer.eye": [2.0, 2.0, 1.5], "scene.light.spawn.intensity": 500.0}
    cfg = _compose(spec)
    assert cfg.sim.dt == 0.005 and cfg.decimation == 4
    assert cfg.episode_length_s == 8.0 and isinstance(cfg.episode_length_s, float)
    assert cfg.viewer.eye == (2.0, 2.0, 1.5)
    assert cfg.scene.light.spawn.intensity == 500.0
    plain = _compose(ArenaEnvGraphSpec.from_yaml(os.path.join(os.path.dirname(task), "../scenes/table.yaml")))
    assert plain.sim.dt == pytest.approx(1 / 120) and plain.decimation == 2 and plain.episode_length_s == 5.0
    assert ArenaEnvGraphSpec.from_dict(spec.to_dict()).env_cfg_override == spec.env_cfg_override  # round trip


@pytest.mark.parametrize("entry,fragment,key", [
    ("sim.dtt: 0.1", "unknown attribute path 'sim.dtt': SimulationCfg 'sim' has no attribute 'dtt'; its attributes: ",
     "env_cfg_override.sim.dtt"),
    ("simulation.dt: 0.1", "ArenaEnvCfg 'the env cfg' has no attribute 'simulation'", "env_cfg_override.simulation.dt"),
    ("scene.mugg.spawn.size: [1, 1, 1]", "has no attribute 'mugg'; its attributes: ", "env_cfg_override.scene.mugg.spawn.size"),
    ("sim..dt: 0.1", "'sim..dt' is not a dotted attribute path", "env_cfg_override.sim..dt"),
    ("scene.num_envs: 8", "'scene.num_envs' cannot be overridden: the env count comes from num_envs",
     "env_cfg_override.scene.num_envs"),
])
def test_bad_env_cfg_override_keys(files, entry, fragment, key):
    _, task = files
    text = TASK + f"env_cfg_override:\n  {entry}\n"
    write(task, text)
    check(load_error(task), task, line_no(text, entry), fragment, key=key)
    if "mugg" in entry:
        assert "mug (scene entity)" in str(load_error(task))


def test_env_cfg_override_must_be_a_mapping(files):
    _, task = files
    text = TASK + "env_cfg_override: [sim.dt]\n"
    write(task, text)
    check(load_error(task), task, line_no(text, "env_cfg_override"), "'env_cfg_override' must be a mapping of dotted "
          "env-cfg attribute paths to values")


def test_env_cfg_override_wrong_types_are_refused_at_compose(files):
    _, task = files
    for entry, fragment in (("decimation: 2.5", "env_cfg_override 'decimation': expects an integer"),
                            ("sim.dt: fast", "env_cfg_override 'sim.dt': expects a number"),
                            ("scene.light.spawn.intensityy: 3.0", "env_cfg_override 'scene.light.spawn.intensityy': "
                             "unknown attribute path"),
                            ("sim.physics.bogus: 1", "has no attribute 'bogus'")):
        write(task, TASK + f"env_cfg_override:\n  {entry}\n")
        spec = ArenaEnvGraphSpec.from_yaml(task)  # parts the builder fills in are checked when applied
        with pytest.raises(ValueError, match=fragment.replace("(", r"\(").replace(".", r"\.")):
            _compose(spec)


def test_apply_env_cfg_overrides_on_a_config_object():
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvCfg

    cfg = ArenaEnvCfg()
    apply_env_cfg_overrides(cfg, {"sim": {"dt": 0.01, "render_interval": 3}, "seed": 9})
    assert cfg.sim.dt == 0.01 and cfg.sim.render_interval == 3 and cfg.seed == 9
    with pytest.raises(ValueError, match="'sim.use_fabric': expects true or false"):
        apply_env_cfg_overrides(cfg, {"sim.use_fabric": 1})
    with pytest.raises(ValueError, match="'class_type': holds code"):
        apply_env_cfg_overrides(cfg, {"class_type": "x"})


def test_python_env_cfg_overrides_write_to_yaml(files, tmp_path):
    scene, _ = files
    env = ArenaEnvGraphSpec.from_yaml(scene).to_arena_env()
    env.env_cfg_overrides = {"sim.dt": 0.004, "viewer.eye": (1.0, 1.0, 1.0)}
    spec = spec_from_arena_env(env)
    assert spec.to_dict()["env_cfg_override"] == {"sim.dt": 0.004, "viewer.eye": [1.0, 1.0, 1.0]}
    again = ArenaEnvGraphSpec.from_yaml(spec.to_yaml(tmp_path / "py.yaml"))
    assert again == spec and again.to_arena_env().env_cfg_overrides["sim.dt"] == 0.004
    env.env_cfg_overrides = {"sim.dtt": 0.004}
    with pytest.raises(EnvSpecError, match="has no attribute 'dtt'"):
        spec_from_arena_env(env)


# -- a real kit-less env ---------------------------------------------------------------------------------------
@pytest.mark.sim
def test_real_env_with_all_three_keys(files, tmp_path):
    """Task includes the scene, --object swaps mug to cube_12cm, env_cfg_override sets dt/decimation/episode."""
    import torch
    from isaaclab.app import launch_simulation

    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg

    _, task = files
    write(task, TASK + CFG_OVERRIDE)
    spec = ArenaEnvGraphSpec.from_yaml(task).apply_cli_overrides({"object": "cube_12cm"})
    builder = ArenaEnvBuilder(spec.to_arena_env(), ArenaEnvBuilderCfg(num_envs=2, env_spacing=2.5, output_dir=str(tmp_path),
                                                                      gym_id="test_env_spec_extensions"))
    env_cfg = builder.compose_manager_cfg()
    with launch_simulation(env_cfg, {"headless": True, "device": "cpu"}):
        env = builder.make_registered(env_cfg)
        try:
            env.reset()
            u = env.unwrapped
            assert u.physics_dt == pytest.approx(0.005) and u.step_dt == pytest.approx(0.02)
            assert u.max_episode_length == 400  # 8 s / 0.02 s
            assert tuple(u.scene["mug"].cfg.spawn.size) == pytest.approx((0.12, 0.12, 0.12))
            z = (u.scene["mug"].data.root_pos_w.torch - u.scene.env_origins)[:, 2]
            # On(table) with the solver's clearance: table top 0.75 m + half of the 12 cm cube (8 cm: 0.04)
            expected = 0.75 + 0.06 + RelationSolverParams().clearance_m
            assert torch.allclose(z, torch.full_like(z, expected), atol=2e-3), z
        finally:
            env.close()

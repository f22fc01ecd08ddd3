"""``embodiment`` and ``task`` in YAML specs: parsed, built (a relation-placed robot, a PickAndPlaceTask that
marks its pick-up object), written back (a spec written out loads equal), and refused with the file, line and
key when wrong: an unknown embodiment registry name, a task naming a missing object, a robot with both
relations and an initial pose, requires_reachability without an embodiment. ``--embodiment`` on the runner."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from isaaclab_arena import ARENA_ROOT
from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec, EnvSpecError

SPEC = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "robot", "franka_pick_and_place.yaml")
RUNNER = os.path.join(ARENA_ROOT, "isaaclab_arena", "scripts", "environment_runner.py")
TEXT = open(SPEC).read()


def _line(text: str, fragment: str, nth: int = 0) -> int:
    hits = [i + 1 for i, line in enumerate(text.splitlines()) if fragment in line]
    return hits[nth]


def _error(tmp_path, text: str) -> tuple[EnvSpecError, str]:
    path = tmp_path / "robot.yaml"
    path.write_text(text)
    with pytest.raises(EnvSpecError) as info:
        ArenaEnvGraphSpec.from_yaml(path)
    return info.value, str(path)


def _check(err: EnvSpecError, path: str, line: int, fragment: str, key: str) -> None:
    assert err.source == path and err.line == line, (err.source, err.line, str(err))
    assert err.key == key, str(err)
    assert str(err).startswith(f"{path}:{line}: ") and fragment in str(err), str(err)
    assert "\n" not in str(err)


def test_shipped_robot_spec_builds_a_placed_robot_and_a_task():
    from isaaclab_arena.embodiments import Embodiment
    from isaaclab_arena.relations.relations import NextTo, On, RequiresReachability, RotateAroundSolution
    from isaaclab_arena.tasks import PickAndPlaceTask

    spec = ArenaEnvGraphSpec.from_yaml(SPEC)
    env = spec.to_arena_env()
    robot = env.embodiment
    assert isinstance(robot, Embodiment) and robot.name == "robot" and robot.get_scene_root_keys() == ["robot"]
    assert robot.stand.height_m == 0.75 and robot.action_mode == "ik_rel" and robot.initial_pose is None
    assert [type(r) for r in robot.get_relations()] == [On, NextTo, RotateAroundSolution]
    assert robot.get_relations_of(NextTo)[0].parent.name == "table"
    assert isinstance(env.task, PickAndPlaceTask) and env.task.episode_length_s == 8.0
    cube = env.get_asset("cube")
    assert env.task.pick_up_object is cube and env.task.destination_location is env.get_asset("bowl")
    marker = cube.get_relations_of(RequiresReachability)
    assert len(marker) == 1 and marker[0].stamped_by == "PickAndPlaceTask"  # the task marked it
    assert "robot" not in [a.name for a in env.assets] and env.get_placement_assets()[-1] is robot


def test_robot_spec_written_back_loads_equal(tmp_path):
    spec = ArenaEnvGraphSpec.from_yaml(SPEC)
    data = spec.to_dict()
    assert data["embodiment"] == {"id": "robot", "registry_name": "franka_panda",
                                  "params": {"stand_height_m": 0.75, "action_mode": "ik_rel"}}
    assert data["task"]["subtasks"] == [{"kind": "PickAndPlaceTask", "params": {
        "pick_up_object": "cube", "destination_location": "bowl", "background_scene": "table_background",
        "episode_length_s": 8.0}}]
    path = spec.to_yaml(tmp_path / "out.yaml")
    again = ArenaEnvGraphSpec.from_yaml(path)
    assert again == spec and again.embodiment == spec.embodiment and again.task == spec.task
    # from the Python environment: the task's marker is written as the task, not as a relation
    from_env = ArenaEnvGraphSpec.from_arena_env(spec.to_arena_env())
    kinds = [(r.kind, r.subject) for r in from_env.relations]
    assert ("requires_reachability", "cube") not in kinds and ("requires_reachability", "bowl") in kinds
    assert from_env.embodiment == spec.embodiment and from_env.task == spec.task


def test_success_parameters_load_and_write_back(tmp_path):
    text = TEXT.replace("episode_length_s: 8.0", "episode_length_s: 8.0\n        success_hold_s: 1.0\n"
                        "        success_release_distance_m: 0.08")
    path = tmp_path / "robot.yaml"
    path.write_text(text)
    spec = ArenaEnvGraphSpec.from_yaml(path)
    task = spec.to_arena_env().task
    assert task.success_hold_s == 1.0 and task.success_release_distance_m == 0.08
    assert task.success_speed_m_s == 0.05  # the default where none is given
    params = spec.to_dict()["task"]["subtasks"][0]["params"]
    assert params["success_hold_s"] == 1.0 and params["success_release_distance_m"] == 0.08
    again = ArenaEnvGraphSpec.from_yaml(spec.to_yaml(tmp_path / "out.yaml"))
    assert again == spec
    assert ArenaEnvGraphSpec.from_arena_env(spec.to_arena_env()).task == spec.task


def test_unknown_embodiment_registry_name(tmp_path):
    text = TEXT.replace("registry_name: franka_panda", "registry_name: franka_pandaa")
    err, path = _error(tmp_path, text)
    _check(err, path, _line(text, "franka_pandaa"), "Unknown embodiment registry_name 'franka_pandaa' (did you mean "
           "'franka_panda'?); registered embodiments: franka_panda", key="registry_name")


def test_unknown_embodiment_parameter(tmp_path):
    text = TEXT.replace("stand_height_m: 0.75", "stand_hight_m: 0.75")
    err, path = _error(tmp_path, text)
    _check(err, path, _line(text, "stand_hight_m"), "unknown parameter 'stand_hight_m'; accepted parameters: ",
           key="params.stand_hight_m")
    text = TEXT.replace("stand_height_m: 0.75", "stand_height_m: -1")
    err, path = _error(tmp_path, text)
    _check(err, path, _line(text, "stand_height_m: -1"), "must be > 0 metres", key="params.stand_height_m")


def test_task_naming_a_missing_object(tmp_path):
    text = TEXT.replace("pick_up_object: cube", "pick_up_object: mug")
    err, path = _error(tmp_path, text)
    _check(err, path, _line(text, "pick_up_object: mug"), "pick_up_object 'mug' is not an asset id of this spec; "
           "asset ids: bowl, cube, floor, table, table_background", key="subtasks[0].params.pick_up_object")
    text = TEXT.replace("destination_location: bowl", "destination_location: robot")
    err, path = _error(tmp_path, text)
    _check(err, path, _line(text, "destination_location: robot"), "destination_location 'robot' is not an asset id",
           key="subtasks[0].params.destination_location")


def test_task_shape_errors(tmp_path):
    cases = [
        (TEXT.replace("kind: PickAndPlaceTask", "kind: StackTask"), "kind: StackTask",
         "unknown task kind 'StackTask'; accepted kinds: PickAndPlaceTask", "subtasks[0].kind"),
        (TEXT.replace("episode_length_s: 8.0", "episode_len_s: 8.0"), "episode_len_s",
         "unknown parameter 'episode_len_s' of PickAndPlaceTask; accepted parameters: pick_up_object, "
         "destination_location, background_scene, episode_length_s, success_hold_s", "subtasks[0].params.episode_len_s"),
        (TEXT.replace("episode_length_s: 8.0", "episode_length_s: 8.0\n        success_hold_s: -1"),
         "success_hold_s: -1", "success_hold_s", "subtasks[0].params.success_hold_s"),
        (TEXT.replace("episode_length_s: 8.0", "episode_length_s: -2"), "episode_length_s: -2",
         "episode_length_s must be a number > 0, got -2", "subtasks[0].params.episode_length_s"),
        (TEXT.replace("composition: atomic", "composition: sequential"), "composition: sequential",
         "composition 'sequential' is not accepted; use one of atomic", "composition"),
        (TEXT.replace("        pick_up_object: cube\n", ""), "params:",
         "PickAndPlaceTask needs 'pick_up_object'", "subtasks[0].params.pick_up_object"),
    ]
    for text, fragment, message, key in cases:
        err, path = _error(tmp_path, text)
        nth = 2 if fragment == "params:" else 0  # the task's params, after the embodiment's and next_to's
        _check(err, path, _line(text, fragment, nth) if fragment != "params:" else _line(text, "      params:", 0),
               message, key)


def test_robot_with_relations_and_an_initial_pose(tmp_path):
    text = TEXT.replace("    action_mode: ik_rel\n", "    action_mode: ik_rel\n    initial_pose: {position_xyz: [-0.8, 0.0, 0.75]}\n")
    err, path = _error(tmp_path, text)
    _check(err, path, _line(text, "initial_pose:"), "the robot is placed by relations (on(floor), next_to(table, "
           "negative_y)) and also has params.initial_pose", key="params.initial_pose")
    # without its relations, the same robot stands at that fixed pose
    fixed = "\n".join(line for line in text.splitlines() if "subject: robot" not in line)
    assert "subject: robot" not in fixed


def test_requires_reachability_without_an_embodiment(tmp_path):
    start, end = TEXT.index("embodiment:"), TEXT.index("background:")
    text = TEXT[:start] + TEXT[end:]
    text = "\n".join(line for line in text.splitlines(keepends=False))
    text = text.replace("  - kind: 'on'\n    subject: robot\n    reference: floor\n", "")
    text = text.replace("  - kind: next_to\n    subject: robot\n    reference: table\n"
                        "    params: {side: negative_y, distance_m: 0.05}\n", "")
    text = text.replace("  - kind: rotate_around_solution\n    subject: robot\n    params: {yaw_rad: 1.5707963}\n", "")
    err, path = _error(tmp_path, text + "\n")
    _check(err, path, _line(text, "kind: requires_reachability"), "'bowl' is marked requires_reachability, but the "
           "spec has no embodiment to reach it; add a top-level 'embodiment: {id, registry_name}'", key="kind")
    no_marker = text.replace("  - kind: requires_reachability\n    subject: bowl\n", "")
    err, path = _error(tmp_path, no_marker + "\n")
    _check(err, path, no_marker.splitlines().index("task:") + 1, "a task marks its pick_up_object requires_reachability, so the spec "
           "needs a robot", key="embodiment")


def _runner(tmp_path, *args):
    env = dict(os.environ, PYTHONPATH=ARENA_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, RUNNER, *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.slow
def test_runner_embodiment_flag_is_checked(tmp_path):
    out = _runner(tmp_path, "--env_spec", SPEC, "--embodiment", "ur10", "--num_steps", "1")
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: {SPEC}:{_line(TEXT, 'registry_name: franka_panda')}: ") and \
        "with --embodiment 'ur10': " in last and "Unknown embodiment registry_name 'ur10'" in last, last
    plain = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "tabletop", "mug_bowl_table.yaml")
    out = _runner(tmp_path, "--env_spec", plain, "--embodiment", "franka_panda", "--num_steps", "1")
    assert out.returncode == 2 and "the spec has no 'embodiment' node to change" in out.stderr.strip().splitlines()[-1]

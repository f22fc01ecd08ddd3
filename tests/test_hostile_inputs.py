"""Issue 19, "nothing silent, nothing hangs": hostile inputs are refused quickly, in one line, where they enter.

Each test gives one hostile input and asserts the outcome (exit code, the refusal's content); where time matters
the bound is a generous subprocess timeout, not a timed assert.
"""

from __future__ import annotations

import json
import os

import pytest
from _outside import RUNNER, TABLETOP, arena, refusal
from _spec_helpers import BASE, line_no, load_error, write

from isaaclab_arena.env_spec import ArenaEnvGraphSpec, EnvSpecError
from isaaclab_arena.relations.placement_layouts import PlacementLayouts, PlacementLayoutsError
from isaaclab_arena.relations.relations import RELATION_KINDS
from isaaclab_arena.utils.checks import QUOTE_LIMIT, short_repr

MUG_BOWL = os.path.join(TABLETOP, "mug_bowl_table.yaml")


# -- 1. YAML alias bomb ---------------------------------------------------------------------------------------------

def _alias_bomb(levels: int = 9, under: str = "placer_params") -> str:
    """About 300 bytes that expand to 9**levels list items through nested aliases (billion laughs)."""
    names = "abcdefghijklmnop"[:levels]
    lines = ["env_name: bomb", f"{under}:", f"  {names[0]}: &{names[0]} [x, x, x, x, x, x, x, x, x]"]
    for prev, name in zip(names, names[1:]):
        lines.append(f"  {name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines) + "\n"


@pytest.mark.slow
def test_alias_bomb_is_refused_at_once_in_one_short_line(tmp_path):
    path = write(tmp_path, _alias_bomb(), "bomb.yaml")
    out = arena(tmp_path, RUNNER, "--env_spec", path, timeout=120)  # it used to take minutes
    line = refusal(out)
    assert f"{path}:2: " in line and "more than 100000 YAML nodes through aliases" in line, line
    assert len(line) < 400, len(line)


@pytest.mark.parametrize("text", [
    _alias_bomb(under="objects").replace("objects:\n  a: &a", "objects: &top\n  a: &a"),
    "env_name: loop\nplacer_params: &a\n  self: *a\n",
], ids=["bomb_under_objects", "recursive_alias"])
def test_alias_expansion_is_refused_before_any_walk(tmp_path, text):
    err, path = load_error(tmp_path, text)
    assert str(err).startswith(f"{path}:"), str(err)
    assert "YAML nodes" in str(err) or "recursive alias" in str(err), str(err)
    assert len(str(err)) < 400


def test_refusals_quote_at_most_200_characters_of_a_value(tmp_path):
    long_list = "[" + ", ".join(str(i) for i in range(5000)) + "]"
    text = BASE.replace("env_name: mug_bowl", f"env_name: mug_bowl\nplacer_params: {long_list}")
    err, path = load_error(tmp_path, text)
    assert "placer_params" in str(err) and len(str(err)) < QUOTE_LIMIT + 300, str(err)
    assert short_repr(list(range(5000))).endswith("...") and len(short_repr(list(range(5000)))) == QUOTE_LIMIT
    assert short_repr({"a": [1, (2,)], "b": "x"}) == repr({"a": [1, (2,)], "b": "x"})


# -- 2. values checked once where they enter -------------------------------------------------------------------------

#: (kind, reference, params): one value outside its range each; the base spec's table is 1.0 x 0.8 x 0.75 m.
BAD_RELATION_VALUES = [
    ("on", "table", {"clearance_m": 5.0}),
    ("on", "table", {"edge_margin_m": 3.0}),
    ("on", "table", {"clearance_m": -0.01}),
    ("on", "table", {"relation_loss_weight": -1.0}),
    ("clutter_on", "table", {"clearance_m": 5.0}),
    ("clutter_on", "table", {"gap_m": 5.0}),
    ("clutter_on", "table", {"edge_margin_m": 5.0}),
    ("clutter_on", "table", {"spread": 1.5}),
    ("clutter_on", "table", {"spread": 0.0}),
    ("next_to", "table", {"side": "positive_x", "distance_m": -1.0}),
    ("next_to", "table", {"side": "positive_x", "cross_position_ratio": 2.0}),
    ("next_to", "table", {"side": "positive_x", "tolerance_m": -0.1}),
    ("next_to", "table", {"side": "upward"}),
    ("not_next_to", "table", {"tolerance_m": -1.0}),
    ("align_with", "table", {"axis": "z", "tolerance_m": -1.0}),
    ("align_with", "table", {"axis": "w"}),
    ("position_limits_box", None, {"x_limits": [1.0, 0.0]}),
    ("position_limits_cylindrical", None, {"center_x": 0.0, "center_y": 0.0, "radius_max": 1.0, "radius_min": -1.0}),
    ("position_limits_cylindrical", None, {"center_x": 0.0, "center_y": 0.0, "radius_min": 0.1, "radius_max": 0.0}),
    ("random_around_solution", None, {"x_half_m": -0.1}),
]


def _bad_value_id(case):
    kind, _, params = case
    return f"{kind}-{list(params)[-1]}={list(params.values())[-1]}"


@pytest.fixture(scope="module")
def base_assets():
    env = ArenaEnvGraphSpec.from_dict(_base_dict()).to_arena_env()
    return {a.name: a for a in env.assets}


def _base_dict():
    import yaml

    return yaml.safe_load(BASE)


@pytest.mark.parametrize("case", BAD_RELATION_VALUES, ids=[_bad_value_id(c) for c in BAD_RELATION_VALUES])
def test_relation_values_refused_the_same_through_python_and_yaml(tmp_path, base_assets, case):
    kind, reference, params = case
    cls = RELATION_KINDS[kind]
    args = [base_assets[reference]] if reference else []
    with pytest.raises(ValueError) as python_err:
        cls(*args, **params)
    entry = f"  - kind: '{kind}'\n    subject: bowl\n" + (f"    reference: {reference}\n" if reference else "")
    entry += "    params:\n" + "".join(f"      {k}: {json.dumps(v)}\n" for k, v in params.items())
    text = BASE + entry
    err, path = load_error(tmp_path, text)
    bad = list(params)[-1]
    assert err.detail == str(python_err.value), (err.detail, str(python_err.value))
    assert err.key == f"params.{bad}" and err.line == line_no(text, f"      {bad}: "), str(err)
    assert str(err).startswith(f"{path}:{err.line}: relations[4]"), str(err)


def test_on_clearance_larger_than_the_support_is_refused_in_python():
    env = ArenaEnvGraphSpec.from_dict(_base_dict()).to_arena_env()
    table = env.get_asset("table")
    with pytest.raises(ValueError, match=r"On: clearance_m=5 m is larger than its support 'table'"):
        RELATION_KINDS["on"](table, clearance_m=5.0)
    assert RELATION_KINDS["on"](table, clearance_m=0.3).clearance_m == 0.3


#: (kind, reference, params): a length no placement in the base scene (1.0 x 0.8 x 0.75 m table) can use, known
#: only once the scene is: refused by the YAML loader (key and line) and by the compile of a scene built in Python,
#: in the same words (``relations/compiler/scene_lengths.py``).
SCENE_LENGTH_CASES = [
    ("next_to", "mug", {"side": "positive_x", "distance_m": 50.0}),
    ("align_with", "mug", {"axis": "x", "offset_m": -7.5}),
    ("random_around_solution", None, {"x_half_m": 2.5}),
]


@pytest.mark.parametrize("case", SCENE_LENGTH_CASES, ids=[_bad_value_id(c) for c in SCENE_LENGTH_CASES])
def test_scene_lengths_refused_the_same_through_python_and_yaml(tmp_path, case):
    from isaaclab_arena.relations.object_placer import ObjectPlacer
    from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams

    kind, reference, params = case
    env = ArenaEnvGraphSpec.from_dict(_base_dict()).to_arena_env()
    args = [env.get_asset(reference)] if reference else []
    relation = RELATION_KINDS[kind](*args, **params)  # the value alone is fine: only the scene makes it too long
    env.get_asset("bowl").add_relation(relation)
    with pytest.raises(ValueError) as python_err:
        ObjectPlacer(ObjectPlacerParams(placement_seed=1)).compile(env.get_placement_assets(), num_envs=1)
    bad, value = list(params.items())[-1]
    expected = (f"{bad}={value:g} m is larger than the whole scene (1.000 m, the largest side of the fixed assets' "
                "bounds); no placement in this scene can use it (scene sizes: docs/ENV_SPEC.md)")
    assert str(python_err.value) == f"asset 'bowl', relation {relation.describe()}: {expected}"
    entry = f"  - kind: '{kind}'\n    subject: bowl\n" + (f"    reference: {reference}\n" if reference else "")
    entry += "    params:\n" + "".join(f"      {k}: {json.dumps(v)}\n" for k, v in params.items())
    text = BASE + entry
    err, path = load_error(tmp_path, text)
    assert err.detail == expected and err.key == f"params.{bad}", str(err)


# -- 3. names used as ids ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["my scene", "a/b", "1scene", "scène"])
def test_env_name_must_fit_a_gym_id(tmp_path, name):
    text = BASE.replace("env_name: mug_bowl", f"env_name: {json.dumps(name)}")
    err, path = load_error(tmp_path, text)
    assert str(err).startswith(f"{path}:1: key 'env_name': 'env_name' must be ASCII letters, digits, _ and -, "
                               "starting with a letter"), str(err)
    from isaaclab_arena.environments.isaaclab_arena_environment import IsaacLabArenaEnvironment

    with pytest.raises(ValueError, match="IsaacLabArenaEnvironment: name must be ASCII letters, digits, _ and -"):
        IsaacLabArenaEnvironment(name, [])


@pytest.mark.parametrize("name", ["my mug", "a/b", "1mug", "mug-1"])
def test_asset_id_must_be_a_prim_name(tmp_path, name):
    text = BASE.replace("  - id: mug\n", f"  - id: {json.dumps(name)}\n").replace("mug\n", f"{json.dumps(name)}\n")
    err, path = load_error(tmp_path, text)
    assert err.key == "id" and "must be ASCII letters, digits and _, not starting with a digit (a USD prim name)" \
        in str(err), str(err)
    from isaaclab_arena.adapters.asset_registry import build_registered_asset

    with pytest.raises(ValueError, match="asset: name must be ASCII letters, digits and _, not starting with a digit"):
        build_registered_asset("box", name, {"size": [0.1, 0.1, 0.1]})


@pytest.mark.slow
def test_env_name_with_a_space_is_refused_by_the_runner(tmp_path):
    with open(MUG_BOWL) as f:
        text = f.read().replace("env_name: mug_bowl_table", "env_name: my scene")
    path = write(tmp_path, text, "my_scene.yaml")
    line = refusal(arena(tmp_path, RUNNER, "--env_spec", path, "--num_steps", "0", timeout=300))
    assert "key 'env_name'" in line and "'my scene'" in line and "gymnasium id" in line, line


# -- 4. replay bounds ----------------------------------------------------------------------------------------------

def _layout_line(position: str) -> str:
    return ('{"variations": {"scene.relation_placement": {"poses": {"mug": {"position_xyz": ' + position +
            ', "rotation_xyzw": [0.0, 0.0, 0.0, 1.0]}}}}}\n')


@pytest.mark.parametrize("position, token, axis", [
    ("[1e6, 0.0, 0.8]", "1e6", "x"),
    ("[0.1, -250, 0.8]", "-250", "y"),
    ("[0.1, 0.0, -50]", "-50", "z"),
    ("[0.1, 0.0, 1E+3]", "1E+3", "z"),
])
def test_replayed_position_outside_the_bound_is_refused_as_written(tmp_path, position, token, axis):
    path = tmp_path / "layouts.jsonl"
    path.write_text(_layout_line("[0.1, 0.0, 0.8]") + _layout_line(position))
    with pytest.raises(PlacementLayoutsError) as info:
        PlacementLayouts.from_episode_jsonl(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}:2: object 'mug': position_xyz {axis} = {token} m is outside the replay bound"), msg
    assert "position_bound_m=None" in msg
    loaded = PlacementLayouts.from_episode_jsonl(path, position_bound_m=None)
    assert loaded.num_layouts == 2


def test_replayed_position_too_large_for_float32_is_quoted_not_inf(tmp_path):
    path = tmp_path / "layouts.jsonl"
    path.write_text(_layout_line("[1e308, 0.0, 0.8]"))
    for kw in ({}, {"position_bound_m": None}):
        with pytest.raises(PlacementLayoutsError, match=r":1: object 'mug': position_xyz .*1e308") as info:
            PlacementLayouts.from_episode_jsonl(path, **kw)
        assert "inf" not in str(info.value)


# -- 5. command line -----------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_output_dir_naming_a_file_is_refused_before_solving(tmp_path):
    (tmp_path / "taken").write_text("not a folder")
    line = refusal(arena(tmp_path, RUNNER, "--env_spec", MUG_BOWL, "--output_dir", "taken", timeout=120))
    assert line.startswith("error: --output_dir taken is an existing file, not a folder"), line
    assert "Errno" not in line


@pytest.mark.slow
def test_mistyped_flag_gets_a_suggestion(tmp_path):
    line = refusal(arena(tmp_path, RUNNER, "--env_spec", MUG_BOWL, "--num_env", "4", timeout=120))
    assert "unrecognized arguments: --num_env 4" in line and "did you mean --num_envs?" in line, line


# -- 6. debug view without a display -------------------------------------------------------------------------------

def _no_display(cwd, *args, timeout: float = 600):
    import subprocess

    from _outside import LAUNCHER

    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    return subprocess.run([LAUNCHER, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=env)


@pytest.mark.slow
def test_view_without_a_display_says_so_and_names_the_recording(tmp_path):
    (tmp_path / "placement_debug.rrd").write_bytes(b"")
    line = refusal(_no_display(tmp_path, "-m", "isaaclab_arena.debug.rrd_contents", "placement_debug.rrd", "--view",
                               timeout=120))
    assert "needs a display" in line and str(tmp_path / "placement_debug.rrd") in line, line


@pytest.mark.sim
@pytest.mark.slow
def test_debug_visualize_without_a_display_says_where_the_recording_goes(tmp_path):
    out = _no_display(tmp_path, RUNNER, "--env_spec", MUG_BOWL, "--num_steps", "0", "--debug_visualize",
                      "--no-pictures")
    assert out.returncode == 0, out.stderr[-3000:]
    rrd = tmp_path / "outputs" / "arena" / "placement_debug.rrd"
    assert f"[arena] debug view: no display (DISPLAY / WAYLAND_DISPLAY is not set), so no viewer opens; the Rerun " \
           f"recording goes to {rrd}" in out.stdout, out.stdout[-3000:]
    assert rrd.is_file() and rrd.stat().st_size > 0


def test_rerun_sdk_is_pinned_in_requirements_at_the_version_the_view_is_written_for():
    from isaaclab_arena import ARENA_ROOT
    from isaaclab_arena.debug.rerun_import import PYARROW_VERSION, RERUN_SDK_VERSION

    with open(os.path.join(ARENA_ROOT, "requirements.txt")) as f:
        pins = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    assert f"rerun-sdk=={RERUN_SDK_VERSION}" in pins and f"pyarrow=={PYARROW_VERSION}" in pins, pins
    import rerun  # an ordinary dependency: importable from the environment itself

    assert rerun.__version__ == RERUN_SDK_VERSION

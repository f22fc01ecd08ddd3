"""``not_next_to`` says which side it blocks (issue 19): the spec's ``side`` defaults to ``positive_x``, and a user
who left it out could not tell which side was taken. Compiling a scene prints one line per NotNextTo; a YAML
relation without ``side`` says the default was used, one with ``side`` names it, a Python relation (where the
default cannot be told apart from a given ``positive_x``) says that positive_x is also the default."""

from __future__ import annotations

from _spec_helpers import BASE, write

from isaaclab_arena.env_spec import ArenaEnvGraphSpec
from isaaclab_arena.relations.kinds.not_next_to import MAX_SIDE_NOTICES, keep_out_notices
from isaaclab_arena.relations.object_placer import ObjectPlacer
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.relations.relations import NotNextTo, On, Side
from isaaclab_arena_environments.assets import library as L

EXTRA = """\
  - kind: not_next_to
    subject: bowl
    reference: mug{params}
"""


def _assets(tmp_path, params: str):
    text = BASE + EXTRA.format(params=params)
    return ArenaEnvGraphSpec.from_yaml(write(tmp_path, text)).to_arena_env().assets


def _compile_output(assets, capsys) -> str:
    ObjectPlacer(ObjectPlacerParams(placement_seed=3)).compile(assets, num_envs=2)
    return capsys.readouterr().out


def test_a_yaml_relation_without_side_says_the_default_was_taken(tmp_path, capsys):
    out = _compile_output(_assets(tmp_path, ""), capsys)
    assert ("[placement] not_next_to: 'bowl' is kept out of the positive_x side of 'mug' (past its +x edge, within "
            "its y extent); positive_x is the default (no side was given); side: negative_x, positive_y, negative_y "
            "blocks another side") in out


def test_a_yaml_relation_with_a_side_names_it_and_nothing_about_defaults(tmp_path, capsys):
    out = _compile_output(_assets(tmp_path, "\n    params: {side: negative_y}"), capsys)
    line = [ln for ln in out.splitlines() if "not_next_to" in ln]
    assert line == ["[placement] not_next_to: 'bowl' is kept out of the negative_y side of 'mug' (past its -y edge, "
                    "within its x extent)"]
    out = _compile_output(_assets(tmp_path, "\n    params: {side: positive_x}"), capsys)
    assert "default" not in out and "the positive_x side of 'mug'" in out  # given explicitly: no default note


def test_python_relations_name_their_side_and_the_default(capsys):
    table = L.table_background("table")
    mug = L.mug("mug").add_relation(On(table))
    bowl = L.bowl("bowl").add_relation(On(table)).add_relation(NotNextTo(mug))
    cube = L.cube_4cm("cube").add_relation(On(table)).add_relation(NotNextTo(mug, side=Side.POSITIVE_Y))
    from isaaclab_arena.relations.relations import IsAnchor

    table.add_relation(IsAnchor())
    lines = [ln for ln in _compile_output([table, mug, bowl, cube], capsys).splitlines() if "not_next_to" in ln]
    assert lines == [
        "[placement] not_next_to: 'bowl' is kept out of the positive_x side of 'mug' (past its +x edge, within its y "
        "extent); positive_x is also the default when no side is given",
        "[placement] not_next_to: 'cube' is kept out of the positive_y side of 'mug' (past its +y edge, within its x "
        "extent)",
    ]


def test_a_scene_without_not_next_to_prints_nothing_and_many_are_counted(tmp_path, capsys):
    assert "not_next_to" not in _compile_output(ArenaEnvGraphSpec.from_yaml(write(tmp_path, BASE)).to_arena_env()
                                                .assets, capsys)
    mug = L.mug("mug")
    cubes = [L.cube_4cm(f"c{i}").add_relation(NotNextTo(mug, side=Side.NEGATIVE_X)) for i in range(9)]
    lines = keep_out_notices([mug, *cubes])
    assert len(lines) == MAX_SIDE_NOTICES + 1 and lines[-1] == "[placement] not_next_to: 3 more keep-out side(s) not listed"

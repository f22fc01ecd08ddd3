"""Progress bars with an ETA for long work (issue 19): pool fills and compiles draw a tqdm bar on stderr once
their work lasts ``PROGRESS_DELAY_S``; short work, work off a terminal, and ``ISAACLAB_ARENA_PROGRESS=0`` draw none.

The delay is set to 0 here so that a small real scene (the shipped table, twenty cubes solved with initial
sampling only, several batches) stands in for long work; nothing else is changed.
"""

from __future__ import annotations

import re

import pytest

import isaaclab_arena.utils.progress as progress
from isaaclab_arena.relations.object_placer import ObjectPlacer
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.relations.pooled_object_placer import PooledObjectPlacer
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams
from isaaclab_arena.relations.relations import On

from test_pooled_object_placer import _table
from isaaclab_arena_environments.assets import library as L

#: A tqdm state line: "<desc>: <pct>%|...| n/total [elapsed<eta, rate]".
BAR = r"{desc}:\s+\d+%\|.*\|\s*\d+/{total} \[\d\d:\d\d<\d\d:\d\d"


def _crowded():
    bg, table = _table()
    return [bg, table, *[L.cube_12cm(f"c{i:02d}").add_relation(On(table)) for i in range(12)]]


def _pool(num_envs=4):
    params = ObjectPlacerParams(min_unique_layouts_per_env=3, max_placement_attempts=6, placement_seed=5,
                                solver_params=RelationSolverParams(max_iters=0))
    return PooledObjectPlacer(_crowded(), params, num_envs=num_envs)


@pytest.fixture
def no_delay(monkeypatch):
    monkeypatch.setattr(progress, "PROGRESS_DELAY_S", 0.0)
    monkeypatch.setattr(progress, "PROGRESS_MIN_INTERVAL_S", 0.0)


def test_a_pool_fill_and_its_compile_draw_bars_with_an_eta(no_delay, monkeypatch, capsys):
    monkeypatch.setenv(progress.PROGRESS_ENV, "1")
    pool = _pool()
    pool.initialize()
    err = capsys.readouterr().err
    assert re.search(BAR.format(desc=re.escape("[placement] pool fill"), total=12), err), err[-2000:]
    assert re.search(BAR.format(desc=re.escape("[placement] compile"), total=7), err), err[-2000:]
    assert "batch 1/6" in err  # the postfix says which batch of max_placement_attempts runs


def test_no_bar_off_a_terminal_or_when_turned_off(no_delay, monkeypatch, capsys):
    monkeypatch.delenv(progress.PROGRESS_ENV, raising=False)  # stderr is captured here: not a terminal
    _pool().initialize()
    assert "pool fill" not in capsys.readouterr().err
    monkeypatch.setenv(progress.PROGRESS_ENV, "0")
    assert progress.progress_bar(10, "x", "u", enabled=True) is None  # 0 wins over a runner's --progress


def test_work_shorter_than_the_delay_draws_nothing(monkeypatch, capsys):
    monkeypatch.setenv(progress.PROGRESS_ENV, "1")
    ObjectPlacer(ObjectPlacerParams(placement_seed=1)).compile(_crowded(), num_envs=2)  # well under 2 s
    assert "[placement] compile" not in capsys.readouterr().err


def test_bars_are_wanted_on_a_terminal_unless_the_variable_says_otherwise(monkeypatch):
    class Tty:
        def isatty(self):
            return True

    monkeypatch.delenv(progress.PROGRESS_ENV, raising=False)
    monkeypatch.setattr(progress.sys, "stderr", Tty())
    assert progress.progress_wanted() is True
    assert progress.progress_wanted(default=False) is False  # a runner's --no-progress
    monkeypatch.setenv(progress.PROGRESS_ENV, "0")
    assert progress.progress_wanted() is False
    assert progress.progress_bar(0, "x", "u", enabled=True) is None  # nothing to count

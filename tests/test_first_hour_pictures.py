"""Layout pictures say what they show: axes in env-local metres, ``showing k of n envs`` when envs are left out,
the envs a user picks, the member an object set gave each env, and refused env indices. The figure is read
back as matplotlib built it (the PNG is written too)."""

from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.figure  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from isaaclab_arena.assets.object_set import RigidObjectSet  # noqa: E402
from isaaclab_arena.environments import placement_pictures as pics  # noqa: E402
from isaaclab_arena_environments.assets import library  # noqa: E402


@pytest.fixture
def drawn(monkeypatch):
    """The figures ``write_*_picture`` saved, captured before they are closed."""
    figures = []
    real = matplotlib.figure.Figure.savefig

    def keep(fig, *args, **kwargs):
        figures.append(fig)
        return real(fig, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", keep)
    return figures


def _scene():
    cube = RigidObjectSet("cube", [library.cube_4cm("a"), library.cube_8cm("b"), library.cube_12cm("c")])
    mug = library.mug("mug")
    poses = torch.zeros(3, 2, 7)
    poses[..., 6] = 1.0
    poses[:, 0, 0] = torch.tensor([-0.2, 0.0, 0.2])  # cube x per env
    poses[:, 1, 0] = 0.3  # mug
    return [cube, mug], ["cube", "mug"], poses


def _texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


def test_panels_have_metre_axes_and_name_each_envs_member(tmp_path, drawn):
    assets, names, poses = _scene()
    path = pics.write_poses_picture(assets, names, poses, str(tmp_path / "p.png"), {"cube": [0, 1, 2]})
    assert os.path.getsize(path) > 0
    fig = drawn[-1]
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.axison]
    assert len(panels) == 3
    assert all(ax.get_xlabel() == "x (m, env-local)" and ax.get_ylabel() == "y (m, env-local)" for ax in panels)
    assert [ax.get_title() for ax in panels] == ["env 0", "env 1", "env 2"]
    assert ["cube: cube_4cm", "cube: cube_8cm", "cube: cube_12cm"] == [
        next(t for t in _texts(ax) if t.startswith("cube")) for ax in panels]
    assert all("mug" in _texts(ax) for ax in panels)
    assert fig._suptitle is None  # every env drawn, no note: no heading


def test_a_picture_that_leaves_envs_out_says_so_and_draws_the_picked_ones(tmp_path, drawn):
    assets, names, poses = _scene()
    pics.write_poses_picture(assets, names, poses, str(tmp_path / "p.png"), {"cube": [0, 1, 2]}, env_ids=[2, 0],
                             note="poses after physics settled")
    fig = drawn[-1]
    panels = [ax for ax in fig.axes if ax.axison]
    assert [ax.get_title() for ax in panels] == ["env 2", "env 0"]
    assert next(t for t in _texts(panels[0]) if t.startswith("cube")) == "cube: cube_12cm"
    assert fig._suptitle.get_text() == ("poses after physics settled; showing 2 of 3 envs (pick others with "
                                        "--picture_envs)")
    # the default draws the first 16
    assert pics.picture_envs(1024) == list(range(16))
    assert pics.figure_heading(16, 1024) == "showing 16 of 1024 envs (pick others with --picture_envs)"


def test_envs_that_do_not_exist_are_refused_naming_the_flag():
    with pytest.raises(ValueError, match=r"--picture_envs: env\(s\) \[3, 7\] do not exist; this run has envs 0..2"):
        pics.picture_envs(3, env_ids=[0, 3, 7])


def test_env_ranges_parse_as_a_user_writes_them():
    import argparse

    from isaaclab_arena.environments.cli import env_selection

    assert env_selection("0-3,7,2") == [0, 1, 2, 3, 7]
    for bad in ("3-1", "a", "-2"):
        with pytest.raises(argparse.ArgumentTypeError):
            env_selection(bad)

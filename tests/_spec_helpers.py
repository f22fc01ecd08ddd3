"""Shared by the env-spec test modules: the base spec text, writing it, finding lines, loading errors."""

from __future__ import annotations

import pytest

from isaaclab_arena.env_spec import ArenaEnvGraphSpec, EnvSpecError

BASE = """\
env_name: mug_bowl
background:
  id: table
  registry_name: static_box
  params:
    size: [1.0, 0.8, 0.75]
    initial_pose: {position_xyz: [0.0, 0.0, 0.375]}
objects:
  - id: mug
    registry_name: box
    params: {size: [0.08, 0.08, 0.1], mass_kg: 0.25}
  - id: bowl
    registry_name: cylinder
    params: {radius: 0.07, height: 0.05, color: [0.8, 0.3, 0.2]}
relations:
  - kind: is_anchor
    subject: table
  - kind: 'on'
    subject: mug
    reference: table
  - kind: next_to
    subject: bowl
    reference: mug
    params: {side: negative_y, distance_m: 0.03}
  - kind: 'on'
    subject: bowl
    reference: table
    params: {clearance_m: 0.02}
"""


def write(tmp_path, text: str, name: str = "scene.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def line_no(text: str, fragment: str, occurrence: int = 1) -> int:
    """1-based line of the ``occurrence``-th line containing ``fragment``."""
    hits = [i + 1 for i, line in enumerate(text.splitlines()) if fragment in line]
    assert len(hits) >= occurrence, f"{fragment!r} not in the spec text"
    return hits[occurrence - 1]


def load_error(tmp_path, text: str) -> tuple[EnvSpecError, str]:
    path = write(tmp_path, text)
    with pytest.raises(EnvSpecError) as info:
        ArenaEnvGraphSpec.from_yaml(path)
    return info.value, path


def check_error(err: EnvSpecError, path: str, line: int, *fragments: str, key: str | None = None):
    """``err`` starts ``<path>:<line>: ``, names ``key`` and holds every fragment."""
    msg = str(err)
    assert msg.startswith(f"{path}:{line}: "), msg
    assert err.source == path and err.line == line
    if key is not None:
        assert err.key == key and f"key '{key}'" in msg, msg
    for fragment in fragments:
        assert fragment in msg, msg


def write_room_usd(path) -> str:
    """``/room`` holding a ``table`` Xform (at (0.2, 0, 0), turned 90 degrees about Z) with a 1.0 x 0.6 x 0.04 m top
    whose upper face is 0.75 m above the table frame."""
    from pxr import Gf, Usd, UsdGeom

    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    stage.SetDefaultPrim(UsdGeom.Xform.Define(stage, "/room").GetPrim())
    table = UsdGeom.Xform.Define(stage, "/room/table")
    table.AddTranslateOp().Set(Gf.Vec3d(0.2, 0.0, 0.0))
    table.AddRotateZOp().Set(90.0)
    top = UsdGeom.Cube.Define(stage, "/room/table/top")
    top.CreateSizeAttr(1.0)
    top.CreateExtentAttr([Gf.Vec3f(-0.5), Gf.Vec3f(0.5)])
    top.AddTranslateOp().Set(Gf.Vec3d(0.0, 0.0, 0.73))
    top.AddScaleOp().Set(Gf.Vec3f(1.0, 0.6, 0.04))
    stage.GetRootLayer().Save()
    return str(path)



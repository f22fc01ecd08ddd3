"""One home for quaternion math (issue 22): ``isaaclab_arena/utils/pose_math.py`` in the core and the packages
that cannot import Isaac Lab, ``isaaclab.utils.math`` in those that run with it; no hand-written copies elsewhere.

Structural: a scan of every project module (tests excepted: they keep independent references) for the
characteristic expressions of a quaternion-to-matrix conversion or a yaw extraction (``1 - 2 * (y * y + z * z)``),
a Hamilton product (``aw * bx + ax * bw``) and for functions defined under the names of the home's functions.
Behavioural: the home agrees with ``isaaclab.utils.math`` (xyzw in Isaac Lab 3.0) on random quaternions.
"""

from __future__ import annotations

import ast
import math
import os
import re

import numpy as np
import pytest
import torch

from isaaclab_arena import ARENA_ROOT
from isaaclab_arena.utils import pose_math

HOME = os.path.join("isaaclab_arena", "utils", "pose_math.py")
SCANNED = ("isaaclab_arena", "isaaclab_arena_curobo", "isaaclab_arena_environments", "scripts")
#: Function names only the home (or Isaac Lab) defines.
HOME_NAMES = {"quat_mul", "quat_multiply", "quat_apply", "quat_rotate", "quat_conjugate", "quat_to_matrix",
              "quat_xyzw_to_matrix", "matrix_from_quat", "_quat_to_matrix", "yaw_from_quat", "quat_from_euler_xyz"}
#: (module, function) defined outside the home under a home name, with why: thin wrappers that call the home.
ALLOWED_DEFS = {
    (os.path.join("isaaclab_arena", "utils", "pose.py"), "quat_multiply"): "plain-tuple wrapper of pose_math.quat_mul",
    (os.path.join("isaaclab_arena", "utils", "pose.py"), "quat_rotate"): "plain-tuple wrapper of pose_math.quat_apply",
}
#: A diagonal entry of a rotation matrix / the cosine of a yaw, ``1 - 2 * (y * y + z * z)`` (spaces removed).
_DIAGONAL = re.compile(r"1(?:\.0*)?-2(?:\.0*)?\*\((\w+)\*\1\+(\w+)\*\2\)")
#: The first term pair of a Hamilton product, ``aw * bx + ax * bw`` or ``w1 * x2 + x1 * w2`` (spaces removed).
_HAMILTON = re.compile(r"\b(\w*)w(\w*)\*(\w*)x(\w*)\+\1x\2\*\3w\4\b")


def _project_files() -> list[str]:
    out = []
    for top in SCANNED:
        for root, _, files in os.walk(os.path.join(ARENA_ROOT, top)):
            out += [os.path.relpath(os.path.join(root, f), ARENA_ROOT) for f in files if f.endswith(".py")]
    return sorted(out)


def hand_written_pose_math(path: str) -> list[str]:
    """``path:line: what`` for every quaternion formula or home-named function in ``path`` (absolute or relative)."""
    with open(os.path.join(ARENA_ROOT, path)) as f:
        source = f.read()
    found = []
    if _DIAGONAL.search(re.sub(r"[ \t]+", "", source)) or _HAMILTON.search(re.sub(r"[ \t]+", "", source)):
        for lineno, line in enumerate(source.splitlines(), 1):
            flat = re.sub(r"\s+", "", line)
            if _DIAGONAL.search(flat):
                found.append(f"{path}:{lineno}: quaternion-to-matrix / yaw expression: {line.strip()}")
            if _HAMILTON.search(flat):
                found.append(f"{path}:{lineno}: Hamilton product: {line.strip()}")
    if not any(f"def {name}(" in source for name in HOME_NAMES):
        return found
    for node in ast.walk(ast.parse(source, filename=path)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in HOME_NAMES \
                and (path, node.name) not in ALLOWED_DEFS:
            found.append(f"{path}:{node.lineno}: defines {node.name}")
    return found


def test_no_quaternion_math_outside_its_home():
    found = [hit for path in _project_files() if path != HOME for hit in hand_written_pose_math(path)]
    assert not found, ("quaternion math written outside isaaclab_arena/utils/pose_math.py; use it (core, "
                       "reachability, adapters, export, debug) or isaaclab.utils.math (environments, evaluation, "
                       "offline_placement):\n" + "\n".join(found))


def test_the_scan_sees_the_copies_it_was_written_for(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "def _rot(q):\n"
        "    x, y, z, w = q\n"
        "    return [[1 - 2 * (y * y + z * z), 2 * (x * y - z * w)]]\n"
        "def product(a, b):\n"
        "    return a.w * b.x, aw * bx + ax * bw - ay * bz\n"
        "def quat_apply(q, v):\n"
        "    return v\n"
        "def heading(q):\n"
        "    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y*y + z*z))\n")
    found = hand_written_pose_math(str(bad))  # an absolute path joins to itself
    assert [h.split(":")[1] for h in found] == ["3", "5", "9", "6"], found
    assert hand_written_pose_math(HOME), "the scan finds the home's own formulas"


def test_offline_placement_keeps_its_public_names():
    import isaaclab.utils.math as ilm

    from isaaclab_arena.offline_placement import pose_math as offline

    assert offline.quat_mul is ilm.quat_mul and offline.quat_apply is ilm.quat_apply
    assert offline.quat_conjugate is ilm.quat_conjugate
    for name in ("quat_angle_deg", "relative_pose", "world_aabb", "is_upright_quarter_turn"):
        assert callable(getattr(offline, name))


def _random_quats(n: int, seed: int) -> torch.Tensor:
    q = torch.randn(n, 4, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return q / q.norm(dim=-1, keepdim=True)


@pytest.mark.parametrize("kind", ["torch", "numpy"])
def test_home_agrees_with_isaaclab_math(kind):
    import isaaclab.utils.math as ilm  # xyzw in Isaac Lab 3.0: no conversion needed, checked below

    assert ilm.convert_quat(torch.tensor([1.0, 0.0, 0.0, 0.0]), to="xyzw").tolist() == [0.0, 0.0, 0.0, 1.0]
    a, b = _random_quats(256, 1), _random_quats(256, 2)
    v = torch.randn(256, 3, generator=torch.Generator().manual_seed(3), dtype=torch.float64)

    def home(f, *args):
        if kind == "torch":
            return f(*args)
        return torch.from_numpy(np.asarray(f(*(x.numpy() for x in args))))

    torch.testing.assert_close(home(pose_math.quat_mul, a, b), ilm.quat_mul(a, b))
    torch.testing.assert_close(home(pose_math.quat_apply, a, v), ilm.quat_apply(a, v))
    torch.testing.assert_close(home(pose_math.quat_conjugate, a), ilm.quat_conjugate(a))
    torch.testing.assert_close(home(pose_math.matrix_from_quat, a), ilm.matrix_from_quat(a))
    torch.testing.assert_close(home(pose_math.yaw_from_quat, a), ilm.euler_xyz_from_quat(a)[2])
    # the matrix rotates as the quaternion does, and a batch of (2, 128) quaternions keeps its shape
    torch.testing.assert_close((home(pose_math.matrix_from_quat, a) @ v[..., None])[..., 0], ilm.quat_apply(a, v))
    assert tuple(home(pose_math.matrix_from_quat, a.reshape(2, 128, 4)).shape) == (2, 128, 3, 3)


def test_scalar_helpers_agree_with_isaaclab_math():
    import isaaclab.utils.math as ilm

    from isaaclab_arena.utils.pose import Pose, quat_multiply, quat_rotate

    rng = np.random.default_rng(4)
    for _ in range(50):
        r, p, y = rng.uniform(-math.pi, math.pi, 3)
        q = pose_math.quat_from_euler_xyz(r, p, y)
        ref = ilm.quat_from_euler_xyz(*(torch.tensor([t], dtype=torch.float64) for t in (r, p, y)))[0]
        np.testing.assert_allclose(q, ref.numpy(), atol=1e-12)
        q2 = tuple(_random_quats(1, int(rng.integers(1 << 30)))[0].tolist())
        v = tuple(rng.normal(size=3))
        t = lambda x: torch.tensor(x, dtype=torch.float64)  # noqa: E731
        np.testing.assert_allclose(quat_multiply(q, q2), ilm.quat_mul(t([q]), t([q2]))[0], atol=1e-12)
        np.testing.assert_allclose(quat_rotate(q, v), ilm.quat_apply(t(q), t(v)), atol=1e-12)
        assert abs(Pose(rotation_xyzw=q).yaw_rad() - float(ilm.euler_xyz_from_quat(t([q]))[2][0])) < 1e-12

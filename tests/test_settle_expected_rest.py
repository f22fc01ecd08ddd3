"""The expected resting pose the settle checks measure from (``offline_placement/expected_rest.py``).

On releases its subject ``clearance_m`` above the support (the release gap), so ``pose_shift`` measures a root's
shift from its release pose lowered by that gap (every gap down a chain of On supports; a ClutterOn drop falls to
its support's surface). Every expected value is re-derived here independently in plain float64 numpy; the batches
are built by hand (env-local metres, xyzw), no simulator. The last two tests record real scenes (one Isaac Lab start
each, about 10-15 s): a mug On a box On the table (two gaps) is accepted, a mug tipping off its box is rejected.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from isaaclab_arena.offline_placement.expected_rest import (
    RestRule,
    expected_rest_drops_m,
    expected_rest_poses,
    rest_rules_from_assets,
)
from isaaclab_arena.offline_placement.post_physics_checks import PoseShiftValidator, SupportContainmentValidator
from isaaclab_arena.offline_placement.settled_batch import SettledBatch, SettledBatchError, SupportInfo

E = 3
IDENT = (0.0, 0.0, 0.0, 1.0)
TABLE_TOP = 0.75
GAP = 0.01  # On's default clearance_m: the release gap
BOX_HALF = 0.06  # a 12 cm box
MUG_HALF_H = 0.05
CUBE_HALF = 0.02


def _yaw(deg):
    h = math.radians(deg) / 2
    return (0.0, 0.0, math.sin(h), math.cos(h))


def _tilt_x(deg):
    h = math.radians(deg) / 2
    return (math.sin(h), 0.0, 0.0, math.cos(h))


def _rows(xyz, q=IDENT):
    return torch.tensor([[*xyz, *q]] * E, dtype=torch.float32)


def _batch(initial, final=None, rules=None, **kw):
    final = final if final is not None else {k: v.clone() for k, v in initial.items()}
    zeros = {k: torch.zeros(E, 3) for k in initial}
    return SettledBatch(env_ids=list(range(E)), initial_root_poses=initial, final_root_poses=final,
                        final_root_lin_vel=zeros, final_root_ang_vel={k: v.clone() for k, v in zeros.items()},
                        rest_rules=rules or {}, **kw)


# ---- numpy, float64: the expected rest re-derived without the module -----------------------------------------------
def np_quat_rotate(q, v):
    x, y, z, w = q
    r = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                  [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                  [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]], dtype=np.float64)
    return r @ np.asarray(v, dtype=np.float64)


def np_bottom_z(pose, lo, hi):
    """Lowest world Z of a local box [lo, hi] under pose (xyz + xyzw)."""
    corners = [np.array([(hi if (i >> a) & 1 else lo)[a] for a in range(3)]) for i in range(8)]
    return min(float(np_quat_rotate(pose[3:], c)[2] + pose[2]) for c in corners)


def np_angle_deg(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    d = abs(float(np.dot(a / np.linalg.norm(a), b / np.linalg.norm(b))))
    return math.degrees(2.0 * math.acos(min(1.0, d)))


def np_shift(expected, final):
    """(translation m, rotation deg) of final from expected, float64."""
    e, f = np.asarray(expected, np.float64), np.asarray(final, np.float64)
    return float(np.linalg.norm(f[:3] - e[:3])), np_angle_deg(e[3:], f[3:])


# ---- expected rest -------------------------------------------------------------------------------------------------
def test_on_subject_rests_one_release_gap_below_its_release_pose():
    release = (0.1, -0.2, TABLE_TOP + GAP + MUG_HALF_H)
    batch = _batch({"mug": _rows(release, _yaw(30.0))}, rules={"mug": RestRule(GAP)})
    rest = expected_rest_poses(batch)["mug"].double().numpy()
    np_rest = np.array([*release, *_yaw(30.0)], np.float64)
    np_rest[2] -= GAP  # lowered by the release gap only: x, y and rotation are the release pose's
    assert np.allclose(rest, np_rest, atol=1e-6), (rest[0], np_rest)
    assert rest[0, 2] == pytest.approx(TABLE_TOP + MUG_HALF_H, abs=1e-6)  # bottom on the table top
    assert batch.expected_rest_poses(["mug"])["mug"].equal(expected_rest_poses(batch, ["mug"])["mug"])


def test_roots_without_a_rule_rest_at_their_release_pose():
    initial = {"robot": _rows((-0.6, 0.0, 0.01)), "shelf": _rows((0.3, 0.0, TABLE_TOP))}
    rest = expected_rest_poses(_batch(initial))
    for k, v in initial.items():
        assert torch.equal(rest[k], v)
    assert expected_rest_drops_m(_batch(initial))["robot"].tolist() == [0.0] * E


def test_chained_on_drops_by_every_gap_down_to_the_fixed_support():
    # box On table (gap 1 cm), mug On box (gap 2 cm), spoon On mug (gap 0.5 cm): each drops by its gaps below.
    box_z = TABLE_TOP + GAP + BOX_HALF
    mug_z = box_z + BOX_HALF + 0.02 + MUG_HALF_H
    spoon_z = mug_z + MUG_HALF_H + 0.005 + 0.01
    initial = {"box": _rows((0.0, 0.0, box_z)), "mug": _rows((0.01, 0.02, mug_z)), "spoon": _rows((0.0, 0.0, spoon_z))}
    rules = {"box": RestRule(GAP), "mug": RestRule(0.02, "box"), "spoon": RestRule(0.005, "mug")}
    batch = _batch(initial, rules=rules)
    drops = {k: v.double().numpy() for k, v in expected_rest_drops_m(batch).items()}
    np_drops = {"box": GAP, "mug": GAP + 0.02, "spoon": GAP + 0.02 + 0.005}
    for k, d in np_drops.items():
        assert np.allclose(drops[k], d, atol=1e-7), (k, drops[k], d)
    rest = expected_rest_poses(batch)
    # resting bottoms touch resting tops all the way down (float64 re-check)
    box_top = float(rest["box"][0, 2]) + BOX_HALF
    assert box_top - BOX_HALF * 2 == pytest.approx(TABLE_TOP, abs=1e-6)
    assert float(rest["mug"][0, 2]) - MUG_HALF_H == pytest.approx(box_top, abs=1e-6)
    # only the requested keys and their supports are computed
    assert set(expected_rest_drops_m(batch, ["mug"])) == {"mug", "box"}


def test_clutter_on_falls_to_its_support_surface():
    lo, hi = torch.full((3,), -CUBE_HALF), torch.full((3,), CUBE_HALF)
    table = SupportInfo(local_min=[-0.5, -0.4, 0.0], local_max=[0.5, 0.4, TABLE_TOP], poses=[0.0, 0.0, 0.0, *IDENT])
    # released at different heights (stacked releases), one upright, one yawed, one tilted 30 deg
    initial = {"cube_a": _rows((0.0, 0.0, TABLE_TOP + 0.01 + CUBE_HALF)),
               "cube_b": _rows((0.05, 0.0, TABLE_TOP + 0.07 + CUBE_HALF), _yaw(45.0)),
               "cube_c": _rows((-0.05, 0.0, TABLE_TOP + 0.04 + CUBE_HALF), _tilt_x(30.0))}
    keys = tuple(initial)
    batch = _batch(initial, rules={k: RestRule(0.01, "table", clutter=True) for k in keys}, clutter_keys=keys,
                   clutter_supports={k: "table" for k in keys}, clutter_local_bounds={k: (lo, hi) for k in keys},
                   supports={"table": table})
    drops = expected_rest_drops_m(batch)
    for k in keys:
        pose = initial[k][0].double().numpy()
        np_drop = np_bottom_z(pose, -CUBE_HALF * np.ones(3), CUBE_HALF * np.ones(3)) - TABLE_TOP
        assert float(drops[k][0]) == pytest.approx(np_drop, abs=1e-6), k
    assert float(drops["cube_b"][0]) == pytest.approx(0.07, abs=1e-6)
    # A container's floor (rest_height_m, support-local) is where its drops rest, not its rim.
    bin_ = SupportInfo(local_min=[-0.15, -0.1, -0.05], local_max=[0.15, 0.1, 0.05], poses=[0.0, 0.0, 0.8, *IDENT],
                       rest_height_m=-0.04)
    initial = {"cube": _rows((0.0, 0.0, 0.8 + 0.05 + 0.01 + CUBE_HALF))}
    batch = _batch(initial, rules={"cube": RestRule(0.01, "bin", clutter=True)}, clutter_keys=("cube",),
                   clutter_supports={"cube": "bin"}, clutter_local_bounds={"cube": (lo, hi)}, supports={"bin": bin_})
    assert float(expected_rest_poses(batch)["cube"][0, 2]) == pytest.approx(0.8 - 0.04 + CUBE_HALF, abs=1e-6)


def test_on_chained_on_a_clutter_drop_adds_the_clutter_drop():
    lo, hi = torch.full((3,), -CUBE_HALF), torch.full((3,), CUBE_HALF)
    table = SupportInfo(local_min=[-0.5, -0.4, 0.0], local_max=[0.5, 0.4, TABLE_TOP], poses=[0.0, 0.0, 0.0, *IDENT])
    tray_z = TABLE_TOP + 0.05 + CUBE_HALF  # released 5 cm up
    initial = {"tray": _rows((0.0, 0.0, tray_z)), "mug": _rows((0.0, 0.0, tray_z + CUBE_HALF + GAP + MUG_HALF_H))}
    batch = _batch(initial, rules={"tray": RestRule(0.01, "table", clutter=True), "mug": RestRule(GAP, "tray")},
                   clutter_keys=("tray",), clutter_supports={"tray": "table"}, clutter_local_bounds={"tray": (lo, hi)},
                   supports={"table": table})
    assert float(expected_rest_drops_m(batch)["mug"][0]) == pytest.approx(0.05 + GAP, abs=1e-6)


def test_rest_rules_are_checked_when_the_batch_is_built():
    initial = {"a": _rows((0.0, 0.0, 1.0)), "b": _rows((0.0, 0.0, 1.2))}
    with pytest.raises(SettledBatchError, match=r"form a cycle"):
        _batch(initial, rules={"a": RestRule(GAP, "b"), "b": RestRule(GAP, "a")})
    with pytest.raises(SettledBatchError, match=r"'a' rests on 'table', which is not a recorded root"):
        _batch(initial, rules={"a": RestRule(GAP, "table")})
    with pytest.raises(SettledBatchError, match=r"'ghost' is not a recorded root"):
        _batch(initial, rules={"ghost": RestRule(GAP)})
    with pytest.raises(ValueError, match=r"gap_m must be a finite number >= 0"):
        RestRule(-0.01)


# ---- pose_shift measures from the expected rest --------------------------------------------------------------------
def _mug_batch(final_xyz, final_q=IDENT):
    release = (0.1, 0.2, TABLE_TOP + GAP + MUG_HALF_H)
    initial = {"mug": _rows(release)}
    final = {"mug": _rows(final_xyz, final_q)}
    return _batch(initial, final, rules={"mug": RestRule(GAP)}), release


def test_default_pose_shift_accepts_an_on_subject_resting_at_its_expected_pose():
    # settled 1 cm below its release (on the table), plus 0.3 mm of physics jitter: accepted with the defaults
    batch, release = _mug_batch((0.1003, 0.2, TABLE_TOP + MUG_HALF_H))
    assert PoseShiftValidator().run(batch)[0].passed is True
    expected = (release[0], release[1], release[2] - GAP, *IDENT)
    trans, rot = np_shift(expected, batch.final_root_poses["mug"][0].double().numpy())
    assert trans == pytest.approx(0.0003, abs=1e-6) and trans <= 0.002 and rot <= 2.0


def test_a_parked_pool_member_rests_at_its_parking_spot():
    # an object-pool member parked in env 1 (1 km up, out of the physics) does not fall its release gap there; it
    # joined envs 0 and 2 and falls it
    release = np.array([[0.1, 0.2, TABLE_TOP + GAP + MUG_HALF_H], [0.0, 0.0, 1000.0], [0.3, 0.1, TABLE_TOP + GAP + MUG_HALF_H]])
    initial = torch.tensor(np.concatenate([release, np.tile(IDENT, (E, 1))], 1), dtype=torch.float32)
    final = initial.clone()
    final[[0, 2], 2] -= GAP
    batch = _batch({"mug": initial}, {"mug": final}, rules={"mug": RestRule(GAP)})
    rest = expected_rest_poses(batch)["mug"].double().numpy()
    assert np.allclose(rest[:, 2], release[:, 2] - [GAP, 0.0, GAP], atol=1e-5)
    assert [r.passed for r in PoseShiftValidator().run(batch)] == [True] * E


@pytest.mark.parametrize("final_xyz,final_q,np_trans,np_rot", [
    ((0.13, 0.2, TABLE_TOP + MUG_HALF_H), IDENT, 0.03, 0.0),  # slid 3 cm along the table
    ((0.1, 0.2, TABLE_TOP + GAP + MUG_HALF_H), IDENT, GAP, 0.0),  # never came down (hung on something)
    ((0.1, 0.2, TABLE_TOP + 0.04), _tilt_x(90.0), None, 90.0),  # toppled onto its side
])
def test_default_pose_shift_rejects_an_object_that_slid_or_toppled(final_xyz, final_q, np_trans, np_rot):
    batch, release = _mug_batch(final_xyz, final_q)
    report = PoseShiftValidator().run(batch)[0]
    assert report.passed is False and report.subject == "mug"
    expected = (release[0], release[1], release[2] - GAP, *IDENT)
    trans, rot = np_shift(expected, batch.final_root_poses["mug"][0].double().numpy())
    if np_trans is not None:
        assert trans == pytest.approx(np_trans, abs=1e-6)
    assert rot == pytest.approx(np_rot, abs=1e-3)
    assert f"mug: moved {trans:.4g} m and rotated" in report.reason
    assert "from its expected resting pose (the release pose lowered 0.01 m by the release gap)" in report.reason
    assert report.reason.endswith("limits 0.002 m and 2 deg")


def test_pose_shift_of_a_chain_accepts_both_resting_and_rejects_a_slid_top():
    box_z = TABLE_TOP + GAP + BOX_HALF
    mug_z = box_z + BOX_HALF + GAP + MUG_HALF_H
    initial = {"box": _rows((0.0, 0.0, box_z)), "mug": _rows((0.0, 0.0, mug_z))}
    final = {"box": _rows((0.0, 0.0, box_z - GAP)), "mug": _rows((0.0, 0.0, mug_z - 2 * GAP))}
    final["mug"][1, 0] += 0.03  # env 1: the mug slid 3 cm on the box
    final["box"][2, 2] += GAP  # env 2: the box hangs at its release height (1 cm above its rest)
    final["mug"][2, 2] += GAP
    rules = {"box": RestRule(GAP), "mug": RestRule(GAP, "box")}
    reports = PoseShiftValidator().run(_batch(initial, final, rules=rules))
    assert [r.passed for r in reports] == [True, False, False]
    assert reports[1].subject == "mug" and "lowered 0.02 m by the release gap" in reports[1].reason
    # measured from the release pose (no rules), every env would be rejected: the old, wrong behaviour
    assert [r.passed for r in PoseShiftValidator().run(_batch(initial, final))] == [False, False, False]


def test_support_containment_measures_a_relation_placed_support_from_its_expected_rest():
    # A kinematic bowl placed On the table has no rule (physics does not drop it): its release pose is its rest.
    lo, hi = torch.full((3,), -CUBE_HALF), torch.full((3,), CUBE_HALF)
    bowl_pose = (0.0, 0.0, TABLE_TOP + GAP + 0.03)
    bowl = SupportInfo(local_min=[-0.1, -0.1, -0.03], local_max=[0.1, 0.1, 0.03], poses=_rows(bowl_pose),
                       initial_poses=_rows(bowl_pose), flat_top=True)
    cube = _rows((0.0, 0.0, bowl_pose[2] + 0.03 + CUBE_HALF))
    initial = {"bowl": _rows(bowl_pose), "cube": cube + torch.tensor([0, 0, 0.02, 0, 0, 0, 0])}
    final = {"bowl": _rows(bowl_pose), "cube": cube}
    kw = dict(clutter_keys=("cube",), clutter_supports={"cube": "bowl"}, clutter_local_bounds={"cube": (lo, hi)},
              supports={"bowl": bowl})
    rules = {"cube": RestRule(0.01, "bowl", clutter=True)}
    assert [r.passed for r in SupportContainmentValidator().run(_batch(initial, final, rules, **kw))] == [True] * E


# ---- rules from the placement assets -------------------------------------------------------------------------------
def test_rest_rules_from_assets_follow_the_relations_and_the_physics_of_each_asset():
    from isaaclab_arena.assets.asset import Object
    from isaaclab_arena.assets.bounding_box import AxisAlignedBoundingBox as Box
    from isaaclab_arena.relations.relations import ClutterOn, IsAnchor, On
    from isaaclab_arena.utils.pose import Pose

    def obj(name, half, spawn=None, pose=None):
        return Object(name, spawn_cfg=spawn, bounding_box=Box((-half,) * 3, (half,) * 3), initial_pose=pose)

    table = obj("table", 0.4, pose=Pose((0.0, 0.0, 0.35))).add_relation(IsAnchor())
    box = obj("box", BOX_HALF).add_relation(On(table))
    mug = obj("mug", MUG_HALF_H).add_relation(On(box, clearance_m=0.02))
    kinematic = SimpleNamespace(rigid_props=SimpleNamespace(kinematic_enabled=True))
    bin_ = obj("bin", 0.05, spawn=kinematic).add_relation(On(table))
    cube = obj("cube", CUBE_HALF).add_relation(On(bin_))  # On a kinematic body: only its own gap
    floating = obj("balloon", 0.05, spawn=SimpleNamespace(rigid_props=[SimpleNamespace(disable_gravity=True)]))
    floating.add_relation(On(table))
    clutter = obj("pebble", CUBE_HALF).add_relation(ClutterOn(table, clearance_m=0.03))
    fixed = obj("shelf", 0.1, pose=Pose((0.3, 0.0, TABLE_TOP)))
    robot = obj("robot", 0.2).add_relation(On(table))
    assets = [table, box, mug, bin_, cube, floating, clutter, fixed, robot]
    roots = ["box", "mug", "bin", "cube", "balloon", "pebble", "shelf", "robot"]
    rules = rest_rules_from_assets(assets, roots, robot_keys=("robot",))
    assert rules == {"box": RestRule(0.01), "mug": RestRule(0.02, "box"), "cube": RestRule(0.01, "bin"),
                     "pebble": RestRule(0.03, "table", clutter=True)}


# ---- real physics (kit-less Isaac Lab, OV PhysX, CPU): a chain is accepted, a mug tipping off its box is rejected ----
CHAIN_SCENE = """
env_name: chain_on_box
background: {id: table_background, registry_name: table_background}
object_references:
  - {id: table, parent_id: table_background, prim_path: table, object_type: base}
objects:
  - {id: box, registry_name: cube_12cm}
  - {id: mug, registry_name: mug}
relations:
  - {kind: is_anchor, subject: table}
  - {kind: 'on', subject: box, reference: table}
  - {kind: 'on', subject: mug, reference: box, params: {edge_margin_m: 0.0}}
"""
# The box rests on the table (initial_pose); the mug is released On it, overhanging its +X edge: it tips off.
TIPPING_SCENE = """
env_name: mug_tips_off_box
background: {id: table_background, registry_name: table_background}
object_references:
  - {id: table, parent_id: table_background, prim_path: table, object_type: base}
objects:
  - {id: box, registry_name: cube_12cm, params: {initial_pose: {position_xyz: [0.0, 0.0, 0.81]}}}
  - {id: mug, registry_name: mug}
relations:
  - {kind: is_anchor, subject: table}
  - {kind: 'on', subject: mug, reference: box, params: {overlap: true}}
  - {kind: position_limits, subject: mug, params: {x_limits: [0.09, 0.095], y_limits: [-0.005, 0.005]}}
"""


def _record(tmp_path, name, scene, *overrides):
    import os
    import subprocess
    import sys

    from isaaclab_arena import ARENA_ROOT

    spec = tmp_path / f"{name}.yaml"
    spec.write_text(scene)
    out = tmp_path / f"{name}.jsonl"
    script = os.path.join(ARENA_ROOT, "isaaclab_arena", "scripts", "record_placement_layouts.py")
    proc = subprocess.run([sys.executable, script, f"env_spec={spec}", f"output={out}", *overrides],
                          capture_output=True, text=True, cwd=str(tmp_path), timeout=600)
    return proc, out


@pytest.mark.sim
@pytest.mark.slow
def test_real_chain_settles_two_gaps_down_and_is_accepted_with_default_limits(tmp_path):
    proc, out = _record(tmp_path, "chain", CHAIN_SCENE, "num_envs=1", "min_layouts=1")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Saved 1/1 accepted layouts" in proc.stdout and "pose_shift" not in proc.stdout


@pytest.mark.sim
@pytest.mark.slow
def test_real_mug_tipping_off_its_box_is_rejected_with_default_limits(tmp_path):
    proc, out = _record(tmp_path, "tip", TIPPING_SCENE, "num_envs=2", "min_layouts=2", "max_batches=1",
                        "settle.num_steps=30")
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert not out.exists()
    line = next(l for l in proc.stdout.splitlines() if l.startswith("Rejected 2: pose_shift: mug: moved "))
    moved = float(line.split(" moved ")[1].split(" m")[0])
    assert moved > 0.03, line  # fell off the box: centimetres from its expected rest, not the 1 cm release gap
    assert "from its expected resting pose (the release pose lowered 0.01 m by the release gap)" in line

"""Every relation class of the relations reference: positional calls in the reference's parameter order, defaults and
the layouts they place (re-checked in float64 numpy), YAML kinds, enums, range checks."""

from __future__ import annotations

import inspect
import math

import pytest

from isaaclab_arena.adapters.asset_registry import build_registered_asset
from isaaclab_arena.relations.relations import (
    RELATION_KIND_ALIASES,
    RELATION_KINDS,
    AlignWith,
    AtPosition,
    Axis,
    ClutterOn,
    FaceTo,
    IsAnchor,
    NextTo,
    NotNextTo,
    On,
    PositionLimitsBox,
    PositionLimitsCylindrical,
    RandomAroundSolution,
    RequiresReachability,
    RotateAroundSolution,
    Side,
)

REQUIRED = inspect.Parameter.empty

#: Constructor parameters in the reference's order, with defaults (the data the tests below call and place with).
#: NextTo's side defaults to +X: with no other arguments, NextTo(parent) places the subject on the parent's
#: positive X side at a distance of 0.05 m.
SIGNATURES = {
    AlignWith: [("parent", REQUIRED), ("axis", REQUIRED), ("offset_m", 0.0), ("tolerance_m", 0.02),
                ("relation_loss_weight", 1.0)],
    AtPosition: [("x", None), ("y", None), ("z", None), ("relation_loss_weight", 1.0)],
    ClutterOn: [("parent", REQUIRED), ("spread", 0.2), ("clearance_m", 0.01), ("gap_m", 0.03), ("random_yaw", True),
                ("edge_margin_m", 0.0), ("relation_loss_weight", 1.0)],
    FaceTo: [("parent", REQUIRED)],
    IsAnchor: [],
    NextTo: [("parent", REQUIRED), ("side", Side.POSITIVE_X), ("relation_loss_weight", 1.0), ("distance_m", 0.05),
             ("cross_position_ratio", None), ("tolerance_m", 0.01)],
    NotNextTo: [("parent", REQUIRED), ("relation_loss_weight", 1.0), ("side", Side.POSITIVE_X), ("tolerance_m", 0.01)],
    On: [("parent", REQUIRED), ("relation_loss_weight", 1.0), ("clearance_m", 0.01), ("edge_margin_m", 0.05),
         ("overlap", False)],
    PositionLimitsBox: [("x_limits", (None, None)), ("y_limits", (None, None)), ("z_limits", (None, None)),
                        ("relation_loss_weight", 1.0)],
    PositionLimitsCylindrical: [("center_x", REQUIRED), ("center_y", REQUIRED), ("radius_min", None),
                                ("radius_max", None), ("relation_loss_weight", 1.0)],
    RequiresReachability: [],
    RotateAroundSolution: [("roll_rad", 0.0), ("pitch_rad", 0.0), ("yaw_rad", 0.0)],
}

KINDS = {
    AlignWith: "align_with", AtPosition: "at_position", ClutterOn: "clutter_on", FaceTo: "face_to",
    IsAnchor: "is_anchor", NextTo: "next_to", NotNextTo: "not_next_to", On: "on",
    PositionLimitsBox: "position_limits_box", PositionLimitsCylindrical: "position_limits_cylindrical",
    RequiresReachability: "requires_reachability", RotateAroundSolution: "rotate_around_solution",
    RandomAroundSolution: "random_around_solution",
}

SPATIAL = {On, ClutterOn, NextTo, NotNextTo, AtPosition, AlignWith, PositionLimitsBox, PositionLimitsCylindrical}


@pytest.fixture(scope="module")
def table():
    return build_registered_asset("static_box", "table", {"size": [1.0, 1.0, 0.1]})


@pytest.fixture(scope="module")
def mug():
    return build_registered_asset("box", "mug", {"size": [0.08, 0.08, 0.1]})


#: A value for each parameter other than its default, to call the classes positionally.
OTHER_VALUES = {"relation_loss_weight": 2.5, "clearance_m": 0.02, "edge_margin_m": 0.07, "overlap": True,
                "axis": "y", "offset_m": 0.1, "tolerance_m": 0.03, "x": 0.1, "y": -0.2, "z": 0.9, "spread": 0.3,
                "gap_m": 0.04, "random_yaw": False, "side": Side.NEGATIVE_Y, "distance_m": 0.08,
                "cross_position_ratio": 0.5, "x_limits": (-0.3, 0.3), "y_limits": (-0.2, 0.2),
                "z_limits": (0.0, 2.0), "center_x": 0.5, "center_y": -0.5, "radius_min": 0.1, "radius_max": 0.4,
                "roll_rad": 0.1, "pitch_rad": 0.2, "yaw_rad": 0.3}


def _plain(value):
    """An enum as its value, a list as a tuple (how a relation may store what it was given)."""
    value = getattr(value, "value", value)
    return tuple(value) if isinstance(value, list) else value


@pytest.mark.parametrize("cls", list(SIGNATURES), ids=lambda c: c.__name__)
def test_positional_calls_follow_the_reference_order(cls, table):
    """A user calling ``On(table, 2.5, 0.02, 0.07, True)`` gets what the reference's parameter order promises:
    every argument given positionally, in that order, lands in the attribute of its name."""
    names = [n for n, _ in SIGNATURES[cls]]
    values = [table if n == "parent" else OTHER_VALUES[n] for n in names]
    relation = cls(*values)
    for name, value in zip(names, values):
        got = getattr(relation, name)
        if name == "parent":
            assert got is value
        else:
            assert _plain(got) == _plain(value), f"{cls.__name__}: {name} = {got!r}, expected {value!r}"
    with pytest.raises(TypeError):
        cls(*values, 1.0)  # no parameter beyond the reference's


@pytest.mark.parametrize("cls", list(SIGNATURES), ids=lambda c: c.__name__)
def test_defaults_are_applied(cls, table):
    required = {"parent": table, "axis": "z", "center_x": 0.5, "center_y": -0.5}
    args = {n: required[n] for n, d in SIGNATURES[cls] if d is REQUIRED}
    # A relation that constrains nothing is refused, so these two get one bound; the others keep their defaults.
    given = {AtPosition: {"x": 0.3}, PositionLimitsCylindrical: {"radius_max": 0.4}}.get(cls, {})
    relation = cls(**args, **given)
    for name, default in SIGNATURES[cls]:
        if default is REQUIRED or name in given:
            continue
        value = getattr(relation, name)
        expected = tuple(default) if isinstance(default, tuple) else default
        assert value == expected, f"{cls.__name__}.{name} = {value!r}, expected {expected!r}"
    if cls is FaceTo:
        assert relation.parent is table and relation.params() == {}


def test_at_position_keeps_unset_axes_free():
    rel = AtPosition(x=0.3)
    assert (rel.x, rel.y, rel.z, rel.relation_loss_weight) == (0.3, None, None, 1.0)


def test_yaml_kinds_and_aliases():
    for cls, kind in KINDS.items():
        assert cls.yaml_kind == kind
        assert RELATION_KINDS[kind] is cls
    assert set(RELATION_KINDS) == set(KINDS.values())
    assert RELATION_KIND_ALIASES["position_limits"] == "position_limits_box"
    assert RELATION_KINDS[RELATION_KIND_ALIASES["cluttered_on"]] is ClutterOn


def test_spatial_flags():
    for cls in KINDS:
        assert cls.is_spatial == (cls in SPATIAL), cls.__name__


def test_side_and_axis_values():
    assert [s.value for s in Side] == ["positive_x", "negative_x", "positive_y", "negative_y"]
    assert [a.value for a in Axis] == ["x", "y", "z"]
    assert Side("negative_y") is Side.NEGATIVE_Y and Axis("y") is Axis.Y
    assert (Side.POSITIVE_X.axis_index, Side.NEGATIVE_Y.axis_index, Side.NEGATIVE_X.sign) == (0, 1, -1.0)
    assert (Axis.X.index, Axis.Z.index) == (0, 2)


def test_enums_accept_strings(table):
    assert NextTo(table, side="negative_y").side is Side.NEGATIVE_Y
    assert NextTo(table, side="POSITIVE_Y").side is Side.POSITIVE_Y
    assert NotNextTo(table, side="negative_x").side is Side.NEGATIVE_X
    assert AlignWith(table, axis="Z").axis is Axis.Z
    assert AlignWith(table, Axis.Y).axis is Axis.Y
    assert NextTo(table, side="negative_y").params()["side"] == "negative_y"


def test_params_rebuild_equal_relations(table, mug):
    relations = [
        On(table, clearance_m=0.02, edge_margin_m=0.0, overlap=True),
        ClutterOn(table, spread=0.5, clearance_m=0.02, gap_m=0.05, random_yaw=False, edge_margin_m=0.01),
        NextTo(mug, side="negative_y", distance_m=0.1, cross_position_ratio=0.0, tolerance_m=0.02),
        NotNextTo(mug, side="positive_y", tolerance_m=0.0),
        AlignWith(mug, "x", offset_m=-0.1, tolerance_m=0.0),
        AtPosition(y=0.2, z=1.0),
        PositionLimitsBox(x_limits=(-0.2, None), z_limits=[0.0, 1.0]),
        PositionLimitsCylindrical(0.0, 0.1, radius_min=0.2, radius_max=0.4),
        RotateAroundSolution(yaw_rad=1.57),
        RandomAroundSolution(x_half_m=0.01, yaw_half_rad=0.1),
    ]
    for rel in relations:
        args = [rel.parent] if rel.parent is not None else []
        assert type(rel)(*args, **rel.params()) == rel
    assert On(table) != On(mug) and On(table) != On(table, clearance_m=0.0)


def test_rotate_around_solution_quaternion():
    q = RotateAroundSolution(yaw_rad=math.pi / 2).quaternion_xyzw()
    assert all(math.isclose(a, b, abs_tol=1e-9) for a, b in zip(q, (0.0, 0.0, math.sqrt(0.5), math.sqrt(0.5))))
    q = RotateAroundSolution(roll_rad=math.pi).quaternion_xyzw()
    assert all(math.isclose(a, b, abs_tol=1e-9) for a, b in zip(q, (1.0, 0.0, 0.0, 0.0)))


def test_random_around_solution_xy_flag():
    assert RandomAroundSolution(y_half_m=0.01).has_xy_offset
    assert not RandomAroundSolution(z_half_m=0.01, yaw_half_rad=0.2).has_xy_offset


# -- every range / type check rejects a bad value, naming the relation and the parameter ----------------------
BAD = [
    ("On", lambda t: On(t, clearance_m=-0.01), "clearance_m must be >= 0"),
    ("On", lambda t: On(t, edge_margin_m=-0.1), "edge_margin_m must be >= 0"),
    ("On", lambda t: On(t, overlap="yes"), "overlap must be true or false"),
    ("On", lambda t: On(t, relation_loss_weight=-1.0), "relation_loss_weight must be >= 0"),
    ("On", lambda t: On(t, clearance_m=float("nan")), "clearance_m must be finite"),
    ("On", lambda t: On(t, clearance_m="0.01"), "clearance_m must be a number"),
    ("ClutterOn", lambda t: ClutterOn(t, spread=0.0), "spread must be > 0"),
    ("ClutterOn", lambda t: ClutterOn(t, spread=1.5), "spread must be <= 1"),
    ("ClutterOn", lambda t: ClutterOn(t, clearance_m=-0.001), "clearance_m must be >= 0"),
    ("ClutterOn", lambda t: ClutterOn(t, gap_m=-0.01), "gap_m must be >= 0"),
    ("ClutterOn", lambda t: ClutterOn(t, edge_margin_m=-0.01), "edge_margin_m must be >= 0"),
    ("ClutterOn", lambda t: ClutterOn(t, random_yaw=1), "random_yaw must be true or false"),
    ("NextTo", lambda t: NextTo(t, side="up"), "side='up' is not a valid Side"),
    ("NextTo", lambda t: NextTo(t, distance_m=-0.05), "distance_m must be >= 0"),
    ("NextTo", lambda t: NextTo(t, cross_position_ratio=1.5), "cross_position_ratio must be <= 1"),
    ("NextTo", lambda t: NextTo(t, cross_position_ratio=-1.01), "cross_position_ratio must be >= -1"),
    ("NextTo", lambda t: NextTo(t, tolerance_m=-0.01), "tolerance_m must be >= 0"),
    ("NextTo", lambda t: NextTo(t, distance_m=float("inf")), "distance_m must be finite"),
    ("NotNextTo", lambda t: NotNextTo(t, side=3), "side=3 is not a valid Side"),
    ("NotNextTo", lambda t: NotNextTo(t, tolerance_m=-1.0), "tolerance_m must be >= 0"),
    ("AtPosition", lambda t: AtPosition(), "set at least one of x, y, z"),
    ("AtPosition", lambda t: AtPosition(x=float("inf")), "x must be finite"),
    ("AtPosition", lambda t: AtPosition(x=True), "x must be a number"),
    ("AlignWith", lambda t: AlignWith(t, "w"), "axis='w' is not a valid Axis"),
    ("AlignWith", lambda t: AlignWith(t, "x", tolerance_m=-0.01), "tolerance_m must be >= 0"),
    ("AlignWith", lambda t: AlignWith(t, "x", offset_m=float("nan")), "offset_m must be finite"),
    ("PositionLimitsBox", lambda t: PositionLimitsBox(x_limits=(0.5, 0.1)), "minimum 0.5 is above its maximum 0.1"),
    ("PositionLimitsBox", lambda t: PositionLimitsBox(y_limits=(0.1,)), "must be a (minimum, maximum) pair"),
    ("PositionLimitsBox", lambda t: PositionLimitsBox(z_limits="0,1"), "must be a (minimum, maximum) pair"),
    ("PositionLimitsBox", lambda t: PositionLimitsBox(x_limits=(None, float("nan"))), "x_limits[1] must be finite"),
    ("PositionLimitsCylindrical", lambda t: PositionLimitsCylindrical(0.0, 0.0), "set radius_min, radius_max or both"),
    ("PositionLimitsCylindrical", lambda t: PositionLimitsCylindrical(0.0, 0.0, radius_min=-0.1),
     "radius_min must be >= 0"),
    ("PositionLimitsCylindrical", lambda t: PositionLimitsCylindrical(0.0, 0.0, radius_max=0.0),
     "radius_max must be > 0"),
    ("PositionLimitsCylindrical", lambda t: PositionLimitsCylindrical(0.0, 0.0, radius_min=0.5, radius_max=0.2),
     "radius_min 0.5 is above radius_max 0.2"),
    ("PositionLimitsCylindrical", lambda t: PositionLimitsCylindrical("a", 0.0, radius_max=1.0),
     "center_x must be a number"),
    ("RotateAroundSolution", lambda t: RotateAroundSolution(yaw_rad=float("inf")), "yaw_rad must be finite"),
    ("RandomAroundSolution", lambda t: RandomAroundSolution(x_half_m=-0.01), "x_half_m must be >= 0"),
    ("RandomAroundSolution", lambda t: RandomAroundSolution(yaw_half_rad=-0.1), "yaw_half_rad must be >= 0"),
]


@pytest.mark.parametrize("name,make,fragment", BAD, ids=[f"{b[0]}-{b[2][:30]}" for b in BAD])
def test_bad_values_are_rejected(table, name, make, fragment):
    with pytest.raises(ValueError) as info:
        make(table)
    msg = str(info.value)
    assert msg.startswith(f"{name}:"), msg
    assert fragment in msg, msg


def test_bad_enum_lists_accepted_values(table):
    with pytest.raises(ValueError, match="accepted: 'positive_x', 'negative_x', 'positive_y', 'negative_y'"):
        NextTo(table, side="left")
    with pytest.raises(ValueError, match="accepted: 'x', 'y', 'z'"):
        AlignWith(table, axis=None)


@pytest.mark.parametrize("cls", [On, ClutterOn, NextTo, NotNextTo, FaceTo], ids=lambda c: c.__name__)
def test_parent_must_be_an_asset(cls):
    with pytest.raises(TypeError, match=f"{cls.__name__}: parent must be a placeable asset"):
        cls("table")
    with pytest.raises(TypeError, match="AlignWith: parent must be a placeable asset"):
        AlignWith(None, "x")


def test_relation_to_itself_is_rejected(mug):
    with pytest.raises(ValueError, match="asset 'mug': On refers to the asset itself"):
        mug.add_relation(On(mug))
    assert mug.get_relations() == []


def _placed(relations_of_mug, parent_pose=None, n_envs: int = 16):
    """(mug origins (E, 3), parent origins (E, 3)) float64, env-local metres: a 0.08 x 0.08 x 0.1 mug with
    ``relations_of_mug(table, parent)`` beside a 0.1 x 0.1 x 0.1 parent box On a 1.2 x 0.8 table (top at 0.75 m)."""
    import numpy as np

    from isaaclab_arena.benchmarks.scenes import cuboid, table as make_table
    from isaaclab_arena.relations.object_placer import ObjectPlacer
    from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
    from isaaclab_arena.relations.relation_solver_params import RelationSolverParams

    t = make_table()
    parent = cuboid("parent", (0.1, 0.1, 0.1))
    parent.add_relation(On(t))
    mug = cuboid("mug", (0.08, 0.08, 0.1))
    for rel in relations_of_mug(t, parent):
        mug.add_relation(rel)
    placer = ObjectPlacer(ObjectPlacerParams(placement_seed=11, solver_params=RelationSolverParams(verbose=False)),
                          extensions=[])
    results = placer.place([t, parent, mug], num_envs=n_envs)
    assert all(r.success for r in results), [r.explanation for r in results if not r.success][:2]
    mugs = np.array([r.positions["mug"] for r in results], dtype=np.float64)
    parents = np.array([r.positions["parent"] for r in results], dtype=np.float64)
    return mugs, parents


def test_on_defaults_rest_1_cm_above_inside_a_5_cm_margin():
    import numpy as np

    mug, _ = _placed(lambda t, p: [On(t)])
    np.testing.assert_allclose(mug[:, 2] - 0.05, 0.75 + 0.01, atol=2e-3)  # bottom at top + clearance_m 0.01
    assert (np.abs(mug[:, 0]) + 0.04 <= 0.6 - 0.05 + 1e-4).all()  # footprint inside the top less edge_margin_m
    assert (np.abs(mug[:, 1]) + 0.04 <= 0.4 - 0.05 + 1e-4).all()
    assert np.ptp(mug[:, 0]) > 0.3  # spread over the table, not piled at one spot


def test_next_to_defaults_put_the_subject_5_cm_on_the_parents_positive_x_side():
    import numpy as np

    mug, parent = _placed(lambda t, p: [On(t), NextTo(p)])
    gap = (mug[:, 0] - 0.04) - (parent[:, 0] + 0.05)  # mug's -X face to the parent's +X face
    assert (np.abs(gap - 0.05) <= 0.01 + 1e-4).all(), gap  # distance_m 0.05, tolerance_m 0.01


def test_align_with_defaults_keep_the_axis_within_2_cm():
    import numpy as np

    mug, parent = _placed(lambda t, p: [On(t), AlignWith(p, "y")])
    assert (np.abs(mug[:, 1] - parent[:, 1]) <= 0.02 + 1e-4).all()  # offset_m 0, tolerance_m 0.02
    assert np.abs(mug[:, 0] - parent[:, 0]).max() > 0.1  # the other axis stays free


def test_at_position_leaves_unset_axes_to_the_other_relations():
    import numpy as np

    mug, _ = _placed(lambda t, p: [On(t), AtPosition(x=0.3)])
    np.testing.assert_allclose(mug[:, 0], 0.3, atol=1e-3)
    assert np.ptp(mug[:, 1]) > 0.1  # y unset: drawn over the table
    np.testing.assert_allclose(mug[:, 2], 0.75 + 0.01 + 0.05, atol=2e-3)  # z unset: On decides

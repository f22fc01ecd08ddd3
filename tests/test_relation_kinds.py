"""Each relation kind's solver target lies inside what its check accepts, on random parameters.

For INTERVAL kinds the solver projects the subject's origin into ``interval``; every origin in a non-empty
interval must pass ``violation``. For PENALTY kinds the solver stops when ``penalty`` depth <= 0; every such
pose must pass ``violation``. Both are evaluated by the kinds' own device functions in one warp launch per
kind (the same functions the solver and the checks call), on 4096 random parents, subjects and parameters.
"""

from __future__ import annotations

import random
import zlib

import numpy as np
import pytest
import warp as wp

from isaaclab_arena.assets.asset import Object
from isaaclab_arena.assets.bounding_box import AxisAlignedBoundingBox
from isaaclab_arena.relations.kernels.geometry import BIG, ensure_warp
from isaaclab_arena.relations.kinds import KINDS, KIND_ID
from isaaclab_arena.relations.kinds.dispatch import (
    KIND_SOURCES_DIGEST,
    relation_interval,
    relation_violation,
    track_kind_sources,
)
from isaaclab_arena.relations.kinds.kind import KindRole, PackContext, ParamRow, RoomRow
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.relations.compiler.placement_problem import VALIDATION_SLACK_M
from isaaclab_arena.relations.relations import (
    AlignWith,
    AtPosition,
    Axis,
    ClutterOn,
    NextTo,
    NotNextTo,
    On,
    PositionLimitsBox,
    PositionLimitsCylindrical,
    Side,
)

N = 4096


class _Compiler:
    """What ``PackContext`` writes to while a kind packs one relation (its declarations are not tested here)."""

    def __init__(self, rng: random.Random | None = None):
        self.rng = rng or random.Random(0)
        self.placer_params = ObjectPlacerParams()
        self.solver_params = self.placer_params.solver_params
        self.pinned = np.zeros((2, 3), bool)
        self.exempt, self.pair_clearance = set(), {}

    def random_half_ranges(self, k: int) -> tuple[float, float, float]:
        """Random RandomAroundSolution half ranges (they widen what some checks accept)."""
        return tuple(self.rng.choice([0.0, self.rng.uniform(0.0, 0.05)]) for _ in range(3))



def _box(rng: random.Random, name: str) -> Object:
    size = [rng.uniform(0.02, 0.6) for _ in range(3)]
    return Object(name, bounding_box=AxisAlignedBoundingBox.from_size(size))


def _random_relation(kind_cls, rng: random.Random, parent):
    u = rng.uniform
    if kind_cls is On:
        return On(parent, clearance_m=u(0, 0.05), edge_margin_m=u(0, 0.1), overlap=rng.random() < 0.3)
    if kind_cls is ClutterOn:
        return ClutterOn(parent, spread=u(0.05, 1.0), clearance_m=u(0, 0.05), gap_m=u(0, 0.05), edge_margin_m=u(0, 0.02))
    if kind_cls is NextTo:
        return NextTo(parent, side=rng.choice(list(Side)), distance_m=u(0, 0.2), tolerance_m=u(0, 0.05),
                      cross_position_ratio=rng.choice([None, u(-1, 1)]))
    if kind_cls is AlignWith:
        return AlignWith(parent, axis=rng.choice(list(Axis)), offset_m=u(-0.2, 0.2), tolerance_m=u(0, 0.05))
    if kind_cls is AtPosition:
        vals = [rng.choice([None, u(-1, 1)]) for _ in range(3)]
        if all(v is None for v in vals):
            vals[0] = u(-1, 1)
        return AtPosition(*vals)
    if kind_cls is PositionLimitsBox:
        def lim():
            a, b = sorted([u(-1, 1), u(-1, 1)])
            return (rng.choice([None, a]), rng.choice([None, b]))
        return PositionLimitsBox(lim(), lim(), lim())
    if kind_cls is NotNextTo:
        return NotNextTo(parent, side=rng.choice(list(Side)), tolerance_m=u(0, 0.05))
    if kind_cls is PositionLimitsCylindrical:
        r0 = rng.choice([None, u(0, 0.5)])
        r1 = rng.choice([None, u(0.5, 1.0)]) if r0 is not None else u(0.1, 1.0)
        return PositionLimitsCylindrical(u(-0.5, 0.5), u(-0.5, 0.5), r0, r1)
    raise AssertionError(kind_cls)


def _rows(kind, rng):
    """Random (axis, flag, row) of ``kind`` and random parent / subject boxes (world, metres)."""
    ints, rows, plo, phi, olo, ohi = [], [], [], [], [], []
    for _ in range(N):
        parent, subject = _box(rng, "parent"), _box(rng, "subject")
        rel = _random_relation(kind.relation, rng, parent)
        packed = kind.pack(rel, PackContext(_Compiler(rng), 0, 1))
        ints.append((packed.axis, packed.flag))
        rows.append(kind.columns.row(packed.values, 1.0))
        c = np.array([rng.uniform(-0.5, 0.5), rng.uniform(-0.5, 0.5), rng.uniform(0.0, 1.0)])
        pb = parent.get_bounding_box()
        plo.append(c + pb.min_point), phi.append(c + pb.max_point)
        sb = subject.get_bounding_box()
        shift = np.array([rng.uniform(-0.05, 0.05) for _ in range(3)])  # origin off the box centre
        olo.append(np.array(sb.min_point) + shift), ohi.append(np.array(sb.max_point) + shift)
    return (np.array(ints, np.int32), np.array(rows, np.float32), np.array(plo, np.float32), np.array(phi, np.float32),
            np.array(olo, np.float32), np.array(ohi, np.float32))


@wp.kernel
def _interval_check(kind: int, ints: wp.array(dtype=wp.vec2i), f: wp.array(dtype=ParamRow), plo: wp.array(dtype=wp.vec3),
                    phi: wp.array(dtype=wp.vec3), olo: wp.array(dtype=wp.vec3), ohi: wp.array(dtype=wp.vec3),
                    u: wp.array(dtype=wp.vec3), at_ratio: int, room: wp.array(dtype=RoomRow),
                    nonempty: wp.array(dtype=int), excess: wp.array(dtype=float)):
    i = wp.tid()
    lo, hi = relation_interval(kind, ints[i][0], ints[i][1], f[i], olo[i], ohi[i], plo[i], phi[i], at_ratio, room[i])
    x = wp.vec3(0.0)
    ok = int(1)
    for a in range(3):
        if lo[a] > hi[a]:
            ok = 0
        l = wp.max(lo[a], -10.0)
        h = wp.min(hi[a], 10.0)
        x[a] = l + u[i][a] * (h - l)
    nonempty[i] = ok
    ex, cause = relation_violation(kind, ints[i][0], ints[i][1], f[i], x, x + olo[i], x + ohi[i], plo[i], phi[i],
                                   1.0e-6)
    excess[i] = ex


def _launch_interval(kind, rng, at_ratio):
    ints, rows, plo, phi, olo, ohi = _rows(kind, rng)
    u = np.array([[rng.random() for _ in range(3)] for _ in range(N)], np.float32)
    nonempty = wp.zeros(N, dtype=int, device="cpu")
    excess = wp.zeros(N, dtype=float, device="cpu")
    wp.launch(_interval_check, N, device="cpu", inputs=[
        KIND_ID[kind.relation], wp.array(ints, dtype=wp.vec2i), wp.array(rows, dtype=ParamRow),
        wp.array(plo, dtype=wp.vec3), wp.array(phi, dtype=wp.vec3), wp.array(olo, dtype=wp.vec3),
        wp.array(ohi, dtype=wp.vec3), wp.array(u, dtype=wp.vec3), at_ratio, _rooms(rng), nonempty, excess])
    return nonempty.numpy().astype(bool), excess.numpy()


def _rooms(rng):
    """Random room for NextTo chains (it only shrinks the solver's target)."""
    return wp.array(np.array([[rng.choice([0.0, rng.uniform(0.0, 0.1)]) for _ in range(8)] for _ in range(N)],
                             np.float32), dtype=RoomRow)


@pytest.mark.parametrize("kind", [k for k in KINDS if k.role == KindRole.INTERVAL], ids=lambda k: k.name)
@pytest.mark.parametrize("at_ratio", [0, 1])
def test_every_origin_in_the_target_interval_passes_the_check(kind, at_ratio):
    ensure_warp()
    rng = random.Random(zlib.crc32(f"{kind.name}{at_ratio}".encode()))
    nonempty, excess = _launch_interval(kind, rng, at_ratio)
    assert nonempty.sum() >= 200, f"{kind.name}: too few non-empty intervals to test"
    bad = nonempty & (excess > VALIDATION_SLACK_M)
    assert not bad.any(), f"{kind.name}: {int(bad.sum())} origins inside the interval fail the check, " \
                          f"worst excess {float(excess[bad].max()):.3g} m"


def test_a_point_outside_the_interval_fails_the_check():
    """The check is not vacuous: pushing the origin 5 cm beyond the interval fails it (On, NextTo, limits)."""
    ensure_warp()
    rng = random.Random(5)
    for kind_cls in (On, NextTo, PositionLimitsBox):
        kind = KINDS[KIND_ID[kind_cls]]
        ints, rows, plo, phi, olo, ohi = _rows(kind, rng)
        u = np.full((N, 3), 2.0, np.float32)  # x = lo + 2 (hi - lo) lies beyond hi on every finite axis
        nonempty = wp.zeros(N, dtype=int, device="cpu")
        excess = wp.zeros(N, dtype=float, device="cpu")
        wp.launch(_interval_check, N, device="cpu", inputs=[
            KIND_ID[kind_cls], wp.array(ints, dtype=wp.vec2i), wp.array(rows, dtype=ParamRow),
            wp.array(plo, dtype=wp.vec3), wp.array(phi, dtype=wp.vec3), wp.array(olo, dtype=wp.vec3),
            wp.array(ohi, dtype=wp.vec3), wp.array(u, dtype=wp.vec3), 0, _rooms(rng), nonempty, excess])
        assert (excess.numpy() > VALIDATION_SLACK_M).mean() > 0.5, kind.name


@wp.kernel
def _penalty_check(kind: int, ints: wp.array(dtype=wp.vec2i), f: wp.array(dtype=ParamRow), plo: wp.array(dtype=wp.vec3),
                   phi: wp.array(dtype=wp.vec3), olo: wp.array(dtype=wp.vec3), ohi: wp.array(dtype=wp.vec3),
                   x: wp.array(dtype=wp.vec3), depth: wp.array(dtype=float), excess: wp.array(dtype=float)):
    i = wp.tid()
    from_penalty = float(0.0)
    p = x[i]
    for j in range(wp.static(len(_PENALTY_IDS))):
        if kind == wp.static(_PENALTY_IDS[j]):
            d, allowance, grad = wp.static(_PENALTY_FUNCS[j])(ints[i][0], ints[i][1], f[i], p, p + olo[i], p + ohi[i],
                                                              plo[i], phi[i])
            from_penalty = d
    depth[i] = from_penalty
    ex, cause = relation_violation(kind, ints[i][0], ints[i][1], f[i], p, p + olo[i], p + ohi[i], plo[i], phi[i],
                                   1.0e-6)
    excess[i] = ex


track_kind_sources(__name__)  # this module's test kernels call the generated dispatch

_PENALTY_IDS = [i for i, k in enumerate(KINDS) if k.role == KindRole.PENALTY]
_PENALTY_FUNCS = [KINDS[i].penalty for i in _PENALTY_IDS]


@pytest.mark.parametrize("kind", [k for k in KINDS if k.role == KindRole.PENALTY], ids=lambda k: k.name)
def test_every_pose_the_solver_accepts_passes_the_check(kind):
    ensure_warp()
    rng = random.Random(zlib.crc32(kind.name.encode()))
    ints, rows, plo, phi, olo, ohi = _rows(kind, rng)
    x = np.array([[rng.uniform(-1.5, 1.5), rng.uniform(-1.5, 1.5), rng.uniform(0, 1)] for _ in range(N)], np.float32)
    depth = wp.zeros(N, dtype=float, device="cpu")
    excess = wp.zeros(N, dtype=float, device="cpu")
    wp.launch(_penalty_check, N, device="cpu", inputs=[
        KIND_ID[kind.relation], wp.array(ints, dtype=wp.vec2i), wp.array(rows, dtype=ParamRow),
        wp.array(plo, dtype=wp.vec3), wp.array(phi, dtype=wp.vec3), wp.array(olo, dtype=wp.vec3),
        wp.array(ohi, dtype=wp.vec3), wp.array(x, dtype=wp.vec3), depth, excess])
    d, e = depth.numpy(), excess.numpy()
    accepted = d <= 0.0
    assert 0.1 < accepted.mean() < 0.95, f"{kind.name}: random poses should land on both sides"
    assert not (accepted & (e > VALIDATION_SLACK_M)).any(), f"{kind.name}: a pose the solver accepts fails the check"
    assert (e[~accepted] > -BIG).all()


def test_kernel_modules_are_keyed_on_the_kinds_sources():
    """Warp resolves the dispatch's functions after its cache lookup; every kernel module using the dispatch
    carries a digest of the kinds' and kernels' sources in its options (part of warp's cache key)."""
    import importlib

    for name in ("solve_init", "solve_iterate", "solve_finalize", "solve_prepare", "validate"):
        module = importlib.import_module(f"isaaclab_arena.relations.kernels.{name}")
        assert wp.get_module_options(module)["arena_kind_sources"] == KIND_SOURCES_DIGEST
    assert len(KIND_SOURCES_DIGEST) == 16


# -- the feasibility pre-check reads each kind's own constraints -----------------------------------------------------

def test_every_kind_says_what_the_feasibility_pre_check_gets_from_it():
    """``feasibility`` has no default: a kind that leaves it out cannot be built, so none is skipped silently; a
    kind with constraints says what would help when they cannot hold."""
    import dataclasses

    from isaaclab_arena.relations.kinds.kind import RelationKind

    on = KINDS[KIND_ID[On]]
    fields = {f.name: getattr(on, f.name) for f in dataclasses.fields(RelationKind)}
    fields.pop("feasibility")
    with pytest.raises(TypeError, match="feasibility"):
        RelationKind(**fields)
    for kind in KINDS:
        assert (kind.feasibility is None) == (kind.feasibility_help is None), kind.name
    assert {k.name for k in KINDS if k.feasibility is None} == {"not_next_to", "face_to"}


def test_the_feasibility_pre_check_takes_each_relations_constraints_from_its_kind(monkeypatch):
    """The pre-check knows no kind itself: a kind whose constraints are replaced changes its verdict, and the
    refusal quotes the kind's own help text."""
    import dataclasses

    import isaaclab_arena.relations.kinds as kinds
    from isaaclab_arena.relations.compiler.difference_constraints import H, L
    from isaaclab_arena.relations.compiler.feasibility import find_infeasibilities
    from isaaclab_arena.relations.object_placer import ObjectPlacer
    from isaaclab_arena.relations.relations import IsAnchor, On
    from isaaclab_arena.utils.pose import Pose

    table = Object("table", bounding_box=AxisAlignedBoundingBox.from_size((1.0, 1.0, 0.75)),
                   initial_pose=Pose((0.0, 0.0, 0.375))).add_relation(IsAnchor())
    box = Object("box", bounding_box=AxisAlignedBoundingBox.from_size((0.1, 0.1, 0.1))).add_relation(On(table))
    assets = [table, box]
    placer = ObjectPlacer(ObjectPlacerParams(placement_seed=3))
    problem = placer.compile(assets, 1)
    assert find_infeasibilities(problem, assets, placer.params) == []
    calls = []

    def too_far(rel, e):  # a throw-away On: the box 0.6 m inside each edge of its 1 m table (cannot fit)
        calls.append((type(rel).__name__, e.axis))
        if e.axis == 0:
            e.at_least(e.p(L), e.s(L), 0.6)
            e.at_least(e.s(H), e.p(H), 0.6)

    on = kinds.KINDS[kinds.KIND_ID[On]]
    replaced = dataclasses.replace(on, feasibility=too_far, feasibility_help="a throw-away help text")
    monkeypatch.setattr(kinds, "KINDS", tuple(replaced if k is on else k for k in kinds.KINDS))
    found = find_infeasibilities(problem, assets, placer.params)
    assert ("On", 0) in calls  # the pre-check stops at the first axis it proves impossible
    assert len(found) == 1 and "a throw-away help text" in found[0].message, found


def test_whether_an_object_turns_has_one_definition():
    """``object_yaw.yaw_mode`` is the one answer to "does the solver turn this object?": the compile stage's yaw
    column, the chain rooms, the restrictions' fixed rotation and the feasibility pre-check's turning range all
    follow it (and no module spells the rule out again)."""
    import glob
    import os
    import re

    from isaaclab_arena import ARENA_ROOT
    from isaaclab_arena.relations.compiler.chain_room import turns
    from isaaclab_arena.relations.compiler.feasibility import _turning
    from isaaclab_arena.relations.kernels.tables import YawMode
    from isaaclab_arena.relations.compiler.object_yaw import yaw_mode
    from isaaclab_arena.relations.compiler.placement_restrictions import _fixed_rotation
    from isaaclab_arena.relations.relations import ClutterOn, FaceTo, On

    def box(name):
        return Object(name, bounding_box=AxisAlignedBoundingBox.from_size((0.1, 0.1, 0.1)))

    table = box("table")
    cases = {
        "fixed": (box("a").add_relation(On(table)), False, YawMode.FIXED),
        "random_init": (box("b").add_relation(On(table)), True, YawMode.RANDOM),
        "clutter_random": (box("c").add_relation(ClutterOn(table, random_yaw=True)), False, YawMode.RANDOM),
        "clutter_fixed_despite_init": (box("d").add_relation(ClutterOn(table, random_yaw=False)), True, YawMode.FIXED),
        "face_to": (box("e").add_relation(On(table)).add_relation(FaceTo(table)), False, YawMode.FACE_TO),
    }
    for name, (asset, init, want) in cases.items():
        assert yaw_mode(asset, init) == want, name
        assert turns(asset, init) == (want != YawMode.FIXED), name
        assert (_fixed_rotation(asset, init) is None) == (want != YawMode.FIXED), name
        assert (_turning(asset, init).yaw_hi > 0) == (want != YawMode.FIXED), name
    rule = re.compile(r"random_yaw_init and not clutter|random_yaw and not clutter")
    spelled = [p for p in glob.glob(os.path.join(ARENA_ROOT, "isaaclab_arena", "**", "*.py"), recursive=True)
               if rule.search(open(p).read()) and not p.endswith("object_yaw.py")]
    assert spelled == []

"""The plain scenes' kernels (``kernels/solve_init.py``, ``kernels/solve_finalize.py``, ``tables.plain_scene``; issue
21): scenes of boxes whose every object is drawn in its static interval, with nothing to turn, shift, raise or
penalise, solve with init and finalize kernels compiled without those steps. Shown here: which scenes are plain (of the
benchmark scenes, the ones with a movable parent, a heading, a turn, a ClutterOn release or a penalty are not; a
penalty relation alone makes a scene not plain), that the plain kernels give the box kernels' solves bit for bit
(positions, loss, every relation's excess, verdicts), and that the gate matters: run on a scene with a penalty
relation, the plain kernels' layouts differ and break it."""

from __future__ import annotations

import pytest
import torch

from isaaclab_arena.benchmarks.scenes import SCENE_PLACER_PARAMS, SCENES, cuboid, on_table, table
from isaaclab_arena.relations.kernels import launch
from isaaclab_arena.relations.kernels.solve_finalize import finalize_kernel_plain
from isaaclab_arena.relations.kernels.solve_init import init_kernel, init_kernel_plain
from isaaclab_arena.relations.object_placer import ObjectPlacer
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams
from isaaclab_arena.relations.relations import IsAnchor, On, PositionLimitsCylindrical
from isaaclab_arena.utils.pose import Pose

FIELDS = ("positions", "rotations", "loss", "iterations", "relation_excess", "relation_cause", "overlap_pair",
          "overlap_depth", "clearance_pair", "clearance_depth", "builtin_verdicts", "builtin_fail_bits")

PLAIN = {"boxes3", "boxes10", "crowded14"}


def _placer(name: str = "", seed: int = 5) -> ObjectPlacer:
    return ObjectPlacer(ObjectPlacerParams(placement_seed=seed, solver_params=RelationSolverParams(verbose=False),
                                           **SCENE_PLACER_PARAMS.get(name, {})), extensions=[])


def _penalised_boxes() -> list:
    """Four boxes On the table, the first also within 0.1-0.3 m of a point (a PENALTY relation with no parent: every
    object keeps its static interval)."""
    t = table()
    out = [t, on_table(t, "ring", (0.1, 0.1, 0.1),
                       PositionLimitsCylindrical(center_x=0.0, center_y=0.0, radius_min=0.1, radius_max=0.3))]
    for k in range(3):
        box = cuboid(f"box{k}", (0.12, 0.12, 0.12))
        box.add_relation(On(t))
        out.append(box)
    return out


def _dense_boxes() -> list:
    """Twelve 8 cm boxes On a 0.5 x 0.4 m table (38 % of its top): most initial draws overlap, so most candidates go
    through the optimisation loop, which reads the intervals the plain init kernel records for them."""
    t = cuboid("small_table", (0.5, 0.4, 0.75), Pose((0.0, 0.0, 0.375)))
    t.add_relation(IsAnchor())
    out = [t]
    for k in range(12):
        box = cuboid(f"box{k}", (0.08, 0.08, 0.08))
        box.add_relation(On(t))
        out.append(box)
    return out


def _solve(name_or_assets, plain: int | None, b: int = 600):
    """The placed result of ``b`` candidates (8 envs) with the tables' plain flag as compiled (None) or forced."""
    name = name_or_assets if isinstance(name_or_assets, str) else ""
    assets = SCENES[name]() if name else name_or_assets
    placer = _placer(name)
    problem = placer.compile(assets, 8)
    if plain is not None:
        problem.tables.plain = plain
    env, draw = torch.arange(b) % 8, torch.arange(b) // 8
    return problem, placer.place_problem(problem, env, draw)


@pytest.mark.parametrize("name", sorted(SCENES))
def test_plain_scenes_are_those_with_nothing_to_turn_shift_raise_or_penalise(name):
    problem = _placer(name).compile(SCENES[name](), 2)
    assert bool(problem.tables.plain) == (name in PLAIN)
    kernels = launch.fresh(problem.tables)
    assert (kernels[0] is init_kernel_plain and kernels[2] is finalize_kernel_plain) == (name in PLAIN)


def test_a_penalty_relation_makes_a_scene_not_plain():
    problem = _placer().compile(_penalised_boxes(), 2)
    assert problem.tables.plain == 0 and launch.fresh(problem.tables)[0] is init_kernel


@pytest.mark.parametrize("name", sorted(PLAIN) + ["dense"])
def test_the_plain_kernels_give_the_box_kernels_solves_bit_for_bit(name):
    scene = _dense_boxes() if name == "dense" else name
    problem, plain = _solve(scene, None)
    assert problem.tables.plain == 1
    _, boxed = _solve(_dense_boxes() if name == "dense" else name, 0)
    if name == "dense":
        assert float((plain.solved.iterations > 0).float().mean()) > 0.5
    for f in FIELDS:
        x, y = getattr(plain.solved, f, None), getattr(boxed.solved, f, None)
        if x is None and y is None:
            continue
        assert torch.equal(x, y), f
    valid = float(plain.solved.builtin_verdicts.all(dim=1).float().mean())
    assert valid > (0.3 if name == "dense" else 0.9)


def test_the_plain_kernels_on_a_penalised_scene_would_lose_the_penalty():
    _, right = _solve(_penalised_boxes(), None)
    _, wrong = _solve(_penalised_boxes(), 1)  # the gate overridden: the plain kernel ignores the penalty term
    assert not torch.equal(right.solved.positions, wrong.solved.positions)
    ring = right.solved.positions[:, 0, :2].norm(dim=1)
    assert bool(((ring >= 0.1 - 1e-4) & (ring <= 0.3 + 1e-4)).float().mean() > 0.99)
    wrong_ring = wrong.solved.positions[:, 0, :2].norm(dim=1)
    assert bool(((wrong_ring < 0.1 - 1e-4) | (wrong_ring > 0.3 + 1e-4)).any())

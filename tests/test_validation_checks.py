"""The check registry, custom validators, enabled/required checks, the two-pass runner and
the rejection summary."""

from __future__ import annotations

from typing import ClassVar

import pytest
import torch

from isaaclab_arena.relations.object_placer import ObjectPlacer
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.relations.relations import NextTo, On, Side
from isaaclab_arena.benchmarks.scenes import cuboid, mug_bowl_scene, on_table, table
from isaaclab_arena.relations.diagnostics.placement_diagnostics import batch_diagnostics, rejection_records
from isaaclab_arena.relations.validation.pre_physics import PrePhysicsPlacementValidator
from isaaclab_arena.relations.validation.registry import (
    register_validator,
    builtin_checks,
    registered_validators,
    unregister_validator,
)
from isaaclab_arena.relations.validation.types import PlacementCheck, PlacementValidatorReport, ValidationCost

BUILTIN = ["no_overlap", "clearance", "on_relation", "clutter_on_relation", "next_to", "align_with", "at_position",
           "position_limits", "not_next_to", "face_to"]


@pytest.fixture
def max_height_validator():
    # the documented custom-validator example
    @register_validator
    class MaxOriginHeightValidator(PrePhysicsPlacementValidator):
        check = "max_origin_height"

        def validate_batch(self, batch, collision_objects):
            verdicts = []
            for candidate in batch.candidates:
                below_limit = all(
                    position[2] <= 1.5 for position in candidate.positions.values()
                )
                verdicts.append(below_limit)
            return verdicts

    yield MaxOriginHeightValidator
    unregister_validator("max_origin_height")


def test_builtin_checks_registered_and_ik_applies_only_with_an_embodiment():
    from isaaclab_arena.relations.extensions import extension_validators

    placer = ObjectPlacer(ObjectPlacerParams())
    names = set(builtin_checks()) | set(registered_validators()) | set(extension_validators(placer.extensions))
    assert all(c in names for c in BUILTIN) and builtin_checks() == tuple(BUILTIN)
    assert PlacementCheck.IK_REACHABLE.value in names  # the default set's (builtin IK); used with an embodiment only
    assert PlacementCheck.IK_REACHABLE.value not in placer.runner.checks
    assert [c.value for c in PlacementCheck][:len(BUILTIN)] == BUILTIN


def _tower_scene():
    t = table()
    low = on_table(t, "low", (0.1, 0.1, 0.1))
    tall = cuboid("tall", (0.1, 0.1, 2.0))  # origin at 0.75 + 0.01 + 1.0 = 1.76 m
    tall.add_relation(On(t))
    return [t, low, tall]


def test_custom_validator_from_seed_003_runs_by_default_and_rejects(max_height_validator):
    res = ObjectPlacer(ObjectPlacerParams(placement_seed=0)).place(_tower_scene(), num_envs=2)
    assert all(not r.success and r.check_results["max_origin_height"] is False for r in res)
    assert all(r.check_results["no_overlap"] for r in res)
    ok = ObjectPlacer(ObjectPlacerParams(placement_seed=0)).place(mug_bowl_scene(), num_envs=2)
    assert all(r.success and r.check_results["max_origin_height"] for r in ok)


def test_explicit_enabled_checks_must_name_the_custom_check(max_height_validator):
    pl = ObjectPlacer(ObjectPlacerParams(placement_seed=0, enabled_checks=["no_overlap", "on_relation"]))
    res = pl.place(_tower_scene(), num_envs=1)
    assert res[0].success and set(res[0].check_results) == {"no_overlap", "on_relation"}


def test_optional_check_runs_and_reports_without_rejecting(max_height_validator):
    params = ObjectPlacerParams(placement_seed=0, required_checks=[c for c in BUILTIN])
    batch = ObjectPlacer(params).place_batch(_tower_scene(), [0, 0, 0], [0, 1, 2], num_envs=1)
    assert batch.passed.all()
    assert not batch.check_results["max_origin_height"].any()
    assert batch.optional_failures.tolist() == [1, 1, 1] and batch.required_failures.tolist() == [0, 0, 0]


def test_required_checks_outside_enabled_is_an_error():
    with pytest.raises(ValueError, match="required_checks"):
        ObjectPlacerParams(enabled_checks=["no_overlap"], required_checks=["on_relation"])


def test_expensive_check_runs_only_on_candidates_passing_required_inexpensive_checks():
    seen = []

    @register_validator
    class CountingExpensive(PrePhysicsPlacementValidator):
        check = "counting_expensive"
        cost: ClassVar = ValidationCost.EXPENSIVE

        def validate_batch(self, batch, collision_objects):
            seen.append(len(batch))
            assert any(o.name == "mug" for o in collision_objects)
            return torch.ones(len(batch), dtype=torch.bool)

    try:
        pl = ObjectPlacer(ObjectPlacerParams(placement_seed=0))
        ok = torch.tensor([0.0, 0.0, 0.81])
        pos = torch.stack([torch.stack([ok, torch.tensor([0.17, 0.0, 0.79])]),  # valid
                           torch.stack([ok, torch.tensor([-0.3, 0.0, 0.79])])])  # next_to fails
        batch = pl.validate_poses(mug_bowl_scene(), pos)
        assert seen == [1]
        assert batch.check_results["counting_expensive"].tolist() == [True, False]
        assert batch.validation.counts()["counting_expensive"] == (1, 1)
        assert batch.passed.tolist() == [True, False]
    finally:
        unregister_validator("counting_expensive")


def test_validator_returning_wrong_count_is_a_clear_error():
    @register_validator
    class Broken(PrePhysicsPlacementValidator):
        check = "broken_count"

        def validate_batch(self, batch, collision_objects):
            return [True]

    try:
        with pytest.raises(ValueError, match="'broken_count' returned 1 verdicts for a batch of 4"):
            ObjectPlacer(ObjectPlacerParams(max_placement_attempts=2)).place(mug_bowl_scene(), num_envs=2)
    finally:
        unregister_validator("broken_count")


def test_register_validator_rejects_non_validators():
    with pytest.raises(TypeError):
        register_validator(object)

    class NoName(PrePhysicsPlacementValidator):
        pass

    with pytest.raises(ValueError, match="non-empty class attribute 'check'"):
        register_validator(NoName)


def test_summary_lines_and_records_name_cause_and_amount():
    t = table()
    box = on_table(t, "box", (0.1, 0.1, 0.1))
    plate = on_table(t, "plate", (0.1, 0.1, 0.02))
    plate.add_relation(NextTo(box, side=Side.POSITIVE_X, distance_m=0.05))
    pl = ObjectPlacer(ObjectPlacerParams(placement_seed=0))
    pos = torch.tensor([[[0.0, 0.0, 0.81], [-0.25, 0.0, 0.77]], [[0.0, 0.0, 0.81], [0.08, 0.0, 0.77]]])
    batch = pl.validate_poses([t, box, plate], pos)
    lines = batch_diagnostics(batch).console_lines()
    assert lines[0].startswith("[placement] Validated 2 candidate layout(s); passed per check: no_overlap=1/2, "
                               "clearance=1/2, on_relation=2/2")
    assert "next_to=0/2" in lines[0]
    recs = rejection_records(batch)
    wrong = [r for r in recs if r.check == "next_to" and r.candidate == 0][0]
    assert wrong.cause == "'plate' next_to(box, positive_x): on the wrong side"
    assert wrong.violation == "by 0.290 m"
    assert any(r.check == "no_overlap" and r.cause == "'box' overlaps 'plate'" and r.candidate == 1 for r in recs)
    assert "  next_to: 'plate' next_to(box, positive_x): on the wrong side: 1 rejected (e.g. by 0.290 m, env 0)" in lines


def test_validator_report_type():
    rep = PlacementValidatorReport(check="x", passed=False, reason="too high", settings={"max": 1.5})
    assert rep.to_dict() == {"check": "x", "passed": False, "reason": "too high", "settings": {"max": 1.5}}


# ------------------------------------------------------------------ validators that name their causes
def _outcome_placer(validate):
    from isaaclab_arena.relations.object_placer import ObjectPlacer
    from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
    from isaaclab_arena.relations.validation.pre_physics import PrePhysicsPlacementValidator
    from isaaclab_arena.relations.validation.registry import register_validator

    @register_validator
    class LeftHalfOnly(PrePhysicsPlacementValidator):
        check = "left_half_only"

        def validate_batch(self, batch, collision_objects):
            return validate(batch)

    params = ObjectPlacerParams(placement_seed=5, enabled_checks=["no_overlap", "on_relation", "left_half_only"],
                                required_checks=["no_overlap", "on_relation", "left_half_only"])
    return ObjectPlacer(params)


def test_a_validator_returning_a_check_outcome_names_its_causes_in_the_diagnostics():
    from isaaclab_arena.relations.diagnostics.placement_diagnostics import FailureTally, rejection_causes, rejection_records
    from isaaclab_arena.benchmarks.scenes import SCENES
    from isaaclab_arena.relations.validation.registry import unregister_validator
    from isaaclab_arena.relations.validation.types import CheckOutcome

    def validate(batch):
        x = batch.positions[:, 0, 0]  # the first object's x, env-local metres
        return CheckOutcome(x <= 0.0, ("'first' right of x = 0", "never used"),
                            torch.zeros_like(x, dtype=torch.long), x.clamp(min=0.0))

    placer = _outcome_placer(validate)
    try:
        env = torch.arange(64)
        vb = placer.place_batch(SCENES["mug_bowl"](), env, env * 0, num_envs=64)
    finally:
        unregister_validator("left_half_only")
    x = vb.positions[:, 0, 0].double()
    bad = ~vb.check_results["left_half_only"]
    assert torch.equal(bad, x > 0.0) and 0 < int(bad.sum()) < 64
    cause = [c for c in rejection_causes(vb) if c.check == "left_half_only"]
    assert [(c.cause, c.count) for c in cause] == [("'first' right of x = 0", int(bad.sum()))]
    assert cause[0].example_violation == pytest.approx(float(x[bad].max()), abs=1e-6)
    recs = [r for r in rejection_records(vb) if r.check == "left_half_only"]
    assert len(recs) == int(bad.sum()) and {r.cause for r in recs} == {"'first' right of x = 0"}
    sub = vb.validation.select(bad.nonzero().flatten())  # selecting candidates keeps their causes
    assert bool((sub.extra_causes["left_half_only"][1] == 0).all())
    tally = FailureTally()
    tally.add(vb)
    misses, _ = tally.explain(range(64))
    assert [m.cause for m in misses if m.check == "left_half_only"] == ["'first' right of x = 0"]


@pytest.mark.parametrize("bad_outcome, message", [
    (lambda x: dict(cause_index=torch.zeros(3, dtype=torch.long)), "returned causes for 3"),
    (lambda x: dict(cause_index=torch.full_like(x, 4, dtype=torch.long)), "returned cause index 4 but only 1 cause texts"),
])
def test_a_check_outcome_of_the_wrong_shape_is_refused_naming_the_validator(bad_outcome, message):
    from isaaclab_arena.benchmarks.scenes import SCENES
    from isaaclab_arena.relations.validation.registry import unregister_validator
    from isaaclab_arena.relations.validation.types import CheckOutcome

    def validate(batch):
        x = batch.positions[:, 0, 0]
        return CheckOutcome(x <= 0.0, ("right",), **bad_outcome(x))

    placer = _outcome_placer(validate)
    try:
        env = torch.arange(8)
        with pytest.raises(ValueError, match=f"validator 'left_half_only' {message}"):
            placer.place_batch(SCENES["mug_bowl"](), env, env * 0, num_envs=8)
    finally:
        unregister_validator("left_half_only")

"""Optional backends plug in through ``relations.extensions.PlacementExtension``, chosen by the caller (issue 22):
``ObjectPlacer(params, extensions=[...])``; None gives the default set named in one place
(``isaaclab_arena.placement_extensions``). No import registers a backend, and what one placer was built with
never changes another placer's checks."""

from __future__ import annotations

import os
from typing import ClassVar

import pytest
import torch

from _helpers import fresh_interpreter_last_line
from isaaclab_arena import ARENA_ROOT
from isaaclab_arena.benchmarks.scenes import SCENES
from isaaclab_arena.env_spec import ArenaEnvGraphSpec
from isaaclab_arena.relations.compiler.placement_restrictions import PlacementConfigError
from isaaclab_arena.relations.extensions import PlacementExtension
from isaaclab_arena.relations.object_placer import ObjectPlacer
from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
from isaaclab_arena.relations.relation_solver_params import RelationSolverParams
from isaaclab_arena.relations.validation.pre_physics import PrePhysicsPlacementValidator

SPEC = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "robot", "franka_pick_and_place.yaml")


class LeftHalfOnly(PrePhysicsPlacementValidator):
    """A caller's own check: every placed object's origin at x < 0 (env-local metres)."""

    check: ClassVar[str] = "left_half_only"

    def validate_batch(self, batch, collision_objects):
        return (batch.positions[..., 0] < 0.0).all(dim=-1)


def params(**kw) -> ObjectPlacerParams:
    return ObjectPlacerParams(placement_seed=3, solver_params=RelationSolverParams(verbose=False), **kw)


def test_the_default_set_is_named_in_one_place():
    from isaaclab_arena.placement_extensions import default_extensions

    assert [e.name for e in ObjectPlacer(params()).extensions] == ["reachability", "curobo", "debug_view"]
    assert ObjectPlacer(params()).extensions == default_extensions()
    assert ObjectPlacer(params(), extensions=[]).extensions == ()


def test_a_callers_extension_check_runs_and_rejects_only_in_its_own_placer():
    scene = SCENES["mug_bowl"]()
    mine = ObjectPlacer(params(), extensions=[PlacementExtension("left", validators=(LeftHalfOnly,))])
    env = torch.arange(64)
    vb = mine.place_batch(scene, env, torch.zeros_like(env), num_envs=64)
    assert "left_half_only" in mine.runner.checks and "left_half_only" in mine.runner.required
    left = (vb.positions[..., 0] < 0.0).all(dim=-1)
    assert 0 < int(left.sum()) < 64  # both verdicts occur
    assert torch.equal(vb.check_results["left_half_only"], left)
    assert not bool(vb.passed[~left].any())  # the check rejects
    other = ObjectPlacer(params())  # built in the same process, without that extension
    assert "left_half_only" not in other.runner.checks
    with pytest.raises(ValueError, match="unknown check 'left_half_only'"):
        _ = ObjectPlacer(params(enabled_checks=["no_overlap", "left_half_only"])).runner


@pytest.mark.slow
def test_importing_a_backend_registers_nothing():
    code = ("import isaaclab_arena.reachability.ik_validator, isaaclab_arena_curobo\n"
            "from isaaclab_arena.relations.validation.registry import registered_validators\n"
            "from isaaclab_arena.reachability.backends import registered_ik_backends\n"
            "print(sorted(registered_validators()), registered_ik_backends())\n")
    assert fresh_interpreter_last_line(code) == "[] ['builtin']"


def test_setup_runs_for_each_placer_built_with_the_extension():
    calls = []
    ext = PlacementExtension("counting", setup=lambda: calls.append(1))
    ObjectPlacer(params(), extensions=[ext])
    ObjectPlacer(params(), extensions=[ext])
    ObjectPlacer(params(), extensions=[])
    assert calls == [1, 1]


def test_a_robot_scene_without_the_reachability_extension_is_refused_in_one_line():
    arena_env = ArenaEnvGraphSpec.from_yaml(SPEC).to_arena_env()
    assets = arena_env.get_placement_assets()
    with pytest.raises(PlacementConfigError, match="reachability.extension.REACHABILITY") as err:
        ObjectPlacer(arena_env.placer_params, extensions=[]).compile(assets, 1)
    assert "\n" not in str(err.value)
    # with it (the default set), the same scene compiles and runs ik_reachable
    placer = ObjectPlacer(arena_env.placer_params)
    placer.compile(assets, 1)
    assert "ik_reachable" in placer.runner.checks


def test_the_debug_flag_without_a_view_extension_says_what_to_pass(tmp_path):
    with pytest.raises(PlacementConfigError, match="debug.extension.DEBUG_VIEW"):
        ObjectPlacer(params(debug_visualize_output_path=str(tmp_path / "x.rrd")), extensions=[])
    assert not (tmp_path / "x.rrd").exists()


@pytest.mark.parametrize("bad, error, words", [
    (lambda: PlacementExtension(""), ValueError, "non-empty string"),
    (lambda: PlacementExtension("x", validators=(int,)), TypeError, "PrePhysicsPlacementValidator subclasses"),
    (lambda: PlacementExtension("x", open_view=3), TypeError, "open_view must be callable"),
    (lambda: PlacementExtension("x", setup="go"), TypeError, "setup must be callable"),
    (lambda: ObjectPlacer(params(), extensions=PlacementExtension("x")), TypeError, "a list of PlacementExtension"),
    (lambda: ObjectPlacer(params(), extensions=["reachability"]), TypeError, "hold PlacementExtension values"),
    (lambda: ObjectPlacer(params(), extensions=[PlacementExtension("a", validators=(LeftHalfOnly,)),
                                                PlacementExtension("b", validators=(LeftHalfOnly,))]),
     ValueError, "'left_half_only' is added by both extension 'a' and 'b'"),
])
def test_bad_extensions_are_refused_with_what_is_accepted(bad, error, words):
    with pytest.raises(error, match=words):
        bad()


def test_a_pool_refuses_extensions_beside_its_own_placer():
    from isaaclab_arena.relations.pooled_object_placer import PooledObjectPlacer

    with pytest.raises(ValueError, match="pass extensions to the placer you give"):
        PooledObjectPlacer(SCENES["mug_bowl"](), params(), placer=ObjectPlacer(params()), extensions=[])

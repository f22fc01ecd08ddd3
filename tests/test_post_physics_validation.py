"""Post-physics checks on settled batches, the recorder's Hydra configuration and the rejection summary."""

from __future__ import annotations

import math
import textwrap

import pytest
import torch

from isaaclab_arena.offline_placement.post_physics_checks import (
    ArticulationLinkShiftValidator,
    PhysicsSettledValidator,
    PoseShiftValidator,
    SupportContainmentValidator,
)
from isaaclab_arena.offline_placement.post_physics_validation import (
    PostPhysicsConfigError,
    not_settled_block,
    run_post_physics_validators,
)
from isaaclab_arena.offline_placement.recording_config import (
    DEFAULT_SETTLE_NUM_STEPS,
    PlacementRecordingCfg,
    RecordingConfigError,
    SettleCfg,
    build_post_physics_validators,
    register_recording_config,
)
from isaaclab_arena.offline_placement.rejection_summary import RejectionSummary
from isaaclab_arena.offline_placement.settled_batch import SettledBatch, SettledBatchError, SupportInfo

E = 4  # envs (rows)
IDENT = [0.0, 0.0, 0.0, 1.0]
TABLE_TOP = 0.75
CUBE_HALF = 0.025


def _yaw(deg):
    h = math.radians(deg) / 2
    return [0.0, 0.0, math.sin(h), math.cos(h)]


def _tilt_x(deg):
    h = math.radians(deg) / 2
    return [math.sin(h), 0.0, 0.0, math.cos(h)]


def _rows(xyz, q=IDENT):
    return torch.tensor([[*xyz, *q]] * E, dtype=torch.float32)


def _good_state():
    """A settled table scene: mug (On), two clutter cubes, a robot, a two-link cabinet; everything at rest."""
    init = {"mug": _rows((0.1, 0.2, TABLE_TOP + 0.05)),
            "cube_a": _rows((0.0, 0.0, TABLE_TOP + CUBE_HALF + 0.01)),
            "cube_b": _rows((0.05, 0.0, TABLE_TOP + CUBE_HALF + 0.07)),
            "robot": _rows((-0.6, 0.0, 0.0)),
            "cabinet": _rows((0.0, 0.8, 0.0))}
    final = {k: v.clone() for k, v in init.items()}
    # Clutter dropped 1 cm / 6 cm and turned: intentional, pose_shift ignores it.
    final["cube_a"][:, 2] = TABLE_TOP + CUBE_HALF
    final["cube_a"][:, 3:] = torch.tensor(_yaw(30.0))
    final["cube_b"][:, 0] = 0.2
    final["cube_b"][:, 2] = TABLE_TOP + CUBE_HALF
    links0 = torch.tensor([[[0.0, 0.8, 0.0, *IDENT], [0.0, 0.8, 0.5, *IDENT]]] * E)
    return init, final, links0


def _batch(init=None, final=None, lin=None, ang=None, links0=None, links1=None, env_ids=(0, 1, 2, 3), **kw):
    i0, f0, l0 = _good_state()
    init = init or i0
    final = final or f0
    links0 = l0 if links0 is None else links0
    links1 = links0.clone() if links1 is None else links1
    zeros3 = {k: torch.zeros(E, 3) for k in final}
    args = dict(
        env_ids=list(env_ids), initial_root_poses=init, final_root_poses=final,
        final_root_lin_vel=lin or zeros3, final_root_ang_vel=ang or {k: v.clone() for k, v in zeros3.items()},
        initial_link_poses={"cabinet": links0, "robot": torch.tensor([[[-0.6, 0.0, 0.0, *IDENT]]] * E)},
        final_link_poses={"cabinet": links1, "robot": torch.tensor([[[-0.6, 0.0, 0.3, *IDENT]]] * E)},
        link_names={"cabinet": ["body", "door"]},
        robot_keys=("robot",), clutter_keys=("cube_a", "cube_b"),
        clutter_supports={"cube_a": "table", "cube_b": "table"},
        clutter_local_bounds={k: (torch.full((3,), -CUBE_HALF), torch.full((3,), CUBE_HALF)) for k in ("cube_a", "cube_b")},
        supports={"table": SupportInfo(local_min=[-0.5, -0.4, 0.0], local_max=[0.5, 0.4, TABLE_TOP], poses=[0.0, 0.0, 0.0, *IDENT])},
        num_steps=120, decimation=2, physics_dt_s=0.005)
    args.update(kw)
    return SettledBatch(**args)


def _verdicts(reports):
    return [r.passed for r in reports]


# -- each check passes a good batch and rejects one built to violate it ---------------------------------

def test_good_batch_passes_every_check():
    batch = _batch()
    results = run_post_physics_validators(build_post_physics_validators(SettleCfg().validators), batch)
    assert results.accepted.tolist() == [True] * E
    for check in ("physics_settled", "pose_shift", "articulation_link_shift", "support_containment"):
        assert _verdicts(results.reports[check]) == [True] * E, check
    block = results.post_physics_block(0)
    assert block["passed"] is True
    assert block["checks"]["pose_shift"]["settings"] == {"enabled": True, "max_translation_m": 0.002,
                                                         "max_rotation_deg": 2.0}
    assert batch.sampling_info() == {"num_steps": 120, "decimation": 2, "physics_dt_s": 0.005,
                                     "settle_time_s": pytest.approx(1.2)}


def test_physics_settled_rejects_moving_root_robot_included():
    batch = _batch()
    batch.final_root_lin_vel["cube_a"][1] = torch.tensor([0.0, 0.0, -0.3])  # still falling
    batch.final_root_ang_vel["robot"][2] = torch.tensor([0.0, 0.0, 0.15])
    batch.final_root_lin_vel["mug"][3] = torch.tensor([0.05, 0.0, 0.0])  # under the 0.1 m/s limit
    reports = PhysicsSettledValidator().run(batch)
    assert _verdicts(reports) == [True, False, False, True]
    assert reports[1].reason == "cube_a: final linear speed 0.3 m/s, angular speed 0 rad/s; limits 0.1 m/s and 0.1 rad/s"
    assert reports[2].subject == "robot" and "angular speed 0.15 rad/s" in reports[2].reason
    assert _verdicts(PhysicsSettledValidator(lin_vel_thresh=0.5, ang_vel_thresh=0.2).run(batch)) == [True] * E
    batch.final_root_lin_vel["mug"][0, 0] = float("nan")  # a blown-up simulation never counts as settled
    assert PhysicsSettledValidator(lin_vel_thresh=0.5, ang_vel_thresh=0.2).run(batch)[0].passed is False


def test_pose_shift_rejects_non_clutter_root_and_ignores_clutter():
    init, final, _ = _good_state()
    final["mug"][0, 0] += 0.0153  # knocked over by a falling cube
    final["mug"][2, 3:] = torch.tensor(_tilt_x(3.0))
    final["mug"][3, 0] += 0.0015  # within 2 mm
    reports = PoseShiftValidator().run(_batch(init, final))
    assert _verdicts(reports) == [False, True, False, True]
    assert reports[0].reason == "mug: moved 0.0153 m and rotated 0 deg; limits 0.002 m and 2 deg"
    assert reports[2].reason == "mug: moved 0 m and rotated 3 deg; limits 0.002 m and 2 deg"
    # The clutter cubes moved by centimetres and turned 30 degrees in every env, yet env 1 passes.
    assert _verdicts(PoseShiftValidator(max_translation_m=0.02, max_rotation_deg=5.0).run(_batch(init, final))) == [True] * E


def test_articulation_link_shift_rejects_moved_link_not_robot_or_root_motion():
    init, final, links0 = _good_state()
    links1 = links0.clone()
    links1[1, 1, 2] += 0.01  # door link dropped 1 cm relative to the cabinet root
    # Env 2: the whole cabinet slid 5 cm; its links moved with it, so no link shift there.
    final["cabinet"][2, 0] += 0.05
    links1[2, :, 0] += 0.05
    reports = ArticulationLinkShiftValidator().run(_batch(init, final, links0=links0, links1=links1))
    assert _verdicts(reports) == [True, False, True, True]
    assert reports[1].subject == "cabinet/door"
    assert reports[1].reason.startswith("cabinet/door: link moved relative to its root by 0.01 m")
    # The robot's link moved 0.3 m relative to its root in every env and is excluded.


def test_articulation_link_shift_skipped_without_articulated_task_objects():
    batch = _batch(initial_link_poses={}, final_link_poses={}, link_names={})
    reports = ArticulationLinkShiftValidator().run(batch)
    assert _verdicts(reports) == [None] * E
    assert reports[0].reason == "skipped: not applicable (no articulated task objects)"


def test_support_containment_rejects_overhang_fall_and_respects_margin():
    init, final, _ = _good_state()
    final["cube_a"][1, 0] = 0.49  # bounds reach x = 0.515..0.52 > table edge 0.5
    final["cube_b"][2, 2] = 0.3  # fell off onto the floor
    final["cube_a"][3, 2] = TABLE_TOP + CUBE_HALF - 0.008  # sunk 8 mm: within the 1 cm tolerance
    reports = SupportContainmentValidator().run(_batch(init, final))
    assert _verdicts(reports) == [True, False, False, True]
    assert reports[1].subject == "cube_a" and "overhang the footprint of table by" in reports[1].reason
    assert "limit 0 m" in reports[1].reason
    assert reports[2].subject == "cube_b" and "below the minimum resting height 0.75 m of table" in reports[2].reason
    relaxed = SupportContainmentValidator(containment_margin_m=0.03).run(_batch(init, final))
    assert _verdicts(relaxed) == [True, True, False, True]


def test_support_containment_uses_rotated_bounds():
    init, final, _ = _good_state()
    # At 45 degrees yaw, a 5 cm cube reaches 3.54 cm from its centre: x = 0.47 is inside unrotated, outside rotated.
    final["cube_a"][0, 0] = 0.47
    final["cube_a"][1, 0] = 0.47
    final["cube_a"][1, 3:] = torch.tensor(_yaw(45.0))
    final["cube_a"][0, 3:] = torch.tensor(IDENT)
    assert _verdicts(SupportContainmentValidator().run(_batch(init, final)))[:2] == [True, False]


def test_container_minimum_resting_height():
    """A bowl whose inner floor is at local z = -0.025 (rim at +0.0275), placed with its origin at z = 0.8."""
    init, final, _ = _good_state()
    bowl = SupportInfo(local_min=[-0.1, -0.1, -0.03], local_max=[0.1, 0.1, 0.0275], poses=[0.0, 0.0, 0.8, *IDENT],
                       flat_top=False)
    final["cube_a"][:, :3] = torch.tensor([0.0, 0.0, 0.8 - 0.025 + CUBE_HALF])  # resting on the inner floor
    final["cube_b"][:, :3] = torch.tensor([0.05, 0.0, 0.8 - 0.025 + CUBE_HALF])
    final["cube_b"][3, 2] = 0.8 - 0.025 - 0.02 + CUBE_HALF  # 2 cm through the floor
    batch = _batch(init, final, clutter_supports={"cube_a": "bowl", "cube_b": "bowl"}, supports={"bowl": bowl})
    with pytest.raises(PostPhysicsConfigError, match=r"support 'bowl' has no verified flat rectangular top; set "
                                                     r"\+settle.validators.support_containment.minimum_resting_heights_m.bowl"):
        SupportContainmentValidator().run(batch)
    reports = SupportContainmentValidator(minimum_resting_heights_m={"bowl": -0.025}).run(batch)
    assert _verdicts(reports) == [True, True, True, False]
    assert "cube_b: bottom at z=0.755 m is 0.02 m below the minimum resting height 0.775 m of bowl" in reports[3].reason


def test_support_containment_rejects_moved_relation_placed_support():
    bowl = SupportInfo(local_min=[-0.5, -0.4, 0.0], local_max=[0.5, 0.4, TABLE_TOP],
                       poses=torch.tensor([[0.0, 0.0, 0.0, *IDENT]] * E), initial_poses=torch.tensor([[0.0, 0.0, 0.0, *IDENT]] * E))
    bowl.poses[2, 1] = 0.01
    reports = SupportContainmentValidator().run(_batch(supports={"table": bowl}))
    assert _verdicts(reports) == [True, True, False, True]
    assert reports[2].reason.startswith("support table: moved 0.01 m and rotated 0 deg while settling")
    tipped = SupportInfo(local_min=[-0.5, -0.4, 0.0], local_max=[0.5, 0.4, TABLE_TOP],
                         poses=torch.tensor([[0.0, 0.0, 0.0, *IDENT], [0.0, 0.0, 0.0, *_tilt_x(5.0)],
                                             [0.0, 0.0, 0.0, *_yaw(90.0)], [0.0, 0.0, 0.0, *IDENT]]))
    reports = SupportContainmentValidator().run(_batch(supports={"table": tipped}))
    assert _verdicts(reports) == [True, False, True, True]  # a quarter-turn yaw is fine, a 5 deg tilt is not
    assert "support table is not upright with a quarter-turn yaw" in reports[1].reason


def test_resting_height_settings_checked_against_supports():
    v = SupportContainmentValidator(minimum_resting_heights_m={"bowl": -0.025})
    with pytest.raises(PostPhysicsConfigError, match="'bowl' is not a ClutterOn support; supports .* \\['table'\\]"):
        v.check_supports({"table": ([-0.5, -0.4, 0.0], [0.5, 0.4, 0.75], True)})
    with pytest.raises(PostPhysicsConfigError, match=r"bowl=-0.025 is outside the support's local Z bounds \[0, 0.05\]"):
        v.check_supports({"bowl": ([-0.1, -0.1, 0.0], [0.1, 0.1, 0.05], False)})
    with pytest.raises(PostPhysicsConfigError, match="minimum_resting_heights_m.bowl must be a finite height"):
        SupportContainmentValidator(minimum_resting_heights_m={"bowl": "low"})


def test_support_containment_skipped_without_clutter():
    batch = _batch(clutter_keys=(), clutter_supports={}, clutter_local_bounds={}, supports={})
    reports = SupportContainmentValidator().run(batch)
    assert _verdicts(reports) == [None] * E and reports[0].reason == "skipped: not applicable (no ClutterOn objects)"


def test_disabled_check_is_skipped_and_subset_env_ids_keep_order():
    init, final, _ = _good_state()
    final["mug"][3, 0] += 0.1
    batch = _batch(init, final, env_ids=(3, 1))
    reports = PoseShiftValidator().run(batch)
    assert _verdicts(reports) == [False, True]
    assert _verdicts(PoseShiftValidator(enabled=False).run(batch)) == [None, None]
    assert PoseShiftValidator(enabled=False).run(batch)[0].reason == "skipped: disabled"
    results = run_post_physics_validators([PoseShiftValidator(), PhysicsSettledValidator()], batch)
    assert results.accepted.tolist() == [False, True]
    assert results.post_physics_block(0)["passed"] is False


def test_no_enabled_applicable_check_is_an_error():
    batch = _batch(clutter_keys=(), clutter_supports={}, clutter_local_bounds={}, supports={})
    with pytest.raises(PostPhysicsConfigError, match="at least one applicable post-physics check must remain enabled"):
        run_post_physics_validators([PoseShiftValidator(enabled=False), SupportContainmentValidator()], batch)
    with pytest.raises(PostPhysicsConfigError, match=r"\['pose_shift'\] are configured more than once"):
        run_post_physics_validators([PoseShiftValidator(), PoseShiftValidator()], batch)
    assert not_settled_block()["passed"] is None


def test_settled_batch_rejects_inconsistent_tables():
    init, final, _ = _good_state()
    with pytest.raises(SettledBatchError, match="final_root_lin_vel has keys"):
        _batch(init, final, lin={"mug": torch.zeros(E, 3)})
    with pytest.raises(SettledBatchError, match=r"env_ids \[7\] are outside the 4 rows"):
        _batch(env_ids=(7,))
    bad = {k: v.clone() for k, v in final.items()}
    bad["mug"] = bad["mug"][:, :3]
    with pytest.raises(SettledBatchError, match=r"final_root_poses\['mug'\] must be \(E, 7\)"):
        _batch(init, bad)
    with pytest.raises(SettledBatchError, match="clutter object 'cube_a' rests on 'table', which has no SupportInfo"):
        _batch(supports={})


# -- configuration: Hydra keys, custom validators through _target_ -------------------------------------

CUSTOM_MODULE = textwrap.dedent('''
    import math
    from dataclasses import dataclass
    from typing import ClassVar

    from isaaclab_arena.offline_placement.post_physics_validation import PostPhysicsPlacementValidator
    from isaaclab_arena.offline_placement.settled_batch import SettledBatch
    from isaaclab_arena.relations.validation.types import PlacementValidatorReport


    @dataclass
    class MaxRootHeightValidator(PostPhysicsPlacementValidator):
        check: ClassVar[str] = "max_root_height"
        max_height_m: float = 1.5

        def validate(self, batch: SettledBatch) -> list[PlacementValidatorReport]:
            reports = []
            for env_id in batch.env_ids:
                reason = ""
                for key, poses in batch.final_root_poses.items():
                    height_m = poses[env_id, 2].item()
                    if not math.isfinite(height_m) or height_m > self.max_height_m:
                        reason = f"{key}: final root height {height_m:g} m; limit {self.max_height_m:g} m"
                        break
                reports.append(self.report(passed=not bool(reason), reason=reason))
            return reports


    class NotAValidator:
        check = "not_a_validator"
''')


@pytest.fixture
def custom_module(tmp_path, monkeypatch):
    (tmp_path / "arena_test_placement_validators.py").write_text(CUSTOM_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "arena_test_placement_validators"


def _compose(overrides):
    from hydra import compose, initialize

    name = register_recording_config()
    with initialize(version_base=None, config_path=None):
        return compose(config_name=name, overrides=overrides)


def test_hydra_overrides_match_seed_004_and_custom_validator_rejects(custom_module, tmp_path):
    cfg = _compose([
        "env_spec=scene.yaml", f"output={tmp_path / 'clamp_custom.jsonl'}", "num_envs=4", "env_spacing=2",
        "min_layouts=16", "max_batches=5", "seed=42", "settle.num_steps=120",
        "settle.validators.pose_shift.max_translation_m=0.015",
        f"+settle.validators.max_root_height._target_={custom_module}.MaxRootHeightValidator",
        "+settle.validators.max_root_height.max_height_m=1.5",
        "+settle.validators.support_containment.minimum_resting_heights_m.table=0.75",
        "render=false"])
    rec = PlacementRecordingCfg.from_config(cfg).validate()
    assert (rec.num_envs, rec.env_spacing, rec.min_layouts, rec.max_batches, rec.seed) == (4, 2.0, 16, 5, 42)
    assert rec.settle.num_steps == 120 and rec.render is False
    validators = {v.check: v for v in rec.settle_validators}
    assert list(validators) == ["physics_settled", "pose_shift", "articulation_link_shift", "support_containment",
                                "max_root_height"]
    assert validators["pose_shift"].max_translation_m == 0.015
    assert validators["support_containment"].minimum_resting_heights_m == {"table": 0.75}
    assert type(validators["max_root_height"]).__name__ == "MaxRootHeightValidator"

    init, final, _ = _good_state()
    final["cube_b"][2, 2] = 1.7  # flung up (also fails containment only if it left the footprint; it did not)
    results = run_post_physics_validators(list(validators.values()), _batch(init, final))
    custom = results.reports["max_root_height"]
    assert _verdicts(custom) == [True, True, False, True]
    assert custom[2].reason == "cube_b: final root height 1.7 m; limit 1.5 m"
    assert custom[2].settings == {"enabled": True, "max_height_m": 1.5}
    assert results.accepted.tolist() == [True, True, False, True]


def test_custom_validator_key_must_equal_check(custom_module):
    with pytest.raises(RecordingConfigError, match=r"settle.validators.root_height._target_=.*the class's check is "
                                                   r"'max_root_height'; the configuration key must equal it"):
        build_post_physics_validators({"root_height": {"_target_": f"{custom_module}.MaxRootHeightValidator"}})
    with pytest.raises(RecordingConfigError, match="is not a PostPhysicsPlacementValidator subclass"):
        build_post_physics_validators({"not_a_validator": {"_target_": f"{custom_module}.NotAValidator"}})
    with pytest.raises(RecordingConfigError, match="cannot import module 'no_such_module_xyz'"):
        build_post_physics_validators({"x": {"_target_": "no_such_module_xyz.Cls"}})
    with pytest.raises(RecordingConfigError, match=r"max_root_height: unknown settings \['max_hieght_m'\]"):
        build_post_physics_validators({"max_root_height": {"_target_": f"{custom_module}.MaxRootHeightValidator",
                                                           "max_hieght_m": 2.0}})


def test_builtin_settings_errors_name_the_key():
    with pytest.raises(RecordingConfigError, match="settle.validators.max_root_height: unknown post-physics check"):
        build_post_physics_validators({"max_root_height": {"max_height_m": 1.0}})
    with pytest.raises(RecordingConfigError, match=r"settle.validators.pose_shift.max_translation_m must be a finite "
                                                   r"number >= 0, got -1"):
        build_post_physics_validators({"pose_shift": {"max_translation_m": -1}})
    with pytest.raises(RecordingConfigError, match="settle.validators.physics_settled.enabled must be true or false"):
        build_post_physics_validators({"physics_settled": {"enabled": "yes"}})


def test_applicability_and_auto_support_containment():
    only_clutter = {"support_containment": {}, "pose_shift": {"enabled": False}}
    with pytest.raises(RecordingConfigError, match="no enabled post-physics check applies to this scene"):
        build_post_physics_validators(only_clutter, has_clutter=False, has_articulated_task_objects=False)
    built = build_post_physics_validators({"physics_settled": {}}, has_clutter=True, has_articulated_task_objects=False)
    assert [v.check for v in built] == ["physics_settled", "support_containment"]
    with pytest.raises(RecordingConfigError, match="'bowl' is not a ClutterOn support"):
        build_post_physics_validators({"support_containment": {"minimum_resting_heights_m": {"bowl": -0.025}}},
                                      clutter_supports={"office_table_background": ([-1, -1, 0], [1, 1, 0.53], True)})


def test_recording_cfg_validation_errors(tmp_path):
    def cfg(**kw):
        base = dict(env_spec="scene.yaml", output=str(tmp_path / "out.jsonl"))
        base.update(kw)
        return PlacementRecordingCfg(**base)

    assert PlacementRecordingCfg().settle.num_steps == DEFAULT_SETTLE_NUM_STEPS == 5
    assert cfg().validate().env_spacing == 30.0
    with pytest.raises(RecordingConfigError, match="env_spec is required"):
        PlacementRecordingCfg(output="x.jsonl").validate()
    with pytest.raises(RecordingConfigError, match=r"max_batches \* num_envs = 2 \* 3 = 6 is below min_layouts=7"):
        cfg(num_envs=3, max_batches=2, min_layouts=7).validate()
    with pytest.raises(RecordingConfigError, match="settle.num_steps must be an integer >= 1, got 0"):
        cfg(settle=SettleCfg(num_steps=0)).validate()
    with pytest.raises(RecordingConfigError, match="viewer_eye is set but viewer_lookat is not"):
        cfg(viewer_eye=[4.0, 4.0, 6.3]).validate()
    with pytest.raises(RecordingConfigError, match="presets='mujoco' is not accepted"):
        cfg(presets="mujoco").validate()
    with pytest.raises(RecordingConfigError, match="every post-physics check under settle.validators is disabled"):
        cfg(settle=SettleCfg(validators={k: {"enabled": False} for k in SettleCfg().validators})).validate()
    (tmp_path / "out.jsonl").write_text("old\n")
    with pytest.raises(RecordingConfigError, match="out.jsonl' already exists; the recorder never overwrites"):
        cfg().validate()
    assert (tmp_path / "out.jsonl").read_text() == "old\n"


def test_hydra_rejects_unknown_builtin_setting_without_plus():
    from hydra.errors import ConfigCompositionException

    with pytest.raises(ConfigCompositionException, match="max_translaton_m"):
        _compose(["settle.validators.pose_shift.max_translaton_m=0.1"])


# -- rejection summary -----------------------------------------------------------------------------------

def test_rejection_summary_groups_by_reason_and_object():
    init, final, _ = _good_state()
    final["mug"][0, 0] += 0.004
    final["mug"][1, 0] += 0.0153
    final["mug"][2, 3:] = torch.tensor(_tilt_x(3.0))
    batch = _batch(init, final)
    batch.final_root_lin_vel["cube_a"][2] = torch.tensor([0.0, 0.0, -0.5])
    results = run_post_physics_validators([PhysicsSettledValidator(), PoseShiftValidator()], batch)
    summary = RejectionSummary(attempted=E)
    for row in range(E):
        summary.add_reports(results.reports_for(row))
    summary.add_solver_failure(["no_overlap"])
    summary.add_solver_failure(["no_overlap"])
    summary.add_missing_required(["ik_reachable"])
    assert summary.rejected == 6
    assert summary.lines() == [
        # Worst of the three mug shifts (15.3 mm is 7.65x the limit; 3 deg is 1.5x).
        "Rejected 3: pose_shift: mug: moved 0.0153 m and rotated 0 deg; limits 0.002 m and 2 deg",
        "Rejected 2: solver validation failed: no_overlap",
        "Rejected 1: physics_settled: cube_a: final linear speed 0.5 m/s, angular speed 0 rad/s; limits 0.1 m/s and "
        "0.1 rad/s",
        "Rejected 1: missing required solver checks: ik_reachable",
    ]
    assert summary.counts == {"pose_shift": 3, "solver validation failed": 2, "physics_settled": 1,
                              "missing required solver checks": 1}


# ---- articulation_link_shift on a real settled articulation (kit-less Isaac Lab, OV PhysX, CPU) ---------------------
def _write_hinge_usd(path, locked: bool) -> str:
    """A two-link articulation authored with pxr: a 10 cm base cube and a 20 x 2 x 2 cm arm sticking out along +X,
    joined by a revolute joint about Y at the base's +X face. ``locked`` limits the joint to [0, 0] degrees."""
    from pxr import Gf, Usd, UsdGeom, UsdPhysics

    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    root = UsdGeom.Xform.Define(stage, "/Hinge")
    stage.SetDefaultPrim(root.GetPrim())
    UsdPhysics.ArticulationRootAPI.Apply(root.GetPrim())
    for name, pos, size in (("base", (0.0, 0.0, 0.0), (0.1, 0.1, 0.1)), ("arm", (0.15, 0.0, 0.0), (0.2, 0.02, 0.02))):
        body = UsdGeom.Xform.Define(stage, f"/Hinge/{name}")
        body.AddTranslateOp().Set(Gf.Vec3d(*pos))
        UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
        UsdPhysics.MassAPI.Apply(body.GetPrim()).CreateMassAttr(0.2)
        geom = UsdGeom.Cube.Define(stage, f"/Hinge/{name}/geom")
        geom.CreateSizeAttr(1.0)
        geom.AddScaleOp().Set(Gf.Vec3f(*size))
        UsdPhysics.CollisionAPI.Apply(geom.GetPrim())
    joint = UsdPhysics.RevoluteJoint.Define(stage, "/Hinge/hinge_joint")
    joint.CreateBody0Rel().SetTargets(["/Hinge/base"])
    joint.CreateBody1Rel().SetTargets(["/Hinge/arm"])
    joint.CreateAxisAttr("Y")
    joint.CreateLocalPos0Attr(Gf.Vec3f(0.05, 0.0, 0.0))
    joint.CreateLocalPos1Attr(Gf.Vec3f(-0.1, 0.0, 0.0))
    if locked:
        joint.CreateLowerLimitAttr(0.0)
        joint.CreateUpperLimitAttr(0.0)
    stage.GetRootLayer().Export(str(path))
    return str(path)


@pytest.mark.sim
def test_articulation_link_shift_rejects_a_real_articulation_whose_link_swung(tmp_path):
    """Two articulated task objects resting on the ground: ``hinge``'s unactuated arm swings down under gravity
    (its link turns ~11 deg relative to the root), ``stiff``'s joint is limited to 0 deg and keeps its links.
    The capture helpers the recorder uses read both from the simulator after 60 env steps."""
    import isaaclab.sim as sim_utils
    from isaaclab.app import launch_simulation
    from isaaclab.assets import ArticulationCfg, AssetBaseCfg
    from isaaclab.envs import ManagerBasedRLEnv

    from isaaclab_arena.environments.arena_env_builder import _REPO_GROUND, ArenaEnvCfg, ArenaSceneCfg
    from isaaclab_arena.environments.physics import make_physics_cfg
    from isaaclab_arena.offline_placement.scene_capture import (
        capture_link_poses,
        capture_root_poses,
        capture_settled_batch,
    )

    cfg = ArenaEnvCfg()
    cfg.decimation, cfg.sim.dt, cfg.sim.device = 2, 1.0 / 120.0, "cpu"
    cfg.sim.physics = make_physics_cfg("ovphysx", "cpu")
    scene = ArenaSceneCfg(num_envs=2, env_spacing=2.0)
    scene.ground = AssetBaseCfg(prim_path="/World/ground", spawn=sim_utils.GroundPlaneCfg(usd_path=_REPO_GROUND))
    for key, x, locked in (("hinge", 0.0, False), ("stiff", 0.6, True)):
        usd = _write_hinge_usd(tmp_path / f"{key}.usda", locked)
        setattr(scene, key, ArticulationCfg(prim_path=f"{{ENV_REGEX_NS}}/{key}", spawn=sim_utils.UsdFileCfg(usd_path=usd),
                                            init_state=ArticulationCfg.InitialStateCfg(pos=(x, 0.0, 0.051)),
                                            actuators={}))
    cfg.scene = scene
    keys = ["hinge", "stiff"]
    with launch_simulation(cfg, {"headless": True, "device": "cpu"}):
        env = ManagerBasedRLEnv(cfg=cfg)
        try:
            env.reset()
            roots0 = capture_root_poses(env.scene, keys)
            links0, names = capture_link_poses(env.scene, keys)
            assert sorted(names["hinge"]) == ["arm", "base"]
            for _ in range(60):
                env.step(torch.zeros(2, 0))
            batch = capture_settled_batch(env.scene, [0, 1], roots0, links0, num_steps=60, decimation=2,
                                          physics_dt_s=1.0 / 120.0)
            stiff_only = capture_settled_batch(env.scene, [0, 1], {"stiff": roots0["stiff"]},
                                               {"stiff": links0["stiff"]}, num_steps=60, decimation=2,
                                               physics_dt_s=1.0 / 120.0)
        finally:
            env.close()
    reports = run_post_physics_validators([ArticulationLinkShiftValidator()], batch).reports["articulation_link_shift"]
    assert [r.passed for r in reports] == [False, False]
    for r in reports:
        assert r.reason.startswith("hinge/") and "link moved relative to its root by" in r.reason
        assert "limits 0.002 m and 2 deg" in r.reason
        deg = float(r.reason.split(" and rotated ")[1].split(" deg")[0])
        assert 5.0 < deg < 20.0, r.reason  # the arm rests on the ground ~11 deg below horizontal
    # The locked articulation passes, and a looser limit accepts the swung arm.
    ok = run_post_physics_validators([ArticulationLinkShiftValidator()], stiff_only).reports["articulation_link_shift"]
    assert [r.passed for r in ok] == [True, True]
    loose = run_post_physics_validators([ArticulationLinkShiftValidator(max_translation_m=0.05, max_rotation_deg=30.0)],
                                        batch).reports["articulation_link_shift"]
    assert [r.passed for r in loose] == [True, True]

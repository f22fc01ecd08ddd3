"""The placement recorder against real kit-less Isaac Lab envs (OV PhysX, CPU), and record -> replay round trips.

- the Hydra CLI (``record_placement_layouts.py``) in a subprocess on the shipped table scene writes N
  settled lines with the validation block, and a custom ``_target_`` validator rejects what it should;
- replaying a recording in a fresh env restores the settled poses within 1 mm and 1 degree, and they stay
  put over further steps (table On scene, clutter on a table, clutter in a bin);
- real physics: the default 2 mm pose_shift limit accepts On's 1 cm release drops (it measures from the expected
  resting pose), a too-high minimum resting height rejects clutter on the bin floor; nothing is written when no layout passes, a shortfall
  still writes what was accepted, an existing output is refused and left untouched.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap

import pytest
import torch
from _outside import without_recording_block

from isaaclab_arena import ARENA_ROOT

SCRIPT = os.path.join(ARENA_ROOT, "isaaclab_arena", "scripts", "record_placement_layouts.py")
TABLE_SCENE = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "tabletop", "mug_bowl_table.yaml")
CLUTTER_TABLE = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "clutter", "table_clutter.yaml")
CLUTTER_BIN = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "clutter", "bin_clutter.yaml")
PHYSICS_DT = 1.0 / 120.0

VALIDATORS_MODULE = textwrap.dedent('''
    import math
    from dataclasses import dataclass
    from typing import ClassVar

    from isaaclab_arena.offline_placement.post_physics_validation import PostPhysicsPlacementValidator


    @dataclass
    class MaxRootHeightValidator(PostPhysicsPlacementValidator):
        """Every root's final height (env-local, metres) at most max_height_m."""

        check: ClassVar[str] = "max_root_height"
        max_height_m: float = 1.5

        def validate(self, batch):
            reports = []
            for env_id in batch.env_ids:
                reason = ""
                for key, poses in batch.final_root_poses.items():
                    h = poses[env_id, 2].item()
                    if not math.isfinite(h) or h > self.max_height_m:
                        reason = f"{key}: final root height {h:g} m; limit {self.max_height_m:g} m"
                        break
                reports.append(self.report(passed=not bool(reason), reason=reason))
            return reports


    @dataclass
    class RejectOddEnvsValidator(PostPhysicsPlacementValidator):
        """Rejects the layouts of odd env ids (a deterministic partial rejection)."""

        check: ClassVar[str] = "reject_odd_envs"

        def validate(self, batch):
            return [self.report(passed=e % 2 == 0, reason="" if e % 2 == 0 else f"env {e} is odd")
                    for e in batch.env_ids]
''')


@pytest.fixture(scope="module")
def validators_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("validators")
    (d / "recorder_test_validators.py").write_text(VALIDATORS_MODULE)
    sys.path.insert(0, str(d))
    yield d
    sys.path.remove(str(d))


def _cli(args, validators_dir=None, timeout=420):
    env = dict(os.environ)
    if validators_dir is not None:
        env["PYTHONPATH"] = str(validators_dir) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, cwd=ARENA_ROOT, env=env,
                          timeout=timeout)


def _lines(path):
    with open(path) as fh:
        return [json.loads(line) for line in fh if line.strip()]


# ---- in-process envs ------------------------------------------------------------------------------------------
def _launch(spec, num_envs, gym_id, **cfg):
    from isaaclab.app import launch_simulation

    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec
    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg

    arena_env = ArenaEnvGraphSpec.from_yaml(spec).to_arena_env()
    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=num_envs, env_spacing=2.0, gym_id=gym_id, **cfg))
    env_cfg = builder.compose_manager_cfg()
    ctx = launch_simulation(env_cfg, {"headless": True, "device": "cpu"})
    ctx.__enter__()
    env = builder.make_registered(env_cfg)
    return arena_env, builder, env, ctx


def _close(env, ctx):
    env.close()
    ctx.__exit__(None, None, None)


def _local_poses(env, names):
    u = env.unwrapped
    return {n: torch.cat([u.scene[n].data.root_pos_w.torch - u.scene.env_origins,
                          u.scene[n].data.root_quat_w.torch], -1).clone() for n in names}


def _assert_matches(actual, layouts, layout_ids, what, tol_m=1e-3, tol_deg=1.0):
    from isaaclab_arena.offline_placement.pose_math import quat_angle_deg

    for name in layouts.object_names:
        rec = layouts.root_poses(layout_ids)[:, layouts.index_of(name)]
        got = actual[name]
        dist = torch.linalg.vector_norm(got[:, :3] - rec[:, :3], dim=-1)
        ang = quat_angle_deg(got[:, 3:], rec[:, 3:])
        assert float(dist.max()) < tol_m, f"{what}: {name} is {dist.tolist()} m from the recorded settled pose"
        assert float(ang.max()) < tol_deg, f"{what}: {name} is {ang.tolist()} deg from the recorded settled pose"


def _replay_round_trip(path, spec, num_envs, gym_id, steps=30):
    """Fresh env replaying ``path``: poses after reset and after ``steps`` steps match the recording."""
    from isaaclab_arena.relations.placement_layouts import PlacementLayouts

    layouts = PlacementLayouts.from_episode_jsonl(path)
    _, builder, env, ctx = _launch(spec, num_envs, gym_id, placement_layouts_path=str(path))
    try:
        assert builder.placer is None, "replay must not build the solver's pool"
        env.reset()
        first = torch.arange(num_envs) % len(layouts)
        _assert_matches(_local_poses(env, layouts.object_names), layouts, first, "after the replay reset")
        actions = torch.zeros(num_envs, 0)
        for _ in range(steps):
            env.step(actions)
        _assert_matches(_local_poses(env, layouts.object_names), layouts, first, f"after {steps} more steps")
        env.reset()  # the shared queue continues where it stopped, wrapping
        second = (torch.arange(num_envs) + num_envs) % len(layouts)
        _assert_matches(_local_poses(env, layouts.object_names), layouts, second, "after the second replay reset")
    finally:
        _close(env, ctx)
    return layouts


# ---- the Hydra CLI on the shipped table scene -----------------------------------------------------------------
@pytest.fixture(scope="module")
def cli_recording(tmp_path_factory, validators_dir):
    out = tmp_path_factory.mktemp("cli") / "mug_bowl.jsonl"
    proc = _cli([f"env_spec={TABLE_SCENE}", f"output={out}", "num_envs=2", "env_spacing=2", "min_layouts=2",
                 "max_batches=3", "seed=42", "settle.num_steps=30", "settle.validators.pose_shift.max_translation_m=0.015",
                 "+settle.validators.reject_odd_envs._target_=recorder_test_validators.RejectOddEnvsValidator",
                 "render=false", "--device", "cpu", "--viz", "none"], validators_dir)
    return out, proc


@pytest.mark.sim
@pytest.mark.slow
def test_cli_writes_settled_lines_with_the_validation_block(cli_recording):
    out, proc = cli_recording
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = _lines(out)
    assert len(lines) == 2
    for line in lines:
        assert line["source"] == "settled"
        poses = line["variations"]["scene.relation_placement"]["poses"]
        assert set(poses) == {"mug", "bowl"}
        for pose in poses.values():
            assert abs(pose["position_xyz"][2] - 0.75) < 0.06  # resting on the tabletop (top at z = 0.75 m)
            assert abs(math.sqrt(sum(v * v for v in pose["rotation_xyzw"])) - 1.0) < 1e-4
        val = line["validation"]
        assert val["pre_physics"]["passed"] is True
        assert val["pre_physics"]["checks"]["on_relation"] is True
        assert "no_overlap" in val["pre_physics"]["required_checks"]
        post = val["post_physics"]
        assert post["passed"] is True
        assert post["checks"]["pose_shift"]["passed"] is True
        assert post["checks"]["pose_shift"]["settings"]["max_translation_m"] == 0.015
        assert post["checks"]["physics_settled"]["passed"] is True
        assert post["checks"]["reject_odd_envs"]["passed"] is True
        assert post["checks"]["support_containment"]["passed"] is None  # no clutter: skipped
        assert val["sampling"]["num_steps"] == 30 and val["sampling"]["decimation"] == 2
        assert val["sampling"]["physics_dt_s"] == pytest.approx(PHYSICS_DT)
        assert val["sampling"]["env_id"] == 0  # env 1 is always rejected by the custom validator
    assert [line["validation"]["sampling"]["batch"] for line in lines] == [1, 2]


@pytest.mark.sim
@pytest.mark.slow
def test_cli_console_lines_and_custom_target_rejections(cli_recording):
    out, proc = cli_recording
    text = proc.stdout
    assert "[placement] 60/60 physics steps" in text
    assert "[recording] batch 1/3: 1/2 collected" in text
    assert "[recording] batch 2/3: 2/2 collected" in text
    assert "batch 3/3" not in text  # stops once min_layouts are accepted
    assert f"Saved 2/4 accepted layouts: {out}" in text
    assert "Rejected 2: reject_odd_envs: env 1 is odd" in text


@pytest.mark.sim
@pytest.mark.slow
def test_cli_replay_restores_the_settled_poses_and_they_stay_put(cli_recording):
    out, proc = cli_recording
    assert proc.returncode == 0
    _replay_round_trip(out, TABLE_SCENE, 3, "test_recorder_replay_table")


def test_cli_help_documents_the_exit_status(capsys):
    sys.path.insert(0, os.path.dirname(SCRIPT))
    try:
        import record_placement_layouts as script
    finally:
        sys.path.remove(os.path.dirname(SCRIPT))
    with pytest.raises(SystemExit) as done:
        script.split_launcher_flags(["--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert "Exit status:" in text and "--device" in text and "settle.validators.<check>.<setting>" in text
    assert "0  at least one layout was accepted and written; a shortfall" in text
    assert "1  no layout was accepted: no file is written" in text
    assert "2  a configuration error" in text


@pytest.mark.sim
@pytest.mark.slow
def test_cli_shortfall_exits_0_and_writes_the_accepted_layouts(tmp_path, validators_dir):
    out = tmp_path / "short.jsonl"
    proc = _cli([f"env_spec={TABLE_SCENE}", f"output={out}", "num_envs=2", "env_spacing=2", "min_layouts=2",
                 "max_batches=1", "settle.num_steps=20", "settle.validators.pose_shift.max_translation_m=0.015",
                 "+settle.validators.reject_odd_envs._target_=recorder_test_validators.RejectOddEnvsValidator",
                 "render=false", "--device", "cpu", "--viz", "none"], validators_dir)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = _lines(out)
    assert len(lines) == 1 and lines[0]["source"] == "settled"
    assert f"Saved 1/2 accepted layouts: {out}" in proc.stdout
    assert "shortfall" in proc.stderr and "only 1/2 layouts were accepted" in proc.stderr


@pytest.mark.sim
@pytest.mark.slow
def test_cli_nothing_accepted_exits_1_and_writes_no_file(tmp_path, validators_dir):
    out = tmp_path / "none.jsonl"
    # A custom check no layout passes (the mug and bowl rest at z ~ 0.8 m, above its 0.5 m limit).
    proc = _cli([f"env_spec={TABLE_SCENE}", f"output={out}", "num_envs=2", "env_spacing=2", "min_layouts=2",
                 "max_batches=1", "settle.num_steps=20",
                 "+settle.validators.max_root_height._target_=recorder_test_validators.MaxRootHeightValidator",
                 "+settle.validators.max_root_height.max_height_m=0.5",
                 "render=false", "--device", "cpu", "--viz", "none"], validators_dir)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert not out.exists() and not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
    assert "Rejected 2: max_root_height: " in proc.stdout
    assert "no layout was accepted" in proc.stderr and "no file was written" in proc.stderr


@pytest.mark.slow
def test_cli_refuses_an_existing_output_and_leaves_it_untouched(tmp_path):
    out = tmp_path / "exists.jsonl"
    out.write_text("keep me\n")
    proc = _cli([f"env_spec={TABLE_SCENE}", f"output={out}", "--device", "cpu", "--viz", "none"])
    assert proc.returncode == 2
    assert "already exists" in proc.stderr and "never overwrites" in proc.stderr
    assert out.read_text() == "keep me\n"


@pytest.mark.slow
def test_cli_rejects_unknown_flags_and_bad_overrides(tmp_path):
    proc = _cli([f"env_spec={TABLE_SCENE}", f"output={tmp_path / 'x.jsonl'}", "--num_envs", "4"])
    assert proc.returncode == 2 and "unknown flag(s) ['--num_envs'" in proc.stderr
    proc = _cli([f"env_spec={TABLE_SCENE}", f"output={tmp_path / 'x.jsonl'}", "settle.validators.pose_shift.max_shift=1"])
    assert proc.returncode == 2 and "max_shift" in proc.stderr
    proc = _cli([f"output={tmp_path / 'x.jsonl'}"])
    assert proc.returncode == 2 and "env_spec is required" in proc.stderr
    assert not (tmp_path / "x.jsonl").exists()


# ---- in-process recordings on one table env ----------------------------------------------------------------------
@pytest.fixture(scope="class")
def table_env():
    arena_env, builder, env, ctx = _launch(TABLE_SCENE, 2, "test_recorder_table", placement_seed=3)
    yield arena_env, env
    _close(env, ctx)


def _params(**validators):
    from isaaclab_arena.offline_placement.recording import SettledPlacementParams
    from isaaclab_arena.offline_placement.recording_config import default_validator_settings

    settings = default_validator_settings()
    settings.update(validators)
    return SettledPlacementParams(num_steps=30, validators=settings, verbose=False)


@pytest.mark.sim
class TestOneTableEnv:
    """Recordings on one in-process table env (one Isaac Lab SimulationContext at a time: closed after the class)."""

    def test_default_pose_shift_limit_accepts_on_release_drops(self, table_env, tmp_path):
        from isaaclab_arena.offline_placement.recording_output import record_placements_to_jsonl

        arena_env, env = table_env
        out = tmp_path / "settled.jsonl"
        result = record_placements_to_jsonl(env, out, min_layouts=2, max_batches=1, params=_params(),
                                            scene_assets=arena_env.get_placement_assets())
        # On releases objects 1 cm above the table (the release gap); pose_shift measures from the expected
        # resting pose (1 cm lower), so the 2 mm default limit accepts the settled layouts.
        assert result.output == str(out) and result.accepted == 2 and result.attempted == 2, result.summary.lines()
        for line in _lines(out):
            assert line["validation"]["post_physics"]["checks"]["pose_shift"]["passed"] is True
            assert line["validation"]["post_physics"]["checks"]["pose_shift"]["settings"]["max_translation_m"] == 0.002


    def test_custom_target_validator_rejecting_everything_writes_no_file(self, table_env, tmp_path, validators_dir):
        from isaaclab_arena.offline_placement.recording_output import record_placements_to_jsonl

        arena_env, env = table_env
        out = tmp_path / "custom.jsonl"
        params = _params(pose_shift={"max_translation_m": 0.015},
                         max_root_height={"_target_": "recorder_test_validators.MaxRootHeightValidator", "max_height_m": 0.5})
        result = record_placements_to_jsonl(env, out, min_layouts=1, max_batches=2, params=params)
        assert result.output is None and not out.exists()
        assert result.rejections == {"max_root_height": 4} and result.attempted == 4
        assert any(": max_root_height: " in l and "limit 0.5 m" in l for l in result.summary.lines())


    def test_partial_shortfall_still_writes_the_accepted_layouts(self, table_env, tmp_path, validators_dir, caplog):
        from isaaclab_arena.offline_placement.recording import collect_settled_placements
        from isaaclab_arena.offline_placement.recording_output import record_placements_to_jsonl

        arena_env, env = table_env
        out = tmp_path / "partial.jsonl"
        params = _params(pose_shift={"max_translation_m": 0.015},
                         reject_odd_envs={"_target_": "recorder_test_validators.RejectOddEnvsValidator"})
        with caplog.at_level("ERROR"):
            result = record_placements_to_jsonl(env, out, min_layouts=4, max_batches=2, params=params)
        assert result.output == str(out) and result.accepted == 2 and result.shortfall == 2
        assert len(_lines(out)) == 2 and all(l["source"] == "settled" for l in _lines(out))
        assert any("shortfall" in r.getMessage() and "2/4" in r.getMessage() for r in caplog.records)
        # In memory: the same pipeline without a file.
        collected = collect_settled_placements(env, num_batches=1, params=params)
        assert collected.accepted == 1 and collected.attempted == 2 and collected.layouts.sources == ["settled"]


    def test_existing_output_is_refused_before_any_batch(self, table_env, tmp_path):
        from isaaclab_arena.offline_placement.recording_output import record_placements_to_jsonl

        arena_env, env = table_env
        out = tmp_path / "exists.jsonl"
        out.write_text("old\n")
        with pytest.raises(FileExistsError, match="already exists"):
            record_placements_to_jsonl(env, out, params=_params())
        assert out.read_text() == "old\n"


    def test_settling_longer_than_the_episode_is_refused(self, table_env, tmp_path):
        from isaaclab_arena.offline_placement.recording import SettledPlacementParams
        from isaaclab_arena.offline_placement.recording_output import record_placements_to_jsonl
        from isaaclab_arena.offline_placement.recording_config import RecordingConfigError

        arena_env, env = table_env
        with pytest.raises(RecordingConfigError, match=r"settle.num_steps=400 .*episode length"):
            record_placements_to_jsonl(env, tmp_path / "long.jsonl", params=SettledPlacementParams(num_steps=400))


# ---- clutter round trips -----------------------------------------------------------------------------------------
def _record_clutter(spec, out, num_steps=90, max_batches=3, min_layouts=4, **extra_validators):
    from isaaclab_arena.offline_placement.recording_output import record_settled_placement_layouts
    from isaaclab_arena.offline_placement.recording_config import PlacementRecordingCfg

    cfg = PlacementRecordingCfg(env_spec=spec, output=str(out), num_envs=3, env_spacing=2.0,
                                min_layouts=min_layouts, max_batches=max_batches, seed=42, layouts_per_env=2)
    cfg.settle.num_steps = num_steps
    for check, settings in extra_validators.items():
        cfg.settle.validators.setdefault(check, {}).update(settings)
    lines = []
    result = record_settled_placement_layouts(cfg, device="cpu", log=lines.append)
    return result, lines


MOVABLE_BIN = textwrap.dedent("""
    env_name: movable_bin_clutter
    background: {id: table_background, registry_name: table_background}
    object_references:
      - {id: table, parent_id: table_background, prim_path: table, object_type: base}
    objects:
      - {id: bin, registry_name: bin}
      - {id: cube_a, registry_name: cube_4cm}
      - {id: cube_b, registry_name: cube_4cm}
    relations:
      - {kind: is_anchor, subject: table}
      - {kind: 'on', subject: bin, reference: table}
      - {kind: position_limits, subject: bin, params: {x_limits: [-0.2, 0.2], y_limits: [-0.2, 0.2]}}
      - {kind: clutter_on, subject: cube_a, reference: bin, params: {spread: 0.5}}
      - {kind: clutter_on, subject: cube_b, reference: bin, params: {spread: 0.5}}
""")


@pytest.mark.sim
@pytest.mark.parametrize("spec,support,heights,pose_shift", [
    (CLUTTER_TABLE, "table", {}, None),  # every rigid root is a ClutterOn drop: pose_shift is skipped
    (CLUTTER_BIN, "bin", {"bin": -0.04}, True),  # the kinematic bin is a non-clutter root and must not move
    (None, "bin", {"bin": -0.04}, True),  # a relation-placed kinematic bin (On the table), solved with the cubes
], ids=["clutter_on_table", "clutter_in_bin", "clutter_in_movable_bin"])
def test_clutter_record_replay_round_trip(spec, support, heights, pose_shift, tmp_path):
    if spec is None:
        spec = tmp_path / "movable_bin_clutter.yaml"
        spec.write_text(MOVABLE_BIN)
        spec = str(spec)
    out = tmp_path / f"{support}.jsonl"
    result, console = _record_clutter(spec, out, support_containment={"minimum_resting_heights_m": heights})
    assert result.accepted == 4, "\n".join(console)
    lines = _lines(out)
    assert len(lines) == 4
    for line in lines:
        val = line["validation"]
        assert val["pre_physics"]["checks"]["clutter_on_relation"] is True
        assert {"no_overlap", "clutter_on_relation"} <= set(val["pre_physics"]["required_checks"])
        containment = val["post_physics"]["checks"]["support_containment"]
        assert containment["passed"] is True
        assert containment["settings"]["minimum_resting_heights_m"] == heights
        assert val["post_physics"]["checks"]["pose_shift"]["passed"] is pose_shift
        assert val["post_physics"]["checks"]["physics_settled"]["passed"] is True
    layouts = _replay_round_trip(out, spec, 3, f"test_recorder_replay_{os.path.basename(spec)}")
    cubes = [layouts.index_of(k) for k in layouts.object_names if k.startswith("cube")]
    if support == "table":
        floor = torch.full((len(layouts),), 0.75)
    elif "bin" in layouts.object_names:  # relation-placed bin: its recorded pose varies per layout
        floor = layouts.position("bin")[:, 2] - 0.04
        assert float((layouts.position("bin")[:, :2] - layouts.position("bin")[0, :2]).abs().max()) > 1e-3
    else:
        floor = torch.full((len(layouts),), 0.80 - 0.04)
    assert bool((layouts.positions[:, cubes, 2] > floor[:, None]).all()), "a settled clutter root lies below its floor"


@pytest.mark.sim
def test_support_containment_rejects_clutter_below_the_minimum_resting_height(tmp_path):
    out = tmp_path / "too_high.jsonl"
    # The bin floor is at -0.04 m (local); a minimum resting height of +0.02 m puts every settled cube "below".
    result, console = _record_clutter(CLUTTER_BIN, out, support_containment={"minimum_resting_heights_m": {"bin": 0.02}})
    assert result.output is None and not out.exists()
    assert result.rejections == {"support_containment": result.attempted}
    assert any("support_containment" in l and "below the minimum resting height" in l for l in console)


@pytest.mark.sim
def test_physics_settled_rejects_clutter_that_is_still_falling(tmp_path):
    """One env step (2 physics steps, 1/60 s) after the release the clutter is still in free fall
    (about 9.81 m/s^2 x 1/60 s = 0.16 m/s > the 0.1 m/s limit): physics_settled rejects every layout."""
    out = tmp_path / "falling.jsonl"
    result, console = _record_clutter(CLUTTER_TABLE, out, num_steps=1, max_batches=1, min_layouts=3)
    assert result.output is None and not out.exists()
    assert result.attempted == 3 and result.accepted == 0
    assert result.rejections.get("physics_settled", 0) >= 3, result.rejections
    settled_lines = [l for l in console if l.startswith("Rejected ") and ": physics_settled: " in l]
    assert settled_lines and all("final linear speed" in l and "limits 0.1 m/s and 0.1 rad/s" in l
                                 for l in settled_lines), console
    speed = float(settled_lines[0].split("final linear speed ")[1].split(" m/s")[0])
    assert 0.1 < speed < 0.5, settled_lines[0]
    # The same scene given time to settle passes physics_settled (control).
    ok, _ = _record_clutter(CLUTTER_TABLE, tmp_path / "settled.jsonl", num_steps=90, max_batches=1,
                            min_layouts=3)
    assert "physics_settled" not in ok.rejections and ok.accepted >= 1


def test_container_without_a_minimum_resting_height_is_refused(tmp_path):
    from isaaclab_arena.offline_placement.recording_config import RecordingConfigError

    with pytest.raises(RecordingConfigError, match=r"support 'bin' has no verified flat rectangular top.*"
                                                   r"minimum_resting_heights_m\.bin"):
        _record_clutter(without_recording_block(CLUTTER_BIN, tmp_path), tmp_path / "no_height.jsonl")
    assert not (tmp_path / "no_height.jsonl").exists()


# ---- solver-side rejections --------------------------------------------------------------------------------------
def _launch_arena(arena_env, num_envs, gym_id):
    from isaaclab.app import launch_simulation

    from isaaclab_arena.environments.arena_env_builder import ArenaEnvBuilder, ArenaEnvBuilderCfg

    builder = ArenaEnvBuilder(arena_env, ArenaEnvBuilderCfg(num_envs=num_envs, env_spacing=3.0, gym_id=gym_id))
    env_cfg = builder.compose_manager_cfg()
    ctx = launch_simulation(env_cfg, {"headless": True, "device": "cpu"})
    ctx.__enter__()
    return builder.make_registered(env_cfg), ctx


@pytest.mark.sim
def test_failed_required_solver_checks_reject_without_stepping_physics(tmp_path):
    """Two 0.6 x 0.6 m slabs On a 1.2 x 0.8 m table (room 1.1 x 0.7 m inside the edge margins: enough area, 0.72 of
    0.77 m², so the footprint budget lets them through, but no side-by-side fit) never pass no_overlap and
    on_relation together; the
    pool's best-loss fallbacks are handed out and the recorder rejects them as ``solver validation failed``
    without settling."""
    import isaaclab.sim as sim_utils

    from isaaclab_arena.assets.asset import Object
    from isaaclab_arena.assets.object_reference import ObjectReference
    from isaaclab_arena.environments.isaaclab_arena_environment import IsaacLabArenaEnvironment
    from isaaclab_arena.offline_placement.recording import SettledPlacementParams
    from isaaclab_arena.offline_placement.recording_output import record_placements_to_jsonl
    from isaaclab_arena.relations.object_placer_params import ObjectPlacerParams
    from isaaclab_arena.relations.relations import IsAnchor, On
    from isaaclab_arena_environments.assets.library import table_background

    bg = table_background("table_background")
    table = ObjectReference("table", "{ENV_REGEX_NS}/table_background/table", bg, object_type="base")
    table.add_relation(IsAnchor())
    slabs = []
    for name in ("slab_a", "slab_b"):  # each fits on the table alone, both never fit side by side
        slab = Object(name, sim_utils.CuboidCfg(size=(0.6, 0.6, 0.05), rigid_props=sim_utils.UsdPhysicsRigidBodyCfg(),
                                                collision_props=sim_utils.UsdPhysicsCollisionCfg()))
        slab.add_relation(On(table))
        slabs.append(slab)
    params = ObjectPlacerParams(max_placement_attempts=1, min_unique_layouts_per_env=2)
    arena_env = IsaacLabArenaEnvironment("recorder_impossible", [bg, table, *slabs], placer_params=params)
    env, ctx = _launch_arena(arena_env, 2, "test_recorder_impossible")
    try:
        console = []
        out = tmp_path / "impossible.jsonl"
        result = record_placements_to_jsonl(env, out, min_layouts=1, max_batches=2,
                                            params=SettledPlacementParams(num_steps=10, log=console.append))
        assert result.output is None and not out.exists()
        assert result.rejections == {"solver validation failed": 4} and result.attempted == 4
        assert any(l.startswith("Rejected ") and ": solver validation failed: " in l and
                   ("no_overlap" in l or "on_relation" in l) for l in console), console
        assert not any(l.startswith("[placement]") for l in console), "physics ran although no layout passed"
        assert int(env.unwrapped.episode_length_buf.max()) == 0
    finally:
        _close(env, ctx)


@pytest.mark.sim
def test_unavailable_required_solver_check_rejects_as_missing(tmp_path):
    """``ik_reachable`` is required but cuRobo is absent here: its result is unavailable for every layout."""
    import dataclasses
    import warnings

    from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec
    from isaaclab_arena.offline_placement.recording import SettledPlacementParams
    from isaaclab_arena.offline_placement.recording_output import record_placements_to_jsonl

    arena_env = ArenaEnvGraphSpec.from_yaml(TABLE_SCENE).to_arena_env()
    arena_env.placer_params = dataclasses.replace(arena_env.placer_params, min_unique_layouts_per_env=2,
                                                  required_checks=["no_overlap", "on_relation", "ik_reachable"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env, ctx = _launch_arena(arena_env, 2, "test_recorder_missing")
    try:
        console = []
        result = record_placements_to_jsonl(env, tmp_path / "missing.jsonl", min_layouts=1, max_batches=1,
                                            params=SettledPlacementParams(num_steps=10, log=console.append))
        assert result.output is None
        assert result.rejections == {"missing required solver checks": 2}
        assert "Rejected 2: missing required solver checks: ik_reachable" in console
    finally:
        _close(env, ctx)


@pytest.mark.sim
def test_same_seed_records_the_same_file(tmp_path):
    """Same configuration and seed -> byte-identical recordings (CPU, OV PhysX)."""
    heights = {"support_containment": {"minimum_resting_heights_m": {"bin": -0.04}}}
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _record_clutter(CLUTTER_BIN, a, **heights)
    _record_clutter(CLUTTER_BIN, b, **heights)
    assert a.read_bytes() == b.read_bytes() and len(_lines(a)) == 4

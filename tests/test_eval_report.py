"""The evaluation report: binned success rates, joint factor effects (checked on synthetic data whose truth is
known), the self-contained HTML report and its CLI. Pure Python, no simulator."""

from __future__ import annotations

import base64
import json
import math
import os
import re

import numpy as np
import pytest

from isaaclab_arena.evaluation.factor_analysis import binned_success, joint_factor_effects
from isaaclab_arena.evaluation.report import load_records, main, render_report, write_report
from isaaclab_arena.evaluation.statistics import format_rate, success_summary, wilson_interval

FACTORS = ["object_x_m", "object_y_m", "object_yaw_rad", "object_distance_from_robot_m", "object_to_destination_m"]
OUTLINE = [{"name": "table", "min_xy": [-0.6, -0.4], "max_xy": [0.6, 0.4], "kind": "support"},
           {"name": "robot", "min_xy": [-0.95, -0.15], "max_xy": [-0.65, 0.15], "kind": "robot"}]


def _records(n: int, seed: int = 0, run: str = "scripted", success=None) -> list[dict]:
    """Synthetic pick-and-place records: success is likelier near the robot (or fixed by ``success``)."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        x, y, yaw = rng.uniform(-0.4, 0.4), rng.uniform(-0.3, 0.3), rng.uniform(-math.pi, math.pi)
        dist = math.hypot(x + 0.65, y)
        ok = bool(rng.random() < 1 / (1 + math.exp(-(2.0 - 6.0 * (dist - 0.65))))) if success is None else success
        out.append({
            "run": run, "episode": k, "policy": "scripted_pick_and_place", "env_id": k % 4, "draw_id": k // 4,
            "placement_seed": 7, "layout": {"source": "solver", "file": None, "index": k, "line": None},
            "fallback": k % 5 == 4,
            "poses_at_reset": {"pick_up_object": [x, y, 0.77, 0, 0, math.sin(yaw / 2), math.cos(yaw / 2)],
                               "bowl": [0.3, 0.1, 0.76, 0, 0, 0, 1], "robot": [-0.65, 0.0, 0.0, 0, 0, 0, 1]},
            "factors": {"object_x_m": x, "object_y_m": y, "object_yaw_rad": yaw, "object_distance_from_robot_m": dist,
                        "object_to_destination_m": math.hypot(x - 0.3, y - 0.1)},
            "success": ok, "termination": "success" if ok else "time_out", "episode_length_steps": 225,
            "episode_length_s": 3.75, "sim_seed": 42})
    return out


def _summary(records: list[dict], run: str = "scripted") -> dict:
    return {"run": run, "env": "franka_table_pick_and_place", "policy": "scripted_pick_and_place",
            "num_episodes": len(records), "rates": success_summary(records), "placement_seed": 7,
            "placement_seed_drawn": False, "factors": FACTORS, "scene_outline": OUTLINE,
            "reproduce": "scripts/arena_python.sh isaaclab_arena/scripts/evaluate.py --placement_seed 7",
            "object_key": "pick_up_object", "destination_key": "bowl"}


def _truth_records(n: int = 400, seed: int = 0) -> list[dict]:
    """Success driven by A only (logit 0.3 + 1.5 A); B correlated with A at 0.8 and no effect of its own."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(n)
    b = 0.8 * a + 0.6 * rng.standard_normal(n)
    y = rng.random(n) < 1 / (1 + np.exp(-(0.3 + 1.5 * a)))
    return [{"factors": {"A": float(a[i]), "B": float(b[i])}, "success": bool(y[i])} for i in range(n)]


# ---- binned success ---------------------------------------------------------------------------------------

def test_binned_success_quantile_bins_count_every_episode_with_wilson_intervals():
    recs = _records(100)
    bins = binned_success(recs, "object_x_m", bins=5)
    assert len(bins) == 5
    assert [b["episodes"] for b in bins] == [20] * 5  # quantile edges: equal-count bins
    assert sum(b["successes"] for b in bins) == sum(r["success"] for r in recs)
    for b in bins:
        assert b["lo"] <= b["centre"] <= b["hi"]
        assert b["success_rate"] == b["successes"] / b["episodes"]
        lo, hi = wilson_interval(b["successes"], b["episodes"])
        assert b["wilson_95"] == [round(lo, 6), round(hi, 6)]
    assert [b["lo"] for b in bins] == sorted(b["lo"] for b in bins)


def test_binned_success_few_distinct_values_get_one_bin_each_and_missing_values_are_skipped():
    recs = [{"factors": {"f": v}, "success": s} for v, s in [(1, True), (1, False), (2, True), (3, True), (3, True)]]
    recs += [{"factors": {}, "success": True}, {"factors": {"f": float("nan")}, "success": False}]
    bins = binned_success(recs, "f", bins=5)
    assert [(b["lo"], b["hi"], b["episodes"], b["successes"]) for b in bins] == [(1, 1, 2, 1), (2, 2, 1, 1), (3, 3, 2, 2)]
    assert binned_success(recs, "unknown") == []
    with pytest.raises(ValueError, match="bins"):
        binned_success(recs, "f", bins=0)


def test_one_at_a_time_bins_show_a_trend_for_both_correlated_factors():
    recs = _truth_records()
    for f in ("A", "B"):
        bins = binned_success(recs, f)
        assert bins[-1]["success_rate"] - bins[0]["success_rate"] > 0.3, f  # B looks as if it mattered


# ---- joint factor effects ----------------------------------------------------------------------------------

def test_joint_model_credits_the_driving_factor_not_its_correlated_companion():
    res = joint_factor_effects(_truth_records(), ["A", "B"])
    assert res["status"] == "ok"
    a, b = res["effects"]
    assert a["factor"] == "A" and a["coef"] > 0 and a["ci95"][0] > 0 and not a["weak"]
    assert a["direction"] == "higher A goes with success"
    assert b["factor"] == "B" and b["ci95"][0] < 0 < b["ci95"][1] and b["weak"]
    assert "weak evidence" in b["direction"]
    assert a["odds_ratio"] == pytest.approx(math.exp(a["coef"]), rel=1e-5)
    assert a["correlated_with"][0]["factor"] == "B" and a["correlated_with"][0]["r"] > 0.7
    assert "clear effect(s): A" in res["message"]


def test_joint_model_sign_of_a_failure_driving_factor_and_fit_is_the_penalised_optimum():
    recs = [dict(r, success=not r["success"]) for r in _truth_records(seed=3)]
    res = joint_factor_effects(recs, ["A", "B"])
    assert res["effects"][0]["ci95"][1] < 0 and res["effects"][0]["direction"] == "higher A goes with failure"
    # gradient of the penalised log-likelihood is zero at the reported coefficients
    X = np.array([[r["factors"]["A"], r["factors"]["B"]] for r in recs])
    Z = (X - X.mean(0)) / X.std(0)
    y = np.array([r["success"] for r in recs], dtype=float)
    beta = np.array([res["intercept"]] + [e["coef"] for e in res["effects"]])
    A = np.column_stack([np.ones(len(y)), Z])
    mu = 1 / (1 + np.exp(-A @ beta))
    grad = A.T @ (y - mu) - res["l2"] * np.r_[0.0, beta[1:]]
    assert np.abs(grad).max() < 1e-3


def test_joint_model_is_deterministic():
    recs = _records(80, seed=5)
    assert joint_factor_effects(recs, FACTORS) == joint_factor_effects(list(recs), list(FACTORS))


@pytest.mark.parametrize("outcome, word", [(True, "succeeded"), (False, "failed")])
def test_joint_model_all_success_or_all_failure_says_no_variation(outcome, word):
    res = joint_factor_effects(_records(30, success=outcome), FACTORS)
    assert res["status"] == "no_variation" and res["effects"] == []
    assert "no variation in outcome" in res["message"] and word in res["message"]


def test_joint_model_drops_constant_and_collinear_factors_and_says_so():
    recs = _truth_records(200)
    for r in recs:
        r["factors"]["C"] = 0.5
        r["factors"]["A2"] = 2 * r["factors"]["A"] - 1
    res = joint_factor_effects(recs, ["A", "C", "A2", "B"])
    assert [e["factor"] for e in res["effects"]] == ["A", "B"]
    reasons = {d["factor"]: d["reason"] for d in res["dropped"]}
    assert reasons["C"].startswith("constant") and "collinear with A" in reasons["A2"]
    only_constant = joint_factor_effects(recs, ["C"])
    assert only_constant["status"] == "no_factors" and only_constant["dropped"]


def test_joint_model_few_episodes_and_perfect_separation_stay_finite_and_say_weak():
    few = [{"factors": {"f": float(v), "g": float(v * v)}, "success": v > 2} for v in range(5)]  # separable
    res = joint_factor_effects(few, ["f", "g"])
    assert res["status"] == "ok"
    for e in res["effects"]:
        assert all(math.isfinite(v) for v in (e["coef"], e["se"], *e["ci95"], e["odds_ratio"], *e["odds_ratio_ci95"]))
    assert any("fewer than 10" in n for n in res["notes"])
    tiny = joint_factor_effects([{"factors": {"f": 0.0}, "success": True}, {"factors": {"f": 1.0}, "success": False}], ["f"])
    assert tiny["effects"][0]["weak"] and "spans 0" in tiny["effects"][0]["direction"]


def test_joint_model_without_episodes_or_factors():
    assert joint_factor_effects([], FACTORS)["status"] == "no_episodes"
    assert joint_factor_effects(_records(10), [])["status"] == "no_factors"
    with pytest.raises(ValueError, match="l2"):
        joint_factor_effects(_records(10), FACTORS, l2=0)


# ---- the HTML report -------------------------------------------------------------------------------------

def _imgs(html: str) -> list[str]:
    return re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)


def test_write_report_one_run_self_contained_with_rates_intervals_and_figures(tmp_path):
    recs = _records(60)
    path = write_report(str(tmp_path / "report.html"), [{"summary": _summary(recs), "records": recs}])
    assert os.listdir(tmp_path) == ["report.html"]  # no temporary file left beside it
    html = open(path).read()
    rates = success_summary(recs)
    a = rates["all"]
    assert f"{a['success_rate']:.3f}" in html and "[{:.3f}, {:.3f}]".format(*a["wilson_95"]) in html
    for part in ("clean", "fallback"):
        assert "[{:.3f}, {:.3f}]".format(*rates[part]["wilson_95"]) in html
    imgs = _imgs(html)
    assert len(imgs) == 1 + len(FACTORS)  # top-down picture + one per factor
    assert html.count("<img") == len(imgs)
    for img in imgs:
        assert base64.b64decode(img).startswith(b"\x89PNG")
    assert "--placement_seed 7" in html and "Joint factor effects" in html
    assert "odds ratio per SD" in html and "object_distance_from_robot_m" in html
    assert "<script" not in html and "http" not in html  # nothing fetched from elsewhere


def test_write_report_escapes_names_from_records(tmp_path):
    recs = _records(20, run="<script>alert(1)</script>")
    summary = dict(_summary(recs, run="<script>alert(1)</script>"), policy="p&q",
                   scene_outline=[dict(OUTLINE[0], name="$table<b>")])
    html = open(write_report(str(tmp_path / "r.html"), [{"summary": summary, "records": recs}])).read()
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "p&amp;q" in html


def test_write_report_experiment_comparison_table_first(tmp_path):
    runs = [{"summary": _summary(r := _records(40, seed=s, run=name), run=name), "records": r}
            for s, name in ((1, "policy_a"), (2, "policy_b"))]
    html = open(write_report(str(tmp_path / "r.html"), runs, title="A vs B")).read()
    assert html.index("Runs compared") < html.index("Run policy_a") < html.index("Run policy_b")
    for run in runs:
        assert format_rate(success_summary(run["records"])["all"]) in html
    assert len(_imgs(html)) == 1 + 2 * (1 + len(FACTORS))  # comparison figure + each run's
    assert "<title>A vs B</title>" in html


def test_all_success_zero_episode_and_no_factor_runs_render(tmp_path):
    ok = _records(12, success=True)
    runs = [{"summary": _summary(ok, run="all_ok"), "records": ok},
            {"summary": dict(_summary([], run="empty"), rates=None), "records": []},
            {"summary": dict(_summary(ok, run="nofactors"), factors=[]), "records": ok}]
    html = open(write_report(str(tmp_path / "r.html"), runs)).read()
    assert "no variation in outcome: all 12 episode(s) succeeded" in html
    assert format_rate(success_summary(ok)["all"]) in html and "[0.758, 1.000]" in html
    assert "No episodes in this run" in html and "No factors were recorded" in html
    assert os.listdir(tmp_path) == ["r.html"]
    assert "Evaluation report" in render_report([{"summary": {}, "records": []}])


def test_a_failed_render_leaves_no_file(tmp_path):
    with pytest.raises(ValueError, match="run 1"):
        write_report(str(tmp_path / "r.html"), ["not a run"])
    assert os.listdir(tmp_path) == []


# ---- load_records and the CLI ------------------------------------------------------------------------------

def _write_jsonl(path, records, extra_lines=()):
    with open(path, "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
        f.write("\n")
        for line in extra_lines:
            f.write(line + "\n")


def test_load_records_reads_lines_and_refuses_a_bad_one_naming_it(tmp_path):
    recs = _records(3)
    path = tmp_path / "episodes.jsonl"
    _write_jsonl(path, recs)
    assert load_records(str(path)) == json.loads(json.dumps(recs))
    _write_jsonl(path, recs, ["{not json"])
    with pytest.raises(ValueError, match=re.escape(f"{path}:5:")):  # 3 records, a blank line, the bad one
        load_records(str(path))
    _write_jsonl(path, recs, ["[1, 2]"])
    with pytest.raises(ValueError, match=re.escape(f"{path}:5: an episode record must be a JSON object")):
        load_records(str(path))
    _write_jsonl(path, recs, ['{"episode": 3}'])
    with pytest.raises(ValueError, match=re.escape(f"{path}:5:") + ".*success"):
        load_records(str(path))


def test_cli_renders_from_records_and_summary_and_refuses_bad_input(tmp_path, capsys):
    recs = _records(25)
    _write_jsonl(tmp_path / "episodes.jsonl", recs)
    (tmp_path / "eval_summary.json").write_text(json.dumps(_summary(recs)))
    out = tmp_path / "out" / "report.html"
    assert main([str(tmp_path / "episodes.jsonl"), "--summary", str(tmp_path / "eval_summary.json"),
                 "--output", str(out)]) == 0
    assert len(_imgs(out.read_text())) == 1 + len(FACTORS)
    assert main([str(tmp_path / "episodes.jsonl"), "--output", str(tmp_path / "bare.html")]) == 0
    assert "Run scripted" in (tmp_path / "bare.html").read_text()
    _write_jsonl(tmp_path / "bad.jsonl", recs, ["oops"])
    assert main([str(tmp_path / "bad.jsonl"), "--output", str(tmp_path / "x.html")]) == 2
    assert "bad.jsonl:27:" in capsys.readouterr().err
    assert not (tmp_path / "x.html").exists()

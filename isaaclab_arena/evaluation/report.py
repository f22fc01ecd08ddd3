"""One self-contained HTML report of an evaluation run, or of an experiment's runs side by side.

:func:`write_report` writes a single HTML file (figures are base64 PNGs inside it; no script, no external file)
through a temporary file beside it and one rename, so a reader never sees half a report. Per run: the success
rate with its 95 % Wilson interval, clean against fallback layouts, the seeds and the command that reproduces
the run, a top-down picture of the table with every episode's object start (green success, red failure),
success against each factor (binned) and the factors' joint effects (``factor_analysis.py``). Several runs
get a comparison table first. Every text taken from records or summaries is HTML-escaped.

Re-render from files::

    python -m isaaclab_arena.evaluation.report episodes.jsonl [--summary eval_summary.json] --output report.html
"""

from __future__ import annotations

import base64
import io
import json
import math
import sys

import jinja2

from isaaclab_arena.evaluation.episode_records import write_text_atomic
from isaaclab_arena.evaluation.factor_analysis import binned_success, factor_unit, joint_factor_effects
from isaaclab_arena.evaluation.statistics import format_rate, success_summary

SUCCESS_COLOUR, FAILURE_COLOUR, DEST_COLOUR = "#1a9850", "#d73027", "#7f7f7f"
OUTLINE_COLOURS = {"support": "#e3d3b5", "robot": "#b7d3ea"}

TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.6em 0}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left}
th{background:#f3f3f3}td.n{text-align:right;font-variant-numeric:tabular-nums}
.headline{font-size:1.3em;margin:.4em 0}.note{color:#8a5a00}.muted{color:#666}
pre{background:#f6f6f6;padding:.6em;white-space:pre-wrap;word-break:break-all}
.figs{display:flex;flex-wrap:wrap;gap:.6em}img{max-width:100%}section{border-top:2px solid #ddd;margin-top:2em}
</style></head><body>
<h1>{{ title }}</h1>
{% if runs|length > 1 %}
<h2>Runs compared</h2>
<table><tr><th>run</th><th>env</th><th>policy</th><th>episodes</th><th>success rate [95 % interval]</th>
<th>clean layouts</th><th>fallback layouts</th><th>placement seed</th></tr>
{% for r in runs %}<tr><td><a href="#{{ r.anchor }}">{{ r.name }}</a></td><td>{{ r.env }}</td><td>{{ r.policy }}</td>
<td class="n">{{ r.episodes }}</td><td>{{ r.rates[0].text }}</td><td>{{ r.rates[1].text }}</td><td>{{ r.rates[2].text }}</td>
<td>{{ r.seed }}</td></tr>{% endfor %}</table>
{% if comparison %}<img src="{{ comparison }}" alt="success rate of each run with its 95 % interval">{% endif %}
{% endif %}
{% for r in runs %}<section id="{{ r.anchor }}">
<h2>Run {{ r.name }}</h2>
<p class="muted">env {{ r.env }} &middot; policy {{ r.policy }} &middot; {{ r.episodes }} episode(s)</p>
{% if r.episodes %}
<p class="headline">Success rate <b>{{ r.headline.rate }}</b> ({{ r.headline.successes }}/{{ r.headline.episodes }}),
95 % interval <b>{{ r.headline.ci }}</b></p>
{% else %}<p class="headline">No episodes in this run: no success rate.</p>{% endif %}
<table><tr><th>layouts</th><th>episodes</th><th>successes</th><th>success rate</th><th>95 % Wilson interval</th></tr>
{% for b in r.rates %}<tr><td>{{ b.label }}</td><td class="n">{{ b.episodes }}</td><td class="n">{{ b.successes }}</td>
<td class="n">{{ b.rate }}</td><td>{{ b.ci }}</td></tr>{% endfor %}</table>
<p class="muted">Clean: the layout passed every placement check. Fallback: the best-loss layout kept although it
failed a check; a gap between the two rates points at the layouts rather than the policy.</p>
{% if r.terminations %}<p>Episodes ended by: {% for name, count in r.terminations %}{{ name }} {{ count }}{{ ", " if not loop.last }}{% endfor %}</p>{% endif %}
<p>Placement seed: <b>{{ r.seed }}</b>{% if r.sim_seeds %} &middot; sim seed(s): {{ r.sim_seeds }}{% endif %}</p>
{% if r.reproduce %}<p>Reproduce:</p><pre><code>{{ r.reproduce }}</code></pre>{% endif %}
<h3>Where the object started</h3>
{% if r.top_down %}<img src="{{ r.top_down }}" alt="top-down view of object start positions">
<p class="muted">Env-local x/y in metres, seen from above. Each mark is one episode's object at reset: green
circle success, red cross failure{% if r.has_fallback %}, black square around it a fallback layout{% endif %};
small grey diamonds are the destination's positions.</p>
{% else %}<p class="note">{{ r.top_down_note }}</p>{% endif %}
<h3>Success against each factor (one at a time)</h3>
{% if r.factor_figs %}<div class="figs">{% for f in r.factor_figs %}<img src="{{ f.img }}" alt="success against {{ f.factor }}">{% endfor %}</div>
<p class="muted">Episodes binned by the factor's value (equal-count bins); bars are 95 % Wilson intervals,
horizontal bars the bin's range. One factor at a time: a factor that merely moves with another shows its trend too;
the joint effects below tell them apart.</p>
{% else %}<p class="note">{{ r.factor_note }}</p>{% endif %}
<h3>Joint factor effects (all factors together)</h3>
{% set e = r.effects %}
{% if e.status == "ok" %}
<p>{{ e.message }}</p>
<table><tr><th>factor</th><th>coefficient (log-odds per SD)</th><th>95 % interval</th><th>odds ratio per SD [95 %]</th>
<th>1 SD is</th><th>direction</th><th>correlated with</th></tr>
{% for x in e.effects %}<tr><td>{{ x.factor }}</td><td class="n">{{ "%+.3f"|format(x.coef) }}</td>
<td>[{{ "%+.3f"|format(x.ci95[0]) }}, {{ "%+.3f"|format(x.ci95[1]) }}]</td>
<td>{{ "%.2f"|format(x.odds_ratio) }} [{{ "%.2f"|format(x.odds_ratio_ci95[0]) }}, {{ "%.2f"|format(x.odds_ratio_ci95[1]) }}]</td>
<td>{{ "%.3g"|format(x.sd) }} {{ x.unit }}</td><td{% if x.weak %} class="note"{% endif %}>{{ x.direction }}</td>
<td>{% for c in x.correlated_with %}{{ c.factor }} (r {{ "%.2f"|format(c.r) }}){{ ", " if not loop.last }}{% endfor %}</td></tr>{% endfor %}</table>
{% else %}<p class="note">{{ e.message }}</p>{% endif %}
{% for d in e.dropped %}<p class="note">Left out: {{ d.factor }}: {{ d.reason }}.</p>{% endfor %}
{% for n in e.notes %}<p class="note">Note: {{ n }}.</p>{% endfor %}
<p class="muted">{{ e.method }}; L2 penalty {{ e.l2 }}. A coefficient is the change in log-odds of success for one
standard deviation more of the factor, the other factors held fixed; an odds ratio above 1 goes with success,
below 1 with failure. An interval that spans 0 (odds ratio 1) is weak evidence. Association, not cause.</p>
</section>{% endfor %}
</body></html>
"""

_ENV = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)


def load_records(path: str) -> list[dict]:
    """Episode records of a JSONL file: one JSON object per nonblank line, each with a ``success``; a line
    that is not one is refused (``ValueError``) naming ``path:line``."""
    from isaaclab_arena.evaluation.episode_records import read_records

    out = read_records(path)
    for n, rec in enumerate(out, 1):
        if not isinstance(rec.get("success"), bool):
            line = _record_line(path, n)
            raise ValueError(f"{path}:{line}: an episode record needs 'success': true or false")
    return out


def _record_line(path: str, index: int) -> int:
    """The file line of the ``index``-th (1-based) nonblank line."""
    with open(path) as f:
        seen = 0
        for n, line in enumerate(f, 1):
            seen += bool(line.strip())
            if seen == index:
                return n
    return index


def _mpl_text(s) -> str:
    """Text for a matplotlib label, with ``$`` escaped (no mathtext from names)."""
    return str(s).replace("$", r"\$")


def _png(fig) -> str:
    """A ``data:image/png;base64,...`` URI of a matplotlib figure."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight", metadata={"Software": None})
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _xy(pose) -> tuple[float, float] | None:
    if isinstance(pose, (list, tuple)) and len(pose) >= 2:
        x, y = pose[0], pose[1]
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in (x, y)):
            return float(x), float(y)
    return None


def _object_key(summary: dict, records: list[dict]) -> str | None:
    if summary.get("object_key"):
        return summary["object_key"]
    keys = [k for r in records for k in (r.get("poses_at_reset") or {})]
    if "pick_up_object" in keys:
        return "pick_up_object"
    others = [k for k in dict.fromkeys(keys) if k != (summary.get("robot_key") or "robot")]
    return others[0] if others else None


def _top_down(summary: dict, records: list[dict]) -> tuple[str | None, str]:
    """(figure URI or None, note) of the object start positions on the scene's outline."""
    if not records:
        return None, "No episodes in this run: no start positions to draw."
    okey, dkey = _object_key(summary, records), summary.get("destination_key")
    starts = [(p, bool(r.get("success")), bool(r.get("fallback"))) for r in records
              if (p := _xy((r.get("poses_at_reset") or {}).get(okey))) is not None]
    if not starts:
        return None, f"The records hold no start position of the object ({okey or 'unknown key'}): nothing to draw."
    dests = sorted({(round(p[0], 4), round(p[1], 4)) for r in records
                    if dkey and (p := _xy((r.get("poses_at_reset") or {}).get(dkey))) is not None})
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    fig = Figure(figsize=(7.0, 5.6))
    ax = fig.add_subplot()
    xs, ys = [p[0][0] for p in starts], [p[0][1] for p in starts]
    for box in summary.get("scene_outline") or []:
        lo, hi = _xy(box.get("min_xy")), _xy(box.get("max_xy"))
        if lo is None or hi is None:
            continue
        colour = OUTLINE_COLOURS.get(box.get("kind"), "#dddddd")
        ax.add_patch(Rectangle(lo, hi[0] - lo[0], hi[1] - lo[1], facecolor=colour, edgecolor="#555555",
                               lw=1.2, zorder=0))
        ax.text(lo[0] + 0.01, hi[1] - 0.01, _mpl_text(box.get("name", "")), ha="left", va="top", fontsize=9,
                color="#333333", zorder=1)
        xs += [lo[0], hi[0]]
        ys += [lo[1], hi[1]]
    rkey = summary.get("robot_key") or "robot"
    robots = sorted({(round(p[0], 4), round(p[1], 4)) for r in records
                     if (p := _xy((r.get("poses_at_reset") or {}).get(rkey))) is not None})
    if robots and not any(b.get("kind") == "robot" for b in summary.get("scene_outline") or []):
        ax.scatter([p[0] for p in robots], [p[1] for p in robots], s=60, marker="^", color="#3c6e9f",
                   label="robot base", zorder=2)
        xs += [p[0] for p in robots]
        ys += [p[1] for p in robots]
    if dests:
        ax.scatter([d[0] for d in dests], [d[1] for d in dests], s=20, marker="D", color=DEST_COLOUR, edgecolors="white", linewidths=0.5,
                   label=_mpl_text(f"destination ({dkey})"), zorder=5)
        xs += [d[0] for d in dests]
        ys += [d[1] for d in dests]
    for ok, colour, marker, word in ((True, SUCCESS_COLOUR, "o", "success"), (False, FAILURE_COLOUR, "x", "failure")):
        pts = [p for p, s, _ in starts if s == ok]
        if pts:
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=30, marker=marker, color=colour, lw=1.6,
                       label=f"{word} ({len(pts)})", zorder=3)
    fb = [p for p, _, f in starts if f]
    if fb:
        ax.scatter([p[0] for p in fb], [p[1] for p in fb], s=90, marker="s", facecolors="none",
                   edgecolors="black", lw=0.8, label=f"fallback layout ({len(fb)})", zorder=4)
    pad = 0.05 * max(max(xs) - min(xs), max(ys) - min(ys), 0.2)
    ax.set_xlim(min(xs) - pad, max(xs) + pad)
    ax.set_ylim(min(ys) - pad, max(ys) + pad)
    ax.set_aspect("equal", adjustable="box")
    ax.set_xlabel("x (metres, env-local)")
    ax.set_ylabel("y (metres, env-local)")
    ax.set_title(_mpl_text(f"{okey} start positions, seen from above"))
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return _png(fig), ""


def _factor_png(records: list[dict], factor: str, overall: float | None) -> str | None:
    bins = binned_success(records, factor)
    if not bins:
        return None
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4.3, 3.1))
    ax = fig.add_subplot()
    x = [b["centre"] for b in bins]
    y = [b["success_rate"] for b in bins]
    yerr = [[b["success_rate"] - b["wilson_95"][0] for b in bins], [b["wilson_95"][1] - b["success_rate"] for b in bins]]
    xerr = [[max(0.0, b["centre"] - b["lo"]) for b in bins], [max(0.0, b["hi"] - b["centre"]) for b in bins]]
    ax.errorbar(x, y, yerr=yerr, xerr=xerr, fmt="o", color="#2c7bb6", ecolor="#2c7bb6", elinewidth=1, capsize=3)
    for b in bins:
        ax.annotate(f"n={b['episodes']}", (b["centre"], b["wilson_95"][0]), textcoords="offset points",
                    xytext=(0, -10), ha="center", fontsize=7, color="#555555")
    if overall is not None:
        ax.axhline(overall, ls="--", lw=1, color=DEST_COLOUR, label=f"all episodes {overall:.2f}")
        ax.legend(fontsize=7, loc="lower right", frameon=False)
    unit = factor_unit(factor)
    ax.set_xlabel(_mpl_text(f"{factor} ({unit})" if unit else factor))
    ax.set_ylabel("success rate (95 % Wilson)")
    ax.set_ylim(-0.12, 1.05)
    ax.grid(alpha=0.3)
    return _png(fig)


def _comparison_png(views: list[dict]) -> str:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.5, 0.45 * len(views) + 1.2))
    ax = fig.add_subplot()
    for i, v in enumerate(views):
        b = v["blocks"]["all"]
        if b["episodes"]:
            lo, hi = b["wilson_95"]
            rate = b["success_rate"]
            ax.errorbar([rate], [i], xerr=[[rate - lo], [hi - rate]], fmt="o", color="#2c7bb6", capsize=3)
    ax.set_yticks(range(len(views)), [_mpl_text(v["name"]) for v in views])
    ax.invert_yaxis()
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel("success rate (95 % Wilson interval)")
    ax.grid(alpha=0.3, axis="x")
    return _png(fig)


def _fmt_block(label: str, b: dict) -> dict:
    rate = "-" if b.get("success_rate") is None else f"{b['success_rate']:.3f}"
    lo, hi = b.get("wilson_95", [0.0, 1.0])
    return {"label": label, "episodes": b.get("episodes", 0), "successes": b.get("successes", 0), "rate": rate,
            "ci": f"[{lo:.3f}, {hi:.3f}]" if b.get("episodes") else "-", "text": format_rate(b)}


def _factor_names(summary: dict, records: list[dict]) -> list[str]:
    if isinstance(summary.get("factors"), list):
        return [str(f) for f in summary["factors"]]
    return list(dict.fromkeys(k for r in records for k in (r.get("factors") or {})))


def _run_view(i: int, run) -> dict:
    if not isinstance(run, dict):
        raise ValueError(f"write_report: run {i + 1} must be a dict with 'summary' and 'records'")
    summary, records = run.get("summary") or {}, list(run.get("records") or [])
    if not isinstance(summary, dict):
        raise ValueError(f"write_report: run {i + 1}: 'summary' must be a dict")
    for n, r in enumerate(records):
        if not isinstance(r, dict) or not isinstance(r.get("success"), bool):
            raise ValueError(f"write_report: run {i + 1}, record {n}: an episode record is a dict with 'success'")
    first = records[0] if records else {}
    blocks = success_summary(records) if records else (summary.get("rates") or success_summary([]))
    blocks = {k: blocks.get(k) or success_summary([])[k] for k in ("all", "clean", "fallback")}
    seed = summary.get("placement_seed", first.get("placement_seed"))
    seed_text = "unknown" if seed is None else f"{seed}" + (" (drawn at random)" if summary.get("placement_seed_drawn") else "")
    sim_seeds = sorted({r["sim_seed"] for r in records if isinstance(r.get("sim_seed"), int)})
    terminations = {}
    for r in records:
        terminations[str(r.get("termination", "unknown"))] = terminations.get(str(r.get("termination", "unknown")), 0) + 1
    factors = _factor_names(summary, records)
    overall = blocks["all"]["success_rate"]
    figs = [{"factor": f, "img": img} for f in factors if records and (img := _factor_png(records, f, overall))]
    factor_note = ("No factors were recorded for this run: nothing to plot." if not factors else
                   "No episodes in this run: nothing to plot." if not records else
                   "No record holds a value of these factors: nothing to plot.")
    top_down, top_note = _top_down(summary, records)
    a = blocks["all"]
    return {
        "anchor": f"run-{i + 1}", "name": str(summary.get("run") or first.get("run") or f"run {i + 1}"),
        "env": str(summary.get("env") or "-"), "policy": str(summary.get("policy") or first.get("policy") or "-"),
        "episodes": len(records) if records else a["episodes"], "blocks": blocks,
        "headline": {"rate": "-" if a["success_rate"] is None else f"{a['success_rate']:.3f}",
                     "successes": a["successes"], "episodes": a["episodes"],
                     "ci": "[{:.3f}, {:.3f}]".format(*a["wilson_95"])},
        "rates": [_fmt_block(label, blocks[k]) for k, label in
                  (("all", "all"), ("clean", "clean"), ("fallback", "fallback (best-loss)"))],
        "terminations": sorted(terminations.items(), key=lambda kv: (-kv[1], kv[0])),
        "seed": seed_text, "sim_seeds": ", ".join(str(s) for s in sim_seeds),
        "reproduce": summary.get("reproduce") or "", "has_fallback": any(r.get("fallback") for r in records),
        "top_down": top_down, "top_down_note": top_note, "factor_figs": figs, "factor_note": factor_note,
        "effects": joint_factor_effects(records, factors),
    }


def render_report(runs: list[dict], title: str | None = None) -> str:
    """The report's HTML text (what :func:`write_report` writes)."""
    if isinstance(runs, dict):
        runs = [runs]
    views = [_run_view(i, run) for i, run in enumerate(runs)]
    if title is None:
        title = (f"Evaluation report: {views[0]['name']}" if len(views) == 1 else
                 f"Evaluation report: {len(views)} runs" if views else "Evaluation report (no runs)")
    comparison = _comparison_png(views) if len(views) > 1 else None
    return _ENV.from_string(TEMPLATE).render(title=title, runs=views, comparison=comparison)


def write_report(path: str, runs: list[dict], title: str | None = None) -> str:
    """Writes the HTML report of ``runs`` (``[{"summary": dict, "records": [record, ...]}, ...]``; one run or an
    experiment's several) to ``path``, whole or not at all (rendered in memory, then a temporary file beside
    ``path`` and one ``os.replace``); returns ``path``."""
    return write_text_atomic(path, render_report(runs, title))


def _runs_of(records: list[dict]) -> list[dict]:
    """Records split by their ``run`` name (in first-seen order), each with a summary built from them."""
    groups: dict[str, list[dict]] = {}
    for r in records:
        groups.setdefault(str(r.get("run") or "run"), []).append(r)
    return [{"summary": {"run": name}, "records": recs} for name, recs in groups.items()] or [
        {"summary": {}, "records": []}]


def main(argv=None) -> int:
    from isaaclab_arena.utils.arena_argparse import ArenaArgumentParser

    parser = ArenaArgumentParser(prog="python -m isaaclab_arena.evaluation.report",
                                 description="Re-render the HTML report of episode records.")
    parser.add_argument("records", help="episodes.jsonl (one JSON episode record per line)")
    parser.add_argument("--summary", default=None, help="the run's eval_summary.json (without it the records "
                        "are split by their 'run' name, and the outline, seed command and roles are unknown)")
    parser.add_argument("--output", required=True, help="the HTML file to write (overwritten)")
    parser.add_argument("--title", default=None)
    args = parser.parse_args(argv)
    try:
        records = load_records(args.records)
        if args.summary:
            with open(args.summary) as f:
                try:
                    summary = json.load(f)
                except json.JSONDecodeError as err:
                    raise ValueError(f"{args.summary}: not JSON ({err.msg}, line {err.lineno})") from None
            if not isinstance(summary, dict):
                raise ValueError(f"{args.summary}: a run summary must be a JSON object")
            runs = [{"summary": summary, "records": records}]
        else:
            runs = _runs_of(records)
        write_report(args.output, runs, title=args.title)
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"wrote {args.output}")
    return 0


__all__ = ["load_records", "main", "render_report", "write_report"]


if __name__ == "__main__":
    sys.exit(main())


"""The placement debug view: every candidate batch the placer solves, logged to Rerun.

``ObjectPlacer`` opens it when ``ObjectPlacerParams.debug_visualize`` or ``debug_visualize_output_path`` is
set and the placer was built with ``debug/extension.py::DEBUG_VIEW`` (in the default set; the core never imports
rerun); with neither set nothing here runs.
Where it goes: ``debug_visualize_output_path`` -> that ``.rrd`` file; else a display (``DISPLAY`` /
``WAYLAND_DISPLAY``) -> the Rerun viewer opens; else ``placement_debug.rrd`` in the working directory.

Entities (batch k of this placer as ``batch_k``, e.g. ``batch_000``; env-local metres):

- ``placement/batch_k/anchors/<name>``: fixed objects (anchors, passive obstacles), grey boxes.
- ``placement/batch_k/objects/<name>``: placed objects, blue oriented boxes.
- ``placement/batch_k/regions/<rid>_<role>``: support regions (On / ClutterOn top faces), keep-out regions
  (NotNextTo, a cylinder's inner radius) and position limits; drawn red in a candidate that violates them.
- ``placement/batch_k/relations/<rid>``: one segment per relation from the subject to what it relates to,
  green where the relation holds, red (labelled with its cause and violation) where it fails.
- ``placement/batch_k/overlap``: the worst overlapping (or too close) pair of a candidate that failed
  ``no_overlap`` / ``clearance``, red.
- ``placement/batch_k/grasps``: grasp points of ``RequiresReachability`` objects when ``ik_reachable`` ran:
  green reachable, red unreachable, grey not evaluated.
- ``placement/batch_k/candidate``: the candidate's values: ``env_id``, ``draw_id``, ``loss``,
  ``iterations``, ``passed``, ``check.<name>`` verdicts, ``violation_m`` (one per relation, metres),
  ``causes`` (the rejection causes of this candidate).
- ``placement/batch_k/overview/<name>``: every candidate's final position of each object at once, green
  where the candidate passed, red where it failed.
- ``checks/batch_k/<check>``: 1 pass / 0 fail per candidate (a plot over the ``candidate`` timeline).
- ``solver/batch_k/loss/{mean,min,max,candidates}``: the loss per solver iteration (every 10 iterations,
  recomputed from ``save_position_history``, which the view turns on); ``trajectory/batch_k/<name>``:
  each object's position in every candidate at those iterations.
- ``summary``: the diagnostics of the batch at the time cursor (the console summary and its rejection causes);
  ``candidate_loss``: the loss of the candidate at the time cursor every 10 solver iterations (a bar chart).

Timelines: ``candidate`` (one step per candidate, consecutive over batches; a batch's 3D entities are
cleared when the next batch starts) and ``iteration`` (solver iterations).
"""

from __future__ import annotations

import logging
import os

import numpy as np

from isaaclab_arena.debug import view_geometry as geo
from isaaclab_arena.debug.rerun_import import import_rerun, viewer_executable
from isaaclab_arena.relations.markers import RequiresReachability
from isaaclab_arena.relations.diagnostics.placement_diagnostics import PAIR_CHECKS, batch_diagnostics, rejection_records
from isaaclab_arena.relations.validation.results import ValidatedBatch

logger = logging.getLogger(__name__)

APPLICATION_ID = "isaaclab_arena_placement"
DEFAULT_RRD = "placement_debug.rrd"
IK_CHECK = "ik_reachable"
GREY, BLUE = (150, 150, 150, 255), (60, 110, 230, 255)
GREEN, RED, ORANGE = (40, 190, 90, 255), (230, 40, 40, 255), (255, 150, 0, 255)
REGION_OK = {"support": (90, 200, 120, 90), "keep_out": (255, 150, 0, 90), "limits": (120, 160, 255, 60)}
REGION_BAD = (230, 40, 40, 140)


def open_view(params) -> "PlacementDebugView":
    """The view for ``ObjectPlacerParams`` ``params`` (raises ``DebugViewerUnavailableError`` without rerun)."""
    return PlacementDebugView(params)


def _has_display() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _colors(ok: np.ndarray, good, bad) -> np.ndarray:
    return np.where(ok[..., None], np.asarray(good, np.uint8), np.asarray(bad, np.uint8)).astype(np.uint8)


def _tile(color, n: int) -> np.ndarray:
    return np.tile(np.asarray(color, np.uint8), (n, 1))


class PlacementDebugView:
    """Logs candidate batches to one Rerun recording (a file or a spawned viewer).

    Attributes:
        path: The ``.rrd`` file written, or None when a viewer was spawned.
        batches: Batches logged so far.
    """

    def __init__(self, params):
        self.rr = import_rerun()
        self.params = params
        self.rec = self.rr.RecordingStream(APPLICATION_ID)
        self.path = params.debug_visualize_output_path
        if self.path is None and _has_display():
            self.rec.spawn(executable_path=viewer_executable())
            logger.info("placement debug view: the Rerun viewer was opened")
        else:
            if self.path is None:
                self.path = os.path.abspath(DEFAULT_RRD)
                logger.warning("placement debug view: no display; writing %s (open it with `rerun %s`, or set "
                               "debug_visualize_output_path)", self.path, self.path)
            os.makedirs(os.path.dirname(os.path.abspath(self.path)) or ".", exist_ok=True)
            self.rec.save(self.path)
        self.batches = 0
        self._next_candidate = 0
        self._reach: dict[int, list[str]] = {}

    # ---- hook called by ObjectPlacer ---------------------------------------------------------------------------
    def on_compile(self, problem, assets) -> None:
        """Remembers which placed objects of ``problem`` need reachability (RequiresReachability)."""
        self._reach[id(problem)] = [a.name for a in assets if a.name in problem.object_names and any(
            isinstance(r, RequiresReachability) for r in a.get_relations())]

    def on_batch(self, vb: ValidatedBatch) -> None:
        """Logs one validated batch (geometry per candidate, verdicts, loss curve, summary) and flushes."""
        k, start, b = self.batches, self._next_candidate, len(vb)
        if k:
            self.rec.set_time("candidate", sequence=start)
            self.rec.log(f"placement/batch_{k - 1:03d}", self.rr.Clear(recursive=True))
        self.batches += 1
        self._next_candidate += b
        if b == 0:
            return
        root = f"placement/batch_{k:03d}"
        if k == 0:
            self.rec.send_blueprint(self._blueprint(vb))
        idx = [self.rr.TimeColumn("candidate", sequence=np.arange(start, start + b))]
        self._log_boxes(root, vb, idx)
        self._log_regions(root, vb, idx)
        self._log_relations(root, vb, idx)
        self._log_pairs(root, vb, idx)
        self._log_grasps(root, vb, idx)
        self._log_candidates(root, k, vb, idx)
        self._log_overview(root, vb, start)
        self._log_solver(k, vb)
        lines = batch_diagnostics(vb, batch_index=k).console_lines()
        self.rec.set_time("candidate", sequence=start)
        self.rec.log("summary", self.rr.TextDocument(
            f"batch {k}: candidates {start}..{start + b - 1}\n\n" + "\n".join(lines)))
        self.rec.flush()

    # ---- parts ---------------------------------------------------------------------------------------------
    def _send(self, path, idx, columns):
        self.rec.send_columns(path, indexes=idx, columns=columns)

    def _log_boxes(self, root, vb, idx):
        rr, b, p = self.rr, len(vb), vb.problem
        center, half, quat = geo.object_boxes(vb.solved)
        for k, name in enumerate(p.object_names):
            self._send(f"{root}/objects/{name}", idx, rr.Boxes3D.columns(
                centers=center[:, k], half_sizes=half[:, k], quaternions=quat[:, k], colors=_tile(BLUE, b),
                labels=[name] * b))
        lo, hi = geo.world_bounds(vb.solved)
        n = p.num_objects
        for k, name in enumerate(p.fixed_names):
            self._send(f"{root}/anchors/{name}", idx, rr.Boxes3D.columns(
                centers=0.5 * (lo[:, n + k] + hi[:, n + k]), half_sizes=0.5 * (hi[:, n + k] - lo[:, n + k]),
                colors=_tile(GREY, b), labels=[name] * b))

    def _log_regions(self, root, vb, idx):
        rr = self.rr
        ok = geo.relation_passed(vb.solved)
        for reg in geo.relation_regions(vb.solved, self.params.solver_params):
            good = _colors(ok[:, reg.rid], REGION_OK[reg.role], REGION_BAD)
            path = f"{root}/regions/{reg.rid:02d}_{reg.role}"
            if reg.circles is not None:
                path += "_" + reg.label.split(" of ")[0].replace(" ", "_").replace("-", "_")
                c = reg.circles.shape[1]
                self._send(path, idx, rr.LineStrips3D.columns(
                    strips=list(reg.circles.reshape(-1, *reg.circles.shape[2:])),
                    colors=np.repeat(good, c, 0), labels=[reg.label] * (len(vb) * c)).partition([c] * len(vb)))
            else:
                self._send(path, idx, rr.Boxes3D.columns(
                    centers=reg.center, half_sizes=reg.half_size, colors=good, labels=[reg.label] * len(vb),
                    fill_mode=[self.rr.components.FillMode.TransparentFillMajorWireframe] * len(vb)))

    def _log_relations(self, root, vb, idx):
        p, b = vb.problem, len(vb)
        if not p.num_relations:
            return
        seg = geo.relation_segments(vb.solved)
        ok = geo.relation_passed(vb.solved)
        excess = vb.solved.relation_excess.cpu().numpy() if vb.solved.relation_excess is not None else None
        cause = vb.solved.relation_cause.cpu().numpy() if vb.solved.relation_cause is not None else None
        for r, cr in enumerate(p.relations):
            labels = [cr.description] * b
            for i in np.flatnonzero(~ok[:, r]):  # only the failing candidates get a longer label
                text = cr.kind.cause_text(int(cause[i, r])) if cause is not None else "failed"
                labels[i] = f"{cr.description}: {text} by {excess[i, r]:.3f} m"
            self._send(f"{root}/relations/{r:02d}", idx, self.rr.LineStrips3D.columns(
                strips=list(seg[:, r]), colors=_colors(ok[:, r], GREEN, RED), labels=labels))

    def _log_pairs(self, root, vb, idx):
        """The worst pair of each candidate that failed a pair check (no_overlap, clearance)."""
        p, s = vb.problem, vb.solved
        lo, hi = geo.world_bounds(s)
        c = 0.5 * (lo + hi)
        pairs = np.asarray(p.pairs, dtype=np.int64).reshape(-1, 2)
        cand, strips, labels = [], [], []
        for check, (pair_field, depth_field, text) in PAIR_CHECKS.items():
            pair, depth = getattr(s, pair_field), getattr(s, depth_field)
            if check not in vb.validation.verdicts or pair is None:
                continue
            pair, depth = pair.cpu().numpy().astype(np.int64), depth.cpu().numpy()
            i = np.flatnonzero((~vb.validation.verdicts[check]).cpu().numpy() & (pair >= 0))
            ab = pairs[pair[i]]
            cand.append(i)
            strips.append(np.stack([c[i, ab[:, 0]], c[i, ab[:, 1]]], 1))
            labels += [f"{text.format(a=p.all_names[a], b=p.all_names[b])} by {d:.3f} m"
                       for a, b, d in zip(ab[:, 0], ab[:, 1], depth[i])]
        cand = np.concatenate(cand) if cand else np.zeros(0, dtype=np.int64)
        order = np.argsort(cand, kind="stable")
        strips = np.concatenate(strips)[order] if len(cand) else np.zeros((0, 2, 3))
        self._send(f"{root}/overlap", idx, self.rr.LineStrips3D.columns(
            strips=list(strips), colors=_tile(RED, len(cand)), labels=[labels[j] for j in order]).partition(
            np.bincount(cand, minlength=len(vb))))

    def _log_grasps(self, root, vb, idx):
        names = self._reach.get(id(vb.problem), [])
        if not names or IK_CHECK not in vb.validation.verdicts:
            return
        b, k = len(vb), len(names)
        pts = geo.grasp_points(vb.solved, names, self.params.reachability_config.grasp_z_offset_m)
        ok = vb.validation.verdicts[IK_CHECK].cpu().numpy()
        ran = vb.validation.evaluated_mask(IK_CHECK).cpu().numpy()
        col = np.where(ran[:, None], _colors(ok, GREEN, RED), np.asarray(GREY, np.uint8))
        self._send(f"{root}/grasps", idx, self.rr.Points3D.columns(
            positions=pts.reshape(-1, 3), colors=np.repeat(col, k, 0), radii=np.full(b * k, 0.015),
            labels=names * b).partition([k] * b))

    def _log_candidates(self, root, k, vb, idx):
        rr, b, v = self.rr, len(vb), vb.validation
        causes = [[] for _ in range(b)]
        for rec in rejection_records(vb):  # host loop over the failures only
            causes[rec.candidate].append(f"{rec.check}: {rec.cause}")
        values = {"env_id": vb.env_ids.cpu().numpy(), "draw_id": vb.draw_ids.cpu().numpy(),
                  "loss": vb.loss.cpu().numpy(), "iterations": vb.iterations.cpu().numpy(),
                  "passed": vb.passed.cpu().numpy(), "causes": ["; ".join(c) or "-" for c in causes]}
        present = vb.problem.checks_present
        for check in v.checks:
            if check in v.builtin_checks and check not in present:
                continue  # a built-in check that judges nothing in this scene passes trivially
            ran = v.evaluated_mask(check).cpu().numpy()
            verdict = v.verdicts[check].cpu().numpy()
            values[f"check.{check}"] = verdict
            self._send(f"checks/batch_{k:03d}/{check}", idx, rr.Scalars.columns(
                scalars=np.where(ran, verdict.astype(np.float64), np.nan)))
        self._send(f"{root}/candidate", idx, rr.AnyValues.columns(**values))
        if vb.problem.num_relations and vb.solved.relation_excess is not None:
            r = vb.problem.num_relations
            self._send(f"{root}/candidate", idx, rr.AnyValues.columns(
                violation_m=vb.solved.relation_excess.cpu().double().numpy().reshape(-1)).partition([r] * b))
            self.rec.log(f"{root}/candidate", rr.AnyValues(relations=[c.description for c in vb.problem.relations]),
                         static=True)

    def _log_overview(self, root, vb, start):
        self.rec.set_time("candidate", sequence=start)
        ok = vb.passed.cpu().numpy()
        center, _, _ = geo.object_boxes(vb.solved)
        for k, name in enumerate(vb.problem.object_names):
            self.rec.log(f"{root}/overview/{name}", self.rr.Points3D(
                center[:, k], colors=_colors(ok, GREEN, RED), radii=0.006))

    def _log_solver(self, k, vb):
        rr = self.rr
        loss = geo.snapshot_losses(vb.solved)
        if loss is None:
            return
        b, s = loss.shape
        first = self._next_candidate - b
        x = np.arange(s) * 10.0
        for i in range(b):  # one bar chart per candidate (rerun takes no column of tensors); debug path only
            self.rec.set_time("candidate", sequence=first + i)
            self.rec.log("candidate_loss", rr.BarChart(loss[i], abscissa=x))
        it = [rr.TimeColumn("iteration", sequence=np.arange(s) * 10)]
        base = f"solver/batch_{k:03d}/loss"
        for name, series in (("mean", loss.mean(0)), ("min", loss.min(0)), ("max", loss.max(0))):
            self._send(f"{base}/{name}", it, rr.Scalars.columns(scalars=series))
        self._send(f"{base}/candidates", it, rr.Scalars.columns(scalars=loss.T.reshape(-1)).partition([b] * s))
        hist = geo.forward_filled_history(vb.position_history).cpu().numpy()  # (B, S, n, 3)
        col = _colors(vb.passed.cpu().numpy(), GREEN, RED)
        for j, name in enumerate(vb.problem.object_names):
            self._send(f"trajectory/batch_{k:03d}/{name}", it, rr.Points3D.columns(
                positions=hist[:, :, j].transpose(1, 0, 2).reshape(-1, 3), colors=np.tile(col, (s, 1)),
                radii=np.full(b * s, 0.005)).partition([b] * s))

    def _blueprint(self, vb):
        """The layout: candidates in 3D (camera above the scene of the first batch), loss, checks, diagnostics."""
        rrb = self.rr.blueprint
        lo, hi = vb.solved.bounds  # the placed objects over every candidate (a background can be huge)
        lo, hi = lo.amin((0, 1)).cpu().double().numpy(), hi.amax((0, 1)).cpu().double().numpy()
        target = np.array([0.5 * (lo[0] + hi[0]), 0.5 * (lo[1] + hi[1]), lo[2]])
        ext = 1.5 * float(max(hi[0] - lo[0], hi[1] - lo[1], 0.4))
        eye = rrb.EyeControls3D(position=target + np.array([0.0, -0.9 * ext, 0.8 * ext]), look_target=target,
                                eye_up=[0.0, 0.0, 1.0])
        return rrb.Blueprint(
            rrb.Horizontal(
                rrb.Tabs(rrb.Spatial3DView(name="candidates", origin="/placement", eye_controls=eye),
                         rrb.Spatial3DView(name="solver trajectory", origin="/trajectory", eye_controls=eye)),
                rrb.Vertical(rrb.BarChartView(name="this candidate's loss every 10 iterations",
                                              origin="/candidate_loss"),
                             rrb.TimeSeriesView(name="loss per iteration (timeline: iteration)", origin="/solver"),
                             rrb.TimeSeriesView(name="checks per candidate (1 pass, 0 fail)", origin="/checks"),
                             rrb.TextDocumentView(name="diagnostics", origin="/summary")),
                column_shares=[3, 2]),
            rrb.TimePanel(timeline="candidate", play_state="following"), rrb.BlueprintPanel(state="collapsed"),
            rrb.SelectionPanel(state="collapsed"))


"""Which episode factors go with success or failure: binned success rates and a joint logistic model.

- :func:`binned_success`: one factor at a time, the success rate per bin of the factor's values, each with its
  95 % Wilson interval. Easy to read, but a factor that merely moves together with the one that matters shows
  the same trend.
- :func:`joint_factor_effects`: every factor at once, in one logistic regression of success on the
  standardised factors, so a factor is credited only with what the others do not already explain.

Both take episode records (``episode_records.py``): ``record["factors"][name]`` and ``record["success"]``.
A record without a finite number for a factor is left out (and counted). Everything here is deterministic.
"""

from __future__ import annotations

import math

import numpy as np

from isaaclab_arena.evaluation.statistics import Z95, rate_block

#: L2 penalty (on the per-SD coefficients, never the intercept): a N(0, 1/L2) prior, about as much
#: information as four episodes at a 50 % success rate; it keeps the fit finite under perfect separation.
L2 = 1.0
#: A factor that the earlier kept factors explain to R^2 above this is dropped as collinear.
COLLINEAR_R2 = 0.99
#: Pairs of kept factors correlated at least this much are named beside each other's effect.
CORRELATED_R = 0.7
#: Fewer of the rarer outcome than this per factor: the fit is called rough.
EVENTS_PER_FACTOR = 10
METHOD = ("L2-regularised logistic regression (Newton/IRLS) of success on all standardised factors at once; "
          "95 % Wald intervals from the regularised Hessian")


def _number(v) -> float | None:
    """``v`` as a finite float, or None (missing, bool, text, NaN, inf)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def factor_unit(name: str) -> str:
    """The unit of a factor from its name's suffix: ``_m`` metres, ``_rad`` radians, else ''."""
    return "metres" if name.endswith("_m") else "radians" if name.endswith("_rad") else ""


def _column(records, factor: str) -> tuple[np.ndarray, np.ndarray]:
    """(values, successes) of the records that have a finite value of ``factor``."""
    vals, ys = [], []
    for r in records:
        v = _number((r.get("factors") or {}).get(factor))
        if v is not None:
            vals.append(v)
            ys.append(bool(r.get("success")))
    return np.asarray(vals, dtype=np.float64), np.asarray(ys, dtype=bool)


def binned_success(records, factor: str, bins: int = 5) -> list[dict]:
    """Success rate per bin of one factor's values.

    With more distinct values than ``bins``, the bin edges are the values' quantiles (equal-count bins; tied
    edges merge, so there may be fewer bins); with ``bins`` distinct values or fewer, one bin per value.
    Bins are closed on the left, the last one on both sides; empty bins are left out.

    Returns:
        ``[{"lo", "hi", "centre", "episodes", "successes", "success_rate", "wilson_95": [low, high]}, ...]``
        in increasing order (``lo``/``hi`` the bin's edges, equal for a one-value bin; ``centre`` the mean
        value in the bin); ``[]`` when no record has the factor.
    """
    if int(bins) < 1:
        raise ValueError(f"binned_success: bins must be at least 1, got {bins}")
    x, y = _column(records, factor)
    if x.size == 0:
        return []
    distinct = np.unique(x)
    if distinct.size <= bins:
        groups = [(v, v, x == v) for v in distinct]
    else:
        edges = np.unique(np.quantile(x, np.linspace(0.0, 1.0, int(bins) + 1)))
        idx = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, edges.size - 2)
        groups = [(edges[i], edges[i + 1], idx == i) for i in range(edges.size - 1)]
    out = []
    for lo, hi, mask in groups:
        if mask.any():
            block = rate_block(int(y[mask].sum()), int(mask.sum()))
            out.append({"lo": round(float(lo), 6), "hi": round(float(hi), 6),
                        "centre": round(float(x[mask].mean()), 6), **block})
    return out


def _sigmoid(eta: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * eta))


def _fit_logistic(A: np.ndarray, y: np.ndarray, pen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(coefficients, Hessian at them) minimising the penalised negative log-likelihood by damped Newton."""
    def loss(b):
        eta = A @ b
        return float(np.sum(np.logaddexp(0.0, eta) - y * eta) + 0.5 * np.sum(pen * b * b))

    beta = np.zeros(A.shape[1])
    k = y.sum()
    beta[0] = math.log(k / (y.size - k))
    ridge = 1e-10 * np.eye(A.shape[1])  # keeps the solve defined where every weight underflows
    for _ in range(200):
        mu = _sigmoid(A @ beta)
        grad = A.T @ (mu - y) + pen * beta
        hess = A.T @ (A * (mu * (1.0 - mu))[:, None]) + np.diag(pen) + ridge
        step = np.linalg.solve(hess, grad)
        f0, t = loss(beta), 1.0
        while loss(beta - t * step) > f0 - 1e-4 * t * float(grad @ step) and t > 1e-12:
            t *= 0.5
        beta = beta - t * step
        if np.max(np.abs(t * step)) < 1e-11:
            break
    mu = _sigmoid(A @ beta)
    hess = A.T @ (A * (mu * (1.0 - mu))[:, None]) + np.diag(pen) + ridge
    return beta, hess


def _drop_collinear(Z: np.ndarray, names: list[str]) -> tuple[list[int], list[dict]]:
    """Indices of columns to keep (in order) and ``dropped`` entries of columns the earlier kept ones explain."""
    keep, dropped = [], []
    for j, name in enumerate(names):
        if keep:
            B = Z[:, keep]
            w, *_ = np.linalg.lstsq(B, Z[:, j], rcond=None)
            resid = Z[:, j] - B @ w
            r2 = 1.0 - float(resid @ resid) / float(Z[:, j] @ Z[:, j])
            if r2 > COLLINEAR_R2:
                big = np.abs(w) >= 0.1 * np.abs(w).max()
                partners = [names[keep[i]] for i in range(len(keep)) if big[i]]
                dropped.append({"factor": name, "reason": f"collinear with {', '.join(partners)} (R^2 {r2:.3f}): "
                                f"the episodes cannot tell them apart; its effect is counted under "
                                f"{', '.join(partners)}"})
                continue
        keep.append(j)
    return keep, dropped


def _direction(name: str, coef: float, weak: bool) -> str:
    if coef == 0.0:
        return f"{name} shows no lean either way"
    towards = "success" if coef > 0 else "failure"
    if not weak:
        return f"higher {name} goes with {towards}"
    return f"higher {name} leans towards {towards}, but the 95 % interval spans 0 (weak evidence)"


def _exp(v: float) -> float:
    return round(math.exp(max(-50.0, min(50.0, v))), 6)


def joint_factor_effects(records, factors, l2: float = L2, z: float = Z95) -> dict:
    """Effects of the factors on success taken together: a logistic regression of success on every factor at
    once, each standardised (mean 0, SD 1 over the episodes used), with an L2 penalty ``l2 / 2 * |beta|^2`` on
    the factor coefficients (not the intercept), fitted by Newton's method (IRLS) with step halving.

    A coefficient is the change in log-odds of success per standard deviation of its factor with the other
    factors held fixed; its 95 % interval is a Wald interval ``coef -/+ z * SE`` with SEs from the inverse of
    the regularised Hessian at the fit (the Laplace approximation of the posterior under a N(0, 1/l2) prior
    on each per-SD coefficient). An interval that spans 0 is marked ``weak``.

    Handled without NaN: no episodes or no factors; no variation in outcome (all successes or all failures:
    nothing to attribute, no fit); constant factors (dropped, said so); factors the earlier ones explain to
    R^2 > 0.99 (dropped as collinear, said so; milder correlations are named beside each effect); few
    episodes (the penalty keeps the fit finite, intervals are wide, and a note says when there are fewer than
    10 of the rarer outcome per factor).

    Returns:
        ``{"status": "ok" | "no_episodes" | "no_factors" | "no_variation", "message", "method", "l2",
        "episodes", "successes", "skipped_records", "dropped": [{"factor", "reason"}], "notes": [str],
        "intercept", "effects": [{"factor", "unit", "mean", "sd", "coef", "se", "ci95": [lo, hi],
        "odds_ratio", "odds_ratio_ci95": [lo, hi], "weak", "direction", "correlated_with": [{"factor", "r"}]}]}``
        with effects in the order of ``factors`` (those kept).
    """
    if not l2 > 0:
        raise ValueError(f"joint_factor_effects: l2 must be positive, got {l2}")
    factors = list(dict.fromkeys(factors))
    rows, ys, skipped = [], [], 0
    for r in records:
        vals = [_number((r.get("factors") or {}).get(f)) for f in factors]
        if any(v is None for v in vals):
            skipped += 1
            continue
        rows.append(vals)
        ys.append(1.0 if r.get("success") else 0.0)
    n, k = len(rows), int(sum(ys))
    out = {"status": "ok", "message": "", "method": METHOD, "l2": l2, "episodes": n, "successes": k,
           "skipped_records": skipped, "dropped": [], "notes": [], "intercept": None, "effects": []}
    if skipped:
        out["notes"].append(f"{skipped} record(s) without a finite value of every factor are left out")
    if not factors:
        return dict(out, status="no_factors", message="no factors to analyse")
    if n == 0:
        return dict(out, status="no_episodes", message="no episodes to analyse")
    if k in (0, n):
        what = "succeeded" if k == n else "failed"
        return dict(out, status="no_variation",
                    message=f"no variation in outcome: all {n} episode(s) {what}, so no factor can be told "
                            f"to go with success or failure")
    X = np.asarray(rows, dtype=np.float64)
    mean, sd = X.mean(axis=0), X.std(axis=0)
    varying = []
    for j, f in enumerate(factors):
        if sd[j] <= 1e-12 * max(1.0, abs(mean[j])):
            out["dropped"].append({"factor": f, "reason": f"constant ({mean[j]:.6g} in every episode)"})
        else:
            varying.append(j)
    if not varying:
        return dict(out, status="no_factors", message="every factor is constant over these episodes")
    Z = (X[:, varying] - mean[varying]) / sd[varying]
    keep, collinear = _drop_collinear(Z, [factors[j] for j in varying])
    out["dropped"].extend(collinear)
    Z, cols = Z[:, keep], [varying[i] for i in keep]
    y = np.asarray(ys)
    A = np.column_stack([np.ones(n), Z])
    pen = np.full(A.shape[1], float(l2))
    pen[0] = 0.0
    beta, hess = _fit_logistic(A, y, pen)
    se = np.sqrt(np.clip(np.diag(np.linalg.inv(hess)), 0.0, None))
    corr = np.corrcoef(Z, rowvar=False) if len(cols) > 1 else np.ones((1, 1))
    out["intercept"] = round(float(beta[0]), 6)
    for i, j in enumerate(cols):
        c, s = float(beta[i + 1]), float(se[i + 1])
        lo, hi = c - z * s, c + z * s
        weak = lo <= 0.0 <= hi
        out["effects"].append({
            "factor": factors[j], "unit": factor_unit(factors[j]),
            "mean": round(float(mean[j]), 6), "sd": round(float(sd[j]), 6),
            "coef": round(c, 6), "se": round(s, 6), "ci95": [round(lo, 6), round(hi, 6)],
            "odds_ratio": _exp(c), "odds_ratio_ci95": [_exp(lo), _exp(hi)], "weak": bool(weak),
            "direction": _direction(factors[j], c, weak),
            "correlated_with": [{"factor": factors[cols[m]], "r": round(float(corr[i, m]), 3)}
                                for m in range(len(cols)) if m != i and abs(corr[i, m]) >= CORRELATED_R]})
    for i in range(len(cols)):
        for m in range(i + 1, len(cols)):
            if abs(corr[i, m]) >= 0.9:
                out["notes"].append(f"{factors[cols[i]]} and {factors[cols[m]]} are strongly correlated "
                                    f"(r {corr[i, m]:.2f}): they share one effect, so each one's interval is wide "
                                    f"even where the pair together clearly matters")
    rarer = min(k, n - k)
    if rarer < EVENTS_PER_FACTOR * len(cols):
        word = "successes" if k <= n - k else "failures"
        out["notes"].append(f"only {rarer} {word} for {len(cols)} factor(s) (fewer than {EVENTS_PER_FACTOR} per "
                            f"factor): the intervals are rough; read every effect as weak evidence")
    clear = [e["factor"] for e in out["effects"] if not e["weak"]]
    out["message"] = (f"{n} episodes, {k} successes; " + (f"clear effect(s): {', '.join(clear)}" if clear else
                      "no factor's 95 % interval excludes 0 (weak evidence for every effect)"))
    return out


__all__ = ["L2", "METHOD", "binned_success", "factor_unit", "joint_factor_effects"]

"""Within-run diagnostics from sysbench's per-interval lines: warm-up, steady state, precision.

Interval figures are autocorrelated pseudo-replicates of one run.  They locate the warm-up
(MSER-5), give a steady-state throughput and a within-run precision (batch means), and measure
how much a run wobbles (CV of interval TPS).  None of this feeds an A/B interval or test: that
is :mod:`tibenchlib.stats`' job, with the repeated run as the unit.

Latency percentiles of a run come from sysbench's merged histogram (its summary), never from
averaging per-interval percentiles, so nothing here touches latency.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats as _st

__all__ = ["mser5", "steady_state_tps", "batch_means_ci", "interval_cv", "steady_state_table"]

MSER_BATCH = 5


def _arr(series) -> np.ndarray:
    x = np.asarray(series.to_numpy() if isinstance(series, pd.Series) else series, dtype=float)
    return x.ravel()


def mser5(series: Sequence[float], t: Sequence[float] | None = None) -> dict:
    """Warm-up truncation point by MSER-5 (White 1997; Franklin & White 2008).

    Estimator: average the series in non-overlapping batches of 5; for each candidate cut d
    (in batches) compute MSER(d) = sum_{j>d} (Z_j - mean(Z_{d:}))^2 / (k - d)^2 and take the
    d that minimises it.  Cuts leave at least max(min(10, k/2), k/10) batches so a quiet tail
    cannot win by having few points.  Assumes the series is stationary after some point and
    that the run is long enough to show it; scale and shift of the series do not change the cut.

    Parameters
    ----------
    series : sequence of float
        Per-interval values (TPS), in time order; NaNs are not allowed.
    t : sequence of float, optional
        The interval end times (seconds) to report the cut in seconds; defaults to the series'
        index when it is a pandas Series, else to 1, 2, ... (one-second intervals).

    Returns
    -------
    dict
        ``cut_index`` (first kept observation), ``cut_s`` (end time of the last dropped
        interval, 0 when nothing is cut), ``n_obs``, ``n_batches``, ``statistic`` (MSER at the
        cut), ``method`` and ``warnings`` ("no steady state" when the cut exceeds half the run).
    """
    x = _arr(series)
    if t is None:
        t = series.index.to_numpy(float) if isinstance(series, pd.Series) else None
    t = np.arange(1, x.size + 1, dtype=float) if t is None else np.asarray(t, dtype=float)
    warns: list[str] = []
    k = x.size // MSER_BATCH
    if k < 4:
        return {
            "cut_index": 0,
            "cut_s": 0.0,
            "n_obs": int(x.size),
            "n_batches": int(k),
            "statistic": None,
            "method": "MSER-5",
            "warnings": [f"{x.size} intervals: too few for MSER-5, nothing cut"],
        }
    if not np.isfinite(x).all():
        raise ValueError("mser5: the series has NaN/inf values")
    z = x[: k * MSER_BATCH].reshape(k, MSER_BATCH).mean(axis=1)
    z = z - z.mean()  # shift first: keeps the running sums well conditioned
    s1 = np.cumsum(z[::-1])[::-1]
    s2 = np.cumsum((z * z)[::-1])[::-1]
    m = np.arange(k, 0, -1, dtype=float)
    stat = np.maximum(s2 - s1**2 / m, 0.0) / m**2
    dmax = k - max(min(10, k // 2), k // 10)
    d = int(np.argmin(stat[: dmax + 1]))
    cut = d * MSER_BATCH
    cut_s = float(t[cut - 1]) if cut > 0 else 0.0
    if cut > x.size / 2:
        warns.append(
            f"no steady state: MSER-5 cuts {cut_s:g} s, more than half of the run "
            f"({float(t[-1]):g} s)"
        )
    return {
        "cut_index": cut,
        "cut_s": cut_s,
        "n_obs": int(x.size),
        "n_batches": int(k),
        "statistic": float(stat[d]),
        "method": "MSER-5",
        "warnings": warns,
    }


def interval_cv(series: Sequence[float], start: int = 0) -> float | None:
    """Coefficient of variation (sd / mean, ddof=1) of interval TPS from index ``start`` on.

    A wobble measure of one run (dips, stalls, GC pauses), not a precision: the intervals are
    autocorrelated.  None with fewer than two values or a zero mean.
    """
    x = _arr(series)[start:]
    x = x[np.isfinite(x)]
    if x.size < 2 or x.mean() == 0:
        return None
    return float(x.std(ddof=1) / abs(x.mean()))


def batch_means_ci(series: Sequence[float], batches: int = 20, level: float = 0.95) -> dict:
    """Within-run precision of the mean interval figure by non-overlapping batch means.

    Estimator: split the series into ``batches`` equal batches (the remainder is dropped from
    the start, nearest the warm-up), take their means, and form a t interval with b - 1 df on
    the log scale (delta method, back-transformed: mean x exp(+-t sd / (mean sqrt(b)))), so the
    interval of a throughput never goes below 0; a mean <= 0 gets no interval.
    Assumes batches long enough that their means are nearly independent and normal; the lag-1
    autocorrelation of the batch means is reported and warned about above 0.3.  Shown as a
    diagnostic only: it measures one run's noise, not run-to-run variation, and is never used
    for A/B.

    Returns
    -------
    dict
        ``mean, ci_low, ci_high, batches, batch_size, df, lag1, method, warnings``.
    """
    x = _arr(series)
    x = x[np.isfinite(x)]
    warns: list[str] = []
    b = batches
    if x.size < 2 * b:
        b = x.size // 2
        warns.append(f"{x.size} intervals: only {b} batches of 2")
    if b < 2:
        return {
            "mean": float(x.mean()) if x.size else None,
            "ci_low": None,
            "ci_high": None,
            "batches": b,
            "batch_size": None,
            "df": None,
            "lag1": None,
            "method": "batch means",
            "warnings": warns + ["too few intervals for batch means"],
        }
    size = x.size // b
    z = x[x.size - b * size :].reshape(b, size).mean(axis=1)
    mean, sd = z.mean(), z.std(ddof=1)
    q = _st.t.ppf(0.5 + level / 2, b - 1)
    half = q * sd / np.sqrt(b) / mean if mean > 0 else np.nan
    if not mean > 0:
        warns.append("mean interval figure <= 0: no interval")
    zc = z - mean
    lag1 = float((zc[1:] * zc[:-1]).sum() / (zc * zc).sum()) if sd > 0 else 0.0
    if lag1 > 0.3:
        warns.append(f"batch means still correlated (lag-1 r = {lag1:.2f}): interval too narrow")
    return {
        "mean": float(mean),
        "ci_low": float(mean * np.exp(-half)) if mean > 0 else None,
        "ci_high": float(mean * np.exp(half)) if mean > 0 else None,
        "batches": b,
        "batch_size": size,
        "df": b - 1,
        "lag1": lag1,
        "method": f"batch means ({b} batches), t with {b - 1} df on the log scale",
        "warnings": warns,
    }


def _durations(t: np.ndarray) -> np.ndarray:
    """Interval lengths from end times; the first interval starts at 0 (sysbench's clock)."""
    if t.size == 0:
        return t
    d = np.diff(t, prepend=0.0)
    if d[0] <= 0:
        d[0] = np.median(d[1:]) if t.size > 1 else 1.0
    return d


def steady_state_tps(
    intervals: pd.DataFrame | Sequence[float],
    warmup: str | float = "mser5",
    batches: int = 20,
    level: float = 0.95,
) -> dict:
    """Steady-state throughput of one run: total events / total seconds after the warm-up.

    Estimator: sum(tps_i * dt_i) / sum(dt_i) over the intervals that start at or after the
    warm-up cut, dt_i the interval lengths from ``t``.  The cut comes from MSER-5
    (``warmup="mser5"``) or is a fixed number of seconds.  Also reports the CV of interval TPS
    and a batch-means interval for the window (diagnostics only, see :func:`batch_means_ci`).
    Assumes the intervals of a single run, in time order, with ``tps`` as events per second.

    Parameters
    ----------
    intervals : DataFrame or sequence
        One run's intervals with columns ``t`` (end of interval, s) and ``tps``; a plain
        sequence is read as one-second TPS figures.
    warmup : "mser5" or float
        How to find the end of the warm-up.

    Returns
    -------
    dict
        ``tps, cut_s, cut_index, window_s, n_intervals, interval_cv, bm_ci_low, bm_ci_high,
        warmup_method, method, warnings``.
    """
    if isinstance(intervals, pd.DataFrame):
        missing = [c for c in ("t", "tps") if c not in intervals.columns]
        if missing:
            raise ValueError(f"intervals lack column(s) {missing}")
        iv = intervals.sort_values("t")
        t, x = iv["t"].to_numpy(float), iv["tps"].to_numpy(float)
    else:
        x = _arr(intervals)
        t = np.arange(1, x.size + 1, dtype=float)
    warns: list[str] = []
    if x.size == 0:
        return {
            "tps": None,
            "cut_s": None,
            "cut_index": None,
            "window_s": 0.0,
            "n_intervals": 0,
            "interval_cv": None,
            "bm_ci_low": None,
            "bm_ci_high": None,
            "warmup_method": str(warmup),
            "method": "events/seconds after warm-up",
            "warnings": ["no intervals"],
        }
    dt = _durations(t)
    if isinstance(warmup, str):
        if warmup != "mser5":
            raise ValueError(f"warmup must be 'mser5' or seconds, not {warmup!r}")
        ms = mser5(x, t)
        cut, cut_s = ms["cut_index"], ms["cut_s"]
        warns += ms["warnings"]
        how = "MSER-5"
    else:
        # an interval ending at t covers (t - dt, t]: keep those starting at/after the cut
        keep = (t - dt) >= float(warmup) - 1e-9
        cut = int(np.argmax(keep)) if keep.any() else x.size
        cut_s = float(warmup)
        how = f"fixed {float(warmup):g} s"
        if cut_s > t[-1] / 2:
            warns.append(f"no steady state: the warm-up ({cut_s:g} s) exceeds half the run")
    w, wd = x[cut:], dt[cut:]
    if w.size == 0:
        warns.append("nothing left after the warm-up")
        tps = None
    else:
        tps = float((w * wd).sum() / wd.sum())
    bm = (
        batch_means_ci(w, batches, level)
        if w.size
        else {"ci_low": None, "ci_high": None, "warnings": []}
    )
    warns += bm["warnings"]
    cv = interval_cv(w)
    return {
        "tps": tps,
        "cut_s": cut_s,
        "cut_index": cut,
        "window_s": float(wd.sum()),
        "n_intervals": int(w.size),
        "interval_cv": cv,
        "bm_ci_low": bm["ci_low"],
        "bm_ci_high": bm["ci_high"],
        "warmup_method": how,
        "method": "events/seconds after warm-up",
        "warnings": warns,
    }


def steady_state_table(
    intervals: pd.DataFrame,
    warmup: str | float = "mser5",
    by: str = "run_id",
    cv_warn: float = 0.10,
    **kw,
) -> pd.DataFrame:
    """:func:`steady_state_tps` for every run in a long intervals table.

    Returns one row per ``by`` value: ``run_id, steady_tps, cut_s, cut_index, window_s,
    n_intervals, interval_cv, bm_ci_low, bm_ci_high, warmup_method, method, warnings`` (a
    warning added when the interval CV exceeds ``cv_warn``).
    """
    if by not in intervals.columns:
        raise ValueError(f"intervals lack column {by!r}")
    rows = []
    for key, g in intervals.groupby(by, sort=True):
        r = steady_state_tps(g, warmup, **kw)
        if r["interval_cv"] is not None and r["interval_cv"] > cv_warn:
            r["warnings"].append(
                f"interval TPS varies by {r['interval_cv'] * 100:.0f}% (CV) within the run"
            )
        r["steady_tps"] = r.pop("tps")
        rows.append({by: key, **r})
    cols = [
        by,
        "steady_tps",
        "cut_s",
        "cut_index",
        "window_s",
        "n_intervals",
        "interval_cv",
        "bm_ci_low",
        "bm_ci_high",
        "warmup_method",
        "method",
        "warnings",
    ]
    return pd.DataFrame(rows, columns=cols)

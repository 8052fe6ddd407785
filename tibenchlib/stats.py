"""Statistics over repeated runs: cell summaries and A/B comparisons with honest intervals.

The unit of replication is the repeated sysbench run. Per-second intervals are autocorrelated
pseudo-replicates and never enter an interval or a test here (see :mod:`tibenchlib.steady` for
what they are good for). All functions are pure: DataFrame in, DataFrame out; warnings travel as
lists of strings in a ``warnings`` column.

Estimators used:

* cell mean: Student t interval on the log scale by the delta method, df = n - 1,
  mean x exp(+-t s / (mean sqrt(n))), so a positive quantity (TPS, latency, query time) never gets
  a negative bound (runs assumed independent, roughly normal or lognormal);
* ratio of two means: Fieller's interval (two independent samples, unequal variances, positive
  means); :func:`fieller_ratio` takes a Welch-Satterthwaite df, :func:`compare_arms` the
  conservative df min(n) - 1, which holds at the far tail levels of a simultaneous interval
  (Satterthwaite's df there gives 7-10 % family-wise false claims with a 3:1 spread ratio);
  no bootstrap, which undercovers at the 3-5 runs people make;
* difference of means: Welch's t on df = min(n) - 1 (Hsu's conservative df, for the same
  reason); several cells of one comparison: Holm's step-down p, shown beside a simultaneous
  (Bonferroni) interval, from which the verdict is read;
* arms interleaved within rounds, in an order that varies from round to round: the rounds are
  blocks, and the within-round log ratios get a paired t interval (drift that moves a whole round
  cancels); with a fixed order the comparison falls back to the unpaired Fieller interval.

The vectorised ``_..._arrays`` helpers hold the arithmetic; the public functions wrap them so
simulations can run thousands of comparisons at once with the very same code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as _st

__all__ = [
    "t_interval",
    "fieller_ratio",
    "log_ratio",
    "paired_ratio",
    "welch_p",
    "holm",
    "flag_outliers",
    "summarize_cells",
    "compare_arms",
    "summarize_improvement",
    "lower_is_better",
    "VERDICTS",
    "SIZES",
]

CELL_KEYS = ["workload", "arm", "threads"]
N_WARN = 5  # fewer runs per cell than this: warn (wide intervals, low power)
T_METHOD = "Student t, df=n-1"
LOG_T_METHOD = "Student t on the log scale, df=n-1: mean x exp(+-t s/(mean sqrt(n)))"
FIELLER_METHOD = {
    "min": "Fieller, conservative df = min(n) - 1; Welch t p on min(n) - 1 df, Holm",
    "ratio": "Fieller, Welch-Satterthwaite df at the ratio estimate; Welch t p on min(n) - 1 df, "
    "Holm",
    "welch": "Fieller, Welch-Satterthwaite df of the difference; Welch t p on min(n) - 1 df, Holm",
}
LOG_RATIO_METHOD = "ratio of means, t on the log scale (delta method), Welch-Satterthwaite df"
PAIRED_METHOD = "paired within rounds: t on the log ratios, df=n-1; paired t p, Holm"
#: Every value ``compare_arms`` can put in ``verdict``, each read off the simultaneous interval
#: printed beside it (``ci_low_adj_pct``, ``ci_high_adj_pct``): ``"better"``/``"worse"`` when it
#: excludes 0; ``"equivalent"`` when it lies within +-delta; ``"inconclusive"`` when it is
#: unbounded or wider than 4 delta; ``"~"`` otherwise; ``"n/a"`` without an interval.
#: (``"small"``, the former rules' "significant, estimate within delta", is issued only by adaptive
#: repeats' stopping rules.)
VERDICTS = ("better", "worse", "small", "equivalent", "~", "inconclusive", "n/a")
#: Every value ``compare_arms`` can put in ``size`` (a better/worse verdict's size against delta,
#: as far as the simultaneous interval supports it; empty for other verdicts).
SIZES = ("at least delta", "below delta", "size not settled")


# --------------------------------------------------------------------------------------------
# vectorised cores


def _f(x) -> np.ndarray:
    return np.asarray(x, dtype=float)


def _t_arrays(mean, sd, n, level: float):
    """Half-width of the Student t interval; NaN where n < 2."""
    mean, sd, n = _f(mean), _f(sd), _f(n)
    with np.errstate(invalid="ignore", divide="ignore"):
        q = _st.t.ppf(0.5 + level / 2, n - 1)
        half = q * sd / np.sqrt(n)
    half = np.where(n >= 2, half, np.nan)
    return mean - half, mean + half


def _log_t_arrays(mean, sd, n, level: float):
    """Student t interval of a positive mean on the log scale (delta method), back-transformed:
    ``mean x exp(+-t(n-1) s / (mean sqrt(n)))``; NaN where n < 2 or mean <= 0."""
    mean, sd, n = _f(mean), _f(sd), _f(n)
    with np.errstate(invalid="ignore", divide="ignore"):
        q = _st.t.ppf(0.5 + level / 2, n - 1)
        half = q * sd / (np.sqrt(n) * mean)
        lo, hi = mean * np.exp(-half), mean * np.exp(half)
    ok = (n >= 2) & (mean > 0)
    return np.where(ok, lo, np.nan), np.where(ok, hi, np.nan)


def _welch_arrays(mx, vx, nx, my, vy, ny):
    """Welch's t for mean(x) - mean(y) on Hsu's conservative df = min(n_x, n_y) - 1: returns
    (t, df, two-sided p); NaN where n < 2.

    Satterthwaite's estimated df is too generous far in the tail, where Holm's thresholds sit
    (alpha/22 for the TPC-H queries): with normal runs, n = 5-8 and a 3:1 spread ratio the
    family-wise false-claim rate over 22 cells reaches 7-10 %; on min(n) - 1 df it stays below
    the nominal 5 % (``tests/test_stats.py``).
    """
    mx, vx, nx, my, vy, ny = map(_f, (mx, vx, nx, my, vy, ny))
    a, b = vx / nx, vy / ny
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt(a + b)
        t = (mx - my) / se
        df = np.minimum(nx, ny) - 1
        p = 2 * _st.t.sf(np.abs(t), df)
    # Both arms without spread: the difference is exact; p is 0 or 1, df is moot.
    zero = (a + b) == 0
    p = np.where(zero, np.where(mx == my, 1.0, 0.0), p)
    df = np.where(zero, nx + ny - 2, df)
    ok = (nx >= 2) & (ny >= 2)
    return np.where(ok, t, np.nan), np.where(ok, df, np.nan), np.where(ok, p, np.nan)


def _fieller_arrays(mx, vx, nx, my, vy, ny, level: float, df_method: str = "ratio"):
    """Fieller interval for mean(x)/mean(y), x and y independent samples.

    Inverts |mean(x) - rho*mean(y)| <= t * sqrt(vx/nx + rho^2 vy/ny).  The t quantile uses the
    Welch-Satterthwaite df of that linear combination with rho at the estimate (``"ratio"``,
    as in Tamhane & Logan 2004 and R's mratios), at rho = 1 (``"welch"``, the df of the plain
    difference), or the conservative min(n) - 1 (``"min"``, which holds at the far tail levels
    of simultaneous intervals).  Returns (ratio, low, high, df, bounded); bounds are NaN where
    n < 2 or the set is unbounded (the denominator mean is not distinguishable from 0).
    """
    mx, vx, nx, my, vy, ny = map(_f, (mx, vx, nx, my, vy, ny))
    if df_method not in FIELLER_METHOD:
        raise ValueError(f"df_method must be one of {sorted(FIELLER_METHOD)}, not {df_method!r}")
    a, b = vx / nx, vy / ny
    with np.errstate(invalid="ignore", divide="ignore"):
        r = mx / my
        w = r**2 if df_method == "ratio" else np.ones_like(r)
        df = (a + w * b) ** 2 / (a**2 / (nx - 1) + (w * b) ** 2 / (ny - 1))
        df = np.where((a + b) == 0, nx + ny - 2, df)
        if df_method == "min":
            df = np.minimum(nx, ny) - 1 + 0 * r
        q = _st.t.ppf(0.5 + level / 2, df)
        qa = my**2 - q**2 * b
        disc = a * my**2 + b * mx**2 - q**2 * a * b
        root = q * np.sqrt(np.maximum(disc, 0.0))
        lo = (mx * my - root) / qa
        hi = (mx * my + root) / qa
    ok = (nx >= 2) & (ny >= 2)
    bounded = ok & (qa > 0)
    lo, hi = np.minimum(lo, hi), np.maximum(lo, hi)
    # a ratio of positive means is positive: the confidence set meets (0, inf) - a time saved
    # never exceeds 100 %, a throughput ratio never goes below 0 - without losing coverage
    with np.errstate(invalid="ignore"):
        lo = np.where((mx > 0) & (my > 0), np.maximum(lo, 0.0), lo)
    return (
        r,
        np.where(bounded, lo, np.nan),
        np.where(bounded, hi, np.nan),
        np.where(ok, df, np.nan),
        bounded,
    )


def _paired_arrays(mean_d, sd_d, n, level):
    """Paired t on within-round log ratios d_r = log(x_r / y_r).

    Returns (ratio, low, high, df, p): ratio = exp(mean d) (the geometric mean of the
    within-round ratios), interval exp(mean d +- t(n-1) sd/sqrt(n)), two-sided p of the paired t
    test of mean d = 0; NaN where n < 2.  ``level`` may be an array (simultaneous intervals).
    """
    mean_d, sd_d, n = _f(mean_d), _f(sd_d), _f(n)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = sd_d / np.sqrt(n)
        df = n - 1
        q = _st.t.ppf(0.5 + _f(level) / 2, df)
        t = mean_d / se
        p = 2 * _st.t.sf(np.abs(t), df)
    p = np.where(se == 0, np.where(mean_d == 0, 1.0, 0.0), p)
    ok = n >= 2
    return (
        np.exp(mean_d),
        np.where(ok, np.exp(mean_d - q * se), np.nan),
        np.where(ok, np.exp(mean_d + q * se), np.nan),
        np.where(ok, df, np.nan),
        np.where(ok, p, np.nan),
    )


def _none(x):
    """Python float, or None for NaN/inf (JSON null)."""
    if x is None:
        return None
    x = float(x)
    return x if np.isfinite(x) else None


def _values(values) -> np.ndarray:
    x = _f(np.ravel(values) if not isinstance(values, pd.Series) else values.to_numpy())
    return x[np.isfinite(x)]


# --------------------------------------------------------------------------------------------
# scalar API


def t_interval(values: Sequence[float], level: float = 0.95, positive: bool = False) -> dict:
    """Mean of independent run figures with a Student t confidence interval.

    Estimator: sample mean; interval mean +- t(1 - alpha/2, n-1) * s / sqrt(n).  Assumes the runs
    are independent and their figures roughly normal (the t interval is robust to mild skew).
    ``positive=True`` (throughput, latency, time): the same t on the log scale by the delta
    method, mean x exp(+-t s / (mean sqrt(n))), which never crosses 0; a non-positive mean then
    gets no interval and a warning in ``method``.

    Parameters
    ----------
    values : sequence of float
        One figure per run; NaN values are ignored.
    level : float
        Confidence level.

    Returns
    -------
    dict
        ``n, mean, ci_low, ci_high, sd, df, method``; the interval, sd and df are None when
        n < 2 (no interval is invented from one run).
    """
    x = _values(values)
    n = x.size
    mean = float(x.mean()) if n else None
    sd = float(x.std(ddof=1)) if n >= 2 else None
    core = _log_t_arrays if positive else _t_arrays
    lo, hi = core(mean if n else np.nan, sd if sd is not None else np.nan, n, level)
    method = LOG_T_METHOD if positive else T_METHOD
    if positive and n and mean <= 0:
        method += " (mean <= 0: no interval)"
    return {
        "n": int(n),
        "mean": mean,
        "ci_low": _none(lo),
        "ci_high": _none(hi),
        "sd": sd,
        "df": n - 1 if n >= 2 else None,
        "method": method,
    }


def fieller_ratio(
    num: Sequence[float], den: Sequence[float], level: float = 0.95, df_method: str = "ratio"
) -> dict:
    """Ratio of two independent means, mean(num) / mean(den), with Fieller's interval.

    Estimator: ratio of sample means.  Interval: the set of rho for which
    ``|mean(num) - rho mean(den)| <= t * sqrt(s_num^2/n_num + rho^2 s_den^2/n_den)`` (Fieller),
    with t on Welch-Satterthwaite df (unequal variances).  Assumes independent, roughly normal
    run figures in each sample.  The interval is exact-in-spirit for ratios (no delta-method
    symmetry) and reciprocal: the interval for den/num is the reversed reciprocal of this one.

    Parameters
    ----------
    num, den : sequence of float
        Run figures of the numerator and denominator arms.
    level : float
        Confidence level.
    df_method : {"ratio", "welch"}
        ``"ratio"`` (default) evaluates the Satterthwaite df of the Fieller pivot at the ratio
        estimate; ``"welch"`` uses the df of the plain Welch difference (rho = 1).

    Returns
    -------
    dict
        ``ratio, ci_low, ci_high, df, method, n_num, n_den, warnings``.  ``ci_*`` are None when
        either n < 2 or when the confidence set is unbounded (then ``warnings`` says so).
    """
    x, y = _values(num), _values(den)
    warns: list[str] = []
    if x.size == 0 or y.size == 0:
        raise ValueError("fieller_ratio needs at least one value in each sample")
    if x.mean() <= 0 or y.mean() <= 0:
        warns.append(
            f"mean <= 0 (numerator {x.mean():.6g}, denominator {y.mean():.6g}): a ratio of "
            "throughputs or times needs positive means; refused"
        )
        return {
            "ratio": None,
            "ci_low": None,
            "ci_high": None,
            "df": None,
            "method": FIELLER_METHOD[df_method].split(";")[0],
            "n_num": int(x.size),
            "n_den": int(y.size),
            "warnings": warns,
        }
    vx = x.var(ddof=1) if x.size >= 2 else np.nan
    vy = y.var(ddof=1) if y.size >= 2 else np.nan
    if x.size >= 2 and y.size >= 2 and vx == 0 and vy == 0:
        warns.append("no spread in either sample (sd = 0): a zero-width interval, not measured")
    r, lo, hi, df, bounded = _fieller_arrays(
        x.mean(), vx, x.size, y.mean(), vy, y.size, level, df_method
    )
    if x.size < 2 or y.size < 2:
        warns.append(f"n={x.size}+{y.size}: point estimate only, no interval")
    elif not bool(bounded):
        warns.append(
            "Fieller interval unbounded: the denominator mean is not distinguishable from 0"
        )
    return {
        "ratio": _none(r),
        "ci_low": _none(lo),
        "ci_high": _none(hi),
        "df": _none(df),
        "method": FIELLER_METHOD[df_method].split(";")[0],
        "n_num": int(x.size),
        "n_den": int(y.size),
        "warnings": warns,
    }


def log_ratio(num: Sequence[float], den: Sequence[float], level: float = 0.95) -> dict:
    """Ratio of two independent positive means, mean(num) / mean(den), with a t interval on the
    log scale.

    Estimator: ratio of sample means; interval exp(log R +- t(df) sqrt(V)), V = s_num^2 /
    (n_num mean_num^2) + s_den^2 / (n_den mean_den^2) (delta method), df by Welch-Satterthwaite
    over the two terms (:func:`geomean_interval` with one cell). Always strictly positive, so a
    time saved (1 - R) stays below 100 % and a throughput ratio above 0; assumes independent,
    roughly normal or lognormal run figures (the log-t cell interval covers 94-95 % at n = 3-8
    in the simulations of ``tests/test_stats.py``).

    Returns
    -------
    dict
        ``ratio, ci_low, ci_high, df, method, n_num, n_den, warnings``; ``ci_*`` None when
        either n < 2; a non-positive mean is refused (``warnings`` says so).
    """
    x, y = _values(num), _values(den)
    if x.size == 0 or y.size == 0:
        raise ValueError("log_ratio needs at least one value in each sample")
    out = {"ratio": None, "ci_low": None, "ci_high": None, "df": None, "method": LOG_RATIO_METHOD,
           "n_num": int(x.size), "n_den": int(y.size), "warnings": []}  # fmt: skip
    if x.mean() <= 0 or y.mean() <= 0:
        out["warnings"].append(
            f"mean <= 0 (numerator {x.mean():.6g}, denominator {y.mean():.6g}): a ratio of "
            "throughputs or times needs positive means; refused"
        )
        return out
    lx, vx, nx = log_mean_moments(x)
    ly, vy, ny = log_mean_moments(y)
    g = geomean_interval([lx], [vx], [nx], level, base_log_means=[ly], base_variances=[vy],
                         base_ns=[ny])  # fmt: skip
    out.update(ratio=g["geomean"], ci_low=g["ci_low"], ci_high=g["ci_high"], df=g["df"])
    if g["ci_low"] is None:
        out["warnings"].append(f"n={x.size}+{y.size}: point estimate only, no interval")
    return out


def paired_ratio(num: Sequence[float], den: Sequence[float], level: float = 0.95) -> dict:
    """Ratio of two arms measured in the same rounds, from the within-round ratios.

    Estimator: d_r = log(num_r / den_r) for each round r (both arms ran in it); the ratio is
    exp(mean d), the geometric mean of the within-round ratios; the interval is
    exp(mean d +- t(n-1) s_d / sqrt(n)) and p is the paired t test of mean d = 0.  Assumes the
    rounds are independent blocks and the arms' order within a round varies (randomised or
    rotated), so that drift moving a whole round cancels in d_r instead of biasing it.

    Parameters
    ----------
    num, den : sequence of float
        Run figures of the two arms, paired by position (one pair per round); pairs with a
        missing or non-positive value are dropped.
    level : float
        Confidence level.

    Returns
    -------
    dict
        ``ratio, ci_low, ci_high, df, p_value, n_pairs, method, warnings``; no interval or p
        with fewer than two pairs.
    """
    x, y = _f(np.ravel(num)), _f(np.ravel(den))
    if x.size != y.size:
        raise ValueError(f"paired_ratio needs as many values in each arm ({x.size} vs {y.size})")
    keep = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    d = np.log(x[keep] / y[keep])
    n = d.size
    if n == 0:
        raise ValueError("paired_ratio needs at least one pair of positive values")
    sd = d.std(ddof=1) if n >= 2 else np.nan
    r, lo, hi, df, p = _paired_arrays(d.mean(), sd, n, level)
    warns = [] if n >= 2 else [f"{n} pair: point estimate only, no interval"]
    if keep.sum() < keep.size:
        warns.append(f"{int(keep.size - keep.sum())} pair(s) with a missing value dropped")
    return {
        "ratio": _none(r),
        "ci_low": _none(lo),
        "ci_high": _none(hi),
        "df": _none(df),
        "p_value": _none(p),
        "n_pairs": int(n),
        "method": PAIRED_METHOD.split(";")[0],
        "warnings": warns,
    }


def welch_p(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Two-sided p-value of Welch's t test for mean(a) = mean(b).

    Estimator: difference of sample means over sqrt(s_a^2/n_a + s_b^2/n_b), referred to t with
    Hsu's conservative df = min(n_a, n_b) - 1 (Satterthwaite's df gives p-values too small far in
    the tail, where Holm's thresholds sit, when the spreads differ).  Assumes independent,
    roughly normal run figures; no equal-variance assumption.  Returns None when either sample
    has fewer than two values.
    """
    x, y = _values(a), _values(b)
    if x.size < 2 or y.size < 2:
        return None
    _, _, p = _welch_arrays(x.mean(), x.var(ddof=1), x.size, y.mean(), y.var(ddof=1), y.size)
    return _none(p)


def holm(pvalues: Sequence[float | None]) -> np.ndarray:
    """Holm step-down adjusted p-values (family-wise error control, any dependence).

    adj_(i) = max_{j <= i} min(1, (m - j + 1) p_(j)) over the p-values sorted ascending, the
    figures ``statsmodels.stats.multitest.multipletests(method="holm")`` gives (the tests check
    it), computed in numpy: statsmodels runs ``gc.collect()`` on every call, which costs ~0.1 s
    in a loaded process and adds up in simulations.  Missing p-values (None/NaN) stay NaN and do
    not count towards the family.
    """
    p = np.array([np.nan if v is None else v for v in pvalues], dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    if ok.size:
        order = ok[np.argsort(p[ok], kind="stable")]
        m = order.size
        adj = np.minimum(1.0, (m - np.arange(m)) * p[order])
        out[order] = np.maximum.accumulate(adj)
    return out


# --------------------------------------------------------------------------------------------
# DataFrame API


def lower_is_better(metric: str) -> bool:
    """Whether a smaller value of ``metric`` is better (latencies, times); by its name."""
    m = metric.lower()
    return m.startswith("lat") or any(k in m for k in ("latency", "elapsed", "seconds", "time"))


def _valid_mask(runs: pd.DataFrame, metric: str) -> pd.Series:
    """The one run check every path shares (catalog, summary CSV, log directories): status
    "ok" (or none) and a finite, positive figure. Throughput, latency and query time are
    positive; a zero (or negative) figure is a degenerate run - no work done - and is counted as
    failed, never averaged in."""
    ok = pd.Series(True, index=runs.index)
    if "status" in runs.columns:
        st = runs["status"]
        ok &= st.isna() | (st.astype(str).str.lower() == "ok")
    v = pd.to_numeric(runs[metric], errors="coerce")
    return ok & np.isfinite(v) & (v > 0)


def _nonpositive_mask(runs: pd.DataFrame, metric: str) -> pd.Series:
    v = pd.to_numeric(runs[metric], errors="coerce")
    return np.isfinite(v) & (v <= 0)


def _check_columns(df: pd.DataFrame, cols: Sequence[str], what: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"{what} lacks column(s) {missing}; it has {list(df.columns)}")


def flag_outliers(
    runs: pd.DataFrame,
    metric: str = "tps",
    z: float = 3.5,
    rel: float = 0.05,
    keys: Sequence[str] = CELL_KEYS,
) -> pd.Series:
    """Flag (never drop) runs that stand out within their workload x arm x threads cell.

    Estimator: the modified z-score 0.6745 |x - median| / MAD (Iglewicz & Hoaglin) within the
    cell; a run is flagged when it exceeds ``z`` *and* lies more than ``rel`` (relative) from the
    cell median - with 3-5 runs the MAD alone is too small to trust.  Cells with fewer than 3
    valid runs are never flagged.  Returns a boolean Series aligned with ``runs``.
    """
    _check_columns(runs, [*keys, metric], "runs")
    ok = _valid_mask(runs, metric)
    v = pd.to_numeric(runs[metric], errors="coerce").where(ok)
    g = v.groupby([runs[k] for k in keys], dropna=False)
    med = g.transform("median")
    dev = (v - med).abs()
    mad = dev.groupby([runs[k] for k in keys], dropna=False).transform("median")
    n = g.transform("count")
    with np.errstate(invalid="ignore", divide="ignore"):
        mz = np.where(mad > 0, 0.6745 * dev / mad, np.where(dev > 0, np.inf, 0.0))
        far = dev > rel * med.abs()
    return pd.Series((n >= 3) & (mz > z) & far & ok, index=runs.index)


def summarize_cells(
    runs: pd.DataFrame,
    metric: str = "tps",
    level: float = 0.95,
    cv_warn: float = 0.10,
    n_warn: int = N_WARN,
    outlier_z: float = 3.5,
    outlier_rel: float = 0.05,
    keys: Sequence[str] = CELL_KEYS,
) -> pd.DataFrame:
    """Per cell (``keys``, default workload x arm x threads): the run figures' mean with a
    Student t interval on the log scale. Other phases pass their own cell keys (TPC-H: query x
    mode x arm).

    Estimator: mean of the run figures (sysbench's own per-run TPS by default), interval
    mean x exp(+-t(n-1) s/(mean sqrt(n))) - the t interval of log(mean) by the delta method,
    back-transformed (as :func:`geomean_interval`), so a positive quantity never gets a negative
    bound; for small CV it equals mean +- t s/sqrt(n).  Also median, min, max, sd and CV = s /
    mean.  Assumes independent runs.  Runs whose ``status`` is not "ok", whose value is missing
    or not positive (a degenerate run: :func:`_valid_mask`) are excluded and counted in
    ``n_failed``.

    Warnings (list per row): CV above ``cv_warn``; n below ``n_warn``; n = 1 (no interval);
    failed runs; outlying runs (see :func:`flag_outliers`), flagged and kept.

    Returns
    -------
    DataFrame
        ``workload, arm, threads, n, n_failed, mean, ci_low, ci_high, sd, median, min, max, cv,
        method, warnings`` (plus ``lat_p95_ms_mean`` when ``runs`` has ``lat_p95_ms`` and the
        metric is another one).
    """
    _check_columns(runs, [*keys, metric], "runs")
    runs = runs.copy()
    runs["tb_ok"] = _valid_mask(runs, metric)
    runs["tb_v"] = pd.to_numeric(runs[metric], errors="coerce").where(runs["tb_ok"])
    runs["tb_out"] = flag_outliers(runs, metric, outlier_z, outlier_rel, keys)
    runs["tb_nonpos"] = _nonpositive_mask(runs, metric)
    if "repeat" not in runs.columns:
        runs["repeat"] = runs.groupby(list(keys), dropna=False).cumcount() + 1
    g = runs.groupby(list(keys), dropna=False, sort=True)
    out = g["tb_v"].agg(["count", "mean", "std", "median", "min", "max"]).reset_index()
    out = out.rename(columns={"count": "n", "std": "sd"})
    out["n_failed"] = g["tb_ok"].agg(lambda s: int((~s).sum())).to_numpy()
    out["tb_nonpos"] = g["tb_nonpos"].sum().to_numpy().astype(int)
    extra = "lat_p95_ms" if metric != "lat_p95_ms" and "lat_p95_ms" in runs.columns else None
    if extra:
        lat = pd.to_numeric(runs[extra], errors="coerce").where(runs["tb_ok"])
        out[f"{extra}_mean"] = lat.groupby([runs[k] for k in keys], dropna=False).mean().to_numpy()
    out["sd"] = out["sd"].where(out["n"] >= 2)
    out["ci_low"], out["ci_high"] = _log_t_arrays(out["mean"], out["sd"], out["n"], level)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["cv"] = out["sd"] / out["mean"].abs()
    out["method"] = LOG_T_METHOD

    runs["tb_med"] = runs.groupby(list(keys), dropna=False)["tb_v"].transform("median")
    out_notes: dict[tuple, list[str]] = {}
    for r in runs[runs["tb_out"]].itertuples(index=False):
        key = _key(tuple(getattr(r, k) for k in keys))
        out_notes.setdefault(key, []).append(
            f"outlying run (repeat {r.repeat}: {r.tb_v:.6g}, "
            f"{(r.tb_v / r.tb_med - 1) * 100:+.1f}% from the median) flagged, kept"
        )
    warns = []
    for row in out.itertuples(index=False):
        w: list[str] = []
        if row.n == 0:
            w.append("no valid runs")
        elif row.n == 1:
            w.append("n=1: point estimate only, no interval")
        elif row.n < n_warn:
            w.append(f"n={row.n} < {n_warn}: wide interval, low power")
        if row.tb_nonpos:
            w.append(
                f"{row.tb_nonpos} run(s) with {metric} <= 0 excluded: no work done (degenerate)"
            )
        if row.n_failed > row.tb_nonpos:
            w.append(f"{row.n_failed - row.tb_nonpos} failed run(s) excluded")
        if np.isfinite(row.cv) and row.cv > cv_warn:
            w.append(f"CV {row.cv * 100:.1f}% > {cv_warn * 100:.0f}%")
        w += out_notes.get(_key(tuple(getattr(row, k) for k in keys)), [])
        warns.append(w)
    out["warnings"] = warns
    cols = [
        *keys,
        "n",
        "n_failed",
        "mean",
        "ci_low",
        "ci_high",
        "sd",
        "median",
        "min",
        "max",
        "cv",
        "method",
        "warnings",
    ]
    if extra:
        cols.insert(cols.index("method"), f"{extra}_mean")
    return out[cols]


def _key(t: tuple) -> tuple:
    # NaN != NaN: normalise missing keys so dictionary look-ups match.
    return tuple(None if (isinstance(v, float) and np.isnan(v)) else v for v in t)


def _round_pairs(
    runs: pd.DataFrame,
    baseline: str,
    candidate: str,
    metric: str,
    cell: Sequence[str] = ("workload", "threads"),
) -> pd.DataFrame:
    """Per comparison cell (``cell``, default workload x threads): the within-round log ratios
    candidate/baseline.

    A round is a value of ``repeat``; a pair needs one valid, positive run of each arm in the
    round.  ``b_first`` counts the rounds in which the candidate ran first (from ``seq``): the
    order varies when it is neither 0 nor n.  Empty without ``repeat`` and ``seq`` columns.
    """
    cell = list(cell)
    cols = [*cell, "n_pairs", "mean_d", "sd_d", "b_first"]
    if not {"repeat", "seq"} <= set(runs.columns):
        return pd.DataFrame(columns=cols)
    v = runs[_valid_mask(runs, metric)].copy()
    v["tb_y"] = pd.to_numeric(v[metric], errors="coerce")
    v = v[v["tb_y"] > 0]
    keys = [*cell, "repeat"]
    sides = []
    for arm, s in ((baseline, "a"), (candidate, "b")):
        g = v[v["arm"] == arm].groupby(keys, dropna=False)
        sides.append(
            g.agg(**{f"y{s}": ("tb_y", "mean"), f"s{s}": ("seq", "min"), f"k{s}": ("tb_y", "size")})
        )
    j = sides[0].join(sides[1], how="inner")
    j = j[(j["ka"] == 1) & (j["kb"] == 1)]  # one run per arm and round, or no pairing
    if not len(j):
        return pd.DataFrame(columns=cols)
    j = j.assign(d=np.log(j["yb"] / j["ya"]), first=(j["sb"] < j["sa"]).astype(int))
    g = j.groupby(level=cell, dropna=False)
    out = g.agg(
        n_pairs=("d", "size"), mean_d=("d", "mean"), sd_d=("d", "std"), b_first=("first", "sum")
    )
    return out.reset_index()[cols]


def _verdicts(imp, lo, hi, p_adj, delta_pct: float, alpha: float) -> np.ndarray:
    """The former rules (Holm p and the estimate against delta), vectorised; all inputs in
    percent, NaN where unknown. Kept for adaptive repeats' stopping rules, which have their own
    simulations; :func:`compare_arms` reads its verdicts off the simultaneous interval
    (:func:`_interval_verdicts`)."""
    imp, lo, hi, p_adj = map(_f, (imp, lo, hi, p_adj))
    has_p = np.isfinite(p_adj)
    sig = has_p & (p_adj < alpha)
    bounded = np.isfinite(lo) & np.isfinite(hi)
    with np.errstate(invalid="ignore"):
        width = np.where(bounded, hi - lo, np.inf)
    up, down = sig & (imp > delta_pct), sig & (imp < -delta_pct)
    excl = bounded & ((lo > 0) | (hi < 0))
    # a claim needs a bounded interval on its side of zero, not only a small p; a significant
    # difference inside the margin is "small", never "no significant difference"
    return np.select(
        [
            ~has_p,
            up & bounded & (lo > 0),
            down & bounded & (hi < 0),
            up | down,
            bounded & (lo >= -delta_pct) & (hi <= delta_pct),
            sig & excl,
            sig,
            width > 4 * delta_pct,
        ],
        ["n/a", "better", "worse", "inconclusive", "equivalent", "small", "inconclusive"]
        + ["inconclusive"],
        default="~",
    )


def _interval_verdicts(lo, hi, has_test, delta_pct: float) -> tuple[np.ndarray, np.ndarray]:
    """Verdict and size from the simultaneous interval [lo, hi] (improvement %, NaN where
    unknown or unbounded); ``has_test``: both arms have n >= 2. Vectorised."""
    lo, hi = _f(lo), _f(hi)
    has_test = np.asarray(has_test, dtype=bool)
    bounded = np.isfinite(lo) & np.isfinite(hi)
    with np.errstate(invalid="ignore"):
        width = np.where(bounded, hi - lo, np.inf)
        up, down = bounded & (lo > 0), bounded & (hi < 0)
        verdict = np.select(
            [
                ~has_test,
                up,
                down,
                ~bounded,
                (lo >= -delta_pct) & (hi <= delta_pct),
                width > 4 * delta_pct,
            ],
            ["n/a", "better", "worse", "inconclusive", "equivalent", "inconclusive"],
            default="~",
        )
        # the size only as far as the interval settles it, mirrored for "worse"
        near, far = np.where(up, lo, -hi), np.where(up, hi, -lo)
        size = np.select(
            [~(up | down), near >= delta_pct, far < delta_pct],
            ["", "at least delta", "below delta"],
            default="size not settled",
        )
    return verdict, size


def compare_arms(
    runs: pd.DataFrame,
    baseline: str,
    candidate: str,
    metric: str = "tps",
    higher_is_better: bool | None = None,
    delta: float = 0.02,
    level: float = 0.95,
    alpha: float = 0.05,
    family: str = "comparison",
    df_method: str = "min",
    cells: pd.DataFrame | None = None,
    paired: str | bool = "auto",
    keys: Sequence[str] = CELL_KEYS,
) -> pd.DataFrame:
    """Candidate against baseline per cell: improvement % with a Fieller interval.

    A cell is a value of ``keys`` without ``"arm"`` (default workload x threads; TPC-H passes
    ``["mode", "query", "arm"]``, a knob study ``["knob", "setting", "arm"]``), exactly as in
    :func:`summarize_cells`; the first of them groups the Holm family when
    ``family="workload"``.

    Estimator: ratio of the arms' mean run figures R = mean(candidate) / mean(baseline);
    improvement % = (R - 1) x 100 when higher is better, (1 - R) x 100 when lower is better (so
    a positive figure always means "candidate better").  Interval: Fieller on R (see
    :func:`fieller_ratio`) with the conservative df min(n) - 1 (``df_method="min"``, the
    default; ``"ratio"``/``"welch"`` take Welch-Satterthwaite's).  Test: Welch's t on the raw
    means on min(n) - 1 df, two-sided; Holm across the cells of one comparison
    (``family="comparison"``: every row returned; ``"workload"``: per workload).  Assumes
    independent runs, roughly normal within an arm, any variances.

    Paired (``paired="auto"``, the default): when the runs carry ``repeat`` (the round) and
    ``seq`` (execution order), a cell with at least two rounds holding one run of each arm, and
    an arm order that was not the same in every round, is compared within rounds instead: the
    ratio is the geometric mean of the within-round ratios with a paired t interval and p
    (:func:`paired_ratio`), so drift that moves a whole round cancels.  ``paired=True`` pairs
    whatever the order, ``False`` never; ``method`` and ``n_pairs`` say what each row used.

    Simultaneous intervals: ``ci_low_adj_pct``/``ci_high_adj_pct`` are the same interval at
    level 1 - (1 - level)/m over the m cells of the Holm family (Bonferroni).

    Verdict (``delta`` as a fraction, default 2 %), read off the simultaneous interval and
    nothing else, so the claim and the interval printed beside it always agree: ``"better"`` /
    ``"worse"`` when it excludes 0, with ``size`` saying how far it settles the size against
    delta: ``"at least delta"`` (the whole interval beyond delta), ``"below delta"`` (the whole
    interval short of it) or ``"size not settled"``; ``"equivalent"`` when it lies within
    +-delta; ``"inconclusive"`` (more runs needed) when it is unbounded or wider than 4 delta;
    otherwise ``"~"`` (no difference shown); ``"n/a"`` when either arm has fewer than two runs
    (point estimate only, p and interval null).  The Holm p is reported beside it; where it and
    the interval part ways a note says so and the interval decides.  In simulation (one cell,
    n = 5, CV 3 %, ``tests/test_stats.py``) each wrong verdict - a direction at no effect,
    "at least delta" at delta/2, "below delta" at delta or 2 delta, "equivalent" at 2 delta -
    stays at or below 2.5 %, the interval's one-sided error.  Runs with a zero or negative
    figure are degenerate and left out (:func:`summarize_cells` says how many), so a mean is
    always positive; both arms without spread get a warning.

    Parameters
    ----------
    runs : DataFrame
        One row per run: ``workload, arm, threads, <metric>`` (+ optional ``repeat, status``).
    baseline, candidate : str
        Arm names (values of ``runs.arm``).
    metric : str
        Column to compare.  ``higher_is_better=None`` infers the direction from the name
        (``lat*``, ``*time*``, ``*seconds*``, ``*elapsed*`` are lower-is-better).
    cells : DataFrame, optional
        Output of :func:`summarize_cells` for ``runs`` when already computed.

    Returns
    -------
    DataFrame
        One row per workload x threads with ``workload, threads, n_baseline, n_candidate,
        baseline_<metric>, candidate_<metric>, improvement_pct, ci_low_pct, ci_high_pct,
        p_value, p_adjusted, verdict, warnings`` and also ``n_pairs, ci_low_adj_pct,
        ci_high_adj_pct, family_size, metric, baseline, candidate,
        baseline_value, candidate_value`` (same numbers as ``baseline_<metric>``),
        ``baseline_sd, candidate_sd, n_failed_*, ratio, ratio_ci_low, ratio_ci_high, df,
        method`` and, for a non-latency metric when available, ``baseline_lat_p95_ms,
        candidate_lat_p95_ms`` (mean of the runs' p95, for display only).
    """
    keys = list(keys)
    cell = _check_comparison(runs, baseline, candidate, metric, family, paired, keys)
    hib = (not lower_is_better(metric)) if higher_is_better is None else higher_is_better
    if cells is None:
        cells = summarize_cells(
            runs[runs["arm"].isin([baseline, candidate])], metric, level, keys=keys
        )
    m = _arms_side_by_side(runs, cells, baseline, candidate, cell)
    m, e = _ratio_estimates(runs, m, baseline, candidate, metric, cell, level, df_method, paired)
    p_adj, fam = _holm_family(m, e.p, cell[0], family)
    imp, lo, hi = _improvement_pct(e.r, e.rlo, e.rhi, hib)
    lo_adj, hi_adj = _simultaneous_pct(m, e, fam, level, df_method, hib)
    has_test = (m["n_a"] >= 2).to_numpy() & (m["n_b"] >= 2).to_numpy()
    verdict, size = _interval_verdicts(lo_adj, hi_adj, has_test, delta * 100)

    out = _comparison_frame(m, cell, metric, baseline, candidate, e.use, e.n_pairs)
    out["ratio"] = e.r
    out["ratio_ci_low"], out["ratio_ci_high"] = e.rlo, e.rhi
    out["improvement_pct"], out["ci_low_pct"], out["ci_high_pct"] = imp, lo, hi
    out["ci_low_adj_pct"], out["ci_high_adj_pct"] = lo_adj, hi_adj
    out["family_size"] = fam
    out["df"], out["p_value"], out["p_adjusted"] = e.df, e.p, p_adj
    out["verdict"], out["size"] = verdict, size
    out["method"] = np.where(e.use, PAIRED_METHOD, FIELLER_METHOD[df_method])
    out["warnings"] = [
        _cell_notes(row, cell, baseline, candidate, paired, e, i)
        + _verdict_notes(
            verdict[i], size[i], lo[i], hi[i], lo_adj[i], hi_adj[i], bool(e.bounded[i]),
            p_adj[i], fam[i], delta, level, alpha,
        )
        for i, row in m.iterrows()
    ]  # fmt: skip
    return out


def _check_comparison(
    runs: pd.DataFrame,
    baseline: str,
    candidate: str,
    metric: str,
    family: str,
    paired: str | bool,
    keys: list[str],
) -> list[str]:
    """:func:`compare_arms`' arguments checked, one clear line each; returns the cell's keys
    (``keys`` without ``arm``)."""
    if "arm" not in keys:
        raise ValueError(f"keys must include 'arm' (the arms are compared), not {keys}")
    _check_columns(runs, [*keys, metric], "runs")
    cell = [k for k in keys if k != "arm"]
    if not cell:
        raise ValueError("keys need at least one column besides 'arm'")
    if family not in ("comparison", "workload"):
        raise ValueError("family must be 'comparison' or 'workload'")
    arms = set(runs["arm"].dropna().astype(str))
    for name in (baseline, candidate):
        if name not in arms:
            raise ValueError(f"arm {name!r} not found; arms present: {sorted(arms)}")
    if paired not in ("auto", True, False):
        raise ValueError(f"paired must be 'auto', True or False, not {paired!r}")
    return cell


def _arms_side_by_side(
    runs: pd.DataFrame, cells: pd.DataFrame, baseline: str, candidate: str, cell: list[str]
) -> pd.DataFrame:
    """The two arms' cell summaries in one row per cell (``_a`` baseline, ``_b`` candidate),
    the first key in the order the runs list it (the reports' order), the rest sorted."""
    first = cell[0]
    a = cells[cells["arm"] == baseline].drop(columns="arm")
    b = cells[cells["arm"] == candidate].drop(columns="arm")
    m = a.merge(b, on=cell, how="outer", suffixes=("_a", "_b"))
    order = {w: i for i, w in enumerate(dict.fromkeys(_key((w,))[0] for w in runs[first]))}
    m["_order"] = [order.get(_key((w,))[0], -1) for w in m[first]]
    m = m.sort_values(["_order", *cell[1:]]).drop(columns="_order").reset_index(drop=True)
    for s in ("_a", "_b"):
        m["n" + s] = m["n" + s].fillna(0).astype(int)
        m["n_failed" + s] = m["n_failed" + s].fillna(0).astype(int)
    return m


@dataclass(frozen=True)
class _Estimates:
    """Per cell of :func:`compare_arms`: the ratio with its interval, df, p, and how it was
    found (``use``: paired within rounds)."""

    r: np.ndarray
    rlo: np.ndarray
    rhi: np.ndarray
    df: np.ndarray
    p: np.ndarray
    bounded: np.ndarray
    use: np.ndarray
    varied: np.ndarray
    n_pairs: np.ndarray


def _ratio_estimates(
    runs, m, baseline, candidate, metric, cell, level, df_method, paired
) -> tuple[pd.DataFrame, _Estimates]:
    """Unpaired (Fieller on the ratio of means, Welch's p), and paired within rounds where the
    data allow it (see :func:`_round_pairs`); returns ``m`` with the pairs' columns."""
    va, vb = m["sd_a"] ** 2, m["sd_b"] ** 2
    fl = _fieller_arrays(m["mean_b"], vb, m["n_b"], m["mean_a"], va, m["n_a"], level, df_method)
    r, rlo, rhi, df, bounded = (np.array(x) for x in fl)
    p = _welch_arrays(m["mean_b"], vb, m["n_b"], m["mean_a"], va, m["n_a"])[2]
    pr = _round_pairs(runs, baseline, candidate, metric, cell)
    m = m.drop(columns=["n_pairs", "mean_d", "sd_d", "b_first"], errors="ignore")
    m = m.merge(pr, on=cell, how="left")
    n_pairs = m["n_pairs"].fillna(0).astype(int).to_numpy()
    varied = ((m["b_first"] > 0) & (m["b_first"] < m["n_pairs"])).to_numpy()
    use = (n_pairs >= 2) & (varied if paired == "auto" else paired is True)
    pp = _paired_arrays(m["mean_d"], m["sd_d"], n_pairs, level)
    return m, _Estimates(
        r=np.where(use, pp[0], r),
        rlo=np.where(use, pp[1], rlo),
        rhi=np.where(use, pp[2], rhi),
        df=np.where(use, pp[3], df),
        p=np.where(use, pp[4], p),
        bounded=np.where(use, n_pairs >= 2, bounded),
        use=use,
        varied=varied,
        n_pairs=n_pairs,
    )


def _improvement_pct(r, lo, hi, higher_is_better: bool):
    """A ratio and its interval as improvement % (positive: the candidate is better)."""
    if higher_is_better:
        return (r - 1) * 100, (lo - 1) * 100, (hi - 1) * 100
    return (1 - r) * 100, (1 - hi) * 100, (1 - lo) * 100


def _simultaneous_pct(m: pd.DataFrame, e: _Estimates, fam, level, df_method, hib):
    """Each cell's interval as improvement %, simultaneous (Bonferroni) over its Holm family:
    level 1 - (1 - level) / family size."""
    level_adj = 1 - (1 - level) / np.maximum(fam, 1)
    vb, va = m["sd_b"] ** 2, m["sd_a"] ** 2
    fa = _fieller_arrays(m["mean_b"], vb, m["n_b"], m["mean_a"], va, m["n_a"], level_adj, df_method)
    pa = _paired_arrays(m["mean_d"], m["sd_d"], e.n_pairs, level_adj)
    lo, hi = np.where(e.use, pa[1], fa[1]), np.where(e.use, pa[2], fa[2])
    return _improvement_pct(e.r, lo, hi, hib)[1:]


def _holm_family(m: pd.DataFrame, p: np.ndarray, first: str, family: str):
    """Holm-adjusted p and the family's size per cell: the whole comparison, or per value of
    the first key (``family="workload"``)."""
    fam = np.zeros(len(m), dtype=int)
    if family == "comparison":
        fam[:] = np.isfinite(p).sum()
        return holm(p), fam
    p_adj = np.full(len(m), np.nan)
    for _, idx in m.groupby(first, dropna=False).indices.items():
        p_adj[idx] = holm(p[idx])
        fam[idx] = np.isfinite(p[idx]).sum()
    return p_adj, fam


def _comparison_frame(m, cell, metric, baseline, candidate, use, n_pairs) -> pd.DataFrame:
    """:func:`compare_arms`' columns that restate the arms' summaries."""
    out = pd.DataFrame(
        {
            **{k: m[k] for k in cell},
            "metric": metric,
            "baseline": baseline,
            "candidate": candidate,
            "n_baseline": m["n_a"],
            "n_candidate": m["n_b"],
            "n_pairs": np.where(use, n_pairs, 0),
            "n_failed_baseline": m["n_failed_a"],
            "n_failed_candidate": m["n_failed_b"],
            f"baseline_{metric}": m["mean_a"],
            f"candidate_{metric}": m["mean_b"],
            "baseline_value": m["mean_a"],
            "candidate_value": m["mean_b"],
            "baseline_sd": m["sd_a"],
            "candidate_sd": m["sd_b"],
        }
    )
    if "lat_p95_ms_mean_a" in m.columns:
        out["baseline_lat_p95_ms"] = m["lat_p95_ms_mean_a"]
        out["candidate_lat_p95_ms"] = m["lat_p95_ms_mean_b"]
    return out


def _cell_notes(row, cell, baseline, candidate, paired, e: _Estimates, i: int) -> list[str]:
    """What a cell's runs say about its comparison: counts, missing arms, the arms' own
    warnings, pairing, an unbounded interval, no spread."""
    w: list[str] = []
    na, nb = row["n_a"], row["n_b"]
    if min(na, nb) == 1:
        w.append(f"n={na}+{nb}: point estimate only, no interval")
    elif 1 < min(na, nb) < N_WARN:
        w.append(f"n={na}+{nb}: fewer than {N_WARN} runs per arm, wide interval, low power")
    for arm, s in ((baseline, "_a"), (candidate, "_b")):
        if row["n" + s] == 0:
            where = (
                f"at {row['threads']} threads"
                if cell == ["workload", "threads"]
                else "in this cell"
            )
            w.append(f"{arm}: no runs {where}")
        for x in row["warnings" + s] if isinstance(row["warnings" + s], list) else []:
            if not x.startswith("n="):  # said once for both arms above
                w.append(f"{arm}: {x}")
    if e.use[i]:
        how = "arm order varied" if e.varied[i] else "as asked"
        w.append(f"paired within {e.n_pairs[i]} rounds ({how}): round drift cancels")
    elif paired is not False and e.n_pairs[i] >= 2 and not e.varied[i]:
        w.append(
            "unpaired: the arms ran in the same order in every round, so a within-round "
            "comparison would carry that order's bias"
        )
    if not e.use[i] and na >= 2 and nb >= 2 and not e.bounded[i]:
        w.append("Fieller interval unbounded: baseline mean not distinguishable from 0")
    if na >= 2 and nb >= 2 and row["sd_a"] == 0 and row["sd_b"] == 0:
        w.append(
            "no spread in either arm (sd = 0): the interval has zero width and p is 0 or 1 - "
            "identical figures look copied or rounded, not measured"
        )
    return w


def _verdict_notes(
    verdict, size, lo, hi, lo_adj, hi_adj, bounded, p_adj, fam, delta, level, alpha
) -> list[str]:
    """Why a cell's verdict is what it is: the simultaneous interval against the margin, and
    where the Holm p or the cell's own interval would have said otherwise."""
    w: list[str] = []
    sig = np.isfinite(p_adj) and p_adj < alpha
    excl = bounded and (lo > 0 or hi < 0)
    adj = f"[{lo_adj:+.1f}, {hi_adj:+.1f}]" if np.isfinite(lo_adj) else "[n/a]"
    d = f"{delta * 100:g}"
    if size == "at least delta":
        w.append(f"size at least {d}%: the simultaneous interval {adj} lies beyond the margin")
    elif size == "below delta":
        w.append(f"size below {d}%: the simultaneous interval {adj} lies within the margin")
    elif size == "size not settled":
        w.append(f"size not settled: the simultaneous interval {adj} reaches both sides of {d}%")
    elif verdict == "equivalent":
        w.append(f"equivalent: the simultaneous interval {adj} lies within the +-{d}% margin")
    elif verdict == "inconclusive" and not np.isfinite(lo_adj):
        w.append("inconclusive: the interval is unbounded; more runs are needed for any verdict")
    elif verdict == "inconclusive":
        w.append(
            f"inconclusive: the interval {adj} is wider than 4 x {d}%; more runs are needed "
            "for any verdict"
        )
    if verdict not in ("better", "worse", "n/a") and sig:
        w.append(
            f"Holm p={p_adj:.3g} < {alpha:g}, but the simultaneous interval {adj} "
            "includes 0: no claim"
        )
    elif verdict not in ("better", "worse", "n/a") and excl and fam > 1:
        w.append(
            f"the {level:.0%} interval excludes 0 for this cell alone, but the simultaneous "
            f"interval over the {fam} cells {adj} includes 0: not a claim"
        )
    return w


def log_mean_moments(values: Sequence[float]) -> tuple[float, float, int]:
    """``(log mean, its delta-method variance s² / (n · mean²), n)`` of one cell's runs; the
    variance is NaN when n < 2."""
    x = _values(values)
    m, n = float(x.mean()), len(x)
    var = float(x.var(ddof=1)) / (n * m * m) if n >= 2 else float("nan")
    return float(np.log(m)), var, n


def geomean_interval(
    log_means: Sequence[float],
    variances: Sequence[float],
    ns: Sequence[int],
    level: float = 0.95,
    *,
    base_log_means: Sequence[float] | None = None,
    base_variances: Sequence[float] | None = None,
    base_ns: Sequence[int] | None = None,
) -> dict:
    """The geometric mean over K cells, or of K ratios against base cells, with its interval.

    Estimator: log G = mean_k (log m_k − log b_k) (without a base: mean_k log m_k); interval
    log G ± t(df) · sqrt(V), V = Σ_k (v_k + w_k) / K², where v_k, w_k are the delta-method
    variances of the log means (:func:`log_mean_moments`: s² / (n · mean²)) and df is the
    Welch–Satterthwaite df over all the variance terms, V² / Σ (v/K²)² / (n − 1). The cells are
    treated as fixed (the interval is for these cells, not for an unseen one) and independent.
    Used for the sweep's thread counts (:func:`summarize_improvement`) and the TPC-H queries
    (:func:`tibenchlib.tpch.scaling.overall_summary`) alike.

    Returns ``{"geomean", "ci_low", "ci_high", "df", "k"}`` (the ratio G when a base is given);
    ``ci_*`` and ``df`` are None when any cell has n < 2 or there is no cell.
    """
    lm = np.asarray(log_means, float)
    parts = list(zip(np.asarray(variances, float), np.asarray(ns, float), strict=True))
    if base_log_means is not None:
        lm = lm - np.asarray(base_log_means, float)
        parts += list(
            zip(np.asarray(base_variances, float), np.asarray(base_ns, float), strict=True)
        )
    k = len(lm)
    out = {"geomean": None, "ci_low": None, "ci_high": None, "df": None, "k": k}
    if not k:
        return out
    center = float(lm.mean())
    out["geomean"] = float(np.exp(center))
    vs = np.array([v for v, _ in parts]) / k**2
    if np.isnan(vs).any():
        return out
    total = float(vs.sum())
    denom = float(sum(v * v / (n - 1) for v, (_, n) in zip(vs, parts, strict=True)))
    df = total * total / denom if denom > 0 else float("inf")
    half = float(_st.t.ppf(0.5 + level / 2, df)) * np.sqrt(total) if total > 0 else 0.0
    out.update(ci_low=float(np.exp(center - half)), ci_high=float(np.exp(center + half)), df=df)
    return out


def summarize_improvement(cmp_df: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Per workload: the reports' mean improvement and the geometric-mean ratio with its interval.

    Estimators: (1) the reports' figure, the arithmetic mean of the per-thread improvement %
    (no interval: it is what the published tables print); (2) the geometric mean G of the
    per-thread ratios R_k = mean(candidate)/mean(baseline), log G = mean_k log R_k, with a
    delta-method t interval on log G: Var(log R_k) ~ s_b^2/(n_b m_b^2) + s_a^2/(n_a m_a^2),
    df by Welch-Satterthwaite over all 2K variance terms.  The thread counts are treated as fixed
    (the interval is for these thread counts, not for an unseen one); cells assumed independent.
    For lower-is-better metrics the improvement is (1 - G) x 100.  The interval is null when
    any cell has n < 2.

    Returns
    -------
    DataFrame
        ``workload, n_threads, mean_improvement_pct, geomean_ratio, geomean_improvement_pct,
        geo_ci_low_pct, geo_ci_high_pct, df, method, warnings``.
    """
    _check_columns(
        cmp_df,
        [
            "workload",
            "improvement_pct",
            "baseline_value",
            "candidate_value",
            "n_baseline",
            "n_candidate",
        ],
        "comparison table",
    )
    rows = []
    for wl, g in cmp_df.groupby("workload", dropna=False, sort=False):
        hib = not lower_is_better(str(g["metric"].iloc[0])) if "metric" in g else True
        warns: list[str] = []
        g = g[np.isfinite(g["baseline_value"]) & np.isfinite(g["candidate_value"])]
        k = len(g)
        ma, mb = g["baseline_value"].to_numpy(float), g["candidate_value"].to_numpy(float)
        have_sd = {"baseline_sd", "candidate_sd"} <= set(g.columns)
        if k and have_sd and (g["n_baseline"] >= 2).all() and (g["n_candidate"] >= 2).all():
            na, nb = g["n_baseline"].to_numpy(float), g["n_candidate"].to_numpy(float)
            va = g["baseline_sd"].to_numpy(float) ** 2 / na / ma**2
            vb = g["candidate_sd"].to_numpy(float) ** 2 / nb / mb**2
        else:
            na = nb = np.ones(k)
            va = vb = np.full(k, np.nan)
            warns.append("some thread count has n<2: geometric mean without interval")
        gm = geomean_interval(
            np.log(mb), vb, nb, level, base_log_means=np.log(ma), base_variances=va, base_ns=na
        )
        G = gm["geomean"] if k else np.nan
        lo, hi = (np.nan, np.nan) if gm["ci_low"] is None else (gm["ci_low"], gm["ci_high"])
        dfv = np.nan if gm["df"] is None else gm["df"]
        if hib:
            gi, glo, ghi = (G - 1) * 100, (lo - 1) * 100, (hi - 1) * 100
        else:
            gi, glo, ghi = (1 - G) * 100, (1 - hi) * 100, (1 - lo) * 100
        rows.append(
            {
                "workload": wl,
                "n_threads": k,
                "mean_improvement_pct": g["improvement_pct"].mean() if k else np.nan,
                "geomean_ratio": G,
                "geomean_improvement_pct": gi,
                "geo_ci_low_pct": glo,
                "geo_ci_high_pct": ghi,
                "df": dfv,
                "method": "arithmetic mean of per-thread %; geometric mean of ratios, "
                "delta-method t interval on the log scale",
                "warnings": warns,
            }
        )
    return pd.DataFrame(rows)

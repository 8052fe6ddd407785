"""Where throughput stops growing: peak, saturation point, step table and Gunther's USL.

Replaces reading "the bottleneck starts at 64 threads" off a table by eye with figures that carry
their uncertainty: N_peak and N_sat from the cell means, a Fieller interval for every step
TPS(N_i+1)/TPS(N_i), and a Universal Scalability Law fit with an interval on its peak N*.
All of it is computed from repeated runs (the unit of replication); with one run per thread
count (published tables) only point figures come out and the warnings say so.
"""

from __future__ import annotations

import warnings as _warnings

import numpy as np
import pandas as pd
from scipy import optimize as _opt
from scipy import stats as _st

from .stats import _fieller_arrays, _valid_mask, summarize_cells

__all__ = ["saturation", "usl_fit", "usl_model", "step_table", "n_sat_interval", "still_rising"]

N_SAT_METHOD = (
    "test inversion: Fieller intervals of TPS(N) / TPS(M) for every pair of thread counts at the "
    "Bonferroni level 1 - alpha/K over the K thread counts; low = first N whose upper bounds "
    "against all others reach the fraction, high = first N whose lower bounds all do"
)

USL_METHOD = (
    "USL X(N) = lambda N / (1 + sigma (N-1) + kappa N (N-1)), relative least squares on every "
    "run (scipy curve_fit, sigma, kappa in [0, 1]); delta-method t interval on log N*"
)


def usl_model(n, lam: float, sigma: float, kappa: float):
    """Gunther's Universal Scalability Law: throughput at concurrency ``n``."""
    n = np.asarray(n, dtype=float)
    return lam * n / (1 + sigma * (n - 1) + kappa * n * (n - 1))


def _usl_jac(n, lam: float, sigma: float, kappa: float) -> np.ndarray:
    d = 1 + sigma * (n - 1) + kappa * n * (n - 1)
    g = -lam * n / d**2
    return np.column_stack([n / d, g * (n - 1), g * n * (n - 1)])


def _starts(n: np.ndarray, x: np.ndarray, keep: int = 3) -> list[tuple[float, float, float]]:
    """Starting points: lambda >= max X/N (the denominator is >= 1), then sigma, kappa by NNLS.

    Several lambdas are tried because lambda and sigma trade off when N = 1 is not tested; the
    ``keep`` with the smallest squared error start the nonlinear fit.
    """
    lam_min = float(np.max(x / n))
    a = np.column_stack([n - 1, n * (n - 1)])
    cand = []
    for f in (1.0, 1.05, 1.2, 1.5, 2.0, 3.0, 5.0, 10.0):
        lam = lam_min * f
        (s, k), _ = _opt.nnls(a, lam * n / x - 1)
        p = (lam, min(s, 1.0), min(k, 1.0))
        cand.append((float((((x - usl_model(n, *p)) / x) ** 2).sum()), p))
    cand.sort(key=lambda c: c[0])
    return [p for _, p in cand[:keep]]


def usl_fit(threads, tps, level: float = 0.95) -> dict:
    """Fit Gunther's USL to (threads, TPS) points, one point per run.

    Estimator: relative nonlinear least squares (``scipy.optimize.curve_fit`` with sigma = X,
    trust-region reflective; run-to-run TPS noise is roughly a constant fraction of TPS) of
    X(N) = lambda N / (1 + sigma (N-1) + kappa N (N-1)) with lambda > 0 and sigma, kappa in
    [0, 1], started from several lambda values with sigma, kappa by non-negative linear least
    squares.  Peak concurrency N* = sqrt((1 - sigma) / kappa); its interval is the delta method
    on log N* with the fit's covariance and t on (points - 3) df, so it stays positive.  Assumes
    independent points with a constant coefficient of variation around the curve; parameter
    intervals are asymptotic (about 95 % coverage in simulation with 6 thread counts x 5 runs
    at 3 % CV) and optimistic with fewer points.

    Returns
    -------
    dict
        ``lam, sigma, kappa`` (+ ``*_se``), ``kappa_ci_low, kappa_ci_high, n_star,
        n_star_ci_low, n_star_ci_high, x_star`` (throughput at N*), ``status`` ("peak";
        "peak outside range" when N* lies outside the tested thread counts and kappa's
        interval excludes 0; "no peak within range" when kappa's interval includes 0 and N*
        lies outside the range, or when kappa changes the fitted throughput by < 0.1 % at the
        largest N (then N* is None, never a huge number); "failed"), ``n_points,
        n_threads, df, rmse, r2, method, warnings``.
    """
    n = np.asarray(threads, dtype=float)
    x = np.asarray(tps, dtype=float)
    ok = np.isfinite(n) & np.isfinite(x) & (n > 0) & (x > 0)
    n, x = n[ok], x[ok]
    res = _usl_empty(n)
    warns: list[str] = res["warnings"]
    if res["n_threads"] < 6:
        warns.append(f"only {res['n_threads']} thread counts: USL needs 6 or more to be trusted")
    if res["n_threads"] < 3 or n.size < 4:
        warns.append("too few points to fit the USL")
        return res
    best = _usl_best_fit(n, x)
    if best is None:
        warns.append("USL fit did not converge")
        return res
    (lam, sigma, kappa), cov = best
    q = _usl_parameters(res, n, x, best, level)
    n_max, n_min = float(n.max()), float(n.min())
    # The optimiser stops short of the kappa = 0 bound; below 0.1 % of effect on the fitted
    # throughput at the largest N, kappa is 0 for every purpose and N* = sqrt(.../kappa) is noise.
    if kappa * n_max * (n_max - 1) <= 1e-3 * (1 + sigma * (n_max - 1)):
        res["status"] = "no peak within range"
        warns.append(
            "kappa ~ 0 (< 0.1% effect in the tested range): no retrograde throughput, the curve "
            "levels off towards lambda/sigma"
        )
        return res
    _usl_peak(res, lam, sigma, kappa, cov, q)
    n_star = res["n_star"]
    if not n_min <= n_star <= n_max:
        kappa_zero = res["kappa_ci_low"] is None or res["kappa_ci_low"] <= 0
        res["status"] = "no peak within range" if kappa_zero else "peak outside range"
        warns.append(
            f"N* = {n_star:.0f} lies outside the tested range {n_min:g}-{n_max:g} threads: "
            "extrapolated"
        )
        if kappa_zero:  # no peak: no N*, no interval to print beside a claim nobody can make
            res.update(n_star=None, n_star_ci_low=None, n_star_ci_high=None, x_star=None)
    return res


def _usl_empty(n: np.ndarray) -> dict:
    """:func:`usl_fit`'s answer before any fit: every figure None, status "failed"."""
    return {
        "lam": None,
        "sigma": None,
        "kappa": None,
        "lam_se": None,
        "sigma_se": None,
        "kappa_se": None,
        "kappa_ci_low": None,
        "kappa_ci_high": None,
        "n_star": None,
        "n_star_ci_low": None,
        "n_star_ci_high": None,
        "x_star": None,
        "status": "failed",
        "n_points": int(n.size),
        "n_threads": int(np.unique(n).size),
        "df": None,
        "rmse": None,
        "r2": None,
        "method": USL_METHOD,
        "warnings": [],
    }


def _usl_best_fit(n: np.ndarray, x: np.ndarray):
    """The relative least-squares fit with the smallest error over :func:`_starts`:
    ``(params, cov)``, or None when no start converges."""
    best = None
    for p0 in _starts(n, x):
        try:
            with _warnings.catch_warnings():
                _warnings.simplefilter("ignore")
                p, cov = _opt.curve_fit(
                    usl_model,
                    n,
                    x,
                    p0=p0,
                    bounds=([0, 0, 0], [np.inf, 1, 1]),
                    sigma=x,
                    jac=_usl_jac,
                    x_scale="jac",
                    max_nfev=2000,
                )
        except (RuntimeError, ValueError):
            continue
        sse = float((((x - usl_model(n, *p)) / x) ** 2).sum())
        if best is None or sse < best[0] * (1 - 1e-9):
            best = (sse, p, cov)
    return None if best is None else (best[1], best[2])


def _usl_parameters(res: dict, n, x, best, level: float) -> float:
    """The fit's parameters, their standard errors, kappa's interval and the goodness of fit
    into ``res``; returns the t quantile on the fit's df (NaN without df)."""
    (lam, sigma, kappa), cov = best
    dof = n.size - 3
    sse = float(((x - usl_model(n, lam, sigma, kappa)) ** 2).sum())
    sst = float(((x - x.mean()) ** 2).sum())
    res.update(
        lam=float(lam),
        sigma=float(sigma),
        kappa=float(kappa),
        df=int(dof),
        rmse=float(np.sqrt(sse / n.size)),
        r2=float(1 - sse / sst) if sst > 0 else None,
    )
    q = _st.t.ppf(0.5 + level / 2, dof) if dof > 0 else np.nan
    se = np.sqrt(np.diag(cov)) if np.all(np.isfinite(cov)) else np.full(3, np.nan)
    if dof > 0 and np.all(np.isfinite(se)):
        res.update(lam_se=float(se[0]), sigma_se=float(se[1]), kappa_se=float(se[2]))
        res["kappa_ci_low"] = float(kappa - q * se[2])
        res["kappa_ci_high"] = float(kappa + q * se[2])
    return q


def _usl_peak(res: dict, lam, sigma, kappa, cov, q: float) -> None:
    """N* = sqrt((1 - sigma) / kappa), the throughput there and N*'s interval (delta method
    on log N*) into ``res``, status "peak"."""
    n_star = float(np.sqrt((1 - sigma) / kappa))
    res.update(status="peak", n_star=n_star, x_star=float(usl_model(n_star, lam, sigma, kappa)))
    if res["kappa_se"] is None:
        return
    g = np.array([0.0, -0.5 / (1 - sigma) if sigma < 1 else np.nan, -0.5 / kappa])
    v = float(g @ cov @ g)
    if np.isfinite(v) and v >= 0:
        res["n_star_ci_low"] = float(np.exp(np.log(n_star) - q * np.sqrt(v)))
        res["n_star_ci_high"] = float(np.exp(np.log(n_star) + q * np.sqrt(v)))
    if res["kappa_ci_low"] is not None and res["kappa_ci_low"] <= 0:
        res["warnings"].append("kappa's interval includes 0: a throughput peak is not established")


def n_sat_interval(cells: pd.DataFrame, sat_frac: float = 0.95, level: float = 0.95) -> dict:
    """A confidence interval for N_sat, the smallest tested thread count whose mean throughput
    reaches ``sat_frac`` of the peak, by inverting Fieller tests between every pair of cells.

    Estimator: N is saturated when TPS(N) >= ``sat_frac`` x TPS(M) for every other thread count
    M. For each pair the Fieller interval of TPS(N) / TPS(M) is taken at the Bonferroni level
    1 - (1 - level)/K over the K thread counts. ``low`` is the first N whose upper bounds all reach
    ``sat_frac`` (N could be saturated), ``high`` the first N whose lower bounds all do (N is
    saturated beyond doubt). No cell is taken as the peak on its sample mean: the cell that looks
    highest must clear the same test against every other cell, so noise lifting a cell below the
    true N_sat cannot end the interval early. A miss needs one of at most 2(K - 1) one-sided
    errors at (1 - level)/(2K) each (the true N_sat against each cell, the cells below it against
    the true peak), so the interval covers with at least ``level`` probability; in the seeded
    simulations of ``tests/test_saturation.py`` (USL curves rising, peaked and levelling off,
    3 and 5 runs, CV 3-10 %) it covers 96-100 % of the time. A bootstrap over 3-5 runs would
    undercover. Needs n >= 2 in every cell, else the bounds are None.

    Returns
    -------
    dict
        ``n_sat_ci_low, n_sat_ci_high, level, method``.
    """
    c = cells.sort_values("threads").reset_index(drop=True)
    out = {"n_sat_ci_low": None, "n_sat_ci_high": None, "level": level, "method": N_SAT_METHOD}
    if len(c) < 2 or (c["n"] < 2).any():
        return out
    m, v, n = (c[k].to_numpy(float) for k in ("mean", "sd", "n"))
    v = v**2
    lv = 1 - (1 - level) / len(c)
    # rows: N, columns: M - the ratio TPS(N) / TPS(M) for every pair at once
    col, row = np.newaxis, slice(None)
    _, lo, hi, _, _ = _fieller_arrays(
        m[:, col], v[:, col], n[:, col], m[col, row], v[col, row], n[col, row], lv
    )
    upper = np.where(np.isfinite(hi), hi, np.inf)
    lower = np.where(np.isfinite(lo), lo, -np.inf)
    np.fill_diagonal(upper, np.inf)
    np.fill_diagonal(lower, np.inf)
    could, surely = upper.min(axis=1) >= sat_frac, lower.min(axis=1) >= sat_frac
    th = c["threads"].to_numpy()
    # some cell always could be saturated (the true peak, up to the error rate); if noise leaves
    # none, or none surely, the interval runs to the largest thread count tested
    out["n_sat_ci_low"] = th[int(np.argmax(could))].item() if could.any() else th[-1].item()
    out["n_sat_ci_high"] = th[int(np.argmax(surely))].item() if surely.any() else th[-1].item()
    return out


def _step_p(mb, vb, nb, ma, va, na, df) -> np.ndarray:
    """Two-sided p of ratio 1 for the step mb / ma: Welch's t on the df of Fieller's interval,
    the test that interval inverts (so p < 1 - level exactly when it excludes 1); NaN where
    either side has fewer than two runs."""
    mb, vb, nb, ma, va, na, df = (np.asarray(x, dtype=float) for x in (mb, vb, nb, ma, va, na, df))
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt(vb / nb + va / na)
        diff = mb - ma
        p = np.where(se > 0, 2 * _st.t.sf(np.abs(diff / se), df), np.where(diff == 0, 1.0, 0.0))
    return np.where(np.isfinite(df) & (np.minimum(na, nb) >= 2), p, np.nan)


def step_table(
    runs: pd.DataFrame, metric: str = "tps", level: float = 0.95, delta: float = 0.02
) -> pd.DataFrame:
    """Fieller intervals for TPS(N_i+1) / TPS(N_i) between consecutive thread counts.

    ``runs`` holds one workload x arm.  Estimator: ratio of the cell means with Fieller's
    interval (Welch-Satterthwaite df at the ratio estimate, see :func:`stats.fieller_ratio`).
    ``label``: "rising" when the interval lies above 1 and the ratio above 1 + ``delta``;
    "falling" mirrored; "flat" when the whole interval lies within 1 +- ``delta``; else
    "inconclusive"; "n/a" without an interval (n < 2).  ``point_label`` reads the point ratio
    alone against +-``delta`` (the only reading of a one-run table).  ``p_value``: the two-sided
    test of ratio 1 that the interval inverts (Welch's t on the interval's df), so p < 1 - level
    exactly when the interval excludes 1; :func:`still_rising` corrects it across a study.
    """
    cells = summarize_cells(runs, metric, level).sort_values("threads")
    cells = cells[cells["n"] > 0].reset_index(drop=True)
    a, b = cells.iloc[:-1].reset_index(drop=True), cells.iloc[1:].reset_index(drop=True)
    r, lo, hi, df, bounded = _fieller_arrays(
        b["mean"], b["sd"] ** 2, b["n"], a["mean"], a["sd"] ** 2, a["n"], level
    )
    has = np.isfinite(lo) & np.isfinite(hi)
    p = _step_p(b["mean"], b["sd"] ** 2, b["n"], a["mean"], a["sd"] ** 2, a["n"], df)
    label = np.select(
        [
            ~has,
            (lo > 1) & (r > 1 + delta),
            (hi < 1) & (r < 1 - delta),
            (lo >= 1 - delta) & (hi <= 1 + delta),
        ],
        ["n/a", "rising", "falling", "flat"],
        default="inconclusive",
    )
    point = np.select([r > 1 + delta, r < 1 - delta], ["rising", "falling"], default="flat")
    warns = [
        ([] if h else ["no interval (n<2)" if min(na, nb) < 2 else "Fieller interval unbounded"])
        for h, na, nb in zip(has, a["n"], b["n"], strict=True)
    ]
    return pd.DataFrame(
        {
            "threads_from": a["threads"],
            "threads_to": b["threads"],
            "tps_from": a["mean"],
            "tps_to": b["mean"],
            "n_from": a["n"],
            "n_to": b["n"],
            "ratio": r,
            "ci_low": lo,
            "ci_high": hi,
            "change_pct": (r - 1) * 100,
            "ci_low_pct": (lo - 1) * 100,
            "ci_high_pct": (hi - 1) * 100,
            "df": df,
            "p_value": p,
            "label": label,
            "point_label": point,
            "method": "Fieller, Welch-Satterthwaite df at the ratio estimate",
            "warnings": warns,
        }
    )


def _only(runs: pd.DataFrame, col: str, value):
    vals = runs[col].dropna().unique()
    if value is None:
        if len(vals) > 1:
            raise ValueError(f"runs hold several {col}s {sorted(map(str, vals))}: pass {col}=")
        return runs
    if value not in set(vals):
        raise ValueError(f"{col} {value!r} not found; present: {sorted(map(str, vals))}")
    return runs[runs[col] == value]


def _fmt(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def _sentence(f: dict, lang: str) -> str:
    n_peak, n_sat, n_max, peak = f["n_peak"], f["n_sat"], f["n_max"], f["peak_tps"]
    pct = round((1 - f["sat_frac"]) * 100)
    zh = lang == "zh"
    lo, hi = f.get("n_sat_ci_low"), f.get("n_sat_ci_high")
    iv = f" [{lo}–{hi}]" if lo is not None and hi is not None and lo != hi else ""
    if not f.get("saturated", True):
        s = (
            f"就数据所能判断,最大测试线程数({n_max},{_fmt(peak)} TPS)时吞吐量仍在上升:USL 拟合"
            "在测试范围内没有峰值,最后一步也未确定持平,因此不给出饱和点。"
            if zh
            else f"As far as the data tell, throughput is still rising at the largest thread "
            f"count tested ({n_max}, {_fmt(peak)} TPS): the USL fit finds no peak within the "
            "tested range and the last step is not established as flat, so no saturation point "
            "is claimed."
        )
    elif n_sat == n_max and n_peak == n_max:
        s = (
            f"最大测试线程数({n_max})时吞吐量仍在上升({_fmt(peak)} TPS):测试范围内未达到饱和。"
            if zh
            else f"Throughput is still rising at the largest thread count tested ({n_max}, "
            f"{_fmt(peak)} TPS): no saturation within the tested range."
        )
    elif n_peak == n_max:
        s = (
            f"从 {n_sat}{iv} 线程起吞吐量达到最高值({n_max} 线程,{_fmt(peak)} TPS,即最大测试线程数)"
            f"的 {100 - pct}% 以上;更高线程数时可能继续上升。"
            if zh
            else f"Throughput is within {pct}% of its highest figure ({_fmt(peak)} TPS at "
            f"{n_max} threads, the largest tested) from {n_sat}{iv} threads; it may rise further."
        )
    else:
        tail = f["frac_at_max"]
        if tail >= f["sat_frac"]:
            s = (
                f"从 {n_sat}{iv} 线程起吞吐量保持在峰值({n_peak} 线程,{_fmt(peak)} TPS)的 "
                f"{pct}% 以内。"
                if zh
                else f"Throughput stays within {pct}% of its peak ({_fmt(peak)} TPS at "
                f"{n_peak} threads) from {n_sat}{iv} threads on."
            )
        else:
            s = (
                f"吞吐量在 {n_peak} 线程达到峰值({_fmt(peak)} TPS),{n_max} 线程时回落到峰值的 "
                f"{tail * 100:.0f}%。"
                if zh
                else f"Throughput peaks at {n_peak} threads ({_fmt(peak)} TPS) and falls to "
                f"{tail * 100:.0f}% of the peak at {n_max} threads."
            )
    lat = f.get("latency")
    if lat and n_sat < n_max and f.get("saturated", True):
        r = lat["ratio"]
        if zh:
            how = "大约翻倍" if 1.9 <= r < 2.1 else (f"变为 {r:.1f} 倍")
            s += (
                f"p95 延迟从 {n_sat} 到 {n_max} 线程{how}"
                f"({lat['p95_at_sat']:.3g} → {lat['p95_at_max']:.3g} ms)。"
            )
        else:
            if 1.9 <= r < 2.1:
                how = "roughly doubles"
            elif 0.9 <= r < 1.1:
                how = "stays within 10%"
            else:
                how = f"{'rises' if r > 1 else 'falls'} {r:.1f}x"
            s += (
                f" p95 latency {how} from {n_sat} to {n_max} threads "
                f"({lat['p95_at_sat']:.3g} -> {lat['p95_at_max']:.3g} ms)."
            )
    u = f["usl"]
    ci = (
        f" [{u['n_star_ci_low']:.0f}, {u['n_star_ci_high']:.0f}]"
        if u["n_star_ci_low"] is not None
        else ""
    )
    if not f.get("saturated", True) and u["status"] == "no peak within range":
        return s
    shaky = u["kappa_ci_low"] is not None and u["kappa_ci_low"] <= 0
    if u["status"] == "peak":
        s += (
            f"USL 估计峰值并发 N* ≈ {u['n_star']:.0f}{ci}"
            + (",但 κ 的区间包含 0。" if shaky else "。")
            if zh
            else f" The USL puts the peak at N* = {u['n_star']:.0f}{ci} threads"
            + (", though kappa's interval includes 0." if shaky else ".")
        )
    elif u["status"] == "peak outside range":
        s += (
            f"USL 外推的峰值 N* ≈ {u['n_star']:.0f} 在测试范围之外。"
            if zh
            else f" The USL extrapolates a peak at N* = {u['n_star']:.0f} threads, outside the "
            "tested range."
        )
    elif u["status"] == "no peak within range":
        s += "USL:测试范围内无峰值。" if zh else " The USL finds no peak within the tested range."
    return s


def _saturated(f: dict) -> bool:
    """Whether the data support a saturation claim (see :func:`saturation`)."""
    u, steps = f["usl"], f["steps"]
    if u["status"] == "peak" or u["status"] == "failed":
        return True
    if u["status"] == "peak outside range" and u["n_star"] is not None and u["n_star"] < f["n_min"]:
        return True
    if not len(steps):
        return False
    last = steps["label"].iloc[-1]
    if last == "n/a":  # one run per thread count: only the point reading exists
        last = steps["point_label"].iloc[-1]
    return last in ("flat", "falling")


def saturation(
    runs: pd.DataFrame,
    workload: str | None = None,
    arm: str | None = None,
    metric: str = "tps",
    level: float = 0.95,
    delta: float = 0.02,
    sat_frac: float = 0.95,
    lang: str = "en",
) -> dict:
    """Saturation findings for one workload x arm of a thread sweep.

    Estimators: N_peak = the thread count with the largest mean run TPS; N_sat = the smallest
    thread count whose mean TPS is at least ``sat_frac`` (95 %) of that peak, with an interval
    (:func:`n_sat_interval`, n >= 2 per cell); a step table of
    Fieller intervals (:func:`step_table`); Gunther's USL fitted on every run (:func:`usl_fit`);
    the p95 latency cost from N_sat to the largest thread count (means of the runs' histogram
    p95).  Assumes independent runs; the thread counts are the ones tested, nothing is
    interpolated except by the USL.

    Returns
    -------
    dict
        ``workload, arm, n_peak, peak_tps, n_sat, n_sat_ci_low, n_sat_ci_high, saturated,
        n_min, n_max, frac_at_max, sat_frac, cells``
        (DataFrame, :func:`stats.summarize_cells`), ``steps`` (DataFrame), ``usl`` (dict),
        ``latency`` (dict or None), ``warnings`` (list) and ``sentence`` (str, ``lang`` "en"
        or "zh"). ``saturated`` is False - and the sentence claims no saturation - when the USL
        fit finds no peak within the range (or a peak beyond it) and the last step up is not
        established as flat or falling by its interval (a curve still rising, e.g. linear on a
        dense grid, where the 95 %-of-peak rule alone would name a thread count); ``n_sat``
        stays the descriptive figure of the tested points. One run per thread count (no fit,
        no intervals): the point reading as before.
    """
    runs = _only(_only(runs, "workload", workload), "arm", arm)
    runs = runs[_valid_mask(runs, metric)]
    if runs.empty:
        raise ValueError("no valid runs for this workload and arm")
    cells = summarize_cells(runs, metric, level).sort_values("threads").reset_index(drop=True)
    means = cells["mean"].to_numpy(float)
    th = cells["threads"].to_numpy()
    i_peak = int(np.nanargmax(means))
    peak = float(means[i_peak])
    i_sat = int(np.argmax(means >= sat_frac * peak))
    warns: list[str] = []
    if (cells["n"] < 2).any():
        warns.append("n=1 at some thread count: point figures only, no intervals")
    if i_peak == len(th) - 1:
        warns.append("the peak is at the largest thread count tested: saturation may lie beyond")
    f = {
        "workload": runs["workload"].iloc[0],
        "arm": runs["arm"].iloc[0],
        "n_peak": th[i_peak].item(),
        "peak_tps": peak,
        "n_sat": th[i_sat].item(),
        "n_min": th[0].item(),
        "n_max": th[-1].item(),
        "frac_at_max": float(means[-1] / peak),
        "sat_frac": sat_frac,
        "cells": cells,
        "steps": step_table(runs, metric, level, delta),
        "usl": usl_fit(runs["threads"], runs[metric], level),
        "latency": None,
    }
    warns += [f"USL: {w}" for w in f["usl"]["warnings"]]
    f.update(n_sat_interval(cells, sat_frac, level))
    f.pop("level"), f.pop("method")
    f["saturated"] = _saturated(f)
    if not f["saturated"]:
        f["n_sat_ci_low"] = f["n_sat_ci_high"] = None
        warns.append(
            "no saturation claimed: the USL fit has no peak within the tested range and the last "
            "step is not established as flat"
        )
    if "lat_p95_ms_mean" in cells.columns:
        l_sat, l_max = cells["lat_p95_ms_mean"].iloc[i_sat], cells["lat_p95_ms_mean"].iloc[-1]
        if np.isfinite(l_sat) and np.isfinite(l_max) and l_sat > 0:
            f["latency"] = {
                "p95_at_sat": float(l_sat),
                "p95_at_max": float(l_max),
                "ratio": float(l_max / l_sat),
            }
    f["warnings"] = warns
    f["sentence"] = _sentence(f, lang)
    return f


def _holm_rows(p: np.ndarray) -> np.ndarray:
    """Holm-adjusted p along the last axis (NaN: not in the family), for many families at once."""
    p = np.asarray(p, dtype=float)
    q = np.where(np.isfinite(p), p, np.inf)
    order = np.argsort(q, axis=-1, kind="stable")
    sorted_p = np.take_along_axis(q, order, axis=-1)
    m = np.isfinite(p).sum(axis=-1, keepdims=True)
    rank = np.arange(p.shape[-1])
    adj = np.maximum.accumulate(np.minimum(1.0, (m - rank) * sorted_p), axis=-1)
    out = np.empty_like(adj)
    np.put_along_axis(out, order, adj, axis=-1)
    return np.where(np.isfinite(p), out, np.nan)


def _rising_arrays(ratio, p, delta: float, alpha: float) -> np.ndarray:
    """Still rising with Holm over the last axis: adjusted p below ``alpha`` and the ratio above
    1 + ``delta``."""
    ratio = np.asarray(ratio, dtype=float)
    with np.errstate(invalid="ignore"):
        return (_holm_rows(p) < alpha) & (ratio > 1 + delta)


def still_rising(last_steps: pd.DataFrame, delta: float = 0.02, level: float = 0.95) -> np.ndarray:
    """Which units of a study (workload x arm) show throughput still rising at the top of the
    ladder, with Holm's correction across them.

    Each unit's claim rests on its last step (the last row of :func:`step_table`): alone it is
    "rising" when the step's interval lies above 1 and its ratio above 1 + ``delta``, a false
    claim on a flat top in 1.7-2.2 % of units (n = 3-5, CV 3 %), so 7-8 % of studies of four
    units and 15-18 % of nine claim one. Here
    the family is every unit passed: a unit is still rising when its step's ``p_value``,
    Holm-adjusted over the units with an interval, is below 1 - ``level``, and its ratio is
    above 1 + ``delta``; family-wise the false claims on flat tops stay at most (1 - ``level``)/2,
    one-sided (``tests/test_saturation.py``: 1.2-2.1 % over 4 and 9 flat units, n = 3 and 5). A
    unit
    with one run per thread count has no p and no interval; its point reading (``point_label``)
    stands, outside the family.

    Parameters
    ----------
    last_steps : DataFrame
        One row per unit: the last row of its step table (``ratio, p_value, n_from, n_to,
        point_label``).
    delta : float
        The margin the rise must pass (as in :func:`saturation`).
    level : float
        Confidence level; the family-wise error is 1 - ``level``.

    Returns
    -------
    ndarray of bool
        Per row: still rising.
    """
    p = last_steps["p_value"].to_numpy(float)
    ratio = last_steps["ratio"].to_numpy(float)
    in_family = _rising_arrays(ratio, p, delta, 1 - level)
    one_run = (np.minimum(last_steps["n_from"], last_steps["n_to"]) < 2).to_numpy()
    point = (last_steps["point_label"] == "rising").to_numpy()
    return np.where(one_run, point, in_family)

"""Throughput against threads for YCSB and TPC-C: where each workload × arm peaks, and whether
the intervals single that thread count out."""

from __future__ import annotations

import math

import pandas as pd
from scipy import stats as sps

from .record import Figure, Finding

__all__ = ["peak_findings", "rounds_to_separate"]

#: rounds searched for :func:`rounds_to_separate` (beyond, "more than" is the advice)
SEARCH_ROUNDS = 51


def _sd(half_width: float, n: int) -> float:
    """The runs' standard deviation behind a Student t 95% half-width on ``n`` runs."""
    return half_width * math.sqrt(n) / sps.t.ppf(0.975, n - 1)


def _log_scale(row: pd.Series) -> bool:
    # an interval symmetric on the log scale (mean × exp(±h)), as summarize_cells gives
    m, lo, hi = float(row["mean"]), float(row["ci_low"]), float(row["ci_high"])
    return lo > 0 and not math.isclose(hi - m, m - lo, rel_tol=1e-6)


def rounds_to_separate(top: pd.Series, other: pd.Series) -> int | None:
    """About how many runs per cell would keep two cells' Student t 95% intervals apart.

    Each cell's standard deviation is read back from its interval (half-width × sqrt(n) / t),
    on the log scale when the interval is (mean × exp(±h)); the count is the smallest m whose
    two half-widths, t(m-1) × sd / sqrt(m), add up to less than the gap between the means (the
    t quantile is recomputed at each m: at n = 2 it is 12.7, at 4 already 3.2).
    ``SEARCH_ROUNDS`` when even that many would not do (the means are too close: the cells may
    well be equal); None without intervals.
    """
    n1, n2 = int(top["n"]), int(other["n"])
    cols = ("mean", "ci_low", "ci_high")
    if min(n1, n2) < 2 or any(pd.isna(r[c]) for r in (top, other) for c in cols):
        return None
    log = _log_scale(top) and _log_scale(other)
    f = math.log if log else float
    sd = _sd(f(top["mean"]) - f(top["ci_low"]), n1) + _sd(
        f(other["ci_high"]) - f(other["mean"]), n2
    )
    gap = f(top["mean"]) - f(other["mean"])
    for m in range(max(n1, n2) + 1, SEARCH_ROUNDS):
        if sps.t.ppf(0.975, m - 1) * sd / math.sqrt(m) < gap:
            return m
    return SEARCH_ROUNDS


def peak_findings(cells: pd.DataFrame, phase: str, unit: str, evidence: str) -> list[Finding]:
    """One finding per workload × arm of ``cells`` (``workload, arm, threads, n, mean, ci_low,
    ci_high``): the thread count with the highest mean and, when another thread count's
    interval reaches the peak's, the counts that cannot be told apart from it."""
    out: list[Finding] = []
    if cells is None or not len(cells):
        return out
    # a workload said per language ({"en": …, "zh": …}) groups by its English name
    key = [x["en"] if isinstance(x, dict) else x for x in cells["workload"]]
    for (_, a), g in cells.groupby([key, "arm"], sort=False):
        w = g["workload"].iloc[0]
        g = g.dropna(subset=["mean"]).sort_values("threads").reset_index(drop=True)
        if not len(g):
            continue
        top = g.loc[g["mean"].astype(float).idxmax()]
        fig = Figure(top["mean"], top["ci_low"], top["ci_high"], unit, int(top["n"]), "mean, t")
        vals = {
            "workload": w,
            "arm": a,
            "threads": int(top["threads"]),
            "n_max": int(g["threads"].max()),
        }
        topic = f"{w['en'] if isinstance(w, dict) else w} · {a}"
        if len(g) == 1:  # one thread count: a figure, no peak to name
            out.append(Finding(phase, "f_peak_one", vals, fig, "info", "", evidence, topic))
            continue
        if pd.isna(top["ci_low"]):
            out.append(
                Finding(phase, "f_peak", vals, fig, "inconclusive", "one_run", evidence, topic)
            )
            continue
        tied = [
            int(t)
            for t, hi in zip(g["threads"], g["ci_high"], strict=True)
            if t != top["threads"] and not pd.isna(hi) and hi >= top["ci_low"]
        ]
        if tied:
            vals["tied"] = sorted([int(top["threads"]), *tied])
            # the closest rival decides how many rounds it would take
            rival = g[g["threads"].isin(tied)].sort_values("mean").iloc[-1]
            vals["n"] = int(min(g["n"]))
            vals["need"] = rounds_to_separate(top, rival)
            reason = "overlap_threads" if vals["need"] is None else "overlap_threads_need"
            out.append(
                Finding(phase, "f_peak_tied", vals, fig, "inconclusive", reason, evidence, topic)
            )
        elif int(top["threads"]) == vals["n_max"] and len(g) > 1:
            out.append(Finding(phase, "f_peak_top", vals, fig, "rising", "", evidence, topic))
        else:
            out.append(Finding(phase, "f_peak", vals, fig, "saturated", "", evidence, topic))
    return out

"""TPC-H arms compared pass by pass: the whole pass is the unit of replication.

A *pass* is one run of the query set on one arm in one mode (in throughput mode: every stream's
run of it, started together). The phase plans passes so that the arms alternate within rounds
(:func:`tibenchlib.tpch.phase.plan`: pass ``rep`` of every arm runs in round ``rep``, in the
order :func:`tibenchlib.runorder.arm_order` gives), or, where switching an arm is expensive (a
real cluster scaled between arms), as blocks with a return to the first arm at the end. Drift
over the phase (a warming cache, a neighbour's load) is then shared by the passes of one round,
and a comparison within rounds removes it; pooling the executions of many queries that shared
the same drift would not (the queries are not independent replicates).

Figures per pass (:func:`pass_table`):

``geomean_s``
    power mode: the geometric mean of the pass's query times over the queries that ran ok in
    every pass of every arm (the TPC-H power metric's form);
``qph``
    throughput mode: queries per hour, 3600 × (streams × queries) / elapsed, the elapsed time
    from the first stream's start to the last one's finish (the specification's
    Throughput@Size, in queries rather than query sets). Per-query times are never compared
    across arms that ran different numbers of streams.

Comparisons (:func:`compare_passes`): alternated passes are paired by round
(:func:`tibenchlib.stats.paired_ratio`: t on the within-round log ratios, df = rounds − 1).
Blocks A B … A compare each arm with the mean of the two A blocks on the log scale (a linear
drift cancels for an arm run between them) and state the A-to-A drift beside the verdict; a
change no larger than that drift is not claimed.

Per query (:func:`query_tests`): the within-round log ratios of one query, d_qr, with a
paired t (df = rounds − 1) and Holm across the queries of the mode. The test is exact for
normal log-times whatever each query's own variance, so over 22 queries with no change the
family-wise rate of false claims is just under its 5% (``benchmarks/bench_tpch_design.py``).
A moderated t (Smyth 2004, the empirical-Bayes model of limma) that borrows variance from the
other queries is available and measured there: far more power where the queries' CVs are
alike, too many false claims where they differ.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import special
from scipy import stats as st

from ..stats import holm, paired_ratio

__all__ = [
    "blocks_of",
    "compare_passes",
    "moderated_prior",
    "pass_table",
    "query_tests",
]

ALPHA = 0.05


def _measured(runs: pd.DataFrame) -> pd.DataFrame:
    if "warmup" in runs:
        return runs[~runs["warmup"].fillna(False).astype(bool)]
    return runs[runs["rep"] > 0]


def common_queries(runs: pd.DataFrame, mode: str, arms: Sequence[str]) -> list[int]:
    """Queries of ``mode`` that ran ok in every execution of every pass of ``arms``."""
    df = _measured(runs)
    df = df[(df["mode"] == mode) & df["arm"].astype(str).isin(list(arms))]
    if not len(df):
        return []
    ok = df.groupby("query")["status"].agg(lambda s: set(s) == {"ok"})
    per_arm = df.groupby("query")["arm"].nunique() == len(set(arms))
    good = ok & per_arm
    return sorted(int(q) for q in good[good].index)


def pass_table(runs: pd.DataFrame, arms: Sequence[str]) -> pd.DataFrame:
    """One row per (mode, arm, rep): the pass's figures.

    Returns
    -------
    DataFrame
        ``mode, arm, rep, streams, queries, started_at, elapsed_s, geomean_s, total_s, qph``;
        ``geomean_s`` and ``total_s`` over the mode's common queries (stream 0's executions
        in throughput mode), NaN for a pass missing one of them; ``qph`` from every ok
        execution of the pass, NaN when any execution of the pass failed.
    """
    cols = ["mode", "arm", "rep", "streams", "queries", "started_at", "elapsed_s", "geomean_s",
            "total_s", "qph"]  # fmt: skip
    df = _measured(runs)
    if not len(df):
        return pd.DataFrame(columns=cols)
    df = df.assign(arm=df["arm"].astype(str))
    df = df[df["arm"].isin(list(arms))]
    rows = []
    for mode, m in df.groupby("mode", sort=False):
        good = set(common_queries(df, mode, arms))
        for (arm, rep), p in m.groupby(["arm", "rep"], sort=False):
            end = p["started_at"] + p["seconds"].fillna(0)
            elapsed = float(end.max() - p["started_at"].min())
            all_ok = bool((p["status"] == "ok").all())
            s0 = p[(p["stream"] == p["stream"].min()) & p["query"].isin(good)]
            complete = len(good) > 0 and len(s0) == len(good) and all_ok
            secs = s0["seconds"].to_numpy(float)
            rows.append({
                "mode": mode, "arm": arm, "rep": int(rep),
                "streams": int(p["stream"].nunique()), "queries": int(len(p)),
                "started_at": float(p["started_at"].min()), "elapsed_s": elapsed,
                "geomean_s": float(np.exp(np.log(secs).mean())) if complete else math.nan,
                "total_s": float(secs.sum()) if complete else math.nan,
                "qph": 3600.0 * len(p) / elapsed if all_ok and elapsed > 0 else math.nan,
            })  # fmt: skip
    out = pd.DataFrame(rows, columns=cols)
    return out.sort_values(["mode", "started_at"]).reset_index(drop=True)


def blocks_of(passes: pd.DataFrame, base: str) -> dict | None:
    """The block design's two base blocks, or None for alternated passes.

    A phase run as blocks returns to the base arm at the end: the base's passes then number
    beyond every other arm's (reps 1..R in the first block, R+1.. in the return block).
    Returns ``{"first": [reps], "last": [reps]}`` when there is a return block.
    """
    b = passes[passes["arm"] == base]["rep"]
    others = passes[passes["arm"] != base]["rep"]
    if not len(b) or not len(others):
        return None
    r = int(others.max())
    last = sorted(int(x) for x in b if x > r)
    if not last:
        return None
    return {"first": sorted(int(x) for x in b if x <= r), "last": last}


def rounds_ordered(passes: pd.DataFrame) -> bool:
    """Whether the passes ran in rounds: in each mode, by start time, every pass of round r
    before any of round r + 1 (an alternated plan), and every round holding every arm. Block
    orders (A1 A2 A3 B1 B2 B3) fail; so does a table without start times."""
    if not len(passes) or passes["started_at"].isna().any():
        return False
    for _, m in passes.groupby("mode", sort=False):
        reps = m.sort_values("started_at")["rep"].to_numpy()
        if (np.diff(reps) < 0).any():
            return False
        if (m.groupby("rep")["arm"].nunique() != m["arm"].nunique()).any():
            return False
    return True


def _metric(mode: str) -> tuple[str, bool]:
    """The pass figure of ``mode`` and whether higher is better."""
    return ("qph", True) if mode == "throughput" else ("geomean_s", False)


def compare_passes(
    passes: pd.DataFrame, arms: Sequence[str], level: float = 0.95, metric: str | None = None
) -> pd.DataFrame:
    """Each arm against the first, per mode, pass by pass.

    Returns
    -------
    DataFrame
        ``mode, arm, base, metric, design, n, ratio, ci_low, ci_high, df, p_value,
        change_pct, ci_low_pct, ci_high_pct, drift_pct, drift_ci_low_pct, drift_ci_high_pct,
        within_drift, streams, base_streams``. ``ratio`` is arm / base of the mode's figure
        (``geomean_s`` in power mode, ``qph`` in throughput mode); ``change_pct`` = (ratio − 1)
        × 100 with its interval. ``design`` is ``alternated`` (the passes ran in rounds,
        :func:`rounds_ordered`: paired by round) or ``blocks``: against the mean of the two
        base blocks where the base returned at the end, with the base's drift from its first
        block to its last (``within_drift`` is True when the change is no larger than that
        drift); else unpaired, with no drift measured.
        ``metric`` names another column of :func:`pass_table` to compare in every mode.
    """
    base = arms[0]
    rows = []
    for mode, m in passes.groupby("mode", sort=False):
        col = metric or _metric(mode)[0]
        blocks = blocks_of(m, base)
        paired = blocks is None and rounds_ordered(m)
        b = m[m["arm"] == base].set_index("rep")
        for arm in arms[1:]:
            a = m[m["arm"] == arm].set_index("rep")
            if not len(a) or not len(b):
                continue
            row = {"mode": mode, "arm": arm, "base": base, "metric": col,
                   "streams": int(a["streams"].max()),
                   "base_streams": int(b["streams"].max())}  # fmt: skip
            if blocks is None and not paired:
                # blocks without a return (an earlier plan, or arms measured in any order):
                # unpaired, and no drift can be measured
                row.update(design="blocks", **_unpaired(a[col], b[col], level))
            elif blocks is None:
                reps = sorted(set(a.index) & set(b.index))
                x, y = a.loc[reps, col].to_numpy(float), b.loc[reps, col].to_numpy(float)
                keep = np.isfinite(x) & np.isfinite(y)
                row.update(design="alternated", n=int(keep.sum()))
                if keep.sum() >= 1:
                    r = paired_ratio(x[keep], y[keep], level)
                    row.update(ratio=r["ratio"], ci_low=r["ci_low"], ci_high=r["ci_high"],
                               df=r["df"], p_value=r["p_value"])  # fmt: skip
            else:
                row.update(design="blocks", **_bracketed(a[col], b, blocks, col, level))
            rows.append(_pct(row))
    cols = ["mode", "arm", "base", "metric", "design", "n", "ratio", "ci_low", "ci_high", "df",
            "p_value", "change_pct", "ci_low_pct", "ci_high_pct", "drift_pct",
            "drift_ci_low_pct", "drift_ci_high_pct", "within_drift", "streams",
            "base_streams"]  # fmt: skip
    return pd.DataFrame(rows).reindex(columns=cols)


def _log_values(v) -> np.ndarray:
    x = np.asarray(v, float)
    x = x[np.isfinite(x) & (x > 0)]
    return np.log(x)


def _welch(parts: list[tuple[float, np.ndarray]], level: float) -> tuple[float, float, float]:
    """``(estimate, half width, df)`` of Σ c·mean(x) on the log scale (Welch–Satterthwaite)."""
    est = sum(c * x.mean() for c, x in parts)
    terms = [c * c * x.var(ddof=1) / x.size for c, x in parts]
    var = sum(terms)
    if var <= 0:
        return est, 0.0, math.inf
    df = var * var / sum(t * t / (x.size - 1) for t, (_, x) in zip(terms, parts, strict=True))
    return est, float(st.t.ppf(0.5 + level / 2, df)) * math.sqrt(var), df


def _bracketed(arm_vals, base: pd.DataFrame, blocks: dict, metric: str, level: float) -> dict:
    """An arm run between two base blocks against their mean, and the base's drift."""
    x = _log_values(arm_vals)
    a1 = _log_values(base.loc[[r for r in blocks["first"] if r in base.index], metric])
    a2 = _log_values(base.loc[[r for r in blocks["last"] if r in base.index], metric])
    out: dict = {"n": int(min(x.size, a1.size, a2.size))}
    if min(x.size, a1.size, a2.size) < 2:
        return out
    est, half, df = _welch([(1.0, x), (-0.5, a1), (-0.5, a2)], level)
    d, dhalf, _ = _welch([(1.0, a2), (-1.0, a1)], level)
    p = 2 * st.t.sf(abs(est) / (half / st.t.ppf(0.5 + level / 2, df)), df) if half else 0.0
    out.update(
        ratio=math.exp(est), ci_low=math.exp(est - half), ci_high=math.exp(est + half), df=df,
        p_value=float(p), drift_pct=(math.exp(d) - 1) * 100,
        drift_ci_low_pct=(math.exp(d - dhalf) - 1) * 100,
        drift_ci_high_pct=(math.exp(d + dhalf) - 1) * 100,
        within_drift=bool(abs(est) <= abs(d)),
    )  # fmt: skip
    return out


def _unpaired(arm_vals, base_vals, level: float) -> dict:
    """An arm against the base's passes, unpaired (Welch on the log scale)."""
    x, y = _log_values(arm_vals), _log_values(base_vals)
    out: dict = {"n": int(min(x.size, y.size))}
    if min(x.size, y.size) < 2:
        return out
    est, half, df = _welch([(1.0, x), (-1.0, y)], level)
    p = 2 * st.t.sf(abs(est) / (half / st.t.ppf(0.5 + level / 2, df)), df) if half else 0.0
    out.update(ratio=math.exp(est), ci_low=math.exp(est - half), ci_high=math.exp(est + half),
               df=df, p_value=float(p))  # fmt: skip
    return out


def _pct(row: dict) -> dict:
    for src, dst in (("ratio", "change_pct"), ("ci_low", "ci_low_pct"), ("ci_high", "ci_high_pct")):
        v = row.get(src)
        row[dst] = None if v is None or not np.isfinite(v) else (v - 1) * 100
    return row


# ------------------------------------------------------------------------- per query


def moderated_prior(s2: np.ndarray, d: np.ndarray) -> tuple[float, float]:
    """The prior ``(d0, s0²)`` of the queries' variances, by Smyth's (2004) moments.

    Each query's sample variance s² on d df is taken as s0² · χ²(d0)-scaled draws: on the log
    scale e = log s² − ψ(d/2) + log(d/2) has mean log s0² + ψ(d0/2) − log(d0/2) and variance
    ψ'(d/2) + ψ'(d0/2). d0 is found from the excess variance of e (infinite, all variances
    pooled, when there is none); s0² from its mean.
    """
    keep = np.isfinite(s2) & (s2 > 0) & (d > 0)
    s2, d = s2[keep], d[keep]
    if s2.size < 2:
        return 0.0, math.nan
    e = np.log(s2) - special.digamma(d / 2) + np.log(d / 2)
    excess = e.var(ddof=1) - float(np.mean(special.polygamma(1, d / 2)))
    if excess <= 0:
        return math.inf, float(np.exp(e.mean()))
    d0 = 2 * _trigamma_inverse(excess)
    s02 = float(np.exp(e.mean() + special.digamma(d0 / 2) - np.log(d0 / 2)))
    return float(d0), s02


def _trigamma_inverse(y: float) -> float:
    """x with ψ'(x) = y (Newton's method on 1/ψ', as limma's trigammaInverse)."""
    if y > 1e7:
        return 1 / math.sqrt(y)
    if y < 1e-6:
        return 1 / y
    x = 0.5 + 1 / y
    for _ in range(50):
        tri = float(special.polygamma(1, x))
        step = tri * (1 - tri / y) / float(special.polygamma(2, x))
        x += step
        if -step / x < 1e-8:
            break
    return x


def query_tests(
    d: pd.DataFrame, level: float = 0.95, alpha: float = ALPHA, *, moderated: bool = False
) -> pd.DataFrame:
    """Paired t per query on the within-round log ratios, Holm across the queries.

    Parameters
    ----------
    d
        One row per (query, round): ``query`` and ``d``, the log of the arm's time over the
        base's in that round.
    moderated
        Shrink each query's variance towards a prior fitted over the queries
        (:func:`moderated_prior`) and add the prior's df. Not the default: with 22 queries and
        2-4 df each the prior's df is poorly estimated, and where the queries' CVs differ the
        family-wise rate exceeds its level (``benchmarks/bench_tpch_design.py``: 9-16% at n = 3).

    Returns
    -------
    DataFrame
        ``query, n, ratio, ratio_ci_low, ratio_ci_high, df, p_value, p_adjusted, d0``: the ratio
        exp(mean d) with its interval; interval and p None below two rounds.
    """
    g = d.groupby("query")["d"]
    n = g.size().to_numpy(float)
    mean = g.mean().to_numpy(float)
    s2 = g.var(ddof=1).to_numpy(float)
    dfq = n - 1
    d0, s02 = moderated_prior(s2, dfq) if moderated else (0.0, 0.0)
    out = pd.DataFrame({"query": g.size().index.astype(int), "n": n.astype(int)})
    if not math.isfinite(s02):
        cols = ["ratio", "ratio_ci_low", "ratio_ci_high", "df", "p_value", "p_adjusted"]
        return out.assign(**{c: None for c in cols}, d0=None)
    with np.errstate(invalid="ignore", divide="ignore"):
        if math.isinf(d0):
            post, dft = np.full(n.shape, s02), np.full(n.shape, math.inf)
        else:
            post = (d0 * s02 + dfq * np.where(np.isfinite(s2), s2, 0.0)) / (d0 + dfq)
            dft = d0 + dfq
        se = np.sqrt(post / n)
        t = mean / se
        p = 2 * st.t.sf(np.abs(t), dft)
        p = np.where(se == 0, np.where(mean == 0, 1.0, 0.0), p)
        q = st.t.ppf(0.5 + level / 2, dft)
    ok = (n >= 2) & (dft > 0)
    p = np.where(ok, p, np.nan)
    return out.assign(
        ratio=np.exp(mean),
        ratio_ci_low=np.where(ok, np.exp(mean - q * se), np.nan),
        ratio_ci_high=np.where(ok, np.exp(mean + q * se), np.nan),
        df=np.where(ok, dft, np.nan),
        p_value=p,
        p_adjusted=holm(p),
        d0=d0 if moderated else None,
    )


def round_log_ratios(obs: pd.DataFrame, base: str, arm: str) -> pd.DataFrame:
    """Per (mode, query, round) where both arms ran ok: d = log(t_arm / t_base).

    ``obs`` is :func:`tibenchlib.tpch.scaling.observations`' table (one row per arm, mode,
    query, rep).
    """
    ok = obs[(obs["status"] == "ok") & obs["seconds"].gt(0)]
    a = ok[ok["arm"] == arm].set_index(["mode", "query", "rep"])["seconds"]
    b = ok[ok["arm"] == base].set_index(["mode", "query", "rep"])["seconds"]
    both = pd.concat({"a": a, "b": b}, axis=1, join="inner")
    return both.assign(d=np.log(both["a"] / both["b"])).reset_index()[["mode", "query", "rep", "d"]]

"""Scaling statistics for TPC-H arms: per-query times, improvement, speedup, efficiency, totals.

Input is the tidy run table of :func:`.execute.run_queries` (several arms concatenated): one row
per execution with ``arm``, ``mode``, ``query``, ``rep``, ``stream``, ``status``, ``seconds``,
``warmup`` and ``verified``. Warm-up rows are dropped. In throughput mode the streams of one
repeat ran at the same time and are not independent, so their mean is one observation per
repeat; the repeats are the sample (n = repeats in both modes).

Report 002's figure is the *improvement* ``(t_base − t_arm) / t_base × 100`` against the first
arm (positive = faster). When the arms' passes alternated within rounds (the phase's design
wherever arms can switch, see :mod:`.passes`), a query's ratio ``t_arm / t_base`` is the
geometric mean of its within-round ratios, tested with the paired t of
:func:`.passes.query_tests` (df = rounds − 1) and Holm's step-down across the queries of
one mode (22 queries are 22 tests). When they ran
as blocks, it comes from :func:`tibenchlib.stats.compare_arms` with the cell keys query × mode
× arm: the Fieller interval of the ratio of mean times (Welch–Satterthwaite df), Welch's p and
Holm. In throughput mode, arms that ran different numbers of streams are not compared query by
query (a query's time under two streams is not the same measure as under one): their
comparison is queries per hour (:func:`.passes.compare_passes`). Speedup is ``t_base / t_arm``
with the reciprocal interval, and parallel efficiency is the speedup divided by the ideal
linear speedup ``units_arm / units_base`` (instances or cores). Each query gets one of three
verdicts (:data:`SCALING`): "faster" or "slower" when the Holm p < 0.05 and the bounded
interval lies on that side of 0, else "no detectable change" - which is not evidence that
nothing changed, only that these
repeats cannot tell. With one repeat (n = 1, as in the report) every interval is None.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from .. import paths
from ..stats import compare_arms, geomean_interval, log_mean_moments, log_ratio, t_interval
from . import passes as P

#: The per-query verdicts against the base arm, in this order.
SCALING = ("faster", "slower", "no detectable change")
ALPHA = 0.05

SUMMARY_COLUMNS = [
    "query",
    "arm",
    "mode",
    "n",
    "status",
    "mean_s",
    "ci_low_s",
    "ci_high_s",
    "improvement_pct",
    "ci_low_pct",
    "ci_high_pct",
    "verified",
    "ratio",
    "ratio_ci_low",
    "ratio_ci_high",
    "speedup",
    "speedup_ci_low",
    "speedup_ci_high",
    "units",
    "ideal_speedup",
    "efficiency",
    "efficiency_ci_low",
    "efficiency_ci_high",
    "not_scaled",
    "warnings",
    "p_value",
    "p_adjusted",
    "scaling",
]
#: The columns ``tibench run --phase tpch_scaling --json`` prints (issue 6, section 5).
CLI_COLUMNS = SUMMARY_COLUMNS[:12]
OVERALL_COLUMNS = [
    "mode",
    "arm",
    "n_queries",
    "excluded",
    "geomean_s",
    "geomean_ci_low_s",
    "geomean_ci_high_s",
    "geomean_ratio",
    "ratio_ci_low",
    "ratio_ci_high",
    "improvement_pct",
    "ci_low_pct",
    "ci_high_pct",
    "speedup",
    "speedup_ci_low",
    "speedup_ci_high",
    "efficiency",
    "efficiency_ci_low",
    "efficiency_ci_high",
    "not_scaled",
    "total_s",
    "total_ratio",
    "total_ratio_ci_low",
    "total_ratio_ci_high",
    "total_improvement_pct",
    "total_ci_low_pct",
    "total_ci_high_pct",
]
_STATUS_RANK = {"ok": 0, "timeout": 1, "error": 2}


def arm_order(runs: pd.DataFrame, arms: Sequence[str] | None = None) -> list[str]:
    """Arms in the given order, else in order of first appearance; the first is the base."""
    if arms:
        return [str(a) for a in arms]
    return list(dict.fromkeys(str(a) for a in runs["arm"]))


def arm_units(arms: Sequence[str], units: dict[str, float] | None = None) -> dict[str, float]:
    """Scale units per arm (TiFlash instances, cores): given, else the label read as a number
    (``"3"`` → 3); NaN when neither."""
    out = {}
    for a in arms:
        if units and a in units:
            out[a] = float(units[a])
        else:
            try:
                out[a] = float(a)
            except ValueError:
                out[a] = math.nan
    return out


def observations(runs: pd.DataFrame) -> pd.DataFrame:
    """One observation per (arm, mode, query, rep): the mean over streams of that repeat.

    Returns
    -------
    DataFrame
        ``arm, mode, query, rep, status, seconds, verified``: ``status`` is the worst of the
        streams' (``error`` > ``timeout`` > ``ok``); ``seconds`` is the mean over streams whose
        status is ok (NaN when none); ``verified`` False if any stream's answer was wrong, True
        if all were checked and right, else None.
    """
    df = runs
    if "warmup" in df:
        df = df[~df["warmup"].fillna(False).astype(bool)]
    df = df.assign(arm=df["arm"].astype(str))
    ok_secs = df["seconds"].where(df["status"] == "ok")
    df = df.assign(_ok_seconds=ok_secs, _rank=df["status"].map(_STATUS_RANK).fillna(2))
    grouped = df.groupby(["arm", "mode", "query", "rep"], sort=False)
    out = grouped.agg(seconds=("_ok_seconds", "mean"), _rank=("_rank", "max")).reset_index()
    inverse = {v: k for k, v in _STATUS_RANK.items()}
    out["status"] = out["_rank"].map(inverse)
    ver = grouped["verified"].agg(_all_verified) if "verified" in df else None
    out["verified"] = ver.to_numpy() if ver is not None else None
    return out.drop(columns="_rank")[
        ["arm", "mode", "query", "rep", "status", "seconds", "verified"]
    ]


def _all_verified(values: pd.Series) -> bool | None:
    vals = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if any(v is False or v == 0 for v in vals):
        return False
    if vals and len(vals) == len(values):
        return True
    return None


def _ratio_interval(num: np.ndarray, den: np.ndarray, level: float) -> dict:
    if len(num) == 0 or len(den) == 0:
        return {"ratio": None, "ci_low": None, "ci_high": None, "warnings": ["no times"]}
    return log_ratio(num, den, level=level)


def query_summary(
    runs: pd.DataFrame,
    arms: Sequence[str] | None = None,
    *,
    units: dict[str, float] | None = None,
    level: float = 0.95,
) -> pd.DataFrame:
    """Per query, mode and arm: mean time with its t interval, and scaling against the base arm.

    Parameters
    ----------
    runs
        Execution rows of :func:`.execute.run_queries`, several arms.
    arms
        Arm order; the first is the base (default: order of appearance).
    units
        Scale units per arm for the efficiency (default: arm labels read as numbers).
    level
        Confidence level of every interval.

    Returns
    -------
    DataFrame
        :data:`SUMMARY_COLUMNS`. ``mean_s`` is the mean of the repeats whose status is ok, with
        the t interval on the log scale (a time is positive); comparisons need every repeat ok
        in both arms and n ≥ 2. ``p_value`` is Welch's, ``p_adjusted`` Holm's across the
        compared queries of the mode; ``scaling`` is one of :data:`SCALING` (None for the base
        arm and without a test); ``not_scaled`` is True unless the query is significantly
        faster (so a slower query is listed too), None without a test.
    """
    order = arm_order(runs, arms)
    base = order[0]
    unit = arm_units(order, units)
    obs = observations(runs)
    in_rounds = "started_at" in runs and P.rounds_ordered(P.pass_table(runs, order))
    tests = _tests(obs, order, level, _streams(runs), in_rounds=in_rounds)
    rows = []
    for (mode, query), cell in obs.groupby(["mode", "query"], sort=True):
        times = {a: g for a, g in cell.groupby("arm")}
        base_obs = times.get(base)
        for a in order:
            g = times.get(a)
            if g is None:
                continue
            row = _summary_row(query, mode, a, g, base_obs, a == base, unit, base, level)
            test = dict(tests.get((mode, int(query), a)) or {}) or None
            if test and test.get("skip"):
                # per-query times under different numbers of streams are not compared
                row.update(_no_comparison())
                row["warnings"] = "; ".join(filter(None, [row["warnings"], test["skip"]]))
                test = None
            elif test and "ratio" in test:
                r, lo, hi = test.pop("ratio"), test.pop("ratio_ci_low"), test.pop("ratio_ci_high")
                if lo is not None and hi is not None:
                    # alternated passes: the figure is the within-round one its verdict reads
                    row.update(_scaling_fields(r, lo, hi, row["ideal_speedup"]))
                else:
                    test = None
            elif row["ratio_ci_low"] is None:
                test = None
            if test:
                row.update(test, not_scaled=test["scaling"] != "faster")
            rows.append(row)
    out = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    arm_rank = {a: i for i, a in enumerate(order)}
    out = out.sort_values(
        ["mode", "query", "arm"], key=lambda s: s.map(arm_rank) if s.name == "arm" else s
    )
    return out.reset_index(drop=True)


def _streams(runs: pd.DataFrame) -> dict:
    """Streams per (arm, mode) among the measured executions."""
    if "stream" not in runs:
        return {}
    df = runs[~runs["warmup"].fillna(False).astype(bool)] if "warmup" in runs else runs
    return df.groupby([df["arm"].astype(str), "mode"])["stream"].nunique().to_dict()


#: The warning on a throughput row whose arms ran different numbers of streams.
STREAMS_DIFFER = "streams differ between the arms: compared by queries per hour, not per query"


def _no_comparison() -> dict:
    keys = ("improvement_pct", "ci_low_pct", "ci_high_pct", "ratio", "ratio_ci_low",
            "ratio_ci_high", "speedup", "speedup_ci_low", "speedup_ci_high", "efficiency",
            "efficiency_ci_low", "efficiency_ci_high", "not_scaled")  # fmt: skip
    return dict.fromkeys(keys)


def alternated(obs: pd.DataFrame, base: str, arm: str) -> bool:
    """Whether ``arm`` and ``base`` ran the same passes (rounds), so they pair by round; the
    block design's return to the base adds passes only the base has."""
    a = set(obs.loc[obs["arm"] == arm, "rep"])
    b = set(obs.loc[obs["arm"] == base, "rep"])
    return bool(a) and a == b


def _tests(
    obs: pd.DataFrame,
    order: list[str],
    level: float,
    streams: dict | None = None,
    *,
    in_rounds: bool = True,
) -> dict:
    """Per (mode, query, arm) against the base: p, Holm p across the mode's queries, the
    three-way verdict; only queries whose every repeat was ok in both arms are in a family.

    Passes that ran in rounds (``in_rounds``, :func:`.passes.rounds_ordered`): the paired t
    of :func:`.passes.query_tests` (the ratio and its interval come with it). Otherwise
    (blocks, or an order not known): Welch against every base pass. A throughput mode
    whose arms ran different numbers of streams gets no per-query test (``skip``)."""
    base, out = order[0], {}
    streams = streams or {}
    for a in order[1:]:
        pair = obs[obs["arm"].isin([base, a])]
        all_ok = pair.groupby(["mode", "query"])["status"].agg(lambda s: set(s) == {"ok"})
        two = pair.groupby(["mode", "query"])["arm"].nunique() == 2
        keep = all_ok & two
        pair = pair.set_index(["mode", "query"]).loc[keep[keep].index].reset_index()
        if not len(pair):
            continue
        for mode, mp in pair.groupby("mode", sort=False):
            if mode == "throughput" and streams.get((a, mode)) != streams.get((base, mode)):
                for q in mp["query"].unique():
                    out[(mode, int(q), a)] = {"skip": STREAMS_DIFFER}
                continue
            if in_rounds and alternated(mp, base, a):
                out.update(_paired_tests(mp, base, a, mode, level))
            else:
                out.update(_welch_tests(mp, base, a, level))
    return out


def _paired_tests(mp: pd.DataFrame, base: str, arm: str, mode: str, level: float) -> dict:
    d = P.round_log_ratios(mp, base, arm)
    res = P.query_tests(d, level)
    out = {}
    for r in res.itertuples(index=False):
        lo, hi = _opt(r.ratio_ci_low), _opt(r.ratio_ci_high)
        padj = _opt(r.p_adjusted)
        out[(mode, int(r.query), arm)] = {
            "p_value": _opt(r.p_value),
            "p_adjusted": padj,
            "scaling": _scaling(padj, lo, hi),
            "ratio": _opt(r.ratio),
            "ratio_ci_low": lo,
            "ratio_ci_high": hi,
        }
    return out


def _welch_tests(pair: pd.DataFrame, base: str, a: str, level: float) -> dict:
    out = {}
    cmp = compare_arms(
        pair,
        base,
        a,
        metric="seconds",
        higher_is_better=False,
        level=level,
        alpha=ALPHA,
        family="workload",  # Holm within each mode (the first key)
        paired=False,
        keys=["mode", "query", "arm"],
    )
    for r in cmp.itertuples(index=False):
        p, padj = _opt(r.p_value), _opt(r.p_adjusted)
        out[(r.mode, int(r.query), a)] = {
            "p_value": p,
            "p_adjusted": padj,
            "scaling": _scaling(padj, _opt(r.ratio_ci_low), _opt(r.ratio_ci_high)),
        }
    return out


def _opt(x) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def _scaling(p_adj, lo, hi) -> str | None:
    """Faster / slower / no detectable change, from the Holm p and the time ratio's interval."""
    if p_adj is None:
        return None
    if p_adj < ALPHA and lo is not None and hi is not None:
        if hi < 1:
            return "faster"
        if lo > 1:
            return "slower"
    return "no detectable change"


def _summary_row(query, mode, arm, g, base_obs, is_base, unit, base, level) -> dict:
    ok = g["seconds"][g["status"] == "ok"].to_numpy(float)
    n = len(g)
    statuses = set(g["status"])
    status = "ok" if statuses == {"ok"} else max(statuses, key=lambda s: _STATUS_RANK.get(s, 2))
    warnings = []
    if status != "ok":
        warnings.append(f"{n - len(ok)} of {n} repeats {status}")
    ti = (
        t_interval(ok, level, positive=True)
        if len(ok)
        else {"mean": None, "ci_low": None, "ci_high": None}
    )
    if len(ok) == 1:
        warnings.append("n = 1: no interval")
    row = {
        "query": int(query),
        "arm": arm,
        "mode": mode,
        "n": n,
        "status": status,
        "mean_s": ti["mean"],
        "ci_low_s": ti["ci_low"],
        "ci_high_s": ti["ci_high"],
        "verified": _all_verified(g["verified"]),
        "units": unit.get(arm),
        "ideal_speedup": None,
        "not_scaled": None,
        "p_value": None,
        "p_adjusted": None,
        "scaling": None,
    }
    for k in (
        "improvement_pct",
        "ci_low_pct",
        "ci_high_pct",
        "ratio",
        "ratio_ci_low",
        "ratio_ci_high",
        "speedup",
        "speedup_ci_low",
        "speedup_ci_high",
        "efficiency",
        "efficiency_ci_low",
        "efficiency_ci_high",
    ):
        row[k] = None
    ideal = unit.get(arm, math.nan) / unit.get(base, math.nan)
    row["ideal_speedup"] = None if math.isnan(ideal) else ideal
    if is_base and status == "ok":
        row.update(
            ratio=1.0,
            improvement_pct=0.0,
            speedup=1.0,
            efficiency=1.0 if row["ideal_speedup"] else None,
        )
    elif base_obs is not None and status == "ok" and set(base_obs["status"]) == {"ok"}:
        base_t = base_obs["seconds"].to_numpy(float)
        fr = _ratio_interval(ok, base_t, level)
        row.update(_scaling_fields(fr["ratio"], fr["ci_low"], fr["ci_high"], row["ideal_speedup"]))
        row["not_scaled"] = None  # set from the Holm-corrected verdict (query_summary)
        warnings += [w for w in fr.get("warnings", []) if "no interval" not in w]
    elif base_obs is not None:
        warnings.append("not compared: a repeat of this query failed or timed out in an arm")
    row["warnings"] = "; ".join(dict.fromkeys(warnings)) or None
    return row


def _scaling_fields(ratio, lo, hi, ideal) -> dict:
    """Improvement, speedup and efficiency (with intervals) from a time ratio arm/base."""
    out: dict = {"ratio": ratio, "ratio_ci_low": lo, "ratio_ci_high": hi}
    if ratio is None:
        return out
    out["improvement_pct"] = (1.0 - ratio) * 100.0
    out["speedup"] = 1.0 / ratio if ratio else None
    if lo is not None and hi is not None:
        out["ci_low_pct"] = (1.0 - hi) * 100.0
        out["ci_high_pct"] = (1.0 - lo) * 100.0
        out["speedup_ci_low"] = 1.0 / hi if hi > 0 else None
        out["speedup_ci_high"] = 1.0 / lo if lo > 0 else None
        out["not_scaled"] = bool(out["ci_low_pct"] <= 0.0 <= out["ci_high_pct"])
    if ideal and out.get("speedup") is not None:
        out["efficiency"] = out["speedup"] / ideal
        if out.get("speedup_ci_low") is not None and out.get("speedup_ci_high") is not None:
            out["efficiency_ci_low"] = out["speedup_ci_low"] / ideal
            out["efficiency_ci_high"] = out["speedup_ci_high"] / ideal
    return out


def cli_rows(summary: pd.DataFrame) -> pd.DataFrame:
    """The columns the command line prints, in its order (:data:`CLI_COLUMNS`)."""
    return summary[CLI_COLUMNS].reset_index(drop=True)


# ------------------------------------------------------------------------- over all queries


def overall_summary(
    runs: pd.DataFrame,
    arms: Sequence[str] | None = None,
    *,
    units: dict[str, float] | None = None,
    level: float = 0.95,
) -> pd.DataFrame:
    """Per mode and arm, over the queries that ran ok in every repeat of every arm.

    Geometric mean of the per-query mean times, and of the per-query time ratios against the
    base arm, with intervals from the delta method on the log scale: the variance of a log mean
    is s²/(n·mean²); the queries are independent, so variances add, and the t quantile uses
    the Welch–Satterthwaite df. This is measurement uncertainty for this fixed set of queries,
    not variation between queries. The ratio of total time uses per-repeat totals over the same
    queries (the sum of one repeat's query times) with the Fieller interval.

    Returns
    -------
    DataFrame
        ``mode, arm, n_queries, excluded, geomean_s, geomean_ci_low_s, geomean_ci_high_s,
        geomean_ratio, ratio_ci_low, ratio_ci_high, improvement_pct, ci_low_pct, ci_high_pct,
        speedup, speedup_ci_low, speedup_ci_high, efficiency, total_s, total_ratio,
        total_ratio_ci_low, total_ratio_ci_high, total_improvement_pct, total_ci_low_pct,
        total_ci_high_pct, not_scaled``.
    """
    order = arm_order(runs, arms)
    base = order[0]
    unit = arm_units(order, units)
    obs = observations(runs)
    by_pass = _pass_figures(runs, order, level)
    rows = []
    for mode, mobs in obs.groupby("mode", sort=True):
        status = mobs.groupby(["query", "arm"])["status"].agg(lambda s: set(s) == {"ok"})
        all_ok = status.unstack("arm").reindex(columns=order).fillna(False).all(axis=1)
        good = sorted(all_ok[all_ok].index)
        excluded = sorted(set(mobs["query"]) - set(good))
        cells = {
            (q, a): g["seconds"].to_numpy(float)
            for (q, a), g in mobs[mobs["query"].isin(good)].groupby(["query", "arm"])
        }
        base_moments = {q: log_mean_moments(cells[(q, base)]) for q in good}
        for a in order:
            row = _overall_row(
                mode, a, base, good, excluded, cells, base_moments, mobs, unit, level
            )
            if a != base and (mode, a) in by_pass:
                row.update(_from_passes(by_pass[(mode, a)], unit, a, base))
            rows.append(row)
    return pd.DataFrame(rows).reindex(columns=OVERALL_COLUMNS)


def _pass_figures(runs: pd.DataFrame, order: list[str], level: float) -> dict:
    """Per (mode, arm): the pass-by-pass comparisons of the geometric mean and the total (the
    unit of replication is the pass; the queries of one pass shared its drift), when the
    runs carry the pass columns (``started_at``, ``stream``)."""
    if not {"started_at", "stream"} <= set(runs.columns) or len(order) < 2:
        return {}
    passes = P.pass_table(runs, order)
    if not len(passes):
        return {}
    g = P.compare_passes(passes, order, level, metric="geomean_s").set_index(["mode", "arm"])
    t = P.compare_passes(passes, order, level, metric="total_s").set_index(["mode", "arm"])
    return {k: {"geomean": g.loc[k], "total": t.loc[k]} for k in g.index}


def _from_passes(cmp: dict, unit: dict, arm: str, base: str) -> dict:
    """The overall row's ratio fields from the pass comparisons (None where they have none;
    none at all in a throughput mode whose arms ran different numbers of streams)."""
    g, t = cmp["geomean"], cmp["total"]
    if g["streams"] != g["base_streams"]:
        return {**_no_comparison(), "geomean_ratio": None, "total_ratio": None,
                "total_ratio_ci_low": None, "total_ratio_ci_high": None,
                "total_improvement_pct": None, "total_ci_low_pct": None,
                "total_ci_high_pct": None}  # fmt: skip
    ideal = unit.get(arm, math.nan) / unit.get(base, math.nan)
    ideal = None if math.isnan(ideal) else ideal
    fields = _scaling_fields(_opt(g["ratio"]), _opt(g["ci_low"]), _opt(g["ci_high"]), ideal)
    out = {("geomean_ratio" if k == "ratio" else k): v for k, v in fields.items()}
    tr, tlo, thi = _opt(t["ratio"]), _opt(t["ci_low"]), _opt(t["ci_high"])
    out.update(total_ratio=tr, total_ratio_ci_low=tlo, total_ratio_ci_high=thi,
               total_improvement_pct=None if tr is None else (1 - tr) * 100,
               total_ci_low_pct=None if thi is None else (1 - thi) * 100,
               total_ci_high_pct=None if tlo is None else (1 - tlo) * 100)  # fmt: skip
    return out


def _overall_row(mode, arm, base, good, excluded, cells, base_moments, mobs, unit, level):
    row: dict = {
        "mode": mode,
        "arm": arm,
        "n_queries": len(good),
        "excluded": ",".join(f"Q{q}" for q in excluded) or None,
    }
    if not good:
        return row
    moments = [log_mean_moments(cells[(q, arm)]) for q in good]
    own = geomean_interval(*zip(*moments, strict=True), level)
    row.update(geomean_s=own["geomean"], geomean_ci_low_s=own["ci_low"])
    row["geomean_ci_high_s"] = own["ci_high"]
    ideal = unit.get(arm, math.nan) / unit.get(base, math.nan)
    ideal = None if math.isnan(ideal) else ideal
    if arm == base:
        row.update(
            geomean_ratio=1.0,
            improvement_pct=0.0,
            speedup=1.0,
            efficiency=1.0 if ideal else None,
            total_ratio=1.0,
            total_improvement_pct=0.0,
        )
    else:
        bm, bv, bn = zip(*(base_moments[q] for q in good), strict=True)
        gm = geomean_interval(
            *zip(*moments, strict=True), level, base_log_means=bm, base_variances=bv, base_ns=bn
        )
        fields = _scaling_fields(gm["geomean"], gm["ci_low"], gm["ci_high"], ideal)
        row.update({("geomean_ratio" if k == "ratio" else k): v for k, v in fields.items()})
        tot_arm, tot_base = _rep_totals(mobs, arm, good), _rep_totals(mobs, base, good)
        tr = _ratio_interval(tot_arm, tot_base, level)
        row.update(
            total_ratio=tr["ratio"],
            total_ratio_ci_low=tr["ci_low"],
            total_ratio_ci_high=tr["ci_high"],
        )
        if tr["ratio"] is not None:
            row["total_improvement_pct"] = (1 - tr["ratio"]) * 100
            if tr["ci_low"] is not None and tr["ci_high"] is not None:
                row["total_ci_low_pct"] = (1 - tr["ci_high"]) * 100
                row["total_ci_high_pct"] = (1 - tr["ci_low"]) * 100
    row["total_s"] = float(_rep_totals(mobs, arm, good).mean())
    return row


def _rep_totals(mobs: pd.DataFrame, arm: str, good: list[int]) -> np.ndarray:
    cell = mobs[(mobs["arm"] == arm) & mobs["query"].isin(good)]
    totals = cell.groupby("rep")["seconds"].agg(["sum", "count"])
    return totals.loc[totals["count"] == len(good), "sum"].to_numpy(float)


def run_elapsed(runs: pd.DataFrame) -> pd.DataFrame:
    """Wall time of each repeat (first start to last finish over its streams), per arm and
    mode: in throughput mode this is the figure concurrency should shrink."""
    df = runs[~runs["warmup"].fillna(False).astype(bool)] if "warmup" in runs else runs
    df = df.assign(_end=df["started_at"] + df["seconds"].fillna(0))
    g = df.groupby(["arm", "mode", "rep"], sort=False)
    out = g.agg(start=("started_at", "min"), end=("_end", "max"), queries=("query", "size"))
    out["elapsed_s"] = out["end"] - out["start"]
    return out.reset_index()[["arm", "mode", "rep", "queries", "elapsed_s"]]


# ------------------------------------------------------------------------- report 002


def seed002_path() -> Path:
    return paths.reference_file("seed002_tiflash_tpch.csv")


def load_seed002(path: str | Path | None = None) -> pd.DataFrame:
    """Report 002's table: ``query, tiflash_instances, seconds, improvement_pct_reported``
    (the reported percentage is empty for the 3-instance base)."""
    return pd.read_csv(path or seed002_path())


def seed002_runs(table: pd.DataFrame | None = None) -> pd.DataFrame:
    """Report 002's times as run rows (one repeat, power mode, arm = instance count), ready
    for :func:`query_summary`."""
    t = load_seed002() if table is None else table
    return pd.DataFrame(
        {
            "arm": t["tiflash_instances"].astype(str),
            "mode": "power",
            "stream": 0,
            "rep": 1,
            "warmup": False,
            "query": t["query"].str.removeprefix("Q").astype(int),
            "status": "ok",
            "seconds": t["seconds"].astype(float),
            "verified": None,
        }
    )


def improvement_pct(t_base: float, t_arm: float) -> float:
    """Report 002's formula: (t_base − t_arm) / t_base × 100."""
    return (t_base - t_arm) / t_base * 100.0

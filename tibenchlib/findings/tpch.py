"""The TPC-H scaling phase's findings, per mode and arm against the base arm.

Power mode: how many queries got faster or slower (paired t over the rounds, Holm
across the queries) and the time saved over all queries, the geometric mean per whole pass
compared pass by pass (the pass is the unit of replication). Throughput mode: queries per hour
per pass (streams × queries / elapsed), never a query's time under different numbers of
streams. A design run as blocks (A B … A) states the drift of the base arm between its two
blocks, and a change no larger than it is not claimed. Stand-ins say what they stand in for.
"""

from __future__ import annotations

import pandas as pd

from ..report import tables as T
from ..report.tpch_queries import resolved
from .record import Caveat, Figure, Finding

__all__ = ["tpch_findings"]


def _unresolved(k: int) -> dict:
    """The clause after "N without a detectable change" naming the unresolved among them."""
    if not k:
        return {"en": "", "zh": ""}
    return {
        "en": f" ({k} of them not resolved: their times varied too much over the repeats)",
        "zh": f"（其中 {k} 个无法确定：耗时在多次测试中波动过大）",
    }


#: On the embedded server the arms are CPU sets standing in for TiFlash instance counts.
CPU_SETS = Caveat(
    "tpch_cpu_sets",
    {
        "en": "The arms are CPU sets given to the local MariaDB, standing in for TiFlash nodes "
        "(report 002 scales TiFlash instances 3 → 4 → 5); MariaDB runs each query on one thread, "
        "so the power times are not expected to change between them.",
        "zh": "测试组是分配给本地 MariaDB 的 CPU 集合，用来代替 TiFlash 节点（报告 002 中 TiFlash "
        "实例数为 3 → 4 → 5）；MariaDB 每条查询只用一个线程，因此单流 (Power) 耗时在测试组之间"
        "预计不会变化。",
    },
)


def blocks_caveat(base: str, drift: float | None, lo: float | None, hi: float | None) -> Caveat:
    """The block design's caveat: the arms ran in blocks, with the base's measured drift."""
    if drift is None:
        fig_en, fig_zh = "not measured", "未能测得"
    else:
        iv = "" if lo is None or hi is None else f" [{lo:+.1f}, {hi:+.1f}]"
        fig_en = fig_zh = f"{drift:+.1f}%{iv}"
    return Caveat(
        "tpch_blocks",
        {
            "en": f"Blocks instead of alternation: every pass of an arm ran in one block (an arm "
            f"switch scales the cluster), then {base} again; {base} drifted {fig_en} from its "
            "first block to its last, and a change no larger than that is not claimed.",
            "zh": f"按组连续运行而非交替：每个测试组的全部轮次连续执行（切换测试组需要扩缩集群），"
            f"最后再运行一次 {base}；{base} 从第一组到最后一组的漂移为 {fig_zh}，"
            "不超过该漂移的变化不作结论。",
        },
    )


def tpch_findings(
    summary: pd.DataFrame,
    overall: pd.DataFrame,
    base: str,
    compared: pd.DataFrame | None = None,
    *,
    stand_in: bool = False,
) -> list[Finding]:
    """Findings from :func:`tibenchlib.tpch.scaling.query_summary`,
    :func:`~tibenchlib.tpch.scaling.overall_summary` and
    :func:`~tibenchlib.tpch.passes.compare_passes` (``compared``, each arm's pass-by-pass
    comparison per mode; throughput findings need it).

    The overall figure claims what its interval supports, as the per-query verdicts do: "time
    saved" only when the interval lies above 0, "longer" when below, else "no change shown".
    A time saved is a positive quantity's ratio: an estimate or upper bound at or above 100%
    is impossible and is withheld (the finding keeps the counts, not the figure). A throughput
    mode is judged by its queries per hour. ``stand_in``: the arms are local CPU sets.
    """
    out: list[Finding] = []
    if summary is None or not len(summary) or "scaling" not in summary:
        return out
    cmp = _indexed(compared)
    d = summary[summary["scaling"].notna() | (summary["mode"] == "throughput")]
    d = d[d["arm"] != base]
    for (mode, arm), g in d.groupby(["mode", "arm"], sort=False):
        c = cmp.get((mode, arm))
        caveats = _caveats(c, base, stand_in)
        if mode == "throughput":
            if c is not None:
                out.append(_throughput(c, base, arm, caveats))
            continue
        g = g[g["scaling"].notna()]
        if not len(g):
            continue
        out.append(_power(g, overall, c, mode, base, arm, caveats))
    return out


def _indexed(compared: pd.DataFrame | None) -> dict:
    if compared is None or not len(compared):
        return {}
    return {(r["mode"], r["arm"]): r for r in compared.to_dict("records")}


def _opt(x) -> float | None:
    return None if x is None or pd.isna(x) else float(x)


def _caveats(c: dict | None, base: str, stand_in: bool) -> tuple[Caveat, ...]:
    out = [CPU_SETS] if stand_in else []
    if c is not None and c.get("design") == "blocks":
        out.append(
            blocks_caveat(
                base,
                _opt(c.get("drift_pct")),
                _opt(c.get("drift_ci_low_pct")),
                _opt(c.get("drift_ci_high_pct")),
            )
        )
    return tuple(out)


def _estimator(c: dict | None, what: str) -> str:
    if c is None:
        return f"{what}, delta method over the queries"
    if c.get("design") == "blocks":
        return f"{what} per pass, against both blocks of the base arm (Welch t on the log scale)"
    return f"{what} per pass, paired by round (t on the log ratios, df = rounds - 1)"


def _within_drift(c: dict | None) -> bool:
    if c is None or c.get("design") != "blocks":
        return False
    w = c.get("within_drift")
    return bool(w) if w is not None and not pd.isna(w) else False


def _throughput(c: dict, base: str, arm: str, caveats) -> Finding:
    """Queries per hour, arm against base, pass by pass."""
    fig = Figure(
        _opt(c["change_pct"]),
        _opt(c["ci_low_pct"]),
        _opt(c["ci_high_pct"]),
        "%",
        int(c["n"]) if _opt(c.get("n")) is not None else None,
        _estimator(c, "queries per hour (streams x queries / elapsed)"),
    )
    vals = {
        "base": base,
        "arm": arm,
        "streams": int(c["streams"]),
        "base_streams": int(c["base_streams"]),
    }
    verdict, reason = "inconclusive", "interval_wide_n"
    vals["n"] = fig.n
    if fig.has_interval and (fig.ci_low > 0 or fig.ci_high < 0):
        verdict, reason = ("better" if fig.ci_low > 0 else "worse"), ""
    elif not fig.has_interval:
        reason = "too_few_runs" if (fig.n or 0) < 2 else "unbounded"
    if verdict != "inconclusive" and _within_drift(c):
        verdict, reason = "inconclusive", "within_drift"
        vals["drift_pct"] = _opt(c.get("drift_pct"))
    return Finding(
        "tpch_scaling",
        "f_tpch_qph",
        vals,
        fig,
        verdict,
        reason,
        "tpch_scaling: whole query sets",
        f"throughput · {arm} / {base}",
        caveats,
    )


def _power(g, overall, c, mode, base, arm, caveats) -> Finding:
    counts = g["scaling"].value_counts()
    vals = {
        "mode": mode,
        "arm": arm,
        "base": base,
        "n": len(g),
        "faster": int(counts.get("faster", 0)),
        "slower": int(counts.get("slower", 0)),
        "same": int(counts.get("no detectable change", 0)),
        # the queries among "same" whose change the repeats did not size (the per-query
        # table reads "not resolved"): said, so the finding and the table agree
        "unresolved": _unresolved(sum(not resolved(r) for r in g.itertuples())),
    }
    fig = None
    o = overall[(overall["mode"] == mode) & (overall["arm"] == arm)] if len(overall) else overall
    key = "f_tpch_counts"
    n_passes = int(c["n"]) if c is not None and _opt(c.get("n")) is not None else None
    if len(o):
        r = o.iloc[0]
        how = _estimator(c, "geometric mean of the query times")
        fig = Figure(
            r["improvement_pct"],
            r["ci_low_pct"],
            r["ci_high_pct"],
            "% saved",
            n_passes if n_passes is not None else int(g["n"].min()),
            how,
        )
        said = T.saved_verdict(fig.ci_low, fig.ci_high)
        if said in ("better", "worse") and _within_drift(c):
            said = "~"  # no larger than the base's own drift between its blocks
        if said == "worse":
            # clearly longer: "saved -81%" said as what it is, the time grown by +81%
            key = "f_tpch_counts_longer"
            fig = Figure(
                -fig.estimate, -fig.ci_high, -fig.ci_low, "%", fig.n, how + "; time change"
            )
        elif said != "better":
            # the interval reaches 0 (or there is none, or the change is within the drift): no
            # time saved is shown overall, as no query is called faster whose interval reaches 0
            key = "f_tpch_counts_nochange"
    verdict = (
        "better"
        if vals["faster"] and not vals["slower"]
        else ("worse" if vals["slower"] and not vals["faster"] else "info")
    )
    reason = ""
    if _within_drift(c) and verdict in ("better", "worse"):
        verdict, reason = "inconclusive", "within_drift"
        vals["drift_pct"] = _opt(c.get("drift_pct"))
    elif not vals["faster"] and not vals["slower"]:
        verdict, reason = "inconclusive", "no_query_shown"
        if key != "f_tpch_counts_nochange" and fig is not None:
            # the whole set's interval clears 0 where no one query's does: the total is
            # said as a total, the queries as too small a change to show one by one
            key += "_pooled"
            verdict = "better" if key == "f_tpch_counts_pooled" else "worse"
            reason = ""
    if _within_drift(c) and "drift_pct" not in vals:
        vals["drift_pct"] = _opt(c.get("drift_pct"))
    return Finding(
        "tpch_scaling",
        key,
        vals,
        fig,
        verdict,
        reason,
        "tpch_scaling: per-query table",
        f"{mode} · {arm} / {base}",
        caveats,
    )

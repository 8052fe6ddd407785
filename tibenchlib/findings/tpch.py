"""The TPC-H scaling phase's findings: per mode and arm, how many queries got faster or slower
than on the base arm (Welch, Holm across the queries), and the geometric mean time saved."""

from __future__ import annotations

import pandas as pd

from ..report import tables as T
from ..report.tpch_queries import resolved
from .record import Figure, Finding

__all__ = ["tpch_findings"]


def _unresolved(k: int) -> dict:
    """The clause after "N without a detectable change" naming the unresolved among them."""
    if not k:
        return {"en": "", "zh": ""}
    return {
        "en": f" ({k} of them not resolved: their times varied too much over the repeats)",
        "zh": f"（其中 {k} 个无法确定：耗时在多次测试中波动过大）",
    }


def tpch_findings(summary: pd.DataFrame, overall: pd.DataFrame, base: str) -> list[Finding]:
    """Findings from :func:`tibenchlib.tpch.scaling.query_summary` and
    :func:`~tibenchlib.tpch.scaling.overall_summary`.

    The overall figure claims what its interval supports, as the per-query verdicts do: "time
    saved" only when the interval lies above 0, "longer" when below, else "no change shown".
    A time saved is a positive quantity's ratio: an estimate or upper bound at or above 100%
    is impossible and is withheld (the finding keeps the counts, not the figure).
    """
    out: list[Finding] = []
    if summary is None or not len(summary) or "scaling" not in summary:
        return out
    d = summary[summary["scaling"].notna()]
    for (mode, arm), g in d.groupby(["mode", "arm"], sort=False):
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
        o = (
            overall[(overall["mode"] == mode) & (overall["arm"] == arm)]
            if len(overall)
            else overall
        )
        key = "f_tpch_counts"
        if len(o):
            r = o.iloc[0]
            fig = Figure(
                r["improvement_pct"],
                r["ci_low_pct"],
                r["ci_high_pct"],
                "% saved",
                int(g["n"].min()),
                "geometric mean of time ratios, delta method",
            )
            said = T.saved_verdict(fig.ci_low, fig.ci_high)
            if said == "worse":
                # clearly longer: "saved -81%" said as what it is, the time grown by +81%
                key = "f_tpch_counts_longer"
                how = "geometric mean of time ratios, delta method; time change"
                fig = Figure(-fig.estimate, -fig.ci_high, -fig.ci_low, "%", fig.n, how)
            elif said != "better":
                # the interval reaches 0 (or there is none): no time saved is shown overall,
                # as no query is called faster whose interval reaches 0
                key = "f_tpch_counts_nochange"
        verdict = (
            "better"
            if vals["faster"] and not vals["slower"]
            else ("worse" if vals["slower"] and not vals["faster"] else "info")
        )
        reason = ""
        if not vals["faster"] and not vals["slower"]:
            verdict, reason = "inconclusive", "no_query_shown"
            if key != "f_tpch_counts_nochange" and fig is not None:
                # the whole set's interval clears 0 where no one query's does: the total is
                # said as a total, the queries as too small a change to show one by one
                key += "_pooled"
                verdict = "better" if key == "f_tpch_counts_pooled" else "worse"
                reason = ""
        out.append(
            Finding(
                "tpch_scaling",
                key,
                vals,
                fig,
                verdict,
                reason,
                "tpch_scaling: per-query table",
                f"{mode} · {arm} / {base}",
            )
        )
    return out

"""The DM phase's findings: per unit and knob, which settings the intervals single out.

A setting is recommended only when its interval supports it: the smallest setting "within 5%
of the best" needs the Fieller interval of its ratio to clear 0.95 (``sure``); when the best
setting's interval overlaps others', those settings "cannot be told apart".
"""

from __future__ import annotations

import pandas as pd

from ..dm.analysis import THROUGHPUT, setting_order
from .record import Figure, Finding

__all__ = ["dm_findings"]


def dm_findings(rows: pd.DataFrame, rec: pd.DataFrame) -> list[Finding]:
    """Findings from :func:`tibenchlib.dm.analysis.result_rows` and
    :func:`~tibenchlib.dm.analysis.recommendation`."""
    out: list[Finding] = []
    if rows is None or not len(rows):
        return out
    ok = rows[rows["status"] != "failed"]
    for (unit, knob, wl), g in ok.groupby(["unit", "knob", "workload"], sort=False):
        metric = THROUGHPUT[unit]
        g = g.dropna(subset=[metric])
        if not len(g):
            continue
        order = setting_order(g["setting"])
        g = g.set_index("setting").loc[[s for s in order if s in set(g["setting"])]].reset_index()
        ib = int(g[metric].astype(float).idxmax())
        best = g.loc[ib]
        unit_txt = "MB/s" if metric == "mb_s" else "rows/s"
        topic = f"{unit} · {knob}"
        vals = {"unit": unit, "knob": knob, "workload": wl, "best": str(best["setting"])}
        if pd.isna(best["ci_low"]) or pd.isna(best["ci_high"]):
            vals["reason_n"] = int(best["n"])
            out.append(
                Finding(
                    "dm",
                    "f_dm_open",
                    vals,
                    Figure(best[metric], None, None, unit_txt, int(best["n"]), "mean"),
                    "inconclusive",
                    "one_run",
                    "dm: knob table",
                    topic,
                )
            )
            continue
        tied = [
            str(r["setting"])
            for _, r in g.iterrows()
            if r["setting"] != best["setting"]
            and not pd.isna(r["ci_high"])
            and r["ci_high"] >= best["ci_low"]
        ]
        fig = Figure(
            best[metric], best["ci_low"], best["ci_high"], unit_txt, int(best["n"]), "mean, t"
        )
        r = (
            rec[(rec["unit"] == unit) & (rec["knob"] == knob) & (rec["workload"] == wl)]
            if len(rec)
            else rec
        )
        if len(r) and r.iloc[0]["smallest"] != r.iloc[0]["best"] and r.iloc[0]["sure"]:
            x = r.iloc[0]
            vals.update(smallest=str(x["smallest"]))
            rfig = Figure(
                100 * (x["ratio"] - 1),
                100 * (x["ci_low"] - 1),
                100 * (x["ci_high"] - 1),
                "%",
                int(best["n"]),
                "Fieller ratio of means",
            )
            out.append(
                Finding(
                    "dm", "f_dm_within", vals, rfig, "equivalent", "", "dm: recommendations", topic
                )
            )
            continue
        if tied:
            vals["tied"] = [str(best["setting"]), *tied]
            out.append(
                Finding(
                    "dm", "f_dm_tied", vals, fig, "inconclusive", "overlap", "dm: knob table", topic
                )
            )
            continue
        out.append(Finding("dm", "f_dm_best", vals, fig, "better", "", "dm: knob table", topic))
    return out

"""Throughput against threads for YCSB and TPC-C: where each workload × arm peaks, and whether
the intervals single that thread count out."""

from __future__ import annotations

import pandas as pd

from .record import Figure, Finding

__all__ = ["peak_findings"]


def peak_findings(cells: pd.DataFrame, phase: str, unit: str, evidence: str) -> list[Finding]:
    """One finding per workload × arm of ``cells`` (``workload, arm, threads, n, mean, ci_low,
    ci_high``): the thread count with the highest mean and, when another thread count's
    interval reaches the peak's, the counts that cannot be told apart from it."""
    out: list[Finding] = []
    if cells is None or not len(cells):
        return out
    for (w, a), g in cells.groupby(["workload", "arm"], sort=False):
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
        topic = f"{w} · {a}"
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
            out.append(
                Finding(
                    phase,
                    "f_peak_tied",
                    vals,
                    fig,
                    "inconclusive",
                    "overlap_threads",
                    evidence,
                    topic,
                )
            )
        elif int(top["threads"]) == vals["n_max"] and len(g) > 1:
            out.append(Finding(phase, "f_peak_top", vals, fig, "rising", "", evidence, topic))
        else:
            out.append(Finding(phase, "f_peak", vals, fig, "saturated", "", evidence, topic))
    return out

"""The A/B comparison's findings: per pair and workload, what the intervals support.

A claim is made only where the interval makes it: "faster at every thread count" needs every
cell's verdict to be ``better``; "no difference" needs every cell ``equivalent`` (interval
inside the ± margin). Anything else is said cell by cell, and a cell whose interval is too wide
for either claim is an ``inconclusive`` finding with the runs it would take.
"""

from __future__ import annotations

import math

import pandas as pd

from .record import Figure, Finding

__all__ = ["compare_findings", "rounds_needed"]


def rounds_needed(n: int, ci_low_pct, ci_high_pct, delta_pct: float) -> int | None:
    """About how many runs per arm would bring the interval within ± ``2 × delta_pct``.

    The interval's half-width on the log scale shrinks as 1/sqrt(n) (t quantile held fixed,
    which makes the figure a slight underestimate at small n): n × (h / h_target)².
    """
    if n is None or n < 2 or any(x is None or pd.isna(x) for x in (ci_low_pct, ci_high_pct)):
        return None  # no interval (n = 1, or a ratio whose interval is unbounded): no estimate
    lo, hi = 1 + ci_low_pct / 100, 1 + ci_high_pct / 100
    if lo <= 0 or hi <= 0 or delta_pct <= 0:
        return None
    h = (math.log(hi) - math.log(lo)) / 2
    target = math.log1p(2 * delta_pct / 100)
    return max(n + 1, math.ceil(n * (h / target) ** 2))


def _cv(r) -> float | None:
    pairs = [
        (getattr(r, f"{x}_sd", None), getattr(r, f"{x}_value", None))
        for x in ("baseline", "candidate")
    ]
    cvs = [sd / m for sd, m in pairs if sd is not None and m and not pd.isna(sd) and not pd.isna(m)]
    return 100 * max(cvs) if cvs else None


def _ci(r) -> tuple:
    """The interval the verdict was read from: the simultaneous one over the comparison's cells
    when the table has it (a per-cell interval clear of 0 beside "no answer yet" would read as a
    contradiction), else the cell's own."""
    lo, hi = getattr(r, "ci_low_adj_pct", None), getattr(r, "ci_high_adj_pct", None)
    if lo is None or hi is None or pd.isna(lo) or pd.isna(hi):
        return r.ci_low_pct, r.ci_high_pct
    return lo, hi


def _fig(r, metric: str) -> Figure:
    lo, hi = _ci(r)
    return Figure(
        r.improvement_pct,
        lo,
        hi,
        "%",
        int(min(r.n_baseline, r.n_candidate)),
        str(r.method).split(":")[0] or "Fieller",
    )


def compare_findings(cmp: pd.DataFrame, delta_pct: float = 2.0) -> list[Finding]:
    """Findings from :func:`tibenchlib.compare.compare_arms_table` rows.

    Parameters
    ----------
    cmp
        The comparison rows (one per pair × workload × threads).
    delta_pct
        The study's equivalence margin (``compare.delta_pct``).
    """
    out: list[Finding] = []
    if cmp is None or not len(cmp):
        return out
    for (a, b, w), g in cmp.groupby(["baseline", "candidate", "workload"], sort=False):
        g = g.sort_values("threads")
        topic = f"{b} / {a} · {w}"
        evidence = f"compare: {b} / {a}"
        base = {"base": a, "cand": b, "workload": w, "delta": delta_pct}
        verdicts = set(g["verdict"])
        top = g.iloc[-1]
        if verdicts <= {"better"} or verdicts <= {"worse"}:
            word = "f_cmp_all_better" if verdicts == {"better"} else "f_cmp_all_worse"
            vals = {
                **base,
                "threads": int(top.threads),
                "p": float(top.p_adjusted),
                "n": int(min(top.n_baseline, top.n_candidate)),
            }
            out.append(
                Finding(
                    "compare",
                    word,
                    vals,
                    _fig(top, "tps"),
                    "better" if word.endswith("better") else "worse",
                    "",
                    evidence,
                    topic,
                )
            )
            continue
        if verdicts <= {"equivalent"}:
            vals = {**base, "threads": ", ".join(str(int(t)) for t in g["threads"])}
            widest = g.loc[(g["ci_high_pct"] - g["ci_low_pct"]).idxmax()]
            out.append(
                Finding(
                    "compare",
                    "f_cmp_equivalent",
                    vals,
                    _fig(widest, "tps"),
                    "equivalent",
                    "",
                    evidence,
                    topic,
                )
            )
            continue
        for r in g.itertuples():
            vals = {
                **base,
                "threads": int(r.threads),
                "p": float(r.p_adjusted),
                "n": int(min(r.n_baseline, r.n_candidate)),
            }
            if r.verdict in ("better", "worse", "equivalent", "small"):
                key = {
                    "better": "f_cmp_cell_better",
                    "worse": "f_cmp_cell_worse",
                    "equivalent": "f_cmp_cell_equivalent",
                    "small": "f_cmp_cell_small",
                }[r.verdict]
                verdict = "equivalent" if r.verdict == "small" else r.verdict
                out.append(
                    Finding("compare", key, vals, _fig(r, "tps"), verdict, "", evidence, topic)
                )
                continue
            cv = _cv(r)
            need = rounds_needed(vals["n"], *_ci(r), delta_pct)
            family = getattr(r, "family_size", None)
            vals.update(cv=cv, need=need, family=None if pd.isna(family) else int(family))
            reason = "too_few_runs" if r.verdict == "n/a" else "interval_wide"
            if reason == "interval_wide" and (cv is None or need is None):
                reason = "interval_wide_n" if _fig(r, "tps").has_interval else "unbounded"
            out.append(
                Finding(
                    "compare",
                    "f_cmp_cell_open_sim" if (vals["family"] or 1) > 1 else "f_cmp_cell_open",
                    vals,
                    _fig(r, "tps"),
                    "inconclusive",
                    reason,
                    evidence,
                    topic,
                )
            )
    return out

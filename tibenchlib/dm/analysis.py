"""The ``dm`` phase's statistics: per knob and setting, throughput and latency with 95% intervals,
the best setting, and the smallest setting within 5% of the best with its Fieller interval — the
data-driven version of report 003's recommendations.

DataFrames in, DataFrames out; the unit of replication is the repeated run (one dump + load, or
one sync measurement), failed or unverified runs never enter a statistic.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import stats

#: Cell keys of the phase's statistics.
KEYS = ["unit", "knob", "setting", "workload"]
#: Throughput a unit is judged by, and its latency.
THROUGHPUT = {"dump": "mb_s", "load": "mb_s", "sync": "rows_s"}
#: Columns of the result rows (``tibench run PARAMS --phase dm --json``).
RESULT_COLUMNS = [
    "unit", "knob", "setting", "workload", "n", "n_failed", "metric", "mb_s", "rows_s",
    "ci_low", "ci_high", "latency_ms", "rows_per_statement", "verified", "status", "warnings",
]  # fmt: skip


def unit_rows(dm_runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run and unit it measured: a full run gives a ``load`` row always and a
    ``dump`` row when a dump knob (or the base arm) was swept; a sync run a ``sync`` row.

    Columns: ``unit, knob, setting, workload, repeat, seq, status, verified, mb_s, rows_s,
    latency_ms, rows_per_statement``; ``status`` is ``failed`` for a run that did not verify.
    """
    cols = ["unit", "knob", "setting", "workload", "repeat", "seq", "status", "verified",
            "mb_s", "rows_s", "latency_ms", "rows_per_statement", "run_key"]  # fmt: skip
    if dm_runs is None or not len(dm_runs):
        return pd.DataFrame(columns=cols)
    out = []
    for r in dm_runs.to_dict("records"):
        ok = r.get("status") == "ok" and bool(r.get("verified"))
        base = {
            "knob": r["knob"],
            "setting": r["setting"],
            "repeat": r.get("repeat"),
            "seq": r.get("seq"),
            "status": "ok" if ok else "failed",
            "verified": bool(r.get("verified")),
            "run_key": r["run_key"],
        }
        if r["unit"] == "sync":
            out.append(
                {**base, "unit": "sync", "workload": r["workload"], "mb_s": None,
                 "rows_s": r.get("rows_s"), "latency_ms": None, "rows_per_statement": None}
            )  # fmt: skip
            continue
        if r["knob"].startswith("dump.") or r["knob"] == "base":
            out.append(
                {**base, "unit": "dump", "workload": "full", "mb_s": r.get("dump_mb_s"),
                 "rows_s": r.get("dump_rows_s"), "latency_ms": None,
                 "rows_per_statement": r.get("rows_per_statement")}
            )  # fmt: skip
        out.append(
            {**base, "unit": "load", "workload": "full", "mb_s": r.get("load_mb_s"),
             "rows_s": r.get("load_rows_s"), "latency_ms": r.get("latency_ms"),
             "rows_per_statement": r.get("rows_per_statement")}
        )  # fmt: skip
    df = pd.DataFrame(out, columns=cols)
    for c in ("mb_s", "rows_s", "latency_ms", "rows_per_statement"):
        df[c] = pd.to_numeric(df[c], errors="coerce")
    return df


def setting_order(settings) -> list[str]:
    """Settings from smallest to largest: ``off`` first, then by number."""

    def key(s):
        if s == "off":
            return (0, -math.inf, s)
        try:
            return (1, float(s), s)
        except ValueError:
            return (2, 0.0, s)

    return sorted(dict.fromkeys(settings), key=key)


def knob_cells(units: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Mean of ``metric`` per unit × knob × setting × workload with its Student t 95% interval
    (:func:`tibenchlib.stats.summarize_cells`; n = runs that verified)."""
    if not len(units) or units[metric].isna().all():
        return pd.DataFrame(columns=[*KEYS, "n", "n_failed", "mean", "ci_low", "ci_high"])
    d = units[units[metric].notna() | (units["status"] != "ok")]
    return stats.summarize_cells(d, metric=metric, keys=KEYS)


def result_rows(units: pd.DataFrame) -> pd.DataFrame:
    """The phase's result rows: one per unit × knob × setting × workload, the unit's throughput
    (:data:`THROUGHPUT`: MB/s for dump and load, rows/s for sync) with its 95% t interval
    (``ci_low``/``ci_high``, of ``metric``), the means of the other figures, whether every
    run verified, and ``status`` (``ok``; ``some failed``; ``failed``: no run verified)."""
    if not len(units):
        return pd.DataFrame(columns=RESULT_COLUMNS)
    out = []
    for unit, metric in THROUGHPUT.items():
        u = units[units["unit"] == unit]
        if not len(u):
            continue
        cells = knob_cells(u, metric).set_index(KEYS)
        ok = u[u["status"] == "ok"]
        means = ok.groupby(KEYS)[["mb_s", "rows_s", "latency_ms", "rows_per_statement"]].mean()
        for key, g in u.groupby(KEYS, sort=False):
            c = cells.loc[key] if key in cells.index else None
            m = means.loc[key] if key in means.index else None
            n_ok = int((g["status"] == "ok").sum())
            out.append(
                {
                    **dict(zip(KEYS, key, strict=True)),
                    "n": n_ok,
                    "n_failed": len(g) - n_ok,
                    "metric": metric,
                    "mb_s": _get(m, "mb_s"),
                    "rows_s": _get(m, "rows_s"),
                    "ci_low": _get(c, "ci_low"),
                    "ci_high": _get(c, "ci_high"),
                    "latency_ms": _get(m, "latency_ms"),
                    "rows_per_statement": _get(m, "rows_per_statement"),
                    "verified": bool(g["verified"].all()),
                    "status": "ok" if n_ok == len(g) else ("failed" if not n_ok else "some failed"),
                    "warnings": list(c["warnings"]) if c is not None else ["no valid runs"],
                }
            )
    df = pd.DataFrame(out, columns=RESULT_COLUMNS)
    df["_o"] = [setting_order(units["setting"]).index(s) for s in df["setting"]]
    return (
        df.sort_values(["unit", "knob", "workload", "_o"]).drop(columns="_o").reset_index(drop=True)
    )


def _get(row, col):
    if row is None:
        return None
    v = row[col]
    return None if v is None or (isinstance(v, float) and np.isnan(v)) else float(v)


def recommendation(units: pd.DataFrame, within: float = 0.05) -> pd.DataFrame:
    """Per unit × knob × workload: the best setting (highest mean throughput) and the smallest
    setting whose mean throughput is within ``within`` of the best's, with the ratio of the two
    means and its Fieller 95% interval (Welch–Satterthwaite df; independent runs).

    ``sure`` says whether the interval's lower end clears ``1 - within`` too (then the data say
    the smaller setting gives up less than 5% even allowing for noise); with n = 1 there is a
    point estimate only. When no smaller setting comes within ``within``, ``smallest`` is the
    best itself, with ratio 1, no interval and ``sure`` None. Columns: ``unit, knob, workload,
    metric, best, best_mean, smallest, smallest_mean, ratio, ci_low, ci_high, sure, n_settings,
    warnings``.
    """
    cols = ["unit", "knob", "workload", "metric", "best", "best_mean", "smallest",
            "smallest_mean", "ratio", "ci_low", "ci_high", "sure", "n_settings",
            "warnings"]  # fmt: skip
    out = []
    ok = units[units["status"] == "ok"] if len(units) else units
    for (unit, knob, wl), g in ok.groupby(["unit", "knob", "workload"], sort=False):
        metric = THROUGHPUT[unit]
        vals = {s: x[metric].dropna().to_numpy(float) for s, x in g.groupby("setting")}
        vals = {s: v for s, v in vals.items() if len(v)}
        if not vals:
            continue
        means = {s: float(v.mean()) for s, v in vals.items()}
        best = max(means, key=means.get)
        chosen, f = best, None
        for s in setting_order(vals):
            if means[s] >= (1 - within) * means[best]:
                chosen = s
                break
        if chosen == best:
            # nothing smaller comes within 5%: no ratio to estimate (a sample against itself)
            f = {"ratio": 1.0, "ci_low": None, "ci_high": None, "warnings": []}
            f["warnings"].append("no smaller setting within 5% of the best")
        else:
            f = stats.fieller_ratio(vals[chosen], vals[best])
        lo = f["ci_low"]
        out.append(
            {
                "unit": unit,
                "knob": knob,
                "workload": wl,
                "metric": metric,
                "best": best,
                "best_mean": means[best],
                "smallest": chosen,
                "smallest_mean": means[chosen],
                "ratio": f["ratio"],
                "ci_low": lo,
                "ci_high": f["ci_high"],
                "sure": None if chosen == best else bool(lo is not None and lo >= 1 - within),
                "n_settings": len(vals),
                "warnings": list(f["warnings"]),
            }
        )
    return pd.DataFrame(out, columns=cols)

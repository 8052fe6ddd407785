"""Across tools (report 001): the sweep's sysbench, the ycsb phase and the tpcc phase side by
side per thread count — throughput, p95/p99 and saturation, each with its interval.

Read from the catalog's ``runs`` (its ``phase`` column says which tool measured a run), so any
phase that records :class:`~tibenchlib.record.RunRecord` rows appears here without more code.
The tools measure different things: sysbench's TPS counts its events (one transaction of the
workload), YCSB's throughput counts operations, TPC-C's counts committed transactions of the
five types (tpmTotal / 60); the latency is of every event, every operation, or New-Order only.
The table says which, per row; compare shapes (where each saturates, how latency grows), not
absolute numbers across tools.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import registry
from ..diagnose import diagnose
from ..stats import summarize_cells
from ..store import Store
from .diagnosis import saturation_text
from .tables import fmt_ci

#: Phases whose runs are one tool's throughput over a thread ladder, in the table's order.
TOOL_PHASES = {p.name: p.tool.name for p in registry.PHASES if p.tool is not None}
UNITS = {
    lang: {p.name: p.tool.units[lang] for p in registry.PHASES if p.tool is not None}
    for lang in ("en", "zh")
}
#: Columns of :func:`tools_rows`.
COLUMNS = [
    "tool", "phase", "workload", "arm", "threads", "n", "n_failed", "throughput",
    "throughput_ci_low", "throughput_ci_high", "throughput_unit", "p95_ms", "p95_ms_ci_low",
    "p95_ms_ci_high", "p99_ms", "p99_ms_ci_low", "p99_ms_ci_high", "latency_of", "saturation",
    "n_sat", "n_max", "n_peak", "peak_throughput", "frac_at_max", "warnings",
]  # fmt: skip


def _workload(runs: pd.DataFrame) -> pd.Series:
    """Each run's cell workload, as its phase defines it (TPC-C: per warehouse count)."""
    out = runs["workload"].copy()
    for name in runs["phase"].unique():
        mine = runs["phase"] == name
        out[mine] = registry.get(name).cell_workload(runs[mine])
    return out


def tools_rows(runs: pd.DataFrame, lang: str = "en", sat_frac: float = 0.95) -> pd.DataFrame:
    """One row per tool × workload × arm × thread count: mean throughput, p95 and p99 over the
    repeated runs with Student t 95% intervals (:func:`tibenchlib.stats.summarize_cells`, the
    run is the unit), and per tool × workload × arm the saturation: ``n_peak`` (thread count of
    the largest mean throughput), ``saturation`` and ``n_sat`` as the diagnosis decides them
    (:data:`tibenchlib.diagnose.SATURATION`: ``n_sat``, the smallest thread count reaching
    ``sat_frac`` of that peak, only where the curve is shown to level off there), ``n_max``,
    ``frac_at_max`` (mean throughput at the largest thread count / peak).

    ``runs``: catalog runs of any phases (``Store.runs``); only the sweep, ycsb and tpcc
    phases are read.
    """
    if not len(runs) or "phase" not in runs:
        return pd.DataFrame(columns=COLUMNS)
    runs = runs[runs["phase"].isin(TOOL_PHASES)].copy()
    if not len(runs):
        return pd.DataFrame(columns=COLUMNS)
    runs["workload"] = _workload(runs)
    keys = ["phase", "workload", "arm", "threads"]
    out = None
    for metric, name in (("tps", "throughput"), ("lat_p95_ms", "p95_ms"), ("lat_p99_ms", "p99_ms")):
        c = summarize_cells(runs, metric=metric, keys=keys)
        c = c.rename(
            columns={"mean": name, "ci_low": f"{name}_ci_low", "ci_high": f"{name}_ci_high"}
        )
        cols = [*keys, name, f"{name}_ci_low", f"{name}_ci_high"]
        if out is None:
            out = c[[*cols, "n", "n_failed", "warnings"]]
        else:
            out = out.merge(c[cols], on=keys, how="left")
    sat = []
    for (ph, w, a), g in out.groupby(["phase", "workload", "arm"], sort=False):
        g = g.dropna(subset=["throughput"]).sort_values("threads")
        if not len(g):
            continue
        means = g["throughput"].to_numpy(float)
        th = g["threads"].to_numpy()
        peak = float(np.nanmax(means))
        i_peak = int(np.nanargmax(means))
        sat.append({"phase": ph, "workload": w, "arm": a, "n_peak": int(th[i_peak]),
                    **_saturation(runs, ph, w, a, sat_frac), "peak_throughput": peak,
                    "frac_at_max": float(means[-1] / peak) if peak else None})  # fmt: skip
    if sat:
        out = out.merge(pd.DataFrame(sat), on=["phase", "workload", "arm"], how="left")
    units = UNITS["zh" if lang == "zh" else "en"]
    out["tool"] = out["phase"].map(TOOL_PHASES)
    out["throughput_unit"] = out["phase"].map(lambda p: units[p][0])
    out["latency_of"] = out["phase"].map(lambda p: units[p][1])
    order = {p: i for i, p in enumerate(TOOL_PHASES)}
    out["_o"] = out["phase"].map(order)
    out = out.sort_values(["threads", "_o", "workload", "arm"], ignore_index=True)
    return out.drop(columns="_o").reindex(columns=COLUMNS)


def _saturation(runs: pd.DataFrame, phase: str, workload: str, arm: str, sat_frac: float):
    """Where one tool's curve levels off, as the sweep's diagnosis decides it for every
    workload (:func:`tibenchlib.diagnose.diagnose`, its ``saturation``): the same rule for each
    tool, so the table and the diagnosis give one answer; a peak at the ladder's top is no
    saturation point."""
    sel = runs[(runs["phase"] == phase) & (runs["workload"] == workload) & (runs["arm"] == arm)]
    d = diagnose(sel, None, sat_frac=sat_frac)
    if not len(d):
        return {"saturation": None, "n_sat": None, "n_max": None}
    r = d.iloc[0]
    n_sat = None if r["n_sat"] is None or pd.isna(r["n_sat"]) else int(r["n_sat"])
    return {"saturation": r["saturation"], "n_sat": n_sat, "n_max": int(r["n_max"])}


def study_tools_rows(study, store=None, lang: str | None = None) -> pd.DataFrame:
    """:func:`tools_rows` of a study's catalog."""

    store = store or Store.for_study(study)
    return tools_rows(store.runs(study.study), lang=lang or study.lang)


HEADERS = {
    "en": {
        "threads": "Threads", "tool": "Tool", "workload": "Workload", "arm": "Arm",
        "n": "Runs (n)", "throughput": "Throughput [95% CI]", "unit": "Unit",
        "p95": "p95 (ms) [95% CI]", "p99": "p99 (ms) [95% CI]", "of": "Latency of",
        "sat": "Saturates at (threads)", "peak": "Peak at (threads)",
    },
    "zh": {
        "threads": "压测线程", "tool": "工具", "workload": "测试场景", "arm": "测试组",
        "n": "次数 (n)", "throughput": "吞吐 [95% 置信区间]", "unit": "单位",
        "p95": "p95 (ms) [95% 置信区间]", "p99": "p99 (ms) [95% 置信区间]", "of": "延迟对象",
        "sat": "饱和点 (线程)", "peak": "峰值 (线程)",
    },
}  # fmt: skip


def tools_table(rows: pd.DataFrame, lang: str = "en") -> pd.DataFrame:
    """:func:`tools_rows` for people: each mean with its interval, headers in ``lang``."""

    H = HEADERS["zh" if lang == "zh" else "en"]
    if not len(rows):
        return pd.DataFrame()

    def ci(col):
        return [
            fmt_ci(*r)
            for r in zip(rows[col], rows[f"{col}_ci_low"], rows[f"{col}_ci_high"], strict=True)
        ]

    return pd.DataFrame(
        {
            H["threads"]: rows["threads"].astype(int),
            H["tool"]: rows["tool"],
            H["workload"]: rows["workload"],
            H["arm"]: rows["arm"],
            H["n"]: rows["n"].astype(int),
            H["throughput"]: ci("throughput"),
            H["unit"]: rows["throughput_unit"],
            H["p95"]: ci("p95_ms"),
            H["p99"]: ci("p99_ms"),
            H["of"]: rows["latency_of"],
            H["sat"]: [
                saturation_text(st, n, m, lang, short=True)
                for st, n, m in zip(rows["saturation"], rows["n_sat"], rows["n_max"], strict=True)
            ],
            H["peak"]: rows["n_peak"],
        }
    )

"""Notebook 07's sections: YCSB throughput and p95/p99 against threads with 95% intervals, each
operation's latency, and where throughput saturates; in English or Chinese (``study.lang``).

Every figure is a mean over the repeated runs (the unit of replication) with a Student t 95%
interval (:func:`tibenchlib.stats.summarize_cells` with the phase's own keys); a run's latency is
read from its HdrHistograms (all clients merged), never averaged across clients.
"""

from __future__ import annotations

import json

import matplotlib.pyplot as plt
import pandas as pd

from ..findings import phase_findings, render
from ..saturation import saturation
from ..stats import summarize_cells
from ..store import Store
from ..ycsb.phase import YCSB
from . import plots
from . import tables as T
from .display import details, quiet, say, show, show_object
from .sections import failed_runs
from .words import check_lang
from .words import say as sentence

#: Headers and sentences of this notebook that :mod:`.tables` does not hold, en and zh.
WORDS = {
    "en": {
        "ops_ci": "ops/s [95% CI]",
        "p99_ci": "99% latency (ms) [95% CI]",
        "operation": "Operation",
        "calls": "Calls per run",
        "errors": "Errors per run",
        "avg": "Avg latency (ms)",
        "none": "No YCSB runs in the catalog yet: `{cmd}` measures them.",
        "lead": (
            "{n} YCSB runs ({counts}) by {tool}: mean throughput (operations per second) and "
            "latency over all operations per workload, arm and thread count, over the repeated "
            "runs with Student t 95% intervals (n = runs per cell; {reps} planned). A run's p95 "
            "and p99 are read from its HdrHistograms{clients}."
        ),
        "clients": ", the {k} clients of each run merged bucket by bucket",
        "ops_lead": (
            "Each operation's latency: the mean over the runs of each run's figure (ms) with "
            "its t 95% interval; calls and errors are per run."
        ),
        "sat": "Where throughput stops growing",
        "ops_s": "ops/s",
        "p95": "p95 latency, all operations (ms)",
        "p99": "p99 latency, all operations (ms)",
    },
    "zh": {
        "ops_ci": "每秒操作数 [95% 置信区间]",
        "p99_ci": "99% 延迟 (ms) [95% 置信区间]",
        "operation": "操作",
        "calls": "每次调用数",
        "errors": "每次错误数",
        "avg": "平均延迟 (ms)",
        "none": "目录中还没有 YCSB 测试结果：运行 `{cmd}` 进行测量。",
        "lead": (
            "共 {n} 次 YCSB 测试（{counts}），工具 {tool}：按测试场景、测试组和线程数，对重复"
            "测试求吞吐量（每秒操作数）和全部操作延迟的均值，附 Student t 95% 置信区间"
            "（n = 每格测试次数；计划 {reps} 次）。"
            "每次测试的 p95、p99 取自其 HdrHistogram{clients}。"
        ),
        "clients": "，每次测试的 {k} 个客户端逐桶合并",
        "ops_lead": (
            "各操作的延迟：各次测试数值（ms）的均值及 t 95% 置信区间；"
            "调用数和错误数为每次测试的数量。"
        ),
        "sat": "吞吐量在何处不再增长",
        "ops_s": "每秒操作数",
        "p95": "全部操作 p95 延迟 (ms)",
        "p99": "全部操作 p99 延迟 (ms)",
    },
}

KEYS = ("workload", "arm", "threads")
OP_KEYS = ("workload", "arm", "threads", "operation")


def words(lang: str = "en") -> dict[str, str]:
    return WORDS[check_lang(lang)]


def cells(runs: pd.DataFrame) -> pd.DataFrame:
    """Per workload × arm × threads: ``tps``, ``lat_p95_ms`` and ``lat_p99_ms`` as means with
    Student t 95% intervals over the ok runs (``tps_ci_low``… columns), ``n``, ``n_failed``,
    CV of the throughput and the throughput cell's warnings."""

    if not len(runs):
        return pd.DataFrame()
    out = summarize_cells(runs, metric="tps", keys=KEYS)
    out = out.rename(columns={"mean": "tps", "ci_low": "tps_ci_low", "ci_high": "tps_ci_high"})
    return _with_means(out, runs, ("lat_p95_ms", "lat_p99_ms", "lat_avg_ms"), KEYS)


def _with_means(out: pd.DataFrame, rows: pd.DataFrame, metrics, keys) -> pd.DataFrame:
    """``out`` with each metric's mean over ``rows`` per ``keys`` and its t 95% interval, as
    ``<metric>``, ``<metric>_ci_low`` and ``<metric>_ci_high``."""
    for m in metrics:
        c = summarize_cells(rows, metric=m, keys=keys)[[*keys, "mean", "ci_low", "ci_high"]]
        c = c.rename(columns={"mean": m, "ci_low": f"{m}_ci_low", "ci_high": f"{m}_ci_high"})
        out = out.merge(c, on=list(keys), how="left")
    return out


def cells_table(c: pd.DataFrame, lang: str = "en", order=None) -> pd.DataFrame:
    """:func:`cells` for people: each mean with its interval, headers in ``lang``."""
    L, W = T.labels(lang), words(lang)
    if not len(c):
        return pd.DataFrame()
    d = T.sort_by_arm(c, "arm", order, then=("workload", "threads"))
    d = d.sort_values(["workload"], kind="stable").reset_index(drop=True)

    return pd.DataFrame(
        {
            L["workload"]: d["workload"],
            L["arm"]: d["arm"],
            L["threads"]: [T.fmt_num(t, 0) for t in d["threads"]],
            L["n"]: [str(int(x)) for x in d["n"]],
            W["ops_ci"]: T.ci_column(d, "tps"),
            L["lat_avg"]: [T.fmt_num(x) for x in d["lat_avg_ms"]],
            L["p95_ci"]: T.ci_column(d, "lat_p95_ms"),
            W["p99_ci"]: T.ci_column(d, "lat_p99_ms"),
            L["cv"]: [T.fmt_num(100 * x, 1) if T._ok(x) else "n/a" for x in d["cv"]],
            L["failed"]: [str(int(x)) for x in d["n_failed"]],
            L["notes"]: [T.fmt_notes(w, lang) for w in d["warnings"]],
        }
    )


def op_cells(ops: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Per workload × arm × threads × operation over the ok runs: mean calls and errors per
    run, and each latency figure's mean with its t 95% interval (``p95_ms``, ``p95_ms_ci_low``…).
    YCSB's CLEANUP (thread shutdown) is left out."""

    if not len(ops) or not len(runs):
        return pd.DataFrame()
    d = ops[ops["operation"] != "CLEANUP"].merge(
        runs[["run_key", "status"]], on="run_key", how="inner"
    )
    if not len(d):
        return pd.DataFrame()
    out = summarize_cells(d, metric="count", keys=OP_KEYS)[[*OP_KEYS, "n", "mean", "warnings"]]
    out = out.rename(columns={"mean": "calls"})
    return _with_means(out, d, ("errors", "avg_ms", "p95_ms", "p99_ms"), OP_KEYS)


def op_table(oc: pd.DataFrame, lang: str = "en", order=None) -> pd.DataFrame:
    """:func:`op_cells` for people."""
    L, W = T.labels(lang), words(lang)
    if not len(oc):
        return pd.DataFrame()
    d = T.sort_by_arm(oc, "arm", order, then=("workload", "threads", "operation"))
    d = d.sort_values(["workload"], kind="stable").reset_index(drop=True)

    return pd.DataFrame(
        {
            L["workload"]: d["workload"],
            L["arm"]: d["arm"],
            L["threads"]: [T.fmt_num(t, 0) for t in d["threads"]],
            W["operation"]: d["operation"],
            L["n"]: [str(int(x)) for x in d["n"]],
            W["calls"]: [T.fmt_num(x, 0) for x in d["calls"]],
            W["errors"]: [T.fmt_num(x, 0) for x in d["errors"]],
            W["avg"]: T.ci_column(d, "avg_ms"),
            L["p95_ci"]: T.ci_column(d, "p95_ms"),
            W["p99_ci"]: T.ci_column(d, "p99_ms"),
        }
    )


def _figure(fig) -> None:
    """Show a figure where it is made (before the tables that follow), not at the cell's end."""
    show_object(fig)
    plt.close(fig)


def ycsb(session, rows: pd.DataFrame) -> dict:
    """Notebook 07: the throughput/latency table and figures, per-operation latency,
    saturation, failed runs. Returns ``runs``, ``cells``, ``ops`` and ``saturation`` for the
    notebook's checks."""

    lang, W = session.lang, words(session.lang)
    study = session.study
    store = Store.for_study(study)
    runs = rows if len(rows) else pd.DataFrame()
    if not len(runs):
        say(W["none"].format(cmd=session.command))
        return {"runs": runs, "cells": pd.DataFrame(), "ops": pd.DataFrame(), "saturation": []}
    full = store.runs(study.study, phase="ycsb")
    full = full[full["run_key"].isin(set(runs["run_key"]))].reset_index(drop=True)
    tools = sorted({json.loads(s).get("tool", "?") for s in full["summary_json"].dropna()})
    k = study.ycsb.n_clients
    counts = ", ".join(f"{v} {s}" for s, v in full["status"].value_counts().items())
    say(
        W["lead"].format(
            n=len(full), counts=counts, tool=", ".join(tools) or "?", reps=study.ycsb.repeats,
            clients=W["clients"].format(k=k) if k > 1 else "",
        )
    )  # fmt: skip
    order = T.arm_order(list(full["arm"]), session.arms)
    c = cells(full)
    show(cells_table(c, lang, order), lang)

    for metric, ylabel in (("tps", W["ops_s"]), ("lat_p95_ms", W["p95"]), ("lat_p99_ms", W["p99"])):
        cc = T.sort_by_arm(
            summarize_cells(full, metric=metric, keys=KEYS), "arm", order, then=KEYS[::2]
        )
        _figure(plots.metric_vs_threads(cc, ylabel=ylabel, lang=lang))

    say(W["ops_lead"])
    oc = op_cells(store.read("ycsb_ops", study.study, run_key=list(full["run_key"])), full)
    show(op_table(oc, lang, order), lang)

    say(f"**{W['sat']}**")
    found = []
    # where the findings say a peak is (or that thread counts cannot be told apart), that
    # sentence stands here too: one state, one wording
    peak = {
        (f.values["workload"], f.values["arm"]): render(f, lang)
        for f in phase_findings(study, YCSB, store)
    }
    ok = full[full["status"] == "ok"]
    for w in dict.fromkeys(ok["workload"]):
        for arm in order:
            sub = ok[(ok["workload"] == w) & (ok["arm"] == arm)]
            if sub["threads"].nunique() < 2:
                continue
            f = quiet(saturation, sub, workload=w, arm=arm, lang=lang)
            found.append(f)
            say(peak.get((f"YCSB {w}", arm)) or f"**{w}, `{arm}`** — {f['sentence']}")
            details(sentence("ycsb_steps", lang), f["steps"])
    failed_runs(full, session, phase="ycsb")
    return {"runs": full, "cells": c, "ops": oc, "saturation": found}

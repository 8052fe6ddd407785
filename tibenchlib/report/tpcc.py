"""Notebook 08's sections (TPC-C): what was run, tpmC against threads with 95% intervals, with
and without keying and think times, each transaction type's latency, the data sets' checks, and
the three tools side by side. Each function displays and returns what the notebook's checks
need; words and headers in en and zh (``session.lang``)."""

from __future__ import annotations

import pandas as pd

from ..store import Store
from ..tpcc.phase import arm_labels, latency_table, resolve_tool, runs_table, wait_effect
from ..tpcc.runner import gotpc_tool
from . import plots
from . import tables as T
from .display import say, show
from .tools import study_tools_rows, tools_table

WORDS = {
    "en": {
        "lua": (
            "**TPC-C-like, not audited.** On this target the TPC-C runs are tibench's own "
            "sysbench Lua driver: the specification's schema, population, five transactions "
            "and mix (New-Order 45%, Payment 43%, Order-Status, Delivery, Stock-Level 4% each), "
            "consistency conditions checked after every run; no terminals (a sysbench thread is "
            "one), no ACID tests, no price/performance. Its figures are not TPC-C results. tpmC "
            "is reported as go-tpc reports it: New-Orders committed per minute of measured time "
            "(here the growth of the orders table, which the driver's own count must match), "
            "so the two read the same."
        ),
        "gotpc": (
            "The TPC-C runs are go-tpc's (`{tool} tpcc`): tpmC, tpmTotal and efficiency as it "
            "prints them, summed over clients."
        ),
        "scale": (
            "Warehouses: {wh}; {items:,} items, {cust:,} customers per district "
            "(specification: 100,000 and 3,000). Threads {threads} ({sharing}), "
            "{duration} s per run, {repeats} repeats; modes: {modes}."
        ),
        "shared": "each the run's total, shared by the {clients} clients started together",
        "one_client": "one client",
        "wait_scaled": " Keying and think times at {scale:g} × the specification's.",
        "nowait": "without keying/think times",
        "wait": "with keying/think times (--wait)",
        "eff_nowait": "none: no keying/think times",
        "eff_scaled": "none: keying/think times shortened",
        "tpmc_intro": (
            "{n} runs ({counts}): mean tpmC per cell over the repeated runs with Student t 95% "
            "intervals (n = runs per cell; the run is the unit). tps in the catalog is every "
            "committed transaction per second (tpmTotal / 60); the latency columns are "
            "New-Order's, BEGIN to COMMIT."
        ),
        "none": "No TPC-C runs in the catalog yet: `{cmd}` measures them.",
        "wait_intro": (
            "Keying and think times cap each thread's rate, so tpmC with them is a fraction of "
            "tpmC without: the ratio of the means with Fieller's 95% interval."
        ),
        "wait_none": "Only one mode was run: no wait vs no-wait comparison.",
        "lat_intro": (
            "Latency of each transaction type (completed transactions, BEGIN to COMMIT, "
            "keying and think times excluded): per run the percentile of all threads' and "
            "clients' transactions from their merged histogram, then the mean over runs with "
            "its t 95% interval."
        ),
        "data_intro": "Loading and checking each data set (also in `prepare_steps`):",
        "cons": "Consistency conditions after every run: {ok} of {n} runs passed.",
        "tools_intro": (
            "The three tools side by side per thread count (report 001): mean throughput, p95 "
            "and p99 with t 95% intervals, and where each saturates (the smallest thread count "
            "within 5% of its peak). Units and what the latency measures differ by tool: "
            "compare shapes, not absolute numbers."
        ),
        "tools_none": "No sweep, ycsb or tpcc runs in the catalog yet.",
        "tpmc_axis": "tpmC",
        "p95_axis": "New-Order p95 latency (ms)",
        "h": {
            "arm": "Arm", "wh": "Warehouses", "mode": "Mode", "threads": "Threads",
            "clients": "Clients", "n": "Runs (n)", "tpmc": "tpmC [95% CI]",
            "tpmt": "tpmTotal [95% CI]", "eff": "Efficiency (%)",
            "no95": "New-Order p95 (ms) [95% CI]", "no99": "New-Order p99 (ms)",
            "failed": "Failed runs", "notes": "Notes", "tx": "Transaction",
            "p95": "p95 (ms) [95% CI]", "p99": "p99 (ms)", "avg": "Avg (ms)",
            "ntx": "Transactions per run", "nowait": "tpmC no wait", "waitc": "tpmC wait",
            "ratio": "wait / no wait [95% CI]", "step": "Step", "db": "Database",
            "status": "Status", "s": "Time (s)", "detail": "Detail",
        },
    },
    "zh": {
        "lua": (
            "**类 TPC-C 测试,未经审计。** 在该目标上,TPC-C 由 tibench 自带的 sysbench Lua "
            "驱动执行:遵循规范的表结构、数据生成、五种事务及其比例 (New-Order 45%、Payment "
            "43%、Order-Status、Delivery、Stock-Level 各 4%),每次运行后检查一致性条件;没有"
            "终端模拟 (一个 sysbench 线程即一个终端)、没有 ACID 测试、没有性价比。其结果不是 "
            "TPC-C 成绩。tpmC 按 go-tpc 的口径报告:每分钟提交的 New-Order 数 (此处为 orders "
            "表的增长,并与驱动自身的计数核对),因此两者可以对照。"
        ),
        "gotpc": (
            "TPC-C 由 go-tpc 执行 (`{tool} tpcc`):tpmC、tpmTotal 和效率取其输出,按客户端求和。"
        ),
        "scale": (
            "数据集:{wh} 个仓库,{items:,} 个商品,每区 {cust:,} 个客户 (规范为 100,000 和 "
            "3,000)。线程 {threads} ({sharing}),每次 {duration} 秒,重复 {repeats} 次;"
            "模式:{modes}。"
        ),
        "shared": "每次运行的总数,由同时启动的 {clients} 个客户端分担",
        "one_client": "一个客户端",
        "wait_scaled": " 键入与思考时间为规范的 {scale:g} 倍。",
        "nowait": "无键入/思考时间",
        "wait": "有键入/思考时间（--wait）",
        "eff_nowait": "无：未使用键入/思考时间",
        "eff_scaled": "无：键入/思考时间已缩短",
        "tpmc_intro": (
            "{n} 次运行 ({counts}):每个测试场景各次运行 tpmC 的均值及 Student t 95% 置信区间 "
            "(n 为每个测试场景次数,以单次运行为单位)。目录中的 tps 为每秒提交的全部事务 "
            "(tpmTotal / 60);延迟列为 New-Order 的延迟,从 BEGIN 到 COMMIT。"
        ),
        "none": "目录中尚无 TPC-C 运行:`{cmd}` 可执行测量。",
        "wait_intro": (
            "键入与思考时间限制了每个线程的速率,因此有等待时的 tpmC 只是无等待时的一部分:"
            "下表为均值之比及 Fieller 95% 置信区间。"
        ),
        "wait_none": "只运行了一种模式:无法比较有无等待。",
        "lat_intro": (
            "各类事务的延迟 (已完成事务,从 BEGIN 到 COMMIT,不含键入与思考时间):每次运行取"
            "所有线程与客户端合并直方图的百分位,再对各次运行取均值及 t 95% 置信区间。"
        ),
        "data_intro": "各数据集的加载与检查 (亦记录于 `prepare_steps`):",
        "cons": "每次运行后的一致性检查:{n} 次中 {ok} 次通过。",
        "tools_intro": (
            "三种工具按线程数并列 (报告 001):吞吐、p95、p99 的均值及 t 95% 置信区间,以及各自"
            "的饱和点 (达到峰值 95% 的最小线程数)。各工具的单位与延迟对象不同:请比较曲线形状,"
            "而非绝对数值。"
        ),
        "tools_none": "目录中尚无 sweep、ycsb 或 tpcc 的运行。",
        "tpmc_axis": "tpmC",
        "p95_axis": "New-Order p95 延迟 (ms)",
        "h": {
            "arm": "测试组", "wh": "仓库数", "mode": "模式", "threads": "压测线程",
            "clients": "客户端数", "n": "次数 (n)", "tpmc": "tpmC [95% 置信区间]",
            "tpmt": "tpmTotal [95% 置信区间]", "eff": "效率 (%)",
            "no95": "New-Order p95 (ms) [95% 置信区间]", "no99": "New-Order p99 (ms)",
            "failed": "失败次数", "notes": "说明", "tx": "事务",
            "p95": "p95 (ms) [95% 置信区间]", "p99": "p99 (ms)", "avg": "平均 (ms)",
            "ntx": "每次事务数", "nowait": "tpmC 无等待", "waitc": "tpmC 有等待",
            "ratio": "有等待 / 无等待 [95% 置信区间]", "step": "步骤", "db": "数据库",
            "status": "状态", "s": "耗时 (s)", "detail": "详情",
        },
    },
}  # fmt: skip


def words(lang: str = "en") -> dict:
    T.labels(lang)  # an unknown language: a ValueError naming it
    return WORDS[lang]


def _mode(workload: str, W: dict) -> str:
    return W["wait"] if workload == "tpcc_wait" else W["nowait"]


def about(session) -> str:
    """What runs the TPC-C and at which scale, in a paragraph (TPC-C-like said plainly)."""

    s = session.study
    p = s.tpcc
    W = words(session.lang)
    tools = set()
    for a in arm_labels(s):
        try:
            tools.add(resolve_tool(s, a))
        except RuntimeError:
            tools.add("go-tpc")
    parts = []
    if "sysbench" in tools:
        parts.append(W["lua"])
    if "go-tpc" in tools:
        parts.append(W["gotpc"].format(tool=" ".join(gotpc_tool() or ["go-tpc"])))
    modes = ", ".join(_mode("tpcc_wait" if w else "tpcc", W) for w in p.wait)
    text = W["scale"].format(
        wh=", ".join(map(str, p.warehouses)), items=p.items, cust=p.customers,
        threads=", ".join(map(str, p.threads)), duration=p.duration_s, repeats=p.repeats,
        sharing=W["shared"].format(clients=p.n_clients) if p.n_clients > 1 else W["one_client"],
        modes=modes,
    )  # fmt: skip
    if True in p.wait and p.wait_scale != 1:
        text += W["wait_scaled"].format(scale=p.wait_scale)
    parts.append(text)
    out = "\n\n".join(parts)
    say(out)
    return out


def tpmc_table(rows: pd.DataFrame, lang: str = "en") -> pd.DataFrame:
    """The phase's rows (:func:`tibenchlib.tpcc.phase.summarize`) for people."""
    W = words(lang)
    H = W["h"]
    if not len(rows):
        return pd.DataFrame()
    ci = T.fmt_ci
    return pd.DataFrame(
        {
            H["arm"]: rows["arm"],
            H["wh"]: rows["warehouses"].astype(int),
            H["mode"]: [_mode(w, W) for w in rows["workload"]],
            H["threads"]: rows["threads"].astype(int),
            H["clients"]: rows["clients"].astype(int),
            H["n"]: rows["n"].astype(int),
            H["tpmc"]: [ci(*r) for r in zip(rows["tpmc"], rows["tpmc_ci_low"],
                                            rows["tpmc_ci_high"], strict=True)],
            H["tpmt"]: [ci(*r) for r in zip(rows["tpm_total"], rows["tpm_total_ci_low"],
                                            rows["tpm_total_ci_high"], strict=True)],
            # efficiency against the specification's ceiling needs its keying and think times
            # at their length (tpcc.phase.efficiency_pct); otherwise the reason it is absent
            H["eff"]: [_efficiency(x, w, W)
                       for x, w in zip(rows["efficiency_pct"], rows["workload"], strict=True)],
            H["no95"]: [ci(*r) for r in zip(rows["new_order_p95_ms"],
                                            rows["new_order_p95_ms_ci_low"],
                                            rows["new_order_p95_ms_ci_high"], strict=True)],
            H["no99"]: [T.fmt_num(x) for x in rows["new_order_p99_ms"]],
            H["failed"]: rows["n_failed"].astype(int),
            H["notes"]: [T.fmt_notes(w, lang) for w in rows["warnings"]],
        }
    )  # fmt: skip


def _efficiency(x, workload: str, W: dict) -> str:
    if workload != "tpcc_wait":
        return W["eff_nowait"]
    return T.fmt_num(x, 1) if T._ok(x) else W["eff_scaled"]


def _cells(rows: pd.DataFrame, metric: str, lang: str) -> pd.DataFrame:
    W = words(lang)
    facet = [f"{_mode(w, W)} · {int(n)} wh" for w, n in zip(rows["workload"], rows["warehouses"],
                                                          strict=True)]  # fmt: skip
    return pd.DataFrame(
        {
            "workload": facet,
            "arm": rows["arm"],
            "threads": rows["threads"],
            "mean": rows[metric],
            "ci_low": rows[f"{metric}_ci_low"],
            "ci_high": rows[f"{metric}_ci_high"],
        }
    )


def tpmc(session, rows: pd.DataFrame) -> pd.DataFrame:
    """tpmC against threads: the sentence, the table with intervals, the figures (tpmC and
    New-Order p95). Returns the phase's runs (for the checks)."""

    lang = session.lang
    W = words(lang)
    runs = runs_table(session.study, arms=session.arms)
    if not len(runs):
        say(W["none"].format(cmd=session.command))
        return runs
    counts = runs["status"].value_counts()
    say(W["tpmc_intro"].format(n=len(runs), counts=", ".join(f"{v} {k}" for k, v in
                                                              counts.items())))  # fmt: skip
    show(tpmc_table(rows, lang), lang)
    if len(rows):
        plots.metric_vs_threads(_cells(rows, "tpmc", lang), ylabel=W["tpmc_axis"], lang=lang)
        plots.metric_vs_threads(
            _cells(rows, "new_order_p95_ms", lang), ylabel=W["p95_axis"], lang=lang
        )
    return runs


def wait_vs_nowait(session) -> pd.DataFrame:
    """tpmC with keying/think times over tpmC without, per arm × warehouses × threads."""

    lang = session.lang
    W = words(lang)
    H = W["h"]
    eff = wait_effect(session.study, arms=session.arms)
    if not len(eff):
        say(W["wait_none"])
        return eff
    say(W["wait_intro"])
    show(
        pd.DataFrame(
            {
                H["arm"]: eff["arm"],
                H["wh"]: eff["warehouses"],
                H["threads"]: eff["threads"],
                H["nowait"]: [T.fmt_num(x) for x in eff["tpmc_nowait"]],
                H["waitc"]: [T.fmt_num(x) for x in eff["tpmc_wait"]],
                H["ratio"]: [T.fmt_ci(*r, digits=3) for r in zip(eff["ratio"], eff["ci_low"],
                                                                 eff["ci_high"], strict=True)],
                H["notes"]: [T.fmt_notes(w, lang) for w in eff["warnings"]],
            }
        ),
        lang,
    )  # fmt: skip
    return eff


def latency(session) -> pd.DataFrame:
    """Each transaction type's latency per cell: p95 with its interval, p99, average."""

    lang = session.lang
    W = words(lang)
    H = W["h"]
    lt = latency_table(session.study, arms=session.arms)
    if not len(lt):
        return lt
    say(W["lat_intro"])
    show(
        pd.DataFrame(
            {
                H["arm"]: lt["arm"],
                H["wh"]: lt["warehouses"].astype(int),
                H["mode"]: [_mode(w, W) for w in lt["workload"]],
                H["threads"]: lt["threads"].astype(int),
                H["tx"]: lt["transaction"],
                H["n"]: lt["n"].astype(int),
                H["ntx"]: [T.fmt_num(x, 0) for x in lt["n_tx"]],
                H["avg"]: [T.fmt_num(x) for x in lt["avg_ms"]],
                H["p95"]: [T.fmt_ci(*r) for r in zip(lt["p95_ms"], lt["p95_ci_low"],
                                                     lt["p95_ci_high"], strict=True)],
                H["p99"]: [T.fmt_num(x) for x in lt["p99_ms"]],
            }
        ),
        lang,
    )  # fmt: skip
    return lt


def data_sets(session, runs: pd.DataFrame) -> pd.DataFrame:
    """The loads and checks of the data sets, and how many runs passed the consistency
    conditions afterwards."""

    lang = session.lang
    W = words(lang)
    H = W["h"]
    steps = Store.for_study(session.study).read("prepare_steps", session.study.study)
    steps = steps[steps["step"].str.startswith("tpcc_")] if len(steps) else steps
    if len(steps):
        say(W["data_intro"])
        show(
            pd.DataFrame(
                {
                    H["arm"]: steps["arm"],
                    H["step"]: steps["step"],
                    H["db"]: steps["table_name"],
                    H["status"]: steps["status"],
                    H["s"]: [T.fmt_num(x) for x in steps["seconds"]],
                    H["detail"]: [T.fmt_notes(x, lang) for x in steps["detail"]],
                }
            ),
            lang,
        )
    if len(runs) and "consistency_ok" in runs:
        checked = runs["consistency_ok"].dropna()
        if len(checked):
            say(W["cons"].format(ok=int(checked.astype(bool).sum()), n=len(checked)))
    return steps


def tools(session) -> pd.DataFrame:
    """The sweep's sysbench, the ycsb phase and the tpcc phase side by side per thread count."""

    lang = session.lang
    W = words(lang)
    rows = study_tools_rows(session.study, lang=lang)
    if not len(rows):
        say(W["tools_none"])
        return rows
    say(W["tools_intro"])
    show(tools_table(rows, lang), lang)
    return rows

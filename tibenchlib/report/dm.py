"""Notebook 06's sections: DM load tuning per knob (throughput and latency against the setting,
95% intervals), the recommended settings, report 003's published tables beside this study's,
the replica's lag. Each function displays, in English or Chinese (``session.lang``), and returns
what the notebook's checks need."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from ..dm.analysis import THROUGHPUT, knob_cells, recommendation, setting_order, unit_rows
from ..dm.phase import planned_runs
from ..dm.plan import plan
from ..published import seed003_table
from ..store import Store
from . import plots  # noqa: F401  (sets up the CJK fonts for Chinese labels)
from . import tables as T
from .display import details, say, show
from .words import check_lang
from .words import say as sentence

TEXT = {
    "en": {
        "unit": "Unit",
        "knob": "Knob",
        "setting": "Setting",
        "workload": "Workload",
        "n": "Runs (n)",
        "mb_s": "MB/s [95% CI]",
        "rows_s": "rows/s [95% CI]",
        "latency": "Statement latency (ms)",
        "rps": "Rows per statement",
        "status": "Status",
        "notes": "Notes",
        "best": "best setting",
        "smallest": "smallest within 5% of best",
        "ratio": "its throughput ÷ best [95% Fieller]",
        "sure": "surely within 5%",
        "yes": "yes",
        "no": "no",
        "published": "report 003",
        "measured": "this study",
        "none": "No DM runs in the catalog yet: `{cmd}` measures them.",
        "standin": "**Local stand-in.** Source and target are two private MariaDBs on this host, "
        "driven by the real mydumper/myloader (DM's dump and load units). MariaDB's own parallel "
        "replication (GTID, `slave_parallel_threads` = worker-count, `slave_parallel_mode` "
        "`{mode}`) stands in for DM's sync unit: the figures are this host's, not a TiDB "
        "cluster's.",
        "intro": "{n} runs ({ok} ok); {units}. Each figure is the mean over repeated runs with "
        "a Student t 95% interval (n = runs that verified; {r} planned per setting). A run whose "
        "row counts or `CHECKSUM TABLE` differ from the source's is failed and enters no figure.",
        "throughput": "throughput",
        "rec_intro": "Per knob: the best setting and the smallest setting whose mean throughput "
        "is within 5% of the best's, with the ratio of the two means and its Fieller 95% "
        "interval — the data-driven version of report 003's recommendations (statements of "
        "200 KB–1 MB, pool-size 16, worker-count 16–32).",
        "seed_intro": "Report 003 (DM 1.0-GA, MySQL 5.7 → TiDB, one run per setting: no "
        "interval) beside this study. The settings need not match: the rows are side by side, "
        "not paired.",
        "lag": "Lag of the replica behind the source (transactions) while sysbench writes with "
        "the SQL thread on, per worker-count.",
        "t": "time since sysbench started (s)",
        "lag_y": "lag (transactions)",
        "lag_off": "No lag traced: the study file sets `dm.sync.lag: false` (the sync runs then "
        "measure throughput only).",
        "lag_none": "No lag samples in the catalog yet: the sync runs with `dm.sync.lag` have "
        "not run, or the replica's lag could not be read while they ran.",
        "data": "`{db}`: {tables} × {rows:,} rows (`sysbench oltp_insert prepare`); {r} repeats; "
        "sync: {wls} for {s} s.",
        "per_s": "rows/s",
    },
    "zh": {
        "unit": "单元",
        "knob": "参数",
        "setting": "取值",
        "workload": "负载",
        "n": "次数 (n)",
        "mb_s": "MB/s [95% 置信区间]",
        "rows_s": "行/秒 [95% 置信区间]",
        "latency": "语句延迟 (ms)",
        "rps": "每条语句行数",
        "status": "状态",
        "notes": "备注",
        "best": "最佳取值",
        "smallest": "与最佳相差 5% 以内的最小取值",
        "ratio": "其吞吐 ÷ 最佳 [95% Fieller 区间]",
        "sure": "确定在 5% 以内",
        "yes": "是",
        "no": "否",
        "published": "报告 003",
        "measured": "本次测试",
        "none": "目录中还没有 DM 测试结果:`{cmd}` 会进行测量。",
        "standin": "**本地替代。** 源端与目标端是本机上的两个私有 MariaDB,使用真实的 "
        "mydumper/myloader(DM 的 dump 与 load 单元)。DM 的 sync 单元由 MariaDB 自身的并行复制"
        "代替(GTID,`slave_parallel_threads` = worker-count,`slave_parallel_mode` 为 "
        "`{mode}`):这些数字属于本机,而不是 TiDB 集群。",
        "intro": "共 {n} 次运行({ok} 次成功);{units}。每个数字是多次重复运行的均值及 Student t "
        "95% 置信区间(n = 校验通过的运行次数;每个取值计划 {r} 次)。行数或 `CHECKSUM TABLE` "
        "与源端不一致的运行记为失败,不进入任何统计。",
        "throughput": "吞吐",
        "rec_intro": "每个参数:最佳取值,以及平均吞吐与最佳相差 5% 以内的最小取值,给出两者均值之比"
        "及其 Fieller 95% 置信区间——报告 003 建议(语句 200 KB–1 MB、pool-size 16、"
        "worker-count 16–32)的数据驱动版本。",
        "seed_intro": "报告 003(DM 1.0-GA,MySQL 5.7 → TiDB,每个取值只测一次:没有区间)与本次"
        "测试并列。两边的取值不必相同:各行只是并排,不是配对。",
        "lag": "sysbench 写入且 SQL 线程运行时,复制端落后源端的事务数,按 worker-count 分组。",
        "t": "sysbench 开始后的时间 (s)",
        "lag_y": "延迟(事务数)",
        "lag_off": "未记录同步延迟:参数文件设置了 `dm.sync.lag: false`(同步测试只测吞吐)。",
        "lag_none": "结果库中尚无同步延迟采样:开启 `dm.sync.lag` 的同步测试尚未运行,或运行时无法"
        "读取副本的延迟。",
        "data": "`{db}`:{tables} 张表 × {rows:,} 行(`sysbench oltp_insert prepare`);重复 {r} 次;"
        "同步:{wls},每次 {s} 秒。",
        "per_s": "行/秒",
    },
}

UNIT_WORDS = {
    "en": {"dump": "dump (mydumper)", "load": "load (myloader)", "sync": "sync (replication)"},
    "zh": {"dump": "导出 (mydumper)", "load": "导入 (myloader)", "sync": "同步(复制)"},
}


def words(lang: str) -> dict:
    return TEXT[check_lang(lang)]


def description(session) -> None:
    """What the phase runs here, and on the embedded default that it is a stand-in."""
    p = session.study.dm
    W = words(session.lang)
    if session.study.target.kind == "embedded":
        say(W["standin"].format(mode=p.sync.mode))
    say(
        W["data"].format(
            db=p.database, tables=p.tables, rows=p.table_size, r=p.repeats,
            wls=", ".join(p.sync.workloads), s=p.sync.duration_s,
        )
    )  # fmt: skip


def knob_table(rows: pd.DataFrame, lang: str = "en") -> pd.DataFrame:
    """The result rows for people: one line per unit × knob × setting × workload."""
    W = words(lang)
    U = UNIT_WORDS[lang]
    out = pd.DataFrame(
        {
            W["unit"]: [U.get(u, u) for u in rows["unit"]],
            W["knob"]: rows["knob"],
            W["setting"]: rows["setting"],
            W["workload"]: rows["workload"],
            W["n"]: rows["n"].astype(int),
            W["mb_s"]: [
                T.fmt_ci(r.mb_s, r.ci_low, r.ci_high) if r.metric == "mb_s" else "—"
                for r in rows.itertuples()
            ],
            W["rows_s"]: [
                T.fmt_ci(r.rows_s, r.ci_low, r.ci_high)
                if r.metric == "rows_s"
                else T.fmt_num(r.rows_s)
                for r in rows.itertuples()
            ],
            W["latency"]: [T.fmt_num(x, 2) if T._ok(x) else "—" for x in rows["latency_ms"]],
            W["rps"]: [T.fmt_num(x) if T._ok(x) else "—" for x in rows["rows_per_statement"]],
            W["status"]: rows["status"],
            W["notes"]: [T.fmt_notes(w, lang) for w in rows["warnings"]],
        }
    )
    return out


def knobs(session, rows: pd.DataFrame) -> pd.DataFrame:
    """The headline table, then per knob throughput and latency against the setting."""

    lang = session.lang
    W = words(lang)

    specs = plan(session.study, session.only)
    dm_runs = planned_runs(Store.for_study(session.study), session.study, specs)
    if not len(rows) or not len(dm_runs):
        say(W["none"].format(cmd=session.command))
        return unit_rows(dm_runs)
    units = unit_rows(dm_runs)
    ok = int((dm_runs["status"] == "ok").sum())
    names = ", ".join(UNIT_WORDS[lang][u] for u in dict.fromkeys(units["unit"]))
    say(W["intro"].format(n=len(dm_runs), ok=ok, units=names, r=session.study.dm.repeats))
    show(knob_table(rows, lang), lang)
    for (unit, knob), _g in rows.groupby(["unit", "knob"], sort=False):
        u = units[(units["unit"] == unit) & (units["knob"] == knob)]
        metrics = [(THROUGHPUT[unit], W["throughput"])]
        if unit == "load" and u["latency_ms"].notna().any():
            metrics.append(("latency_ms", W["latency"]))
        fig, axes = plt.subplots(1, len(metrics), figsize=(4.8 * len(metrics), 3.4), squeeze=False)
        order = setting_order(u["setting"])
        for (metric, label), ax in zip(metrics, axes[0], strict=True):
            cells = knob_cells(u, metric)
            for wl, c in cells.groupby("workload", sort=False):
                c = c.set_index("setting").reindex([s for s in order if s in set(c["setting"])])
                lo = (c["mean"] - c["ci_low"]).fillna(0).clip(lower=0)
                hi = (c["ci_high"] - c["mean"]).fillna(0).clip(lower=0)
                ax.errorbar(
                    range(len(c)), c["mean"], yerr=[lo, hi], marker="o", capsize=3, label=wl
                )
                ax.set_xticks(range(len(c)), c.index)
            ax.set_xlabel(f"{knob} ({W['setting']})")
            unit_label = {"mb_s": " (MB/s)", "rows_s": f" ({W['per_s']})"}.get(metric, "")
            ax.set_ylabel(f"{label}{unit_label}")
            ax.grid(alpha=0.3)
            if unit == "sync":
                ax.legend(fontsize=8)
        fig.suptitle(f"{UNIT_WORDS[lang][unit]}: {knob} (mean, 95% t)")
        fig.tight_layout()
        plt.show()
    return units


def recommendations(session, units: pd.DataFrame) -> pd.DataFrame:
    """Best setting and smallest setting within 5% of the best, per knob, with Fieller."""

    lang = session.lang
    W = words(lang)
    rec = recommendation(units) if len(units) else pd.DataFrame()
    if not len(rec):
        return rec
    say(W["rec_intro"])
    show(
        pd.DataFrame(
            {
                W["unit"]: [UNIT_WORDS[lang].get(u, u) for u in rec["unit"]],
                W["knob"]: rec["knob"],
                W["workload"]: rec["workload"],
                W["best"]: [
                    f"{b} ({T.fmt_num(m)})"
                    for b, m in zip(rec["best"], rec["best_mean"], strict=True)
                ],
                W["smallest"]: [
                    f"{s} ({T.fmt_num(m)})"
                    for s, m in zip(rec["smallest"], rec["smallest_mean"], strict=True)
                ],
                W["ratio"]: [
                    "—" if r.best == r.smallest else T.fmt_ci(r.ratio, r.ci_low, r.ci_high, 3)
                    for r in rec.itertuples()
                ],
                W["sure"]: ["—" if s is None else W["yes"] if s else W["no"] for s in rec["sure"]],
                W["notes"]: [T.fmt_notes(w, lang) for w in rec["warnings"]],
            }
        ),
        lang,
    )  # fmt: skip
    return rec


#: Report 003's tables and the knob of this study each corresponds to, with the published
#: setting and throughput columns.
SEED_TABLES = (
    ("dump", "dump", "dump.rows", "setting", "dump_speed_mb_s", "MB/s"),
    ("pool_size", "load", "load.threads", "pool_size", "import_speed_mb_s", "MB/s"),
    ("statement_rows", "load", "dump.statement_size", "rows_per_statement", "import_speed_mb_s",
     "MB/s"),
    ("sync_workers", "sync", "sync.workers", "worker_count", "dm_job_tps", "DM job TPS"),
)  # fmt: skip


def seed003(session, rows: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Report 003's tables from its own figures beside what this study measured for the same
    knob, row by row (settings differ: side by side, not paired)."""

    lang = session.lang
    W = words(lang)
    say(W["seed_intro"])
    out = {}
    for name, unit, knob, set_col, val_col, what in SEED_TABLES:
        pub = seed003_table(name)
        mine = rows[(rows["unit"] == unit) & (rows["knob"] == knob)] if len(rows) else rows
        if unit == "sync" and len(mine):
            mine = mine[mine["workload"] == mine["workload"].iloc[0]]
        n = max(len(pub), len(mine))
        left = pd.DataFrame(
            {
                f"{W['published']}: {set_col}": list(pub[set_col]) + [""] * (n - len(pub)),
                f"{W['published']}: {what}": list(pub[val_col]) + [""] * (n - len(pub)),
            }
        )
        metric = "mb_s" if unit != "sync" else "rows_s"
        shown = [
            T.fmt_ci(getattr(r, metric), r.ci_low, r.ci_high) + f" (n={int(r.n)})"
            for r in mine.itertuples()
        ]
        right = pd.DataFrame(
            {
                f"{W['measured']}: {knob}": list(mine["setting"]) + [""] * (n - len(mine)),
                f"{W['measured']}: {'MB/s' if metric == 'mb_s' else W['per_s']}": shown
                + [""] * (n - len(mine)),
            }
        )
        table = pd.concat([left, right], axis=1)
        say(f"**{name}** ({UNIT_WORDS[lang][unit]}, {knob})")
        show(table.astype(str), lang)
        out[name] = table
    return out


def lag(session) -> pd.DataFrame:
    """The replica's lag over time during the sync runs with the SQL thread on."""

    W = words(session.lang)
    store = Store.for_study(session.study)
    trace = store.read("dm_lag", session.study.study)
    if not len(trace):
        # an empty figure says why it is empty
        say(W["lag_off"] if not session.study.dm.sync.lag else W["lag_none"])
        return trace
    say(W["lag"])
    runs = store.read("dm_runs", session.study.study)[["run_key", "setting", "workload"]]
    trace = trace.merge(runs, on="run_key", how="left")
    wls = list(dict.fromkeys(trace["workload"]))

    settings = setting_order(trace["setting"].dropna())
    colour = dict(
        zip(settings, plt.rcParams["axes.prop_cycle"].by_key()["color"] * 4, strict=False)
    )
    fig, axes = plt.subplots(1, len(wls), figsize=(4.8 * len(wls), 3.4), squeeze=False)
    for wl, ax in zip(wls, axes[0], strict=True):
        for _key, g in trace[trace["workload"] == wl].groupby("run_key", sort=False):
            setting = g["setting"].iloc[0]
            ax.plot(
                g["t"], g["lag_transactions"], color=colour[setting], alpha=0.8,
                label=f"workers={setting}",
            )  # fmt: skip
        ax.set_title(wl)
        ax.set_xlabel(W["t"])
        ax.set_ylabel(W["lag_y"])
        ax.grid(alpha=0.3)
        handles, labels = ax.get_legend_handles_labels()
        uniq = dict(zip(labels, handles, strict=True))  # one entry per worker-count
        ax.legend(uniq.values(), uniq.keys(), fontsize=8)
    fig.tight_layout()
    plt.show()
    details(sentence("dm_lag_samples", session.lang, n=len(trace)), trace)
    return trace

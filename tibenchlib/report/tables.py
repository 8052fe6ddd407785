"""Tables for people: DataFrame of results → DataFrame of text cells (and a Styler).

Pure functions. Numbers get thousands separators and few decimals, headers carry units,
improvements read ``+4.9% [+1.6, +8.4]``, p-values have two significant digits, and headers come
in English or Chinese (the reports' own column names, such as ``TPS 提升 (%)`` and
``95% 延迟 (ms)``, are the model). Arms keep the study's order. Missing values print as ``n/a``;
nothing is invented.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

import pandas as pd

from . import words

LANGS = ("en", "zh")

#: Notes longer than this many characters show their beginning, the whole text one click away.
NOTES_SHOWN = 100


#: How an A/B cell was compared (``method`` of :func:`tibenchlib.stats.compare_arms`), in words.
def method_words(method: str, lang: str = "en") -> str:
    """The estimator behind a cell's interval, in a few words."""
    m = str(method or "")
    if m.startswith("paired"):
        return "paired within rounds (t)" if lang == "en" else "轮内配对（t）"
    if m.startswith("Fieller"):
        return "unpaired (Fieller)" if lang == "en" else "非配对 (Fieller)"
    if m.startswith("adaptive"):
        return (
            "adaptive rounds (group-sequential t)" if lang == "en" else "自适应轮次（成组序贯 t）"
        )
    return m


LABELS = {
    "en": {
        "workload": "Workload",
        "arm": "Arm",
        "threads": "Threads",
        "n": "Runs (n)",
        "tps": "{arm} TPS",
        "p95": "{arm} 95% latency (ms)",
        "tps_ci": "TPS [95% CI]",
        "qps": "QPS",
        "lat_avg": "Avg latency (ms)",
        "p95_ci": "95% latency (ms) [95% CI]",
        "cv": "CV between runs (%)",
        "failed": "Failed runs",
        "imp": "TPS improvement (%) [95% CI]",
        "p95_imp": "95% latency change (%) [95% CI]",
        "imp_adj": "Simultaneous 95% CI (Holm family)",
        "method": "Method",
        "p": "p (Holm)",
        "verdict": "Verdict",
        "notes": "Notes",
        "policy": "Binding",
        "verified": "Binding verified",
        "tps_pair": "TPS (unbound → binding)",
        "p95_pair": "95% latency (ms) (unbound → binding)",
        "dips_pair": "Dips (unbound → binding)",
        "query": "Query",
        "mode": "Mode",
        "mean_s": "Mean time (s) [95% CI]",
        "t_imp": "Time saved (%) [95% CI]",
        "t_ratio": "Time vs base (×) [95% CI]",
        "speedup": "Speed-up [95% CI]",
        "efficiency": "Efficiency (%)",
        "geomean": "Geometric mean time (s) [95% CI]",
        "queries": "Queries",
        "elapsed": "Wall time per set (s) [95% CI]",
        "qph": "Queries per hour [95% CI]",
        "qph_imp": "Queries per hour vs first arm (%) [95% CI]",
        "step": "Step",
        "seconds": "Time (s)",
        "status": "Status",
        "flavor": "Server",
        "version": "Version",
        "memory": "Memory (GiB)",
        "cpu": "CPU",
        "sockets": "Sockets",
        "cores": "Cores",
        "logical_cpus": "Logical CPUs",
        "numa_nodes": "NUMA nodes",
        "os": "OS",
        "setting": "Setting",
    },
    "zh": {
        "workload": "测试场景",
        "arm": "测试组",
        "threads": "压测线程",
        "n": "次数 (n)",
        "tps": "{arm} TPS",
        "p95": "{arm} 95% 延迟 (ms)",
        "tps_ci": "TPS [95% 置信区间]",
        "qps": "QPS",
        "lat_avg": "平均延迟 (ms)",
        "p95_ci": "95% 延迟 (ms) [95% 置信区间]",
        "cv": "多次运行间变异系数 (%)",
        "failed": "失败次数",
        "imp": "TPS 提升 (%) [95% 置信区间]",
        "p95_imp": "95% 延迟变化 (%) [95% 置信区间]",
        "imp_adj": "联合 95% 置信区间 (Holm 校正)",
        "method": "方法",
        "p": "p 值 (Holm)",
        "verdict": "结论",
        "notes": "说明",
        "policy": "绑核方式",
        "verified": "绑定已核实",
        "tps_pair": "TPS (unbound → 绑核)",
        "p95_pair": "95% 延迟 (ms) (unbound → 绑核)",
        "dips_pair": "掉底次数 (unbound → 绑核)",
        "query": "查询",
        "mode": "模式",
        "mean_s": "平均耗时 (s) [95% 置信区间]",
        "t_imp": "效率提升比例 (%) [95% 置信区间]",
        "t_ratio": "耗时相对基准 (倍) [95% 置信区间]",
        "speedup": "加速比 [95% 置信区间]",
        "efficiency": "并行效率 (%)",
        "geomean": "几何平均耗时 (s) [95% 置信区间]",
        "queries": "查询数",
        "elapsed": "每组总耗时 (s) [95% 置信区间]",
        "qph": "每小时查询数 [95% 置信区间]",
        "qph_imp": "每小时查询数相比第一组 (%) [95% 置信区间]",
        "step": "步骤",
        "seconds": "耗时 (s)",
        "status": "状态",
        "flavor": "数据库",
        "version": "版本",
        "memory": "内存 (GiB)",
        "cpu": "CPU",
        "sockets": "CPU 插槽",
        "cores": "物理核数",
        "logical_cpus": "逻辑 CPU 数",
        "numa_nodes": "NUMA 节点数",
        "os": "操作系统",
        "setting": "配置项",
    },
}

VERDICTS = {
    "en": {
        "better": "better",
        "worse": "worse",
        "equivalent": "equivalent",
        "small": "significant but small (estimate within the margin)",
        "~": "no significant difference",
        "inconclusive": "inconclusive: more runs needed",
        "n/a": "n/a (one run: no test)",
    },
    "zh": {
        "better": "提升",
        "worse": "下降",
        "equivalent": "相当",
        "small": "差异显著但较小(估计值在等价区间内)",
        "~": "无显著差异",
        "inconclusive": "无法判断:需要更多次测试",
        "n/a": "无 (仅一次:无法检验)",
    },
}

#: Background colour of a verdict cell, by the verdict's code.
VERDICT_COLOURS = {
    "better": "#c8e6c9",
    "worse": "#ffcdd2",
    "equivalent": "#e3f2fd",
    "small": "#eef5e9",
    "~": "#f5f5f5",
    "inconclusive": "#fff3c4",
}


#: A run's or step's status as the catalog stores it, said in Chinese.
STATUS_ZH = {
    "ok": "成功", "skipped": "已跳过", "failed": "失败", "degenerate": "无效", "running": "进行中",
    "pending": "未开始", "timeout": "超时", "error": "出错", "done": "已完成",
}  # fmt: skip


def status_text(v, lang: str) -> str:
    """``ok`` / ``ok, skipped`` in ``lang`` (the catalog's words stay English)."""
    s = str(v)
    if lang != "zh":
        return s
    out = []
    for x in s.split(", "):
        word, sep, detail = x.strip().partition(": ")  # "failed: <the error>"
        out.append(STATUS_ZH.get(word, word) + ("：" + detail if sep else ""))
    return "、".join(out)


def labels(lang: str = "en") -> dict[str, str]:
    """The headers in ``lang`` ("en" or "zh")."""
    return LABELS[words.check_lang(lang)]


#: the data set's steps as the seeds name them (导入数据 / 收集统计信息 / 预热 / 校验)
STEPS = {
    "zh": {
        "prepare": "导入数据",
        "generate": "生成数据",
        "reuse": "复用已有数据",
        "load": "导入数据",
        "analyze": "收集统计信息",
        "warmup": "预热",
        "verify": "校验",
    }
}


def step_names(steps, lang: str = "en") -> list[str]:
    """Each step's name in ``lang`` (a name it does not know stays as it is)."""
    names = STEPS.get(words.check_lang(lang), {})
    return [names.get(str(s), str(s)) for s in steps]


def _ok(x) -> bool:
    if x is None or isinstance(x, bool):
        return False
    try:
        return math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def decimals(x: float) -> int:
    """Few decimals, by magnitude: 0 from 100, 1 from 10, 2 from 0.1, else 3."""
    a = abs(x)
    return 0 if a >= 100 else 1 if a >= 10 else 2 if a >= 0.1 else 3


def fmt_num(x, digits: int | None = None) -> str:
    """``12,345`` / ``45.6`` / ``0.73``: thousands separators and few decimals; ``n/a``."""
    if not _ok(x):
        return "n/a"
    x = float(x)
    return f"{x:,.{decimals(x) if digits is None else digits}f}"


def fmt_ci(x, low=None, high=None, digits: int | None = None) -> str:
    """``1,234 [1,200, 1,260]``; the interval's decimals follow the estimate's."""
    if not _ok(x):
        return "n/a"
    d = decimals(float(x)) if digits is None else digits
    s = fmt_num(x, d)
    if _ok(low) and _ok(high):
        s += f" [{_bound(low, d)}, {_bound(high, d)}]"
    return s


def ci_column(d: pd.DataFrame, m: str, fmt=fmt_ci) -> list[str]:
    """Column ``m`` of ``d`` as ``mean [low, high]`` strings (``m``, ``m_ci_low``,
    ``m_ci_high``), each formatted by ``fmt``."""
    return [fmt(*r) for r in zip(d[m], d[f"{m}_ci_low"], d[f"{m}_ci_high"], strict=True)]


def _bound(x, d: int) -> str:
    """An interval's end in the estimate's decimals, unless those round a non-zero end to zero
    (a time's low end "0.00" reads as a time of nothing): then as :func:`fmt_pos`."""
    s = fmt_num(x, d)
    return fmt_pos(x) if float(x) != 0 and float(s.replace(",", "")) == 0 else s


def fmt_pos(x) -> str:
    """:func:`fmt_num`, except that a figure too small for its 3 decimals keeps two significant
    digits (``0.00042``), never reading as 0."""
    s = fmt_num(x)
    if _ok(x) and float(x) != 0 and float(s.replace(",", "")) == 0:
        return f"{float(x):.2g}" if abs(float(x)) >= 1e-4 else f"{float(x):.1e}"
    return s


def fmt_pct_ci(est, low=None, high=None, digits: int = 1, lang: str = "en", n=None) -> str:
    """``+4.9% [+1.6, +8.4]``; without an interval ``+4.9% (no interval)`` (``(无区间)``), or
    ``(interval unbounded)`` when ``n`` (runs per arm) was enough for one."""
    if not _ok(est):
        return "n/a"
    s = f"{float(est):+,.{digits}f}%"
    if _ok(low) and _ok(high):
        return s + f" [{float(low):+,.{digits}f}, {float(high):+,.{digits}f}]"
    unbounded = _ok(n) and float(n) >= 2
    return s + " " + words.say("unbounded" if unbounded else "no_interval", lang)


def fmt_vs_base(est, low, high, arm, base, lang: str = "en", digits: int = 1) -> str:
    """:func:`fmt_pct_ci`, except on the base arm's row, which is the reference (``基准``):
    its "+0.0%" is true by definition and says nothing."""
    if base is not None and str(arm) == str(base):
        return words.say("reference", lang)
    return fmt_pct_ci(est, low, high, digits, lang)


def impossible_saved(est, high=None) -> bool:
    """A time saved (percent) of 100 or more: a positive time cannot shrink by all of itself."""
    return any(_ok(x) and float(x) >= 100 for x in (est, high))


def _saved(r, base, lang: str, est="improvement_pct", lo="ci_low_pct", hi="ci_high_pct") -> str:
    e, h = getattr(r, est), getattr(r, hi)
    if impossible_saved(e, h) and not (base is not None and str(r.arm) == str(base)):
        return WITHHELD
    return fmt_vs_base(e, getattr(r, lo), h, r.arm, base, lang)


def saved_verdict(lo, hi) -> str:
    """What a time saved's interval supports, as a verdict code: ``better`` (the interval lies
    above 0), ``worse`` (below), ``~`` (it holds 0: no change shown) or ``n/a`` (no interval).
    The TPC-H overall table and its finding read this one rule."""
    if not (_ok(lo) and _ok(hi)):
        return "n/a"
    return "better" if float(lo) > 0 else ("worse" if float(hi) < 0 else "~")


def _eff(x) -> str:
    # an efficiency above 100% (super-linear) cannot come from these ratios: withheld
    if not _ok(x):
        return "n/a"
    return WITHHELD if float(x) > 1 else fmt_num(100 * x, 0)


#: A figure withheld because its value is impossible (see :func:`impossible_saved`).
WITHHELD = "—"


def fmt_p(p) -> str:
    """Two significant digits (``0.031``, ``0.0012``); below 0.0001 as ``<0.0001``."""
    if not _ok(p):
        return "n/a"
    p = float(p)
    if p < 1e-4:
        return "<0.0001"
    return f"{p:.2g}" if p < 0.995 else "1.0"


def fmt_notes(w, lang: str = "en") -> str:
    """A list of warnings as one "; "-separated cell in ``lang`` (never cut; see
    :func:`tibenchlib.report.words.notes`)."""
    return words.notes(w, lang)


def notes_html(text: str, limit: int = NOTES_SHOWN) -> str:
    """A notes cell for the browser: short notes as they are; a long one shows its first
    ``limit`` characters and opens to the whole text (and carries it as a tooltip)."""
    text = "" if text is None else str(text)
    if len(text) <= limit:
        return html.escape(text)
    cut = text.rfind(" ", 0, limit)
    head = text[: cut if cut > limit // 2 else limit]
    return (
        f'<details title="{html.escape(text, quote=True)}"><summary>{html.escape(head)} …'
        f"</summary>{html.escape(text[len(head) :])}</details>"
    )


def verdict_text(code, lang: str = "en") -> str:
    labels(lang)
    text = VERDICTS[lang].get(code, "" if code is None else str(code))
    return words.zh_punct(text) if lang == "zh" else text


def arm_order(present: Sequence[str], order: Sequence[str] | None) -> list[str]:
    """``present`` arms in the study's ``order``, then any others as they first appeared."""
    seen = list(dict.fromkeys(present))
    if not order:
        return seen
    first = [a for a in order if a in set(seen)]
    return first + [a for a in seen if a not in set(first)]


def sort_by_arm(df: pd.DataFrame, col: str, order: Sequence[str] | None, then=()) -> pd.DataFrame:
    """Rows sorted by ``col`` in the study's arm order (stable), then by ``then`` columns."""
    if not len(df) or col not in df:
        return df
    rank = {a: i for i, a in enumerate(arm_order(list(df[col].astype(str)), order))}
    key = df[col].astype(str).map(rank)
    return (
        df.assign(_rank=key)
        .sort_values(["_rank", *then], kind="stable")
        .drop(columns="_rank")
        .reset_index(drop=True)
    )


# -- tables ------------------------------------------------------------------------------------
def compare_table(cmp: pd.DataFrame, lang: str = "en") -> pd.DataFrame:
    """One A/B pair (rows of :func:`tibenchlib.compare.compare_arms_table`) as the reports' table.

    Columns: workload (when several), threads, each arm's mean TPS and mean 95% latency, the
    TPS improvement with its Fieller 95% interval, the Holm-adjusted p, the verdict code (shown
    in words by :func:`styled`), the runs per arm and the notes.
    """
    L = labels(lang)
    d = cmp.reset_index(drop=True)
    if not len(d):
        return pd.DataFrame()
    a, b = str(d["baseline"].iloc[0]), str(d["candidate"].iloc[0])
    va = d["baseline_value"] if "baseline_value" in d else d["baseline_tps"]
    vb = d["candidate_value"] if "candidate_value" in d else d["candidate_tps"]
    out = pd.DataFrame()
    if d["workload"].nunique(dropna=False) > 1:
        out[L["workload"]] = d["workload"].fillna("")
    out[L["threads"]] = [fmt_num(t, 0) for t in d["threads"]]
    out[L["tps"].format(arm=a)] = [fmt_num(x) for x in va]
    out[L["tps"].format(arm=b)] = [fmt_num(x) for x in vb]
    if "baseline_lat_p95_ms" in d:
        out[L["p95"].format(arm=a)] = [fmt_num(x) for x in d["baseline_lat_p95_ms"]]
        out[L["p95"].format(arm=b)] = [fmt_num(x) for x in d["candidate_lat_p95_ms"]]

    def n(r):  # runs per arm, where the table has them
        return min(getattr(r, "n_baseline", 0), getattr(r, "n_candidate", 0))

    out[L["imp"]] = [
        fmt_pct_ci(r.improvement_pct, r.ci_low_pct, r.ci_high_pct, lang=lang, n=n(r))
        for r in d.itertuples()
    ]
    if "ci_low_adj_pct" in d and (d["family_size"] > 1).any():
        # the interval that matches a Holm-adjusted verdict, beside the per-cell one
        out[L["imp_adj"]] = [
            fmt_pct_ci(r.improvement_pct, r.ci_low_adj_pct, r.ci_high_adj_pct, lang=lang,
                       n=n(r)).split(" ", 1)[-1]
            for r in d.itertuples()
        ]  # fmt: skip
    if "method" in d:
        out[L["method"]] = [method_words(m, lang) for m in d["method"]]
    out[L["p"]] = [fmt_p(x) for x in d["p_adjusted"]]
    out[L["verdict"]] = list(d["verdict"])
    out[L["n"]] = [
        f"{_int(x)} + {_int(y)}" for x, y in zip(d["n_baseline"], d["n_candidate"], strict=True)
    ]
    if "warnings" in d:
        out[L["notes"]] = [fmt_notes(w, lang) for w in d["warnings"]]
    return out


def _int(x) -> str:
    return str(int(x)) if _ok(x) else "0"


def sweep_table(
    table: pd.DataFrame, lang: str = "en", order: Sequence[str] | None = None
) -> pd.DataFrame:
    """:func:`tibenchlib.sweep.sweep_table` for people: each mean with its t 95% interval."""
    L = labels(lang)
    if not len(table):
        return pd.DataFrame()
    d = sort_by_arm(table, "arm", order, then=("workload", "threads"))
    d = d.sort_values(["workload"], kind="stable").reset_index(drop=True)
    out = pd.DataFrame(
        {
            L["workload"]: d["workload"],
            L["arm"]: d["arm"],
            L["threads"]: [fmt_num(t, 0) for t in d["threads"]],
            L["n"]: [_int(x) for x in d["n"]],
            L["tps_ci"]: [
                fmt_ci(*r) for r in zip(d["tps"], d["tps_ci_low"], d["tps_ci_high"], strict=True)
            ],
        }
    )
    if "qps" in d:
        out[L["qps"]] = [fmt_num(x) for x in d["qps"]]
    if "lat_avg_ms" in d:
        out[L["lat_avg"]] = [fmt_num(x) for x in d["lat_avg_ms"]]
    if "lat_p95_ms" in d:
        out[L["p95_ci"]] = [
            fmt_ci(*r)
            for r in zip(
                d["lat_p95_ms"], d["lat_p95_ms_ci_low"], d["lat_p95_ms_ci_high"], strict=True
            )
        ]
    if "cv" in d:
        out[L["cv"]] = [fmt_num(100 * x, 1) if _ok(x) else "n/a" for x in d["cv"]]
    if "n_failed" in d:
        out[L["failed"]] = [_int(x) for x in d["n_failed"]]
    if "warnings" in d:
        out[L["notes"]] = [fmt_notes(w, lang) for w in d["warnings"]]
    return out


def _pairs(a, b) -> list[str]:
    return [f"{fmt_num(x)} → {fmt_num(y)}" for x, y in zip(a, b, strict=True)]


def numa_table(rows: pd.DataFrame, lang: str = "en") -> pd.DataFrame:
    """Rows of :func:`tibenchlib.numa.analyze`: each policy against ``unbound``; a figure of
    both sides reads "unbound → the binding" in one column."""
    L = labels(lang)
    if not len(rows):
        return pd.DataFrame()
    out = pd.DataFrame(
        {
            L["workload"]: rows["workload"],
            L["threads"]: [fmt_num(t, 0) for t in rows["threads"]],
            L["policy"]: rows["candidate_policy"],
            # the two sides of a figure in one column ("12,345 → 11,987"): fits the page
            L["tps_pair"]: _pairs(rows["baseline_tps"], rows["candidate_tps"]),
            L["imp"]: [
                fmt_pct_ci(
                    r.improvement_pct,
                    r.ci_low_pct,
                    r.ci_high_pct,
                    lang=lang,
                    n=min(r.n_baseline, r.n_candidate),
                )
                for r in rows.itertuples()
            ],  # fmt: skip
            L["p"]: [fmt_p(x) for x in rows["p_adjusted"]],
            L["verdict"]: list(rows["verdict"]),
            L["p95_pair"]: _pairs(rows["baseline_p95_ms"], rows["candidate_p95_ms"]),
            L["verified"]: [
                "n/a"
                if v is None or (isinstance(v, float) and math.isnan(v))
                else words.say("yes" if v else "no", lang)
                for v in rows["binding_verified"]
            ],
            L["dips_pair"]: [
                f"{_int(x)} → {_int(y)}"
                for x, y in zip(rows["dips_baseline"], rows["dips_candidate"], strict=True)
            ],
            L["n"]: [
                f"{_int(x)} + {_int(y)}"
                for x, y in zip(rows["n_baseline"], rows["n_candidate"], strict=True)
            ],
            L["notes"]: [fmt_notes(w, lang) for w in rows["warnings"]],
        }
    )
    return out


def tpch_elapsed_table(el: pd.DataFrame, lang: str = "en", base: str | None = None) -> pd.DataFrame:
    """Rows of :func:`tibenchlib.tpch.phase.elapsed_summary`: whole query sets per arm (the
    ``base`` arm is the reference of the queries-per-hour change)."""
    L = labels(lang)
    if not len(el):
        return pd.DataFrame()
    return pd.DataFrame(
        {
            L["mode"]: el["mode"],
            L["arm"]: el["arm"],
            L["n"]: [_int(x) for x in el["n"]],
            L["queries"]: [_int(x) for x in el["queries"]],
            L["elapsed"]: [
                fmt_ci(*r)
                for r in zip(
                    el["elapsed_s"], el["elapsed_ci_low_s"], el["elapsed_ci_high_s"], strict=True
                )
            ],
            L["qph"]: [
                fmt_ci(*r)
                for r in zip(
                    el["queries_per_hour"], el["qph_ci_low"], el["qph_ci_high"], strict=True
                )
            ],
            L["qph_imp"]: [
                fmt_vs_base(r.qph_improvement_pct, r.ci_low_pct, r.ci_high_pct, r.arm, base, lang)
                for r in el.itertuples()
            ],
        }
    )


# -- display -----------------------------------------------------------------------------------
def styled(table: pd.DataFrame, lang: str = "en"):
    """A Styler for a formatted table: verdict cells coloured and worded, no index, every row
    and column shown; notes wrapped in a column of bounded width, a long note shortened with
    its whole text one click away (:func:`notes_html`)."""
    L = labels(lang)
    vcol = L["verdict"]
    st = table.style.hide(axis="index").format(escape="html")
    if vcol in table:
        st = st.map(
            lambda v: f"background-color: {VERDICT_COLOURS[v]}" if v in VERDICT_COLOURS else "",
            subset=[vcol],
        ).format(lambda v: verdict_text(v, lang), subset=[vcol])
    st = st.set_properties(**{"text-align": "right", "white-space": "nowrap"})
    # words wrap in narrow columns, so a wide comparison fits a notebook's width
    wrapped = [c for c in (vcol, L["method"]) if c in table]
    if wrapped:
        st = st.set_properties(
            subset=wrapped,
            **{"text-align": "left", "white-space": "normal", "min-width": "6em",
               "max-width": "10em"},
        )  # fmt: skip
    if L["notes"] in table:
        st = st.format(notes_html, subset=[L["notes"]]).set_properties(
            subset=[L["notes"]],
            **{
                "text-align": "left",
                "white-space": "normal",
                "min-width": "12em",
                "max-width": "24em",
                "overflow-wrap": "anywhere",
            },
        )
    text_cols = [c for c in (L["workload"], L["arm"], L["policy"], L["mode"]) if c in table]
    if text_cols:
        st = st.set_properties(subset=text_cols, **{"text-align": "left"})
    return st.set_table_styles([{"selector": "th", "props": "text-align: left;"}])


def plain(table: pd.DataFrame, lang: str = "en") -> pd.DataFrame:
    """The same table with verdicts in words (for CSV and Markdown export)."""
    vcol = labels(lang)["verdict"]
    if vcol not in table:
        return table
    return table.assign(**{vcol: [verdict_text(v, lang) for v in table[vcol]]})

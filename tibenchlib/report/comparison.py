"""Comparison tables for people: ``+5.06% [+2.0, +8.2] (n=3+3)``, English and Chinese labels,
CSV + Markdown export. The figures come from :mod:`tibenchlib.compare` and
:mod:`tibenchlib.stats`; nothing here computes a statistic.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..stats import summarize_improvement
from . import words

__all__ = [
    "VERDICT_LABELS",
    "export",
    "format_ci",
    "input_note",
    "report_summary",
    "report_table",
    "to_markdown",
]

VERDICT_LABELS = {
    "en": {
        "better": "better",
        "worse": "worse",
        "small": "significant but small (estimate within the margin)",
        "equivalent": "equivalent",
        "~": "~ (no significant difference)",
        "inconclusive": "inconclusive (see the notes)",
        "n/a": "n/a (n=1)",
    },
    "zh": {
        "better": "更好",
        "worse": "更差",
        "small": "差异显著但较小(估计值在等价区间内)",
        "equivalent": "相当",
        "~": "~(无显著差异)",
        "inconclusive": "无定论(见说明)",
        "n/a": "n/a(单次运行)",
    },
}


def _ok(x) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x)) and np.isfinite(x)


def format_ci(
    estimate: float | None,
    low: float | None = None,
    high: float | None = None,
    n_a: int | None = None,
    n_b: int | None = None,
    digits: int = 2,
    ci_digits: int = 1,
    unit: str = "%",
) -> str:
    """``+5.06% [+2.0, +8.2] (n=3+3)``; a missing interval prints as ``[n/a]``, never invented."""
    if not _ok(estimate):
        return "n/a"
    s = f"{estimate:+.{digits}f}{unit}"
    if _ok(low) and _ok(high):
        s += f" [{low:+.{ci_digits}f}, {high:+.{ci_digits}f}]"
    else:
        s += " [n/a]"
    if n_a is not None and n_b is not None:
        s += f" (n={int(n_a)}+{int(n_b)})"
    return s


def _num(x, kind: str = "tps") -> str:
    if not _ok(x):
        return "n/a"
    if kind == "lat":
        return f"{x:.2f}"
    return f"{x:.0f}" if abs(x) >= 1000 else f"{x:.1f}" if abs(x) >= 100 else f"{x:.2f}"


def _p(x) -> str:
    if not _ok(x):
        return "n/a"
    return "<0.001" if x < 0.001 else f"{x:.3f}"


def _labels(lang: str) -> dict:
    if words.check_lang(lang) == "zh":
        return {
            "workload": "测试场景",
            "threads": "压测线程",
            "lat": "95% 延迟 (ms)",
            "imp": "{m} 提升(%)",
            "imp_lat": "{m} 降低(%)",
            "p": "p 值(Holm)",
            "adj": "同时 95% 区间(Bonferroni)",
            "verdict": "结论",
            "notes": "说明",
        }
    return {
        "workload": "Workload",
        "threads": "Threads",
        "lat": "95% latency (ms)",
        "imp": "{m} improvement (%)",
        "imp_lat": "{m} reduction (%)",
        "p": "p (Holm)",
        "adj": "simultaneous 95% (Bonferroni)",
        "verdict": "Verdict",
        "notes": "Notes",
    }


def input_note(cmp_df: pd.DataFrame, lang: str = "en") -> str:
    """Which run figure the comparison used and why, and how many cells the other figure
    disagrees with by more than the interval (``input`` and ``warnings`` of
    :func:`tibenchlib.compare.compare_inputs`)."""
    _labels(lang)
    inp = str(cmp_df["input"].iloc[0]) if "input" in cmp_df and len(cmp_df) else "whole_run"
    n = sum(
        any("differ by more than the interval" in x for x in w)
        for w in cmp_df.get("warnings", [])
        if isinstance(w, list)
    )
    if lang == "zh":
        s = (
            "对比使用的是 MSER-5 预热截断之后的稳态 TPS(不含运行内的预热阶段)。"
            if inp == "steady_state"
            else "对比使用的是 sysbench 整个运行的 TPS(与公开报告一致,包含运行内的预热阶段);"
            "参数 compare.input: steady_state 可改用 MSER-5 截断后的稳态 TPS。"
        )
        return s + (f"{n} 个测试场景两种口径的差异超过区间,说明列同时给出两者。" if n else "")
    s = (
        "The comparison uses each run's steady-state TPS after the MSER-5 warm-up cut (the "
        "in-run warm-up left out)."
        if inp == "steady_state"
        else "The comparison uses sysbench's whole-run TPS, as published tables do (it includes "
        "any in-run warm-up); `compare.input: steady_state` compares the TPS after the MSER-5 "
        "warm-up cut instead."
    )
    return s + (
        f" In {n} cell(s) the two figures differ by more than the interval: the notes give both."
        if n
        else ""
    )


def report_table(cmp_df: pd.DataFrame, lang: str = "en", notes: bool = True) -> pd.DataFrame:
    """The reports' A/B table from :func:`tibenchlib.stats.compare_arms` output, as text cells.

    Columns: (workload, when there are several), threads, each arm's mean metric, each arm's
    mean p95 latency (when known), improvement % as ``+5.06% [+2.0, +8.2] (n=3+3)``, the Holm
    p-value, the verdict and (``notes=True``) the warnings joined by "; ".  Headers name the
    arms, like the reports' "v5.1.4 TPS"; ``lang`` is "en" or "zh".
    """
    L = _labels(lang)
    d = cmp_df
    metric = str(d["metric"].iloc[0]) if "metric" in d and len(d) else "tps"
    a = str(d["baseline"].iloc[0]) if "baseline" in d and len(d) else "A"
    b = str(d["candidate"].iloc[0]) if "candidate" in d and len(d) else "B"
    mname = "TPS" if metric == "tps" else metric
    lat_kind = "lat" if metric.startswith("lat") else "tps"
    out = pd.DataFrame()
    if d["workload"].nunique(dropna=False) > 1:
        out[L["workload"]] = d["workload"].fillna("").to_numpy()
    out[L["threads"]] = d["threads"].astype(int).to_numpy()
    va = d["baseline_value"] if "baseline_value" in d else d[f"baseline_{metric}"]
    vb = d["candidate_value"] if "candidate_value" in d else d[f"candidate_{metric}"]
    out[f"{a} {mname}"] = [_num(x, lat_kind) for x in va]
    out[f"{b} {mname}"] = [_num(x, lat_kind) for x in vb]
    if "baseline_lat_p95_ms" in d and metric != "lat_p95_ms":
        out[f"{a} {L['lat']}"] = [_num(x, "lat") for x in d["baseline_lat_p95_ms"]]
        out[f"{b} {L['lat']}"] = [_num(x, "lat") for x in d["candidate_lat_p95_ms"]]
    head = (L["imp_lat"] if lat_kind == "lat" else L["imp"]).format(m=mname)
    out[head] = [
        format_ci(r.improvement_pct, r.ci_low_pct, r.ci_high_pct, r.n_baseline, r.n_candidate)
        for r in d.itertuples(index=False)
    ]
    if "ci_low_adj_pct" in d and (d["family_size"] > 1).any() and d["ci_low_adj_pct"].notna().any():
        # the interval that matches the Holm-adjusted verdict, beside the per-cell one
        out[L["adj"]] = [
            format_ci(r.improvement_pct, r.ci_low_adj_pct, r.ci_high_adj_pct).split(" ", 1)[-1]
            for r in d.itertuples(index=False)
        ]
    out[L["p"]] = [_p(x) for x in d["p_adjusted"]]
    out[L["verdict"]] = [VERDICT_LABELS[lang].get(v, v) for v in d["verdict"]]
    if notes and "warnings" in d:
        out[L["notes"]] = [
            words.notes(w, lang) if isinstance(w, list) else "" for w in d["warnings"]
        ]
    return out.reset_index(drop=True)


def report_summary(cmp_or_summary: pd.DataFrame, lang: str = "en") -> pd.DataFrame:
    """Per-workload summary as text: the reports' mean improvement and the geometric mean.

    Accepts :func:`tibenchlib.stats.compare_arms` output (summarised here) or
    :func:`tibenchlib.stats.summarize_improvement` output.
    """
    s = cmp_or_summary
    if "mean_improvement_pct" not in s.columns:
        s = summarize_improvement(s)
    L = _labels(lang)
    mean_h = "各线程提升平均值(报告算法)" if lang == "zh" else "Mean of per-thread % (reports)"
    geo_h = "几何平均提升 [95% CI]" if lang == "zh" else "Geometric mean [95% CI]"
    return pd.DataFrame(
        {
            L["workload"]: s["workload"].fillna("").to_numpy(),
            mean_h: [f"{x:+.2f}%" if _ok(x) else "n/a" for x in s["mean_improvement_pct"]],
            geo_h: [
                format_ci(g, lo, hi)
                for g, lo, hi in zip(
                    s["geomean_improvement_pct"],
                    s["geo_ci_low_pct"],
                    s["geo_ci_high_pct"],
                    strict=True,
                )
            ],
            L["notes"]: [words.notes(w, lang) for w in s["warnings"]],
        }
    )


def _cell(v) -> str:
    if isinstance(v, list | tuple):
        v = "; ".join(map(str, v))
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return str(v).replace("|", "\\|").replace("\n", " ")


def to_markdown(df: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table (no tabulate dependency); lists join with "; "."""
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(_cell(c) for c in cols) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(_cell(v) for v in row) + " |")
    return "\n".join(lines) + "\n"


def export(df: pd.DataFrame, stem: str | Path) -> tuple[Path, Path]:
    """Write ``<stem>.csv`` (UTF-8 with BOM, so spreadsheet programs read Chinese labels) and
    ``<stem>.md``; list cells (warnings) are joined with "; ".  Returns both paths."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    flat = df.copy()
    for c in flat.columns:
        if flat[c].map(lambda v: isinstance(v, list | tuple)).any():
            flat[c] = flat[c].map(_cell)
    csv, md = stem.with_name(stem.name + ".csv"), stem.with_name(stem.name + ".md")
    flat.to_csv(csv, index=False, encoding="utf-8-sig")
    md.write_text(to_markdown(df), encoding="utf-8")
    return csv, md

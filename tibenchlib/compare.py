"""A/B comparison tables as the reports print them, with the intervals they leave out.

Inputs come three ways - a runs table (tibench's catalog), a summary CSV of published numbers, or
two directories of raw sysbench logs - and all become the same runs DataFrame for
:func:`tibenchlib.stats.compare_arms`.  Formatting (``+5.06% [+2.0, +8.2] (n=3+3)``), English and
Chinese labels, and CSV + Markdown export live here too; the arithmetic does not.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from .stats import compare_arms, summarize_improvement

__all__ = [
    "JSON_COLUMNS",
    "load_summary_csv",
    "runs_from_log_dirs",
    "compare_table",
    "compare_from_csv",
    "compare_log_dirs",
    "compare_arms_table",
    "format_ci",
    "report_table",
    "report_summary",
    "export",
    "to_markdown",
]

#: Row keys of ``tibench compare --json`` (issue 4 section 3), in order.
JSON_COLUMNS = [
    "workload",
    "threads",
    "n_baseline",
    "n_candidate",
    "baseline_tps",
    "candidate_tps",
    "improvement_pct",
    "ci_low_pct",
    "ci_high_pct",
    "p_value",
    "p_adjusted",
    "verdict",
]

REQUIRED = ["workload", "threads", "arm", "tps"]
OPTIONAL = ["lat_p95_ms", "repeat"]

VERDICT_LABELS = {
    "en": {
        "better": "better",
        "worse": "worse",
        "equivalent": "equivalent",
        "~": "~ (no significant difference)",
        "inconclusive": "~ (inconclusive: more runs needed)",
        "n/a": "n/a (n=1)",
    },
    "zh": {
        "better": "更好",
        "worse": "更差",
        "equivalent": "相当",
        "~": "~(无显著差异)",
        "inconclusive": "~(无定论:需要更多轮次)",
        "n/a": "n/a(单次运行)",
    },
}


# --------------------------------------------------------------------------------------------
# inputs


def load_summary_csv(path: str | Path, workload: str | None = None) -> pd.DataFrame:
    """Read published numbers: one row per run (or per cell) of a summary CSV.

    Columns ``workload, threads, arm, tps`` are required; ``lat_p95_ms`` and ``repeat`` are
    optional (without ``repeat``, rows of one workload x arm x threads are numbered in file
    order); other columns are kept.  Thousands separators in quoted numbers are accepted.

    Returns
    -------
    DataFrame
        A runs table (``workload, arm, threads, repeat, tps[, lat_p95_ms], status="ok"``)
        ready for :func:`tibenchlib.stats.compare_arms`.

    Raises
    ------
    FileNotFoundError
        When ``path`` does not exist.
    ValueError
        Naming the file and the missing column, or the row and column of a value that is not
        a number.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"summary CSV not found: {p}")
    try:
        df = pd.read_csv(p, thousands=",", skipinitialspace=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise ValueError(f"{p}: not a readable CSV ({e})") from None
    df.columns = [str(c).strip() for c in df.columns]
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise ValueError(
            f"{p}: missing column(s) {', '.join(missing)} (required: {', '.join(REQUIRED)}; "
            f"optional: {', '.join(OPTIONAL)}; found: {', '.join(df.columns)})"
        )
    if df.empty:
        raise ValueError(f"{p}: no rows")
    for col in ("threads", "tps", "lat_p95_ms", "repeat"):
        if col not in df.columns:
            continue
        num = pd.to_numeric(df[col], errors="coerce")
        bad = num.isna() & df[col].notna()
        if col in ("threads", "tps"):
            bad |= df[col].isna()
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise ValueError(
                f"{p}: column {col!r}, data row {i + 1}: {df[col].iloc[i]!r} is not a number"
            )
        df[col] = num
    df["threads"] = df["threads"].astype(int)
    df["arm"] = df["arm"].astype(str).str.strip()
    df["workload"] = pd.Series(
        [None if pd.isna(w) else str(w).strip() for w in df["workload"]], dtype=object
    )
    if "repeat" not in df.columns:
        df["repeat"] = df.groupby(["workload", "arm", "threads"], dropna=False).cumcount() + 1
    df["status"] = "ok"
    if workload is not None:
        if workload not in set(df["workload"].dropna()):
            raise ValueError(
                f"{p}: workload {workload!r} not found; present: "
                f"{sorted(map(str, df['workload'].dropna().unique()))}"
            )
        df = df[df["workload"] == workload]
    return df.reset_index(drop=True)


def _log_files(d: Path, pattern: str) -> list[Path]:
    if not d.is_dir():
        raise FileNotFoundError(f"log directory not found: {d}")
    files = sorted(f for f in d.glob(pattern) if f.is_file() and not f.name.startswith("."))
    if not files:
        raise ValueError(f"{d}: no sysbench logs (pattern {pattern!r}): empty directory")
    return files


def _summary_row(f: Path, arm: str) -> dict:
    """One log's :class:`~tibenchlib.record.RunRecord` (exit unknown), as a compare row."""
    from .parse.sysbench import parse_sysbench_file  # lazy: keeps stats importable alone
    from .sysbench.record import record_from_parsed

    try:
        parsed = parse_sysbench_file(f)
    except Exception as e:  # noqa: BLE001 - any parser failure is reported with the file name
        raise ValueError(f"{f}: cannot parse as a sysbench log ({e})") from None
    if parsed.summary.get("threads") is None:
        raise ValueError(f"{f}: no thread count in the log (is it a sysbench run log?)")
    rec, _ = record_from_parsed(
        parsed, study="", run_key=str(f), phase="compare", arm=arm, log_path=f
    )
    return {
        **{k: rec[k] for k in LOG_RUN_COLUMNS},
        "run_id": str(f),
        "file": str(parsed.summary.get("file") or f),
    }


#: The record's fields a compare over log directories keeps.
LOG_RUN_COLUMNS = [
    "workload",
    "arm",
    "threads",
    "tps",
    "lat_p95_ms",
    "lat_avg_ms",
    "qps",
    "status",
    "error",
]


def runs_from_log_dirs(
    baseline_dir: str | Path,
    candidate_dir: str | Path,
    baseline: str | None = None,
    candidate: str | None = None,
    workload: str | None = None,
    pattern: str = "*",
) -> pd.DataFrame:
    """Runs table from two directories of raw sysbench logs, one log per run.

    Each log is read with ``tibenchlib.parse.sysbench.parse_sysbench_file(path).summary`` and
    grouped by the thread count printed in it; the run figure is sysbench's own summary TPS and
    p95 is its histogram percentile (kept only when the log's percentile is 95).  Arms are named
    ``baseline``/``candidate`` or, by default, after the directories.  ``workload`` filters on
    the workload a log names, or labels logs that name none.  Logs the parser marks as not ok
    stay in the table (counted as failed by the statistics).

    Raises
    ------
    FileNotFoundError, ValueError
        Naming the directory (missing or empty) or the file (unparseable, no thread count).
    """
    bd, cd = Path(baseline_dir), Path(candidate_dir)
    if baseline is None or candidate is None:
        nb, nc = bd.resolve().name, cd.resolve().name
        if nb == nc:
            nb, nc = "baseline", "candidate"
        baseline, candidate = baseline or nb, candidate or nc
    rows = [_summary_row(f, baseline) for f in _log_files(bd, pattern)]
    rows += [_summary_row(f, candidate) for f in _log_files(cd, pattern)]
    df = pd.DataFrame(rows)
    if workload is not None:
        named = df["workload"].notna()
        if named.any():
            df = df[~named | (df["workload"] == workload)]
        df["workload"] = workload
    df = df.sort_values(["arm", "threads", "run_id"], kind="stable")
    df["repeat"] = df.groupby(["workload", "arm", "threads"], dropna=False).cumcount() + 1
    return df.reset_index(drop=True)


def runs_from_study_arm(ref: str, results_url: str | None = None) -> pd.DataFrame:
    """The sweep runs of one arm of a tibench study, from its catalog: ``STUDY/ARM``.

    The arms of two different studies can be compared this way (e.g. a study per version, the
    way report 000 tested v5.1.4, destroyed the cluster and deployed v6.0.0).
    """
    from .store import Store, default_url

    study, sep, arm = ref.partition("/")
    if not sep or not study or not arm:
        raise ValueError(f"{ref!r}: expected STUDY/ARM (or a directory of sysbench logs)")
    url = results_url or default_url(study)
    if url.startswith("sqlite:///") and not Path(url[len("sqlite:///") :]).exists():
        raise FileNotFoundError(f"{ref}: study {study!r} has no catalog at {url}")
    runs = Store(url).runs(study, phase="sweep")
    if not len(runs) or arm not in set(runs["arm"]):
        known = sorted(set(runs["arm"])) if len(runs) else []
        raise ValueError(f"{ref}: arm {arm!r} not found in study {study!r} (arms: {known})")
    return runs[runs["arm"] == arm].assign(arm=ref, run_id=lambda d: d["run_key"])


def compare_refs(
    baseline: str, candidate: str, delta_pct: float = 2.0, workload: str | None = None, **kw
) -> pd.DataFrame:
    """``tibench compare BASELINE CANDIDATE``: each side a directory of sysbench logs or a
    ``STUDY/ARM`` reference to a tibench catalog."""
    if Path(baseline).is_dir() and Path(candidate).is_dir():
        return compare_log_dirs(baseline, candidate, delta_pct, workload, **kw)
    if Path(baseline).is_dir() or Path(candidate).is_dir():
        raise ValueError("compare two log directories or two STUDY/ARM references, not a mix")
    runs = pd.concat([runs_from_study_arm(baseline), runs_from_study_arm(candidate)])
    if workload is not None:
        runs = runs[runs["workload"] == workload]
    # rounds of two studies ran at different times: they are not blocks, never pair them
    kw.setdefault("paired", False)
    return compare_arms(runs, baseline, candidate, delta=delta_pct / 100, **kw)


# --------------------------------------------------------------------------------------------
# comparisons


def compare_table(
    df: pd.DataFrame | str | Path,
    baseline: str,
    candidate: str,
    metric: str = "tps",
    delta: float = 0.02,
    level: float = 0.95,
    workload: str | None = None,
    **kw,
) -> pd.DataFrame:
    """:func:`tibenchlib.stats.compare_arms` over a runs table or a summary CSV path.

    ``delta`` is a fraction (0.02 = 2 %).  Extra keywords go to ``compare_arms``.  Raises
    ValueError naming the arm when ``baseline`` or ``candidate`` is not in the data.
    """
    if isinstance(df, str | Path):
        df = load_summary_csv(df, workload)
    elif workload is not None:
        df = df[df["workload"] == workload]
    return compare_arms(df, baseline, candidate, metric=metric, delta=delta, level=level, **kw)


def compare_from_csv(
    path: str | Path,
    baseline: str,
    candidate: str,
    delta_pct: float = 2.0,
    workload: str | None = None,
    **kw,
) -> pd.DataFrame:
    """``tibench compare --table``: a summary CSV compared, ``delta_pct`` in percent."""
    return compare_table(path, baseline, candidate, delta=delta_pct / 100, workload=workload, **kw)


def compare_log_dirs(
    baseline_dir: str | Path,
    candidate_dir: str | Path,
    delta_pct: float = 2.0,
    workload: str | None = None,
    **kw,
) -> pd.DataFrame:
    """``tibench compare BASELINE CANDIDATE``: two directories of sysbench logs compared."""
    names = {k: kw.pop(k) for k in ("baseline", "candidate", "pattern") if k in kw}
    runs = runs_from_log_dirs(baseline_dir, candidate_dir, workload=workload, **names)
    arms = list(dict.fromkeys(runs["arm"]))
    return compare_arms(runs, arms[0], arms[-1], delta=delta_pct / 100, **kw)


def compare_arms_table(runs: pd.DataFrame, study, paired: str | bool = "auto") -> pd.DataFrame:
    """Phase ``compare``: the study's arm pairs over its sweep runs, one table.

    Pairs come from ``study.compare.pairs``, else ``(compare.baseline, compare.candidate)``,
    else the first two arms in the params file.  Only runs of phase ``sweep`` count when the
    table has a ``phase`` column.  ``run_key`` is kept as ``run_id``.

    Round effects (:func:`tibenchlib.rounds.round_effects` over all the study's sweep runs) that
    are significant go into every row's ``warnings``; rounds in ``compare.exclude_rounds`` are
    left out of the statistics, and every row says so.
    """
    from .rounds import exclude_rounds, round_effects, round_notes

    if "phase" in runs.columns and (runs["phase"] == "sweep").any():
        runs = runs[runs["phase"] == "sweep"]
    if "run_id" not in runs.columns and "run_key" in runs.columns:
        runs = runs.assign(run_id=runs["run_key"])
    c = study.compare
    labels = [a.label for a in study.arms]
    pairs = list(c.pairs) or [
        (c.baseline or labels[0], c.candidate or (labels[1] if len(labels) > 1 else labels[0]))
    ]
    if any(a == b for a, b in pairs):
        raise ValueError(f"study '{study.study}' has one arm only: nothing to compare")
    notes = []
    if "repeat" in runs.columns and runs["repeat"].nunique() > 1:
        notes = round_notes(round_effects(runs, metric=c.metric))
    runs, excluded = exclude_rounds(runs, c.exclude_rounds)
    out = [
        compare_arms(runs, a, b, metric=c.metric, delta=c.delta_pct / 100, paired=paired)
        for a, b in pairs
    ]
    df = pd.concat(out, ignore_index=True)
    if notes or excluded:
        df["warnings"] = [
            list(w)
            + [
                n + (" (the paired comparison cancels it)" if m.startswith("paired") else "")
                for n in notes
            ]
            + ([excluded] if excluded else [])
            for w, m in zip(df["warnings"], df["method"], strict=True)
        ]
    return df


# --------------------------------------------------------------------------------------------
# formatting and export


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
    if lang not in VERDICT_LABELS:
        raise ValueError(f"lang must be 'en' or 'zh', not {lang!r}")
    if lang == "zh":
        return {
            "workload": "测试场景",
            "threads": "压测线程",
            "lat": "95% latency (ms)",
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
        out[L["notes"]] = ["; ".join(w) if isinstance(w, list) else "" for w in d["warnings"]]
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
            L["notes"]: ["; ".join(w) for w in s["warnings"]],
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

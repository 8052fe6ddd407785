"""A/B comparison tables as the reports print them, with the intervals they leave out.

Inputs come three ways - a runs table (tibench's catalog), a summary CSV of published numbers, or
two directories of raw sysbench logs - and all become the same runs DataFrame for
:func:`tibenchlib.stats.compare_arms`.  This module returns data; formatting for people
(``+5.06% [+2.0, +8.2] (n=3+3)``, English and Chinese labels, CSV + Markdown export) is in
:mod:`tibenchlib.report.comparison`.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from .parse.sysbench import parse_sysbench_file
from .rounds import exclude_rounds, round_effects, round_notes
from .stats import compare_arms
from .steady import steady_state_table
from .store import Store, default_url
from .sysbench.record import record_from_parsed

__all__ = [
    "JSON_COLUMNS",
    "load_summary_csv",
    "runs_from_log_dirs",
    "compare_table",
    "compare_from_csv",
    "compare_log_dirs",
    "compare_arms_table",
    "INPUTS",
    "compare_inputs",
    "with_steady_state",
]

#: What a run contributes to the A/B comparison (``compare.input``).
INPUTS = {
    "whole_run": "sysbench's whole-run TPS (warm-up included)",
    "steady_state": "steady-state TPS after the MSER-5 warm-up cut",
}

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

#: The round a log's name carries: ``..._r3.log``, ``...__r3.log``, ``...-r3.txt`` or no suffix.
ROUND_IN_NAME = re.compile(r"(?:^|[_.-])r(\d+)(?:\.[A-Za-z0-9]+)?$")
#: What ``--paired`` says beside its table.
PAIRED_NOTE = (
    "paired by the round number in the log names: this assumes both arms ran together in each "
    "round (a round's drift then cancels); logs of rounds run at different times are not pairs"
)

REQUIRED = ["workload", "threads", "arm", "tps"]
OPTIONAL = ["lat_p95_ms", "repeat"]


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
        A runs table (``workload, arm, threads, repeat, tps[, lat_p95_ms], status, error``)
        ready for :func:`tibenchlib.stats.compare_arms`; ``status`` is "ok", or "degenerate"
        for a row whose TPS is 0 or less (the sweep's check), which the statistics leave out.

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
    # the sweep's run check (a zero-throughput run is degenerate), applied here too; the
    # statistics leave such runs out wherever they come from (stats._valid_mask)
    zero = df["tps"] <= 0
    df["status"] = np.where(zero, "degenerate", "ok")
    df["error"] = np.where(zero, "zero throughput: no transaction completed", None)
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
    paired: bool = False,
) -> pd.DataFrame:
    """Runs table from two directories of raw sysbench logs, one log per run.

    Each log is read with ``tibenchlib.parse.sysbench.parse_sysbench_file(path).summary`` and
    grouped by the thread count printed in it; the run figure is sysbench's own summary TPS and
    p95 is its histogram percentile (kept only when the log's percentile is 95).  Arms are named
    ``baseline``/``candidate`` or, by default, after the directories.  ``workload`` filters on
    the workload a log names, or labels logs that name none.  Logs the parser marks as not ok
    stay in the table (counted as failed by the statistics).

    ``paired=True``: ``repeat`` is the round each log's name carries (``..._r3.log``, see
    ``ROUND_IN_NAME``), so :func:`tibenchlib.stats.compare_arms` can pair the arms within rounds;
    a name without a round, or two logs of one round in the same cell, is refused.

    Raises
    ------
    FileNotFoundError, ValueError
        Naming the directory (missing or empty) or the file (unparseable, no thread count, no
        round with ``paired``).
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
    if not paired:
        df["repeat"] = df.groupby(["workload", "arm", "threads"], dropna=False).cumcount() + 1
        return df.reset_index(drop=True)
    rounds = []
    for f in df["run_id"]:
        m = ROUND_IN_NAME.search(Path(f).name)
        if m is None:
            raise ValueError(
                f"{f}: no round number in the log's name (e.g. ..._r3.log): --paired needs one "
                "in every name"
            )
        rounds.append(int(m.group(1)))
    df["repeat"] = rounds
    twice = df.duplicated(["workload", "arm", "threads", "repeat"], keep=False)
    if twice.any():
        r = df[twice].iloc[0]
        raise ValueError(
            f"{r['run_id']}: round {r['repeat']} of {r['arm']} at {r['threads']} threads has "
            "more than one log: --paired needs one log per arm and round"
        )
    # the order within a round is not known from log names; pairing is asked for, not inferred
    df["seq"] = np.nan
    return df.reset_index(drop=True)


def runs_from_study_arm(ref: str, results_url: str | None = None) -> pd.DataFrame:
    """The sweep runs of one arm of a tibench study, from its catalog: ``STUDY/ARM``.

    The arms of two different studies can be compared this way (e.g. a study per version, the
    way report 000 tested v5.1.4, destroyed the cluster and deployed v6.0.0).
    """
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
    """``tibench compare BASELINE CANDIDATE``: two directories of sysbench logs compared;
    ``paired=True`` (``--paired``) pairs the arms by the round their log names carry and says
    in every row's warnings what that assumes (:data:`PAIRED_NOTE`)."""
    names = {k: kw.pop(k) for k in ("baseline", "candidate", "pattern") if k in kw}
    paired = bool(kw.pop("paired", False))
    runs = runs_from_log_dirs(
        baseline_dir, candidate_dir, workload=workload, paired=paired, **names
    )
    arms = list(dict.fromkeys(runs["arm"]))
    out = compare_arms(runs, arms[0], arms[-1], delta=delta_pct / 100, paired=paired, **kw)
    if paired:
        out["warnings"] = [[PAIRED_NOTE, *w] for w in out["warnings"]]
    return out


def with_steady_state(runs: pd.DataFrame, intervals: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with ``steady_tps``: each run's TPS after the MSER-5 cut of its per-second
    intervals (:func:`tibenchlib.steady.steady_state_table`, by ``run_key``); NaN for a run
    without intervals."""
    out = runs.drop(columns=["steady_tps"], errors="ignore")
    if intervals is None or not len(intervals) or "run_key" not in out.columns:
        return out.assign(steady_tps=np.nan)
    iv = intervals[intervals["run_key"].isin(set(out["run_key"]))]
    if not len(iv):
        return out.assign(steady_tps=np.nan)
    with np.errstate(all="ignore"):
        st = steady_state_table(iv, by="run_key")[["run_key", "steady_tps"]]
    return out.merge(st, on="run_key", how="left")


def compare_inputs(
    runs: pd.DataFrame,
    baseline: str,
    candidate: str,
    intervals: pd.DataFrame | None,
    input: str = "whole_run",
    **kw,
) -> pd.DataFrame:
    """:func:`tibenchlib.stats.compare_arms` on TPS with ``input`` ("whole_run" or
    "steady_state", :data:`INPUTS`) as each run's figure, the other input computed beside it.

    The steady-state figure drops the in-run warm-up MSER-5 detects; the whole-run figure is
    what sysbench prints (and what published tables hold). Columns added: ``input``, and
    ``other_input, other_improvement_pct, other_ci_low_pct, other_ci_high_pct`` when both could
    be computed. A row whose two estimates differ by more than the half-width of the used
    interval says so in ``warnings``, both figures given.
    """
    if input not in INPUTS:
        raise ValueError(f"compare.input must be one of {sorted(INPUTS)}, not {input!r}")
    runs = with_steady_state(runs, intervals)
    have = runs["steady_tps"].notna().any()
    if input == "steady_state" and not have:
        raise ValueError(
            "compare.input is steady_state but no run has per-second intervals in the catalog "
            "(sysbench ran without --report-interval?): use whole_run"
        )
    steady_runs = runs.assign(tps=runs["steady_tps"])
    used_runs, other_runs = (steady_runs, runs) if input == "steady_state" else (runs, steady_runs)
    used = compare_arms(used_runs, baseline, candidate, metric="tps", **kw)
    used["input"] = input
    if not have:
        return used
    other_name = "whole_run" if input == "steady_state" else "steady_state"
    other = compare_arms(other_runs, baseline, candidate, metric="tps", **kw)
    keys = [k for k in ("workload", "threads") if k in used.columns]
    o = other[[*keys, "improvement_pct", "ci_low_pct", "ci_high_pct"]].rename(
        columns=lambda c: c if c in keys else f"other_{c}"
    )
    used = used.merge(o, on=keys, how="left")
    used["other_input"] = other_name
    notes = []
    for r in used.itertuples(index=False):
        w = list(r.warnings)
        half = (r.ci_high_pct - r.ci_low_pct) / 2
        gap = abs(r.improvement_pct - r.other_improvement_pct)
        if np.isfinite(half) and np.isfinite(gap) and gap > half:
            used_fig = _pct_figure(r.improvement_pct, r.ci_low_pct, r.ci_high_pct)
            other_fig = _pct_figure(
                r.other_improvement_pct, r.other_ci_low_pct, r.other_ci_high_pct
            )
            w.append(
                f"{INPUTS[input]} gives {used_fig}, {INPUTS[other_name]} gives {other_fig}: "
                "they differ by more than the interval"
            )
        notes.append(w)
    used["warnings"] = notes
    return used


def _pct_figure(x: float, lo: float, hi: float) -> str:
    """The figure as "+1.23% [+0.1, +2.4]", or the estimate alone without an interval (never
    "[+nan, +nan]")."""
    if np.isfinite(lo) and np.isfinite(hi):
        return f"{x:+.2f}% [{lo:+.1f}, {hi:+.1f}]"
    return f"{x:+.2f}%"


def compare_arms_table(
    runs: pd.DataFrame,
    study,
    paired: str | bool = "auto",
    intervals: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Phase ``compare``: the study's arm pairs over its sweep runs, one table.

    Pairs come from ``study.compare.pairs``, else ``(compare.baseline, compare.candidate)``,
    else the first two arms in the params file.  Only runs of phase ``sweep`` count when the
    table has a ``phase`` column.  ``run_key`` is kept as ``run_id``.

    Round effects (:func:`tibenchlib.rounds.round_effects` over all the study's sweep runs) that
    are significant go into every row's ``warnings``; rounds in ``compare.exclude_rounds`` are
    left out of the statistics, and every row says so.

    ``compare.input`` picks the run figure for TPS (:func:`compare_inputs`): with ``intervals``
    (the catalog's per-second rows) the other input is computed too and shown where the two
    disagree by more than the interval; "steady_state" without ``intervals`` reads them from
    the study's catalog.
    """
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
    inp = getattr(c, "input", "whole_run")
    if c.metric == "tps" and (inp == "steady_state" or intervals is not None):
        if intervals is None:
            intervals = Store.for_study(study).intervals(study.study, runs["run_id"])
        out = [
            compare_inputs(runs, a, b, intervals, inp, delta=c.delta_pct / 100, paired=paired)
            for a, b in pairs
        ]
    else:
        out = [
            compare_arms(
                runs, a, b, metric=c.metric, delta=c.delta_pct / 100, paired=paired
            ).assign(input="whole_run" if c.metric == "tps" else c.metric)
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

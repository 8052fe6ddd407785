"""Parser for sysbench's output: text in, a per-run summary and two tidy tables out.

:func:`parse_sysbench` is pure (text in, :class:`SysbenchResult` out); :func:`parse_sysbench_file`
only adds reading the file. Layouts understood, each checked against sysbench's own source
(``src/sysbench.c``, ``src/db_driver.c``, ``src/lua/internal/sysbench.lua``) and against real
logs under ``tests/fixtures/sysbench/``:

- sysbench 1.0.x: ``[ 10s ] thds: 16 tps: … qps: … (r/w/o: …) lat (ms,95%): … err/s: …
  reconn/s: …`` intervals (``thds: 1 eps: … lat (ms,95%): …`` for tests without a DB
  driver), then ``SQL statistics:`` / ``General statistics:`` / ``Latency (ms):`` /
  ``Threads fairness:``, an optional ``--histogram`` block, and ``percentile stats:
  disabled`` when ``--percentile=0``;
- sysbench 1.1/master: a ``Throughput:`` block (``events/s (eps):``, ``time elapsed:``)
  in place of ``General statistics:``;
- sysbench 0.5: ``[  10s] threads: 2, tps: …, reads: …, writes: …, response time: 17.52ms
  (99%), errors: …, reconnects: …`` intervals, ``OLTP test statistics:``, ``read/write
  requests:``, ``response time:`` with ``ms`` suffixes and ``approx.  99 percentile:``;
- ``--rate`` runs: ``[ 10s ] queue length: 0, concurrency: 0`` lines, joined to the interval
  of the same timestamp;
- the report hooks sysbench ships (``sysbench.report_json`` and ``sysbench.report_csv``):
  their records become interval rows. A record printed by the *cumulative* hook has the same
  shape as an intermediate one and cannot be told apart, so it is an interval row too; such a
  log has no text summary and is reported as truncated;
- logs pasted from web pages: non-breaking and other Unicode spaces, lost indentation,
  collapsed runs of spaces and trailing ``# comment`` text after the values.

One run per text: a file holding several runs back to back yields the header of the first run,
the intervals of all of them and the statistics after the last interval line.

Latency percentiles from the histogram (:func:`histogram_percentiles`) follow sysbench's own
definition. sysbench keeps 1024 buckets spaced evenly in log(latency) between 0.001 ms and
100 s, so neighbouring buckets differ by a factor ``exp(ln(1e8) / 1023) ≈ 1.018``: any
percentile, sysbench's printed one included, is known to about ±0.9%, and two runs whose
percentiles differ by less than ~2% may sit in the same or adjacent buckets. Treat such
differences as quantisation, not as a change.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, field
from os import PathLike
from typing import Any

import numpy as np
import pandas as pd

from .files import NotALog, check_regular, log_lines

__all__ = [
    "HISTOGRAM_BUCKET_RATIO",
    "INTERVAL_COLUMNS",
    "SysbenchResult",
    "histogram_percentiles",
    "parse_sysbench",
    "parse_sysbench_file",
]

#: Ratio of neighbouring latency buckets in sysbench's histogram (1024 buckets, 1e-3..1e5 ms).
HISTOGRAM_BUCKET_RATIO = math.exp(math.log(1e5 / 1e-3) / 1023)

#: Columns of :attr:`SysbenchResult.intervals`, in order; all float64, NaN when not printed.
INTERVAL_COLUMNS = (
    "t",
    "threads",
    "tps",
    "qps",
    "reads",
    "writes",
    "other",
    "lat_ms",
    "lat_pct",
    "err_s",
    "reconn_s",
    "queue_length",
    "concurrency",
)
HISTOGRAM_COLUMNS = ("value_ms", "count")

TRUNCATED = "truncated: no summary"
WHAT = "sysbench log"

# -- patterns (compiled once) -------------------------------------------------------------------
# <F> is a number as C's printf writes it, including what a division by a zero interval gives;
# <I> an unsigned integer; <TS> the "[ 10s ] " timestamp of 1.0 and the "[  10s] " one of 0.5.
_TOKENS = {
    "<F>": r"(-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|-?nan|-?inf)",
    "<I>": r"(\d+)",
    "<TS>": r"^ *\[ *(-?\d+(?:\.\d*)?) *s *\] *",
}


def _rx(pattern: str, flags: int = re.M) -> re.Pattern:
    for token, sub in _TOKENS.items():
        pattern = pattern.replace(token, sub)
    return re.compile(pattern, flags)


# Web pages turn spaces into these; str.translate maps them all in one pass.
_SPACES = dict.fromkeys(map(ord, "\u00a0\u1680\u202f\u205f\u3000\t"), " ")
_SPACES.update(dict.fromkeys(range(0x2000, 0x200B), " "))
_SPACES.update(dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\r"), None))

_VERSION = _rx(r"^ *sysbench +v?(\d[\w.\-+]*?):?(?: |$)")
_HDR_THREADS = _rx(r"^ *Number of threads: *<I>")
_HDR_RATE = _rx(r"^ *Target transaction rate: *<F> */ *sec")
_HDR_INTERVAL = _rx(r"^ *Report intermediate results every +<I> +second")

# 1.0/1.1 with a DB driver (db_driver.c), and without one (sysbench.c: "eps", no qps/err);
# sysbench.report_default in Lua prints "err/s" without its colon.
_IV_10 = _rx(
    r"<TS>thds: *<I> +(?:tps|eps): *<F>"
    r"(?: +qps: *<F> *\(r/w/o: *<F> */ *<F> */ *<F> *\))?"
    r" +lat *\(ms, *<F> *%\): *<F>"
    r"(?: +err/s:? *<F> +reconn/s: *<F>)?"
)
_IV_05 = _rx(
    r"<TS>threads: *<I>, *tps: *<F>, *reads(?:/s)?: *<F>, *writes(?:/s)?: *<F>,"
    r" *response time: *<F> *ms *\( *<F> *%\), *errors(?:/s)?: *<F>, *reconnects(?:/s)?: *<F>"
)
_QUEUE = _rx(r"<TS>queue length: *<I>,? *concurrency: *<I>")
_JSON_REC = _rx(
    r'\{\s*"time":\s*<F>,\s*"threads":\s*<I>,\s*"tps":\s*<F>,'
    r'\s*"qps":\s*\{\s*"total":\s*<F>,\s*"reads":\s*<F>,\s*"writes":\s*<F>,\s*"other":\s*<F>\s*\},'
    r'\s*"latency":\s*<F>,\s*"errors":\s*<F>,\s*"reconnects":\s*<F>\s*\}',
    0,
)
_CSV_REC = _rx(r"^ *<I>,<I>,<F>,<F>,<F>,<F>,<F>,<F>,<F>,<F> *$")

_HIST_HDR = _rx(r"^ *Latency histogram")
_HIST_ROW = _rx(r"^ *<F> *\|[ *]*?<I> *(?:#.*)?$")

_FATAL = _rx(r"^ *FATAL: *(.*?) *$")
_SQL_BLOCK = _rx(r"^ *(SQL|OLTP test) statistics:")
_Q_READ = _rx(r"^ *read: *<I>")
_Q_WRITE = _rx(r"^ *write: *<I>")
_Q_OTHER = _rx(r"^ *other: *<I>")
_Q_TOTAL = _rx(r"^ *total: *<I>")
_QUERY_COUNTS = {"read": _Q_READ, "write": _Q_WRITE, "other": _Q_OTHER, "total": _Q_TOTAL}
_TRANSACTIONS = _rx(r"^ *transactions: *<I> *\( *<F> +per sec\. *\)")
_QUERIES = _rx(r"^ *queries: *<I> *\( *<F> +per sec\. *\)")
_RW_REQUESTS = _rx(r"^ *read/write requests: *<I> *\( *<F> +per sec\. *\)")
_OTHER_OPS = _rx(r"^ *other operations: *<I> *\( *<F> +per sec\. *\)")
_IGNORED = _rx(r"^ *ignored errors: *<I> *\( *<F> +per sec\. *\)")
_RECONNECTS = _rx(r"^ *reconnects: *<I> *\( *<F> +per sec\. *\)")
_TOTAL_TIME = _rx(r"^ *(?:total time|time elapsed): *<F> *s\b")
_EVENTS = _rx(r"^ *total number of events: *<I>")
_EPS = _rx(r"^ *(?:events/s \(eps\)|events per second): *<F>")
_GENERAL = _rx(r"^ *General statistics:")
_EXEC_TIME_05 = _rx(r"^ *total time taken by event execution: *<F> *s\b")
_THROUGHPUT = _rx(r"^ *Throughput:")
_LAT_BLOCK = _rx(r"^ *(?:Latency \(ms\)|response time):")
_LAT = {k: _rx(r"^ *" + k + r": *<F>") for k in ("min", "avg", "max", "sum")}
_LAT_PCT = _rx(r"^ *(?:<F>th|approx\. *<F>) +percentile: *<F>")
_LAT_PCT_OFF = _rx(r"^ *percentile stats: *disabled")
_FAIR_EVENTS = _rx(r"^ *events \(avg/stddev\): *<F> */ *<F>")
_FAIR_TIME = _rx(r"^ *execution time \(avg/stddev\): *<F> */ *<F>")
_UNFINISHED = _rx(r"^ *Number of unfinished transactions on forced shutdown: *<I>")

_NAN = float("nan")


@dataclass(frozen=True)
class SysbenchResult:
    """One sysbench run, parsed.

    Attributes
    ----------
    summary : dict
        JSON-serialisable per-run figures (plain ``int``/``float``/``str``/``None`` only):
        ``file``, ``status`` ("ok" or "failed"), ``error``, ``threads``, ``tps``, ``qps``,
        ``events``, ``total_time_s``, ``latency_ms`` (``min``, ``avg``, ``max``,
        ``percentile_value``, ``sum``), ``percentile``, ``errors``, ``reconnects``,
        ``intervals``, ``histogram_count``; and also ``sysbench_version``, ``layout``
        ("1.0", "1.1", "0.5" or None), ``report_hook`` ("json", "csv" or None),
        ``report_interval_s``, ``rate``, ``transactions``, ``queries`` (``read``, ``write``,
        ``other``, ``total``), ``errors_per_s``, ``reconnects_per_s``, ``fairness``
        (``events_avg``, ``events_stddev``, ``execution_time_avg``,
        ``execution_time_stddev``), ``unfinished_transactions`` and ``fatal`` (every distinct
        FATAL message, in order).
    intervals : pandas.DataFrame
        One row per interval report, columns :data:`INTERVAL_COLUMNS` (float64, NaN when the
        line does not print the figure).
    histogram : pandas.DataFrame
        ``value_ms`` (float) and ``count`` (int64), one row per printed bucket in sysbench's
        order; empty when the run had no ``--histogram``.
    """

    summary: dict
    intervals: pd.DataFrame = field(repr=False)
    histogram: pd.DataFrame = field(repr=False)


# -- helpers ------------------------------------------------------------------------------------
def _num(s: str | None) -> float | None:
    """A printed number as a plain float; None for a missing one or C's nan/inf."""
    if s is None:
        return None
    v = float(s)
    return v if math.isfinite(v) else None


def _int_or_float(v: float | None) -> int | float | None:
    if v is None:
        return None
    return int(v) if float(v).is_integer() else v


def _search_from(rx: re.Pattern, text: str, pos: int) -> re.Match | None:
    return rx.search(text, pos) if pos >= 0 else None


def normalise_text(text: str) -> str:
    """Undo what web pages do to a terminal log: Unicode spaces, tabs, CRs, zero-width marks."""
    return text.translate(_SPACES)


# -- pieces -------------------------------------------------------------------------------------
# Where each layout's groups land in INTERVAL_COLUMNS (-1: not printed by that layout).
_LAYOUTS: tuple[tuple[re.Pattern, str, str | None, tuple[int, ...]], ...] = (
    # t thr tps qps r w o lat pct err rec queue conc
    (_IV_10, "thds:", None, (0, 1, 2, 3, 4, 5, 6, 8, 7, 9, 10, -1, -1)),
    (_IV_05, "response time:", None, (0, 1, 2, -1, 3, 4, -1, 5, 6, 7, 8, -1, -1)),
    (_JSON_REC, '"time"', "json", (0, 1, 2, 3, 4, 5, 6, 7, -1, 8, 9, -1, -1)),
    (_CSV_REC, ",", "csv", (0, 1, 2, 3, 4, 5, 6, 7, -1, 8, 9, -1, -1)),
)
_LAT_COL, _PCT_COL = INTERVAL_COLUMNS.index("lat_ms"), INTERVAL_COLUMNS.index("lat_pct")


def _interval_table(text: str) -> tuple[np.ndarray, str | None, int, int]:
    """Interval rows (n x 13 floats) in file order, the report hook seen, and the span
    ``[first row start, last row end)`` of the rows in the text (``len(text), 0`` if none)."""
    blocks, starts, hook = [], [], None
    first, last = len(text), 0
    for rx, marker, kind, cols in _LAYOUTS:
        # A C-speed substring test spares a regex scan of the whole text. The CSV hook's only
        # marker is a comma, so it is tried only when no other layout matched: a hook
        # replaces sysbench's default report, so one run never prints both.
        if marker not in text or (kind == "csv" and blocks):
            continue
        groups, pos = [], []
        for m in rx.finditer(text):
            groups.append(m.groups())
            pos.append(m.start())
        if not groups:
            continue
        first, last = min(first, pos[0]), max(last, m.end())
        hook = hook or kind
        if any(None in g for g in groups):  # optional parts absent ("eps" lines)
            groups = [tuple("nan" if x is None else x for x in g) for g in groups]
        vals = np.asarray(groups, dtype=float)
        block = np.full((len(groups), len(INTERVAL_COLUMNS)), np.nan)
        idx = np.asarray(cols)
        block[:, idx >= 0] = vals[:, idx[idx >= 0]]
        blocks.append(block)
        starts.extend(pos)
    if not blocks:
        return np.empty((0, len(INTERVAL_COLUMNS))), None, len(text), 0
    rows = blocks[0] if len(blocks) == 1 else np.concatenate(blocks)
    if len(blocks) > 1:
        rows = rows[np.argsort(np.asarray(starts), kind="stable")]
    # --percentile=0 turns percentiles off; sysbench then prints 0.00, which is not a latency.
    rows[rows[:, _PCT_COL] <= 0, _LAT_COL] = np.nan
    if "queue length" in text:
        # The queue line repeats its interval's timestamp; join on it (first interval wins).
        by_t: dict[float, int] = {}
        for i, t in enumerate(rows[:, 0].tolist()):
            by_t.setdefault(t, i)
        for t, q, c in _QUEUE.findall(text):
            i = by_t.get(float(t))
            if i is not None:
                rows[i, 11], rows[i, 12] = float(q), float(c)
    return rows, hook, first, last


def _histogram(text: str) -> tuple[np.ndarray, np.ndarray, int] | None:
    """Bucket values, counts, and where the histogram ends in the text."""
    if "histogram" not in text:
        return None
    h = _HIST_HDR.search(text)
    if h is None:
        return None
    vals, counts, end = [], [], h.end()
    for m in _HIST_ROW.finditer(text, end):
        vals.append(m.group(1))
        counts.append(m.group(2))
    if vals:
        end = m.end()
    return np.asarray(vals, dtype=float), np.asarray(counts, dtype=np.int64), end


def _fatal_messages(text: str) -> list[str]:
    if "FATAL" not in text:
        return []
    return list(dict.fromkeys(_FATAL.findall(text)))  # distinct, in order


def _summary_block(text: str, pos: int) -> dict[str, Any]:
    """The end-of-run statistics at or after ``pos``, whatever the layout; None when absent."""
    s: dict[str, Any] = {}
    sql = _SQL_BLOCK.search(text, pos)
    sql_at = sql.start() if sql else -1
    s["layout"] = None
    if sql:
        s["layout"] = "0.5" if sql.group(1) == "OLTP test" else "1.0"
    q = {}
    for key, rx in _QUERY_COUNTS.items():
        m = _search_from(rx, text, sql_at)
        q[key] = int(m.group(1)) if m else None
    s["queries"] = q if any(v is not None for v in q.values()) else None

    m = _search_from(_TRANSACTIONS, text, sql_at)
    s["transactions"] = int(m.group(1)) if m else None
    s["tps"] = _num(m.group(2)) if m else None
    m = _search_from(_QUERIES, text, sql_at)
    s["qps"] = _num(m.group(2)) if m else None
    if s["qps"] is None:
        # 0.5 prints no queries line: its queries are read/write requests + other operations.
        rw, ot = _search_from(_RW_REQUESTS, text, sql_at), _search_from(_OTHER_OPS, text, sql_at)
        if rw and ot:
            s["qps"] = round(float(rw.group(2)) + float(ot.group(2)), 2)
    m = _search_from(_IGNORED, text, sql_at)
    s["errors"], s["errors_per_s"] = (int(m.group(1)), _num(m.group(2))) if m else (None, None)
    m = _search_from(_RECONNECTS, text, sql_at)
    s["reconnects"], s["reconnects_per_s"] = (
        (int(m.group(1)), _num(m.group(2))) if m else (None, None)
    )

    m = _TOTAL_TIME.search(text, pos)
    s["total_time_s"] = _num(m.group(1)) if m else None
    m = _EVENTS.search(text, pos)
    s["events"] = int(m.group(1)) if m else None
    if "Throughput:" in text and _THROUGHPUT.search(text, pos):
        s["layout"] = "1.1"
    elif s["layout"] is None and _GENERAL.search(text, pos):
        s["layout"] = "1.0"
    if s["tps"] is None:
        # Tests without a DB driver (e.g. cpu) count events, not transactions.
        m = _EPS.search(text, pos)
        s["tps"] = _num(m.group(1)) if m else None

    lat_block = _LAT_BLOCK.search(text, pos)
    lat_at = lat_block.end() if lat_block else -1
    lat: dict[str, float | None] = {}
    for key in ("min", "avg", "max"):
        m = _search_from(_LAT[key], text, lat_at)
        lat[key] = _num(m.group(1)) if m else None
    m = _search_from(_LAT_PCT, text, lat_at)
    pct = None
    if m:
        pct = _int_or_float(_num(m.group(1) or m.group(2)))
        lat["percentile_value"] = _num(m.group(3))
    else:
        lat["percentile_value"] = None
    m = _search_from(_LAT["sum"], text, lat_at)
    lat["sum"] = _num(m.group(1)) if m else None
    if lat["sum"] is None:
        m = _EXEC_TIME_05.search(text, pos)
        lat["sum"] = round(float(m.group(1)) * 1000, 4) if m else None
    s["latency_ms"] = lat
    s["percentile"] = pct
    s["percentile_disabled"] = bool(_search_from(_LAT_PCT_OFF, text, lat_at))

    fe, ft = _FAIR_EVENTS.search(text, pos), _FAIR_TIME.search(text, pos)
    s["fairness"] = (
        {
            "events_avg": _num(fe.group(1)) if fe else None,
            "events_stddev": _num(fe.group(2)) if fe else None,
            "execution_time_avg": _num(ft.group(1)) if ft else None,
            "execution_time_stddev": _num(ft.group(2)) if ft else None,
        }
        if fe or ft
        else None
    )
    m = _UNFINISHED.search(text, pos) if "unfinished" in text else None
    s["unfinished_transactions"] = int(m.group(1)) if m else None
    return s


def _summary_gaps(s: dict[str, Any]) -> list[str]:
    """What a summary lacks of the end every layout prints after its totals: the latency block
    (min, avg, max, the percentile unless turned off, sum) and the threads-fairness block. A
    log cut after ``Latency (ms):`` has its totals but not these."""
    lat = s["latency_ms"]
    gaps = [f"latency {k}" for k in ("min", "avg", "max", "sum") if lat[k] is None]
    if lat["percentile_value"] is None and not s["percentile_disabled"]:
        gaps.append("latency percentile")
    if s["fairness"] is None or None in s["fairness"].values():
        gaps.append("threads fairness")
    return gaps


# -- public -------------------------------------------------------------------------------------
def parse_sysbench(text: str, file: str | None = None) -> SysbenchResult:
    """Parse one sysbench run's output.

    Parameters
    ----------
    text : str
        Everything sysbench printed (stdout and stderr), or a copy pasted from a web page.
    file : str, optional
        Copied into ``summary["file"]``.

    Returns
    -------
    SysbenchResult
        ``summary`` (JSON-serialisable), ``intervals`` and ``histogram`` tables.

    Notes
    -----
    ``status`` is "ok" only when the end-of-run statistics are complete (events and total
    time, the latency block and the threads-fairness block) and no FATAL line was printed.
    ``error`` is the first FATAL message, else ``"truncated: no summary"`` when the statistics
    are missing, else ``"truncated: the summary ends early (no …)"`` naming what a log cut
    inside the summary lacks, else None. ``threads`` is the
    header's ``Number of threads``, else the largest thread count of the interval lines
    (``threads_running`` falls as workers finish, and a cumulative report hook prints 0:
    sysbench issue 194), else None. ``tps`` and ``qps`` are sysbench's own "per sec." figures
    (0.5: ``qps`` is read/write requests plus other operations per second); a test without a
    DB driver prints no transactions, and ``tps`` is then its events per second (1.0
    ``events per second:``, 1.1 ``events/s (eps):``), as its ``eps:`` interval lines are.
    ``percentile`` is None when ``--percentile=0`` turned percentiles off; interval ``lat_ms``
    is then NaN.
    """
    text = normalise_text(text)
    rows, hook, first, last = _interval_table(text)
    return _result(text, rows, hook, first, last, file)


def _result(
    text: str,
    rows: np.ndarray,
    hook: str | None,
    first: int,
    last: int,
    file: str | None,
    *,
    counted: tuple[int, float, float] | None = None,
) -> SysbenchResult:
    """The result from the text outside the interval lines and the interval rows; ``counted``
    (rows, largest thread count, first row's percentile) stands in for rows not kept."""
    n_rows, top_threads, first_pct = counted or (
        len(rows),
        float(rows[:, 1].max()) if len(rows) else 0.0,
        float(rows[0, _PCT_COL]) if len(rows) else math.nan,
    )
    hist = _histogram(text)
    fatal = _fatal_messages(text)
    # sysbench prints header, intervals, histogram, statistics in that order: each search
    # scans only its part of the text, which keeps a 600-interval log cheap.
    s = _summary_block(text, max(last, hist[2] if hist is not None else 0))

    m = _VERSION.search(text, 0, first)
    version = m.group(1) if m else None
    m = _HDR_THREADS.search(text, 0, first)
    threads: int | None = int(m.group(1)) if m else None
    if threads is None and n_rows:
        threads = int(top_threads) if top_threads > 0 else None
    if s["percentile"] is None and n_rows and not s["percentile_disabled"]:
        p = first_pct
        s["percentile"] = _int_or_float(p) if p > 0 else None  # NaN > 0 is False
    m = _HDR_RATE.search(text, 0, first)
    rate = _int_or_float(_num(m.group(1))) if m else None
    m = _HDR_INTERVAL.search(text, 0, first)
    interval_s = int(m.group(1)) if m else None

    complete = s["events"] is not None and s["total_time_s"] is not None
    cut = _summary_gaps(s) if complete else []
    if fatal:
        status, error = "failed", fatal[0]
    elif not complete:
        status, error = "failed", TRUNCATED
    elif cut:
        status, error = "failed", f"truncated: the summary ends early (no {', '.join(cut)})"
    else:
        status, error = "ok", None

    summary = {
        "file": file,
        "status": status,
        "error": error,
        "threads": threads,
        "tps": s["tps"],
        "qps": s["qps"],
        "events": s["events"],
        "total_time_s": s["total_time_s"],
        "latency_ms": s["latency_ms"],
        "percentile": s["percentile"],
        "errors": s["errors"],
        "reconnects": s["reconnects"],
        "intervals": n_rows,
        "histogram_count": int(hist[1].sum()) if hist is not None and len(hist[1]) else None,
        "sysbench_version": version,
        "layout": s["layout"],
        "report_hook": hook,
        "report_interval_s": interval_s,
        "rate": rate,
        "transactions": s["transactions"],
        "queries": s["queries"],
        "errors_per_s": s["errors_per_s"],
        "reconnects_per_s": s["reconnects_per_s"],
        "fairness": s["fairness"],
        "unfinished_transactions": s["unfinished_transactions"],
        "fatal": fatal,
    }
    # rows belong to this call: no copy (pandas 3 copies a 2-D array by default)
    intervals = pd.DataFrame(rows, columns=list(INTERVAL_COLUMNS), copy=False)
    if hist is not None:
        histogram = pd.DataFrame({"value_ms": hist[0], "count": hist[1]})
    else:
        histogram = pd.DataFrame(
            {"value_ms": pd.Series(dtype=float), "count": pd.Series(dtype=np.int64)}
        )
    return SysbenchResult(summary=summary, intervals=intervals, histogram=histogram)


#: Files up to this size are read whole; larger ones are streamed in chunks of lines.
STREAM_ABOVE_BYTES = 8 << 20
_CHUNK_LINES = 20_000
_KEEP_TEXT = 4 << 20  # the header kept, and the text after the last interval, at most


def parse_sysbench_file(path: str | PathLike, *, intervals: bool = True) -> SysbenchResult:
    """Read a sysbench log (undecodable bytes replaced) and :func:`parse_sysbench` it.

    A file larger than :data:`STREAM_ABOVE_BYTES` is streamed: interval lines are parsed a chunk
    at a time and only the header, the FATAL lines and the text after the last interval (the
    summary and histogram) are kept as text, so memory is bounded by the chunk size plus the
    interval table; with ``intervals=False`` the table is counted, not kept (``intervals`` is
    then empty), and memory stays bounded whatever the file's size.

    Lines are read through :func:`tibenchlib.parse.files.log_lines`: a file with a line longer
    than :data:`~tibenchlib.parse.files.MAX_LINE_BYTES` (a file without line breaks) is
    ``failed`` with error "not a sysbench log: …" as soon as that line is read. A path that is
    not a regular file (a FIFO, ``/dev/zero``) raises :class:`~tibenchlib.parse.files.NotALog`
    before it is opened.
    """
    size = check_regular(path, WHAT)
    lines = log_lines(path, WHAT)
    try:
        if size <= STREAM_ABOVE_BYTES:
            res = parse_sysbench("".join(lines), file=str(path))
            if intervals:
                return res
            return SysbenchResult(res.summary, res.intervals.iloc[:0], res.histogram)
        return _parse_stream(lines, str(path), keep=intervals)
    except NotALog as e:
        res = parse_sysbench("", file=str(path))
        return SysbenchResult({**res.summary, "error": str(e)}, res.intervals, res.histogram)


def _parse_stream(fh, file: str, *, keep: bool) -> SysbenchResult:
    head: str | None = None  # text before the first interval line
    carry = ""  # text after the last interval line so far: scanned again with the next chunk
    fatal_lines: list[str] = []
    blocks: list[np.ndarray] = []
    hook = None
    queue: list[tuple[str, str, str]] = []  # --rate queue lines, joined once all rows are in
    n, top, first_pct = 0, 0.0, math.nan
    while True:
        lines = list(itertools.islice(fh, _CHUNK_LINES))
        if not lines:
            break
        new = normalise_text("".join(lines))
        if keep and "queue length" in new:
            queue += _QUEUE.findall(new)
        chunk = carry + new
        rows, h, first, last = _interval_table(chunk)
        if not len(rows):
            carry = _bounded(chunk)
            continue
        if head is None:
            head = _bounded(chunk[:first])
        elif "FATAL" in chunk[:first]:
            fatal_lines += [x for x in chunk[:first].splitlines() if "FATAL" in x]
        if "FATAL" in chunk[first:last]:
            fatal_lines += [x for x in chunk[first:last].splitlines() if "FATAL" in x]
        carry = chunk[last:]
        hook = hook or h
        if not n:
            first_pct = float(rows[0, _PCT_COL])
        n += len(rows)
        top = max(top, float(np.nanmax(rows[:, 1])) if np.isfinite(rows[:, 1]).any() else 0.0)
        if keep:
            blocks.append(rows)
    if head is None:  # no interval line at all
        res = parse_sysbench(carry, file=file)
        return res if keep else SysbenchResult(res.summary, res.intervals.iloc[:0], res.histogram)
    after = carry
    middle = "".join(f"{x}\n" for x in dict.fromkeys(fatal_lines[:1000]))
    text = head + middle + after
    rows = np.concatenate(blocks) if blocks else np.empty((0, len(INTERVAL_COLUMNS)))
    blocks.clear()
    if queue:
        # as parse_sysbench joins them: first interval of a timestamp, last queue line wins
        by_t: dict[float, int] = {}
        for i, t in enumerate(rows[:, 0].tolist()):
            by_t.setdefault(t, i)
        for t, q, c in queue:
            i = by_t.get(float(t))
            if i is not None:
                rows[i, 11], rows[i, 12] = float(q), float(c)
    return _result(
        text, rows, hook, len(head), len(head) + len(middle), file, counted=(n, top, first_pct)
    )


def _bounded(text: str) -> str:
    """At most :data:`_KEEP_TEXT` characters: the start and the end of ``text``."""
    if len(text) <= _KEEP_TEXT:
        return text
    half = _KEEP_TEXT // 2
    return text[:half] + "\n" + text[-half:]


def histogram_percentiles(histogram_df: pd.DataFrame, percentiles=(50, 90, 95, 99, 99.9)) -> dict:
    """Latency percentiles (ms) from a sysbench latency histogram, as sysbench computes them.

    Parameters
    ----------
    histogram_df : pandas.DataFrame
        ``value_ms`` and ``count``, buckets in sysbench's (ascending) order, as in
        :attr:`SysbenchResult.histogram`.
    percentiles : sequence of float
        Percentiles in (0, 100].

    Returns
    -------
    dict
        ``{percentile: value_ms}``, with None for every percentile when the histogram is empty.

    Notes
    -----
    Estimator: sysbench's own (``sb_histogram.c``, 1.0.20 and master). With N events,
    ``n = floor(N * p / 100 + 0.5)`` and the result is the value of the first bucket at which
    the cumulative count reaches ``n``. It is therefore the representative value of a bucket,
    not an interpolation: exact to the bucket, which spans a factor
    :data:`HISTOGRAM_BUCKET_RATIO` (≈1.018, so about ±0.9% around the value). sysbench prints
    bucket values with 3 decimals and its own percentile with 2, so the two agree to about
    0.005 ms plus the bucket. Empty buckets are not printed; they never change the result
    except for a percentile so small that ``n`` is 0, where sysbench answers its range
    minimum (0.001 ms) and this function the smallest printed bucket.
    """
    values = histogram_df["value_ms"].to_numpy(dtype=float)
    counts = histogram_df["count"].to_numpy(dtype=np.int64)
    total = int(counts.sum()) if len(counts) else 0
    if total == 0:
        return {p: None for p in percentiles}
    cum = np.cumsum(counts)
    out = {}
    for p in percentiles:
        nmax = math.floor(total * p / 100 + 0.5)
        i = int(np.searchsorted(cum, nmax, side="left"))
        out[p] = float(values[min(i, len(values) - 1)])
    return out

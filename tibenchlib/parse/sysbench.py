"""Parser for sysbench's output: text in, a per-run summary and two tidy tables out.

:func:`parse_sysbench` is pure (text in, :class:`SysbenchResult` out); :func:`parse_sysbench_file`
only adds reading the file. Layouts understood, each checked against sysbench's own source
(``src/sysbench.c``, ``src/db_driver.c``, ``src/lua/internal/sysbench.lua``) and against real
logs under ``tests/fixtures/sysbench/``:

- sysbench 1.0.x: ``[ 10s ] thds: 16 tps: … qps: … (r/w/o: …) lat (ms,95%): … err/s: …
  reconn/s: …`` intervals, then ``SQL statistics:`` / ``General statistics:`` /
  ``Latency (ms):`` / ``Threads fairness:``, an optional ``--histogram`` block, and
  ``percentile stats: disabled`` when ``--percentile=0``;
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

One run per text: a file holding several runs back to back yields the first summary found and
the intervals of all of them.

Latency percentiles from the histogram (:func:`histogram_percentiles`) follow sysbench's own
definition. sysbench keeps 1024 buckets spaced evenly in log(latency) between 0.001 ms and
100 s, so neighbouring buckets differ by a factor ``exp(ln(1e8) / 1023) ≈ 1.018``: any
percentile, sysbench's printed one included, is known to about ±0.9%, and two runs whose
percentiles differ by less than ~2% may sit in the same or adjacent buckets. Treat such
differences as quantisation, not as a change.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from os import PathLike
from typing import Any

import numpy as np
import pandas as pd

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

# -- patterns (compiled once) -------------------------------------------------------------------
# A number as C's printf writes it, including what a division by a zero interval gives.
_F = r"(-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|-?nan|-?inf)"
_I = r"(\d+)"
_M = re.M

# Web pages turn spaces into these; str.translate maps them all in one pass.
_SPACES = dict.fromkeys(
    map(ord, "\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
        "\u200a\u202f\u205f\u3000\t"),
    " ",
)
_SPACES.update(dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\r"), None))

_VERSION = re.compile(r"^ *sysbench +v?(\d[\w.\-+]*?):?(?: |$)", _M)
_HDR_THREADS = re.compile(r"^ *Number of threads: *" + _I, _M)
_HDR_RATE = re.compile(r"^ *Target transaction rate: *" + _F + r" */ *sec", _M)
_HDR_INTERVAL = re.compile(r"^ *Report intermediate results every +" + _I + r" +second", _M)

_TS = r"^ *\[ *" + _F + r" *s *\] *"
_IV_10 = re.compile(
    _TS + r"thds: *" + _I + r" +(?:tps|eps): *" + _F
    + r"(?: +qps: *" + _F + r" *\(r/w/o: *" + _F + r" */ *" + _F + r" */ *" + _F + r" *\))?"
    + r" +lat *\(ms, *" + _F + r" *%\): *" + _F
    + r"(?: +err/s:? *" + _F + r" +reconn/s: *" + _F + r")?",
    _M,
)
_IV_05 = re.compile(
    _TS + r"threads: *" + _I + r", *tps: *" + _F + r", *reads(?:/s)?: *" + _F
    + r", *writes(?:/s)?: *" + _F + r", *response time: *" + _F + r" *ms *\( *" + _F
    + r" *%\), *errors(?:/s)?: *" + _F + r", *reconnects(?:/s)?: *" + _F,
    _M,
)
_QUEUE = re.compile(_TS + r"queue length: *" + _I + r",? *concurrency: *" + _I, _M)
_JSON_REC = re.compile(
    r'\{\s*"time":\s*' + _F + r',\s*"threads":\s*' + _I + r',\s*"tps":\s*' + _F
    + r',\s*"qps":\s*\{\s*"total":\s*' + _F + r',\s*"reads":\s*' + _F + r',\s*"writes":\s*'
    + _F + r',\s*"other":\s*' + _F + r'\s*\},\s*"latency":\s*' + _F + r',\s*"errors":\s*'
    + _F + r',\s*"reconnects":\s*' + _F + r"\s*\}"
)
_CSV_REC = re.compile(r"^ *" + _I + "," + _I + ("," + _F) * 8 + r" *$", _M)

_HIST_HDR = re.compile(r"^ *Latency histogram", _M)
_HIST_ROW = re.compile(r"^ *" + _F + r" *\|[ *]*?" + _I + r" *(?:#.*)?$", _M)

_FATAL = re.compile(r"^ *FATAL: *(.*?) *$", _M)
_SQL_BLOCK = re.compile(r"^ *(SQL|OLTP test) statistics:", _M)
_Q_READ = re.compile(r"^ *read: *" + _I, _M)
_Q_WRITE = re.compile(r"^ *write: *" + _I, _M)
_Q_OTHER = re.compile(r"^ *other: *" + _I, _M)
_Q_TOTAL = re.compile(r"^ *total: *" + _I, _M)
_PER_SEC = r": *" + _I + r" *\( *" + _F + r" +per sec\. *\)"
_TRANSACTIONS = re.compile(r"^ *transactions" + _PER_SEC, _M)
_QUERIES = re.compile(r"^ *queries" + _PER_SEC, _M)
_RW_REQUESTS = re.compile(r"^ *read/write requests" + _PER_SEC, _M)
_OTHER_OPS = re.compile(r"^ *other operations" + _PER_SEC, _M)
_IGNORED = re.compile(r"^ *ignored errors" + _PER_SEC, _M)
_RECONNECTS = re.compile(r"^ *reconnects" + _PER_SEC, _M)
_TOTAL_TIME = re.compile(r"^ *(?:total time|time elapsed): *" + _F + r" *s\b", _M)
_EVENTS = re.compile(r"^ *total number of events: *" + _I, _M)
_EPS = re.compile(r"^ *events/s \(eps\): *" + _F, _M)
_EXEC_TIME_05 = re.compile(r"^ *total time taken by event execution: *" + _F + r" *s\b", _M)
_THROUGHPUT = re.compile(r"^ *Throughput:", _M)
_LAT_BLOCK = re.compile(r"^ *(?:Latency \(ms\)|response time):", _M)
_LAT = {k: re.compile(r"^ *" + k + r": *" + _F, _M) for k in ("min", "avg", "max", "sum")}
_LAT_PCT = re.compile(r"^ *(?:" + _F + r"th|approx\. *" + _F + r") +percentile: *" + _F, _M)
_LAT_PCT_OFF = re.compile(r"^ *percentile stats: *disabled", _M)
_FAIR_EVENTS = re.compile(r"^ *events \(avg/stddev\): *" + _F + r" */ *" + _F, _M)
_FAIR_TIME = re.compile(r"^ *execution time \(avg/stddev\): *" + _F + r" */ *" + _F, _M)
_UNFINISHED = re.compile(r"^ *Number of unfinished transactions on forced shutdown: *" + _I, _M)

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
def _interval_rows(text: str) -> tuple[list[list[float]], str | None]:
    """Interval rows in file order (all layouts), and the report hook seen, if any."""
    rows: list[tuple[int, list[float]]] = []
    f = float
    for m in _IV_10.finditer(text):
        g = m.groups()
        pct = f(g[7])
        rows.append((m.start(), [
            f(g[0]), f(g[1]), f(g[2]),
            f(g[3]) if g[3] is not None else _NAN,
            f(g[4]) if g[4] is not None else _NAN,
            f(g[5]) if g[5] is not None else _NAN,
            f(g[6]) if g[6] is not None else _NAN,
            # --percentile=0 turns percentiles off; sysbench then prints 0.00, not a latency.
            f(g[8]) if pct > 0 else _NAN,
            pct,
            f(g[9]) if g[9] is not None else _NAN,
            f(g[10]) if g[10] is not None else _NAN,
            _NAN, _NAN,
        ]))
    for m in _IV_05.finditer(text):
        t, thr, tps, rd, wr, lat, pct, err, rec = map(f, m.groups())
        rows.append((m.start(), [t, thr, tps, _NAN, rd, wr, _NAN,
                                 lat if pct > 0 else _NAN, pct, err, rec, _NAN, _NAN]))
    hook = None
    for m in _JSON_REC.finditer(text):
        t, thr, tps, qps, rd, wr, oth, lat, err, rec = map(f, m.groups())
        rows.append((m.start(), [t, thr, tps, qps, rd, wr, oth, lat, _NAN, err, rec, _NAN, _NAN]))
        hook = "json"
    for m in _CSV_REC.finditer(text):
        t, thr, tps, qps, rd, wr, oth, lat, err, rec = map(f, m.groups())
        rows.append((m.start(), [t, thr, tps, qps, rd, wr, oth, lat, _NAN, err, rec, _NAN, _NAN]))
        hook = hook or "csv"
    rows.sort(key=lambda r: r[0])  # file order across layouts; linear on sorted input
    out = [r for _, r in rows]
    queue = _QUEUE.findall(text)
    if queue and out:
        # The queue line repeats its interval's timestamp; join on it.
        by_t: dict[float, list[float]] = {}
        for r in out:
            by_t.setdefault(r[0], r)
        for t, q, c in queue:
            r = by_t.get(f(t))
            if r is not None:
                r[11], r[12] = f(q), f(c)
    return out, hook


def _histogram(text: str) -> tuple[np.ndarray, np.ndarray] | None:
    h = _HIST_HDR.search(text)
    if h is None:
        return None
    vals, counts = [], []
    for m in _HIST_ROW.finditer(text, h.end()):
        vals.append(float(m.group(1)))
        counts.append(int(m.group(2)))
    return np.asarray(vals, dtype=float), np.asarray(counts, dtype=np.int64)


def _fatal_messages(text: str) -> list[str]:
    seen: dict[str, None] = {}
    for msg in _FATAL.findall(text):
        seen.setdefault(msg, None)
    return list(seen)


def _summary_block(text: str) -> dict[str, Any]:
    """The end-of-run statistics, whatever the layout; empty values when absent."""
    s: dict[str, Any] = {}
    sql = _SQL_BLOCK.search(text)
    sql_at = sql.start() if sql else -1
    s["layout"] = None
    if sql:
        s["layout"] = "0.5" if sql.group(1) == "OLTP test" else "1.0"
    q = {}
    for key, rx in (("read", _Q_READ), ("write", _Q_WRITE), ("other", _Q_OTHER),
                    ("total", _Q_TOTAL)):
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

    m = _TOTAL_TIME.search(text)
    s["total_time_s"] = _num(m.group(1)) if m else None
    m = _EVENTS.search(text)
    s["events"] = int(m.group(1)) if m else None
    if _THROUGHPUT.search(text):
        s["layout"] = "1.1"
        if s["tps"] is None:
            m = _EPS.search(text)
            s["tps"] = _num(m.group(1)) if m else None

    lat_block = _LAT_BLOCK.search(text)
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
        m = _EXEC_TIME_05.search(text)
        lat["sum"] = round(float(m.group(1)) * 1000, 4) if m else None
    s["latency_ms"] = lat
    s["percentile"] = pct
    s["percentile_disabled"] = bool(_search_from(_LAT_PCT_OFF, text, lat_at))

    fe, ft = _FAIR_EVENTS.search(text), _FAIR_TIME.search(text)
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
    m = _UNFINISHED.search(text)
    s["unfinished_transactions"] = int(m.group(1)) if m else None
    return s


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
    ``status`` is "ok" only when the end-of-run statistics (events and total time) are present
    and no FATAL line was printed. ``error`` is the first FATAL message, else
    ``"truncated: no summary"`` when the statistics are missing, else None. ``threads`` is the
    header's ``Number of threads``, else the largest thread count of the interval lines
    (``threads_running`` falls as workers finish, and a cumulative report hook prints 0:
    sysbench issue 194), else None. ``tps`` and ``qps`` are sysbench's own "per sec." figures
    (1.1 without ``transactions:``: ``events/s (eps)``; 0.5: read/write requests plus other
    operations per second). ``percentile`` is None when ``--percentile=0`` turned percentiles
    off; interval ``lat_ms`` is then NaN.
    """
    text = normalise_text(text)
    rows, hook = _interval_rows(text)
    hist = _histogram(text)
    fatal = _fatal_messages(text)
    s = _summary_block(text)

    m = _VERSION.search(text)
    version = m.group(1) if m else None
    m = _HDR_THREADS.search(text)
    threads: int | None = int(m.group(1)) if m else None
    if threads is None and rows:
        top = max(r[1] for r in rows)
        threads = int(top) if top > 0 else None
    if s["percentile"] is None and rows and not s["percentile_disabled"]:
        p = rows[0][8]
        s["percentile"] = _int_or_float(p) if p == p and p > 0 else None
    m = _HDR_RATE.search(text)
    rate = _int_or_float(_num(m.group(1))) if m else None
    m = _HDR_INTERVAL.search(text)
    interval_s = int(m.group(1)) if m else None

    complete = s["events"] is not None and s["total_time_s"] is not None
    if fatal:
        status, error = "failed", fatal[0]
    elif not complete:
        status, error = "failed", TRUNCATED
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
        "intervals": len(rows),
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
    if rows:
        intervals = pd.DataFrame(np.asarray(rows, dtype=float), columns=list(INTERVAL_COLUMNS))
    else:
        intervals = pd.DataFrame({c: pd.Series(dtype=float) for c in INTERVAL_COLUMNS})
    if hist is not None:
        histogram = pd.DataFrame({"value_ms": hist[0], "count": hist[1]})
    else:
        histogram = pd.DataFrame(
            {"value_ms": pd.Series(dtype=float), "count": pd.Series(dtype=np.int64)}
        )
    return SysbenchResult(summary=summary, intervals=intervals, histogram=histogram)


def parse_sysbench_file(path: str | PathLike) -> SysbenchResult:
    """Read a sysbench log (undecodable bytes replaced) and :func:`parse_sysbench` it."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    return parse_sysbench(text, file=str(path))


def histogram_percentiles(
    histogram_df: pd.DataFrame, percentiles=(50, 90, 95, 99, 99.9)
) -> dict:
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

"""YCSB's HdrHistogram log files: read them, merge several clients bucket by bucket, read
percentiles the way YCSB does.

With ``measurementtype=hdrhistogram`` (YCSB's default) and ``-p hdrhistogram.fileoutput=true
-p hdrhistogram.output.path=<prefix>``, the Java YCSB writes one HdrHistogram log per operation,
``<prefix><OPERATION>.hdr``: interval histograms of latencies in microseconds, compressed, one
line per status interval. Summing a file's intervals gives the operation's histogram for the
run; adding several clients' histograms of one operation gives the histogram one client would
have recorded for all their calls (the buckets are the same: 3 significant digits, the layout
fixed by the value). A percentile read from that merged histogram is the percentile of the union
of the clients' calls, exact to the bucket (≤ 0.1% of the value) — not the average of the
clients' percentiles, which is not a percentile of anything.

Decoding is the ``hdrhistogram`` package's (``hdrh``); the percentile rule is YCSB's (HdrHistogram
Java's ``getValueAtPercentile``: the smallest bucket whose cumulative count reaches
``ceil(p/100 × n)``, reported as the bucket's highest equivalent value), so one client's merged
figure is the figure YCSB printed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

__all__ = [
    "ALL",
    "HdrError",
    "latency_figures",
    "merge",
    "merged_latency",
    "new_histogram",
    "percentile",
    "read_client",
    "read_log",
]

#: Largest latency a histogram holds: one hour in microseconds (YCSB records microseconds).
HIGHEST_US = 3_600_000_000
SIGNIFICANT_DIGITS = 3
#: The pseudo-operation of every operation together (YCSB's CLEANUP, thread shutdown, left out).
ALL = "ALL"
#: Operations that are no database call.
NOT_CALLS = frozenset({"CLEANUP"})
#: Suffixes of YCSB's (``-FAILED``) and go-ycsb's (``_ERROR``) measurements of failed calls.
FAILED_SUFFIXES = ("-FAILED", "_ERROR")


def is_call(op: str) -> bool:
    """Whether ``op`` counts completed calls: not CLEANUP, not a measurement of failed calls
    (those are counted as errors)."""
    return op not in NOT_CALLS and not op.endswith(FAILED_SUFFIXES)


class HdrError(ValueError):
    """An HdrHistogram log that cannot be read; the message names the file."""


def new_histogram() -> HdrHistogram:
    """An empty histogram with YCSB's layout (1 µs … 1 h, 3 significant digits)."""
    return HdrHistogram(1, HIGHEST_US, SIGNIFICANT_DIGITS)


def read_log(path: str | Path) -> HdrHistogram:
    """One ``.hdr`` log file: every interval histogram in it added into one.

    Raises
    ------
    HdrError
        The file is missing, is not an HdrHistogram log, or holds a corrupt interval line.
    """
    p = Path(path)
    if not p.is_file():
        raise HdrError(f"{p}: no such HdrHistogram log")
    text = p.read_text(errors="replace")
    if "Histogram log format" not in text and "HISTFAA" not in text:
        raise HdrError(f"{p}: not an HdrHistogram log (no format header, no histogram line)")
    total = new_histogram()
    reader = HistogramLogReader(str(p), new_histogram())
    try:
        while True:
            h = reader.get_next_interval_histogram()
            if h is None:
                break
            total.add(h)
    except Exception as e:  # hdrh raises bare ValueError/zlib errors on a damaged line
        raise HdrError(f"{p}: corrupt interval histogram: {e}") from None
    finally:
        reader.close()
    return total


def read_client(prefix: str | Path) -> dict[str, HdrHistogram]:
    """One client's histograms: operation → histogram, from the files ``<prefix><OP>.hdr``
    (``prefix`` YCSB's ``hdrhistogram.output.path``; a folder: its ``<OP>.hdr`` files)."""
    if Path(prefix).is_dir():
        d, stem = Path(prefix), ""
    else:
        d, stem = Path(prefix).parent, Path(prefix).name
    out = {}
    for f in sorted(d.glob(f"{stem}*.hdr")):
        op = f.name[len(stem) : -len(".hdr")]
        if op:
            out[op] = read_log(f)
    return out


def merge(histograms: Iterable[HdrHistogram]) -> HdrHistogram:
    """Histograms added bucket by bucket (counts summed; min, max and total follow)."""
    out = new_histogram()
    for h in histograms:
        out.add(h)
    return out


def percentile(h: HdrHistogram, p: float) -> float | None:
    """YCSB's percentile (µs) of a histogram: the highest value equivalent to the first bucket
    whose cumulative count reaches ``ceil(p/100 × n)`` (at least 1). None when empty."""
    n = h.get_total_count()
    if n == 0:
        return None
    target = max(1, math.ceil(min(max(p, 0.0), 100.0) / 100.0 * n))
    seen = 0
    for item in h.get_recorded_iterator():
        seen += item.count_added_in_this_iter_step
        if seen >= target:
            return float(h.get_highest_equivalent_value(item.value_iterated_to))
    return float(h.get_max_value())


def latency_figures(h: HdrHistogram) -> dict:
    """``count`` and ``avg``, ``min``, ``max``, ``p95``, ``p99`` in milliseconds (None when
    empty). The mean is HdrHistogram's (each bucket at its median equivalent value), as YCSB's."""
    n = h.get_total_count()
    if n == 0:
        return {"count": 0, "avg": None, "min": None, "max": None, "p95": None, "p99": None}
    return {
        "count": int(n),
        "avg": round(h.get_mean_value() / 1e3, 6),
        "min": h.get_min_value() / 1e3,
        "max": h.get_max_value() / 1e3,
        "p95": percentile(h, 95) / 1e3,
        "p99": percentile(h, 99) / 1e3,
    }


def merged_latency(clients: Sequence[Mapping[str, HdrHistogram]]) -> dict[str, dict]:
    """Several clients' histograms (each operation → histogram) merged per operation, plus
    :data:`ALL`: every completed call of every client (CLEANUP and failed calls left out, as
    YCSB leaves failed calls out of each operation's own figures).

    Returns operation → :func:`latency_figures`.
    """
    ops = sorted({op for c in clients for op in c})
    merged = {op: merge(c[op] for c in clients if op in c) for op in ops}
    out = {op: latency_figures(h) for op, h in merged.items()}
    calls = [h for op, h in merged.items() if is_call(op)]
    if calls:
        out[ALL] = latency_figures(merge(calls))
    return out

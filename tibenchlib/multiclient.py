"""Several clients in one run: their figures combined into the run's figures.

A run may drive a database from several client processes at once (one per tidb-server, or the
same server several times). Each client prints its own per-second series, its own latency
histogram and its own summary. What the run reports is the database's view of all of them:

- throughput: the clients' interval rates aligned on wall-clock time and summed
  (:func:`align_series`, :func:`sum_series`); a second in which not every client reported is
  kept but flagged, never silently summed short;
- latency percentiles: the histograms merged bucket by bucket (:func:`merge_histograms`) and
  the percentile read from the merged histogram (:func:`merged_percentiles`). A percentile of
  all clients' events is *not* the mean of the clients' percentiles: one slow client with 10%
  of the events moves the merged p95 a lot and the mean of p95s much less, or the other way;
- counts and means: :func:`merge_summaries` adds events, errors and reconnects, and weights
  the mean latency by events.

Pure functions: parsed tables in (``tibenchlib.parse.sysbench``), tables and dicts out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from .parse.sysbench import SysbenchResult, histogram_percentiles

__all__ = [
    "align_series",
    "merge_histograms",
    "merge_parsed",
    "merge_summaries",
    "merged_percentiles",
    "sum_series",
    "summed_intervals",
]


def _named(items: Sequence | Mapping) -> list[tuple[str, object]]:
    if isinstance(items, Mapping):
        return [(str(k), v) for k, v in items.items()]
    return [(f"client{i}", v) for i, v in enumerate(items)]


def align_series(
    intervals: Sequence[pd.DataFrame] | Mapping[str, pd.DataFrame],
    started: Sequence[float] | Mapping[str, float],
    *,
    column: str = "tps",
    period_s: float | None = None,
) -> pd.DataFrame:
    """The clients' interval series on one wall-clock grid, long form.

    Parameters
    ----------
    intervals
        Each client's interval table (``t`` = seconds since that client started, as in
        :attr:`SysbenchResult.intervals`), as a list or a mapping client name → table.
    started
        Each client's start as epoch seconds (``run.Outcome.started``), same order or keys.
    column
        The rate to align (``tps``, ``qps``, ``err_s``…).
    period_s
        The reporting period; default: the smallest step between a client's consecutive ``t``.

    Returns
    -------
    DataFrame
        ``slot`` (int: interval number on the common grid, 0 = the first interval ending
        after the earliest start), ``wall_s`` (end of the slot, epoch seconds), ``client``,
        ``value``. An interval lands in the slot whose end is nearest its own end
        (``started + t``); clients started within half a period of each other share slots.
        Two intervals of one client in one slot (a client started half a period off) are
        averaged: they are rates over equally long intervals.
    """
    named = _named(intervals)
    starts = dict(_named(started))
    missing = [n for n, _ in named if n not in starts]
    if missing:
        raise ValueError(f"started: no start time for client(s) {', '.join(missing)}")
    if period_s is None:
        steps = [np.diff(np.sort(df["t"].to_numpy(float))) for _, df in named if len(df) > 1]
        steps = [s[s > 0] for s in steps if (s > 0).any()]
        period_s = float(min(s.min() for s in steps)) if steps else 1.0
    if not period_s > 0:
        raise ValueError(f"period_s must be positive, got {period_s}")
    origin = min(float(starts[n]) for n, _ in named) if named else 0.0
    frames = []
    for name, df in named:
        if column not in df.columns:
            raise ValueError(f"client {name}: no column {column!r} in its interval table")
        end = float(starts[name]) + df["t"].to_numpy(float)
        slot = np.rint((end - origin) / period_s).astype(np.int64) - 1
        frames.append(pd.DataFrame({"slot": slot, "client": name, "value": df[column].to_numpy()}))
    cols = ["slot", "wall_s", "client", "value"]
    if not frames:
        return pd.DataFrame(columns=cols)
    out = pd.concat(frames, ignore_index=True).groupby(["slot", "client"], as_index=False).mean()
    out["wall_s"] = origin + (out["slot"] + 1) * period_s
    return out[cols].sort_values(["slot", "client"], ignore_index=True)


def sum_series(aligned: pd.DataFrame, clients: int | None = None) -> pd.DataFrame:
    """Per slot: ``wall_s``, ``total`` (sum over the clients), ``clients`` (how many reported)
    and ``complete`` (all ``clients`` did; default: every client seen in ``aligned``).

    The run's throughput is the mean of ``total`` over complete slots: a slot where a client
    had not started yet, or had already stopped, undercounts the load.
    """
    n = aligned["client"].nunique() if clients is None else clients
    g = aligned.groupby("slot")
    out = pd.DataFrame(
        {"wall_s": g["wall_s"].first(), "total": g["value"].sum(), "clients": g["client"].nunique()}
    )
    out["complete"] = out["clients"] == n
    return out.reset_index()


def merge_histograms(histograms: Sequence[pd.DataFrame] | Mapping[str, pd.DataFrame]):
    """Several sysbench ``--histogram`` tables merged into one: counts added bucket by bucket.

    Parameters
    ----------
    histograms
        ``value_ms`` and ``count`` tables (:attr:`SysbenchResult.histogram`).

    Returns
    -------
    DataFrame
        ``value_ms`` ascending and ``count`` (int64), one row per bucket any client printed.

    Notes
    -----
    Exact, not an approximation: every sysbench process uses the same 1024 fixed buckets
    (``tibenchlib.parse.sysbench.HISTOGRAM_BUCKET_RATIO``) and prints a bucket's value with the
    same three decimals, so the merged table is the histogram one process would have printed
    for all the events. Below about 0.06 ms two neighbouring buckets print the same value
    (sysbench 1.0.20 prints ``0.053`` twice); they become one row, which changes no percentile:
    a percentile is a printed value.
    """
    frames = [df[["value_ms", "count"]] for _, df in _named(histograms) if len(df)]
    if not frames:
        return pd.DataFrame({"value_ms": pd.Series(dtype=float), "count": pd.Series(dtype="int64")})
    allrows = pd.concat(frames, ignore_index=True)
    allrows["value_ms"] = allrows["value_ms"].astype(float).round(3)
    out = allrows.groupby("value_ms", as_index=False)["count"].sum()
    out["count"] = out["count"].astype("int64")
    return out.sort_values("value_ms", ignore_index=True)


def merged_percentiles(
    histograms: Sequence[pd.DataFrame] | Mapping[str, pd.DataFrame],
    percentiles: Sequence[float] = (50, 90, 95, 99, 99.9),
) -> dict:
    """Latency percentiles (ms) of all clients' events together.

    Estimator: sysbench's own percentile (:func:`~tibenchlib.parse.sysbench.histogram_percentiles`)
    on the bucket-by-bucket merged histogram, so exact to one bucket (≈ ±0.9%) for the pooled
    events. None for every percentile when no client printed a histogram.
    """
    return histogram_percentiles(merge_histograms(histograms), percentiles)


def merge_summaries(summaries: Sequence[Mapping]) -> dict:
    """Several clients' run summaries (``SysbenchResult.summary``) as one run's summary.

    ``status`` is ``ok`` only if every client's is (a client that failed fails the run; its
    ``error`` is the first failed client's, prefixed with its position); ``threads``,
    ``tps``, ``qps``, ``events``, ``transactions``, ``errors`` and ``reconnects`` are sums
    (the clients ran at the same time; for throughput over the exact common window prefer
    :func:`sum_series`); ``total_time_s`` the longest; ``latency_ms``: ``min`` the smallest,
    ``max`` the largest, ``sum`` the sum and ``avg`` = sum / events (the event-weighted mean,
    not the mean of the clients' means). Percentiles are not merged here: they need the
    histograms (:func:`merged_percentiles`).
    """
    if not summaries:
        raise ValueError("merge_summaries: no client summaries")

    def total(key):
        vals = [s.get(key) for s in summaries]
        return None if any(v is None for v in vals) else sum(vals)

    def lat(key):
        return [(s.get("latency_ms") or {}).get(key) for s in summaries]

    failed = [(i, s) for i, s in enumerate(summaries) if s.get("status") != "ok"]
    events = total("events")
    lat_sum = lat("sum")
    lat_total = None if any(v is None for v in lat_sum) else float(sum(lat_sum))
    mins = [v for v in lat("min") if v is not None]
    maxs = [v for v in lat("max") if v is not None]
    times = [s.get("total_time_s") for s in summaries if s.get("total_time_s") is not None]
    avg = lat_total / events if lat_total is not None and events else None
    return {
        "status": "failed" if failed else "ok",
        "error": f"client {failed[0][0]}: {failed[0][1].get('error')}" if failed else None,
        "clients": len(summaries),
        "threads": total("threads"),
        "tps": total("tps"),
        "qps": total("qps"),
        "events": events,
        "transactions": total("transactions"),
        "errors": total("errors"),
        "reconnects": total("reconnects"),
        "total_time_s": max(times) if times else None,
        "latency_ms": {
            "min": min(mins) if mins else None,
            "avg": None if avg is None or not math.isfinite(avg) else avg,
            "max": max(maxs) if maxs else None,
            "sum": lat_total,
        },
    }


def summed_intervals(parsed: Sequence, started: Sequence[float]) -> pd.DataFrame:
    """The run's per-interval rows (``parse.sysbench`` results in, ``started`` = each client's
    start, epoch seconds): one client's as sysbench printed them; several clients' aligned on
    wall-clock time and summed (throughput, errors, reconnects, threads), only the slots every
    client reported (empty when a client printed no intervals)."""
    ivs = [p.intervals for p in parsed]
    if len(ivs) == 1:
        return ivs[0] if ivs[0] is not None else pd.DataFrame()
    if any(iv is None or not len(iv) for iv in ivs):
        return pd.DataFrame()
    out = None
    for col in ("tps", "qps", "err_s", "reconn_s", "threads"):
        a = align_series(ivs, started, column=col)
        g = a.groupby("slot")
        s = pd.DataFrame({col: g["value"].sum(), "n": g["client"].nunique()})
        out = s if out is None else out.join(s[[col]])
    period = float(np.diff(ivs[0]["t"]).min()) if len(ivs[0]) > 1 else 1.0
    out = out[out["n"] == len(ivs)].drop(columns="n").reset_index()
    out["t"] = (out["slot"] + 1) * period
    return out.drop(columns="slot")


def merge_parsed(each: Sequence, started: Sequence[float], logs: Sequence) -> SysbenchResult:
    """Several clients' parsed logs (``parse.sysbench`` results, one per client, ``started`` =
    each one's start, epoch seconds) as one run's result: summaries merged
    (:func:`merge_summaries`, with the first client's workload, percentile, interval and
    version, every client's fatal lines, logs and TPS), intervals aligned and summed
    (:func:`summed_intervals`), histograms merged (:func:`merge_histograms`)."""
    summary = merge_summaries([p.summary for p in each])
    first = each[0].summary
    for key in ("workload", "percentile", "report_interval_s", "sysbench_version"):
        if key in first:
            summary[key] = first[key]
    summary["fatal"] = [f for p in each for f in (p.summary.get("fatal") or [])]
    summary["client_logs"] = [str(p) for p in logs]
    summary["client_tps"] = [p.summary.get("tps") for p in each]
    return SysbenchResult(
        summary=summary,
        intervals=summed_intervals(each, list(started)),
        histogram=merge_histograms([p.histogram for p in each if p.histogram is not None]),
    )

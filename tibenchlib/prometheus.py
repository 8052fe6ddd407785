"""CPU and memory of a TiDB cluster's processes from its Prometheus, over one run's window.

The queries use the metric names and job selectors of the Grafana dashboards that ship with
TiDB, TiKV, PD and TiFlash (the panels ``CPU Usage``/``CPU`` and ``Memory Usage``/``Memory``; the
expressions are kept in ``tests/fixtures/prometheus/`` with their sources). Grafana's template
variables are dropped: ``k8s_cluster``/``tidb_cluster`` are empty on a TiUP deployment and
``$instance`` means all instances; ``[$__rate_interval]`` becomes ``rate_window``.

HTTP goes through :mod:`tibenchlib.httpclient` (TLS and authentication from the study's
``prometheus_http``). A bad URL or an empty answer is a warning in the result, never an
exception: the run's own results are kept whatever Prometheus says.
"""

from __future__ import annotations

import json
import math
import numbers
from datetime import datetime

import pandas as pd

from .httpclient import Access, HttpClient, HttpError, shown_url

__all__ = [
    "CLUSTER_QUERIES",
    "HOST_CPU_QUERY",
    "PrometheusError",
    "collect_run_metrics",
    "parse_query_range",
    "query_range",
]

# (component, metric) → PromQL; "$window" is the rate window. Sources (see SOURCES.md):
# tidb: pingcap/tidb pkg/metrics/grafana/tidb_summary.json, row Server;
# tikv: tikv/tikv metrics/grafana/tikv_details.json, row Cluster, panels CPU and Memory;
# pd: tikv/pd metrics/grafana/pd.json, row Cluster (its panel uses irate(...[30s]); a rate over
#     the same window as the others keeps the components comparable);
# tiflash: pingcap/tiflash metrics/grafana/tiflash_summary.json, row Server (CPU and RSS come
#     from the TiFlash proxy's process metrics).
CLUSTER_QUERIES: dict[tuple[str, str], str] = {
    ("tidb", "cpu_cores"): 'rate(process_cpu_seconds_total{job="tidb"}[$window])',
    ("tidb", "rss_bytes"): 'process_resident_memory_bytes{job="tidb"}',
    ("tikv", "cpu_cores"): (
        'sum(rate(process_cpu_seconds_total{job=~".*tikv"}[$window])) by (instance)'
    ),
    ("tikv", "rss_bytes"): 'sum(process_resident_memory_bytes{job=~".*tikv"}) by (instance)',
    ("pd", "cpu_cores"): (
        'rate(process_cpu_seconds_total{job=~".*(pd|tso|scheduling|router|resource-manager).*"}'
        "[$window])"
    ),
    ("pd", "rss_bytes"): (
        'process_resident_memory_bytes{job=~".*(pd|tso|scheduling|router|resource-manager).*"}'
    ),
    ("tiflash", "cpu_cores"): (
        'rate(tiflash_proxy_process_cpu_seconds_total{job=~".*tiflash"}[$window])'
    ),
    ("tiflash", "rss_bytes"): 'tiflash_proxy_process_resident_memory_bytes{job=~".*tiflash"}',
}

# Host CPU busy % per machine from node_exporter (deployed on every TiUP host): 100 minus the
# idle share averaged over the host's CPUs.
HOST_CPU_QUERY = (
    '100 * (1 - avg by (instance) (rate(node_cpu_seconds_total{mode="idle"}[$window])))'
)

# Prometheus refuses range queries of more than 11,000 points per series.
_MAX_POINTS = 11_000

METRIC_COLUMNS = ["component", "metric", "instance", "job", "t", "value"]


class PrometheusError(RuntimeError):
    """Prometheus could not be reached, or refused or failed the query."""


def _epoch(x: float | datetime | pd.Timestamp | str) -> float:
    if isinstance(x, numbers.Real):
        return float(x)
    return pd.Timestamp(x).timestamp()


def parse_query_range(payload: dict | str | bytes) -> pd.DataFrame:
    """Turn a ``/api/v1/query_range`` answer into a long table.

    Returns
    -------
    DataFrame
        One row per point: ``t`` (unix seconds, float), ``value`` (float; ``NaN``/``±Inf`` as
        Prometheus wrote them) and one column per label, ``__name__`` renamed ``metric_name``.

    Raises
    ------
    PrometheusError
        When the answer is an error or not a matrix.
    """
    if isinstance(payload, str | bytes):
        try:
            payload = json.loads(payload)
        except ValueError as e:
            raise PrometheusError(f"answer is not JSON: {e}") from None
    if not isinstance(payload, dict) or payload.get("status") != "success":
        err = payload.get("error") if isinstance(payload, dict) else None
        kind = payload.get("errorType") if isinstance(payload, dict) else None
        raise PrometheusError(f"query failed: {kind or 'error'}: {err or payload!r}")
    data = payload.get("data") or {}
    if data.get("resultType") != "matrix":
        raise PrometheusError(f"expected a matrix, got {data.get('resultType')!r}")
    rows = []
    for series in data.get("result") or []:
        labels = dict(series.get("metric") or {})
        if "__name__" in labels:
            labels["metric_name"] = labels.pop("__name__")
        for ts, val in series.get("values") or []:
            rows.append({**labels, "t": float(ts), "value": float(val)})
    df = pd.DataFrame(rows)
    if df.empty:
        return pd.DataFrame(columns=["t", "value"])
    first = ["t", "value"]
    return df[first + [c for c in df.columns if c not in first]]


def query_range(
    base_url: str,
    promql: str,
    start: float | datetime | pd.Timestamp,
    end: float | datetime | pd.Timestamp,
    step: float,
    timeout: float = 10.0,
    access: Access | None = None,
) -> pd.DataFrame:
    """Run a PromQL range query.

    Parameters
    ----------
    base_url
        Prometheus' address, e.g. ``http://10.0.1.10:9090`` (a path prefix is kept).
    promql
        The expression.
    start, end
        The window, as unix seconds, datetimes or timestamps.
    step
        Seconds between points.
    timeout
        Seconds to wait for the answer.
    access
        TLS and authentication (the study's ``prometheus_http``), or ``None``.

    Returns
    -------
    DataFrame
        See :func:`parse_query_range`.

    Raises
    ------
    PrometheusError
        When Prometheus cannot be reached or answers with an error (its message included).
    """
    s, e = _epoch(start), _epoch(end)
    if step <= 0:
        raise PrometheusError("step must be positive")
    if (e - s) / step > _MAX_POINTS:
        raise PrometheusError(
            f"{(e - s) / step:.0f} points per series exceed Prometheus' {_MAX_POINTS}: "
            "use a larger step"
        )
    client = HttpClient(base_url, access, timeout)
    form = {"query": promql, "start": f"{s:.3f}", "end": f"{e:.3f}", "step": f"{step:g}"}
    try:
        # Form-encoded POST: the dashboards' long selectors stay clear of URL length limits.
        raw = client.request(
            "POST", "/api/v1/query_range", data=form, headers={"Accept": "application/json"}
        ).content
    except HttpError as err:
        if err.unreachable:
            raise PrometheusError(str(err)) from None
        try:
            return parse_query_range(err.body)
        except PrometheusError as pe:
            url = shown_url(client.url("/api/v1/query_range"))
            raise PrometheusError(f"{url}: HTTP {err.status}: {pe}") from None
    return parse_query_range(raw)


def collect_run_metrics(
    base_url: str | None,
    start: float | datetime | pd.Timestamp,
    end: float | datetime | pd.Timestamp,
    step: float = 15.0,
    rate_window: str = "1m",
    components: tuple[str, ...] = ("tidb", "tikv", "pd", "tiflash"),
    host_cpu: bool = True,
    timeout: float = 10.0,
    access: Access | None = None,
) -> tuple[pd.DataFrame, list[str]]:
    """Process CPU and memory of each cluster component over one run's window.

    Parameters
    ----------
    base_url
        Prometheus' address; ``None`` or empty skips collection with a warning.
    start, end
        The run's window.
    step
        Seconds between points (TiUP's Prometheus scrapes every 15 s by default, so finer steps
        repeat values). Enlarged when the window would exceed Prometheus' point limit.
    rate_window
        Range of the ``rate()`` windows, e.g. ``"1m"`` (the TiDB dashboard's) or ``"30s"``.
    components
        Which of ``tidb``, ``tikv``, ``pd``, ``tiflash`` to query.
    host_cpu
        Also query host CPU busy % from node_exporter.
    access
        TLS and authentication (the study's ``prometheus_http``), or ``None``.

    Returns
    -------
    (DataFrame, list of str)
        Rows ``component``, ``metric`` (``cpu_cores``: cores busy, 1 = one core;
        ``rss_bytes``; ``host_cpu_pct``: % of the host), ``instance``, ``job``, ``t``,
        ``value``; and warnings for an unreachable Prometheus, failed queries, or components
        with no series in the window.
    """
    empty = pd.DataFrame(columns=METRIC_COLUMNS)
    if not base_url:
        return empty, ["no Prometheus URL given: cluster CPU and memory not collected"]
    s, e = _epoch(start), _epoch(end)
    if e <= s:
        return empty, [f"empty window {s}–{e}: cluster metrics not collected"]
    step = max(step, math.ceil((e - s) / (_MAX_POINTS - 1)))
    jobs = [((c, m), q) for (c, m), q in CLUSTER_QUERIES.items() if c in components]
    if host_cpu:
        jobs.append((("host", "host_cpu_pct"), HOST_CPU_QUERY))
    frames, warnings = [], []
    for (component, metric), template in jobs:
        promql = template.replace("$window", rate_window)
        try:
            df = query_range(base_url, promql, s, e, step, timeout, access)
        except PrometheusError as err:
            if str(err).startswith(("cannot reach", "cannot use")):
                warnings.append(f"Prometheus unreachable, cluster metrics skipped: {err}")
                return empty, warnings
            warnings.append(f"{component} {metric}: {err}")
            continue
        if df.empty:
            warnings.append(
                f"{component} {metric}: no series in the window from {base_url} ({promql})"
            )
            continue
        df = df.assign(component=component, metric=metric)
        for col in ("instance", "job"):
            if col not in df.columns:
                df[col] = None
        frames.append(df[METRIC_COLUMNS])
    if not frames:
        return empty, warnings
    out = pd.concat(frames, ignore_index=True)
    return out, warnings

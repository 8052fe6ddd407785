"""TiDB's side of a real DM run: the target's QPS and query latency while DM loads or syncs.

With ``study.prometheus_url`` set, the TiDB dashboard's own expressions (panel *QPS*:
``tidb_server_query_total``; panel *Duration* 99: ``tidb_server_handle_query_duration_seconds``)
are read over the run's window and averaged over its points. Without it, the mean statement
latency of the migrated schema comes from TiDB's statements summary
(``information_schema.cluster_statements_summary``, else ``statements_summary``); servers without
either (MySQL, MariaDB) get a clear "not available" note and empty columns.
"""

from __future__ import annotations

import sqlalchemy as sa

from .. import prometheus
from ..db import ConnInfo
from ..httpclient import Access

__all__ = [
    "COLUMNS",
    "TIDB_QUERIES",
    "from_prometheus",
    "from_statements_summary",
    "statements_summary_sql",
    "tidb_measures",
]

#: PromQL of the TiDB dashboard's QPS and 99th-percentile duration panels.
TIDB_QUERIES: dict[str, str] = {
    "tidb_qps": 'sum(rate(tidb_server_query_total{job="tidb"}[$window]))',
    "tidb_p99_ms": (
        "1000 * histogram_quantile(0.99, sum(rate("
        'tidb_server_handle_query_duration_seconds_bucket{job="tidb"}[$window])) by (le))'
    ),
}

#: ``dm_runs`` columns this module fills.
COLUMNS = ("tidb_qps", "tidb_p99_ms", "tidb_latency_mean_ms", "tidb_measure_source", "tidb_note")

_SUMMARY_TABLES = ("CLUSTER_STATEMENTS_SUMMARY", "STATEMENTS_SUMMARY")


def _empty(note: str, source: str | None = None) -> dict:
    out = dict.fromkeys(COLUMNS)
    out.update(tidb_measure_source=source, tidb_note=note)
    return out


def from_prometheus(
    base_url: str,
    start: float,
    end: float,
    step: float = 15.0,
    rate_window: str = "1m",
    access: Access | None = None,
) -> dict:
    """Mean over the window of the dashboard's QPS and p99 (ms); notes say what is missing."""
    out, notes = _empty(None, "prometheus"), []
    for col, template in TIDB_QUERIES.items():
        promql = template.replace("$window", rate_window)
        try:
            df = prometheus.query_range(base_url, promql, start, end, max(step, 1.0), access=access)
        except prometheus.PrometheusError as e:
            notes.append(f"{col}: {e}")
            continue
        v = df["value"].dropna() if "value" in df else df
        if len(v) == 0:
            notes.append(f"{col}: no series in the window ({promql})")
            continue
        out[col] = float(v.mean())
    out["tidb_note"] = "; ".join(notes) or None
    return out


def statements_summary_sql(table: str) -> str:
    """Mean statement latency (ms) of one schema over the summary windows touching the run."""
    if table.upper() not in _SUMMARY_TABLES:
        raise ValueError(f"statements summary table must be one of {_SUMMARY_TABLES}: {table!r}")
    return (
        "SELECT SUM(SUM_LATENCY) / NULLIF(SUM(EXEC_COUNT), 0) / 1e6 AS mean_ms, "
        "SUM(EXEC_COUNT) AS n "
        f"FROM information_schema.{table.upper()} "
        "WHERE SCHEMA_NAME = :db AND SUMMARY_END_TIME >= FROM_UNIXTIME(:start) "
        "AND SUMMARY_BEGIN_TIME <= FROM_UNIXTIME(:end)"
    )


def _summary_table(c) -> str | None:
    have = {
        r[0].upper()
        for r in c.execute(
            sa.text(
                "SELECT TABLE_NAME FROM information_schema.TABLES "
                "WHERE TABLE_SCHEMA = 'information_schema' AND UPPER(TABLE_NAME) IN "
                "('CLUSTER_STATEMENTS_SUMMARY', 'STATEMENTS_SUMMARY')"
            )
        )
    }
    return next((t for t in _SUMMARY_TABLES if t in have), None)


def from_statements_summary(conn: ConnInfo, database: str, start: float, end: float) -> dict:
    """Mean statement latency of ``database`` from TiDB's statements summary, or a note."""
    eng = conn.engine()
    try:
        with eng.connect() as c:
            table = _summary_table(c)
            if table is None:
                return _empty(
                    "statements summary not available on this server "
                    "(information_schema.statements_summary is TiDB's): TiDB QPS and latency "
                    "not measured; set study.prometheus_url for them"
                )
            r = c.execute(
                sa.text(statements_summary_sql(table)),
                {"db": database, "start": start, "end": end},
            ).one()
    finally:
        eng.dispose()
    out = _empty(None, f"information_schema.{table.lower()}")
    if r.mean_ms is None:
        out["tidb_note"] = f"no statements on schema {database} in {table.lower()} for the run"
    else:
        out["tidb_latency_mean_ms"] = float(r.mean_ms)
    return out


def tidb_measures(
    prometheus_url: str | None,
    target: ConnInfo,
    database: str,
    start: float,
    end: float,
    access: Access | None = None,
) -> dict:
    """The run's TiDB measures; never raises for a missing source (the note says why).
    ``access``: TLS and authentication for Prometheus (the study's ``prometheus_http``)."""
    if prometheus_url:
        return from_prometheus(prometheus_url, start, end, access=access)
    try:
        return from_statements_summary(target, database, start, end)
    except sa.exc.DBAPIError as e:
        return _empty(f"statements summary unreadable: {' '.join(str(e.orig).split())}")

"""TiDB's QPS and latency during a real DM run: the dashboard's PromQL against a real
Prometheus, the statements-summary fallback, and its "not available" path on MariaDB."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
import sqlalchemy as sa
from helpers import free_port

from tibenchlib.dm.tidb_load import (
    COLUMNS,
    TIDB_QUERIES,
    from_prometheus,
    from_statements_summary,
    statements_summary_sql,
    tidb_measures,
)
from tibenchlib.prometheus import query_range
from tibenchlib.store import Store

PROM = shutil.which("prometheus")


def test_queries_are_the_tidb_dashboards():
    assert "tidb_server_query_total" in TIDB_QUERIES["tidb_qps"]
    p99 = TIDB_QUERIES["tidb_p99_ms"]
    assert "histogram_quantile(0.99," in p99
    assert "tidb_server_handle_query_duration_seconds_bucket" in p99
    assert "by (le)" in p99 and p99.startswith("1000 *")


def test_statements_summary_sql_names_the_table_and_rejects_others():
    sql = statements_summary_sql("cluster_statements_summary")
    assert "information_schema.CLUSTER_STATEMENTS_SUMMARY" in sql
    assert "SCHEMA_NAME = :db" in sql and "FROM_UNIXTIME(:start)" in sql
    with pytest.raises(ValueError, match="statements summary table"):
        statements_summary_sql("users; DROP TABLE x")


def test_unreachable_prometheus_is_a_note_not_an_exception():
    out = from_prometheus(f"http://127.0.0.1:{free_port()}", time.time() - 60, time.time())
    assert out["tidb_qps"] is None and out["tidb_p99_ms"] is None
    assert "tidb_qps: cannot reach" in out["tidb_note"]
    assert set(out) == set(COLUMNS)


def test_old_catalog_gains_the_tidb_columns(tmp_path):
    path = tmp_path / "catalog.sqlite"
    eng = sa.create_engine(f"sqlite:///{path}")
    with eng.begin() as c:
        c.exec_driver_sql("CREATE TABLE dm_runs (study VARCHAR, run_key VARCHAR, rows FLOAT)")
    eng.dispose()
    Store(f"sqlite:///{path}")
    cols = {
        c["name"] for c in sa.inspect(sa.create_engine(f"sqlite:///{path}")).get_columns("dm_runs")
    }
    assert set(COLUMNS) <= cols


@pytest.mark.slow
def test_statements_summary_absent_on_mariadb(mariadb):
    t = time.time()
    out = from_statements_summary(mariadb.conninfo(), "sbtest", t - 60, t)
    assert out["tidb_latency_mean_ms"] is None and out["tidb_measure_source"] is None
    assert "statements summary not available" in out["tidb_note"]
    assert tidb_measures(None, mariadb.conninfo(), "sbtest", t - 60, t) == out


@pytest.fixture(scope="module")
def prom_as_tidb(tmp_path_factory):
    """A real Prometheus scraping itself, its HTTP request counter and duration histogram
    renamed to TiDB's, so the dashboard's exact PromQL runs on a real histogram."""
    if not PROM:
        pytest.skip("prometheus not installed (apt-get install prometheus)")
    d: Path = tmp_path_factory.mktemp("prometheus-tidb")
    port = free_port()
    (d / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\n"
        "scrape_configs:\n  - job_name: tidb\n    static_configs:\n"
        f"      - targets: ['127.0.0.1:{port}']\n"
        "    metric_relabel_configs:\n"
        "      - source_labels: [__name__]\n"
        "        regex: prometheus_http_requests_total\n"
        "        target_label: __name__\n        replacement: tidb_server_query_total\n"
        "      - source_labels: [__name__]\n"
        "        regex: prometheus_http_request_duration_seconds_bucket\n"
        "        target_label: __name__\n"
        "        replacement: tidb_server_handle_query_duration_seconds_bucket\n"
        "  - job_name: original\n    static_configs:\n"
        f"      - targets: ['127.0.0.1:{port}']\n"
    )
    log = open(d / "log.txt", "w")  # noqa: SIM115 - closed at teardown
    pr = subprocess.Popen(
        [PROM, f"--config.file={d / 'prometheus.yml'}", f"--storage.tsdb.path={d / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
        stdout=log, stderr=log,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.2)
        start = time.time()
        while time.time() < start + 8:  # requests for the counter and histogram to count
            with urllib.request.urlopen(f"{url}/api/v1/status/buildinfo", timeout=2) as r:
                json.load(r)
            time.sleep(0.05)
        yield url, start, time.time()
    finally:
        pr.terminate()
        try:
            pr.wait(10)
        except subprocess.TimeoutExpired:
            pr.kill()
        log.close()


@pytest.mark.slow
def test_dashboard_promql_on_a_real_prometheus(prom_as_tidb):
    url, start, end = prom_as_tidb
    out = from_prometheus(url, start, end, step=1, rate_window="5s")
    assert out["tidb_measure_source"] == "prometheus"
    assert out["tidb_note"] is None, out["tidb_note"]
    assert out["tidb_qps"] > 1  # ~20 requests/s made by the fixture
    # the quantile of the same histogram scraped under its own name (a second job, so the
    # scrapes differ by a fraction of a second), averaged the same way
    ref = query_range(
        url,
        "1000 * histogram_quantile(0.99, sum(rate("
        'prometheus_http_request_duration_seconds_bucket{job="original"}[5s])) by (le))',
        start, end, 1,
    )  # fmt: skip
    assert out["tidb_p99_ms"] == pytest.approx(ref["value"].dropna().mean(), rel=0.1)
    assert 0 < out["tidb_p99_ms"] < 10_000

"""Prometheus range queries: the docs' answer format, the dashboards' PromQL, and a real server.

The live tests start Debian's ``prometheus`` and ``prometheus-node-exporter`` on free
127.0.0.1 ports with a temporary config scraping node_exporter every second, run a known CPU
load, and compare host CPU from Prometheus with psutil's over the same window.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest
from helpers import free_port

from tibenchlib import prometheus
from tibenchlib.prometheus import (
    CLUSTER_QUERIES,
    PrometheusError,
    collect_run_metrics,
    parse_query_range,
    query_range,
)

FIX = Path(__file__).parent / "fixtures" / "prometheus"
PROM = shutil.which("prometheus")
NODE_EXPORTER = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
BUSY = "import time\nt = time.monotonic() + 60\nwhile time.monotonic() < t: pass\n"


def test_parse_docs_example_golden():
    df = parse_query_range((FIX / "prometheus-api-v1-query-range-docs-example.json").read_text())
    assert len(df) == 6
    assert set(df["job"]) == {"prometheus", "node"}
    assert (df["metric_name"] == "up").all()
    node = df[df["job"] == "node"]
    assert node["t"].tolist() == [1435781430.781, 1435781445.781, 1435781460.781]
    assert node["value"].tolist() == [0.0, 0.0, 1.0]
    assert df[df["job"] == "prometheus"]["instance"].iloc[0] == "localhost:9090"


def test_parse_errors_and_special_values():
    with pytest.raises(PrometheusError, match="bad_data"):
        parse_query_range({"status": "error", "errorType": "bad_data", "error": "parse error"})
    with pytest.raises(PrometheusError, match="matrix"):
        parse_query_range({"status": "success", "data": {"resultType": "vector", "result": []}})
    with pytest.raises(PrometheusError, match="not JSON"):
        parse_query_range("<html>")
    payload = {
        "status": "success",
        "data": {"resultType": "matrix", "result": [{"metric": {}, "values": [[1, "NaN"]]}]},
    }
    assert str(parse_query_range(payload)["value"].iloc[0]) == "nan"
    empty = {"status": "success", "data": {"resultType": "matrix", "result": []}}
    assert parse_query_range(empty).empty


def test_queries_use_the_dashboards_metric_names_and_selectors():
    """Every metric name and job selector we query appears in that component's dashboard."""
    panels = json.loads(
        (FIX / "grafana-cpu-memory-panel-exprs-tidb-tikv-pd-tiflash.json").read_text()
    )
    for (component, _metric), promql in CLUSTER_QUERIES.items():
        exprs = " ".join(p["expr"] for p in panels if p["component"] == component)
        name = re.match(r"(?:\w+\()*([a-z_]+)\{", promql).group(1)
        selector = re.search(r"\{(job=[^}]*)\}", promql).group(1)
        assert name in exprs, (component, name)
        assert selector in exprs.replace(" ", ""), (component, selector)


def test_bad_url_is_a_warning_not_an_exception():
    now = time.time()
    df, warnings = collect_run_metrics("http://127.0.0.1:1", now - 60, now, timeout=2)
    assert df.empty and len(warnings) == 1 and "unreachable" in warnings[0]
    df, warnings = collect_run_metrics("not a url", now - 60, now)
    assert df.empty and "unreachable" in warnings[0]
    df, warnings = collect_run_metrics(None, now - 60, now)
    assert df.empty and "no Prometheus URL" in warnings[0]
    with pytest.raises(PrometheusError, match="cannot reach"):
        query_range("http://127.0.0.1:1", "up", now - 60, now, 15, timeout=2)
    with pytest.raises(PrometheusError, match="exceed"):
        query_range("http://127.0.0.1:1", "up", now - 86400 * 30, now, 1)


# --- a real Prometheus ---------------------------------------------------------------------


def _wait_http(url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(url)


@pytest.fixture(scope="module")
def prom_url(tmp_path_factory):
    if not PROM or not NODE_EXPORTER:
        pytest.skip(
            "prometheus / prometheus-node-exporter not installed "
            "(apt-get install prometheus prometheus-node-exporter)"
        )
    d = tmp_path_factory.mktemp("prometheus")
    ne_port, prom_port = free_port(), free_port()
    log = open(d / "log.txt", "w")  # noqa: SIM115 - closed at teardown
    ne = subprocess.Popen(
        [
            NODE_EXPORTER,
            f"--web.listen-address=127.0.0.1:{ne_port}",
            "--collector.disable-defaults",
            "--collector.cpu",
            "--collector.meminfo",
        ],
        stdout=log,
        stderr=log,
    )
    cfg = d / "prometheus.yml"
    cfg.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: node\n    static_configs:\n"
        f"      - targets: ['127.0.0.1:{ne_port}']\n"
        # node_exporter's own process metrics under the job name tidb-server's have, so the
        # dashboard queries for TiDB run end to end against a process psutil can watch.
        "  - job_name: tidb\n    static_configs:\n"
        f"      - targets: ['127.0.0.1:{ne_port}']\n"
    )
    pr = subprocess.Popen(
        [
            PROM,
            f"--config.file={cfg}",
            f"--storage.tsdb.path={d / 'data'}",
            f"--web.listen-address=127.0.0.1:{prom_port}",
            "--log.level=warn",
        ],
        stdout=log,
        stderr=log,
    )
    url = f"http://127.0.0.1:{prom_port}"
    try:
        _wait_http(f"{url}/-/ready", 60)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            now = time.time()
            up = query_range(url, 'up{job="node"}', now - 5, now, 1)
            if not up.empty and up["value"].iloc[-1] == 1:
                break
            time.sleep(0.5)
        else:
            raise TimeoutError("node_exporter never scraped")
        yield url, ne.pid
    finally:
        for p in (pr, ne):
            p.terminate()
        for p in (pr, ne):
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        log.close()


@pytest.mark.slow
def test_host_cpu_from_prometheus_matches_psutil(prom_url):
    url, ne_pid = prom_url
    ne = psutil.Process(ne_pid)
    busy = subprocess.Popen([sys.executable, "-c", BUSY])
    try:
        time.sleep(3)  # the load is steady before the window opens
        psutil.cpu_percent(None)
        ne_cpu0 = sum(ne.cpu_times()[:2])
        a = time.time()
        time.sleep(10)
        b = time.time()
        ps = psutil.cpu_percent(None)
        ne_cores = (sum(ne.cpu_times()[:2]) - ne_cpu0) / (b - a)
        ne_rss = ne.memory_info().rss
        time.sleep(2)  # the last scrape inside the window has landed
    finally:
        busy.kill()
        busy.wait()
    df, warnings = collect_run_metrics(url, a, b, step=1, rate_window="3s")
    host = df[df["metric"] == "host_cpu_pct"]
    assert len(host) >= 8, warnings
    prom_mean = host["value"].mean()
    # One busy core out of the host's: at least that share shows in both.
    floor = 100 / psutil.cpu_count() * 0.8
    assert ps >= floor and prom_mean >= floor
    print(f"host CPU over {b - a:.1f} s: Prometheus {prom_mean:.1f}%, psutil {ps:.1f}%")
    assert abs(prom_mean - ps) <= 10, (prom_mean, ps)
    # The TiDB dashboard queries read the process scraped as job "tidb" (node_exporter here).
    tidb = df[df["component"] == "tidb"]
    cores = tidb[tidb["metric"] == "cpu_cores"]["value"].mean()
    rss = tidb[tidb["metric"] == "rss_bytes"]["value"].iloc[-1]
    print(
        f"node_exporter: Prometheus {cores:.4f} cores, psutil {ne_cores:.4f}; "
        f"RSS {rss:.0f} vs {ne_rss}"
    )
    assert abs(cores - ne_cores) < 0.05
    assert abs(rss / ne_rss - 1) < 0.10
    # No TiKV, PD or TiFlash here: each is an empty answer, reported as a warning.
    for comp in ("tikv", "pd", "tiflash"):
        assert any(w.startswith(f"{comp} cpu_cores: no series") for w in warnings)
    assert not any(w.startswith("tidb") for w in warnings)


@pytest.mark.slow
def test_real_server_errors_are_clear(prom_url):
    prom_url, _ = prom_url
    now = time.time()
    with pytest.raises(PrometheusError, match="HTTP 400.*bad_data"):
        query_range(prom_url, "rate(up[", now - 10, now, 1)
    ok = query_range(prom_url, 'node_memory_MemTotal_bytes{job="node"}', now - 5, now, 1)
    assert ok["value"].iloc[-1] == psutil.virtual_memory().total
    assert prometheus.parse_query_range  # the same parser served both

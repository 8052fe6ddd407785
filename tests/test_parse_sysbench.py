"""Golden tests of the sysbench parser on real logs (tests/fixtures/sysbench, see SOURCES.md).

Every expected value below was typed from the log's own text, not from the parser's output.
Interval rows are written in INTERVAL_COLUMNS order (t, threads, tps, qps, reads, writes,
other, lat_ms, lat_pct, err_s, reconn_s[, queue_length, concurrency]); None stands for NaN.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tibenchlib.parse.sysbench import (
    HISTOGRAM_BUCKET_RATIO,
    INTERVAL_COLUMNS,
    histogram_percentiles,
    parse_sysbench,
    parse_sysbench_file,
)

FIX = Path(__file__).parent / "fixtures" / "sysbench"
LONG_LOG = "mariadb/point_select-t2-ri1-600s-hist.txt.gz"
TRUNC = "truncated: no summary"
N = None


def lat(mn, avg, mx, pct, total):
    return {"min": mn, "avg": avg, "max": mx, "percentile_value": pct, "sum": total}


# file -> summary subset, interval count, first and last interval rows, histogram
# (rows, first (value, count), last (value, count)). Kept as a compact table, unformatted.
# fmt: off
GOLDEN: dict[str, dict] = {
    "mariadb/point_select-t2-ri1-hist.txt": {
        "summary": dict(status="ok", error=N, threads=2, tps=12607.91, qps=12607.91,
                        events=37866, total_time_s=3.0030,
                        latency_ms=lat(0.05, 0.16, 12.19, 0.21, 5977.18), percentile=95,
                        errors=0, reconnects=0, intervals=3, histogram_count=37866,
                        sysbench_version="1.0.20", layout="1.0", report_interval_s=1,
                        transactions=37866,
                        queries=dict(read=37866, write=0, other=0, total=37866),
                        fairness=dict(events_avg=18933.0, events_stddev=2757.00,
                                      execution_time_avg=2.9886, execution_time_stddev=0.00)),
        "first": (1, 2, 11802.99, 11802.99, 11802.99, 0, 0, 0.25, 95, 0, 0, N, N),
        "last": (3, 2, 12950.55, 12950.55, 12950.55, 0, 0, 0.16, 95, 0, 0, N, N),
        "hist": (279, (0.053, 2), (12.301, 1)),
    },
    "mariadb/read_only-t2-ri1.txt": {
        "summary": dict(status="ok", error=N, threads=2, tps=830.59, qps=13289.48, events=2497,
                        total_time_s=3.0059, latency_ms=lat(1.06, 2.40, 8.08, 4.18, 5998.59),
                        percentile=95, errors=0, reconnects=0, intervals=3, histogram_count=N,
                        queries=dict(read=34958, write=0, other=4994, total=39952)),
        "first": (1, 2, 864.27, 13851.32, 12120.78, 0, 1730.54, 4.18, 95, 0, 0),
        "last": (3, 2, 841.05, 13470.87, 11788.76, 0, 1682.11, 4.10, 95, 0, 0),
        "hist": None,
    },
    "mariadb/point_select-t2-ri1-table-locked.txt": {  # stalled on LOCK TABLES: 0 TPS
        "summary": dict(status="ok", error=N, threads=2, tps=0.29, qps=0.29, events=2,
                        total_time_s=6.9978,
                        latency_ms=lat(6995.83, 6996.30, 6996.77, 6960.17, 13992.61),
                        percentile=95, errors=0, reconnects=0, intervals=6, histogram_count=N,
                        transactions=2, queries=dict(read=2, write=0, other=0, total=2)),
        "first": (1, 2, 0.0, 0.0, 0.0, 0, 0.0, 0.0, 95, 0, 0),
        "last": (6, 2, 0.0, 0.0, 0.0, 0, 0.0, 0.0, 95, 0, 0),
        "hist": None,
    },
    "mariadb/write_only-t2-ri1-hist.txt": {
        "summary": dict(status="ok", error=N, threads=2, tps=1059.42, qps=6356.53, events=3183,
                        total_time_s=3.0040, latency_ms=lat(0.54, 1.88, 17.07, 7.30, 5993.34),
                        percentile=95, errors=0, reconnects=0, intervals=3,
                        histogram_count=3183,
                        queries=dict(read=0, write=12732, other=6366, total=19098)),
        "first": (1, 2, 1559.73, 9368.40, 0, 6246.93, 3121.47, 2.30, 95, 0, 0),
        "last": (3, 2, 662.99, 3977.96, 0, 2651.97, 1325.99, 8.58, 95, 0, 0),
        "hist": (179, (0.536, 1), (17.010, 1)),
    },
    "mariadb/read_write-t4-ri1-p99-hist.txt": {
        "summary": dict(status="ok", error=N, threads=4, tps=435.54, qps=8710.83, events=1311,
                        total_time_s=3.0097, latency_ms=lat(2.00, 9.16, 43.41, 26.68, 12004.41),
                        percentile=99, errors=0, reconnects=0, intervals=3,
                        histogram_count=1311,
                        queries=dict(read=18354, write=5244, other=2622, total=26220),
                        fairness=dict(events_avg=327.75, events_stddev=14.92,
                                      execution_time_avg=3.0011, execution_time_stddev=0.00)),
        "first": (1, 4, 411.56, 8272.09, 5794.76, 1650.22, 827.11, 31.37, 99, 0, 0),
        "last": (3, 4, 439.90, 8779.10, 6140.67, 1759.62, 878.81, 26.20, 99, 0, 0),
        "hist": (141, (1.996, 2), (43.385, 1)),
    },
    "mariadb/update_index-t2-ri2-hist.txt": {
        "summary": dict(status="ok", error=N, threads=2, tps=2983.49, qps=2983.49, events=11954,
                        total_time_s=4.0063, latency_ms=lat(0.22, 0.67, 15.75, 0.86, 7985.58),
                        percentile=95, errors=0, reconnects=0, intervals=2,
                        histogram_count=11954, report_interval_s=2),
        "first": (2, 2, 2645.46, 2645.46, 0, 2645.46, 0, 1.25, 95, 0, 0),
        "last": (4, 2, 3329.88, 3329.88, 0, 3329.88, 0, 0.78, 95, 0, 0),
        "hist": (220, (0.218, 2), (15.828, 1)),
    },
    "mariadb/update_non_index-t2-nori.txt": {
        "summary": dict(status="ok", error=N, threads=2, tps=3231.86, qps=3231.86, events=9749,
                        total_time_s=3.0158, latency_ms=lat(0.20, 0.62, 18.18, 0.73, 6015.11),
                        percentile=95, errors=0, reconnects=0, intervals=0, histogram_count=N,
                        report_interval_s=N),
        "first": None,
        "last": None,
        "hist": None,
    },
    "mariadb/insert-t2-ri1-hist.txt": {
        "summary": dict(status="ok", error=N, threads=2, tps=3436.34, qps=3436.34, events=10323,
                        total_time_s=3.0035, latency_ms=lat(0.20, 0.58, 17.04, 0.70, 5971.94),
                        percentile=95, errors=0, reconnects=0, intervals=3,
                        histogram_count=10323,
                        queries=dict(read=0, write=10323, other=0, total=10323)),
        "first": (1, 2, 3446.22, 3446.22, 0, 3446.22, 0, 0.72, 95, 0, 0),
        "last": (3, 2, 3729.61, 3729.61, 0, 3729.61, 0, 0.65, 95, 0, 0),
        "hist": (179, (0.203, 1), (17.010, 3)),
    },
    "mariadb/write_only-t16-special-ignore-errors.txt": {
        "summary": dict(status="ok", error=N, threads=16, tps=1158.85, qps=7216.42, events=4665,
                        total_time_s=4.0250, latency_ms=lat(0.78, 13.76, 65.67, 30.81, 64170.84),
                        percentile=95, errors=453, errors_per_s=112.53, reconnects=0,
                        intervals=4, histogram_count=N),
        "first": (1, 16, 1246.83, 7831.65, 0, 5189.13, 2642.52, 28.67, 95, 133.87, 0),
        "last": (4, 16, 1148.05, 7086.31, 0, 4703.20, 2383.10, 31.37, 95, 89.00, 0),
        "hist": None,
    },
    "mariadb/point_select-t2-events2000.txt": {
        "summary": dict(status="ok", error=N, threads=2, tps=6111.53, qps=6111.53, events=2000,
                        total_time_s=0.3262, latency_ms=lat(0.08, 0.32, 9.36, 1.70, 643.36),
                        percentile=95, errors=0, reconnects=0, intervals=0, histogram_count=N),
        "first": None,
        "last": None,
        "hist": None,
    },
    "mariadb/point_select-t2-rate200-ri1.txt": {
        "summary": dict(status="ok", error=N, threads=2, tps=200.71, qps=200.71, events=604,
                        total_time_s=3.0088, latency_ms=lat(0.12, 0.57, 5.40, 2.18, 342.46),
                        percentile=95, errors=0, reconnects=0, intervals=3, rate=200,
                        fairness=dict(events_avg=302.0, events_stddev=2.00,
                                      execution_time_avg=0.1712, execution_time_stddev=0.03)),
        "first": (1, 2, 208.06, 208.06, 208.06, 0, 0, 0.69, 95, 0, 0, 0, 0),
        "last": (3, 2, 224.26, 224.26, 224.26, 0, 0, 2.66, 95, 0, 0, 0, 0),
        "hist": None,
    },
    "mariadb/point_select-t2-percentile0.txt": {
        # "percentile stats: disabled" and "lat (ms,0%): 0.00": no percentile, no latency.
        "summary": dict(status="ok", error=N, threads=2, tps=5792.77, qps=5792.77, events=11598,
                        total_time_s=2.0017, latency_ms=lat(0.07, 0.34, 21.23, N, 3999.43),
                        percentile=N, intervals=2),
        "first": (1, 2, 5905.76, 5905.76, 5905.76, 0, 0, N, 0, 0, 0),
        "last": (2, 2, 5686.06, 5686.06, 5686.06, 0, 0, N, 0, 0, 0),
        "hist": None,
    },
    "mariadb/point_select-auth-failure.txt": {
        "summary": dict(status="failed", threads=2, tps=N, qps=N, events=N, total_time_s=N,
                        latency_ms=lat(N, N, N, N, N), percentile=N, errors=N, reconnects=N,
                        intervals=0, histogram_count=N, report_interval_s=1,
                        error="unable to connect to MySQL server on host '127.0.0.1', "
                        "port 53199, aborting...",
                        fatal=["unable to connect to MySQL server on host '127.0.0.1', "
                               "port 53199, aborting...",
                               "error 1045: Access denied for user 'sb'@'localhost' "
                               "(using password: YES)",
                               "`thread_init' function failed: "
                               "/usr/share/sysbench/oltp_common.lua:349: "
                               "connection creation failed",
                               "Thread initialization failed!"]),
        "first": None,
        "last": None,
        "hist": None,
    },
    "mariadb/point_select-t2-report-json.txt": {
        "summary": dict(status="ok", error=N, threads=2, tps=7189.63, qps=7189.63, events=21621,
                        total_time_s=3.0067, latency_ms=lat(0.07, 0.28, 9.42, 0.25, 5983.14),
                        percentile=95, intervals=3, report_hook="json"),
        "first": (1, 2, 8104.71, 8104.71, 8104.71, 0, 0, 0.24, N, 0, 0),
        "last": (3, 2, 6845.49, 6845.49, 6845.49, 0, 0, 0.27, N, 0, 0),
        "hist": None,
    },
    "mariadb/point_select-t2-report-csv.txt": {
        "summary": dict(status="ok", error=N, threads=2, tps=6641.12, qps=6641.12, events=19951,
                        total_time_s=3.0037, latency_ms=lat(0.07, 0.30, 11.03, 0.26, 5986.36),
                        percentile=95, intervals=3, report_hook="csv"),
        "first": (1, 2, 6569.90, 6569.90, 6569.90, 0, 0, 0.28, N, 0, 0),
        "last": (3, 1, 6829.03, 6829.03, 6829.03, 0, 0, 0.25, N, 0, 0),
        "hist": None,
    },
    "mariadb/point_select-t2-report-json-both.txt": {
        # The cumulative hook replaced the text summary: its record is the third row.
        "summary": dict(status="failed", error=TRUNC, threads=2, tps=N, events=N, intervals=3,
                        report_hook="json"),
        "first": (1, 2, 6740.90, 6740.90, 6740.90, 0, 0, 0.28, N, 0, 0),
        "last": (3, 0, 5921.61, 5921.61, 5921.61, 0, 0, 1.64, N, 0, 0),
        "hist": None,
    },
    "mariadb/read_write-t4-ri1-server-killed.txt": {
        "summary": dict(status="failed", threads=4, tps=N, events=N, percentile=95,
                        intervals=3,
                        error="mysql_stmt_execute() returned error 2013 (Lost connection to "
                        "server during query) for query 'SELECT c FROM sbtest2 WHERE id=?'"),
        "first": (1, 4, 372.39, 7523.34, 5269.12, 1505.46, 748.76, 23.52, 95, 0, 0),
        "last": (3, 4, 296.01, 5906.25, 4138.17, 1176.05, 592.02, 24.83, 95, 0, 0),
        "hist": None,
    },
    "mariadb/read_write-t4-ri1-ignore-all-server-killed-segfault.txt": {
        "summary": dict(status="failed", error=TRUNC, threads=4, tps=N, events=N, fatal=[],
                        intervals=3),
        "first": (1, 4, 567.50, 11402.95, 7993.96, 2270.00, 1139.00, 10.46, 95, 0, 0),
        "last": (3, 4, 571.84, 11433.86, 8006.81, 2283.37, 1143.69, 9.73, 95, 0, 0),
        "hist": None,
    },
    "mariadb/cpu-t1-ri1.txt": {
        # No DB driver: "eps:" intervals, "events per second:", no SQL statistics.
        "summary": dict(status="ok", error=N, threads=1, tps=13657.48, qps=N, events=27324,
                        total_time_s=2.0003, latency_ms=lat(0.03, 0.07, 16.08, 0.05, 1979.61),
                        percentile=95, errors=N, reconnects=N, intervals=1, queries=N,
                        layout="1.0"),
        "first": (1, 1, 13177.23, N, N, N, N, 0.06, 95, N, N),
        "last": (1, 1, 13177.23, N, N, N, N, 0.06, 95, N, N),
        "hist": None,
    },
    LONG_LOG: {
        "summary": dict(status="ok", error=N, threads=2, tps=7761.43, qps=7761.43,
                        events=4656919, total_time_s=600.0078,
                        latency_ms=lat(0.05, 0.26, 430.94, 0.21, 1197024.20), percentile=95,
                        errors=0, reconnects=0, intervals=600, histogram_count=4656919,
                        queries=dict(read=4656919, write=0, other=0, total=4656919),
                        fairness=dict(events_avg=2328459.5, events_stddev=1535281.50,
                                      execution_time_avg=598.5121, execution_time_stddev=0.85)),
        "first": (1, 2, 10499.99, 10499.99, 10499.99, 0, 0, 0.31, 95, 0, 0),
        "last": (600, 2, 7710.95, 7710.95, 7710.95, 0, 0, 0.16, 95, 0, 0),
        "hist": (452, (0.051, 5), (434.829, 1)),
    },
    "shared/sysbench-1.0.12-oltp-pkb.txt": {
        "summary": dict(status="ok", error=N, threads=16, tps=986.49, qps=19730.45, events=29611,
                        total_time_s=30.0145,
                        latency_ms=lat(12.38, 16.21, 115.78, 116.80, 480027.19),
                        percentile=100, errors=1, errors_per_s=0.03, reconnects=0,
                        intervals=15, histogram_count=N, sysbench_version="1.0.12",
                        layout="1.0", report_interval_s=2,
                        queries=dict(read=414568, write=118446, other=59223, total=592237)),
        "first": (2, 16, 1012.86, 20333.18, 14240.02, 4061.44, 2031.72, 28.67, 100, 0, 0),
        "last": (30, 16, 957.96, 19155.63, 13415.39, 3824.33, 1915.91, 73.13, 100, 0, 0),
        "hist": None,
    },
    "shared/sysbench-0.5-oltp-pkb-extract.txt": {
        # 0.5 prints no queries line: qps = read/write requests + other operations per sec.
        "summary": dict(status="ok", error=N, threads=2, tps=151.85, qps=2733.24 + 303.69,
                        events=182218, total_time_s=1200.0136,
                        latency_ms=lat(10.49, 13.17, 210.53, 17.73, 2399529.6),
                        percentile=99, errors=0, reconnects=0, intervals=600,
                        histogram_count=N, sysbench_version="0.5", layout="0.5",
                        report_interval_s=2,
                        queries=dict(read=2551052, write=728872, other=364436, total=3644360)),
        "first": (2, 2, 144.13, N, 2030.88, 577.53, N, 17.52, 99, 0, 0),
        "last": (1200, 2, 120.50, N, 1680.01, 480.00, N, 20.39, 99, 0, 0),
        "hist": None,
    },
    "shared/sysbench-1.1.0-df89d34-oltp-update-index-with-errors.txt": {
        "summary": dict(status="ok", error=N, threads=64, tps=13782.32, qps=82694.12,
                        events=827068, total_time_s=60.0093,
                        latency_ms=lat(0.49, 4.64, 33.85, 7.98, 3838911.90), percentile=95,
                        errors=5, reconnects=0, intervals=12, histogram_count=N,
                        sysbench_version="1.1.0-df89d34", layout="1.1"),
        "first": (5, 64, 11740.20, 70494.16, 0, 47003.17, 23490.99, 9.73, 95, 0, 0),
        "last": (60, 64, 15795.73, 94790.17, 0, 63195.52, 31594.66, 6.09, 95, 0, 0),
        "hist": None,
    },
    "shared/sysbench-1.0.15-rate-queue-length-fragment.txt": {
        "summary": dict(status="failed", error=TRUNC, threads=1, rate=10, percentile=95,
                        intervals=2, report_interval_s=10, tps=N),
        "first": (10, 1, 11.00, 219.96, 153.97, 43.99, 22.00, 52.89, 95, 0, 0, 0, 0),
        "last": (20, 1, 9.30, 187.91, 131.60, 37.60, 18.70, 51.94, 95, 0, 0, 0, 0),
        "hist": None,
    },
    "shared/sysbench-1.0.11-report-json-cumulative-issue194.txt": {
        # "threads": 0 is sysbench's bug (issue 194), not a thread count.
        "summary": dict(status="failed", error=TRUNC, threads=N, intervals=1,
                        report_hook="json", sysbench_version=N),
        "first": (3, 0, 5440.06, 0, 0, 0, 0, 1.89, N, 0, 0),
        "last": (3, 0, 5440.06, 0, 0, 0, 0, 1.89, N, 0, 0),
        "hist": None,
    },
    "shared/sysbench-1.0.20-rate-fatal-event-queue-full-issue483.txt": {
        "summary": dict(status="failed", threads=100, rate=5000, intervals=0, tps=N,
                        error="The event queue is full. This means the worker threads are "
                        "unable to keep up with the specified event generation rate"),
        "first": None,
        "last": None,
        "hist": None,
    },
}
# fmt: on


# -- helpers ------------------------------------------------------------------------------------
def _read(rel: str) -> str:
    p = FIX / rel
    if p.suffix == ".gz":
        return gzip.decompress(p.read_bytes()).decode()
    return p.read_text()


_CACHE: dict[str, object] = {}


def _parsed(rel: str):
    if rel not in _CACHE:
        _CACHE[rel] = parse_sysbench(_read(rel), file=rel)
    return _CACHE[rel]


def _same(actual, expected, where=""):
    if isinstance(expected, dict):
        assert isinstance(actual, dict), where
        for k, v in expected.items():
            _same(actual.get(k, "<missing>"), v, f"{where}.{k}")
    elif expected is None:
        assert actual is None, f"{where}: {actual!r} is not None"
    elif isinstance(expected, float):
        assert isinstance(actual, (int, float)) and not isinstance(actual, bool), where
        assert actual == pytest.approx(expected, rel=1e-12, abs=1e-9), where
    else:
        assert actual == expected and type(actual) is type(expected), (
            f"{where}: {actual!r} != {expected!r}"
        )


def _row(df: pd.DataFrame, i: int, expected: tuple):
    got = df.iloc[i].tolist()
    for col, g, e in zip(INTERVAL_COLUMNS, got, expected, strict=False):
        if e is None:
            assert math.isnan(g), f"row {i} {col}: {g} is not NaN"
        else:
            assert g == pytest.approx(e, abs=1e-9), f"row {i} {col}: {g} != {e}"
    for col, g in zip(INTERVAL_COLUMNS[len(expected) :], got[len(expected) :], strict=True):
        assert math.isnan(g), f"row {i} {col}: {g} is not NaN"


def _plain(obj) -> bool:
    if isinstance(obj, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in obj.items())
    if isinstance(obj, list):
        return all(_plain(v) for v in obj)
    return obj is None or type(obj) in (int, float, str, bool)


# -- golden tests -------------------------------------------------------------------------------
def test_every_fixture_has_golden_values():
    on_disk = {
        str(p.relative_to(FIX)) for p in FIX.glob("*/*") if p.name.endswith((".txt", ".txt.gz"))
    }
    assert on_disk == set(GOLDEN)


@pytest.mark.parametrize("rel", sorted(GOLDEN))
def test_golden_summary(rel):
    res = _parsed(rel)
    assert res.summary["file"] == rel
    _same(res.summary, GOLDEN[rel]["summary"], rel)
    assert _plain(res.summary), "summary holds a non-JSON type"
    json.dumps(res.summary, allow_nan=False)


@pytest.mark.parametrize("rel", sorted(GOLDEN))
def test_golden_intervals(rel):
    iv = _parsed(rel).intervals
    g = GOLDEN[rel]
    assert list(iv.columns) == list(INTERVAL_COLUMNS)
    assert all(dt == np.float64 for dt in iv.dtypes)
    assert len(iv) == g["summary"]["intervals"]
    if g["first"] is not None:
        _row(iv, 0, g["first"])
        _row(iv, len(iv) - 1, g["last"])
    if len(iv) > 1:
        assert iv["t"].is_monotonic_increasing


@pytest.mark.parametrize("rel", sorted(GOLDEN))
def test_golden_histogram(rel):
    res = _parsed(rel)
    h, g = res.histogram, GOLDEN[rel]["hist"]
    assert list(h.columns) == ["value_ms", "count"]
    assert h["count"].dtype == np.int64 and h["value_ms"].dtype == np.float64
    if g is None:
        assert h.empty and res.summary["histogram_count"] is None
        return
    # sysbench adds every event to the histogram: its counts sum to the events printed.
    assert res.summary["histogram_count"] == int(h["count"].sum()) == res.summary["events"]
    assert h["value_ms"].is_monotonic_increasing
    rows, first, last = g
    assert len(h) == rows
    assert tuple(h.iloc[0]) == pytest.approx(first)
    assert tuple(h.iloc[-1]) == pytest.approx(last)


def test_long_log_is_600_one_second_intervals():
    iv = _parsed(LONG_LOG).intervals
    assert iv["t"].tolist() == [float(t) for t in range(1, 601)]
    assert (iv["threads"] == 2).all() and (iv["lat_pct"] == 95).all()
    assert _parsed(LONG_LOG).summary["total_time_s"] == pytest.approx(600, abs=0.1)


# -- percentiles --------------------------------------------------------------------------------
HIST_LOGS = [r for r, g in GOLDEN.items() if g["hist"] is not None]


@pytest.mark.parametrize("rel", sorted(HIST_LOGS))
def test_histogram_percentile_agrees_with_sysbench(rel):
    res = _parsed(rel)
    p = res.summary["percentile"]
    printed = res.summary["latency_ms"]["percentile_value"]
    ours = histogram_percentiles(res.histogram, (p,))[p]
    # Same bucket: sysbench prints its percentile with 2 decimals, buckets with 3.
    assert abs(ours - printed) <= 0.005 + 0.0005 + 1e-9, (ours, printed)


def test_histogram_percentiles_definition():
    h = pd.DataFrame({"value_ms": [1.0, 2.0, 3.0, 4.0], "count": [1, 1, 1, 1]})
    got = histogram_percentiles(h, (12.5, 37.5, 50, 62.5, 90, 99.9, 100))
    # n = floor(4 p / 100 + 0.5): 1, 2, 2, 3, 4, 4, 4 -> first bucket whose cumulative count >= n
    assert got == {12.5: 1.0, 37.5: 2.0, 50: 2.0, 62.5: 3.0, 90: 4.0, 99.9: 4.0, 100: 4.0}
    h = pd.DataFrame({"value_ms": [0.5, 0.6, 0.7], "count": [90, 9, 1]})
    assert histogram_percentiles(h, (50, 90, 95, 99, 99.9)) == {
        50: 0.5,
        90: 0.5,
        95: 0.6,
        99: 0.6,
        99.9: 0.7,
    }


def test_histogram_percentiles_empty():
    empty = _parsed("mariadb/read_only-t2-ri1.txt").histogram
    assert histogram_percentiles(empty) == {50: None, 90: None, 95: None, 99: None, 99.9: None}


def test_bucket_ratio_is_about_two_percent():
    assert HISTOGRAM_BUCKET_RATIO == pytest.approx(1.018, abs=5e-4)
    # Neighbouring printed buckets of a real log are one or more ratios apart.
    v = _parsed("mariadb/read_write-t4-ri1-p99-hist.txt").histogram["value_ms"].to_numpy()
    steps = np.log(v[1:] / v[:-1]) / np.log(HISTOGRAM_BUCKET_RATIO)
    assert np.allclose(steps, np.round(steps), atol=0.05) and (steps >= 0.95).all()


# -- properties: what web pages do to a log -----------------------------------------------------
_KV = re.compile(r"^( +[A-Za-z][\w ./()%-]*: +\S.*)$", re.M)


def _web_pasted(text: str) -> str:
    """The damage seen in pasted logs (e.g. the TiDB community posts): CRLF, every space a
    no-break space or a NBSP+space pair, indentation lost, blank lines dropped and a
    ``# comment`` after the values of the summary lines."""
    text = _KV.sub(lambda m: m.group(1) + "    # 注释 (comment)", text)
    lines = [ln.lstrip() for ln in text.splitlines() if ln.strip()]
    text = "\r\n".join(lines) + "\r\n"
    return text.replace("  ", "\u00a0 ").replace(" ", "\u00a0")


def _collapsed(text: str) -> str:
    """Lost indentation and runs of spaces collapsed to one (seen in the course notes)."""
    return "\n".join(re.sub(r" +", " ", ln.strip()) for ln in text.splitlines())


def _assert_same_result(a, b):
    sa, sb = dict(a.summary), dict(b.summary)
    assert sa == sb
    pd.testing.assert_frame_equal(a.intervals, b.intervals)
    pd.testing.assert_frame_equal(a.histogram, b.histogram)


@pytest.mark.parametrize("rel", sorted(r for r in GOLDEN if r != LONG_LOG))
@pytest.mark.parametrize("damage", [_web_pasted, _collapsed])
def test_web_pasted_log_parses_the_same(rel, damage):
    text = _read(rel)
    damaged = damage(text)
    assert damaged != text
    _assert_same_result(parse_sysbench(text, file=rel), parse_sysbench(damaged, file=rel))


def test_web_paste_transform_looks_like_the_seed():
    # Guard that the property above really exercises NBSP and trailing comments.
    pasted = _web_pasted(_read("mariadb/read_only-t2-ri1.txt"))
    assert "\u00a0" in pasted and "#\u00a0注释" in pasted and "\r\n" in pasted
    assert "transactions:\u00a0" in pasted.replace("\u00a0 ", "\u00a0")


# -- edge cases ---------------------------------------------------------------------------------
def test_empty_text():
    res = parse_sysbench("")
    assert res.summary["status"] == "failed" and res.summary["error"] == TRUNC
    assert res.summary["file"] is None and res.summary["intervals"] == 0
    assert list(res.intervals.columns) == list(INTERVAL_COLUMNS) and res.intervals.empty
    assert res.histogram.empty


def test_parse_file_matches_parse_text(tmp_path):
    src = FIX / "mariadb/write_only-t2-ri1-hist.txt"
    dst = tmp_path / "log.txt"
    dst.write_bytes(src.read_bytes())
    a = parse_sysbench_file(dst)
    b = parse_sysbench(src.read_text(), file=str(dst))
    _assert_same_result(a, b)
    assert a.summary["file"] == str(dst)


def test_fatal_wins_over_a_present_summary():
    # A FATAL line marks the run failed even if statistics follow (e.g. a forced shutdown).
    text = _read("mariadb/read_only-t2-ri1.txt").replace(
        "SQL statistics:",
        "FATAL: The --max-time limit has expired, forcing shutdown...\nSQL statistics:",
    )
    s = parse_sysbench(text).summary
    assert s["status"] == "failed"
    assert s["error"] == "The --max-time limit has expired, forcing shutdown..."
    assert s["tps"] == 830.59

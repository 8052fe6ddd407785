"""Several clients in one run: series aligned and summed, histograms merged bucket by bucket.

Known answers by hand, seeded simulations whose truth is the pooled raw sample, and real
sysbench histograms (tests/fixtures/sysbench/mariadb, 1.0.20 on MariaDB).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tibenchlib.clients import execute_together, failed_clients
from tibenchlib.multiclient import (
    align_series,
    merge_histograms,
    merge_summaries,
    merged_percentiles,
    sum_series,
)
from tibenchlib.parse.sysbench import (
    HISTOGRAM_BUCKET_RATIO,
    histogram_percentiles,
    parse_sysbench_file,
)

REAL = Path(__file__).parent / "fixtures" / "sysbench" / "mariadb"


def hist(pairs) -> pd.DataFrame:
    return pd.DataFrame(
        {"value_ms": [float(v) for v, _ in pairs], "count": [int(c) for _, c in pairs]}
    )


def sysbench_histogram(latencies_ms: np.ndarray) -> pd.DataFrame:
    """Bin latencies as sysbench does: 1024 log-spaced buckets from 0.001 ms, the bucket's
    value printed with 3 decimals."""
    i = np.rint(np.log(latencies_ms / 1e-3) / math.log(HISTOGRAM_BUCKET_RATIO)).astype(int)
    idx, counts = np.unique(i, return_counts=True)
    return pd.DataFrame(
        {"value_ms": np.round(1e-3 * HISTOGRAM_BUCKET_RATIO**idx, 3), "count": counts}
    )


# -- histograms ----------------------------------------------------------------------------------
def test_merged_percentile_is_of_all_events_not_the_mean_of_percentiles():
    # client A: 90 events at 1 ms, 10 at 100 ms; client B: 100 events at 2 ms.
    a = hist([(1, 90), (100, 10)])
    b = hist([(2, 100)])
    # by hand: 200 events; p95 → n = floor(190.5) = 190; cumulative 90 (1 ms), 190 (2 ms)
    assert merged_percentiles([a, b], (50, 95, 99)) == {50: 2.0, 95: 2.0, 99: 100.0}
    pa, pb = histogram_percentiles(a, (95,))[95], histogram_percentiles(b, (95,))[95]
    assert (pa, pb) == (100.0, 2.0)
    assert (pa + pb) / 2 == 51.0  # what averaging would have reported


def test_merge_adds_counts_bucket_by_bucket():
    a = hist([(0.5, 3), (1.0, 4)])
    b = hist([(1.0, 6), (2.5, 1)])
    c = hist([])
    m = merge_histograms({"a": a, "b": b, "c": c})
    assert m.to_dict("list") == {"value_ms": [0.5, 1.0, 2.5], "count": [3, 10, 1]}
    assert m["count"].dtype == np.int64
    assert merge_histograms([c]).empty
    assert merged_percentiles([c], (95,)) == {95: None}


def test_one_client_merged_is_itself():
    h = parse_sysbench_file(REAL / "point_select-t2-ri1-hist.txt").histogram
    m = merge_histograms([h])
    pct = (50, 90, 95, 99, 99.9)
    assert histogram_percentiles(m, pct) == histogram_percentiles(h, pct)
    assert m["count"].sum() == h["count"].sum()


def test_real_histograms_of_two_workloads():
    a = parse_sysbench_file(REAL / "point_select-t2-ri1-hist.txt")
    b = parse_sysbench_file(REAL / "insert-t2-ri1-hist.txt")
    m = merge_histograms([a.histogram, b.histogram])
    assert m["count"].sum() == a.summary["histogram_count"] + b.summary["histogram_count"]
    assert m["value_ms"].is_monotonic_increasing
    # the pooled percentile lies between the clients' own ones
    for p in (50, 95, 99):
        lo, hi = sorted(
            [
                histogram_percentiles(a.histogram, (p,))[p],
                histogram_percentiles(b.histogram, (p,))[p],
            ]
        )
        assert lo <= merged_percentiles([a.histogram, b.histogram], (p,))[p] <= hi


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_seeded_clients_merged_percentile_matches_the_pooled_sample(seed):
    """Three clients with different latency distributions (one slow, few events); the truth is
    the percentile of the pooled raw latencies. Merged histograms recover it to a bucket;
    the mean of the clients' percentiles misses it by far."""
    rng = np.random.default_rng(seed)
    clients = [
        rng.lognormal(math.log(2.0), 0.3, 20_000),
        rng.lognormal(math.log(3.0), 0.4, 15_000),
        rng.lognormal(math.log(40.0), 0.5, 2_000),  # a slow client behind a busy server
    ]
    pooled = np.sort(np.concatenate(clients))
    hists = [sysbench_histogram(c) for c in clients]
    merged = merged_percentiles(hists, (50, 95, 99))
    for p in (50, 95, 99):
        # sysbench's definition on the raw sample: the n-th smallest, n = floor(N p/100 + 0.5)
        truth = pooled[math.floor(len(pooled) * p / 100 + 0.5) - 1]
        # one bucket (factor 1.018) plus the 3-decimal rounding of the printed value
        assert merged[p] == pytest.approx(truth, rel=HISTOGRAM_BUCKET_RATIO - 1, abs=1e-3)
    mean_of_p99 = np.mean([histogram_percentiles(h, (99,))[99] for h in hists])
    truth99 = pooled[math.floor(len(pooled) * 0.99 + 0.5) - 1]
    assert abs(mean_of_p99 - truth99) / truth99 > 0.2


# -- series ---------------------------------------------------------------------------------------
def intervals(ts, values) -> pd.DataFrame:
    return pd.DataFrame({"t": np.asarray(ts, float), "tps": np.asarray(values, float)})


def test_clients_started_apart_are_aligned_on_wall_clock():
    # A starts at 1000.0 and reports 5 s; B starts 0.3 s later, 2 s in, and reports 3 s;
    # C starts 0.45 s late (still under half a period) and reports 5 s.
    a = intervals([1, 2, 3, 4, 5], [100] * 5)
    b = intervals([1, 2, 3], [200] * 3)
    c = intervals([1, 2, 3, 4, 5], [300] * 5)
    aligned = align_series({"a": a, "b": b, "c": c}, {"a": 1000.0, "b": 1002.3, "c": 1000.45})
    assert set(aligned.columns) == {"slot", "wall_s", "client", "value"}
    s = sum_series(aligned)
    assert s["slot"].tolist() == [0, 1, 2, 3, 4]
    assert s["wall_s"].tolist() == [1001.0, 1002.0, 1003.0, 1004.0, 1005.0]
    assert s["total"].tolist() == [400, 400, 600, 600, 600]
    assert s["complete"].tolist() == [False, False, True, True, True]
    assert s.loc[s.complete, "total"].mean() == 600


def test_a_client_stopping_early_leaves_incomplete_slots_and_a_declared_count():
    a = intervals([1, 2, 3, 4], [10, 10, 10, 10])
    b = intervals([1, 2], [5, 5])
    s = sum_series(align_series([a, b], [0.0, 0.0]), clients=3)
    assert not s["complete"].any()  # a third client never reported
    s2 = sum_series(align_series([a, b], [0.0, 0.0]))
    assert s2["complete"].tolist() == [True, True, False, False]
    assert s2["clients"].tolist() == [2, 2, 1, 1]


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_seeded_series_sum_recovers_the_known_total_rate(seed):
    rng = np.random.default_rng(seed)
    rates = [1000.0, 1500.0, 500.0]
    starts = 5000.0 + rng.uniform(0, 0.4, 3)
    frames = [intervals(np.arange(1, 61), rng.poisson(r, 60)) for r in rates]
    s = sum_series(align_series(frames, list(starts)))
    full = s[s["complete"]]
    assert len(full) == 60
    # Poisson: the mean of 60 per-second sums has sd sqrt(3000/60) ≈ 7; allow 5 sd
    assert full["total"].mean() == pytest.approx(sum(rates), abs=5 * math.sqrt(3000 / 60))


def test_two_reports_of_one_client_in_one_slot_are_averaged():
    # the period (2 s) is inferred from the steps of t
    a = intervals([2, 4, 6], [10, 20, 30])
    out = align_series([a], [0.0])
    assert out["slot"].tolist() == [0, 1, 2] and out["value"].tolist() == [10, 20, 30]
    dup = intervals([1, 1.2, 2], [10, 20, 30])
    out = align_series([dup], [0.0], period_s=1.0)
    assert out["value"].tolist() == [15, 30]


def test_bad_inputs_name_what_is_wrong():
    a = intervals([1, 2], [1, 1])
    with pytest.raises(ValueError, match="no start time for client"):
        align_series({"a": a}, {"b": 0.0})
    with pytest.raises(ValueError, match="client a: no column 'qps'"):
        align_series({"a": a}, {"a": 0.0}, column="qps")
    with pytest.raises(ValueError, match="period_s must be positive"):
        align_series([a], [0.0], period_s=0)


# -- summaries ------------------------------------------------------------------------------------
def test_merged_summary_weights_the_mean_by_events_and_fails_with_one_client():
    a = parse_sysbench_file(REAL / "point_select-t2-ri1-hist.txt").summary
    b = parse_sysbench_file(REAL / "insert-t2-ri1-hist.txt").summary
    m = merge_summaries([a, b])
    assert m["status"] == "ok" and m["clients"] == 2
    assert m["events"] == a["events"] + b["events"]
    assert m["tps"] == pytest.approx(a["tps"] + b["tps"])
    assert m["threads"] == 4
    want = (a["latency_ms"]["sum"] + b["latency_ms"]["sum"]) / m["events"]
    assert m["latency_ms"]["avg"] == pytest.approx(want)
    # not the mean of the means: the two workloads ran very different numbers of events
    naive = (a["latency_ms"]["avg"] + b["latency_ms"]["avg"]) / 2
    assert abs(m["latency_ms"]["avg"] - naive) > 0.01
    assert m["latency_ms"]["max"] == max(a["latency_ms"]["max"], b["latency_ms"]["max"])
    failed = dict(b, status="failed", error="FATAL: connection lost")
    f = merge_summaries([a, failed])
    assert f["status"] == "failed" and f["error"] == "client 1: FATAL: connection lost"
    with pytest.raises(ValueError, match="no client summaries"):
        merge_summaries([])


# -- real clients started together ---------------------------------------------------------------
def test_execute_together_refuses_mismatched_logs(tmp_path):
    with pytest.raises(ValueError, match="2 commands but 1 log paths"):
        execute_together([["true"], ["true"]], [tmp_path / "a.log"])
    with pytest.raises(ValueError, match="the same log file"):
        execute_together([["true"], ["true"]], [tmp_path / "a.log", tmp_path / "a.log"])


def test_a_missing_or_failing_client_is_named_and_the_others_kept(tmp_path):
    logs = [tmp_path / f"c{i}.log" for i in range(3)]
    cmds = [["sh", "-c", "echo one"], ["no-such-tool-here"], ["sh", "-c", "echo two; exit 3"]]
    out = execute_together(cmds, logs)
    assert failed_clients(out) == [1, 2]
    assert logs[0].read_text() == "one\n" and logs[2].read_text() == "two\n"
    assert out[1].missing == "no-such-tool-here"


@pytest.mark.slow
def test_two_real_sysbench_clients_merged(sysbench_bin, tmp_path):
    """Two sysbench processes started together (the cpu test: no database needed): the merged
    histogram holds every event of both, and the summed series covers the common seconds."""
    cmd = [
        "sysbench", "cpu", "--threads=1", "--time=3", "--report-interval=1", "--histogram=on",
        "--cpu-max-prime=2000", "run",
    ]  # fmt: skip
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    out = execute_together([cmd, cmd], logs)
    assert failed_clients(out) == []
    assert abs(out[0].started_at - out[1].started_at) < 0.5
    res = [parse_sysbench_file(p) for p in logs]
    assert all(r.summary["status"] == "ok" for r in res)
    merged = merge_histograms([r.histogram for r in res])
    assert merged["count"].sum() == sum(r.summary["events"] for r in res)
    s = sum_series(align_series([r.intervals for r in res], [o.started_at for o in out]))
    full = s[s["complete"]]
    assert len(full) >= 2
    each = [r.intervals.set_index("t")["tps"] for r in res]
    assert full["total"].iloc[0] == pytest.approx(each[0].iloc[0] + each[1].iloc[0])
    summary = merge_summaries([r.summary for r in res])
    assert summary["events"] == merged["count"].sum()

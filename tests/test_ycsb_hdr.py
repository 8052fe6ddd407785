"""HdrHistogram logs of YCSB: one client's merged figures are the ones YCSB printed, several
clients' merged percentile is the percentile of the union of their calls (known answers)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hdrh.log import HistogramLogWriter

from tibenchlib.parse.ycsb import parse_ycsb_file
from tibenchlib.ycsb import hdr

FIX = Path(__file__).parent / "fixtures" / "ycsb"


def _true_percentile(values: np.ndarray, p: float) -> float:
    """The percentile of the values themselves, by YCSB's rank rule (ceil(p/100 n)-th value)."""
    v = np.sort(values)
    return float(v[max(1, math.ceil(p / 100 * len(v))) - 1])


def _write_log(path: Path, values: np.ndarray, intervals: int = 3) -> None:
    """Values recorded into ``intervals`` interval histograms, written by hdrh's log writer."""
    with open(path, "w") as f:
        w = HistogramLogWriter(f)
        w.output_log_format_version()
        for chunk in np.array_split(values, intervals):
            h = hdr.new_histogram()
            for x in chunk:
                h.record_value(int(x))
            w.output_interval_histogram(h)


def test_percentile_rule_on_known_values():
    h = hdr.new_histogram()
    for v in range(1, 101):
        h.record_value(v)
    assert hdr.percentile(h, 95) == 95 and hdr.percentile(h, 99) == 99
    assert hdr.percentile(h, 100) == 100 and hdr.percentile(h, 0) == 1
    assert hdr.percentile(hdr.new_histogram(), 95) is None
    assert hdr.latency_figures(hdr.new_histogram())["p95"] is None


def test_merged_percentile_is_the_union_not_the_mean_of_percentiles(tmp_path):
    """A fast client (9,000 calls around 1 ms) and a slow one (1,000 around 20 ms): the merged
    p95/p99 equal the union's to the bucket (3 significant digits); the mean of the two
    clients' p95 is far from it."""
    rng = np.random.default_rng(11)
    fast = np.rint(rng.lognormal(np.log(1000), 0.3, 9000)).astype(int)
    slow = np.rint(rng.lognormal(np.log(20000), 0.2, 1000)).astype(int)
    for name, vals in (("a", fast), ("b", slow)):
        (tmp_path / name).mkdir()
        _write_log(tmp_path / name / "READ.hdr", vals)
    clients = [hdr.read_client(tmp_path / "a"), hdr.read_client(tmp_path / "b")]
    merged = hdr.merged_latency(clients)["READ"]
    union = np.concatenate([fast, slow])
    assert merged["count"] == 10_000
    for p in (95, 99):
        truth = _true_percentile(union, p) / 1e3
        assert merged[f"p{p}"] == pytest.approx(truth, rel=1e-3), p
    assert merged["max"] == pytest.approx(union.max() / 1e3, rel=1e-3)
    assert merged["avg"] == pytest.approx(union.mean() / 1e3, rel=1e-3)
    mean_of_p95 = np.mean([_true_percentile(fast, 95), _true_percentile(slow, 95)]) / 1e3
    assert abs(mean_of_p95 / merged["p95"] - 1) > 0.2  # the shortcut is wrong by > 20%


def test_all_is_every_call_without_cleanup(tmp_path):
    _write_log(tmp_path / "READ.hdr", np.full(90, 100))
    _write_log(tmp_path / "UPDATE.hdr", np.full(10, 5000))
    _write_log(tmp_path / "CLEANUP.hdr", np.full(2, 900_000))
    lat = hdr.merged_latency([hdr.read_client(tmp_path)])
    assert lat["ALL"]["count"] == 100 and lat["CLEANUP"]["count"] == 2
    assert lat["ALL"]["p95"] == pytest.approx(5.0, rel=1e-3)  # 10% of calls at 5 ms
    assert lat["ALL"]["max"] == pytest.approx(5.0, rel=1e-3)  # CLEANUP left out
    assert lat["ALL"]["p95"] > lat["READ"]["p95"]


def test_one_real_client_merges_to_what_ycsb_printed():
    clients = [hdr.read_client(FIX / "hdr" / "c0.")]
    lat = hdr.merged_latency(clients)
    printed = parse_ycsb_file(FIX / "hdr" / "c0.run.log").summary
    for op in ("READ", "UPDATE"):
        want = printed["latency_ms"][op]
        assert lat[op]["count"] == printed["operations"][op]
        for k in ("min", "max", "p95", "p99"):
            assert lat[op][k] == pytest.approx(want[k], abs=1e-9), (op, k)
        assert lat[op]["avg"] == pytest.approx(want["avg"], rel=1e-6)


def test_two_real_clients_merge_bucket_by_bucket():
    d = FIX / "hdr2"
    clients = [hdr.read_client(d / f"client{i}") for i in (0, 1)]
    printed = [parse_ycsb_file(d / f"client{i}.run.log").summary for i in (0, 1)]
    lat = hdr.merged_latency(clients)
    for op in ("READ", "UPDATE"):
        assert lat[op]["count"] == sum(s["operations"][op] for s in printed)
        p95s = [s["latency_ms"][op]["p95"] for s in printed]
        assert min(p95s) <= lat[op]["p95"] <= max(p95s)
        assert lat[op]["max"] == max(s["latency_ms"][op]["max"] for s in printed)
        # each client's own histogram still reads back as YCSB printed it
        for c, s in zip(clients, printed, strict=True):
            assert hdr.latency_figures(c[op])["p99"] == s["latency_ms"][op]["p99"]
    assert lat["ALL"]["count"] == lat["READ"]["count"] + lat["UPDATE"]["count"]


def test_unreadable_logs_name_the_file(tmp_path):
    with pytest.raises(hdr.HdrError, match="no such"):
        hdr.read_log(tmp_path / "READ.hdr")
    foreign = tmp_path / "x.hdr"
    foreign.write_text("hello\n")
    with pytest.raises(hdr.HdrError, match="x.hdr: not an HdrHistogram log"):
        hdr.read_log(foreign)
    good = (FIX / "hdr" / "c0.READ.hdr").read_text().splitlines()
    broken = tmp_path / "READ.hdr"
    broken.write_text("\n".join(good[:4] + [good[4][:60] + "!!!!"]) + "\n")
    with pytest.raises(hdr.HdrError, match="READ.hdr: corrupt"):
        hdr.read_log(broken)


def test_failed_calls_are_errors_not_part_of_all(tmp_path):
    _write_log(tmp_path / "READ.hdr", np.full(50, 100))
    _write_log(tmp_path / "READ-FAILED.hdr", np.full(50, 90_000))
    lat = hdr.merged_latency([hdr.read_client(tmp_path)])
    assert lat["ALL"]["count"] == 50 and lat["ALL"]["max"] == pytest.approx(0.1, rel=1e-3)
    assert lat["READ-FAILED"]["count"] == 50
    assert not hdr.is_call("READ-FAILED") and not hdr.is_call("UPDATE_ERROR")
    assert hdr.is_call("READ-MODIFY-WRITE") and not hdr.is_call("CLEANUP")

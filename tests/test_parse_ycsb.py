"""YCSB and go-ycsb parsers on real outputs (tests/fixtures/ycsb, tests/fixtures/go-ycsb)."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from helpers import tibench

from tibenchlib.parse.ycsb import (
    INTERVAL_COLUMNS,
    LATENCY_KEYS,
    go_duration_s,
    parse_ycsb,
    parse_ycsb_file,
)

FIX = Path(__file__).parent / "fixtures"
YCSB = FIX / "ycsb"
GO = FIX / "go-ycsb"
ALL = sorted(YCSB.glob("*.txt")) + sorted(GO.glob("*.txt"))


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_every_fixture_parses_to_json_with_the_record_fields(path):
    r = parse_ycsb_file(path)
    s = json.loads(json.dumps(r.summary, allow_nan=False))  # plain JSON, no NaN
    for key in ("file", "status", "error", "tool", "runtime_s", "throughput_ops_s"):
        assert key in s
    assert s["tool"] == ("go-ycsb" if path.parent == GO else "ycsb")
    assert list(r.intervals.columns) == list(INTERVAL_COLUMNS)
    for lat in s["latency_ms"].values():
        assert set(lat) == set(LATENCY_KEYS)
    if s["status"] == "ok":
        assert s["error"] is None and s["throughput_ops_s"] > 0 and s["operations"]


def test_java_0_17_status_lines_and_summary():
    r = parse_ycsb_file(YCSB / "ycsb-0.17-run-status-lines-hbase-bigtable.txt")
    s = r.summary
    assert s["runtime_s"] == pytest.approx(10.018)
    assert s["throughput_ops_s"] == pytest.approx(1666.8995807546416)
    assert s["operations"] == {"READ": 16699, "CLEANUP": 16}  # GC rows are not operations
    assert s["errors"] == {}
    assert s["returns"] == {"READ": {"OK": 16699}}
    assert s["latency_ms"]["READ"] == pytest.approx(
        {"avg": 3.9817847775315886, "min": 2.212, "max": 222.207, "p95": 6.171, "p99": 10.215}
    )
    assert s["intervals"] == 12
    iv = r.intervals
    read = iv[iv["operation"] == "READ"].reset_index(drop=True)
    # the first READ interval: Count=19, Max=222207 us, 90=218751 us (2 sec)
    assert read.loc[0, ["t_s", "count", "max_ms", "p90_ms"]].tolist() == [2.0, 19, 222.207, 218.751]
    assert read["count"].sum() == 16699  # the status lines' counts add up to the summary's
    total = iv[iv["operation"] == "TOTAL"]
    assert total["count"].sum() == 16699
    assert total.iloc[3]["ops_s"] == 1354  # "1354 current ops/sec", as printed


def test_java_0_1_millisecond_percentiles_return_codes_and_buckets():
    r = parse_ycsb_file(YCSB / "ycsb-0.1-run-histogram-buckets-hbase.txt")
    s = r.summary
    assert s["version"] == "0.1" and s["phase"] == "run"
    assert s["runtime_s"] == pytest.approx(1800.413)
    # 95thPercentileLatency(ms), 4 → 4 ms; AverageLatency(us), 2218.85… → 2.21885 ms
    assert s["latency_ms"]["UPDATE"]["p95"] == 4 and s["latency_ms"]["UPDATE"]["p99"] == 7
    assert s["latency_ms"]["UPDATE"]["avg"] == pytest.approx(2.2188513395574005)
    # Return=-1 (every READ failed) is an error, Return=0 is success
    assert s["errors"] == {"READ": 2465984}
    h = r.histogram
    upd = h[h["operation"] == "UPDATE"]
    assert upd["count"].sum() == 2468054  # the buckets hold every UPDATE
    assert upd.iloc[0].tolist() == ["UPDATE", 0, False, 398998]
    assert upd["overflow"].sum() == 1 and upd[upd["overflow"]]["bucket_ms"].item() == 1000
    assert set(h["operation"]) == {"UPDATE", "READ", "CLEANUP"}


def test_java_fragment_without_summary_is_an_error_with_the_first_exception():
    s = parse_ycsb_file(YCSB / "ycsb-0.9-run-redis-exceptions-fragment.txt").summary
    assert s["status"] == "error" and s["tool"] == "ycsb" and s["version"] == "0.9.0"
    assert "no [OVERALL] summary" in s["error"]
    assert "JedisConnectionException" in s["error"]
    assert s["throughput_ops_s"] is None


def test_tibench_binding_load_batched_ok_is_not_an_error():
    s = parse_ycsb_file(YCSB / "tibench-ycsb-0.17-load-mariadb.txt").summary
    assert s["phase"] == "load" and s["version"] == "0.17.0"
    assert s["operations"]["INSERT"] == 1000
    assert s["returns"]["INSERT"] == {"BATCHED_OK": 1000}
    assert s["errors"] == {}


def test_tibench_binding_run_status_lines_add_up():
    r = parse_ycsb_file(YCSB / "tibench-ycsb-0.17-run-hdrhistogram-mariadb.txt")
    s = r.summary
    assert s["phase"] == "run" and s["status"] == "ok"
    iv = r.intervals
    for op in ("READ", "UPDATE"):
        assert iv[iv["operation"] == op]["count"].sum() == s["operations"][op]
    # throughput is the tool's: operations (cleanup excluded) over the run time
    n = s["operations"]["READ"] + s["operations"]["UPDATE"]
    assert s["throughput_ops_s"] == pytest.approx(n / s["runtime_s"], rel=1e-9)


def test_histogram_measurement_old_style_status_lines():
    r = parse_ycsb_file(YCSB / "tibench-ycsb-0.17-run-histogram-mariadb.txt")
    s = r.summary
    assert s["latency_ms"]["READ"]["p95"] == 2.0  # printed "95thPercentileLatency(us), 2000"
    first = r.intervals[r.intervals["operation"] == "READ"].iloc[0]
    assert first["avg_ms"] == pytest.approx(0.94451)  # [READ AverageLatency(us)=944.51]
    assert math.isnan(first["count"])


def test_timeseries_measurement_becomes_a_latency_series():
    r = parse_ycsb_file(YCSB / "tibench-ycsb-0.17-run-timeseries-mariadb.txt")
    s = r.summary
    assert s["latency_ms"]["READ"]["p95"] is None  # timeseries prints no percentiles
    assert r.histogram.empty
    iv = r.intervals
    read = iv[(iv["operation"] == "READ") & (iv["source"] == "timeseries")]
    assert read["t_s"].tolist() == [0.0, 1.0]
    # timeseries mode prints every status line on stdout and stderr: each is read once
    assert s["intervals"] == 4
    status = iv[(iv["operation"] == "TOTAL") & (iv["source"] == "status")]
    assert status["count"].sum() == s["operations"]["READ"] + s["operations"]["UPDATE"]
    assert read["avg_ms"].tolist() == pytest.approx([0.8686870229007634, 0.50067021276595744])


def test_all_errors_run():
    r = parse_ycsb_file(YCSB / "tibench-ycsb-0.17-run-errors-mariadb.txt")
    s = r.summary
    assert s["status"] == "ok"  # the output is complete; the calls failed
    assert s["errors"] == {"READ": 92, "UPDATE": 108}
    assert s["operations"]["READ-FAILED"] == 92 and s["operations"]["READ"] == 0
    # Operations 0: Min printed as Long.MAX_VALUE and Avg as NaN, reported as no figure
    assert s["latency_ms"]["READ"] == dict.fromkeys(LATENCY_KEYS)
    zero = r.intervals[(r.intervals["operation"] == "READ") & (r.intervals["count"] == 0)]
    assert len(zero) == 1 and zero["min_ms"].isna().all()


def test_go_ycsb_2018_cumulative_intervals_become_per_interval():
    r = parse_ycsb_file(GO / "go-ycsb-load-2018-95th-99th-only.txt")
    s = r.summary
    assert s["phase"] == "load" and s["runtime_s"] == pytest.approx(20.236090571)
    assert s["operations"] == {"INSERT": 100000}
    assert s["latency_ms"]["INSERT"] == {
        "avg": 19.936, "min": 5.231, "max": 526.428, "p95": 43, "p99": 63
    }  # fmt: skip
    assert s["throughput_ops_s"] == pytest.approx(100000 / 20.236090571)
    ins = r.intervals[r.intervals["operation"] == "INSERT"]
    # printed cumulative counts 42991 then 99892 → 42991 and 56901 in each 10 s interval
    assert ins["count"].tolist() == [42991, 56901]
    assert ins["ops_s"].tolist() == pytest.approx([4299.1, 5690.1])


def test_go_ycsb_2020_sums_operations_when_no_total_line():
    r = parse_ycsb_file(GO / "go-ycsb-run-2020-old-format-with-properties.txt")
    s = r.summary
    assert s["operations"] == {"READ": 517, "UPDATE": 483}
    assert s["latency_ms"]["UPDATE"]["p95"] is None  # this generation prints no 95th
    assert s["latency_ms"]["UPDATE"]["p99"] == 1266
    assert s["throughput_ops_s"] == pytest.approx(1000 / 44.39704297)
    assert s["intervals"] == 4
    total = r.intervals[r.intervals["operation"] == "TOTAL"]
    assert total["count"].tolist() == [235, 272, 277, 189]
    assert s["properties"]["threadcount"] == "8"


def test_go_ycsb_2023_total_line_and_masked_password():
    r = parse_ycsb_file(GO / "go-ycsb-run-2023-new-format-total-kubebench.txt")
    s = r.summary
    assert s["throughput_ops_s"] == 4322.6  # the TOTAL line's OPS, as printed
    assert "TOTAL" not in s["operations"]
    assert s["latency_ms"]["READ"]["p95"] == 0.228 and s["latency_ms"]["READ"]["avg"] == 0.172
    assert s["properties"]["mysql.password"] != "f5npnslk"
    assert "f5npnslk" not in json.dumps(s)
    total = r.intervals[r.intervals["operation"] == "TOTAL"]
    assert total["count"].tolist() == [4248, 4383]
    assert total["p95_ms"].tolist() == [0.8, 0.718]


def test_go_ycsb_error_operations_count_as_errors():
    text = (GO / "go-ycsb-run-2020-old-format-with-properties.txt").read_text()
    # go-ycsb measures failed calls under <OP>_ERROR; append one such final line shaped as the
    # fixture's own (its READ line with the name changed)
    last = text.rstrip("\n").splitlines()[-2].replace("READ  ", "READ_ERROR", 1)
    s = parse_ycsb(text.rstrip("\n") + "\n" + last + "\n").summary
    assert s["errors"] == {"READ": 517}


@pytest.mark.parametrize(
    "text, reason",
    [
        ("", "empty file"),
        ("hello world\nthis is not a benchmark\n", "not YCSB or go-ycsb output"),
        ("[ 1s ] thds: 1 tps: 10.00 qps: 10.00\n", "not YCSB or go-ycsb output"),
    ],
)
def test_foreign_text_is_an_error(text, reason):
    s = parse_ycsb(text, file="x.log").summary
    assert s["status"] == "error" and s["error"] == reason and s["file"] == "x.log"
    assert s["tool"] is None and s["operations"] == {}


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
@pytest.mark.parametrize("where", ["before the summary", "a third in"])
def test_truncated_output_is_an_error_never_a_crash(path, where):
    text = path.read_text()
    first_op = text.find("], Operations,")
    marks = [i for i in (text.rfind("\n", 0, first_op) + 1, text.find("Run finished")) if i > 0]
    cut = min(marks) if where == "before the summary" and marks else len(text) // 3
    if path.name.startswith("ycsb-0.1-") and where == "a third in":
        cut = first_op  # its summary comes first, the buckets fill the rest
    s = parse_ycsb(text[:cut]).summary
    assert s["status"] == "error"
    assert "truncated" in s["error"] or "not YCSB" in s["error"]
    assert s["throughput_ops_s"] is None


# -- tibench parse ycsb -------------------------------------------------------------------------
def _tibench(*args):
    return tibench(*args, cwd=None)


def test_cli_parse_ycsb_json_one_object_per_file(tmp_path):
    foreign = tmp_path / "foreign.log"
    foreign.write_text("Query OK, 1 row affected\n")
    cut = tmp_path / "cut.log"
    text = (GO / "go-ycsb-run-2020-old-format-with-properties.txt").read_text()
    cut.write_text(text[: text.index("Run finished")])
    files = [
        YCSB / "tibench-ycsb-0.17-run-hdrhistogram-mariadb.txt",
        GO / "go-ycsb-run-2023-new-format-total-kubebench.txt",
        foreign,
        cut,
    ]
    r = _tibench("parse", "ycsb", *map(str, files), "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [x["file"] for x in rows] == [str(f) for f in files]
    keys = {"file", "status", "error", "tool", "runtime_s", "throughput_ops_s", "operations"}
    keys |= {"errors", "latency_ms", "intervals"}
    assert all(keys <= set(x) for x in rows)
    java, go, bad, trunc = rows
    assert java["tool"] == "ycsb" and java["status"] == "ok"
    assert java["operations"]["READ"] == 1873 and java["latency_ms"]["READ"]["p99"] == 7.515
    assert go["tool"] == "go-ycsb" and go["throughput_ops_s"] == 4322.6
    assert "f5npnslk" not in r.stdout  # the password go-ycsb printed back
    assert bad["status"] == "error" and bad["error"] == "not YCSB or go-ycsb output"
    assert trunc["status"] == "error" and "truncated go-ycsb output" in trunc["error"]
    assert trunc["intervals"] == 4


def test_cli_parse_ycsb_table_names_failed_files():
    ok = YCSB / "ycsb-0.1-run-histogram-buckets-hbase.txt"
    frag = YCSB / "ycsb-0.9-run-redis-exceptions-fragment.txt"
    r = _tibench("parse", "ycsb", str(ok), str(frag))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    read = next(line for line in lines if " READ " in line)
    assert read.split()[-5:-3] == ["2465984", "2465984"]  # count and errors: every READ failed
    assert any(line.startswith(f"{frag}: truncated YCSB output") for line in lines)


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_any_prefix_or_binary_noise_parses_to_plain_json(path):
    """Cut anywhere (a log still being written, a copy that stopped) or fed bytes that are not
    text, the parser returns a record that serialises as strict JSON; it never raises."""
    text = path.read_text()
    rng = random.Random(11)
    for cut in sorted(rng.sample(range(len(text)), 25)):
        s = parse_ycsb(text[:cut]).summary
        json.dumps(s, allow_nan=False)
        assert s["status"] in ("ok", "error")
    noise = bytes(rng.randrange(256) for _ in range(4000)).decode("utf-8", errors="replace")
    s = parse_ycsb(noise + text[:200]).summary
    json.dumps(s, allow_nan=False)


# -- go-ycsb v1.0.3, recorded on the embedded server (fixtures/go-ycsb/SOURCES.md) -------------
@pytest.mark.parametrize(
    "text, seconds",
    [
        ("1h2m3.5s", 3723.5),
        ("10m10.498337683s", 610.498337683),
        ("850ms", 0.85),
        ("12.5µs", 12.5e-6),
        ("3us", 3e-6),
        ("40ns", 40e-9),
        ("0s", 0.0),
        ("2m", 120.0),
        ("-1.5s", -1.5),
    ],
)
def test_go_durations_parse_as_go_prints_them(text, seconds):
    assert go_duration_s(text) == pytest.approx(seconds, rel=1e-12)


@pytest.mark.parametrize("text", ["", "1.5", "s", "10 s", "1x", "1h2", "ms5"])
def test_not_a_go_duration_is_none(text):
    assert go_duration_s(text) is None


def test_a_run_of_minutes_parses_its_duration():
    """A 'Run finished' of Go's minute form (a 10-minute run) is read, not taken as truncated."""
    text = (GO / "go-ycsb-v1.0.3-run-timed-sigint.txt").read_text()
    longer = text.replace("Run finished, takes 4.988724464s", "Run finished, takes 10m10.4983s")
    s = parse_ycsb(longer).summary
    assert s["status"] == "ok" and s["runtime_s"] == pytest.approx(610.4983)


def test_go_ycsb_v1_0_3_timed_run_ended_by_sigint():
    r = parse_ycsb_file(GO / "go-ycsb-v1.0.3-run-timed-sigint.txt")
    s = r.summary
    assert s["status"] == "ok" and s["tool"] == "go-ycsb" and s["phase"] == "run"
    assert s["runtime_s"] == pytest.approx(4.988724464)
    assert s["throughput_ops_s"] == pytest.approx(7659.8)  # the final TOTAL line's OPS
    assert s["operations"] == {"READ": 36268, "READ_ERROR": 1, "UPDATE": 1899, "UPDATE_ERROR": 3}
    assert s["errors"] == {"READ": 1, "UPDATE": 3}
    # TOTAL: every successful operation, from go-ycsb's own histogram (us → ms)
    assert s["overall_latency_ms"] == {
        "avg": 0.518, "min": 0.032, "max": 44.639, "p95": 1.608, "p99": 6.475
    }  # fmt: skip
    assert s["latency_ms"]["UPDATE"]["p99"] == pytest.approx(16.671)
    assert s["properties"]["mysql.password"] == "***"
    # four 1-s interval blocks; each TOTAL interval's count is the difference of cumulatives
    total = r.intervals[r.intervals["operation"] == "TOTAL"]
    assert list(total["t_s"]) == [1.0, 2.0, 3.0, 4.0]
    assert list(total["count"]) == [8962, 16463 - 8962, 24426 - 16463, 32255 - 24426]


def test_go_ycsb_v1_0_3_load_and_count_run():
    load = parse_ycsb_file(GO / "go-ycsb-v1.0.3-load.txt").summary
    assert load["phase"] == "load" and load["runtime_s"] == pytest.approx(0.983459449)
    assert load["operations"] == {"INSERT": 1000} and load["overall_latency_ms"]["p99"] == 16.279
    run = parse_ycsb_file(GO / "go-ycsb-v1.0.3-run-count.txt").summary
    assert run["runtime_s"] == pytest.approx(0.299787297)
    assert run["operations"]["READ"] + run["operations"]["UPDATE"] == 2000


def test_the_java_ycsb_has_no_overall_line():
    s = parse_ycsb_file(sorted(YCSB.glob("*.txt"))[0]).summary
    assert s["overall_latency_ms"] is None


def test_calls_cut_short_by_the_interrupt_are_counted_apart():
    """With silence=false go-ycsb prints each failed call's error: the 8 calls in flight at the
    deadline's SIGINT (one per thread) say 'context canceled', and are exactly its _ERROR counts."""
    s = parse_ycsb_file(GO / "go-ycsb-v1.0.3-run-timed-sigint-silence-false.txt").summary
    assert s["status"] == "ok" and s["cancelled"] == 8
    assert s["errors"] == {"READ": 3, "UPDATE": 5} and s["exceptions"] == []
    assert s["runtime_s"] == pytest.approx(2.98656659)


def test_a_go_ycsb_error_other_than_the_cancel_is_kept_as_an_exception():
    text = (GO / "go-ycsb-v1.0.3-run-timed-sigint-silence-false.txt").read_text()
    err = "operation err: Error 1213 (40001): Deadlock found when trying to get lock"
    s = parse_ycsb(text.replace("Got signal [interrupt] to exit.", f"{err}\n{err}", 1)).summary
    assert s["cancelled"] == 8 and s["exceptions"] == [err.removeprefix("operation err: ")]

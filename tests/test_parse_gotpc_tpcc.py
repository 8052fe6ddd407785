"""`parse_tpcc_output` on every go-tpc TPC-C fixture (real outputs, see fixtures/go-tpc-tpcc)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import tibench

from tibenchlib.parse.gotpc import (
    TPCC_COLUMNS,
    TPCC_TRANSACTIONS,
    parse_tpcc_output,
    parse_tpch_output,
    tpcc_series,
)

FIXTURES = Path(__file__).parent / "fixtures" / "go-tpc-tpcc"
X86 = "go-tpc-tpcc-run-x86-with-err-lines.txt"
RISCV = "go-tpc-tpcc-run-riscv-maxprocs-line.txt"
TIUP = "tiup-bench-tpcc-2021-blog-summary-int-tpmc-only.txt"
NO_PREFIX = "go-tpc-tpcc-2020-pr12-no-prefix-95th.txt"
CURRENT_ONLY = "go-tpc-tpcc-2020-current-lines-only-int.txt"


def parse(name: str):
    return parse_tpcc_output((FIXTURES / name).read_text(), file=name)


def test_every_fixture_parses_and_every_transaction_line_is_read():
    files = sorted(FIXTURES.glob("*.txt"))
    assert len(files) == 7
    for f in files:
        text = f.read_text()
        r = parse_tpcc_output(text, file=f.name)
        expected = sum(" - Takes(s): " in line for line in text.splitlines())
        assert len(r.lines) == expected, f.name
        assert list(r.lines.columns) == TPCC_COLUMNS
        assert set(r.lines["transaction"]) <= set(TPCC_TRANSACTIONS), f.name
        json.dumps(r.summary)  # JSON-serialisable as it is
        # a block never holds one transaction type twice
        dup = r.lines.duplicated(["section", "block", "transaction", "status"])
        assert not dup.any(), f.name


def test_newest_format_with_err_rows_and_tpmc_line():
    r = parse(X86)
    s = r.summary
    assert (s["status"], s["error"], s["finished"]) == ("ok", None, True)
    assert (s["tpmc"], s["tpm_total"], s["efficiency_pct"]) == (1577.2, 3507.9, 3066.2)
    assert s["tpmc_source"] == s["tpm_total_source"] == "printed"
    assert s["errors"] == {
        "DELIVERY": 0,
        "NEW_ORDER": 4,
        "ORDER_STATUS": 0,
        "PAYMENT": 5,
        "STOCK_LEVEL": 0,
    }
    assert s["transactions"]["NEW_ORDER"] == 15770
    assert s["latency_ms"]["PAYMENT"] == {
        "avg": 225.7,
        "p50": 184.5,
        "p90": 469.8,
        "p95": 570.4,
        "p99": 771.8,
        "p99_9": 1073.7,
        "max": 1610.6,
    }
    assert s["runtime_s"] == 599.9
    # 10-minute run, a [Current] block every 10 s
    assert s["intervals"] == 59
    err = r.lines[(r.lines.status == "error") & (r.lines.section == "summary")]
    assert sorted(err["transaction"]) == ["NEW_ORDER", "PAYMENT"]


def test_printed_tpmc_is_new_order_tpm_and_tpm_total_the_sum_of_ok_lines():
    """The fallbacks used for outputs without a tpmC line reproduce go-tpc's printed figures."""
    for name in (X86, RISCV):
        r = parse(name)
        final = r.lines[(r.lines.section == "summary") & (r.lines.status == "ok")]
        assert final.set_index("transaction").at["NEW_ORDER", "tpm"] == r.summary["tpmc"]
        assert final["tpm"].sum() == pytest.approx(r.summary["tpm_total"], abs=0.2)


def test_automaxprocs_first_line_is_ignored():
    r = parse(RISCV)
    assert r.lines["line"].min() == 2
    assert (r.summary["tpmc"], r.summary["efficiency_pct"]) == (4398.2, 68.4)
    # efficiency = tpmC / (12.86 tpmC per warehouse × 500 warehouses)
    assert r.summary["efficiency_pct"] == pytest.approx(4398.2 / (12.86 * 500) * 100, abs=0.05)


def test_2021_tpmc_only_line_and_every_err_row():
    s = parse(TIUP).summary
    assert (s["tpmc"], s["tpmc_source"], s["efficiency_pct"]) == (33453.0, "printed", None)
    assert s["tpm_total_source"] == "sum_tpm"
    assert s["tpm_total"] == pytest.approx(2956.3 + 33453.0 + 2969.3 + 31903.7 + 2980.8)
    assert sum(s["errors"].values()) == 133 + 319 + 1 + 201 + 3
    assert s["latency_ms"]["NEW_ORDER"]["p95"] is None  # this generation printed 90th, not 95th
    assert s["latency_ms"]["NEW_ORDER"]["p90"] == 1500.0
    assert s["intervals"] == 0


def test_oldest_no_prefix_lines_are_the_final_figures():
    r = parse(NO_PREFIX)
    s = r.summary
    assert s["status"] == "ok" and s["layout"] == "no-prefix"
    assert (s["tpmc"], s["tpmc_source"]) == (9791.1, "new_order_tpm")
    assert s["latency_ms"]["DELIVERY"]["p95"] == 128.0
    assert s["latency_ms"]["DELIVERY"]["p90"] is None
    assert set(r.lines["section"]) == {"cumulative"}


def test_current_lines_only_is_a_truncated_run_with_its_series():
    r = parse(CURRENT_ONLY)
    assert (r.summary["status"], r.summary["error"]) == ("failed", "truncated: no summary")
    assert r.summary["tpmc"] is None
    series = tpcc_series(r.lines)
    assert len(series) == r.summary["intervals"] > 1
    assert series["t_s"].is_monotonic_increasing
    first = r.lines[(r.lines.block == 0) & (r.lines.transaction == "NEW_ORDER")]
    assert series.loc[0, "tpmc"] == first["tpm"].item() == 22.7
    # an interval without New-Order has tpmC 0, not a gap
    no_no = set(series.block) - set(r.lines.loc[r.lines.transaction == "NEW_ORDER", "block"])
    assert all(series.set_index("block").loc[list(no_no), "tpmc"] == 0)


def test_series_sums_ok_lines_per_interval():
    r = parse(X86)
    series = tpcc_series(r.lines)
    cur = r.lines[(r.lines.section == "current") & (r.lines.block == 3)]
    row = series.set_index("block").loc[3]
    assert row["tpm_total"] == pytest.approx(cur.loc[cur.status == "ok", "tpm"].sum())
    assert row["tpmc"] == cur.loc[cur.transaction == "NEW_ORDER", "tpm"].item()
    assert (
        series["errors"].sum()
        == r.lines.loc[(r.lines.section == "current") & (r.lines.status == "error"), "count"].sum()
    )


@pytest.mark.parametrize(
    "text",
    ["", "Finished\n", "random text\nno numbers here\n", "[Current] NEW_ORDER - Takes(s): 1.0"],
)
def test_foreign_or_cut_text_is_a_failed_record(text):
    s = parse_tpcc_output(text).summary
    assert s["status"] == "failed"
    assert s["error"] in ("no go-tpc TPC-C lines in the output", "truncated: no summary")


def test_tpch_output_is_not_tpcc_and_the_other_way_round():
    assert parse_tpcc_output("[Summary] Q1: 7.62s\n").summary["status"] == "failed"
    assert parse_tpch_output((FIXTURES / X86).read_text()).empty


def test_cli_parse_tpcc_json_per_file_status(tmp_path):
    bad = tmp_path / "foreign.log"
    bad.write_text("not go-tpc\n")
    files = [str(FIXTURES / X86), str(FIXTURES / CURRENT_ONLY), str(bad), str(tmp_path / "gone")]
    r = tibench("parse", "tpcc", *files, "--json", cwd=None)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [x["status"] for x in rows] == ["ok", "failed", "failed", "unreadable"]
    assert rows[0]["tpmc"] == 1577.2 and rows[0]["file"] == files[0]
    assert rows[2]["error"] == "no go-tpc TPC-C lines in the output"
    assert "no such file" in r.stderr


# -- go-tpc v1.0.7, recorded on the embedded server (fixtures/go-tpc-tpcc/SOURCES.md) ----------
V107 = "go-tpc-v1.0.7-tpcc-run-10s-interval1s.txt"
V107_WAIT = "go-tpc-v1.0.7-tpcc-run-wait-10s-interval1s.txt"


def test_go_tpc_v1_0_7_run_and_its_per_second_series():
    from tibenchlib.tpcc.phase import series_of

    r = parse_tpcc_output((FIXTURES / V107).read_text(), V107)
    s = r.summary
    assert s["status"] == "ok" and s["finished"] and s["tpmc"] == 11618.9
    assert s["efficiency_pct"] == pytest.approx(90348.9) and s["intervals"] == 10
    assert s["errors"]["NEW_ORDER"] == 3 and s["transactions"]["NEW_ORDER"] == 1933
    iv = series_of(r, 4)
    assert list(iv["t"]) == [float(t) for t in range(1, 11)] and (iv["threads"] == 4).all()
    # the first block's TPM (NEW_ORDER, ORDER_STATUS, PAYMENT, STOCK_LEVEL, DELIVERY) ÷ 60
    first = r.lines[(r.lines["section"] == "current") & (r.lines["block"] == 0)]
    assert iv["tps"].iloc[0] == pytest.approx(first["tpm"].sum() / 60)
    # per-second rates average to the summary's: the committed total over the run's 10 s
    assert iv["tps"].mean() == pytest.approx(s["tpm_total"] / 60, rel=0.02)


def test_go_tpc_v1_0_7_wait_run_keying_lines_are_not_transactions():
    r = parse_tpcc_output((FIXTURES / V107_WAIT).read_text(), V107_WAIT)
    s = r.summary
    assert s["transactions"] == {"PAYMENT": 1} and s["tpmc"] is None
    assert not r.lines["transaction"].str.contains("TIME").any()

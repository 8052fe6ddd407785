"""`parse_tpch_output` on every go-tpc TPC-H fixture (real outputs, see fixtures/go-tpc-tpch)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tibenchlib.parse.gotpc import parse_tpch_output, tpch_summary

FIXTURES = Path(__file__).parent / "fixtures" / "go-tpc-tpch"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_every_fixture_parses():
    files = sorted(FIXTURES.glob("*.txt"))
    assert len(files) == 2
    for f in files:
        df = parse_tpch_output(f.read_text())
        assert len(df) > 0
        assert df["seconds"].gt(0).all()
        assert df["query"].between(1, 22).all()


def test_current_then_summary():
    df = parse_tpch_output(read("go-tpc-tpch-2020-pr43-current-and-summary.txt"))
    cur = df[df.section == "current"]
    assert cur["name"].tolist() == [f"Q{i}" for i in range(1, 9)]
    assert cur.iloc[4].seconds == 24.59 and (cur.block == 0).all()
    s = tpch_summary(df)
    assert s["query"].tolist() == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
    assert s.set_index("query").seconds[9] == 18.08
    assert df.attrs == {"finished": 1, "signal": None}
    assert (df.status == "ok").all()


def test_summary_after_signal_holds_21_queries():
    df = parse_tpch_output(read("go-tpc-tpch-2020-summary-22q-got-signal.txt"))
    assert df.attrs["signal"] == "terminated" and df.attrs["finished"] == 1
    s = tpch_summary(df)
    assert len(s) == 21 and 9 not in s["query"].tolist()  # the post stops before Q9
    assert s.set_index("query").seconds.to_dict()[18] == 16.20
    assert s.seconds.sum() == pytest.approx(99.38)


def test_err_lines_and_noise():
    # go-tpc measures failed executions under '<name>_ERR' (pkg/measurement/measure.go).
    text = "Server version: 8.0.11-TiDB-v7.5.0\n[Summary] Q5: 6.10s\n[Summary] Q5_ERR: 0.02s\n"
    df = parse_tpch_output(text)
    assert df[["name", "status", "seconds"]].values.tolist() == [
        ["Q5", "ok", 6.10],
        ["Q5", "error", 0.02],
    ]


def test_two_runs_make_two_summary_blocks():
    one = read("go-tpc-tpch-2020-pr43-current-and-summary.txt")
    df = parse_tpch_output(one + one)
    assert sorted(df[df.section == "summary"].block.unique()) == [1, 3]
    assert len(tpch_summary(df)) == 12


def test_empty_input():
    df = parse_tpch_output("")
    assert df.empty and list(df.columns)[:3] == ["section", "block", "query"]
    assert tpch_summary(df).empty

"""The TPC-C-like sysbench driver, its runner and the consistency conditions.

The slow tests load and run the real Lua driver with the real sysbench on the session's
embedded MariaDB, in a database of their own (``tpcc``: TPC-H has an ``orders`` table too).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import sqlalchemy as sa

from tibenchlib.db import ConnInfo
from tibenchlib.parse.sysbench import parse_sysbench_file
from tibenchlib.tools import Outcome, display_command
from tibenchlib.tpcc import (
    CONDITIONS,
    SCRIPT,
    Scale,
    check_consistency,
    cleanup_sysbench_tpcc,
    gotpc_command,
    parse_driver_counts,
    prepare_sysbench_tpcc,
    run_sysbench_tpcc,
    sysbench_tpcc_command,
)
from tibenchlib.tpcc.runner import _run_summary, parse_driver_latency

SYSBENCH_LOG = Path(__file__).parent / "fixtures" / "sysbench" / "mariadb"
CONN = ConnInfo("127.0.0.1", 3306, "root", "tpcc", password="s3cret-pw")


@pytest.mark.parametrize(
    ("field", "value"), [("warehouses", 0), ("items", 10), ("customers", 2.5), ("warehouses", True)]
)
def test_scale_refuses_bad_values_naming_the_field(field, value):
    with pytest.raises(ValueError, match=f"tpcc scale: {field} must be an integer"):
        Scale(**{field: value})


def test_scale_defaults_are_the_specification():
    assert Scale() == Scale(warehouses=1, items=100_000, customers=3_000)


def test_sysbench_command_has_the_scale_and_no_password():
    cmd = sysbench_tpcc_command(
        CONN, "run", Scale(2, 5000, 300), threads=4, time_s=30, config_file="/p/x.cfg"
    )
    assert cmd[:2] == ["sysbench", str(SCRIPT)] and cmd[-1] == "run"
    for flag in ("--warehouses=2", "--items=5000", "--customers=300", "--threads=4"):
        assert flag in cmd
    assert {"--time=30", "--report-interval=1", "--histogram=on", "--percentile=95"} <= set(cmd)
    assert not any("s3cret" in a for a in cmd)
    assert "<0600 credentials file>" in display_command(cmd)
    prep = sysbench_tpcc_command(CONN, "prepare", Scale())
    assert not any(a.startswith(("--time", "--histogram")) for a in prep)
    with pytest.raises(ValueError, match="prepare, run or cleanup"):
        sysbench_tpcc_command(CONN, "load", Scale())


def test_lua_script_files_ship_with_the_package():
    assert SCRIPT.is_file() and (SCRIPT.parent / "tpcc_common.lua").is_file()
    text = SCRIPT.read_text() + (SCRIPT.parent / "tpcc_common.lua").read_text()
    assert "NOT an audited TPC-C" in text
    # the standard mix, and the New-Order rollback on an unused item
    assert "r <= 45" in text and "r <= 88" in text and "ITEMS + 1" in text


def test_gotpc_command_as_report_001_runs_it():
    cmd = gotpc_command(CONN, "run", warehouses=8, threads=8, time_s=60, wait=True)
    assert cmd[:2] == ["go-tpc", "tpcc"] and cmd.index("--warehouses") < cmd.index("run")
    assert cmd.index("run") < cmd.index("--wait")  # go-tpc v1.0.7 refuses --wait before run
    assert cmd[cmd.index("--warehouses") + 1] == "8" and cmd[cmd.index("-T") + 1] == "8"
    assert cmd[cmd.index("--time") + 1] == "60s" and "--wait" in cmd
    assert "s3cret-pw" not in cmd
    tiup = gotpc_command(CONN, "prepare", warehouses=8, tool=("tiup", "bench"))
    assert tiup[:3] == ["tiup", "bench", "tpcc"] and "--time" not in tiup
    with pytest.raises(ValueError, match="prepare, run, check or cleanup"):
        gotpc_command(CONN, "load", warehouses=1)


def test_driver_counts_are_summed_over_threads():
    text = (
        "tpcc: thread=0 new_order=10 new_order_rollback=1 payment=9 order_status=1 "
        "delivery=2 stock_level=0\nnoise\n"
        "tpcc: thread=1 new_order=5 new_order_rollback=0 payment=6 order_status=0 "
        "delivery=1 stock_level=3\n"
    )
    c = parse_driver_counts(text)
    assert c == {
        "new_order": 15,
        "new_order_rollback": 1,
        "payment": 15,
        "order_status": 1,
        "delivery": 3,
        "stock_level": 3,
        "threads": 2,
    }
    assert parse_driver_counts("sysbench 1.0.20\nFATAL: killed\n") is None


def test_a_thread_line_glued_to_another_threads_line_is_still_counted():
    """Real output of two threads ending together: thread 1's counters landed at the end of
    thread 0's latency line (tests/fixtures/tpcc/SOURCES.md). Both threads' New-Orders (6 + 5,
    the 11 the table gained from this client) and thread 0's payment latencies count."""
    text = (
        Path(__file__).parent / "fixtures" / "tpcc" / "interleaved_thread_lines.c0.log"
    ).read_text()
    assert "407:1tpcc: thread=1" in text  # the glued line, as recorded
    c = parse_driver_counts(text)
    assert c["new_order"] == 11 and c["threads"] == 2 and c["payment"] == 6
    lat = parse_driver_latency(text)
    assert lat["payment"]["n"] == 6 and int(lat["payment"]["histogram"]["count"].sum()) == 6


def _outcome(rc=0):
    return Outcome(rc, Path("x.log"), 0.0, 1.0)


def test_summary_fails_when_the_two_new_order_counts_disagree():
    sb = parse_sysbench_file(SYSBENCH_LOG / "point_select-t2-ri1-hist.txt")
    counts = {"new_order": 100, "new_order_rollback": 1, "payment": 90, "order_status": 9,
              "delivery": 9, "stock_level": 9, "threads": 2}  # fmt: skip
    ok = _run_summary(sb, counts, 100, _outcome())
    assert ok["status"] == "ok"
    assert ok["tpmc"] == pytest.approx(100 / (sb.summary["total_time_s"] / 60))
    assert ok["tpm_total"] == pytest.approx(217 / (sb.summary["total_time_s"] / 60))
    assert sum(ok["mix_pct"].values()) == pytest.approx(100)
    assert ok["mix_pct"]["new_order"] == pytest.approx(100 * 101 / 218)
    bad = _run_summary(sb, counts, 97, _outcome())
    assert bad["status"] == "failed" and bad["tpmc"] is None
    assert "97 new orders in the table, 100 counted by the driver" in bad["error"]
    none = _run_summary(sb, None, 0, _outcome())
    assert none["error"] == "the driver printed no transaction counts"
    assert _run_summary(sb, counts, 100, _outcome(1))["error"] == "sysbench exited with status 1"


def test_unknown_condition_is_refused():
    with pytest.raises(ValueError, match="no consistency condition 7"):
        check_consistency(sa.create_engine("sqlite://"), [7])
    assert {1, 2, 3, 4} <= set(CONDITIONS)


# -- on the embedded MariaDB ------------------------------------------------------------------
@pytest.fixture(scope="module")
def tpcc_db(mariadb):
    root = mariadb.conninfo()
    with root.engine().begin() as c:
        c.execute(sa.text("DROP DATABASE IF EXISTS tpcc"))
        c.execute(sa.text("CREATE DATABASE tpcc"))
    conn = dataclasses.replace(root, database="tpcc")
    eng = conn.engine()
    yield conn, eng
    eng.dispose()
    with root.engine().begin() as c:
        c.execute(sa.text("DROP DATABASE IF EXISTS tpcc"))


@pytest.mark.slow
def test_prepare_run_check_on_the_embedded_server(tpcc_db, sysbench_bin, tmp_path):
    conn, eng = tpcc_db
    scale = Scale(warehouses=1, items=1000, customers=60)
    prep = prepare_sysbench_tpcc(conn, scale, tmp_path / "prepare.log")
    assert prep.returncode == 0, (tmp_path / "prepare.log").read_text()[-2000:]
    with eng.connect() as c:
        n = {
            t: c.execute(sa.text(f"SELECT COUNT(*) FROM {t}")).scalar_one()
            for t in ("warehouse", "district", "customer", "history", "orders", "new_order",
                      "item", "stock")
        }  # fmt: skip
    assert n == {"warehouse": 1, "district": 10, "customer": 600, "history": 600,
                 "orders": 600, "new_order": 180, "item": 1000, "stock": 1000}  # fmt: skip
    assert check_consistency(eng)["ok"].all()

    run = run_sysbench_tpcc(
        conn, scale, tmp_path / "run.log", threads=2, time_s=5, engine=eng, private_dir=tmp_path
    )
    s = run.summary
    log = (tmp_path / "run.log").read_text()
    assert s["status"] == "ok", (s["error"], log[-2000:])
    assert s["tpmc"] > 0 and s["new_orders"] > 0
    assert s["tpmc"] == pytest.approx(s["new_orders"] / (s["runtime_s"] / 60))
    # every sysbench event is one transaction: committed ones plus New-Order rollbacks
    assert (
        sum(s["transactions"].values()) + s["new_order_rollbacks"] == run.sysbench.summary["events"]
    )
    assert 30 < s["mix_pct"]["new_order"] < 60 and 28 < s["mix_pct"]["payment"] < 58
    assert s["intervals"] >= 4 and run.sysbench.summary["histogram_count"] > 0
    assert "s3cret" not in log and conn.password not in log
    assert not list(tmp_path.glob("sysbench-*.cfg"))  # the credentials file is gone

    checked = check_consistency(eng)
    assert checked["ok"].all(), checked[~checked["ok"]].to_dict("records")

    # a broken invariant is found, with the warehouse it concerns
    with eng.begin() as c:
        c.execute(sa.text("UPDATE warehouse SET w_ytd = w_ytd + 1 WHERE w_id = 1"))
    broken = check_consistency(eng, [1, 8]).set_index("condition")
    assert not broken["ok"].any()
    assert broken.at[1, "examples"][0]["w_id"] == 1

    out = cleanup_sysbench_tpcc(conn, tmp_path / "cleanup.log")
    assert out.returncode == 0
    with eng.connect() as c:
        left = c.execute(sa.text("SHOW TABLES")).fetchall()
    assert left == []


def test_gotpc_missing_is_an_outcome_not_a_crash(tmp_path, monkeypatch):
    from tibenchlib.tpcc import run_gotpc

    monkeypatch.setenv("PATH", str(tmp_path))  # neither go-tpc nor tiup on it
    monkeypatch.setenv("TIBENCH_TOOLS_CACHE", str(tmp_path))  # nor a build of tibench's own
    out, parsed = run_gotpc(CONN, "run", tmp_path / "logs" / "gotpc.log", warehouses=1)
    assert out.missing == "go-tpc" and parsed is None
    assert (tmp_path / "logs" / "gotpc.log").read_text().startswith("FATAL: go-tpc is not")

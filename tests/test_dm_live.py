"""The DM building blocks against two real private MariaDBs: sysbench fills the source,
mydumper dumps it, myloader loads the target, checksums verify; MariaDB replication stands in
for the sync unit."""

from __future__ import annotations

import shutil
import threading
import time

import pytest

from tibenchlib.db import secret_config_file
from tibenchlib.dm import dump as dumpmod
from tibenchlib.dm.dump import DumpSettings, dump, dump_files
from tibenchlib.dm.load import LoadSettings, load, wait_statements_ended
from tibenchlib.dm.servers import source_server, target_server
from tibenchlib.dm.verify import verify
from tibenchlib.sysbench.command import sysbench_command
from tibenchlib.tools import execute

pytestmark = pytest.mark.slow

TABLES, TABLE_SIZE = 2, 5000


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    for tool in ("mydumper", "myloader", "sysbench"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed (make setup installs it)")
    root = tmp_path_factory.mktemp("dm")
    src = source_server(name="dm-source", root=root / "source").ensure()
    tgt = target_server(root=root / "target").ensure()
    si = src.conninfo()
    priv = root / "private"
    priv.mkdir(mode=0o700)
    with secret_config_file(si, priv) as cfg:
        cmd = sysbench_command(
            "oltp_insert",
            si,
            action="prepare",
            tables=TABLES,
            table_size=TABLE_SIZE,
            threads=2,
            config_file=cfg,
        )
        out = execute(cmd, root / "prepare.log")
    assert out.returncode == 0, (root / "prepare.log").read_text()
    yield src, tgt, root, priv
    src.stop()
    tgt.stop()


def test_dump_load_verify(pair):
    src, tgt, root, priv = pair
    si, ti = src.conninfo(), tgt.conninfo()
    d = dump(
        si,
        root / "dump",
        DumpSettings(threads=2, rows=1000, statement_size=20_000),
        log_path=root / "raw" / "mydumper.log",
        private_dir=priv,
    )
    assert d.ok, d.outcome.log_path.read_text()
    # every row of the source is in the files, in more than one chunk per table (rows on)
    assert d.rows == TABLES * TABLE_SIZE
    assert (d.files.groupby("table")["chunk"].nunique() > 1).all()
    # statements of about 20 KB: sysbench rows are ~190 bytes, so ~100 rows per statement
    assert 50 < d.rows_per_statement < 150
    assert d.bytes > 0 and d.mb_s > 0
    assert d.gtid and d.gtid.startswith("0-1-")
    assert "Finished dump" in d.outcome.log_path.read_text()
    # no password in the logged command, nor in the raw log; the option file is gone
    assert si.password not in d.command and si.password not in d.outcome.log_path.read_text()
    assert "--defaults-file=<0600 credentials file>" in d.command
    assert not list(priv.iterdir())

    ld = load(
        ti,
        d.directory,
        LoadSettings(threads=2, queries_per_transaction=10),
        log_path=root / "raw" / "myloader.log",
        private_dir=priv,
    )
    assert ld.ok, ld.outcome.log_path.read_text()
    assert ti.password not in ld.command
    lat = ld.latency
    # every INSERT statement of the dump was timed by the target's performance_schema
    assert lat["statements"] == d.statements
    assert lat["latency_estimator"] == "p99"
    assert 0 < lat["latency_mean_ms"] <= lat["latency_max_ms"]
    assert lat["latency_p99_ms"] <= lat["latency_max_ms"]

    se, te = si.engine(), ti.engine()
    try:
        v = verify(se, te, "sbtest")
        assert v.ok, v.message
        assert list(v.tables["table"]) == ["sbtest1", "sbtest2"]
        # a changed row on the target is caught, and named
        with te.begin() as c:
            c.exec_driver_sql("UPDATE sbtest.sbtest2 SET k = k + 1 WHERE id = 7")
        v = verify(se, te, "sbtest")
        assert not v.ok and "sbtest2 checksum" in v.message and "sbtest1" not in v.message
        with te.begin() as c:
            c.exec_driver_sql("DELETE FROM sbtest.sbtest1 WHERE id = 3")
        v = verify(se, te, "sbtest")
        assert "sbtest1 rows 5000 ≠ 4999" in v.message
    finally:
        se.dispose()
        te.dispose()


def test_the_latency_is_read_once_the_loaders_statements_have_ended(pair):
    """The server answers a statement before it counts it in performance_schema's digests
    (seen: 103 INSERTs counted of the dump's 104 once myloader had exited), so the load waits
    until no other connection of its user is inside a statement: here one in SLEEP(1)."""
    _, tgt, _, _ = pair
    user = tgt.conninfo().user
    eng, other = tgt.conninfo().engine(), tgt.conninfo().engine()

    def sleeping() -> threading.Thread:
        started = threading.Event()

        def busy():
            with other.connect() as c:
                started.set()
                c.exec_driver_sql("SELECT SLEEP(1)")

        t = threading.Thread(target=busy)
        t.start()
        started.wait(5)
        time.sleep(0.2)  # the SELECT is on its way
        return t

    try:
        t = sleeping()
        t0 = time.monotonic()
        assert wait_statements_ended(eng, user, timeout_s=5)
        assert time.monotonic() - t0 > 0.4  # it waited for the SLEEP to end
        t.join()
        t = sleeping()
        assert not wait_statements_ended(eng, user, timeout_s=0.1)  # still inside it
        t.join()
        assert wait_statements_ended(eng, user, timeout_s=0)  # none left: at once
    finally:
        eng.dispose()
        other.dispose()


def test_dump_without_rows_one_chunk_per_table(pair):
    src, _, root, priv = pair
    d = dump(
        src.conninfo(),
        root / "dump-norows",
        DumpSettings(threads=4, rows=None, statement_size=1_000_000),
        log_path=root / "raw" / "mydumper-norows.log",
        private_dir=priv,
    )
    assert d.ok
    assert len(d.files) == TABLES and d.rows == TABLES * TABLE_SIZE
    assert d.rows_per_statement > 1000  # 1 MB statements hold thousands of sysbench rows
    assert dump_files(d.directory).equals(d.files)


def test_failed_dump_is_an_outcome(pair, tmp_path):
    src, _, root, priv = pair
    si = src.conninfo()
    wrong = type(si)(si.host, si.port, si.user, si.database, password="not-the-password")
    d = dump(
        wrong,
        tmp_path / "dump",
        DumpSettings(threads=1),
        log_path=tmp_path / "mydumper.log",
        private_dir=priv,
    )
    assert not d.ok and d.rows == 0
    assert "Access denied" in d.outcome.log_path.read_text()


def test_missing_tool(pair, tmp_path, monkeypatch):
    src, _, _, priv = pair
    monkeypatch.setenv("PATH", str(tmp_path))
    d = dumpmod.dump(
        src.conninfo(),
        tmp_path / "dump",
        DumpSettings(),
        log_path=tmp_path / "x.log",
        private_dir=priv,
    )
    assert d.outcome.missing == "mydumper" and not d.ok
    assert "mydumper is not installed" in (tmp_path / "x.log").read_text()


def test_sync_apply_throughput_lag_and_error(pair):
    from tibenchlib.dm import sync

    src, tgt, root, priv = pair
    si, ti = src.conninfo(), tgt.conninfo()
    d = dump(
        si,
        root / "dump-sync",
        DumpSettings(threads=2),
        log_path=root / "raw" / "mydumper-sync.log",
        private_dir=priv,
    )
    assert d.ok and d.gtid
    assert load(
        ti, d.directory, LoadSettings(threads=2), log_path=root / "raw" / "l.log", private_dir=priv
    ).ok
    se, te = si.engine(), ti.engine()
    try:
        sync.start_replica(te, si, d.gtid, sync.SyncSettings(workers=4))
        st = sync.replica_status(te)
        assert st["Using_Gtid"] == "Slave_Pos"
        assert si.password not in str(st)

        def writer(workload, name, seconds=3):
            return sync.sysbench_writer(
                si,
                workload,
                tables=TABLES,
                table_size=TABLE_SIZE,
                threads=2,
                duration_s=seconds,
                log_path=root / "raw" / f"{name}.log",
                private_dir=priv,
            )

        results = {}
        for wl in ("oltp_insert", "oltp_write_only"):
            r = sync.apply_throughput(
                se,
                te,
                writer(wl, f"sync-{wl}"),
                workload=wl,
                settings=sync.SyncSettings(workers=4, mode="optimistic"),
            )
            assert r.ok, r.error
            assert r.transactions > 100 and r.catchup_s > 0
            results[wl] = r
            v = verify(se, te, "sbtest")
            assert v.ok, v.message
        # oltp_insert writes one row per transaction; write_only's 4 writes (2 updates, a delete
        # and an insert) per transaction
        ins, wo = results["oltp_insert"], results["oltp_write_only"]
        assert ins.row_ops == pytest.approx(ins.transactions, rel=0.05)
        assert wo.row_ops == pytest.approx(4 * wo.transactions, rel=0.1)
        assert ins.record()["events_s"] == ins.transactions / ins.catchup_s

        trace, out = sync.lag_trace(se, te, writer("oltp_insert", "lag", 2), interval_s=0.5)
        assert out.returncode == 0
        assert trace["source_seq"].is_monotonic_increasing
        assert trace["lag_transactions"].iloc[-1] == 0
        assert (trace["lag_transactions"] >= 0).all()
        assert verify(se, te, "sbtest").ok

        # a replica error: the target lost a table the source writes to
        admin = tgt._root_connect(first=False)  # sql_log_bin is the server admin's
        with admin.cursor() as c:
            c.execute("SET SESSION sql_log_bin = 0")
            c.execute("DROP TABLE sbtest.sbtest2")
        admin.close()
        r = sync.apply_throughput(
            se,
            te,
            writer("oltp_insert", "sync-err", 1),
            workload="oltp_insert",
            settings=sync.SyncSettings(workers=2),
        )
        assert not r.ok
        assert r.error.startswith("replica SQL thread stopped with error 1146")
        assert "\n" not in r.error
    finally:
        with te.connect() as c:
            c.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("STOP SLAVE")
        se.dispose()
        te.dispose()


def test_migrate_once_record(pair):
    from tibenchlib.dm.migrate import migrate_once

    src, tgt, root, priv = pair
    run = migrate_once(
        src,
        tgt,
        DumpSettings(threads=2, rows=2000),
        LoadSettings(threads=2),
        run_dir=root / "raw" / "dm" / "run-1",
        private_dir=priv,
        sample_interval=0.1,
    )
    r = run.record
    assert r["status"] == "ok" and r["verified"], r["message"]
    # the source as it is now (the sync test may have added rows before this one)
    assert r["dump_rows"] == run.verification["source_rows"].sum()
    assert r["dump_rows"] >= TABLES * TABLE_SIZE and r["dump_mb_s"] > 0 and r["load_mb_s"] > 0
    assert r["load_latency_estimator"] == "p99"
    assert {"source", "target"} <= set(run.samples["source"])
    assert (root / "raw" / "dm" / "run-1" / "myloader.log").exists()
    assert not (root / "raw" / "dm" / "run-1" / "dump").exists()  # removed once verified
    assert run.verification["ok"].all()


def test_migrate_once_missing_tool_is_a_failed_run(pair, tmp_path, monkeypatch):
    from tibenchlib.dm.migrate import migrate_once

    src, tgt, _, priv = pair
    monkeypatch.setenv("PATH", str(tmp_path))
    run = migrate_once(
        src, tgt, DumpSettings(), LoadSettings(), run_dir=tmp_path / "run", private_dir=priv
    )
    assert run.record["status"] == "dump failed" and not run.record["verified"]
    assert run.record["message"].startswith("mydumper is not installed")

"""Pure parts of the DM building blocks: settings, commands, dump-file counting, GTIDs."""

from __future__ import annotations

import stat

import pandas as pd
import pytest

from tibenchlib.db import ConnInfo
from tibenchlib.dm import options, sync
from tibenchlib.dm.dump import (
    DumpResult,
    DumpSettings,
    count_statements,
    metadata_gtid,
    mydumper_command,
    shown,
)
from tibenchlib.dm.load import LoadResult, LoadSettings, myloader_command
from tibenchlib.tools import Outcome

CONN = ConnInfo("127.0.0.1", 3306, "tibench", "sbtest", password='p#ss;w"d')


@pytest.mark.parametrize(
    "kw,field",
    [({"threads": 0}, "threads"), ({"rows": 0}, "rows"), ({"statement_size": 999}, "1 KB")],
)
def test_bad_dump_settings_name_the_field(kw, field):
    with pytest.raises(ValueError, match=field):
        DumpSettings(**kw)


def test_bad_load_and_sync_settings():
    with pytest.raises(ValueError, match="queries_per_transaction"):
        LoadSettings(queries_per_transaction=0)
    with pytest.raises(ValueError, match="slave_parallel_mode"):
        sync.SyncSettings(mode="fast")


def test_commands_have_no_password():
    cmd = mydumper_command(CONN, "/d", DumpSettings(8, 1000, 200_000), defaults_file="/p/c.cnf")
    assert cmd[1] == "--defaults-file=/p/c.cnf"
    assert "--rows=1000" in cmd and "--statement-size=200000" in cmd and "--threads=8" in cmd
    assert "--rows" not in " ".join(mydumper_command(CONN, "/d", DumpSettings()))
    lcmd = myloader_command(CONN, "/d", LoadSettings(16, 10), defaults_file="/p/c.cnf")
    assert "--threads=16" in lcmd and "--queries-per-transaction=10" in lcmd
    for c in (cmd, lcmd):
        assert CONN.password not in " ".join(c)
        assert "/p/c.cnf" not in shown(c)


def test_option_file_private_quoted_and_removed(tmp_path):
    with options.client_defaults_file(CONN, tmp_path) as p:
        assert stat.S_IMODE(p.stat().st_mode) == 0o600
        assert p.read_text() == '[client]\npassword="p#ss;w\\"d"\n'
    assert not p.exists()
    (tmp_path / "client-x.cnf").write_text("left by a kill")
    assert options.remove_stale(tmp_path) == 1


def test_count_statements_on_mydumper_layout():
    text = (
        b"/*!40101 SET NAMES binary*/;\n"
        b'INSERT INTO `sbtest1` VALUES\n(1,2,"a","b"),\n(2,3,"c","d");\n'
        b'INSERT INTO `sbtest1` VALUES\n(3,4,"e","f");\n'
    )
    assert count_statements(text) == (2, 3)
    # a line break inside a value is written escaped, so it starts no row
    assert count_statements(b'INSERT INTO `t` VALUES\n(1,"x\\n(y");\n') == (1, 1)


def test_metadata_gtid(tmp_path):
    # mydumper 0.10.0's metadata file, as written for the embedded source
    (tmp_path / "metadata").write_text(
        "Started dump at: 2026-11-23 18:15:45\nSHOW MASTER STATUS:\n\tLog: binlog.000001\n"
        "\tPos: 15381826\n\tGTID:0-1-30\n\nFinished dump at: 2026-11-23 18:15:45\n"
    )
    assert metadata_gtid(tmp_path) == "0-1-30"
    (tmp_path / "metadata").write_text("Started dump at: x\nFinished dump at: y\n")
    assert metadata_gtid(tmp_path) is None


def test_gtid_positions():
    assert sync.parse_gtid_pos("0-1-30,1-2-5") == {0: 30, 1: 5}
    assert sync.parse_gtid_pos("") == {}
    assert sync.reached("0-1-30", "0-1-30") and not sync.reached("0-1-29", "0-1-30")
    assert not sync.reached("0-1-30", "0-1-30,1-2-1")
    assert sync.transactions_between("0-1-30", "0-1-130,1-2-5") == 105
    with pytest.raises(ValueError, match="not a MariaDB GTID"):
        sync.parse_gtid_pos("3E11FA47-71CA-11E1-9E33-C80AA9429562:23")


def test_replica_error_one_line():
    st = {"Last_SQL_Errno": 1146, "Last_SQL_Error": "Error executing row event:\n 'Table x'"}
    assert sync.replica_error(st) == (
        "replica SQL thread stopped with error 1146: Error executing row event: 'Table x'"
    )
    assert sync.replica_error({"Last_SQL_Error": "", "Last_IO_Error": ""}) is None


def test_dump_and_load_records_share_their_transfer_measures(tmp_path):
    out = Outcome(0, tmp_path / "x.log", 10.0, 14.0)
    files = pd.DataFrame({"rows": [30, 10], "statements": [3, 1], "bytes": [1, 1]})
    d = DumpResult(out, "mydumper", tmp_path, 8_000_000, files, "g1").record()
    loaded = LoadResult(out, "myloader", 4_000_000, {"latency_ms": 2.5}).record()
    assert list(d) == ["unit", "ok", "returncode", "seconds", "bytes", "mb_s", "rows",
                       "statements", "rows_per_statement", "gtid", "command", "log"]  # fmt: skip
    assert (d["unit"], d["mb_s"], d["rows_per_statement"]) == ("dump", 2.0, 10.0)
    assert list(loaded) == ["unit", "ok", "returncode", "seconds", "bytes", "mb_s",
                            "latency_ms", "command", "log"]  # fmt: skip
    assert (loaded["unit"], loaded["mb_s"], loaded["log"]) == ("load", 1.0, str(out.log_path))

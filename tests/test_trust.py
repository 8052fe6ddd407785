"""Trust boundaries of the embedded server, each checked by making the attack or the fault: what
mariadbd's user can plant in the folders it owns, a pid in a state file, the benchmark account's
privileges, passwords in children's environments, and two studies sharing one server."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest
from helpers import run_cli

from tibenchlib import server as srvmod
from tibenchlib.server import EmbeddedServer

as_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="mariadbd runs as another user only when tibench runs as root"
)
needs_mariadb = pytest.mark.skipif(
    not shutil.which("mariadbd") and not os.path.exists("/usr/sbin/mariadbd"),
    reason="mariadbd is not installed (make setup installs it)",
)


def _tibench(*args, data: Path):
    return run_cli(*args, env={"TIBENCH_DATA": str(data)})


def _error_line(r) -> str:
    lines = [x for x in r.stderr.splitlines() if x.startswith("tibench: error:")]
    assert len(lines) == 1, r.stderr
    return lines[0]


def _old_layout(root: Path) -> None:
    """The server folder as older versions left it: all of it owned by mariadbd's user."""
    user = srvmod.service_user()
    root.mkdir(parents=True, exist_ok=True)
    os.chown(root, user.pw_uid, user.pw_gid)
    os.chmod(root, 0o700)


@pytest.fixture
def victims(tmp_path):
    """A root-owned folder and a root-owned 0600 file that mariadbd's user must not get."""
    d = tmp_path / "victim-dir"
    d.mkdir(mode=0o700)
    f = tmp_path / "victim-file"
    f.write_text("root's own\n")
    os.chmod(f, 0o600)
    return d, f


@as_root
def test_planted_links_do_not_hand_root_files_to_mysql(tmp_path, victims):
    vdir, vfile = victims
    data = tmp_path / "data"
    root = data / "server" / "embedded"
    _old_layout(root)
    # what the mysql user can do in a folder it owns
    os.symlink(vdir, root / "tmp")
    os.symlink(vfile, root / "state.json")
    for p in (root / "tmp", root / "state.json"):
        os.lchown(p, srvmod.service_user().pw_uid, srvmod.service_user().pw_gid)
    r = _tibench("server", "start", data=data)
    assert r.returncode == 1, r.stderr
    assert _error_line(r) == (
        f"tibench: error: ServerError: {root / 'tmp'} is not a directory (a link or a file was "
        "put there): remove it and start again"
    )
    assert os.stat(vdir).st_uid == 0 and stat.S_IMODE(os.stat(vdir).st_mode) == 0o700
    assert vfile.read_text() == "root's own\n" and os.stat(vfile).st_uid == 0
    # the folder is root's again, its state and credentials out of mysql's reach
    assert os.lstat(root).st_uid == 0 and stat.S_IMODE(os.lstat(root).st_mode) == 0o711
    assert stat.S_IMODE(os.lstat(root / "private").st_mode) == 0o700
    assert not os.path.lexists(root / "state.json")


@as_root
def test_planted_credentials_link_is_refused(tmp_path, victims):
    _vdir, vfile = victims
    data = tmp_path / "data"
    root = data / "server" / "embedded"
    _old_layout(root)
    os.symlink(vfile, root / "credentials")
    r = _tibench("server", "start", data=data)
    assert r.returncode == 1
    line = _error_line(r)
    assert f"{root / 'credentials'} is not a regular file of yours" in line
    assert "root's own" not in r.stderr + r.stdout
    assert vfile.read_text() == "root's own\n"


@pytest.mark.parametrize("where", ["private", "old layout"])
def test_stop_signals_no_process_but_the_server(tmp_path, where, kill_after):
    """A stale state file after a reboot (pid reused), or one written by mariadbd's user, names
    some other process: ``tibench server stop`` must leave it alone."""
    if where == "old layout" and os.geteuid() != 0:
        pytest.skip("the old layout is mysql-owned only when tibench runs as root")
    victim = kill_after(subprocess.Popen(["sleep", "300"]))
    data = tmp_path / "data"
    root = data / "server" / "embedded"
    state = {"pid": victim.pid, "port": 3306, "locked_down": True, "layout": srvmod.LAYOUT}
    if where == "private":
        (root / "private").mkdir(parents=True, mode=0o700)
        (root / "private" / "state.json").write_text(json.dumps(state))
    else:
        _old_layout(root)
        (root / "state.json").write_text(json.dumps(state))
    r = _tibench("server", "stop", data=data)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == (f"embedded server 'embedded': stopped (datadir {root / 'datadir'})")
    assert victim.poll() is None, "tibench server stop signalled a process that is not mariadbd"


@as_root
@needs_mariadb
@pytest.mark.slow
def test_datadir_of_the_old_layout_still_starts(tmp_path):
    """A server folder laid out by an older version (state, credentials, marker and socket in
    the mysql-owned folder) starts with the same data and password, its secrets moved."""
    s = EmbeddedServer(name="old", root=tmp_path / "srv").ensure()
    pw = s._password()
    with s.conninfo().engine().begin() as c:
        c.exec_driver_sql("CREATE TABLE IF NOT EXISTS keep (x INT)")
    s.stop()
    root, user = s.root, srvmod.service_user()
    shutil.move(s._cred_path, root / "credentials")
    (s.private_dir / "initialized").unlink()
    (s.datadir / "tibench.initialized").write_text("")
    os.chown(s.datadir / "tibench.initialized", user.pw_uid, user.pw_gid)
    os.rmdir(s.private_dir)
    _old_layout(root)
    try:
        again = EmbeddedServer(name="old", root=root).ensure()
        assert again._password() == pw
        assert not os.path.lexists(root / "credentials")
        assert os.stat(again._cred_path).st_uid == 0
        assert os.lstat(root).st_uid == 0
        with again.conninfo().engine().connect() as c:
            sql = "SELECT COUNT(*) FROM information_schema.tables WHERE table_name='keep'"
            assert c.exec_driver_sql(sql).scalar_one() == 1
    finally:
        EmbeddedServer(name="old", root=root).stop()


# -- the benchmark account's privileges --------------------------------------------------------
@needs_mariadb
@pytest.mark.parametrize(
    "sql",
    [
        "SET GLOBAL general_log_file = '/tmp/tibench-owned-by-mysql'",
        "SET GLOBAL innodb_flush_log_at_trx_commit = 2",
        "SELECT 1 INTO OUTFILE '{files}/out.txt'",
        "CREATE USER 'other'@'%' IDENTIFIED BY 'x'",
        "GRANT SELECT ON *.* TO 'tibench'@'localhost'",
        "SHUTDOWN",
        "INSERT INTO mysql.global_priv VALUES ('%', 'other', '{}')",
        "UPDATE mysql.global_priv SET Priv = '{}' WHERE User = 'root'",
        "DROP TABLE mysql.proxies_priv",
    ],
)
def test_benchmark_account_cannot_write_files_or_change_the_server(mariadb, sql):
    import pymysql

    info = mariadb.conninfo()
    c = pymysql.connect(host=info.host, port=info.port, user=info.user, password=info.password)
    try:
        with c.cursor() as cur, pytest.raises(pymysql.err.OperationalError) as e:
            cur.execute(sql.replace("{files}", str(mariadb.files_dir)))
        assert e.value.args[0] in (1044, 1045, 1227, 1142), e.value
    finally:
        c.close()
    assert not os.path.exists("/tmp/tibench-owned-by-mysql")
    assert not (mariadb.files_dir / "out.txt").exists()


@needs_mariadb
def test_benchmark_account_does_what_a_study_needs(mariadb):
    import pymysql

    info = mariadb.conninfo()
    c = pymysql.connect(
        host=info.host, port=info.port, user=info.user, password=info.password, autocommit=True
    )
    try:
        with c.cursor() as cur:
            cur.execute("CREATE DATABASE IF NOT EXISTS trust_w1")
            cur.execute("CREATE TABLE IF NOT EXISTS trust_w1.t (x INT PRIMARY KEY)")
            cur.execute("REPLACE INTO trust_w1.t VALUES (1)")
            cur.execute("FLUSH TABLES WITH READ LOCK")  # mydumper's consistent snapshot
            cur.execute("UNLOCK TABLES")
            cur.execute("SHOW MASTER STATUS")
            cur.execute("SELECT COUNT(*) FROM performance_schema.events_statements_history_long")
            cur.execute("TRUNCATE TABLE performance_schema.events_statements_history_long")
            cur.execute("SELECT COUNT(*) FROM mysql.user")
            cur.execute("DROP DATABASE trust_w1")
    finally:
        c.close()


@needs_mariadb
@pytest.mark.slow
def test_replication_password_is_not_kept_by_performance_schema(tmp_path):
    import sqlalchemy as sa

    from tibenchlib.dm import sync
    from tibenchlib.dm.servers import source_server, target_server

    src = source_server(name="trust-src", root=tmp_path / "src").ensure()
    tgt = target_server(name="trust-tgt", root=tmp_path / "tgt").ensure()
    try:
        te = tgt.conninfo().engine(database="")
        si = src.conninfo()
        # through the benchmark account, with no SUPER: made a replica, workers set
        sync.start_replica(
            te, si, sync.gtid_binlog_pos(si.engine(database="")), sync.SyncSettings()
        )
        sync.set_workers(te, sync.SyncSettings(workers=4))
        with te.connect() as c:
            c.exec_driver_sql("SELECT 'after the change' AS marker")
            texts = []
            for table in (
                "events_statements_history_long",
                "events_statements_history",
                "events_statements_current",
            ):
                texts += (
                    c.exec_driver_sql(f"SELECT SQL_TEXT FROM performance_schema.{table}")
                    .scalars()
                    .all()
                )
            texts += (
                c.exec_driver_sql(
                    "SELECT DIGEST_TEXT FROM performance_schema.events_statements_summary_by_digest"
                )
                .scalars()
                .all()
            )
            assert c.exec_driver_sql("SELECT @@slave_parallel_threads").scalar_one() == 4
        texts = [t for t in texts if t]
        assert not [t for t in texts if si.password in t]
        assert not [t for t in texts if "MASTER_PASSWORD" in t.upper()]
        # recording is back on for the connection the pool hands out again
        assert any("after the change" in t for t in texts)
        deadline = time.monotonic() + 30
        while sync.replica_status(te).get("Slave_IO_Running") != "Yes":
            assert time.monotonic() < deadline, sync.replica_status(te)
            time.sleep(0.2)
        with te.connect() as c:
            c.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("STOP SLAVE")
        te.dispose()
    except sa.exc.DBAPIError:
        raise
    finally:
        tgt.stop()
        src.stop()

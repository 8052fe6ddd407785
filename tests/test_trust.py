"""Trust boundaries of the embedded server, each checked by making the attack or the fault: what
mariadbd's user can plant in the folders it owns, a pid in a state file, the benchmark account's
privileges, passwords in children's environments, and two studies sharing one server."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers import run_cli

from tibenchlib import server as srvmod
from tibenchlib.lock import study_lock
from tibenchlib.server import EmbeddedServer
from tibenchlib.target import SettingsChanged, settings_mismatch

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
    data = tmp_path / ("d" * 60) / "data"  # deep: the socket goes to a folder in /tmp
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
    # the refused start leaves no socket folder in the shared /tmp
    s = srvmod.EmbeddedServer(root=root)
    assert s.socket_dir != s.run_dir and not os.path.lexists(s.socket_dir)


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
    shutil.rmtree(s.private_dir)
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
        assert sum(si.password in t for t in texts) == 0  # (the count: no password shown)
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


# -- one study at a time on an embedded server -------------------------------------------------
_HOLD = """
import sys, time
from tibenchlib.lock import study_lock
from tibenchlib.server import EmbeddedServer
with study_lock(sys.argv[1]), EmbeddedServer(root=sys.argv[2]).lease():
    print("held", flush=True)
    time.sleep(float(sys.argv[3]))
"""


def _hold(study: str, root: Path, seconds: float, data: Path) -> subprocess.Popen:
    """A process that runs ``study`` and holds the server's lease for ``seconds``."""
    p = subprocess.Popen(
        [sys.executable, "-c", _HOLD, study, str(root), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "TIBENCH_DATA": str(data)},
    )
    assert p.stdout.readline().strip() == "held"
    return p


def test_another_study_is_refused_naming_the_holder(tmp_path, kill_after):
    data = tmp_path / "data"
    root = data / "server" / "embedded"
    holder = kill_after(_hold("study-a", root, 300, data))
    r = run_cli("server", "stop", env={"TIBENCH_DATA": str(data), "TIBENCH_SERVER_WAIT_S": "0.5"})
    assert r.returncode == 1
    assert _error_line(r) == (
        f"tibench: error: ServerBusy: embedded server 'embedded' is in use by study 'study-a' "
        f"(pid {holder.pid}); waited 0.5s (TIBENCH_SERVER_WAIT_S): run again when it has finished"
    )
    assert holder.poll() is None


def test_lease_waits_for_the_holder_then_is_taken(tmp_path, data_dir, kill_after, monkeypatch):
    root = data_dir / "server" / "embedded"
    kill_after(_hold("study-a", root, 1.5, data_dir))
    monkeypatch.setenv("TIBENCH_SERVER_WAIT_S", "30")
    t0 = time.monotonic()
    with study_lock("study-b"), EmbeddedServer(root=root).lease():
        waited = time.monotonic() - t0
    assert 0.5 < waited < 20


def test_lease_is_reentrant_for_the_same_study_only(data_dir, monkeypatch):
    """The kernels a ``tibench run`` starts run the same study under its lease; another study's
    process is refused even when it is a child of the holder."""
    root = data_dir / "server" / "embedded"
    monkeypatch.setenv("TIBENCH_SERVER_WAIT_S", "0")
    child = [sys.executable, "-c", _HOLD, "?", str(root), "0"]
    with study_lock("study-a"), EmbeddedServer(root=root).lease():
        same = subprocess.run([*child[:3], "study-a", *child[4:]], capture_output=True, text=True)
        other = subprocess.run([*child[:3], "study-b", *child[4:]], capture_output=True, text=True)
    assert same.returncode == 0 and same.stdout.strip() == "held", same.stderr
    assert other.returncode == 1
    assert "ServerBusy: embedded server 'embedded' is in use by study 'study-a'" in other.stderr
    # released with the study's lock
    with study_lock("study-b"), EmbeddedServer(root=root).lease():
        pass


@needs_mariadb
@pytest.mark.slow
def test_a_study_measuring_keeps_another_from_changing_the_server(tmp_path, monkeypatch):
    """Study B's arm (flush 2) neither sets its globals on nor restarts the server study A
    measures on; once A is done, B gets it."""
    data = tmp_path / "data"
    monkeypatch.setenv("TIBENCH_DATA", str(data))
    monkeypatch.setenv("TIBENCH_SERVER_WAIT_S", "0")
    root = tmp_path / "srv"
    flush = {"innodb_flush_log_at_trx_commit": 1}
    b_arm = (
        "import sys\nfrom tibenchlib.lock import study_lock\n"
        "from tibenchlib.server import EmbeddedServer\n"
        "with study_lock('study-b'):\n"
        "    EmbeddedServer(root=sys.argv[1], options={'innodb_flush_log_at_trx_commit': 2})"
        ".ensure()\n"
    )
    try:
        with study_lock("study-a"):
            a = EmbeddedServer(root=root, options=flush).ensure()
            pid = a.pid
            r = subprocess.run(
                [sys.executable, "-c", b_arm, str(root)], capture_output=True, text=True
            )
            assert r.returncode == 1
            assert (
                "ServerBusy: embedded server 'embedded' is in use by study 'study-a'"
                in (r.stderr.strip().splitlines()[-1])
            )
            assert a.pid == pid
            assert not settings_mismatch(a)
        r = subprocess.run([sys.executable, "-c", b_arm, str(root)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        b = EmbeddedServer(root=root, options={"innodb_flush_log_at_trx_commit": 2})
        assert not settings_mismatch(b)
        assert [x[0] for x in settings_mismatch(a)] == ["innodb_flush_log_at_trx_commit"]
    finally:
        EmbeddedServer(root=root).stop()


@needs_mariadb
@pytest.mark.slow
def test_a_run_on_changed_settings_is_not_started(tmp_path, data_dir):
    """Another client sets a global the arm fixes while the study runs: the next run fails with
    one line before it starts, and what was measured stays in the catalog."""
    import pymysql

    from tibenchlib.record import RunRecord
    from tibenchlib.runloop import run_plan
    from tibenchlib.store import Store

    srv = EmbeddedServer(root=tmp_path / "srv", options={"innodb_flush_log_at_trx_commit": 1})
    store = Store(f"sqlite:///{tmp_path / 'c.sqlite'}")
    specs = [SimpleNamespace(arm="flush1", run_key=f"sweep/flush1/{i}") for i in range(2)]

    def run(ctx, spec):
        t = time.time()
        rec = RunRecord(
            study="loop", run_key=spec.run_key, phase="sweep", arm=spec.arm, seq=0,
            status="ok", tps=10.0, started_at=t, finished_at=t,
        )  # fmt: skip
        store.record_run(rec)
        # meanwhile, another client with the server's admin rights changes the setting
        c = pymysql.connect(unix_socket=str(srv.socket_path), user="root", password=srv._password())
        with c.cursor() as cur:
            cur.execute("SET GLOBAL innodb_flush_log_at_trx_commit = 2")
        c.close()
        return rec

    def open_(spec, previous):
        return SimpleNamespace(arm=SimpleNamespace(label=spec.arm), server=srv.ensure())

    before = len(store.runs("loop"))
    try:
        with pytest.raises(SettingsChanged) as e:
            run_plan(SimpleNamespace(study="loop"), specs, store=store, open=open_, run=run,
                     progress=False)  # fmt: skip
    finally:
        srv.stop()
    assert str(e.value) == (
        "run sweep/flush1/1 not started: the embedded server 'embedded' has "
        "innodb_flush_log_at_trx_commit=2, arm 'flush1' sets 1 (changed by another client); "
        "run again to have it set back"
    )
    assert before == 0 and store.run_status("loop") == {"sweep/flush1/0": "ok"}


@pytest.mark.parametrize("down", ["refused", "state gone"])
def test_a_server_down_since_the_liveness_check_is_left_to_the_run(tmp_path, monkeypatch, down):
    """The server dies between the run loop's liveness check and the settings check (seen in
    CI: a test's SIGKILL landed there under load): the check does not stop the phase with the
    driver's error; the run is started, finds the server down and fails as a run, and the next
    run's check restarts the server."""
    from tibenchlib import target
    from tibenchlib.db import ConnInfo
    from tibenchlib.server import ServerError

    srv = EmbeddedServer(root=tmp_path / "srv", options={"innodb_flush_log_at_trx_commit": 1})
    monkeypatch.setattr(EmbeddedServer, "pid", property(lambda self: 4242))
    if down == "refused":
        import socket

        with socket.socket() as s:  # a port nothing listens on
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        info = ConnInfo(host="127.0.0.1", port=port, user="tibench", database="", password="x")
        monkeypatch.setattr(EmbeddedServer, "conninfo", lambda self: info)
        with pytest.raises(Exception, match="Connection refused|Can't connect"):
            settings_mismatch(srv)
    else:
        with pytest.raises(ServerError):
            srv.conninfo()
    ctx = SimpleNamespace(server=srv, target=None, arm=SimpleNamespace(label="flush1"))
    target.verify_settings(ctx, SimpleNamespace(run_key="sweep/flush1/1"))  # no error


# -- passwords in children's environments ------------------------------------------------------
def test_tools_and_kernels_get_no_password_in_their_environment(tmp_path, monkeypatch):
    from tibenchlib import db
    from tibenchlib.tools import execute

    known = "env-s3cret-" + os.urandom(4).hex()
    monkeypatch.setenv("TRUST_PW", known)
    assert db.env_secret("TRUST_PW") == known
    out = execute(["env"], tmp_path / "env.log")
    assert out.returncode == 0
    text = (tmp_path / "env.log").read_text()
    assert "PATH=" in text and "TRUST_PW" not in text and known not in text
    # a kernel started inside the block has no password in its environment, and reads it
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    probe = (
        "import os, sys\nfrom tibenchlib.db import env_secret\n"
        "env = open(f'/proc/{os.getpid()}/environ', 'rb').read()\n"
        "print(sys.argv[1].encode() in env, env_secret('TRUST_PW') == sys.argv[1])\n"
    )
    with db.secrets_for_kernels(["TRUST_PW", "UNSET_PW"], private):
        (secret_file,) = private.iterdir()
        assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600
        r = subprocess.run([sys.executable, "-c", probe, known], capture_output=True, text=True)
    assert r.stdout.split() == ["False", "True"], r.stderr
    assert os.environ["TRUST_PW"] == known and not list(private.iterdir())

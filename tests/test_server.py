"""The embedded MariaDB: start, reuse, options change, stop, stale instance, port taken."""

from __future__ import annotations

import os
import signal
import socket
import stat
import time

import pytest
import sqlalchemy as sa

from tibenchlib import server as srvmod
from tibenchlib.db import server_info
from tibenchlib.server import EmbeddedServer

pytestmark = pytest.mark.slow


@pytest.fixture
def fresh(tmp_path):
    if not srvmod.shutil.which("mariadbd") and not os.path.exists("/usr/sbin/mariadbd"):
        pytest.skip("mariadbd not installed")
    s = EmbeddedServer(name="lifecycle", root=tmp_path / "srv")
    yield s
    s.stop()


def _query(s: EmbeddedServer, sql: str):
    eng = s.conninfo().engine()
    try:
        with eng.connect() as c:
            return c.exec_driver_sql(sql).scalar_one()
    finally:
        eng.dispose()


@pytest.mark.parametrize("install", ["mariadb-install-db", "template"])
def test_start_reuse_restart_stop(fresh, install, monkeypatch, tmp_path):
    """Both ways a new server gets its datadir: mariadb-install-db, or a copy of the template
    (conftest makes one for the session; servers of CLI children inherit it)."""
    if install == "template":
        if not os.environ.get(srvmod.TEMPLATE_ENV):
            monkeypatch.setenv(
                srvmod.TEMPLATE_ENV, str(srvmod.make_datadir_template(tmp_path / "template"))
            )
        template = srvmod.datadir_template()
        assert template is not None and not os.lstat(template).st_mode & 0o022
    else:
        monkeypatch.delenv(srvmod.TEMPLATE_ENV, raising=False)
    s = fresh.ensure()
    user = srvmod.service_user()
    if user is not None:  # as root: the datadir is mariadbd's user's, however it was made
        assert os.stat(s.datadir / "mysql" / "user.frm").st_uid == user.pw_uid
    st = s.status()
    assert st["running"] and st["host"] == "127.0.0.1"
    info = server_info(s.conninfo().engine())
    assert info.flavor == "mariadb"
    # listens on loopback only
    assert _query(s, "SELECT @@bind_address") == "127.0.0.1"
    # the credentials file is private
    assert stat.S_IMODE(os.stat(s._cred_path).st_mode) == 0o600
    # a second object for the same instance reuses the running server
    again = EmbeddedServer(name="lifecycle", root=s.root).ensure()
    assert again.pid == st["pid"]
    # other options: restart on the same data
    with s.conninfo().engine().begin() as c:
        c.exec_driver_sql("CREATE TABLE IF NOT EXISTS keep (x INT)")
    changed = EmbeddedServer(
        name="lifecycle", root=s.root, options={"innodb_flush_log_at_trx_commit": 2}
    ).ensure()
    assert changed.pid != st["pid"]
    assert _query(changed, "SELECT @@innodb_flush_log_at_trx_commit") == 2
    assert (
        _query(changed, "SELECT COUNT(*) FROM information_schema.tables WHERE table_name='keep'")
        == 1
    )
    pid = changed.pid
    assert changed.stop() is True
    assert not srvmod._pid_alive(pid)
    assert not changed.status()["running"]
    assert not s.socket_path.exists()


@pytest.mark.parametrize("make", ["missing", "writable", "empty"])
def test_a_template_that_cannot_be_trusted_is_refused_naming_the_variable(
    fresh, make, monkeypatch, tmp_path
):
    t = tmp_path / "template"
    if make != "missing":
        t.mkdir()
        os.chmod(t, 0o777 if make == "writable" else 0o700)
    monkeypatch.setenv(srvmod.TEMPLATE_ENV, str(t))
    shown = {"missing": "No such file", "writable": "only you can write", "empty": "no mysql/"}
    with pytest.raises(srvmod.ServerError, match=f"{srvmod.TEMPLATE_ENV}=.*{shown[make]}"):
        fresh.ensure()
    assert not fresh.datadir.exists()


def test_stale_instance_is_cleaned(fresh):
    s = fresh.ensure()
    pid = s.pid
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while srvmod._pid_alive(pid) and time.monotonic() < deadline:
        srvmod._reap(pid)
        time.sleep(0.1)
    assert s.status()["stale"]
    with pytest.raises(srvmod.ServerError, match="not running"):
        s.conninfo()
    s.ensure()
    assert s.pid and s.pid != pid
    assert _query(s, "SELECT 1") == 1


def test_port_taken_moves_to_another(fresh, monkeypatch):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    busy = taken.getsockname()[1]
    ports = iter([busy])
    real = srvmod.free_port
    monkeypatch.setattr(srvmod, "free_port", lambda: next(ports, None) or real())
    try:
        s = fresh.ensure()
        assert s.port != busy
        assert _query(s, "SELECT 1") == 1
    finally:
        taken.close()


def test_missing_binary_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(srvmod.shutil, "which", lambda name: None)
    monkeypatch.setattr(srvmod, "Path", lambda p: tmp_path / "nowhere")
    with pytest.raises(srvmod.ServerError, match="install MariaDB"):
        srvmod.find_binary("mariadbd")


def test_engine_reaches_sbtest_database(mariadb_engine):
    with mariadb_engine.connect() as c:
        assert c.exec_driver_sql("SELECT DATABASE()").scalar_one() == "sbtest"
    assert isinstance(mariadb_engine, sa.Engine)


def test_dynamic_options_change_without_restart(fresh):
    s = EmbeddedServer(
        name="lifecycle", root=fresh.root, options={"innodb_flush_log_at_trx_commit": 1}
    ).ensure()
    pid = s.pid
    b = EmbeddedServer(
        name="lifecycle", root=fresh.root, options={"innodb_flush_log_at_trx_commit": 2}
    ).ensure()
    assert b.pid == pid
    assert _query(b, "SELECT @@innodb_flush_log_at_trx_commit") == 2
    assert b.status()["options"]["innodb_flush_log_at_trx_commit"] == 2
    # a read-only variable cannot be SET GLOBAL: the server restarts with it
    c = EmbeddedServer(
        name="lifecycle",
        root=fresh.root,
        options={"innodb_flush_log_at_trx_commit": 2, "performance_schema": 1},
    ).ensure()
    assert c.pid != pid
    assert _query(c, "SELECT @@performance_schema") == 1
    assert _query(c, "SELECT @@innodb_flush_log_at_trx_commit") == 2


# -- locked down ---------------------------------------------------------------------------------
def _login(**kw):
    import pymysql

    return pymysql.connect(connect_timeout=3, **kw)


def test_no_password_less_login_over_tcp_or_socket(mariadb):
    import pymysql

    port = mariadb.port
    for user in ("root", "", "tibench", "mariadb.sys"):
        with pytest.raises(pymysql.err.OperationalError, match="Access denied"):
            _login(host="127.0.0.1", port=port, user=user, password="")
        with pytest.raises(pymysql.err.OperationalError, match="Access denied"):
            _login(unix_socket=str(mariadb.socket_path), user=user, password="")
    # the generated password still works for root over the socket only
    c = _login(unix_socket=str(mariadb.socket_path), user="root", password=mariadb._password())
    with c.cursor() as cur:
        cur.execute(
            "SELECT User, Host FROM mysql.global_priv WHERE JSON_VALUE(Priv,"
            " '$.authentication_string') = '' AND IFNULL(JSON_VALUE(Priv, '$.account_locked'),"
            " 'false') NOT IN ('true', '1')"
        )
        assert cur.fetchall() == ()
        cur.execute("SELECT COUNT(*) FROM mysql.global_priv WHERE User = ''")
        assert cur.fetchone()[0] == 0
    c.close()


def test_study_user_cannot_read_host_files(mariadb):
    assert _query(mariadb, "SELECT LOAD_FILE('/etc/passwd')") is None
    priv = _query(mariadb, "SELECT @@secure_file_priv")
    assert priv and os.path.realpath(priv).startswith(os.path.realpath(mariadb.root))


@pytest.mark.skipif(os.geteuid() != 0, reason="drops to the mysql user only when run as root")
def test_as_root_mariadbd_runs_as_mysql_and_credentials_stay_private(mariadb):
    import pwd

    with open(f"/proc/{mariadb.pid}/status") as f:
        uid = next(int(line.split()[1]) for line in f if line.startswith("Uid:"))
    assert pwd.getpwuid(uid).pw_name == "mysql"
    st = os.stat(mariadb._cred_path)
    assert st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o600


def test_old_datadir_is_locked_down_on_start(fresh):
    """A datadir from an older tibench (root@127.0.0.1 without a password) is fixed at start."""
    import pymysql

    s = fresh.ensure()
    c = _login(unix_socket=str(s.socket_path), user="root", password=s._password())
    with c.cursor() as cur:
        cur.execute("CREATE USER 'root'@'127.0.0.1' IDENTIFIED BY ''")
        cur.execute("GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1'")
        cur.execute("CREATE USER ''@'localhost'")
    c.close()
    _login(host="127.0.0.1", port=s.port, user="root", password="").close()  # the hole
    s.stop()
    if os.geteuid() == 0:  # older versions ran mariadbd as root: their datadir is root's
        srvmod._chown_tree(s.datadir, 0, 0)
    s.ensure()
    if os.geteuid() == 0:
        assert s.datadir.stat().st_uid == srvmod.service_user().pw_uid
    with pytest.raises(pymysql.err.OperationalError, match="Access denied"):
        _login(host="127.0.0.1", port=s.port, user="root", password="")
    assert _query(s, "SELECT COUNT(*) FROM mysql.global_priv WHERE User = ''") == 0


def test_running_server_of_an_older_version_is_restarted_locked_down(fresh):
    import json

    s = fresh.ensure()
    pid = s.pid
    st = json.loads(s.state_path.read_text())
    assert st.pop("locked_down") is True
    s.state_path.write_text(json.dumps(st))  # as an older tibench wrote it
    again = EmbeddedServer(name="lifecycle", root=s.root).ensure()
    assert again.pid != pid
    assert _query(again, "SELECT @@secure_file_priv")
    # a locked-down one is reused as before
    assert EmbeddedServer(name="lifecycle", root=s.root).ensure().pid == again.pid


def test_a_server_in_a_deep_folder_keeps_its_socket_short(tmp_path):
    """A datadir deeper than a Unix socket path allows (pytest-xdist's temporary folders, a deep
    home): the socket goes to a short private folder, the server starts and root reaches it, and
    the folder goes with the server."""
    if not srvmod.shutil.which("mariadbd") and not os.path.exists("/usr/sbin/mariadbd"):
        pytest.skip("mariadbd not installed")
    s = EmbeddedServer(name="deep", root=tmp_path / ("d" * 60) / ("e" * 60) / "srv")
    assert len(os.fsencode(s.run_dir / "mysqld.sock")) > srvmod.SOCKET_PATH_MAX
    assert len(os.fsencode(s.socket_path)) <= srvmod.SOCKET_PATH_MAX
    try:
        s.ensure()
        assert stat.S_ISSOCK(os.lstat(s.socket_path).st_mode)
        assert _query(s, "SELECT @@socket") == str(s.socket_path)
        st = os.lstat(s.socket_dir)
        assert stat.S_IMODE(st.st_mode) == 0o700 and not stat.S_ISLNK(st.st_mode)
    finally:
        s.stop()
    assert not os.path.lexists(s.socket_dir)  # stopped: nothing left in the shared /tmp


def test_a_socket_folder_planted_by_someone_else_is_refused(tmp_path):
    s = EmbeddedServer(name="deep", root=tmp_path / ("d" * 60) / ("e" * 60) / "srv")
    s.socket_dir.parent.mkdir(parents=True, exist_ok=True)
    target = tmp_path / "elsewhere"
    target.mkdir()
    os.symlink(target, s.socket_dir)
    try:
        with pytest.raises(srvmod.ServerError, match="socket folder"):
            srvmod._make_socket_dir(s.socket_dir, {os.getuid()})
    finally:
        os.unlink(s.socket_dir)

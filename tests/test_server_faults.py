"""The embedded server under faults: a start interrupted at any moment, a server on its datadir
that tibench does not track, hostile files in the folders mariadbd's user writes, bad settings,
paths with spaces and a full disk."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest

from tibenchlib import server as srvmod
from tibenchlib.server import EmbeddedServer, ServerError

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _need_mariadb():
    if not shutil.which("mariadbd") and not os.path.exists("/usr/sbin/mariadbd"):
        pytest.skip("mariadbd not installed")


def _tibench(data: Path, *args: str, env: dict | None = None, **kw) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tibenchlib.cli", "--data-dir", str(data), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
        **kw,
    )


def _run(data: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    p = _tibench(data, *args, env=env)
    out, err = p.communicate(timeout=180)
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def _processes_on(root: Path) -> dict[int, list[str]]:
    """Every process whose command line names a path under ``root`` (mariadbd, its bootstrap,
    mariadb-install-db), by pid."""
    out = {}
    for p in psutil.process_iter(["pid", "cmdline"]):
        cmd = p.info["cmdline"] or []
        if any(str(root) in a for a in cmd) and "tibenchlib.cli" not in cmd:
            out[p.info["pid"]] = cmd
    return out


def _server(data: Path) -> EmbeddedServer:
    return EmbeddedServer(root=data / "server" / "embedded")


def _assert_tracked_or_none(data: Path, moment: str) -> None:
    """Whatever is left on the server's folder is the server ``status`` reports, or nothing."""
    left = _processes_on(data)
    if not left:
        return
    st = _server(data).status()
    assert st["running"] and list(left) == [st["pid"]], (moment, left, st)


#: Moments (s after the command starts) of an interruption: spread over the whole start, from the
#: interpreter's start-up through mariadb-install-db (fresh) or the copy of the datadir, mariadbd's
#: start, the readiness wait, the bootstrap and the lockdown (about 4.4 s fresh and 1.9 s
#: installed, unloaded, here); under load the same delays land earlier in the start.
MOMENTS = {
    "fresh": [
        (0.7, signal.SIGINT),
        (1.6, signal.SIGTERM),
        (2.6, signal.SIGINT),
        (3.6, signal.SIGTERM),
    ],
    "installed": [
        (0.6, signal.SIGTERM),
        (0.9, signal.SIGINT),
        (1.2, signal.SIGTERM),
        (1.5, signal.SIGINT),
        (1.8, signal.SIGTERM),
        (1.1, signal.SIGKILL),
    ],
}


@pytest.mark.parametrize("datadir", ["fresh", "installed"])
def test_an_interrupted_start_leaves_the_server_tracked_or_none(datadir, tmp_path):
    """``tibench server start`` interrupted at many moments (SIGINT as Ctrl-C sends it, SIGTERM,
    and SIGKILL, which no clean-up can follow): no mariadbd or bootstrap on the datadir is left
    that ``server status`` does not show, and the next start works and ``stop`` stops it."""
    if datadir == "installed":
        installed = _server(tmp_path / "installed")
        installed.ensure()
        installed.stop()
    try:
        for i, (delay, sig) in enumerate(MOMENTS[datadir]):
            data = tmp_path / f"d{i}"
            if datadir == "installed":
                shutil.copytree(installed.root.parent.parent, data, symlinks=True)
            moment = f"{sig.name} at {delay}s"
            # fresh: no template, mariadb-install-db runs
            env = {srvmod.TEMPLATE_ENV: ""} if datadir == "fresh" else None
            p = _tibench(data, "server", "start", env=env, start_new_session=True)
            time.sleep(delay)
            p.send_signal(sig)
            out, err = p.communicate(timeout=120)
            if sig != signal.SIGKILL and p.returncode != 0:
                # a signal that lands while the interpreter starts, before tibench's handler is
                # set, ends it as the signal's default does (nothing is started yet then): for
                # SIGINT, Python's KeyboardInterrupt while the modules import, before main()
                # (from main() on, one line: the command line's building included)
                assert p.returncode in (130, -signal.SIGTERM, -signal.SIGINT), (moment, err)
                before_main = err.rstrip().endswith("KeyboardInterrupt") and "in main" not in err
                assert "Traceback" not in err or before_main, (moment, err)
            _assert_tracked_or_none(data, moment)
            srv = _server(data).ensure()
            assert srv.status()["running"], moment
            assert srv.stop() and _processes_on(data) == {}, moment
    finally:
        for pid in _processes_on(tmp_path):
            with_signal(pid, signal.SIGKILL)


def with_signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _orphan(srv: EmbeddedServer) -> subprocess.Popen:
    """A mariadbd on the server's datadir that tibench does not track: the state file gone, as an
    older tibench's interrupted start left it."""
    srv.ensure()
    pid = srv.pid
    srv.state_path.unlink()
    assert srv.pid is None and psutil.pid_exists(pid)
    return pid


def test_a_server_tibench_does_not_track_is_stopped_by_start_and_by_stop(tmp_path):
    srv = EmbeddedServer(name="orphan", root=tmp_path / "srv")
    try:
        pid = _orphan(srv)
        assert srv.untracked() == [pid] and srv.status()["untracked"] == [pid]
        # the next start stops it and starts its own (the old one holds the datadir's locks)
        srv.ensure()
        assert srv.pid not in (None, pid) and not srvmod.is_server_process(pid, srv.datadir)
        pid = _orphan(srv)
        assert srv.stop() is True
        assert not srvmod.is_server_process(pid, srv.datadir) and srv.untracked() == []
    finally:
        srv.stop()


@pytest.mark.parametrize("value", ["abc", "-1", "nan"])
def test_a_wait_that_is_not_seconds_is_one_line_naming_the_variable(value, tmp_path):
    r = _run(tmp_path / "data", "server", "start", env={"TIBENCH_SERVER_WAIT_S": value})
    if r.returncode == 0:
        _server(tmp_path / "data").stop()
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and f"TIBENCH_SERVER_WAIT_S='{value}'" in lines[0], r.stderr
    assert "number of seconds" in lines[0] and "Traceback" not in r.stderr
    assert _processes_on(tmp_path) == {}


def test_an_error_log_replaced_by_a_fifo_is_not_waited_on(tmp_path):
    """mariadbd's user can put a FIFO where the error log was: reading the log's end (after a
    failed start, or a server that died mid-run) says so at once instead of blocking."""
    srv = EmbeddedServer(name="fifo", root=tmp_path / "srv")
    srv.run_dir.mkdir(parents=True)
    os.mkfifo(srv.error_log)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(srv._log_tail()), daemon=True)
    reader.start()
    reader.join(5)
    if reader.is_alive():  # let the blocked open through before failing
        os.close(os.open(srv.error_log, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(5)
        pytest.fail("reading the error log blocked on a FIFO")
    assert got == [f"(not read: {srv.error_log} is not a regular file)"]


@pytest.fixture
def shared_socket_dir(tmp_path):
    """A server whose folder's path is too long for a socket, so that its socket folder lives in
    the shared temporary directory, and a folder of someone else's with a file named as the
    socket in it."""
    root = tmp_path / ("x" * 60) / ("y" * 60) / "srv"
    srv = EmbeddedServer(name="linked", root=root)
    assert srv.socket_dir != srv.run_dir and srv.socket_dir.parent == Path(tempfile.gettempdir())
    victim = tmp_path / "victim"
    victim.mkdir(mode=0o755)
    os.chmod(victim, 0o755)
    (victim / "mysqld.sock").write_text("not the server's")
    yield srv, victim
    if os.path.islink(srv.socket_dir):
        os.unlink(srv.socket_dir)
    srv._remove_socket_dir()
    shutil.rmtree(srv.socket_dir, ignore_errors=True)


def test_a_socket_folder_swapped_for_a_link_is_refused_and_not_followed(shared_socket_dir):
    srv, victim = shared_socket_dir
    srv.socket_dir.unlink(missing_ok=True)
    shutil.rmtree(srv.socket_dir, ignore_errors=True)
    os.symlink(victim, srv.socket_dir)
    srv._clean_stale(None)  # what stop does: the file in the linked folder stays
    assert (victim / "mysqld.sock").read_text() == "not the server's"
    with pytest.raises(ServerError) as e:
        srv._prepare_dirs(srvmod.service_user())
    assert str(srv.socket_dir) in str(e.value) and "\n" not in str(e.value)
    assert "link" in str(e.value) and "remove it" in str(e.value)
    st = os.stat(victim)
    assert stat.S_IMODE(st.st_mode) == 0o755 and st.st_uid == os.getuid()
    assert os.path.islink(srv.socket_dir), "someone else's link is left as it is"


@pytest.mark.skipif(os.geteuid() != 0, reason="another user's folder needs root to make")
def test_a_socket_folder_of_another_user_is_refused_and_left_alone(shared_socket_dir):
    srv, _ = shared_socket_dir
    nobody = pwd.getpwnam("nobody")
    os.mkdir(srv.socket_dir, 0o755)
    os.chown(srv.socket_dir, nobody.pw_uid, nobody.pw_gid)
    (srv.socket_dir / "mysqld.sock").write_text("nobody's")
    srv._clean_stale(None)
    assert (srv.socket_dir / "mysqld.sock").read_text() == "nobody's"
    with pytest.raises(ServerError, match="another user made"):
        srv._prepare_dirs(srvmod.service_user())
    st = os.lstat(srv.socket_dir)
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (nobody.pw_uid, 0o755)
    shutil.rmtree(srv.socket_dir)


def test_a_data_folder_with_a_space_in_its_path_installs_and_starts(tmp_path, monkeypatch):
    """mariadb-install-db passes the datadir to ``chown`` unquoted (as root): tibench installs
    through plain-named links, and mariadbd then runs on the real path."""
    monkeypatch.delenv(srvmod.TEMPLATE_ENV, raising=False)
    srv = EmbeddedServer(name="spaced", root=tmp_path / "my studies" / "srv")
    try:
        srv.ensure()
        assert srv.status()["running"] and (srv.datadir / "mysql").is_dir()
        assert f"--datadir={srv.datadir}" in psutil.Process(srv.pid).cmdline()
        assert not list(Path(tempfile.gettempdir()).glob("tibench-install-*"))
    finally:
        srv.stop()


@pytest.fixture
def tiny_disk(tmp_path):
    """A 30 MiB file system of its own (a tmpfs; mounting needs root)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root")
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=30m", "tmpfs", str(mnt)])
    if r.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.mark.parametrize("install", ["mariadb-install-db", "template"])
def test_a_data_folder_on_a_full_disk_is_one_line_naming_that_disk(tiny_disk, install, tmp_path):
    """``--data-dir`` is a link to a folder on a 30 MiB file system: one line naming that file
    system (not the link's), exit 2, and nothing left running or taking its space."""
    (tiny_disk / "data").mkdir()
    data = tmp_path / "data"
    data.symlink_to(tiny_disk / "data")
    env = {srvmod.TEMPLATE_ENV: ""} if install == "mariadb-install-db" else None
    if install == "template" and not os.environ.get(srvmod.TEMPLATE_ENV):
        env = {srvmod.TEMPLATE_ENV: str(srvmod.make_datadir_template(tmp_path / "template"))}
    r = _run(data, "server", "start", env=env)
    assert r.returncode == 2, r.stderr
    lines = [x for x in r.stderr.splitlines() if not x.startswith("INFO ")]
    assert len(lines) == 1 and lines[0].startswith("tibench: error: "), r.stderr
    assert f"no space left on the device holding {tiny_disk}/data/server/embedded" in lines[0]
    assert f"(mounted on {tiny_disk}, " in lines[0] and " MiB free)" in lines[0]
    assert _processes_on(tiny_disk) == {}
    assert not (tiny_disk / "data" / "server" / "embedded" / "datadir.installing").exists()


def test_a_setting_left_behind_is_set_back_when_the_arm_opens(data_dir):
    """An arm's ``SET GLOBAL`` left behind (live 1, the arm and the server's state 2): the runs
    about to start are refused with what to do, and the resume (the arm opened again) sets it
    back on the same server instead of refusing every run until the server restarts."""
    import pymysql

    from tibenchlib.params import parse_study
    from tibenchlib.store import Store
    from tibenchlib.target import SettingsChanged, open_arm, settings_mismatch, verify_settings

    study = parse_study(
        {
            "study": "leftover",
            "workloads": ["oltp_point_select"],
            "arms": [{"label": "flush2", "server_options": {"innodb_flush_log_at_trx_commit": 2}}],
        }
    )
    store = Store.for_study(study)
    ctx = open_arm(study, "flush2", store=store)
    srv = ctx.server
    c = pymysql.connect(unix_socket=str(srv.socket_path), user="root", password=srv._password())
    with c.cursor() as cur:
        cur.execute("SET GLOBAL innodb_flush_log_at_trx_commit = 1")
    c.close()
    spec = SimpleNamespace(run_key="sweep/flush2/1")
    with pytest.raises(SettingsChanged, match="run again to have it set back$"):
        verify_settings(ctx, spec)
    again = open_arm(study, "flush2", store=store)
    assert again.server.pid == srv.pid, "set back without a restart"
    assert settings_mismatch(again.server) == []
    verify_settings(again, spec)


def test_a_full_disk_behind_a_link_names_that_disk_and_its_free_space(tiny_disk, tmp_path):
    """A study folder linked to a full file system: the line names the file on that file system
    (the link resolved) and that file system's free space, not the data directory's."""
    import errno

    from tibenchlib import cli, paths

    (tiny_disk / "study").mkdir()
    data = tmp_path / "data"
    data.mkdir()
    (data / "study").symlink_to(tiny_disk / "study")
    with open(tiny_disk / "filler", "wb") as f:  # the tiny disk full but for a few KiB
        with pytest.raises(OSError):
            f.write(b"\0" * (31 << 20))
    log = data / "study" / "raw" / "run.log"
    e = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(log))
    with paths.using_data_dir(data):
        line = cli._disk_full(e)
    assert line.startswith(f"no space left on the device holding {tiny_disk}/study/raw/run.log")
    assert ", 0 MiB free:" in line, line


#: A process that restarts a running server with another CPU binding, as a phase does at a
#: policy switch, turning SIGTERM into KeyboardInterrupt as tibench's command does.
SWITCH = """
import signal, sys
from tibenchlib.server import EmbeddedServer

def stop(signum, frame):
    raise KeyboardInterrupt

signal.signal(signal.SIGTERM, stop)
print("ready", flush=True)
EmbeddedServer(root=sys.argv[1], prefix=sys.argv[2:]).ensure()
"""


def test_a_policy_switch_interrupted_leaves_the_server_tracked_or_none(tmp_path):
    """The server restarted under another binding (a NUMA phase's policy switch) and the
    process interrupted at moments spread over the stop and the start: what is left is the
    server ``status`` shows, or nothing, and the next switch works."""
    if not shutil.which("numactl"):
        pytest.skip("numactl is not installed")
    bound = ["numactl", "--physcpubind=0"]
    for i, delay in enumerate([0.3, 1.0, 1.7]):
        data = tmp_path / f"d{i}"
        srv = _server(data).ensure()
        p = subprocess.Popen(
            [sys.executable, "-c", SWITCH, str(srv.root), *bound],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            assert p.stdout.readline() == "ready\n"
            time.sleep(delay)
            p.send_signal(signal.SIGTERM)
            p.communicate(timeout=120)
            _assert_tracked_or_none(data, f"SIGTERM {delay}s into the switch")
            again = EmbeddedServer(root=srv.root, prefix=bound).ensure()
            assert again.status()["prefix"] == bound and list(_processes_on(data)) == [again.pid]
        finally:
            if p.poll() is None:
                p.kill()
            srv.stop()
        assert _processes_on(data) == {}

"""The embedded default: a private MariaDB that tibench starts, reuses and stops itself.

Its files live under ``data/server/<name>/``, a folder owned by the invoking user: tibench's own
state and the generated password in ``private/`` (0700, the invoking user's), and what mariadbd
writes (``datadir/``, ``tmp/``, ``files/``, and ``run/`` for its socket, pid file and error log)
in folders of their own, owned by mariadbd's user. Nothing tibench writes or signals can be
steered by that user: links are refused, and a pid is signalled only when ``/proc`` shows it is
mariadbd on this datadir. It listens on 127.0.0.1 only, on a free port, with a generated password
kept in a 0600 file. A running instance
is reused when its options and CPU binding match; a stale one (dead pid, leftover socket) is
cleaned up; a different configuration restarts it on the same data. A start interrupted at any
moment leaves the server it started recorded (its pid is kept before it is waited on) or stopped,
and a mariadbd on the datadir that tibench does not track is stopped before another one starts.

Locked down as the packaged service is: the generated password is the only way in (no anonymous
or password-less account on any host, checked at every start, so datadirs made by older versions
are upgraded in place), ``secure_file_priv`` confines server-side file access to ``files/`` under
the server's folder, and when tibench runs as root mariadbd drops to Debian's ``mysql`` user.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pymysql

from . import paths
from .db import ConnInfo, child_env
from .lock import server_lease

log = logging.getLogger(__name__)

USER = "tibench"
DEFAULT_OPTIONS: dict[str, str | int | float | bool] = {
    # Small enough for a 2-core CI box, large enough that sysbench's tables stay in memory.
    "innodb_buffer_pool_size": "256M",
    "innodb_log_file_size": "128M",
    "max_connections": 2000,
    "local_infile": 1,
    "skip_name_resolve": 1,
    "character_set_server": "utf8mb4",
    "performance_schema": 0,
}


#: What a study does with the benchmark account beyond its own schemas: read the server's status,
#: dump consistently (mydumper's FLUSH TABLES WITH READ LOCK needs RELOAD) and replicate from the
#: source. Not FILE, SUPER, GRANT OPTION, CREATE USER or SHUTDOWN: server-wide settings go through
#: root on the socket (:meth:`EmbeddedServer._root_connect`), and the account writes no file on
#: the server's host.
GRANTS: tuple[str, ...] = (
    "PROCESS",
    "RELOAD",
    "REPLICATION SLAVE",
    "BINLOG MONITOR",
    "SLAVE MONITOR",
)

#: On every schema (``%``) but ``mysql``: everything a study does with its tables (sysbench, TPC-H,
#: YCSB, TPC-C, DM), without GRANT OPTION. ``mysql`` gets a row of its own with SELECT only:
#: MariaDB takes the first matching row of ``mysql.db`` and an exact name sorts before ``%``, so
#: the account cannot write the grant tables (CREATE USER by INSERT, or a new account with SUPER).
SCHEMA_GRANTS = "ALL PRIVILEGES"

#: Version of the folder layout in the state file: a server started under another is restarted.
LAYOUT = 2

#: The unprivileged account mariadbd runs as when tibench runs as root (Debian's packaged one).
SERVICE_USER = "mysql"


class ServerError(RuntimeError):
    """The embedded server could not be installed, started, reached or stopped."""


class ServerDiskFull(ServerError):
    """The embedded server's folder is on a full file system; names that file system."""

    exit_code = 2  # the same exit as any full disk (see tibenchlib.cli)


#: How mariadbd, mariadb-install-db and Python say a write found the disk full.
_NO_SPACE = re.compile(
    r"No space left|\bDisk full|\[Errno 28\]|\berror 28\b|\berrno:? 28\b|Errcode: 28\b", re.I
)


def no_space(e: BaseException, path: Path) -> ServerDiskFull | None:
    """A :class:`ServerDiskFull` naming the file system that holds ``path`` (links resolved: a
    folder linked to another disk names that disk) when ``e`` says a write found it full."""
    if not any(
        (isinstance(x, OSError) and x.errno == errno.ENOSPC) or _NO_SPACE.search(str(x))
        for x in _chain(e)
    ):
        return None
    where = Path(os.path.realpath(path))
    mount = next((d for d in (where, *where.parents) if os.path.ismount(d)), Path("/"))
    try:
        free = f", {shutil.disk_usage(mount).free >> 20} MiB free"
    except OSError:
        free = ""
    return ServerDiskFull(
        f"no space left on the device holding {where} (mounted on {mount}{free}): an empty "
        "embedded server takes about 150 MiB, its tables come on top; free some space, or "
        "give --data-dir a folder on another disk"
    )


def _chain(e: BaseException | None) -> Iterator[BaseException]:
    while e is not None:
        yield e
        e = e.__cause__ or e.__context__


def service_user() -> pwd.struct_passwd | None:
    """The account mariadbd drops to: ``mysql`` when running as root, else None (runs as us)."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SERVICE_USER)
    except KeyError:
        raise ServerError(
            f"tibench runs as root but there is no '{SERVICE_USER}' user for mariadbd to run as: "
            "install mariadb-server (it creates the user) or run tibench as an ordinary user"
        ) from None


def _chown_tree(top: Path, uid: int, gid: int) -> None:
    _own_dir(top, uid, gid)
    for d, dirs, files in os.walk(top):
        for n in dirs + files:
            os.lchown(os.path.join(d, n), uid, gid)


def _open_dir(path: Path) -> int:
    """A descriptor of the directory ``path`` itself, or :class:`ServerError` when a link or
    anything else stands there (``O_NOFOLLOW``: a link swapped in is never followed)."""
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            raise ServerError(
                f"{path} is not a directory (a link or a file was put there): "
                "remove it and start again"
            ) from None
        raise


def _own_dir(
    path: Path, uid: int, gid: int, mode: int | None = None, owners: set[int] | None = None
) -> None:
    """Give the directory ``path`` (never what a link there points to) to ``uid``; with
    ``owners``, only when one of them owns it now.

    Owner and mode are set through a descriptor of the directory itself: checking the path and
    then changing it by name would follow a link swapped in between the two."""
    fd = _open_dir(path) if owners is None else _socket_dir_fd(path, owners)
    try:
        os.fchown(fd, uid, gid)
        if mode is not None:
            os.fchmod(fd, mode)
    finally:
        os.close(fd)


#: the longest path a Unix socket can be bound to (``sun_path`` holds 108 bytes with its NUL)
SOCKET_PATH_MAX = 107


def _make_socket_dir(path: Path, owners: set[int]) -> None:
    """Create the short socket folder in the shared temporary directory, or accept it when it is
    a folder (not a link) that this user or the server's user made."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    os.close(_socket_dir_fd(path, owners))


def _socket_dir_fd(path: Path, owners: set[int]) -> int:
    """A descriptor of the socket folder in the shared temporary directory, once it is known to
    be a folder (not a link) owned by one of ``owners``: anyone can put a name there."""
    try:
        fd = _open_dir(path)
    except ServerError:
        fd = None
    if fd is not None and os.fstat(fd).st_uid in owners:
        return fd
    if fd is not None:
        os.close(fd)
    raise ServerError(
        f"{path} (the embedded server's socket folder) is a link or a folder another user "
        "made: remove it and start again"
    )


def _read_private(path: Path) -> str:
    """The text of a regular file, refusing a link (``OSError`` when absent or a link)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd) as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise OSError(f"{path} is not a regular file")
        return f.read()


def _write_private(path: Path, text: str) -> None:
    """Replace ``path`` atomically with a new 0600 file holding ``text``; a link is replaced, never
    followed."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _proc_cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def is_server_process(pid: int | None, datadir: Path) -> bool:
    """Whether ``pid`` is a mariadbd (or mysqld) running on ``datadir``, as ``/proc`` shows it.

    A pid read from a state file is only a hint: after a reboot, or written by someone else, it
    can name any process. Only a process that is the server of this datadir may be signalled.
    """
    if not pid or not _pid_alive(pid):
        return False
    try:
        exe = os.readlink(f"/proc/{pid}/exe").removesuffix(" (deleted)")
    except OSError:
        return False
    if os.path.basename(exe) not in ("mariadbd", "mysqld"):
        return False
    return f"--datadir={datadir}" in _proc_cmdline(pid)


def _grant_traversal(path: Path, uid: int) -> None:
    """Let ``uid`` reach ``path``: add search (not read) permission on ancestors that block it."""
    for d in reversed([path, *path.parents]):
        st = d.stat()
        if st.st_uid == uid or st.st_mode & stat.S_IXOTH:
            continue
        os.chmod(d, stat.S_IMODE(st.st_mode) | stat.S_IXOTH)
        log.info("gave others search permission on %s so that mariadbd can reach its files", d)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child is not alive for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


#: A pristine datadir (made by :func:`make_datadir_template`) that new servers copy instead of
#: running ``mariadb-install-db`` (about a second of two processes' CPU each): the test suite
#: starts some sixty servers. It must be a folder of the invoking user's that no one else can
#: write, since mariadbd would run on whatever it holds.
TEMPLATE_ENV = "TIBENCH_SERVER_TEMPLATE"


#: What mariadb-install-db passes on to the shell unquoted without harm (it runs
#: ``chown $user $dir``): a path with anything else reaches it through a link named with these.
_SHELL_SAFE = re.compile(r"[\w@%+=:,./-]+")


def _install_db(install: str, dest: Path, tmp_dir: Path, user: pwd.struct_passwd | None) -> None:
    with ExitStack() as stack:
        if not (_SHELL_SAFE.fullmatch(str(dest)) and _SHELL_SAFE.fullmatch(str(tmp_dir))):
            dest, tmp_dir = stack.enter_context(_plain_names(dest, tmp_dir, user))
        cmd = [
            install,
            "--no-defaults",
            f"--datadir={dest}",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
            # a private tmpdir: a MariaDB starting beside this one clears #sql* files in its own
            # tmpdir, which must not be the bootstrap's
            f"--tmpdir={tmp_dir}",
        ]
        if user is not None:
            cmd.append(f"--user={user.pw_name}")
        # a session of its own: the script's bootstrap mariadbd is stopped with it on an
        # interruption, and a Ctrl-C at the terminal reaches tibench alone
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate()
        except BaseException:
            with deferred_signals():
                with suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            raise
    if proc.returncode != 0:
        # the script's own advice goes to stdout; mariadbd's errors, the cause, to stderr
        raise ServerError(f"mariadb-install-db failed ({proc.returncode}):\n{(err or out)[-2000:]}")


@contextmanager
def _plain_names(
    dest: Path, tmp_dir: Path, user: pwd.struct_passwd | None
) -> Iterator[tuple[Path, Path]]:
    """Links with plain names to ``dest`` (made here) and ``tmp_dir``, in a private folder of the
    system's temporary directory that mariadbd's user may only traverse."""
    top = Path(tempfile.mkdtemp(prefix="tibench-install-"))
    try:
        if user is not None:
            os.chmod(top, 0o711)
        os.mkdir(dest, 0o700)
        if user is not None:
            _own_dir(dest, user.pw_uid, user.pw_gid)
        os.symlink(dest, top / "datadir")
        os.symlink(tmp_dir, top / "tmp")
        yield top / "datadir", top / "tmp"
    finally:
        shutil.rmtree(top, ignore_errors=True)


def make_datadir_template(dest: Path) -> Path:
    """A pristine datadir at ``dest`` (which must not exist), owned by the invoking user and
    writable by no one else, for :data:`TEMPLATE_ENV`."""
    install = find_binary("mariadb-install-db", "mysql_install_db")
    dest = Path(dest)
    work = Path(tempfile.mkdtemp(prefix="tibench-template-"))
    try:
        user = service_user()
        tmp_dir = work / "tmp"
        tmp_dir.mkdir()
        if user is not None:
            _grant_traversal(work, user.pw_uid)
            _own_dir(work, os.geteuid(), os.getegid(), 0o711)
            _own_dir(tmp_dir, user.pw_uid, user.pw_gid, 0o700)
        _install_db(install, work / "datadir", tmp_dir, user)
        _chown_tree(work / "datadir", os.geteuid(), os.getegid())
        for d, _, files in os.walk(work / "datadir"):
            for name in (d, *(os.path.join(d, f) for f in files)):
                mode = os.lstat(name).st_mode
                if not stat.S_ISLNK(mode):
                    os.chmod(name, stat.S_IMODE(mode) & ~0o022)
        shutil.move(work / "datadir", dest)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return dest


def datadir_template() -> Path | None:
    """The folder :data:`TEMPLATE_ENV` names, once checked; None when it is not set."""
    value = os.environ.get(TEMPLATE_ENV)
    if not value:
        return None
    path = Path(value)
    try:
        st = os.lstat(path)
    except OSError as e:
        raise ServerError(f"{TEMPLATE_ENV}={value}: {e.strerror}") from None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise ServerError(
            f"{TEMPLATE_ENV}={value} is not a folder of yours that only you can write: "
            "unset it, or make the template again"
        )
    if not (path / "mysql").is_dir():
        raise ServerError(f"{TEMPLATE_ENV}={value} holds no datadir (no mysql/ folder)")
    return path


def find_binary(*names: str) -> str:
    for n in names:
        p = shutil.which(n) or next(
            (str(d / n) for d in (Path("/usr/sbin"), Path("/usr/bin")) if (d / n).exists()), None
        )
        if p:
            return p
    raise ServerError(
        f"{' or '.join(names)} not found: install MariaDB (make setup, or "
        "apt-get install mariadb-server / dnf install mariadb-server / brew install mariadb)"
    )


def _flags(options: dict) -> list[str]:
    out = []
    for k, v in options.items():
        k = str(k).replace("_", "-")
        if isinstance(v, bool):
            v = int(v)
        out.append(f"--{k}={v}")
    return out


@dataclass
class EmbeddedServer:
    """A private MariaDB instance under ``root``.

    Parameters
    ----------
    name
        Instance name: its folder is ``data/server/<name>``.
    options
        mariadbd options for this start (per arm), on top of :data:`DEFAULT_OPTIONS`.
    prefix
        Command prefix, e.g. ``["numactl", "--physcpubind=0"]`` for CPU/NUMA binding.
    """

    name: str = "embedded"
    options: dict = field(default_factory=dict)
    prefix: list[str] = field(default_factory=list)
    database: str = "sbtest"
    root: Path | None = None
    #: privileges beyond :data:`GRANTS` this instance's benchmark account needs (a replica's)
    grants: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.root = Path(self.root) if self.root else paths.server_dir(self.name)

    # -- files -------------------------------------------------------------------------------
    @property
    def private_dir(self) -> Path:
        """tibench's own state and credentials: the invoking user's, 0700, never mariadbd's."""
        return self.root / "private"

    @property
    def run_dir(self) -> Path:
        """What mariadbd writes beside its data: socket, pid file, error log."""
        return self.root / "run"

    @property
    def datadir(self) -> Path:
        return self.root / "datadir"

    @property
    def socket_dir(self) -> Path:
        """Where mariadbd's socket lives: ``run/``, unless that path is too long for a Unix socket
        (a deep home or temporary directory); then a short folder of its own in the system's
        temporary directory, named after this server's folder."""
        if len(os.fsencode(self.run_dir / "mysqld.sock")) <= SOCKET_PATH_MAX:
            return self.run_dir
        digest = hashlib.sha256(os.fsencode(os.path.abspath(self.root))).hexdigest()[:16]
        return Path(tempfile.gettempdir()) / f"tibench-{os.getuid()}-{digest}"

    @property
    def socket_path(self) -> Path:
        return self.socket_dir / "mysqld.sock"

    @property
    def state_path(self) -> Path:
        return self.private_dir / "state.json"

    @property
    def error_log(self) -> Path:
        return self.run_dir / "error.log"

    @property
    def _cred_path(self) -> Path:
        return self.private_dir / "credentials"

    @property
    def files_dir(self) -> Path:
        """The only directory server-side file access (``secure_file_priv``) may touch."""
        return self.root / "files"

    @property
    def tmp_dir(self) -> Path:
        """The server's own temporary directory (``tmpdir``), not the shared system one."""
        return self.root / "tmp"

    def _state(self) -> dict | None:
        try:
            st = json.loads(_read_private(self.state_path))
        except (OSError, ValueError):
            return None
        return st if isinstance(st, dict) else None

    def _running(self, st: dict | None) -> bool:
        return bool(st) and is_server_process(st.get("pid"), self.datadir)

    def _secure_root(self) -> None:
        """Make the server's folder and ``private/`` ours, moving the state and credentials of a
        folder an older tibench laid out (all of it then owned by mariadbd's user) into
        ``private/``; refuses links and files that are not ours."""
        self.root.mkdir(parents=True, exist_ok=True)
        uid, gid = os.geteuid(), os.getegid()
        user = service_user()
        # search permission only: mariadbd's user reaches its own folders, lists nothing here
        _own_dir(self.root, uid, gid, 0o711 if user is not None else 0o700)
        self.private_dir.mkdir(mode=0o700, exist_ok=True)
        _own_dir(self.private_dir, uid, gid, 0o700)
        for name in ("credentials", "state.json"):
            old = self.root / name
            try:
                st = os.lstat(old)
            except FileNotFoundError:
                continue
            new = self.private_dir / name
            ok = stat.S_ISREG(st.st_mode) and st.st_nlink == 1
            if name == "credentials":
                if not ok or st.st_uid != uid:
                    raise ServerError(
                        f"{old} is not a regular file of yours (uid {uid}): it may have been "
                        "planted; remove it, and the datadir it was the password of"
                    )
                if not new.exists():
                    os.rename(old, new)
                    log.info("moved %s to %s", old, new)
                    continue
            elif name == "state.json" and ok and not new.exists():
                # its pid is checked against /proc before anything is signalled
                os.rename(old, new)
                continue
            old.unlink()

    def _password(self) -> str:
        try:
            return _read_private(self._cred_path).strip()
        except FileNotFoundError:
            pass
        except OSError as e:
            raise ServerError(f"{self._cred_path}: {e}") from None
        self._secure_root()
        pw = secrets.token_urlsafe(18)
        try:
            fd = os.open(
                self._cred_path,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                stat.S_IRUSR | stat.S_IWUSR,
            )
        except FileExistsError:
            return _read_private(self._cred_path).strip()
        with os.fdopen(fd, "w") as f:
            f.write(pw)
        return pw

    def _wanted(self) -> dict:
        return {"options": {**DEFAULT_OPTIONS, **self.options}, "prefix": list(self.prefix)}

    # -- public ------------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        st = self._state()
        return st["pid"] if self._running(st) else None

    @property
    def port(self) -> int | None:
        st = self._state()
        return st["port"] if st else None

    def conninfo(self) -> ConnInfo:
        st = self._state()
        if not self._running(st):
            raise ServerError(
                f"embedded server '{self.name}' is not running (tibench server start)"
            )
        return ConnInfo(
            host="127.0.0.1",
            port=st["port"],
            user=USER,
            database=self.database,
            password=self._password(),
            embedded=True,
        )

    def status(self) -> dict:
        st = self._state() or {}
        running = self._running(st)
        return {
            "name": self.name,
            "running": running,
            "pid": st.get("pid") if running else None,
            "port": st.get("port") if running else None,
            "host": "127.0.0.1",
            "datadir": str(self.datadir),
            "options": st.get("options", {}),
            "prefix": st.get("prefix", []),
            "stale": bool(st) and not running,
            # a server on this datadir that the state does not name: the next start or stop
            # stops it
            "untracked": self.untracked(),
        }

    def ensure(self, dynamic: bool = True) -> EmbeddedServer:
        """Start the server, or reuse the running one when its configuration matches.

        With ``dynamic``, options that differ from the running server's are applied with
        ``SET GLOBAL`` when every one of them is dynamic (A/B arms then alternate without a
        restart and a cold buffer pool); otherwise the server restarts on the same data.

        The server's lease (:func:`tibenchlib.lock.server_lease`) is taken first: a study that
        measures on it keeps others from changing its settings or restarting it.
        """
        with self.lease():
            return self._ensure(dynamic)

    start = ensure

    def lease(self):
        """The lease on this server, a context manager (:func:`tibenchlib.lock.server_lease`)."""
        self._secure_root()
        return server_lease(self.private_dir / "lease", self.name)

    def _ensure(self, dynamic: bool) -> EmbeddedServer:
        st = self._state()
        if self._running(st) and st.get("starting"):
            log.info(
                "embedded MariaDB pid %s is left from an interrupted start: restarting it",
                st["pid"],
            )
            self._stop(60)
            st = None
        elif self._running(st) and (st.get("layout") != LAYOUT or not st.get("locked_down")):
            # started by an older tibench: as root, without secure_file_priv, or with its socket
            # and state in a folder mariadbd's user could write
            log.info("embedded MariaDB was started by an older tibench: restarting it locked down")
            self._stop(60)
            st = None
        if self._running(st):
            same = {k: st.get(k) for k in ("options", "prefix")} == self._wanted()
            if same and self._ping(st["port"]):
                log.info("reusing embedded MariaDB pid %s on port %s", st["pid"], st["port"])
                return self
            if dynamic and self._apply_dynamic(st):
                return self
            log.info("embedded MariaDB configuration changed: restarting")
            self._stop(60)
        elif st:
            self._clean_stale(st)
        if self._stop_untracked(60):
            self._clean_stale(None)
        try:
            self._start()
        except BaseException as e:
            self._remove_socket_dir()  # a start refused or failed leaves nothing in /tmp
            if isinstance(e, Exception) and no_space(e, self.root) is not None:
                # what a failed install left takes the space a later start needs
                shutil.rmtree(self.root / "datadir.installing", ignore_errors=True)
                raise no_space(e, self.root) from None
            raise
        return self

    def stop(self, timeout: float = 60) -> bool:
        """Clean shutdown (SIGTERM, then wait); SIGKILL only past ``timeout``."""
        if not self.root.is_dir():
            return False
        with self.lease():
            return self._stop(timeout)

    def _stop(self, timeout: float) -> bool:
        st = self._state()
        stopped = False
        if self._running(st):
            _stop_pid(st["pid"], self.datadir, timeout)
            stopped = True
        stopped = bool(self._stop_untracked(timeout)) or stopped
        if st or stopped:
            self._clean_stale(st)
        return stopped

    # -- internals ---------------------------------------------------------------------------
    def _apply_dynamic(self, st: dict) -> bool:
        """SET GLOBAL the changed options if all are dynamic; record them. False: restart."""
        want = self._wanted()
        if st.get("prefix") != want["prefix"]:
            return False
        old, new = st.get("options", {}), want["options"]
        if set(old) != set(new):
            return False  # an option removed cannot be reset to a default we do not know
        changed = {k: v for k, v in new.items() if old.get(k) != v}
        try:
            conn = self._root_connect(first=False)
        except pymysql.MySQLError:
            return False
        # the SET GLOBALs and the state that records them go together: an interruption between
        # them would leave settings the state does not say, refused before every later run
        with deferred_signals():
            return self._set_and_record(conn, st, changed, old, new)

    def _set_and_record(self, conn, st: dict, changed: dict, old: dict, new: dict) -> bool:
        applied: dict = {}
        try:
            with conn.cursor() as c:
                for k, v in changed.items():
                    name = str(k).replace("-", "_")
                    try:
                        c.execute(
                            f"SET GLOBAL `{name}` = %s", (int(v) if isinstance(v, bool) else v,)
                        )
                    except pymysql.MySQLError:
                        # not dynamic (or not valid at run time): undo and restart instead
                        for k2, v2 in applied.items():
                            c.execute(f"SET GLOBAL `{k2}` = %s", (v2,))
                        return False
                    applied[name] = old.get(k)
        finally:
            conn.close()
        _write_private(
            self.state_path, json.dumps({**st, "options": new}, indent=1, sort_keys=True)
        )
        log.info("embedded MariaDB: SET GLOBAL %s (no restart)", ", ".join(map(str, changed)))
        return True

    def set_globals(self, settings: dict) -> None:
        """``SET GLOBAL`` each of ``settings`` through root on the socket: the arm's settings
        that the running server no longer has, set back (:func:`tibenchlib.target.open_arm`).
        :class:`ServerError` when one cannot be set."""
        try:
            conn = self._root_connect(first=False)
        except pymysql.MySQLError as e:
            raise ServerError(
                f"embedded server '{self.name}': cannot connect as root: {e}"
            ) from None
        try:
            with conn.cursor() as c:
                for k, v in settings.items():
                    name = str(k).replace("-", "_")
                    try:
                        c.execute(
                            f"SET GLOBAL `{name}` = %s", (int(v) if isinstance(v, bool) else v,)
                        )
                    except pymysql.MySQLError as e:
                        raise ServerError(
                            f"embedded server '{self.name}': cannot set {name} back to {v} "
                            f"({e.args[-1]}): restart it (tibench server stop --name {self.name}, "
                            "then run again)"
                        ) from None
        finally:
            conn.close()

    def _clean_stale(self, st: dict | None) -> None:
        # also the socket and pid file an older tibench kept beside the datadir
        for p in (self.run_dir / "mysqld.pid", *self._legacy_runfiles()):
            p.unlink(missing_ok=True)
        if self.socket_dir == self.run_dir:
            self.socket_path.unlink(missing_ok=True)
        else:
            self._unlink_shared_socket()
        self._remove_socket_dir()
        self.state_path.unlink(missing_ok=True)

    def _socket_owners(self, user: pwd.struct_passwd | None = None) -> set[int]:
        """Who may own the socket folder in the shared temporary directory: this user, and
        mariadbd's when tibench runs as root."""
        user = user if user is not None else service_user()
        return {os.getuid(), *([user.pw_uid] if user else [])}

    def _unlink_shared_socket(self) -> None:
        """Remove the socket in the shared temporary directory through a descriptor of its
        folder: a link swapped in for the folder is refused, never followed."""
        try:
            fd = _socket_dir_fd(self.socket_dir, self._socket_owners())
        except FileNotFoundError:
            return
        except ServerError as e:
            log.warning("left %s alone: %s", self.socket_path, e)
            return
        try:
            with suppress(FileNotFoundError):
                os.unlink(self.socket_path.name, dir_fd=fd)
        finally:
            os.close(fd)

    def _remove_socket_dir(self) -> None:
        """The short socket folder in the shared temporary directory, if this server made one
        and it is empty (never another server's socket, never a link or another user's)."""
        if self.socket_dir == self.run_dir:
            return
        with suppress(OSError):
            st = os.lstat(self.socket_dir)
            if stat.S_ISDIR(st.st_mode) and st.st_uid in self._socket_owners():
                self.socket_dir.rmdir()

    def _legacy_runfiles(self) -> list[Path]:
        return [self.root / n for n in ("mysqld.sock", "mysqld.pid", "error.log")]

    def _ping(self, port: int) -> bool:
        try:
            c = pymysql.connect(
                host="127.0.0.1", port=port, user=USER, password=self._password(), connect_timeout=3
            )
            c.close()
            return True
        except pymysql.MySQLError:
            return False

    def _install(self) -> None:
        install = find_binary("mariadb-install-db", "mysql_install_db")
        self._secure_root()
        self.tmp_dir.mkdir(mode=0o700, exist_ok=True)
        tmp = self.root / "datadir.installing"
        shutil.rmtree(tmp, ignore_errors=True)
        template = datadir_template()
        user = service_user()
        if template is not None:
            # a copy of a pristine datadir is what mariadb-install-db would make
            shutil.copytree(template, tmp, symlinks=True)
            if user is not None:
                _chown_tree(tmp, user.pw_uid, user.pw_gid)
        else:
            if user is not None:
                self._prepare_dirs(user)
            _install_db(install, tmp, self.tmp_dir, user)
        tmp.rename(self.datadir)

    def _command(self, port: int) -> list[str]:
        cmd = [
            *self.prefix,
            find_binary("mariadbd", "mysqld"),
            "--no-defaults",
            f"--datadir={self.datadir}",
            f"--socket={self.socket_path}",
            f"--pid-file={self.run_dir / 'mysqld.pid'}",
            f"--log-error={self.error_log}",
            f"--port={port}",
            "--bind-address=127.0.0.1",
            f"--secure-file-priv={self.files_dir}",
            f"--tmpdir={self.tmp_dir}",
            *_flags(self._wanted()["options"]),
        ]
        user = service_user()
        if user is not None:
            cmd.append(f"--user={user.pw_name}")
        return cmd

    def _prepare_dirs(self, user: pwd.struct_passwd | None) -> None:
        """The folders mariadbd writes exist; as root, owned by and reachable for mariadbd's user,
        while the server's folder and ``private/`` stay the invoking user's."""
        self._secure_root()
        for d in (self.files_dir, self.tmp_dir, self.run_dir):
            d.mkdir(mode=0o700, exist_ok=True)
        if self.socket_dir != self.run_dir:
            _make_socket_dir(self.socket_dir, self._socket_owners(user))
        if user is None:
            return
        _grant_traversal(self.root.parent, user.pw_uid)
        for d in (self.files_dir, self.tmp_dir, self.run_dir):
            _own_dir(d, user.pw_uid, user.pw_gid, 0o700)
        if self.socket_dir != self.run_dir:
            _own_dir(self.socket_dir, user.pw_uid, user.pw_gid, 0o700, self._socket_owners(user))
        if os.path.islink(self.datadir):
            raise ServerError(f"{self.datadir} is a link: remove it and start again")
        if os.path.lexists(self.datadir) and os.lstat(self.datadir).st_uid != user.pw_uid:
            # a datadir made by an older tibench that ran mariadbd as root
            log.info("handing %s to user %s", self.datadir, user.pw_name)
            _chown_tree(self.datadir, user.pw_uid, user.pw_gid)

    def _start(self, attempts: int = 3) -> None:
        self._password()  # the credentials file is made (0600) by the invoking user
        if not self.datadir.exists():
            self._install()
        self._prepare_dirs(service_user())
        # the marker is ours; an older tibench kept it in the datadir
        marker = self.private_dir / "initialized"
        first = not (marker.exists() or os.path.lexists(self.datadir / "tibench.initialized"))
        for attempt in range(attempts):
            port = free_port()
            self.error_log.unlink(missing_ok=True)
            try:
                if self._spawn(port, first, marker):
                    return
            except BaseException:
                # Interrupted or failed at any moment of the start: no server is left behind,
                # neither the child just spawned nor one a signal caught before its pid was kept.
                with deferred_signals():
                    self._stop_untracked(timeout=30)
                    self._clean_stale(None)
                raise
            err = self._log_tail()
            if "bind on tcp/ip port" in err.lower() or "address already in use" in err.lower():
                log.info("port %s was taken (attempt %s): trying another", port, attempt + 1)
                continue
            raise ServerError(f"mariadbd did not start; end of {self.error_log}:\n{err}")
        raise ServerError(f"mariadbd could not bind a free port in {attempts} attempts")

    def _spawn(self, port: int, first: bool, marker: Path) -> bool:
        """Start mariadbd on ``port`` and make it ready (bootstrap, lockdown); False when it
        exited before it was ready.

        Its pid goes to the state file before anything waits on it: a tibench killed (SIGKILL)
        during the start leaves a server that ``status`` shows and ``stop`` stops, and that the
        next start restarts (it is not locked down)."""
        proc = subprocess.Popen(
            self._command(port),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=child_env(),  # a study's passwords stay out of mariadbd's environment
            start_new_session=True,  # survives the notebook kernel; stopped explicitly
        )
        state = {
            "pid": proc.pid,
            "port": port,
            **self._wanted(),
            "started": time.time(),
            "layout": LAYOUT,
            "starting": True,
        }
        _write_private(self.state_path, json.dumps(state, indent=1, sort_keys=True))
        if not self._wait_ready(proc, port, first):
            self.state_path.unlink(missing_ok=True)
            return False
        if first:
            self._bootstrap()
        if not marker.exists():
            _write_private(marker, "")
        self._lockdown()
        del state["starting"]
        state["locked_down"] = True
        _write_private(self.state_path, json.dumps(state, indent=1, sort_keys=True))
        log.info("embedded MariaDB pid %s on 127.0.0.1:%s", proc.pid, port)
        return True

    def untracked(self) -> list[int]:
        """Pids of mariadbd processes on this datadir that the state file does not name: what an
        interrupted start of an older tibench, or a server started by hand, left running."""
        st = self._state()
        known = st.get("pid") if st else None
        return [
            pid
            for pid in psutil.pids()
            if pid != known and pid != os.getpid() and is_server_process(pid, self.datadir)
        ]

    def _stop_untracked(self, timeout: float) -> list[int]:
        """Stop every mariadbd on this datadir but the one the state file names as running.

        Called under the server's lease, where no other tibench starts one: a server on this
        datadir that tibench does not track holds the datadir's locks, so a new one would die on
        them while its readiness check reached the old one's socket."""
        st = self._state()
        keep = st.get("pid") if self._running(st) and not st.get("starting") else None
        stopped = []
        for pid in psutil.pids():
            if pid != keep and is_server_process(pid, self.datadir):
                log.warning(
                    "stopping mariadbd pid %s on %s, which tibench did not track", pid, self.datadir
                )
                _stop_pid(pid, self.datadir, timeout)
                stopped.append(pid)
        return stopped

    def _wait_ready(
        self, proc: subprocess.Popen, port: int, first: bool, timeout: float = 90
    ) -> bool:
        """Whether the child ``proc`` answers on the socket: the server found there must be
        that child (still running, listening on ``port``), never another one's socket."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return False
            if self.socket_path.exists():
                try:
                    conn = self._root_connect(first)
                except pymysql.MySQLError:
                    conn = None
                if conn is not None:
                    try:
                        with conn.cursor() as c:
                            c.execute("SELECT @@port")
                            answered = c.fetchone()[0]
                    finally:
                        conn.close()
                    if answered == port and proc.poll() is None:
                        return True
            time.sleep(0.2)
        proc.kill()
        proc.wait()
        return False

    def _root_connect(self, first: bool) -> pymysql.Connection:
        # A first start interrupted after bootstrap leaves root with the generated password.
        tries = ["", self._password()] if first else [self._password()]
        for i, pw in enumerate(tries):
            try:
                return pymysql.connect(
                    unix_socket=str(self.socket_path),
                    user="root",
                    password=pw,
                    connect_timeout=3,
                    autocommit=True,
                )
            except pymysql.err.OperationalError:
                if i == len(tries) - 1:
                    raise
        raise AssertionError("unreachable")

    def _bootstrap(self) -> None:
        pw = self._password()
        conn = self._root_connect(first=True)
        try:
            with conn.cursor() as c:
                for host in ("127.0.0.1", "localhost"):
                    c.execute(
                        f"CREATE USER IF NOT EXISTS '{USER}'@'{host}' IDENTIFIED BY %s", (pw,)
                    )
                c.execute(f"CREATE DATABASE IF NOT EXISTS `{self.database}`")
                c.execute("ALTER USER 'root'@'localhost' IDENTIFIED BY %s", (pw,))
        finally:
            conn.close()

    def _lockdown(self) -> list[str]:
        """Drop every account that needs no password except what tibench made; returns them.

        mariadb-install-db makes ``root`` on ``127.0.0.1``, ``::1`` and the host name with empty
        passwords (and anonymous users on some versions); older tibench versions left them.
        Locked accounts (``mariadb.sys``) cannot log in and stay.
        """
        conn = self._root_connect(first=False)
        dropped = []
        try:
            with conn.cursor() as c:
                c.execute(
                    "SELECT User, Host, JSON_VALUE(Priv, '$.authentication_string'),"
                    " JSON_VALUE(Priv, '$.plugin'), JSON_VALUE(Priv, '$.account_locked')"
                    " FROM mysql.global_priv"
                )
                for user, host, auth, plugin, locked in c.fetchall():
                    if locked in ("true", "1", 1, True):
                        continue
                    keep = (user, host) in {("root", "localhost")} | {
                        (USER, h) for h in ("127.0.0.1", "localhost")
                    }
                    no_password = not auth and plugin in (None, "", "mysql_native_password")
                    if user == "" or (no_password and not keep) or (user == "root" and not keep):
                        c.execute("DROP USER %s@%s", (user, host))
                        dropped.append(f"{user}@{host}")
                    elif no_password:
                        c.execute(
                            "ALTER USER %s@%s IDENTIFIED BY %s", (user, host, self._password())
                        )
                        dropped.append(f"{user}@{host} (password set)")
                self._grant(c)
                if dropped:
                    c.execute("FLUSH PRIVILEGES")
        finally:
            conn.close()
        if dropped:
            log.info("embedded MariaDB locked down: %s", ", ".join(dropped))
        return dropped

    def _grant(self, c) -> None:
        """Give the benchmark account exactly :data:`GRANTS` (and this instance's extra ones),
        taking back what older versions gave (ALL PRIVILEGES WITH GRANT OPTION)."""
        privs = ", ".join(dict.fromkeys((*GRANTS, *self.grants)))
        for host in ("127.0.0.1", "localhost"):
            c.execute(f"REVOKE ALL PRIVILEGES, GRANT OPTION FROM '{USER}'@'{host}'")
            c.execute(f"GRANT {privs} ON *.* TO '{USER}'@'{host}'")
            c.execute(f"GRANT {SCHEMA_GRANTS} ON `%`.* TO '{USER}'@'{host}'")
            c.execute(f"GRANT SELECT ON `mysql`.* TO '{USER}'@'{host}'")

    def _log_tail(self, n: int = 25) -> str:
        try:
            # mariadbd's user owns run/: a link planted there is not followed, and a FIFO or a
            # device put there is not waited on (O_NONBLOCK) nor read
            fd = os.open(self.error_log, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return "(no error log)"
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return f"(not read: {self.error_log} is not a regular file)"
        with os.fdopen(fd, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - 65536))
            text = f.read().decode(errors="replace")
        return "\n".join(text.splitlines()[-n:])


def _stop_pid(pid: int, datadir: Path, timeout: float) -> None:
    """SIGTERM the server ``pid`` of ``datadir`` and wait for it; SIGKILL past ``timeout``.
    Signalled only while ``/proc`` shows it is that server."""
    if not is_server_process(pid, datadir):
        return
    with suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _pid_alive(pid) and time.monotonic() < deadline:
        _reap(pid)
        time.sleep(0.1)
    if is_server_process(pid, datadir):
        log.warning("mariadbd %s ignored SIGTERM for %ss: killing it", pid, timeout)
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        while _pid_alive(pid):
            _reap(pid)
            time.sleep(0.05)
    _reap(pid)


@contextmanager
def deferred_signals() -> Iterator[None]:
    """Hold SIGINT and SIGTERM until the block ends, then act on them as they would have: the
    clean-up of an interrupted start is not itself cut short by a second Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    old = {
        sig: signal.signal(sig, lambda signum, frame: caught.append(signum))
        for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        for sig in dict.fromkeys(caught):
            handler = old[sig]
            if callable(handler):
                handler(sig, None)
            elif handler == signal.SIG_DFL:
                signal.raise_signal(sig)


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


@contextmanager
def leases(names: list[str]) -> Iterator[None]:
    """Hold the lease (:meth:`EmbeddedServer.lease`) of each named embedded server, in order.
    Taken under a study's lock, they last as long as that lock."""
    with ExitStack() as stack:
        for name in names:
            stack.enter_context(embedded(name).lease())
        yield


def embedded(name: str = "embedded", **kw) -> EmbeddedServer:
    """The embedded server object (not started): ``embedded().ensure()`` to start or reuse it."""
    return EmbeddedServer(name=name, **kw)

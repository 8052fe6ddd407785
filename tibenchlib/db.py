"""Connections: one :class:`ConnInfo` per target, SQLAlchemy engines, server flavor.

The password lives only in :class:`ConnInfo` (hidden from its repr) and in a 0600 file for
sysbench; everything that is displayed or stored uses :meth:`ConnInfo.masked_url`. A password read
from the environment (:func:`env_secret`) is kept out of the environment of every child process
(:func:`child_env`); notebook kernels read it from a 0600 file (:func:`secrets_for_kernels`).

No connection to a target sends a local file on the server's request (``LOAD DATA LOCAL
INFILE``): a hostile server may ask for any file the client can read. Only a connection opened
inside :func:`local_files` offers the capability, and it sends only the file named by the
statement it runs (:func:`sending_local_file`); every other request is refused
(:class:`LocalFileRefused`) with nothing sent.
"""

from __future__ import annotations

import contextvars
import json
import os
import re
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pymysql
import sqlalchemy as sa
from pymysql.connections import Connection, MySQLResult
from pymysql.protocol import LoadLocalPacketWrapper
from sqlalchemy.engine import URL, make_url

#: Whether connections opened now offer LOAD DATA LOCAL (see :func:`local_files`).
_local_files_wanted: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "local_files_wanted", default=False
)


class LocalFileRefused(pymysql.err.OperationalError):
    """The server asked for a local file this client did not name; nothing was sent."""


class _GuardedResult(MySQLResult):
    """A query's result that answers a server's file request only with the file its statement
    named."""

    def _read_load_local_packet(self, first_packet):
        conn = self.connection
        asked = LoadLocalPacketWrapper(first_packet).filename
        if conn._local_infile and conn.local_file is not None and asked == conn.local_file:
            return super()._read_load_local_packet(first_packet)
        try:
            conn.write_packet(b"")  # an empty file: the protocol's way to send nothing
        finally:
            # a server asking for files it was not offered is not talked to any further
            conn._force_close()
        name = asked.decode(errors="replace")
        raise LocalFileRefused(
            2000,
            f"the server at {conn.host}:{conn.port} asked for the local file {name!r} "
            "(LOAD DATA LOCAL INFILE), which tibench did not offer; refused, nothing sent "
            "(is this target the database you meant?)",
        )


class GuardedConnection(Connection):
    """A PyMySQL connection that sends a local file only while :func:`sending_local_file` names
    it, and only when opened inside :func:`local_files`."""

    local_file: bytes | None = None

    def _read_query_result(self, unbuffered=False):
        # PyMySQL's own body, with the guarded result in place of MySQLResult
        self._result = None
        result = _GuardedResult(self)
        if unbuffered:
            result.init_unbuffered_query()
        else:
            result.read()
        self._result = result
        if result.server_status is not None:
            self.server_status = result.server_status
        return result.affected_rows


def guarded_connect(dialect, conn_rec, cargs, cparams) -> GuardedConnection:
    """SQLAlchemy's ``do_connect`` hook: a :class:`GuardedConnection`, offering local files only
    inside :func:`local_files` whatever the connection arguments say."""
    cparams["local_infile"] = _local_files_wanted.get()
    return GuardedConnection(*cargs, **cparams)


@contextmanager
def local_files() -> Iterator[None]:
    """Connections opened meanwhile (by engines of :meth:`ConnInfo.engine`, in this thread or
    task) offer LOAD DATA LOCAL; they still send only what :func:`sending_local_file` names."""
    token = _local_files_wanted.set(True)
    try:
        yield
    finally:
        _local_files_wanted.reset(token)


@contextmanager
def sending_local_file(conn, path: str | Path) -> Iterator[None]:
    """While the block runs, ``conn`` (a :class:`GuardedConnection`) sends ``path`` when the
    server asks for exactly that file, as ``LOAD DATA LOCAL INFILE path`` makes it do."""
    before = getattr(conn, "local_file", None)
    conn.local_file = os.fsencode(str(path))
    try:
        yield
    finally:
        conn.local_file = before


@dataclass(frozen=True)
class ConnInfo:
    """Where and how to connect. ``password`` is excluded from ``repr``."""

    host: str
    port: int
    user: str
    database: str
    password: str | None = field(default=None, repr=False)
    tls: dict | None = None
    embedded: bool = False

    def url(self, database: str | None = None) -> URL:
        return URL.create(
            "mysql+pymysql",
            username=self.user,
            password=self.password,
            host=self.host,
            port=self.port,
            database=database if database is not None else self.database,
        )

    def masked_url(self) -> str:
        return self.url().render_as_string(hide_password=True)

    def engine(self, database: str | None = None, **kw) -> sa.Engine:
        connect_args: dict = {"connect_timeout": 10}
        if self.tls:
            ssl = {k: v for k, v in self.tls.items() if k in ("ca", "cert", "key") and v}
            ssl["check_hostname"] = bool(self.tls.get("verify_identity"))
            connect_args["ssl"] = ssl
        connect_args.update(kw.pop("connect_args", {}))
        eng = sa.create_engine(
            self.url(database), connect_args=connect_args, pool_pre_ping=True, **kw
        )
        sa.event.listen(eng, "do_connect", guarded_connect)
        return eng

    def execute_on_server(self, sql: str) -> None:
        """Run one statement (``CREATE DATABASE``...) on the server, no database selected, in
        a transaction of its own; the engine is disposed of afterwards."""
        eng = self.engine(database="")
        try:
            with eng.begin() as c:
                c.exec_driver_sql(sql)
        finally:
            eng.dispose()

    @classmethod
    def from_url(cls, url: str, password: str | None, tls: dict | None = None) -> ConnInfo:
        u = make_url(url)
        return cls(
            host=u.host or "127.0.0.1",
            port=u.port or 4000,
            user=u.username or "root",
            database=u.database or "sbtest",
            password=password if password is not None else u.password,
            tls=tls,
        )

    def sysbench_args(self) -> list[str]:
        """Connection flags for sysbench, without the password (that goes in a config file)."""
        args = [
            "--db-driver=mysql",
            f"--mysql-host={self.host}",
            f"--mysql-port={self.port}",
            f"--mysql-user={self.user}",
            f"--mysql-db={self.database}",
        ]
        if self.tls:
            args.append("--mysql-ssl=on")
            if self.tls.get("ca"):
                args.append(f"--mysql-ssl-ca={self.tls['ca']}")
        return args


CONFIG_PREFIX, CONFIG_SUFFIX = "sysbench-", ".cfg"

#: The 0600 file (its path) from which a notebook kernel reads the passwords its parent was given.
SECRETS_ENV = "TIBENCH_SECRETS_FILE"
SECRETS_PREFIX, SECRETS_SUFFIX = "secrets-", ".json"

_secret_names: set[str] = set()  # environment variables read as passwords, in this process


def keep_from_children(name: str) -> None:
    """From now on the variable ``name`` holds a secret: :func:`child_env` leaves it out."""
    _secret_names.add(name)


def env_secret(name: str) -> str | None:
    """The password in the environment variable ``name`` (or in the kernel's secrets file, see
    :func:`secrets_for_kernels`); from now on ``name`` is kept from children's environments."""
    _secret_names.add(name)
    if name in os.environ:
        return os.environ[name]
    path = os.environ.get(SECRETS_ENV)
    if not path:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd) as f:
            return json.load(f).get(name)
    except (OSError, ValueError):
        return None


def child_env() -> dict[str, str]:
    """This process's environment without the passwords read through :func:`env_secret` (nor the
    secrets file's path): what a tool (sysbench, java, mydumper, mariadbd) is started with."""
    drop = _secret_names | {SECRETS_ENV}
    return {k: v for k, v in os.environ.items() if k not in drop}


@contextmanager
def secrets_hidden() -> Iterator[None]:
    """Meanwhile, this process's environment lacks what :func:`child_env` leaves out: for a
    library that starts processes of its own with ``os.environ`` (asyncssh runs gcc through
    ``ctypes.util.find_library`` when imported)."""
    hidden = {k: os.environ.pop(k) for k in _secret_names | {SECRETS_ENV} if k in os.environ}
    try:
        yield
    finally:
        os.environ.update(hidden)


def secret_env_names(data) -> list[str]:
    """The variables named by every ``*password_env`` and ``token_env`` field of a study's
    parameters (a dict)."""
    out: list[str] = []
    if isinstance(data, dict):
        for k, v in data.items():
            if str(k).endswith(("password_env", "token_env")) and isinstance(v, str):
                out.append(v)
            else:
                out += secret_env_names(v)
    elif isinstance(data, list | tuple):
        for v in data:
            out += secret_env_names(v)
    return list(dict.fromkeys(out))


@contextmanager
def secrets_for_kernels(names, directory: str | Path) -> Iterator[None]:
    """While the block runs, the passwords in the variables ``names`` are not in this process's
    environment (a notebook kernel started now inherits none) but in a 0600 file of
    ``directory`` that :func:`env_secret` reads; restored and the file removed afterwards."""
    values = {n: os.environ[n] for n in names if n in os.environ}
    if not values:
        yield
        return
    _secret_names.update(values)
    before = os.environ.get(SECRETS_ENV)
    with private_file(json.dumps(values), Path(directory), SECRETS_PREFIX, SECRETS_SUFFIX) as p:
        for n in values:
            del os.environ[n]
        os.environ[SECRETS_ENV] = str(p)
        try:
            yield
        finally:
            os.environ.update(values)
            if before is None:
                os.environ.pop(SECRETS_ENV, None)
            else:
                os.environ[SECRETS_ENV] = before


@contextmanager
def private_file(text: str, directory: Path, prefix: str, suffix: str) -> Iterator[Path]:
    """``text`` in a new file of ``directory``, mode 0600 from its creation, removed afterwards
    (what a killed run leaves, :func:`remove_stale_files` deletes)."""
    fd, name = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=directory)
    os.fchmod(fd, stat.S_IRUSR | stat.S_IWUSR)
    p = Path(name)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    try:
        yield p
    finally:
        p.unlink(missing_ok=True)


def remove_stale_files(directory: str | Path, prefix: str, suffix: str) -> int:
    """Delete the ``prefix*suffix`` files a killed run left in ``directory``; returns how many."""
    n = 0
    for p in Path(directory).glob(f"{prefix}*{suffix}"):
        p.unlink(missing_ok=True)
        n += 1
    return n


@contextmanager
def secret_file(text: str, directory: str | Path | None = None) -> Iterator[Path]:
    """``text`` (a password, a tool's credentials) in a 0600 file, removed afterwards.

    ``directory`` is the study's private folder (``paths.private_dir``, mode 0700, which
    :func:`remove_stale_configs` sweeps after a kill); without it, a private temp directory.
    """
    made = directory is None
    d = Path(tempfile.mkdtemp(prefix="tibench-") if made else directory)
    try:
        with private_file(text, d, CONFIG_PREFIX, CONFIG_SUFFIX) as p:
            yield p
    finally:
        if made:
            os.rmdir(d)


@contextmanager
def secret_config_file(info: ConnInfo, directory: str | Path | None = None) -> Iterator[Path]:
    """A sysbench ``--config-file`` holding the password (:func:`secret_file`); the process
    list shows only the file's path."""
    with secret_file(f"mysql-password={info.password}\n" if info.password else "", directory) as p:
        yield p


def remove_stale_configs(directory: str | Path) -> int:
    """Delete credentials files a killed run left in ``directory``; returns how many (the secrets
    file of a running notebook kernel, :data:`SECRETS_ENV`, is kept)."""
    n = remove_stale_files(directory, CONFIG_PREFIX, CONFIG_SUFFIX)
    live = os.environ.get(SECRETS_ENV)
    for p in Path(directory).glob(f"{SECRETS_PREFIX}*{SECRETS_SUFFIX}"):
        if str(p) != live:
            p.unlink(missing_ok=True)
            n += 1
    return n


@dataclass(frozen=True)
class ServerInfo:
    flavor: str  # "tidb" | "mariadb" | "mysql"
    version: str  # the product's own version, e.g. "v8.5.4", "10.11.6"
    version_string: str  # what SELECT VERSION() returned

    @property
    def is_tidb(self) -> bool:
        return self.flavor == "tidb"


def classify_version(version_string: str, version_comment: str | None = None) -> ServerInfo:
    """Flavor and product version from ``SELECT VERSION()`` (and ``@@version_comment``).

    TiDB reports a MySQL-compatible prefix: ``8.0.11-TiDB-v8.5.4``; MariaDB ``10.11.6-MariaDB-…``.
    """
    s = version_string.strip()
    m = re.search(r"TiDB-(v?[\w.\-]+)", s)
    if m:
        return ServerInfo("tidb", m.group(1), s)
    if "mariadb" in s.lower() or (version_comment and "mariadb" in version_comment.lower()):
        return ServerInfo("mariadb", s.split("-")[0], s)
    return ServerInfo("mysql", s.split("-")[0], s)


def server_info(engine: sa.Engine) -> ServerInfo:
    with engine.connect() as c:
        v = c.exec_driver_sql("SELECT VERSION()").scalar_one()
        try:
            comment = c.exec_driver_sql("SELECT @@version_comment").scalar_one()
        except sa.exc.DBAPIError:
            comment = None
    return classify_version(str(v), comment)


#: Query parameters through which a MySQL driver accepts a password.
PASSWORD_QUERY_KEYS = frozenset({"password", "passwd", "pwd", "pass"})
_PW_PARAM = "|".join(sorted(PASSWORD_QUERY_KEYS))


def _split_url(url: str):
    """``make_url(url)`` with a raw ``@`` inside the password put back where it belongs; None
    when SQLAlchemy cannot parse the URL."""
    try:
        u = make_url(url)
    except Exception:  # sqlalchemy.exc.ArgumentError, or ValueError for a bad port
        return None
    if u.host and "@" in u.host:
        # "user:p@ss@host": SQLAlchemy ends the password at the first '@'
        head, host = u.host.rsplit("@", 1)
        u = u.set(password=f"{u.password or ''}@{head}", host=host)
    return u


def url_has_password(url: str) -> bool:
    """Whether ``url`` carries a password in any form SQLAlchemy accepts: ``user:pass@``
    (with ``/``, ``?`` or ``@`` inside, raw or percent-encoded) or a query parameter
    (``?password=``, ``?passwd=`` ...)."""
    u = _split_url(url)
    if u is None:
        return bool(re.search(r"://[^@]*:[^@]*@", url)) or bool(
            re.search(rf"[?&]({_PW_PARAM})=", url, re.I)
        )
    return bool(u.password) or any(k.lower() in PASSWORD_QUERY_KEYS for k in u.query)


def mask_url(url: str | None) -> str | None:
    """``url`` with every password (userinfo and query parameters) shown as ``***``."""
    if not url:
        return url
    u = _split_url(url)
    if u is None:
        # not a URL SQLAlchemy reads: mask what looks like userinfo and password parameters
        out = re.sub(r"(://[^:/@]*):.*@", r"\1:***@", url)
        return re.sub(rf"([?&](?:{_PW_PARAM})=)[^&]*", r"\1***", out, flags=re.I)
    if any(k.lower() in PASSWORD_QUERY_KEYS for k in u.query):
        u = u.set(
            query={
                k: ("***" if k.lower() in PASSWORD_QUERY_KEYS else v) for k, v in u.query.items()
            }
        )
    return u.render_as_string(hide_password=True).replace("%2A%2A%2A", "***")


def mask_urls(obj):
    """A copy of a JSON-like structure with every string that holds ``://`` masked."""
    if isinstance(obj, dict):
        return {k: mask_urls(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [mask_urls(v) for v in obj]
    if isinstance(obj, str) and "://" in obj:
        return mask_url(obj)
    return obj


def mask(text: str, secret: str | None) -> str:
    """Replace every occurrence of ``secret`` (if any) with ``***``."""
    return text.replace(secret, "***") if secret else text

"""The results catalog: SQLite by default, any SQLAlchemy URL (MySQL, TiDB) for shared history.

Written as results arrive, one transaction per run, so an interrupted study loses nothing already
measured. The store never computes: it keeps rows and gives them back as DataFrames.

Tables (documented in docs/catalog.md):

``studies``        one row per study: its validated parameters (JSON) and when it was first seen.
``arms``           one row per study × arm: server options, masked target URL, flavor, version.
``runs``           one row per benchmark run (sysbench): key, arm, workload, threads, repeat,
                   status/error, sysbench's summary figures, histogram percentiles, warnings,
                   the exact command (no password), the raw log's path, timings, attempts.
``run_attempts``   every attempt of every run as it was recorded (``runs`` keeps each run's
                   value: a failed re-measurement never replaces a good result).
``intervals``      sysbench's per-interval lines of every run (t, tps, qps, latency, err/s).
``samples``        resource use during runs: CPU and RSS of server and client per second, with
                   run-queue wait and how busy their CPUs were.
``environment``    environment captures (JSON) per study × arm.
``prepare_steps``  prepare / ANALYZE / warm-up / verify steps with their timings.
``tpch_queries``   TPC-H query executions: query, arm, mode, stream, repeat, status, seconds.
``bindings``       NUMA/CPU binding of the server as verified from /proc, per policy block.
``numa_memory``    ``numastat -p`` of the server per NUMA node, before and after each policy block.
``cluster_metrics`` Prometheus range queries over each run's window (tidb/tikv/pd/tiflash CPU, RSS).
``warmups``        unrecorded warm-up runs after a server start or arm switch: TPS, MSER-5 cut,
                   change from the previous warm-up run, and whether throughput was steady.
``dm_runs``        phase dm: each run's dump/load/sync measures (seconds, MB/s, rows per
                   statement, statement latency, events/s, catch-up), keyed like ``runs``.
``dm_lag``         phase dm: the replica's lag behind the source over time, per sync run.
``ycsb_ops``       per YCSB run × operation (READ, UPDATE, INSERT…, and ALL): calls, errors,
                   avg/min/max/p95/p99 latency (ms) and where the figures come from.
``client_hosts``   pre-flight of each client host per arm: tool version, clock offset and its
                   round trip, whether it reaches the target, cores, problems found.
``run_hosts``      each client of a run on several hosts: host, threads, actual start (and its
                   delay after the agreed instant), end, exit, TPS, raw log, failure.
``tpcc_runs``      the TPC-C figures of each ``tpcc`` run (keyed like ``runs``): tool, warehouses,
                   wait, clients, tpmC, tpmTotal, efficiency, New-Orders, per-transaction mix and
                   latency (JSON), the consistency checks after the run, the clients' logs.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pandas as pd
import psutil
import sqlalchemy as sa

from . import paths, record
from .db import guarded_connect, mask_url

log = logging.getLogger(__name__)

meta = sa.MetaData()

#: ``PRAGMA user_version`` of a SQLite catalog this version writes (0: made before versions).
SCHEMA_VERSION = 1


class CatalogError(RuntimeError):
    """The catalog cannot be opened or was written by a newer tibench; names the file."""


class CatalogPathError(CatalogError):
    """The catalog's path holds something that is not a file (a directory); names it."""

    exit_code = 2  # bad input, as a bad params file: nothing was run


class CatalogDiskFull(CatalogError):
    """The catalog's file system is full; names the catalog."""

    exit_code = 2  # the same exit as any full disk (see tibenchlib.cli)


class CatalogDamaged(CatalogError):
    """The catalog is not a readable SQLite file, a page of it is corrupt, or a JSON value in
    it does not decode; names the file (and the row) and what to do."""

    exit_code = 2  # bad input: nothing is run on a catalog that cannot be read


class CatalogEmpty(CatalogError):
    """A study's catalog that a reader was asked for is missing or empty (0 bytes)."""

    exit_code = 2


class CatalogBusy(CatalogError):
    """Another process held the catalog locked past every wait; names it and the holders."""


#: Seconds SQLite itself waits for a lock, per statement.
BUSY_TIMEOUT_S = 30.0
#: Seconds a write of a measured result keeps retrying while another process holds the catalog
#: (``TIBENCH_CATALOG_WAIT_S``), after which the result is kept in a file beside the catalog.
CATALOG_WAIT_S = 600.0
#: The folder beside a catalog holding measured runs not yet written to it (a held lock).
PENDING_FOLDER = "pending-runs"


def check_catalog_path(path: Path, *, reading: bool = False) -> None:
    """Raise :class:`CatalogPathError` when ``path`` exists and is not a regular file (reading
    a directory as an empty catalog would show an empty study without a word); with
    ``reading``, :class:`CatalogEmpty` when it is empty (0 bytes): a reader finds no study
    there and must not start a catalog in it."""
    if path.exists() and not path.is_file():
        kind = "a directory" if path.is_dir() else "not a regular file"
        raise CatalogPathError(
            f"{path} is {kind}, not a tibench catalog: move it aside (mv {path} {path}.bad) "
            "and run again"
        )
    if reading and path.is_file() and path.stat().st_size == 0:
        raise CatalogEmpty(
            f"{path} is empty (0 bytes), not a tibench catalog: nothing to read; "
            "`tibench run` starts a new catalog there"
        )


_S = sa.String(200)
studies = sa.Table(
    "studies",
    meta,
    sa.Column("study", _S, primary_key=True),
    sa.Column("params_json", sa.Text),
    sa.Column("created_at", sa.Float),
    sa.Column("updated_at", sa.Float),
)
arms = sa.Table(
    "arms",
    meta,
    sa.Column("study", _S, primary_key=True),
    sa.Column("arm", _S, primary_key=True),
    sa.Column("options_json", sa.Text),
    sa.Column("target", sa.Text),
    sa.Column("flavor", _S),
    sa.Column("version", _S),
    sa.Column("updated_at", sa.Float),
)
_KINDS = {"str": _S, "text": sa.Text, "int": sa.Integer, "float": sa.Float}
#: One row per run: its columns are :class:`~tibenchlib.record.RunRecord`'s fields.
runs = sa.Table(
    "runs",
    meta,
    *(sa.Column(n, _KINDS[k], primary_key=pk) for n, k, pk in record.sql_columns()),
)
#: Every attempt of every run, as recorded (``runs`` holds each run's value: see
#: :meth:`Store.record_run`); ``recorded_at`` orders them.
run_attempts = sa.Table(
    "run_attempts",
    meta,
    *(sa.Column(n, _KINDS[k], index=n == "run_key") for n, k, _ in record.sql_columns()),
    sa.Column("recorded_at", sa.Float),
)
intervals = sa.Table(
    "intervals",
    meta,
    sa.Column("study", _S, index=True),
    sa.Column("run_key", _S, index=True),
    sa.Column("t", sa.Float),
    sa.Column("threads", sa.Float),
    sa.Column("tps", sa.Float),
    sa.Column("qps", sa.Float),
    sa.Column("reads", sa.Float),
    sa.Column("writes", sa.Float),
    sa.Column("other", sa.Float),
    sa.Column("lat_ms", sa.Float),
    sa.Column("err_s", sa.Float),
    sa.Column("reconn_s", sa.Float),
)
samples = sa.Table(
    "samples",
    meta,
    sa.Column("study", _S, index=True),
    sa.Column("run_key", _S, index=True),
    sa.Column("source", _S),
    sa.Column("t", sa.Float),
    sa.Column("cpu_user_pct", sa.Float),
    sa.Column("cpu_system_pct", sa.Float),
    sa.Column("cpu_pct", sa.Float),
    sa.Column("rss_bytes", sa.Float),
    sa.Column("cores_allowed", sa.Float),
    sa.Column("cpu_wait_pct", sa.Float),
    sa.Column("cpus_busy_pct", sa.Float),
)
environment = sa.Table(
    "environment",
    meta,
    sa.Column("study", _S, primary_key=True),
    sa.Column("arm", _S, primary_key=True),
    sa.Column("captured_at", sa.Float),
    sa.Column("capture_json", sa.Text),
)
prepare_steps = sa.Table(
    "prepare_steps",
    meta,
    sa.Column("study", _S, index=True),
    sa.Column("arm", _S),
    sa.Column("step", _S),
    sa.Column("table_name", _S),
    sa.Column("status", _S),
    sa.Column("seconds", sa.Float),
    sa.Column("detail", sa.Text),
    sa.Column("at", sa.Float),
)
tpch_queries = sa.Table(
    "tpch_queries",
    meta,
    sa.Column("study", _S, primary_key=True),
    sa.Column("arm", _S, primary_key=True),
    sa.Column("mode", _S, primary_key=True),
    sa.Column("query", sa.Integer, primary_key=True),
    sa.Column("stream", sa.Integer, primary_key=True),
    sa.Column("repeat", sa.Integer, primary_key=True),
    sa.Column("status", _S),
    sa.Column("seconds", sa.Float),
    sa.Column("verified", sa.Boolean),
    sa.Column("verify_detail", sa.Text),
    sa.Column("rows", sa.Integer),
    sa.Column("error", sa.Text),
    sa.Column("at", sa.Float),
)

bindings = sa.Table(
    "bindings",
    meta,
    sa.Column("study", _S, index=True),
    sa.Column("policy", _S),
    sa.Column("pid", sa.Integer),
    sa.Column("verified", sa.Boolean),
    sa.Column("cpus_allowed", sa.Text),
    sa.Column("mem_policy", sa.Text),
    sa.Column("detail", sa.Text),
    sa.Column("at", sa.Float),
)
numa_memory = sa.Table(
    "numa_memory",
    meta,
    sa.Column("study", _S, index=True),
    sa.Column("policy", _S),
    sa.Column("when", _S),
    sa.Column("at", sa.Float),
    sa.Column("table_json", sa.Text),
    sa.Column("warnings_json", sa.Text),
)

cluster_metrics = sa.Table(
    "cluster_metrics",
    meta,
    sa.Column("study", _S, index=True),
    sa.Column("run_key", _S, index=True),
    sa.Column("component", _S),
    sa.Column("metric", _S),
    sa.Column("instance", _S),
    sa.Column("job", _S),
    sa.Column("t", sa.Float),
    sa.Column("value", sa.Float),
)

# warm-up runs, measured (see tibenchlib.warmup)
warmups = sa.Table(
    "warmups",
    meta,
    sa.Column("study", _S, index=True),
    sa.Column("arm", _S),
    sa.Column("workload", _S),
    sa.Column("threads", sa.Integer),
    sa.Column("opening", sa.Integer),
    sa.Column("attempt", sa.Integer),
    sa.Column("seconds", sa.Float),
    sa.Column("tps", sa.Float),
    sa.Column("n_intervals", sa.Integer),
    sa.Column("mser_cut_s", sa.Float),
    sa.Column("change_pct", sa.Float),
    sa.Column("steady", sa.Boolean),
    sa.Column("detail", sa.Text),
    sa.Column("log_path", sa.Text),
    sa.Column("at", sa.Float),
)

# DM load tuning (phase dm): the tools' own measures per run, and the replica's lag over time
dm_runs = sa.Table(
    "dm_runs",
    meta,
    sa.Column("study", _S, primary_key=True),
    sa.Column("run_key", _S, primary_key=True),
    sa.Column("unit", _S),
    sa.Column("knob", _S),
    sa.Column("setting", _S),
    sa.Column("workload", _S),
    sa.Column("repeat", sa.Integer),
    sa.Column("status", _S),
    sa.Column("verified", sa.Boolean),
    sa.Column("message", sa.Text),
    sa.Column("settings_json", sa.Text),
    sa.Column("rows", sa.Float),
    sa.Column("dump_s", sa.Float),
    sa.Column("dump_bytes", sa.Float),
    sa.Column("dump_mb_s", sa.Float),
    sa.Column("dump_rows_s", sa.Float),
    sa.Column("statements", sa.Float),
    sa.Column("rows_per_statement", sa.Float),
    sa.Column("load_s", sa.Float),
    sa.Column("load_mb_s", sa.Float),
    sa.Column("load_rows_s", sa.Float),
    sa.Column("latency_ms", sa.Float),
    sa.Column("latency_estimator", _S),
    sa.Column("latency_mean_ms", sa.Float),
    sa.Column("latency_p99_ms", sa.Float),
    sa.Column("dump_cpu_source_pct", sa.Float),
    sa.Column("dump_cpu_tool_pct", sa.Float),
    sa.Column("load_cpu_target_pct", sa.Float),
    sa.Column("load_cpu_tool_pct", sa.Float),
    sa.Column("transactions", sa.Float),
    sa.Column("row_ops", sa.Float),
    sa.Column("catchup_s", sa.Float),
    sa.Column("events_s", sa.Float),
    sa.Column("rows_s", sa.Float),
    sa.Column("max_lag_transactions", sa.Float),
    sa.Column("log_path", sa.Text),
    sa.Column("tidb_qps", sa.Float),
    sa.Column("tidb_p99_ms", sa.Float),
    sa.Column("tidb_latency_mean_ms", sa.Float),
    sa.Column("tidb_measure_source", _S),
    sa.Column("tidb_note", sa.Text),
    sa.Column("at", sa.Float),
)
dm_lag = sa.Table(
    "dm_lag",
    meta,
    sa.Column("study", _S, index=True),
    sa.Column("run_key", _S, index=True),
    sa.Column("t", sa.Float),
    sa.Column("source_seq", sa.Float),
    sa.Column("replica_seq", sa.Float),
    sa.Column("lag_transactions", sa.Float),
    sa.Column("seconds_behind_master", sa.Float),
)

# per YCSB run and operation (the run itself is a row of runs; see tibenchlib.ycsb.phase)
ycsb_ops = sa.Table(
    "ycsb_ops",
    meta,
    sa.Column("study", _S, primary_key=True),
    sa.Column("run_key", _S, primary_key=True),
    sa.Column("operation", _S, primary_key=True),
    sa.Column("arm", _S),
    sa.Column("workload", _S),
    sa.Column("threads", sa.Integer),
    sa.Column("repeat", sa.Integer),
    sa.Column("count", sa.Integer),
    sa.Column("errors", sa.Integer),
    sa.Column("avg_ms", sa.Float),
    sa.Column("min_ms", sa.Float),
    sa.Column("max_ms", sa.Float),
    sa.Column("p95_ms", sa.Float),
    sa.Column("p99_ms", sa.Float),
    sa.Column("source", _S),
)

# the TPC-C figures of a tpcc run, beside its row in runs (see tibenchlib.tpcc.phase)
tpcc_runs = sa.Table(
    "tpcc_runs",
    meta,
    sa.Column("study", _S, primary_key=True),
    sa.Column("run_key", _S, primary_key=True),
    sa.Column("arm", _S),
    sa.Column("tool", _S),
    sa.Column("warehouses", sa.Integer),
    sa.Column("wait", sa.Boolean),
    sa.Column("threads", sa.Integer),
    sa.Column("clients", sa.Integer),
    sa.Column("repeat", sa.Integer),
    sa.Column("status", _S),
    sa.Column("tpmc", sa.Float),
    sa.Column("tpm_total", sa.Float),
    sa.Column("efficiency_pct", sa.Float),
    sa.Column("new_orders", sa.Integer),
    sa.Column("new_order_rollbacks", sa.Integer),
    sa.Column("runtime_s", sa.Float),
    sa.Column("mix_json", sa.Text),
    sa.Column("latency_json", sa.Text),
    sa.Column("consistency_ok", sa.Boolean),
    sa.Column("consistency_json", sa.Text),
    sa.Column("client_logs_json", sa.Text),
    sa.Column("at", sa.Float),
)

client_hosts = sa.Table(
    "client_hosts",
    meta,
    sa.Column("study", _S, index=True),
    sa.Column("arm", _S),
    sa.Column("host", _S),
    sa.Column("destination", _S),
    sa.Column("checked_at", sa.Float),
    sa.Column("tool_version", _S),
    sa.Column("clock_offset_ms", sa.Float),
    sa.Column("clock_rtt_ms", sa.Float),
    sa.Column("reaches_target", sa.Boolean),
    sa.Column("cores", sa.Integer),
    sa.Column("session_ms", sa.Float),
    sa.Column("problems", sa.Text),
)
run_hosts = sa.Table(
    "run_hosts",
    meta,
    sa.Column("study", _S, index=True),
    sa.Column("run_key", _S, index=True),
    sa.Column("host", _S),
    sa.Column("destination", _S),
    sa.Column("threads", sa.Integer),
    sa.Column("agreed_start", sa.Float),
    sa.Column("started_at", sa.Float),
    sa.Column("start_delay_ms", sa.Float),
    sa.Column("finished_at", sa.Float),
    sa.Column("returncode", sa.Integer),
    sa.Column("tps", sa.Float),
    sa.Column("log_path", sa.Text),
    sa.Column("error", sa.Text),
)

_RUN_COLS = {c.name for c in runs.columns}
_TABLES = {t.name: t for t in meta.sorted_tables}


def catalog_wait_s() -> float:
    """:data:`CATALOG_WAIT_S`, or ``TIBENCH_CATALOG_WAIT_S`` when set."""
    raw = os.environ.get("TIBENCH_CATALOG_WAIT_S")
    if raw is None:
        return CATALOG_WAIT_S
    try:
        v = float(raw)
    except ValueError:
        v = -1.0
    if not 0 <= v < float("inf"):
        raise CatalogError(f"TIBENCH_CATALOG_WAIT_S={raw!r}: expected seconds (a number >= 0)")
    return v


def default_url(study: str) -> str:
    return f"sqlite:///{paths.catalog_file(study)}"


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    try:
        # WAL: readers (a notebook, tibench compare) never block the runner's writes
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
    finally:
        cur.close()


def _writable(path: Path) -> bool:
    """Whether this process may write ``path`` (and create the journal files beside it)."""
    if not os.access(path.parent, os.W_OK):
        return False
    return not path.exists() or os.access(path, os.W_OK)


def _read_only_connect(path: Path):
    """A creator of read-only SQLite connections to ``path``: ``mode=ro``, and ``immutable``
    when no journal file can be made beside it and none is there (a read-only folder or
    medium; a WAL file there would be read through its ``-shm``)."""
    uri = f"file:{quote(str(path))}?mode=ro"
    wal = path.with_name(path.name + "-wal")
    if not os.access(path.parent, os.W_OK) and not wal.exists():
        uri += "&immutable=1"

    def connect():
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
        return conn

    return connect


def catalog_holders(path: Path) -> list[str]:
    """``pid N (name)`` of every other process that has ``path`` (or its journal) open, as far
    as this user may see; empty when none is found."""
    names = {str(path), str(path) + "-wal", str(path) + "-shm", str(path) + "-journal"}
    out = []
    for proc in psutil.process_iter(["pid", "name"]):
        if proc.info["pid"] == os.getpid():
            continue
        try:
            if any(f.path in names for f in proc.open_files()):
                out.append(f"pid {proc.info['pid']} ({proc.info['name']})")
        except (psutil.Error, OSError):
            continue
    return out


def _sqlite_message(e: BaseException) -> str:
    return str(getattr(e, "orig", None) or e)


def _is_locked(e: BaseException) -> bool:
    return "locked" in _sqlite_message(e) or "busy" in _sqlite_message(e)


def _is_damaged(e: BaseException) -> bool:
    m = _sqlite_message(e)
    return any(w in m for w in ("malformed", "not a database", "corrupt", "btreeInitPage"))


class Store:
    """The catalog at ``url`` (created on first use).

    A SQLite catalog runs in WAL mode and carries its schema version in ``PRAGMA user_version``,
    checked at open; a file that is not a catalog raises :class:`CatalogError` naming it.
    ``password`` is the results server's (never part of ``url``); ``url`` as kept here is masked.
    """

    def __init__(self, url: str, password: str | None = None, *, reading: bool = False):
        self.path: Path | None = None
        self.read_only = False
        sa_url = sa.engine.make_url(url)
        if sa_url.get_backend_name() == "sqlite" and sa_url.database not in (None, "", ":memory:"):
            self.path = Path(sa_url.database)
            check_catalog_path(self.path, reading=reading)
            if reading and not self.path.exists():
                raise CatalogEmpty(f"{self.path} does not exist: no study was run here")
            if not reading:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.exists() and self.path.stat().st_size == 0:
                log.warning(
                    "%s is empty (0 bytes): starting a new catalog there; raw logs of runs it "
                    "does not know are moved aside, never overwritten",
                    self.path,
                )
            # a reader, or anyone on a folder it may not write, never changes the file
            self.read_only = reading or not _writable(self.path)
        if password is not None and self.path is None:
            sa_url = sa_url.set(password=password)
        self.url = mask_url(url)
        if self.read_only:
            self.engine = sa.create_engine("sqlite://", creator=_read_only_connect(self.path))
        else:
            self.engine = sa.create_engine(sa_url)
            if self.path is not None:
                sa.event.listen(self.engine, "connect", _sqlite_pragmas)
            elif sa_url.get_dialect().driver == "pymysql":
                # a results server is a server like a target: it gets no local file either
                sa.event.listen(self.engine, "do_connect", guarded_connect)
        try:
            if self.read_only:
                self._check_read_only()
            else:
                meta.create_all(self.engine)
                self._migrate()
                self._check_version()
        except sa.exc.DatabaseError as e:
            self.engine.dispose()
            if self.path is None:
                raise CatalogError(f"catalog {self.url}: {e.orig}") from None
            if _is_locked(e):
                raise self._busy(e) from None
            if not self.read_only and _disk_full(self.path.parent):
                # SQLite says "disk I/O error" when its WAL cannot grow: not a damaged file
                raise CatalogDiskFull(
                    f"{self.path}: no space left on its device ({e.orig}): free some space "
                    "and run again; the catalog is kept as it was"
                ) from None
            raise CatalogDamaged(
                f"{self.path} is not a readable tibench catalog ({e.orig}): move it aside "
                f"(mv {self.path} {self.path}.bad) and run again; the raw logs under "
                f"{self.path.parent / 'raw'} are kept"
            ) from None
        if self.path is not None:
            sa.event.listen(self.engine, "handle_error", self._handle_error)
        self._lock = threading.Lock()
        if not self.read_only and self.path is not None:
            self._write_pending()

    def _check_read_only(self) -> None:
        """A catalog opened read-only: a tibench catalog, of a schema this version reads."""
        with self.engine.connect() as c:
            v = c.exec_driver_sql("PRAGMA user_version").scalar()
            tables = set(
                c.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'table'").scalars()
            )
        if not {"studies", "runs"} <= tables:
            raise CatalogDamaged(
                f"{self.path} is not a tibench catalog (no runs table): is this the study's "
                f"results.sqlite? move it aside (mv {self.path} {self.path}.bad) to start anew"
            )
        if v > SCHEMA_VERSION:
            raise CatalogError(
                f"{self.path} has catalog schema version {v}, newer than this tibench's "
                f"({SCHEMA_VERSION}): upgrade tibench (pip install -U) to read it"
            )

    def _busy(self, e: BaseException) -> CatalogBusy:
        holders = catalog_holders(self.path) if self.path is not None else []
        who = f" (held by {', '.join(holders)})" if holders else ""
        return CatalogBusy(
            f"{self.path or self.url} is locked by another process{who} past "
            f"{BUSY_TIMEOUT_S:g} s: let it finish or stop it, then run again; measured runs "
            "are kept"
        )

    def _handle_error(self, ctx) -> BaseException | None:
        """SQLAlchemy's ``handle_error`` hook: one line naming the catalog, for any statement
        on it (no SQL, no parameters)."""
        e = ctx.original_exception
        if not isinstance(e, sqlite3.DatabaseError):
            return None
        if _is_locked(e):
            return self._busy(e)
        if _is_damaged(e):
            return self.damaged(str(e))
        if "readonly" in str(e) or "read-only" in str(e):
            return CatalogError(
                f"{self.path} cannot be written (a read-only folder or file): tibench reads "
                "it as it is; copy the study's folder somewhere writable to measure more"
            )
        return None

    def damaged(self, what: str, where: str = "", todo: str = "") -> CatalogDamaged:
        """The one line for a catalog found damaged while reading it (``where``: the row)."""
        at = f" ({where})" if where else ""
        todo = todo or (
            f"copy it from a backup, or rescue its rows with `sqlite3 {self.path} .recover` "
            "into a new file and move the damaged one aside"
        )
        return CatalogDamaged(
            f"{self.path or self.url} is damaged{at}: {what}; {todo}; the raw logs beside it "
            "are kept"
        )

    def json_value(self, text: str | None, where: str, default: Any = None) -> Any:
        """``text`` (a JSON column's value) decoded; a damaged value raises
        :class:`CatalogDamaged` naming the catalog and ``where`` (table, row, column)."""
        if not text:
            return default
        try:
            return json.loads(text)
        except ValueError as e:
            raise self.damaged(
                f"a JSON value does not decode ({e})",
                where,
                "correct or delete that row (or copy the catalog from a backup)",
            ) from None

    def _migrate(self) -> None:
        """Columns added since a catalog was made (catalogs of schema version 0)."""
        have = {c["name"] for c in sa.inspect(self.engine).get_columns("runs")}
        if "attempts" not in have:
            with self.engine.begin() as c:
                c.exec_driver_sql("ALTER TABLE runs ADD COLUMN attempts INTEGER")
        have = {c["name"] for c in sa.inspect(self.engine).get_columns("samples")}
        for col in ("cpu_wait_pct", "cpus_busy_pct"):
            if col not in have:
                with self.engine.begin() as c:
                    c.exec_driver_sql(f"ALTER TABLE samples ADD COLUMN {col} FLOAT")
        if sa.inspect(self.engine).has_table("dm_runs"):
            have = {c["name"] for c in sa.inspect(self.engine).get_columns("dm_runs")}
            added = {"tidb_qps": "FLOAT", "tidb_p99_ms": "FLOAT", "tidb_latency_mean_ms": "FLOAT"}
            added |= {"tidb_measure_source": "VARCHAR", "tidb_note": "TEXT"}
            for col, typ in added.items():
                if col not in have:
                    with self.engine.begin() as c:
                        c.exec_driver_sql(f"ALTER TABLE dm_runs ADD COLUMN {col} {typ}")

    def _check_version(self) -> None:
        if self.path is None:
            return
        with self.engine.begin() as c:
            v = c.exec_driver_sql("PRAGMA user_version").scalar()
            if v > SCHEMA_VERSION:
                raise CatalogError(
                    f"{self.path} has catalog schema version {v}, newer than this tibench's "
                    f"({SCHEMA_VERSION}): upgrade tibench (pip install -U) to read it"
                )
            if v < SCHEMA_VERSION:
                c.exec_driver_sql(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @classmethod
    def for_study(cls, study, *, record: bool = False) -> Store:
        """The study's catalog; with ``record``, its validated parameters are (re)written too
        (every URL in them masked)."""
        if study.results_url:
            store = cls(study.results_url, password=study.results_password)
        else:
            store = cls(default_url(study.study))
        if record:
            store.record_study(study.study, study.public_dump())
        return store

    # -- writes ------------------------------------------------------------------------------
    def _patiently(self, write, what: str) -> None:
        """``write()`` (one transaction), tried again while another process holds the catalog,
        for :func:`catalog_wait_s` seconds; then its :class:`CatalogBusy` is raised."""
        deadline = time.monotonic() + catalog_wait_s()
        while True:
            try:
                write()
                return
            except CatalogBusy as e:
                if time.monotonic() >= deadline:
                    raise
                log.warning("%s; still trying to write %s", e, what)
                time.sleep(min(1.0, max(deadline - time.monotonic(), 0)))

    def _upsert(self, table: sa.Table, row: dict, keys: dict) -> None:
        where = sa.and_(*(table.c[k] == v for k, v in keys.items()))

        def write() -> None:
            with self._lock, self.engine.begin() as c:
                c.execute(table.delete().where(where))
                c.execute(table.insert().values(**row))

        self._patiently(write, f"a row of {table.name}")

    def record_study(self, name: str, params: dict) -> None:
        now = time.time()
        with self.engine.connect() as c:
            created = c.execute(
                sa.select(studies.c.created_at).where(studies.c.study == name)
            ).scalar()
        row = {
            "study": name,
            "params_json": json.dumps(params, sort_keys=True, default=str),
            "created_at": created or now,
            "updated_at": now,
        }
        self._upsert(studies, row, {"study": name})

    def record_arm(self, study: str, arm: str, **fields: Any) -> None:
        row = {"study": study, "arm": arm, "updated_at": time.time()}
        if "options" in fields:
            row["options_json"] = json.dumps(fields.pop("options"), sort_keys=True, default=str)
        row.update(fields)
        self._upsert(arms, row, {"study": study, "arm": arm})

    def record_run(
        self, run: record.RunRecord | dict, interval_rows: pd.DataFrame | None = None
    ) -> None:
        """Record one attempt of a run and its intervals, atomically (a dict: the record's
        fields, ``warnings`` a list, or the catalog's ``warnings_json``).

        Every attempt is kept in ``run_attempts``. ``runs`` holds the run's value: the new
        attempt, except when it failed and the run has a good (``ok``) result already (a
        ``--redo`` that failed): the good result stays, with a warning naming the failed
        attempt and its error, and the log path of where its log was set aside. A run
        recorded before ``run_attempts`` existed is copied there first.
        """
        row = run.catalog_row() if isinstance(run, record.RunRecord) else dict(run)
        if "warnings" in row:
            row["warnings_json"] = json.dumps(list(row.pop("warnings") or []))
        row = {k: _plain(v) for k, v in row.items() if k in _RUN_COLS}
        deadline = time.monotonic() + catalog_wait_s()
        while True:
            try:
                self._record_run(row, interval_rows)
                return
            except CatalogBusy as e:
                if time.monotonic() >= deadline:
                    kept = self._keep_pending(row, interval_rows)
                    raise CatalogBusy(
                        f"{e}; run {row['run_key']} was measured and is kept in {kept}, written "
                        "to the catalog when tibench next opens it"
                    ) from None
                log.warning("%s; still trying to write run %s", e, row["run_key"])
                time.sleep(min(1.0, max(deadline - time.monotonic(), 0)))

    def _record_run(self, row: dict, interval_rows: pd.DataFrame | None) -> None:
        """:meth:`record_run`'s one transaction."""
        keys = {"study": row["study"], "run_key": row["run_key"]}
        now = time.time()
        where = sa.and_(*(runs.c[k] == v for k, v in keys.items()))
        with self._lock, self.engine.begin() as c:
            old = c.execute(sa.select(runs).where(where)).mappings().first()
            if old is not None:
                kept = c.execute(
                    sa.select(sa.func.count())
                    .select_from(run_attempts)
                    .where(
                        sa.and_(
                            *(run_attempts.c[k] == v for k, v in keys.items()),
                            run_attempts.c.started_at.is_(None)
                            if old["started_at"] is None
                            else run_attempts.c.started_at == old["started_at"],
                        )
                    )
                ).scalar()
                if not kept:
                    c.execute(run_attempts.insert().values(**old, recorded_at=now))
            c.execute(run_attempts.insert().values(**row, recorded_at=now))
            _point_at_set_aside_logs(c, keys, row)
            if old is not None and old["status"] == "ok" and row.get("status") != "ok":
                c.execute(runs.update().where(where).values(**_kept_good(old, row)))
                return
            c.execute(runs.delete().where(where))
            c.execute(
                intervals.delete().where(sa.and_(*(intervals.c[k] == v for k, v in keys.items())))
            )
            c.execute(runs.insert().values(**row))
            if interval_rows is not None and len(interval_rows):
                cols = [c_.name for c_ in intervals.columns]
                df = interval_rows.assign(**keys)
                recs = [{k: _plain(r.get(k)) for k in cols} for r in df.to_dict("records")]
                c.execute(intervals.insert(), recs)

    def _keep_pending(self, row: dict, interval_rows: pd.DataFrame | None) -> Path:
        """A measured run the catalog could not take, in a JSON file beside the catalog (in
        the data directory when the catalog is not a file); returns the file."""
        folder = (self.path.parent if self.path is not None else paths.data_dir()) / PENDING_FOLDER
        folder.mkdir(parents=True, exist_ok=True)
        recs = []
        if interval_rows is not None and len(interval_rows):
            recs = [{k: _plain(v) for k, v in r.items()} for r in interval_rows.to_dict("records")]
        name = f"{row['study']}__{row['run_key']}".replace("/", "_")
        out = folder / f"{name}.json"
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps({"run": row, "intervals": recs}, default=str))
        tmp.replace(out)
        return out

    def _write_pending(self) -> None:
        """Write the measured runs a held lock kept out of the catalog (:meth:`_keep_pending`),
        then remove their files; one that cannot be written yet stays for the next time."""
        folder = self.path.parent / PENDING_FOLDER
        if not folder.is_dir():
            return
        for f in sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime):
            try:
                kept = json.loads(f.read_text())
                iv = pd.DataFrame(kept["intervals"]) if kept.get("intervals") else None
                self._record_run(kept["run"], iv)
            except CatalogBusy as e:
                log.warning("%s: %s is written later", e, f)
                return
            except (ValueError, KeyError, TypeError) as e:
                log.warning("%s: not a measured run tibench kept (%s); left as it is", f, e)
                continue
            log.info("run %s, kept in %s while the catalog was locked, written", kept["run"]
                     ["run_key"], f)  # fmt: skip
            f.unlink()
        if not any(folder.iterdir()):
            folder.rmdir()

    def record_environment(self, study: str, arm: str, capture: dict) -> None:
        row = {
            "study": study,
            "arm": arm,
            "captured_at": time.time(),
            "capture_json": json.dumps(capture, sort_keys=True, default=str),
        }
        self._upsert(environment, row, {"study": study, "arm": arm})

    def append(self, table: str, rows: Iterable[dict] | pd.DataFrame) -> int:
        """Append rows to one of the catalog's tables (unknown columns are an error)."""
        t = _TABLES[table]
        recs = rows.to_dict("records") if isinstance(rows, pd.DataFrame) else list(rows)
        if not recs:
            return 0
        extra = set().union(*recs) - {c.name for c in t.columns}
        if extra:
            raise KeyError(f"table {table} has no column(s) {sorted(extra)}")
        plain = [{k: _plain(v) for k, v in r.items()} for r in recs]

        def write() -> None:
            with self._lock, self.engine.begin() as c:
                c.execute(t.insert(), plain)

        self._patiently(write, f"{len(recs)} rows of {table}")
        return len(recs)

    def upsert(self, table: str, row: dict) -> None:
        """Insert or replace one row by the table's primary key."""
        t = _TABLES[table]
        keys = {c.name: row[c.name] for c in t.primary_key.columns}
        self._upsert(t, {k: _plain(v) for k, v in row.items()}, keys)

    def replace_run_rows(self, table: str, study: str, run_key: str, rows: list[dict]) -> None:
        """Replace a run's rows in a phase table keyed by ``(study, run_key, …)``, atomically
        (a re-measured run leaves none of its earlier attempt's rows)."""
        t = _TABLES[table]
        recs = [{k: _plain(v) for k, v in {**r, "study": study, "run_key": run_key}.items()}
                for r in rows]  # fmt: skip

        def write() -> None:
            with self._lock, self.engine.begin() as c:
                c.execute(t.delete().where(sa.and_(t.c.study == study, t.c.run_key == run_key)))
                if recs:
                    c.execute(t.insert(), recs)

        self._patiently(write, f"the {table} rows of run {run_key}")

    def delete_runs(self, study: str, run_keys: Iterable[str] | None = None) -> None:
        with self._lock, self.engine.begin() as c:
            for t in (runs, intervals, samples):
                q = t.delete().where(t.c.study == study)
                if run_keys is not None:
                    q = q.where(t.c.run_key.in_(list(run_keys)))
                c.execute(q)

    # -- reads -------------------------------------------------------------------------------
    def read(self, table: str, study: str | None = None, **where: Any) -> pd.DataFrame:
        t = _TABLES[table]
        q = sa.select(t)
        if study is not None:
            q = q.where(t.c.study == study)
        for k, v in where.items():
            q = q.where(t.c[k].in_(v) if isinstance(v, list | tuple | set) else t.c[k] == v)
        with self.engine.connect() as c:
            return pd.read_sql(q, c)

    def runs(self, study: str, **where: Any) -> pd.DataFrame:
        """The runs of a study in execution order, ``warnings`` decoded into lists."""
        df = self._decoded(self.read("runs", study, **where), "runs")
        return df.sort_values(["seq", "run_key"]).reset_index(drop=True) if len(df) else df

    def intervals(self, study: str, run_keys: Iterable[str] | None = None) -> pd.DataFrame:
        where = {"run_key": list(run_keys)} if run_keys is not None else {}
        return self.read("intervals", study, **where)

    def attempts(self, study: str, run_key: str | None = None) -> pd.DataFrame:
        """Every recorded attempt of a study's runs (of one run with ``run_key``), oldest
        first, ``warnings`` decoded into lists."""
        where = {"run_key": run_key} if run_key is not None else {}
        df = self._decoded(self.read("run_attempts", study, **where), "run_attempts")
        if not len(df):
            return df
        return df.sort_values(["run_key", "recorded_at"], kind="stable").reset_index(drop=True)

    def _decoded(self, df: pd.DataFrame, table: str) -> pd.DataFrame:
        """:func:`record.from_catalog`, a damaged ``warnings_json`` named by its row."""
        if "warnings_json" in df:
            for r in df.itertuples():
                self.json_value(
                    r.warnings_json, f"table {table}, study {r.study}, run {r.run_key}", []
                )
        return record.from_catalog(df)

    def run_status(self, study: str) -> dict[str, str]:
        with self.engine.connect() as c:
            rows = c.execute(
                sa.select(runs.c.run_key, runs.c.status).where(runs.c.study == study)
            ).all()
        return dict(rows)

    def environment_captures(self, study: str) -> dict[str, dict]:
        df = self.read("environment", study)
        return {
            r.arm: self.json_value(
                r.capture_json, f"table environment, study {study}, arm {r.arm}", {}
            )
            for r in df.itertuples()
        }


def _kept_good(old, new: dict) -> dict:
    """The ``runs`` columns that change when a failed attempt leaves a good result as the
    run's value: its attempt count, a warning naming the failure, and its log path when the
    runner set the good log aside as ``<stem>.attempt<N>.log`` (N: the attempt before)."""
    warnings = json.loads(old["warnings_json"] or "[]")
    n = new.get("attempts")
    warnings.append(
        f"attempt {n or 'later'} failed ({new.get('error') or new.get('status')}); "
        "this is the earlier good result"
    )
    out = {"warnings_json": json.dumps(warnings), "attempts": n or old["attempts"]}
    log_path = old["log_path"]
    if log_path and n and log_path == new.get("log_path"):
        p = Path(log_path)
        moved = p.with_name(f"{p.stem}.attempt{n - 1}{p.suffix}")
        if moved.exists():
            out["log_path"] = str(moved)
    return out


def _point_at_set_aside_logs(c, keys: dict, row: dict) -> None:
    """Earlier attempts of a run whose ``log_path`` is the new attempt's log now point at where
    that log was set aside, ``<stem>.attempt<N><suffix>`` (N: their attempt number), when the
    file is there: the path they held now holds the new attempt's output."""
    log_path, n = row.get("log_path"), row.get("attempts")
    if not log_path or not n:
        return
    same = sa.and_(
        *(run_attempts.c[k] == v for k, v in keys.items()),
        run_attempts.c.log_path == log_path,
        run_attempts.c.attempts < n,
    )
    p = Path(log_path)
    for k in c.execute(sa.select(run_attempts.c.attempts).where(same).distinct()).scalars():
        moved = p.with_name(f"{p.stem}.attempt{k}{p.suffix}")
        if moved.exists():
            c.execute(
                run_attempts.update()
                .where(sa.and_(same, run_attempts.c.attempts == k))
                .values(log_path=str(moved))
            )


def _disk_full(folder: Path) -> bool:
    """Whether the file system holding ``folder`` has less than 1 MiB left."""
    try:
        return shutil.disk_usage(folder).free < (1 << 20)
    except OSError:
        return False


def _plain(v: Any) -> Any:
    """Plain Python scalars for the database (numpy types, NaN → None, lists → JSON)."""
    if v is None:
        return None
    if isinstance(v, dict | list | tuple):
        return json.dumps(v, default=str)
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and v != v:
        return None
    return v

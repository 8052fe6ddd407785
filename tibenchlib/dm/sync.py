"""MariaDB's own parallel replication as the stand-in for DM's sync unit.

The target becomes a GTID replica of the source (:func:`start_replica`), with
``slave_parallel_threads`` = DM's worker-count and ``slave_parallel_mode`` (default
``optimistic``). :func:`apply_throughput` measures how fast the replica applies a backlog, cleanly:
the SQL thread is stopped, sysbench writes on the source for ``duration_s``, the I/O thread has
fetched everything, then the SQL thread starts and the catch-up to the source's GTID position is
timed: transactions (binlog event groups) per second and row operations per second.
:func:`lag_trace` records the lag while sysbench runs with the SQL thread on. A replica error
(``Last_SQL_Error``) is a :class:`SyncError` with one line.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import pandas as pd
import sqlalchemy as sa

from ..db import ConnInfo, secret_config_file
from ..sysbench.command import sysbench_command
from ..tools import Outcome, execute

log = logging.getLogger(__name__)

PARALLEL_MODES = ("optimistic", "conservative", "aggressive", "minimal", "none")

#: Handler counters whose sum is the row operations the source's workload made, which the replica
#: applies as row events. Read on the source, since the replica adds its own bookkeeping rows
#: (``mysql.gtid_slave_pos``: a write and a purge per transaction).
ROW_COUNTERS = ("Handler_write", "Handler_update", "Handler_delete")


class SyncError(RuntimeError):
    """The replica stopped on an error, or did not catch up in time."""


@dataclass(frozen=True)
class SyncSettings:
    workers: int = 16  # DM's worker-count → slave_parallel_threads
    mode: str = "optimistic"

    def __post_init__(self) -> None:
        if self.workers < 0:
            raise ValueError(f"sync workers must be ≥ 0, got {self.workers}")
        if self.mode not in PARALLEL_MODES:
            raise ValueError(
                f"sync mode '{self.mode}' is not a slave_parallel_mode: one of "
                + ", ".join(PARALLEL_MODES)
            )


def parse_gtid_pos(pos: str | None) -> dict[int, int]:
    """``'0-1-30,1-2-5'`` → ``{domain: seq_no}`` (MariaDB GTID: domain-server-seq)."""
    out: dict[int, int] = {}
    for part in (pos or "").replace("\n", "").split(","):
        part = part.strip()
        if not part:
            continue
        try:
            domain, _server, seq = (int(x) for x in part.split("-"))
        except ValueError:
            raise ValueError(f"not a MariaDB GTID position: {pos!r}") from None
        out[domain] = max(seq, out.get(domain, 0))
    return out


def reached(replica: str | None, source: str | None) -> bool:
    """Whether the replica's GTID position covers every domain of the source's."""
    r, s = parse_gtid_pos(replica), parse_gtid_pos(source)
    return all(r.get(d, -1) >= seq for d, seq in s.items())


def transactions_between(before: str | None, after: str | None) -> int:
    """Transactions (GTIDs) the source wrote between two of its positions."""
    b, a = parse_gtid_pos(before), parse_gtid_pos(after)
    return sum(seq - b.get(d, 0) for d, seq in a.items())


def replica_status(engine: sa.Engine) -> dict:
    """``SHOW SLAVE STATUS`` as a dict ({} when the server is no replica)."""
    with engine.connect() as c:
        row = c.exec_driver_sql("SHOW SLAVE STATUS").mappings().first()
    return dict(row) if row else {}


def replica_error(status: Mapping) -> str | None:
    """One line naming the replica's error, or None."""
    for kind in ("SQL", "IO"):
        msg = status.get(f"Last_{kind}_Error")
        if msg:
            errno = status.get(f"Last_{kind}_Errno")
            line = " ".join(str(msg).split())
            return f"replica {kind} thread stopped with error {errno}: {line}"
    return None


def gtid_binlog_pos(engine: sa.Engine) -> str:
    with engine.connect() as c:
        return c.exec_driver_sql("SELECT @@gtid_binlog_pos").scalar_one() or ""


def gtid_slave_pos(engine: sa.Engine) -> str:
    with engine.connect() as c:
        return c.exec_driver_sql("SELECT @@gtid_slave_pos").scalar_one() or ""


def start_replica(
    target: sa.Engine, source: ConnInfo, gtid: str | None, settings: SyncSettings
) -> None:
    """Make ``target`` a GTID replica of ``source`` from position ``gtid`` (the one the dump is
    consistent with: :attr:`tibenchlib.dm.dump.DumpResult.gtid`) and start it."""
    with target.connect() as c:
        c = c.execution_options(isolation_level="AUTOCOMMIT")
        c.exec_driver_sql("STOP SLAVE")
        c.exec_driver_sql("RESET SLAVE ALL")
        c.exec_driver_sql("SET GLOBAL gtid_slave_pos = %s", (gtid or "",))
        c.exec_driver_sql("SET GLOBAL slave_parallel_threads = %s", (settings.workers,))
        c.exec_driver_sql("SET GLOBAL slave_parallel_mode = %s", (settings.mode,))
        # the password travels in this statement only; it is never logged by tibench
        c.exec_driver_sql(
            "CHANGE MASTER TO MASTER_HOST = %s, MASTER_PORT = %s, MASTER_USER = %s,"
            " MASTER_PASSWORD = %s, MASTER_USE_GTID = slave_pos",
            (source.host, source.port, source.user, source.password or ""),
        )
        c.exec_driver_sql("START SLAVE")


def set_workers(target: sa.Engine, settings: SyncSettings) -> None:
    """Change worker-count and mode (the SQL thread must be stopped for that: it is restarted
    only if it ran)."""
    running = replica_status(target).get("Slave_SQL_Running") == "Yes"
    with target.connect() as c:
        c = c.execution_options(isolation_level="AUTOCOMMIT")
        c.exec_driver_sql("STOP SLAVE SQL_THREAD")
        try:
            c.exec_driver_sql("SET GLOBAL slave_parallel_threads = %s", (settings.workers,))
            c.exec_driver_sql("SET GLOBAL slave_parallel_mode = %s", (settings.mode,))
        finally:  # an interruption (SIGTERM) leaves the replica as it was found
            if running:
                c.exec_driver_sql("START SLAVE SQL_THREAD")


def _start_sql_thread_quietly(target: sa.Engine) -> None:
    """Start the replica's SQL thread again after an interruption; a target that no longer
    answers is left as it is (the interruption is what the user sees)."""
    try:
        with target.connect() as c:
            c.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql(
                "START SLAVE SQL_THREAD"
            )
    except sa.exc.DBAPIError as e:
        log.warning("the replica's SQL thread could not be started again: %s", e.orig)


def wait_for(
    target: sa.Engine,
    pos: str,
    *,
    field_name: str = "gtid_slave_pos",
    timeout_s: float = 300,
    poll_s: float = 0.02,
) -> float:
    """Poll until the replica's ``gtid_slave_pos`` (or ``Gtid_IO_Pos`` of the slave status)
    reaches ``pos``; returns when (``time.monotonic()``). Raises :class:`SyncError` on a replica
    error or after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        if field_name == "gtid_slave_pos":
            now = gtid_slave_pos(target)
            if reached(now, pos):
                return time.monotonic()
            st = replica_status(target)
        else:
            st = replica_status(target)
            now = st.get(field_name)
            if reached(now, pos):
                return time.monotonic()
        err = replica_error(st)
        if err:
            raise SyncError(err)
        if time.monotonic() > deadline:
            raise SyncError(
                f"replica did not reach the source's position {pos} in {timeout_s:g}s "
                f"({field_name} is {now})"
            )
        time.sleep(poll_s)


def _row_ops(engine: sa.Engine) -> int:
    names = ", ".join(f"'{n}'" for n in ROW_COUNTERS)
    with engine.connect() as c:
        rows = c.exec_driver_sql(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({names})").fetchall()
    return sum(int(v) for _, v in rows)


@dataclass(frozen=True)
class ApplyResult:
    """One clean measurement of the replica's apply throughput."""

    workload: str
    settings: SyncSettings
    load: Outcome  # the sysbench run on the source
    transactions: int
    row_ops: int
    catchup_s: float
    error: str | None = None
    extra: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None and self.load.returncode == 0

    @property
    def events_s(self) -> float:
        return self.transactions / self.catchup_s if self.catchup_s > 0 else float("nan")

    @property
    def rows_s(self) -> float:
        return self.row_ops / self.catchup_s if self.catchup_s > 0 else float("nan")

    def record(self) -> dict:
        return {
            "unit": "sync",
            "workload": self.workload,
            "workers": self.settings.workers,
            "mode": self.settings.mode,
            "ok": self.ok,
            "transactions": self.transactions,
            "row_ops": self.row_ops,
            "catchup_s": self.catchup_s,
            "events_s": self.events_s,
            "rows_s": self.rows_s,
            "error": self.error,
            "log": str(self.load.log_path),
        }


def apply_throughput(
    source: sa.Engine,
    target: sa.Engine,
    run_load: Callable[[], Outcome],
    *,
    workload: str,
    settings: SyncSettings,
    timeout_s: float = 600,
) -> ApplyResult:
    """Stop the SQL thread, ``run_load()`` (sysbench on the source for ``duration_s``), wait for
    the I/O thread to fetch it all, then time the SQL thread's catch-up.

    A replica error ends the measurement: :attr:`ApplyResult.error` holds its one line.
    """
    set_workers(target, settings)
    with target.connect() as c:
        c.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("STOP SLAVE SQL_THREAD")
    try:
        before, ops0 = gtid_binlog_pos(source), _row_ops(source)
        outcome = run_load()
        after, ops = gtid_binlog_pos(source), _row_ops(source) - ops0
        n = transactions_between(before, after)
        try:
            wait_for(target, after, field_name="Gtid_IO_Pos", timeout_s=timeout_s)
            with target.connect() as c:
                c = c.execution_options(isolation_level="AUTOCOMMIT")
                t0 = time.monotonic()
                c.exec_driver_sql("START SLAVE SQL_THREAD")
            t1 = wait_for(target, after, timeout_s=timeout_s)
        except SyncError as e:
            return ApplyResult(workload, settings, outcome, n, ops, float("nan"), error=str(e))
    except (KeyboardInterrupt, SystemExit):
        # SIGTERM or Ctrl-C with the SQL thread stopped: a replica left that way stops
        # applying; start it again before the interruption goes on
        _start_sql_thread_quietly(target)
        raise
    return ApplyResult(workload, settings, outcome, n, ops, t1 - t0)


def lag_trace(
    source: sa.Engine,
    target: sa.Engine,
    run_load: Callable[[], Outcome],
    *,
    interval_s: float = 1.0,
    timeout_s: float = 600,
) -> tuple[pd.DataFrame, Outcome]:
    """Lag over time while ``run_load()`` writes on the source with the SQL thread on.

    One row per ``interval_s``: ``t`` (s since the load started), ``source_seq`` and
    ``replica_seq`` (GTID sequence numbers, domain 0), ``lag_transactions`` and
    ``seconds_behind_master``; sampling goes on after the load until the replica caught up.
    """
    box: dict = {}
    th = threading.Thread(target=lambda: box.setdefault("outcome", run_load()), daemon=True)
    t0 = time.monotonic()
    th.start()
    rows = []
    deadline = t0 + timeout_s
    while True:
        time.sleep(interval_s)
        # the replica first: read after it, the source's position is never behind it
        rep = parse_gtid_pos(gtid_slave_pos(target))
        src = parse_gtid_pos(gtid_binlog_pos(source))
        st = replica_status(target)
        err = replica_error(st)
        if err:
            th.join()
            raise SyncError(err)
        s, r = src.get(0, 0), rep.get(0, 0)
        rows.append(
            {
                "t": time.monotonic() - t0,
                "source_seq": s,
                "replica_seq": r,
                "lag_transactions": s - r,
                "seconds_behind_master": st.get("Seconds_Behind_Master"),
            }
        )
        if not th.is_alive() and s - r <= 0:
            break
        if time.monotonic() > deadline:
            th.join()
            raise SyncError(f"replica still {s - r} transactions behind after {timeout_s:g}s")
    th.join()
    return pd.DataFrame(rows), box["outcome"]


def sysbench_writer(
    source: ConnInfo,
    workload: str,
    *,
    tables: int,
    table_size: int,
    threads: int,
    duration_s: int,
    log_path,
    private_dir,
) -> Callable[[], Outcome]:
    """A ``run_load`` for :func:`apply_throughput` / :func:`lag_trace`: sysbench ``workload``
    (``oltp_insert``, ``oltp_write_only``) on the source for ``duration_s``, password in a 0600
    config file, raw output in ``log_path``."""

    def run() -> Outcome:
        with secret_config_file(source, private_dir) as cfg:
            cmd = sysbench_command(
                workload,
                source,
                tables=tables,
                table_size=table_size,
                threads=threads,
                time_s=duration_s,
                report_interval_s=1,
                config_file=cfg,
            )
            return execute(cmd, log_path, timeout_s=duration_s + 120)

    return run

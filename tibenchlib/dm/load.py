"""Load a dump into the target with myloader (DM's load unit) and read the target's statement
latency while it ran.

Knobs: ``threads`` (DM's pool-size) and ``queries_per_transaction``. The target's
``performance_schema`` (on for the DM target, see :mod:`.servers`) is reset before the load; after
it, :func:`statement_latency` reads the INSERT digests (count, mean, max) and, from the
``events_statements_history_long`` ring, the 99th percentile of the INSERT statements it holds.
MariaDB's digest summary has no quantile columns, so p99 comes from that ring (its last
``performance_schema_events_statements_history_long_size`` statements); without it, the mean.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import sqlalchemy as sa

from ..db import ConnInfo
from ..tools import Outcome, execute
from .dump import ToolTransfer, directory_bytes, shown
from .options import client_defaults_file, connection_args

log = logging.getLogger(__name__)

PS = "performance_schema"


class LoadError(RuntimeError):
    """myloader failed or its target cannot be read."""


@dataclass(frozen=True)
class LoadSettings:
    """The load unit's knobs: ``threads`` is DM's pool-size."""

    threads: int = 4
    queries_per_transaction: int = 1000

    def __post_init__(self) -> None:
        if self.threads < 1:
            raise ValueError(f"load threads must be ≥ 1, got {self.threads}")
        if self.queries_per_transaction < 1:
            raise ValueError(
                f"load queries_per_transaction must be ≥ 1, got {self.queries_per_transaction}"
            )


@dataclass(frozen=True)
class LoadResult(ToolTransfer):
    unit = "load"
    outcome: Outcome
    command: str
    bytes: int
    latency: dict = field(default_factory=dict)

    def measures(self) -> dict:
        return dict(self.latency)


def myloader_command(
    conn: ConnInfo,
    directory: str | Path,
    settings: LoadSettings,
    *,
    defaults_file: str | Path | None = None,
    database: str | None = None,
    verbose: int = 3,
) -> list[str]:
    """The myloader command line (``--overwrite-tables``: every run loads into fresh tables),
    password excluded."""
    cmd = ["myloader", *connection_args(conn, defaults_file)]
    cmd += [
        f"--directory={directory}",
        f"--threads={settings.threads}",
        f"--queries-per-transaction={settings.queries_per_transaction}",
        "--overwrite-tables",
    ]
    if database:
        cmd.append(f"--database={database}")
    cmd.append(f"--verbose={verbose}")
    return cmd


def _one_line(e: sa.exc.DBAPIError) -> str:
    """The driver's message of a DBAPI error on one line, without SQLAlchemy's SQL and links."""
    return " ".join(str(getattr(e, "orig", None) or e).split())


def reset_statement_stats(engine: sa.Engine) -> bool:
    """Empty the target's digest summary and statement history and turn the history on.
    False when ``performance_schema`` is off (latency then stays unmeasured)."""
    with engine.begin() as c:
        if not c.exec_driver_sql("SELECT @@performance_schema").scalar_one():
            return False
        c.exec_driver_sql(
            f"UPDATE {PS}.setup_consumers SET ENABLED = 'YES'"
            " WHERE NAME IN ('events_statements_current', 'events_statements_history_long',"
            " 'statements_digest')"
        )
        c.exec_driver_sql(f"TRUNCATE TABLE {PS}.events_statements_summary_by_digest")
        c.exec_driver_sql(f"TRUNCATE TABLE {PS}.events_statements_history_long")
    return True


def wait_statements_ended(
    engine: sa.Engine, user: str, timeout_s: float = 5.0, poll_s: float = 0.05
) -> bool:
    """Wait until no other connection of ``user`` is inside a statement (the processlist shows
    each idle or gone); False if one still is after ``timeout_s``.

    The server sends a statement's OK before it adds the statement to performance_schema's
    digest summary, so a client that has exited can leave its last statement not yet counted:
    read the summary after this."""
    sql = (
        "SELECT COUNT(*) FROM information_schema.PROCESSLIST"
        " WHERE USER = %s AND ID <> CONNECTION_ID() AND COMMAND NOT IN ('Sleep', 'Killed')"
    )
    deadline = time.monotonic() + timeout_s
    with engine.connect() as c:
        while c.exec_driver_sql(sql, (user,)).scalar_one():
            if time.monotonic() >= deadline:
                return False
            time.sleep(poll_s)
    return True


def statement_latency(engine: sa.Engine, kind: str = "INSERT") -> dict:
    """Server-side latency of the ``kind`` statements since :func:`reset_statement_stats`.

    Returns ``statements`` (digest count), ``latency_mean_ms`` (digest sum / count),
    ``latency_max_ms``, ``latency_p99_ms`` (from the history ring, ``latency_p99_n`` statements;
    None when the ring holds none) and ``latency_ms`` with ``latency_estimator``: p99 if
    available, else the mean. Timer values are picoseconds.
    """
    with engine.connect() as c:
        row = c.exec_driver_sql(
            f"SELECT SUM(COUNT_STAR), SUM(SUM_TIMER_WAIT), MAX(MAX_TIMER_WAIT)"
            f" FROM {PS}.events_statements_summary_by_digest"
            " WHERE DIGEST_TEXT LIKE %s",
            (f"{kind}%",),
        ).one()
        waits = [
            r[0]
            for r in c.exec_driver_sql(
                f"SELECT TIMER_WAIT FROM {PS}.events_statements_history_long"
                " WHERE SQL_TEXT LIKE %s AND TIMER_WAIT IS NOT NULL",
                (f"{kind}%",),
            )
        ]
    count = int(row[0] or 0)
    mean = float(row[1]) / count / 1e9 if count else None
    p99 = float(np.percentile(np.asarray(waits, float), 99)) / 1e9 if waits else None
    return {
        "statements": count,
        "latency_mean_ms": mean,
        "latency_max_ms": float(row[2]) / 1e9 if row[2] is not None else None,
        "latency_p99_ms": p99,
        "latency_p99_n": len(waits),
        "latency_ms": p99 if p99 is not None else mean,
        "latency_estimator": "p99" if p99 is not None else ("mean" if mean is not None else None),
    }


def load(
    conn: ConnInfo,
    directory: str | Path,
    settings: LoadSettings,
    *,
    log_path: str | Path,
    private_dir: str | Path,
    database: str | None = None,
    timeout_s: float | None = None,
    on_start=None,
    engine: sa.Engine | None = None,
) -> LoadResult:
    """Run myloader on ``directory`` into the target and measure it (seconds, MB/s over the
    dump's bytes, INSERT latency on the target). ``engine`` defaults to one on ``conn``."""
    eng = engine or conn.engine()
    try:
        measured = reset_statement_stats(eng)
        with client_defaults_file(conn, private_dir) as cnf:
            cmd = myloader_command(conn, directory, settings, defaults_file=cnf, database=database)
            outcome = execute(cmd, log_path, timeout_s=timeout_s, on_start=on_start)
        try:
            if measured:
                wait_statements_ended(eng, conn.user)
            latency = statement_latency(eng) if measured else {"latency_estimator": None}
        except sa.exc.DBAPIError as e:
            # the target went away while or after myloader ran (killed, restarted): the load
            # fails on its exit code or its verification; its latency is not measured
            log.warning("target's statement latency not read after the load: %s", _one_line(e))
            latency = {"latency_estimator": None}
    finally:
        if engine is None:
            eng.dispose()
    return LoadResult(outcome, shown(cmd), directory_bytes(directory), latency)

"""Run TPC-H queries on a MySQL-compatible server: warm-up, repeats, streams, timeouts, answers.

One call runs one arm in one mode:

``power``
    One stream runs the queries one after another (Q1 to Q22 unless told otherwise).
``throughput``
    ``streams`` connections run the whole query set concurrently, each in its own order
    (stream 0 in the given order, the others in a seeded shuffle), and every repeat starts all
    streams together.

Every execution becomes one row, handed to ``on_result`` as soon as it finishes (so a caller
can write it to the catalog before the next query starts) and returned at the end. A query
that fails or runs past ``timeout_s`` is recorded with status ``error`` or ``timeout`` and the
run goes on. The timeout is enforced by the server (MariaDB ``SET STATEMENT
max_statement_time=… FOR``; TiDB and MySQL ``max_execution_time``), and by a client watchdog that
issues ``KILL QUERY`` if the server lets a statement run on past the limit.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pandas as pd
import sqlalchemy as sa

from .. import terminal
from ..db import ConnInfo, ServerInfo
from ._conn import ConnectionFactory, connector, server_info, session_sql
from .queries import Query, with_view
from .queries import queries as all_queries
from .verify import Verification, verify

Mode = Literal["power", "throughput"]

#: Server error codes meaning "stopped because of the time limit" (MariaDB max_statement_time;
#: MySQL/TiDB max_execution_time) and "interrupted" (KILL QUERY, also used by the watchdog).
TIMEOUT_CODES = {1969, 3024}
INTERRUPTED = 1317
#: Client error codes after which the connection is unusable and is replaced.
LOST_CODES = {0, 2006, 2013, 2014, 2055}

COLUMNS = [
    "arm",
    "mode",
    "stream",
    "rep",
    "warmup",
    "query",
    "status",
    "seconds",
    "rows",
    "verified",
    "verify_detail",
    "error",
    "started_at",
    "timeout_s",
]


def view_name(stream: int) -> str:
    """Q15's view name for a stream: one per stream, so concurrent streams never share it."""
    return f"revenue_s{stream}"


def stream_order(numbers: Sequence[int], stream: int, seed: int = 1) -> list[int]:
    """Query order of one stream: stream 0 as given, the others a seeded permutation."""
    order = list(numbers)
    if stream > 0:
        random.Random(seed * 1_000_003 + stream).shuffle(order)
    return order


def timeout_statements(flavor: str, timeout_s: float | None) -> list[str]:
    """Session statements that set the per-statement time limit (none for MariaDB, which
    limits each query with ``SET STATEMENT`` instead, see :func:`wrap_timeout`)."""
    if not timeout_s or flavor == "mariadb":
        return []
    return [f"SET @@session.max_execution_time = {int(round(timeout_s * 1000))}"]


def wrap_timeout(sql: str, flavor: str, timeout_s: float | None) -> str:
    """MariaDB: ``SET STATEMENT max_statement_time=<s> FOR <sql>``; others unchanged."""
    if timeout_s and flavor == "mariadb":
        return f"SET STATEMENT max_statement_time={timeout_s:g} FOR {sql}"
    return sql


def kill_statement(flavor: str, connection_id: int) -> str:
    # 'KILL TIDB QUERY' is accepted by every TiDB version; plain KILL needs global kill (6.1+).
    if flavor == "tidb":
        return f"KILL TIDB QUERY {int(connection_id)}"
    return f"KILL QUERY {int(connection_id)}"


def classify_error(exc: BaseException, watchdog_fired: bool = False) -> tuple[str, bool]:
    """``(status, connection_lost)`` for an exception raised by a query."""
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
    if code in TIMEOUT_CODES or (code == INTERRUPTED and watchdog_fired):
        return "timeout", False
    if watchdog_fired:
        return "timeout", code in LOST_CODES
    return "error", code in LOST_CODES


def detect_scale_factor(conn: Any) -> float | None:
    """Scale factor from the supplier count (10,000 per SF), or None without the table."""
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM supplier")
            n = int(cur.fetchone()[0])
    except Exception:  # noqa: BLE001 - no table, no scale factor
        return None
    return round(n / 10_000, 6) if n else None


class _Session:
    """One stream's connection: session settings, timeouts, reconnects and the watchdog."""

    def __init__(
        self,
        factory: ConnectionFactory,
        info: ServerInfo,
        settings: dict | None,
        timeout_s: float | None,
        grace_s: float,
    ):
        self.factory, self.info, self.settings = factory, info, settings
        self.timeout_s, self.grace_s = timeout_s, grace_s
        self.conn: Any = None
        self.connection_id: int | None = None

    def open(self) -> None:
        self.close()
        self.conn = self.factory()
        if hasattr(self.conn, "autocommit"):
            self.conn.autocommit(True)
        with self.conn.cursor() as cur:
            for stmt in session_sql(self.settings) + timeout_statements(
                self.info.flavor, self.timeout_s
            ):
                cur.execute(stmt)
            cur.execute("SELECT CONNECTION_ID()")
            self.connection_id = int(cur.fetchone()[0])

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:  # noqa: BLE001 - it may already be gone
                pass
        self.conn = None

    def _kill(self, fired: threading.Event) -> None:
        fired.set()
        try:
            killer = self.factory()
            try:
                with killer.cursor() as cur:
                    cur.execute(kill_statement(self.info.flavor, self.connection_id))
            finally:
                killer.close()
        except Exception:  # noqa: BLE001 - the query may have just finished
            pass

    def run(self, q: Query) -> tuple[str, float, list | None, str | None]:
        """Execute one query; returns ``(status, seconds, rows, error)``."""
        if self.conn is None:
            self.open()
        flavor = self.info.flavor
        fired = threading.Event()
        timer = None
        if self.timeout_s:
            timer = threading.Timer(self.timeout_s + self.grace_s, self._kill, args=(fired,))
            timer.daemon = True
        rows = None
        status, error = "ok", None
        with self.conn.cursor() as cur:
            for stmt in q.teardown:  # a view left behind by an interrupted run
                _quietly(cur, stmt.replace("drop view", "drop view if exists", 1))
            t0 = time.perf_counter()
            if timer:
                timer.start()
            try:
                for stmt in q.setup:
                    cur.execute(stmt)
                cur.execute(wrap_timeout(q.sql, flavor, self.timeout_s))
                rows = list(cur.fetchall())
            except Exception as e:  # recorded; the phase goes on
                status, lost = classify_error(e, fired.is_set())
                error = f"{type(e).__name__}: {e}"
                if fired.is_set():
                    error = f"killed by the client watchdog after {self.timeout_s:g} s; {error}"
                if lost:
                    seconds = time.perf_counter() - t0
                    if timer:
                        timer.cancel()
                    self.close()
                    self._teardown_after_reconnect(q)
                    return status, seconds, None, error
            finally:
                if timer:
                    timer.cancel()
            seconds_main = time.perf_counter() - t0
            if status == "ok" and fired.is_set():
                # Some statements (SLEEP) end quietly when killed: still past the limit.
                status, rows = "timeout", None
                error = f"killed by the client watchdog after {self.timeout_s:g} s"
            for stmt in q.teardown:
                try:
                    cur.execute(stmt)
                except Exception as e:  # noqa: BLE001
                    if status == "ok":
                        status, error = "error", f"{type(e).__name__}: {e}"
            seconds = time.perf_counter() - t0 if status == "ok" else seconds_main
        return status, seconds, rows, error

    def _teardown_after_reconnect(self, q: Query) -> None:
        if not q.teardown:
            return
        try:
            self.open()
            with self.conn.cursor() as cur:
                for stmt in q.teardown:
                    _quietly(cur, stmt.replace("drop view", "drop view if exists", 1))
        except Exception:  # noqa: BLE001 - the next query reconnects again
            self.close()


def _quietly(cur: Any, stmt: str) -> None:
    try:
        cur.execute(stmt)
    except Exception:  # noqa: BLE001
        pass


def run_queries(
    target: sa.Engine | ConnInfo | ConnectionFactory,
    queries: Sequence[Query | int] | None = None,
    *,
    repeats: int = 3,
    first_rep: int = 1,
    timeout_s: float | None = 60.0,
    mode: Mode = "power",
    streams: int | None = None,
    session_settings: dict[str, Any] | None = None,
    on_result: Callable[[dict], None] | None = None,
    warmup: bool = True,
    scale_factor: float | None | Literal["auto"] = "auto",
    verify_answers: bool = True,
    reference: str = "tpchgen",
    arm: str | None = None,
    seed: int = 1,
    grace_s: float | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """Run TPC-H queries and record every execution.

    Parameters
    ----------
    target
        Engine, ConnInfo, or a callable returning a new DBAPI connection.
    queries
        :class:`~.queries.Query` objects or numbers (default all 22 with validation values).
    repeats
        Measured passes per stream, after the warm-up pass.
    first_rep
        Number of the first measured pass (``rep`` in the rows): a phase that runs one pass
        per call numbers them by round.
    timeout_s
        Per-query limit; past it the query is stopped and recorded as ``timeout``.
    mode
        ``power`` (one stream) or ``throughput`` (``streams`` concurrent streams).
    streams
        Concurrent streams in throughput mode (default 2).
    session_settings
        Session variables set on every connection, e.g.
        ``{"tidb_isolation_read_engines": "tiflash,tidb"}`` or ``{"join_cache_level": 4}``.
    on_result
        Called with each row (a dict with :data:`COLUMNS`) as soon as its query finishes.
    warmup
        Run every query once first (stream 0, rows flagged ``warmup=True``, ``rep=0``).
    scale_factor
        For answer verification; ``"auto"`` derives it from the supplier count.
    verify_answers
        Check every result against the stored answer set (see :mod:`.verify`).
    reference
        Answer set to verify against: ``tpchgen`` (default) or ``duckdb``.
    arm
        Label stored in every row.
    grace_s
        How long past ``timeout_s`` the client waits before killing the query itself
        (default: 10% of the timeout, at least 2 s).

    Returns
    -------
    DataFrame
        One row per execution with :data:`COLUMNS`: ``status`` ``ok``/``error``/``timeout``,
        ``seconds`` (setup + query + fetch + teardown for ``ok``), ``verified``
        (True/False/None) and ``verify_detail`` (which row and column differ).
    """
    if mode not in ("power", "throughput"):
        raise ValueError(f"mode must be 'power' or 'throughput', not {mode!r}")
    n_streams = 1 if mode == "power" else int(streams or 2)
    qs = _resolve_queries(queries)
    factory = connector(target)
    probe = factory()
    try:
        info = server_info(probe)
        sf = detect_scale_factor(probe) if scale_factor == "auto" else scale_factor
    finally:
        probe.close()
    total = (len(qs) if warmup else 0) + repeats * n_streams * len(qs)
    desc = f"TPC-H {mode}" + (f" {arm}" if arm else "")
    run = _Execution(
        queries=qs,
        session=lambda: _Session(
            factory,
            info,
            session_settings,
            timeout_s,
            grace_s if grace_s is not None else max(2.0, 0.1 * (timeout_s or 0)),
        ),
        labels={"arm": arm, "mode": mode, "timeout_s": timeout_s},
        check=_checker(sf, reference) if verify_answers else None,
        on_result=on_result,
        bar=terminal.bar(total, desc, "query", enabled=progress),
        barrier=threading.Barrier(n_streams) if n_streams > 1 else None,
    )
    try:
        if warmup:
            run.warm_up()
        threads = [
            threading.Thread(
                target=run.stream, args=(s, repeats, seed, first_rep), name=f"tpch-stream-{s}"
            )
            for s in range(n_streams)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        run.bar.close()
    if run.failure:
        raise run.failure[0]
    return pd.DataFrame(run.results, columns=COLUMNS)


def _checker(sf: float | None, reference: str) -> Callable[[Query, Any], Verification]:
    """A query's answer checked against the ``reference`` answer set at scale factor ``sf``."""

    def check(q: Query, rows) -> Verification:
        return verify(q.number, rows, sf, source=reference, validation=q.validation)

    return check


def _resolve_queries(queries: Sequence[Query | int] | None) -> list[Query]:
    """:class:`Query` objects for ``queries`` given as objects or numbers (default: all 22)."""
    if queries is None:
        return all_queries()
    qs = [q if isinstance(q, Query) else None for q in queries]
    numbers = [q for q in queries if not isinstance(q, Query)]
    if numbers:
        by_number = {q.number: q for q in all_queries(numbers)}
        qs = [q if isinstance(q, Query) else by_number[q] for q in queries]
    return qs


@dataclass
class _Execution:
    """One :func:`run_queries` call's streams: each execution timed, verified and handed on
    as a row, a failure in one stream stopping them all."""

    queries: list[Query]
    #: a new session on the target (one per stream)
    session: Callable[[], _Session]
    #: arm, mode and timeout_s, the same in every row
    labels: dict
    #: the answer check, None when answers are not verified
    check: Callable[[Query, Any], Verification] | None
    on_result: Callable[[dict], None] | None
    bar: Any
    barrier: threading.Barrier | None
    results: list[dict] = field(default_factory=list)
    failure: list[BaseException] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)

    def emit(self, row: dict) -> None:
        with self.lock:
            self.results.append(row)
            self.bar.update(1)
            if self.on_result is not None:
                self.on_result(dict(row))

    def execute(self, session: _Session, q: Query, stream: int, rep: int, warmup: bool) -> None:
        started = time.time()
        status, seconds, rows, error = session.run(q)
        check = Verification(None, "not verified")
        if status == "ok" and self.check is not None:
            check = self.check(q, rows)
        self.emit(
            {
                "arm": self.labels["arm"],
                "mode": self.labels["mode"],
                "stream": stream,
                "rep": rep,
                "warmup": warmup,
                "query": q.number,
                "status": status,
                "seconds": seconds,
                "rows": len(rows) if rows is not None else None,
                "verified": check.ok,
                "verify_detail": check.detail if status == "ok" else None,
                "error": error,
                "started_at": started,
                "timeout_s": self.labels["timeout_s"],
            }
        )

    def warm_up(self) -> None:
        """Every query once, stream 0, rows flagged ``warmup`` with ``rep=0``."""
        session = self.session()
        try:
            for q in self.queries:
                self.execute(session, with_view(q, view_name(0)), 0, 0, True)
        finally:
            session.close()

    def stream(self, stream: int, repeats: int, seed: int, first_rep: int = 1) -> None:
        """One stream's measured passes, in its own query order, the streams' passes in step."""
        session = self.session()
        by_number = {q.number: q for q in self.queries}
        order = [
            with_view(by_number[n], view_name(stream))
            for n in stream_order([q.number for q in self.queries], stream, seed)
        ]
        try:
            for rep in range(first_rep, first_rep + repeats):
                if self.barrier is not None:
                    self.barrier.wait()
                for q in order:
                    if self.stop.is_set():
                        return
                    self.execute(session, q, stream, rep, False)
        except threading.BrokenBarrierError:
            return
        except BaseException as e:  # a failing callback stops every stream
            self.failure.append(e)
            self.stop.set()
            if self.barrier is not None:
                self.barrier.abort()
        finally:
            session.close()

"""TiDB with TiFlash: replicas, the read-engine setting, plan checks and waiting for a scale-out.

Report 002 put one TiFlash replica on every TPC-H table, set
``tidb_isolation_read_engines = 'tiflash,tidb'`` in the session and then ran the 22 queries; it
did not check that each query actually read from TiFlash. tibench does:

1. ``ALTER TABLE t SET TIFLASH REPLICA n`` for every table (:func:`set_replicas`);
2. poll ``information_schema.tiflash_replica`` until every table shows ``AVAILABLE = 1`` and
   ``PROGRESS = 1`` (:func:`wait_for_replicas`, with a timeout and a progress bar);
3. ``EXPLAIN`` every query in a session with :data:`TIFLASH_SESSION` and require a TiFlash
   operator (``cop[tiflash]``, ``batchCop[tiflash]`` or ``mpp[tiflash]``) in its plan
   (:func:`check_plans`); the printed plan is kept;
4. between scaling arms, wait until the TiFlash stores' region counts reported by PD stop
   changing (:func:`wait_regions_stable`) and record how many TiFlash stores there are.

The SQL builders and the decisions on fetched rows are pure functions; the waits take ``sleep``
and ``clock`` arguments so they are tested without a cluster.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd
import sqlalchemy as sa

from .. import terminal
from ..db import ConnInfo
from ..httpclient import Access, HttpClient
from ..parse.tidb import parse_explain, parse_pd_stores, plan_reads_tiflash, plan_table_engines
from ._conn import ConnectionFactory, connector, session_sql
from .queries import Query
from .queries import queries as all_queries
from .schema import TABLES

#: The session setting of report 002: read from TiFlash, fall back to TiKV only when needed.
TIFLASH_SESSION: dict[str, str] = {"tidb_isolation_read_engines": "tiflash,tidb"}

REPLICA_COLUMNS = [
    "table_schema",
    "table_name",
    "table_id",
    "replica_count",
    "location_labels",
    "available",
    "progress",
]


class TiFlashError(RuntimeError):
    """Replicas did not become available in time, or a plan does not read from TiFlash."""

    def __init__(self, message: str, status: pd.DataFrame | None = None):
        super().__init__(message)
        self.status = status


# ------------------------------------------------------------------------------ replicas


def set_replica_sql(table: str, replicas: int, schema: str | None = None) -> str:
    """``ALTER TABLE [schema.]table SET TIFLASH REPLICA n`` (0 removes the replica)."""
    if replicas < 0:
        raise ValueError("replica count must be >= 0")
    name = f"`{schema}`.`{table}`" if schema else f"`{table}`"
    return f"ALTER TABLE {name} SET TIFLASH REPLICA {int(replicas)}"


def replica_status_sql() -> str:
    """The replica status of one schema's tables (``%s`` is the schema)."""
    return (
        "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_ID, REPLICA_COUNT, LOCATION_LABELS, "
        "AVAILABLE, PROGRESS FROM information_schema.tiflash_replica WHERE TABLE_SCHEMA = %s"
    )


def replica_frame(rows: Sequence[Sequence[Any]]) -> pd.DataFrame:
    """Rows of :func:`replica_status_sql` → the columns of ``parse.tidb.parse_tiflash_replica``
    (``available`` boolean, ``progress`` float)."""
    frame = pd.DataFrame([list(r) for r in rows], columns=REPLICA_COLUMNS)
    frame["table_name"] = frame["table_name"].astype(str).str.lower()
    frame["replica_count"] = pd.to_numeric(frame["replica_count"]).astype("Int64")
    frame["available"] = frame["available"].map(lambda v: str(v).strip() in ("1", "True", "true"))
    frame["progress"] = pd.to_numeric(frame["progress"], errors="coerce")
    return frame


def replicas_ready(
    status: pd.DataFrame, replicas: int, tables: Sequence[str] = TABLES
) -> tuple[bool, str]:
    """Whether every table has ``replicas`` TiFlash replicas, available and fully synced.

    Parameters
    ----------
    status
        :func:`replica_frame` or ``parse.tidb.parse_tiflash_replica`` output.

    Returns
    -------
    (ready, detail)
        ``detail`` lists the tables still missing or syncing, with their progress.
    """
    by_table = {str(r.table_name).lower(): r for r in status.itertuples()}
    waiting = []
    for t in tables:
        r = by_table.get(t.lower())
        if r is None:
            waiting.append(f"{t}: no replica")
        elif int(r.replica_count) != replicas:
            waiting.append(f"{t}: {r.replica_count} replicas, want {replicas}")
        elif not (bool(r.available) and float(r.progress) >= 1.0):
            waiting.append(f"{t}: available={int(bool(r.available))} progress={r.progress:.2f}")
    return (not waiting), ("; ".join(waiting) or f"{len(tables)} tables ready")


def replica_progress(status: pd.DataFrame, tables: Sequence[str] = TABLES) -> float:
    """Mean sync progress over the tables (0 for a table without a replica)."""
    got = dict(zip(status["table_name"].str.lower(), status["progress"].fillna(0), strict=False))
    return float(sum(min(1.0, got.get(t, 0.0)) for t in tables) / len(tables))


def set_replicas(
    target: sa.Engine | ConnInfo | ConnectionFactory,
    replicas: int,
    tables: Sequence[str] = TABLES,
    guard: Callable[[str], None] | None = None,
) -> list[str]:
    """Run ``SET TIFLASH REPLICA`` for every table; returns the statements run."""
    if guard is not None:
        guard(f"set {replicas} TiFlash replica(s) on {', '.join(tables)}")
    stmts = [set_replica_sql(t, replicas) for t in tables]
    conn = connector(target)()
    try:
        with conn.cursor() as cur:
            for s in stmts:
                cur.execute(s)
    finally:
        conn.close()
    return stmts


def wait_for_replicas(
    target: sa.Engine | ConnInfo | ConnectionFactory,
    replicas: int,
    tables: Sequence[str] = TABLES,
    *,
    timeout_s: float = 3600.0,
    poll_s: float = 5.0,
    progress: bool = True,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> pd.DataFrame:
    """Poll ``information_schema.tiflash_replica`` until :func:`replicas_ready`.

    Returns
    -------
    DataFrame
        The last status (:func:`replica_frame`).

    Raises
    ------
    TiFlashError
        After ``timeout_s``, with the last status attached as ``.status``.
    """
    conn = connector(target)()
    deadline = clock() + timeout_s
    bar = terminal.bar(100, "TiFlash replicas", "%", enabled=progress)
    try:
        while True:
            with conn.cursor() as cur:
                cur.execute("SELECT DATABASE()")
                schema = cur.fetchone()[0]
                cur.execute(replica_status_sql(), (schema,))
                status = replica_frame(cur.fetchall())
            done, detail = replicas_ready(status, replicas, tables)
            pct = round(100 * replica_progress(status, tables))
            bar.update(max(0, pct - bar.n))
            bar.set_postfix_str(detail[:60])
            if done:
                return status
            if clock() >= deadline:
                raise TiFlashError(
                    f"TiFlash replicas not ready after {timeout_s:g} s: {detail}", status
                )
            sleep(poll_s)
    finally:
        bar.close()
        conn.close()


# ------------------------------------------------------------------------------ plans


def format_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Rows as the mysql client prints them in table mode (what the fixtures hold)."""
    cells = [[("NULL" if v is None else str(v)) for v in r] for r in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    border = "+" + "+".join("-" * (w + 2) for w in widths) + "+"

    def line(values: Sequence[str]) -> str:
        return "|" + "|".join(f" {v.ljust(w)} " for v, w in zip(values, widths, strict=True)) + "|"

    return "\n".join([border, line(list(columns)), border, *(line(r) for r in cells), border])


def explain(conn: Any, q: Query) -> tuple[str, pd.DataFrame]:
    """``EXPLAIN`` one query on an open connection (Q15: with its view created around it).

    Returns
    -------
    (text, plan)
        The plan as the client would print it, and ``parse.tidb.parse_explain`` of it.
    """
    with conn.cursor() as cur:
        for s in q.teardown:
            try:
                cur.execute(s.replace("drop view", "drop view if exists", 1))
            except Exception:  # noqa: BLE001 - nothing to drop
                pass
        try:
            for s in q.setup:
                cur.execute(s)
            cur.execute("EXPLAIN " + q.sql)
            columns = [d[0] for d in cur.description]
            rows = cur.fetchall()
        finally:
            for s in q.teardown:
                try:
                    cur.execute(s)
                except Exception:  # noqa: BLE001
                    pass
    text = format_table(columns, rows)
    return text, parse_explain(text)


def plan_summary(plan: pd.DataFrame) -> dict:
    """What a plan reads from where: ``reads_tiflash``, ``tiflash_tables``, ``tikv_tables``,
    ``task_kinds`` (e.g. ``mpp``, ``batchCop``)."""
    scans = plan_table_engines(plan)
    on = sorted(set(scans.loc[scans["engine"] == "tiflash", "table"]))
    off = sorted(set(scans.loc[scans["engine"] == "tikv", "table"]))
    kinds = sorted(set(plan.loc[plan["engine"] == "tiflash", "task_kind"].dropna()))
    return {
        "reads_tiflash": plan_reads_tiflash(plan),
        "tiflash_tables": ",".join(on),
        "tikv_tables": ",".join(off),
        "task_kinds": ",".join(kinds),
    }


def check_plans(
    target: sa.Engine | ConnInfo | ConnectionFactory,
    queries: Sequence[Query] | None = None,
    session_settings: dict[str, Any] | None = None,
    *,
    require: bool = False,
) -> pd.DataFrame:
    """``EXPLAIN`` each query in a TiFlash session and record whether it reads from TiFlash.

    Parameters
    ----------
    session_settings
        Default :data:`TIFLASH_SESSION`.
    require
        Raise :class:`TiFlashError` when some query's plan has no TiFlash operator.

    Returns
    -------
    DataFrame
        ``query``, ``reads_tiflash``, ``tiflash_tables``, ``tikv_tables``, ``task_kinds``,
        ``plan`` (the printed plan), ``error``.
    """
    settings = TIFLASH_SESSION if session_settings is None else session_settings
    conn = connector(target)()
    out = []
    try:
        with conn.cursor() as cur:
            for s in session_sql(settings):
                cur.execute(s)
        for q in queries or all_queries():
            row = {
                "query": q.number,
                "reads_tiflash": None,
                "tiflash_tables": None,
                "tikv_tables": None,
                "task_kinds": None,
                "plan": None,
                "error": None,
            }
            try:
                text, plan = explain(conn, q)
                row.update(plan_summary(plan), plan=text)
            except Exception as e:  # recorded per query
                row["error"] = f"{type(e).__name__}: {e}"
            out.append(row)
    finally:
        conn.close()
    frame = pd.DataFrame(out)
    if require:
        bad = frame[frame["reads_tiflash"] != True]  # noqa: E712 - None counts as not
        if len(bad):
            raise TiFlashError(
                "plans without TiFlash: " + ", ".join(f"Q{n}" for n in bad["query"]), frame
            )
    return frame


# ------------------------------------------------------------------------------ scaling arms


def tiflash_store_count_sql() -> str:
    """TiFlash instances known to the cluster (one row per instance in ``cluster_info``)."""
    return "SELECT COUNT(*) FROM information_schema.cluster_info WHERE TYPE = 'tiflash'"


def tiflash_store_count(target: sa.Engine | ConnInfo | ConnectionFactory) -> int:
    conn = connector(target)()
    try:
        with conn.cursor() as cur:
            cur.execute(tiflash_store_count_sql())
            return int(cur.fetchone()[0])
    finally:
        conn.close()


def pd_stores_fetcher(
    pd_url: str, timeout_s: float = 10.0, access: Access | None = None
) -> Callable[[], dict]:
    """A callable returning PD's ``/pd/api/v1/stores`` JSON (``pd_url`` like
    ``http://10.0.1.1:2379``; ``access``: TLS and authentication, the study's
    ``tpch_scaling.pd_http``). It raises :class:`tibenchlib.httpclient.HttpError`, one line
    naming the URL, when PD cannot be reached or refuses."""
    client = HttpClient(pd_url, access, timeout_s)

    def fetch() -> dict:
        return client.get_json("/pd/api/v1/stores")

    return fetch


def tiflash_region_counts(stores: pd.DataFrame) -> dict[int, int]:
    """Region count per Up TiFlash store from ``parse.tidb.parse_pd_stores`` output."""
    up = stores[(stores["engine"] == "tiflash") & (stores["state_name"] == "Up")]
    return {int(r.store_id): int(r.region_count or 0) for r in up.itertuples()}


def wait_regions_stable(
    fetch: Callable[[], Any],
    *,
    expected_stores: int | None = None,
    stable_polls: int = 3,
    poll_s: float = 30.0,
    timeout_s: float = 7200.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    progress: bool = True,
) -> pd.DataFrame:
    """Wait until the TiFlash stores' region counts stop changing after a scale-out.

    Report 002 watched the monitoring "until regions were evenly distributed"; this is the
    measurable form: the same counts in ``stable_polls`` consecutive polls ``poll_s`` apart,
    every Up TiFlash store holding regions, and (if given) ``expected_stores`` such stores.

    Parameters
    ----------
    fetch
        Returns PD's stores response (text or decoded JSON), e.g. :func:`pd_stores_fetcher`.

    Returns
    -------
    DataFrame
        Every poll: ``poll``, ``elapsed_s``, ``store_id``, ``region_count``.

    Raises
    ------
    TiFlashError
        After ``timeout_s`` without a stable state (the history is attached as ``.status``).
    """
    start = clock()
    history: list[dict] = []
    previous: dict[int, int] | None = None
    same = 0
    bar = terminal.bar(None, "TiFlash regions", "poll", enabled=progress)
    try:
        for poll in range(1_000_000):
            counts = tiflash_region_counts(parse_pd_stores(fetch()))
            elapsed = clock() - start
            history += [
                {"poll": poll, "elapsed_s": elapsed, "store_id": k, "region_count": v}
                for k, v in sorted(counts.items())
            ]
            enough = expected_stores is None or len(counts) == expected_stores
            same = same + 1 if counts == previous and counts else 0
            bar.update(1)
            bar.set_postfix_str(" ".join(f"{k}:{v}" for k, v in sorted(counts.items()))[:60])
            if enough and all(counts.values()) and same >= stable_polls - 1:
                return pd.DataFrame(history)
            if elapsed >= timeout_s:
                raise TiFlashError(
                    f"TiFlash region counts not stable after {timeout_s:g} s "
                    f"(stores {len(counts)}, expected {expected_stores})",
                    pd.DataFrame(history),
                )
            previous = counts
            sleep(poll_s)
    finally:
        bar.close()
    raise AssertionError("unreachable")

"""Create the TPC-H tables, load the generated files in parallel, ANALYZE, and verify the counts.

Each generated part file is one ``LOAD DATA LOCAL INFILE`` on its own connection; a pool of
``workers`` connections takes the files largest first, so the long lineitem parts start early
and the small tables fill the gaps. The files end every line with ``|`` (dbgen's format), which
``LINES TERMINATED BY '|\\n'`` absorbs. A file loads only if the server reports exactly as many
rows as the file has lines and no warnings.

A data set already in the database whose row counts verify is reused: nothing is dropped. This
also accepts tables loaded by ``tiup bench tpch prepare``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import pandas as pd
import sqlalchemy as sa

from .. import terminal
from ..db import ConnInfo, ServerInfo, sending_local_file
from . import datagen
from ._conn import ConnectionFactory, connector, server_info
from .datagen import LINEITEM_ROWS, DataSet
from .schema import TABLES, analyze_sql, columns, create_table_sql, drop_table_sql, expected_rows


class LoadError(RuntimeError):
    """A file did not load completely, or the loaded tables do not verify."""


def load_data_sql(table: str) -> str:
    """``LOAD DATA LOCAL INFILE`` for one ``.tbl`` file; the path is a ``%s`` parameter."""
    cols = ", ".join(f"`{c}`" for c in columns(table))
    return (
        f"LOAD DATA LOCAL INFILE %s INTO TABLE `{table}` "
        f"FIELDS TERMINATED BY '|' LINES TERMINATED BY '|\\n' ({cols})"
    )


def table_counts(conn: Any, tables: tuple[str, ...] = TABLES) -> dict[str, int | None]:
    """``COUNT(*)`` of each table, ``None`` for a table that does not exist."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT LOWER(table_name) FROM information_schema.tables "
            "WHERE table_schema = DATABASE()"
        )
        existing = {r[0] for r in cur.fetchall()}
        out: dict[str, int | None] = {}
        for t in tables:
            if t in existing:
                cur.execute(f"SELECT COUNT(*) FROM `{t}`")
                out[t] = int(cur.fetchone()[0])
            else:
                out[t] = None
    return out


def check_counts(
    counts: dict[str, int | None], scale_factor: float, lineitem_rows: int | None = None
) -> pd.DataFrame:
    """Compare row counts with what SF implies: one row per table.

    Lineitem is compared with ``lineitem_rows`` (from the generated files), else with the
    count measured at this SF (:data:`~.datagen.LINEITEM_ROWS`), else only checked to be
    within 3.9–4.1 lines per order (each order has 1–7 lines, 4 on average).

    Returns
    -------
    DataFrame
        ``table``, ``rows`` (None when missing), ``expected``, ``ok``, ``detail``.
    """
    rows = []
    for t in TABLES:
        got = counts.get(t)
        want = expected_rows(t, scale_factor)
        detail = ""
        if t == "lineitem":
            want = lineitem_rows if lineitem_rows is not None else LINEITEM_ROWS.get(scale_factor)
        if got is None:
            ok, detail = False, "missing"
        elif want is not None:
            ok = got == want
            detail = "" if ok else f"{got} rows, {want} expected"
        else:
            orders = counts.get("orders") or 0
            per_order = got / orders if orders else 0.0
            ok = 3.9 <= per_order <= 4.1
            detail = f"no exact count known at SF {scale_factor:g}: {per_order:.3f} lines/order"
        rows.append({"table": t, "rows": got, "expected": want, "ok": bool(ok), "detail": detail})
    return pd.DataFrame(rows)


def dataset_state(
    target: sa.Engine | ConnInfo | ConnectionFactory,
    scale_factor: float,
    lineitem_rows: int | None = None,
) -> pd.DataFrame:
    """:func:`check_counts` on the tables in the target's current database."""
    conn = connector(target)()
    try:
        return check_counts(table_counts(conn), scale_factor, lineitem_rows)
    finally:
        conn.close()


def load(
    target: sa.Engine | ConnInfo | ConnectionFactory,
    dataset: DataSet,
    *,
    workers: int = 2,
    analyze: bool = True,
    force: bool = False,
    progress: bool = True,
    guard: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """Load a generated data set into the target's database (or reuse what is there).

    Parameters
    ----------
    target
        Engine, ConnInfo or DBAPI connection factory; the server needs ``local_infile`` ON.
        The loader's own connections offer LOAD DATA LOCAL and send only the file each
        statement names; a factory's connections need ``local_infile=True``.
    dataset
        From :func:`.datagen.generate`.
    workers
        Concurrent ``LOAD DATA`` / ``ANALYZE`` connections.
    analyze
        Collect statistics after loading (MariaDB: ``PERSISTENT FOR ALL``).
    force
        Drop and reload even when the tables already verify.
    guard
        Called with a description before existing tables are dropped; it raises to refuse
        (pass ``ArmContext.guard`` on a real cluster).

    Returns
    -------
    DataFrame
        One row per step: ``step`` (``reuse``, ``create``, ``load``, ``load_total``,
        ``analyze``, ``verify``), ``table``, ``file``, ``status``, ``seconds``, ``rows``,
        ``bytes``, ``detail``.

    Raises
    ------
    LoadError
        When a file loads incompletely or the final counts do not verify.
    """
    factory = connector(target, send_files=True)
    steps: list[dict] = []
    info = _recreate_unless_verified(factory, dataset, steps, force=force, guard=guard)
    if info is None:
        return pd.DataFrame(steps)
    _load_files(factory, dataset, steps, workers=workers, progress=progress)
    if analyze:
        flavor = info.flavor
        _run_pool(
            factory,
            workers,
            [(t, None) for t in reversed(TABLES)],
            lambda c, tf: _analyze(c, tf[0], flavor),
            steps,
            progress,
            "analyze",
        )
    _verify_loaded(factory, dataset, steps)
    return pd.DataFrame(steps)


def _step(steps: list[dict], step: str, **kw: Any) -> dict:
    """One row of :func:`load`'s steps, appended to ``steps``."""
    row = _step_row(step, **kw)
    steps.append(row)
    return row


def _step_row(step: str, **kw: Any) -> dict:
    """One row of :func:`load`'s steps: ``kw`` over the defaults (ok, nothing counted)."""
    return {
        "step": step,
        "table": None,
        "file": None,
        "status": "ok",
        "seconds": 0.0,
        "rows": None,
        "bytes": None,
        "detail": None,
        **kw,
    }


def _recreate_unless_verified(
    factory, dataset: DataSet, steps: list[dict], *, force: bool, guard
) -> ServerInfo | None:
    """The tables dropped and created anew (after ``guard`` where some hold rows); None when
    they already verify and ``force`` is not given (a ``reuse`` step)."""
    main = factory()
    try:
        info = server_info(main)
        state = check_counts(table_counts(main), dataset.scale_factor, dataset.rows.get("lineitem"))
        if not force and state["ok"].all():
            _step(
                steps,
                "reuse",
                rows=int(state["rows"].sum()),
                detail=f"SF {dataset.scale_factor:g} tables present and verified",
            )
            return None
        t0 = time.perf_counter()
        if guard is not None and state["rows"].notna().any():
            guard("drop and re-create the TPC-H tables " + ", ".join(TABLES))
        with main.cursor() as cur:
            for t in TABLES:
                cur.execute(drop_table_sql(t))
                cur.execute(create_table_sql(t))
        _step(steps, "create", seconds=time.perf_counter() - t0, detail=f"{len(TABLES)} tables")
    finally:
        main.close()
    return info


def _load_files(factory, dataset: DataSet, steps: list[dict], *, workers: int, progress) -> None:
    """Every data file loaded, largest first, on ``workers`` connections; raises
    :class:`LoadError` naming the files that did not load whole."""
    t0 = time.perf_counter()
    file_rows = dataset.file_rows()
    tasks = sorted(
        ((t, f) for t in TABLES for f in dataset.files[t]),
        key=lambda tf: -tf[1].stat().st_size,
    )
    _run_pool(
        factory,
        workers,
        tasks,
        lambda c, tf: _load_file(c, tf[0], tf[1], file_rows),
        steps,
        progress,
        "load",
        total_bytes=dataset.total_bytes,
    )
    failed = [s for s in steps if s["step"] == "load" and s["status"] != "ok"]
    _step(
        steps,
        "load_total",
        seconds=time.perf_counter() - t0,
        rows=sum(dataset.rows.values()),
        bytes=dataset.total_bytes,
        status="failed" if failed else "ok",
        detail=f"{len(tasks)} files, {workers} workers",
    )
    if failed:
        raise LoadError("; ".join(f"{s['file']}: {s['detail']}" for s in failed[:5]))


def _verify_loaded(factory, dataset: DataSet, steps: list[dict]) -> None:
    """The tables' row counts against the data set's (a ``verify`` step); raises
    :class:`LoadError` when they differ."""
    conn = factory()
    try:
        t0 = time.perf_counter()
        state = check_counts(table_counts(conn), dataset.scale_factor, dataset.rows.get("lineitem"))
    finally:
        conn.close()
    bad = state[~state["ok"]]
    row = _step(
        steps,
        "verify",
        seconds=time.perf_counter() - t0,
        rows=int(state["rows"].fillna(0).sum()),
        status="failed" if len(bad) else "ok",
        detail="; ".join(f"{r.table}: {r.detail}" for r in bad.itertuples()) or "all counts",
    )
    if len(bad):
        raise LoadError("loaded tables do not verify: " + row["detail"])


def _run_pool(factory, workers, tasks, fn, steps, progress, desc, total_bytes=None) -> None:
    """Run ``fn(conn, task)`` for every task on ``workers`` connections, recording each."""
    local = threading.local()
    conns: list[Any] = []
    lock = threading.Lock()

    def run(task):
        if not hasattr(local, "conn"):
            local.conn = factory()
            with lock:
                conns.append(local.conn)
        return fn(local.conn, task)

    unit = "B" if total_bytes else "table"
    bar = terminal.bar(
        total_bytes or len(tasks),
        desc,
        unit,
        enabled=progress,
        unit_scale=bool(total_bytes),
        step=True,
    )
    try:
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            futures = [pool.submit(run, t) for t in tasks]
            for fut in as_completed(futures):
                row = fut.result()
                steps.append(row)
                bar.update((row.get("bytes") or 0) if total_bytes else 1)
    finally:
        bar.close()
        for c in conns:
            try:
                c.close()
            except Exception:  # noqa: BLE001 - a broken connection is closed either way
                pass


def _load_file(conn: Any, table: str, path: Path, file_rows: dict[Path, int]) -> dict:
    size = path.stat().st_size
    want = file_rows.get(path)
    row = _step_row("load", table=table, file=str(path), bytes=size)
    t0 = time.perf_counter()
    try:
        conn.autocommit(True)
        with conn.cursor() as cur, sending_local_file(conn, path):
            n = cur.execute(load_data_sql(table), (str(path),))
            warnings = _warning_count(cur)
            detail = None
            if warnings:
                cur.execute("SHOW WARNINGS LIMIT 3")
                detail = f"{warnings} warnings: " + "; ".join(str(r[2]) for r in cur.fetchall())
        row.update(rows=int(n), seconds=time.perf_counter() - t0)
        if want is not None and n != want:
            row.update(status="failed", detail=f"{n} rows loaded, file has {want} lines")
        elif detail:
            row.update(status="failed", detail=detail)
    except Exception as e:  # recorded per file; load() raises after the pool drains
        row.update(status="failed", seconds=time.perf_counter() - t0, detail=str(e))
    return row


def _warning_count(cur: Any) -> int:
    result = getattr(cur, "_result", None)
    return int(getattr(result, "warning_count", 0) or 0)


def _analyze(conn: Any, table: str, flavor: str) -> dict:
    row = _step_row("analyze", table=table)
    t0 = time.perf_counter()
    try:
        with conn.cursor() as cur:
            cur.execute(analyze_sql(table, flavor))
            result = cur.fetchall() if cur.description else []
        msgs = [f"{r[2]}: {r[3]}" for r in result if len(r) >= 4]
        if any(str(r[2]).lower() == "error" for r in result if len(r) >= 4):
            row["status"] = "failed"
        row["detail"] = "; ".join(msgs) or None
    except Exception as e:
        row.update(status="failed", detail=str(e))
    row["seconds"] = time.perf_counter() - t0
    return row


def prepare(
    target: sa.Engine | ConnInfo | ConnectionFactory,
    scale_factor: float,
    *,
    directory: str | Path | None = None,
    workers: int = 2,
    analyze: bool = True,
    force: bool = False,
    progress: bool = True,
    guard: Callable[[str], None] | None = None,
    chunk_bytes: int = 16 << 20,
) -> pd.DataFrame:
    """Make sure the target holds a verified SF data set: reuse it, or generate and load it.

    Tables already in the database whose counts verify are kept without generating anything
    (this accepts data loaded by ``tiup bench tpch prepare``; lineitem is then checked against
    the known count at this SF, or for 3.9–4.1 lines per order). Otherwise the files are
    generated (or reused, see :func:`.datagen.generate`) and :func:`load` runs.

    Returns
    -------
    DataFrame
        The steps of :func:`load`, after a ``generate`` step when files were needed.
    """
    if not force:
        known = datagen.load_manifest(directory or datagen.default_dir(scale_factor))
        lineitem_rows = known.rows.get("lineitem") if known is not None else None
        state = dataset_state(target, scale_factor, lineitem_rows)
        if state["ok"].all():
            notes = "; ".join(d for d in state["detail"] if d)
            return pd.DataFrame(
                [
                    {
                        "step": "reuse",
                        "table": None,
                        "file": None,
                        "status": "ok",
                        "seconds": 0.0,
                        "rows": int(state["rows"].sum()),
                        "bytes": None,
                        "detail": f"SF {scale_factor:g} tables present and verified"
                        + (f" ({notes})" if notes else ""),
                    }
                ]
            )
    t0 = time.perf_counter()
    ds = datagen.generate(scale_factor, directory, chunk_bytes=chunk_bytes, progress=progress)
    gen = {
        "step": "generate",
        "table": None,
        "file": str(ds.directory),
        "status": "ok",
        "seconds": time.perf_counter() - t0,
        "rows": sum(ds.rows.values()),
        "bytes": ds.total_bytes,
        "detail": ("reused " if ds.reused else "") + f"{ds.generator or 'tpchgen-cli'}",
    }
    steps = load(
        target, ds, workers=workers, analyze=analyze, force=force, progress=progress, guard=guard
    )
    return pd.concat([pd.DataFrame([gen]), steps], ignore_index=True)

"""Prepare, ANALYZE, warm up and verify the sysbench tables, as the reports do.

1. ``sysbench oltp_common --tables=N --table-size=M --threads=T prepare`` (skipped when the data
   set already matches, unless forced);
2. statistics for every table: ``ANALYZE TABLE`` (MariaDB: ``… PERSISTENT FOR ALL``, since a plain
   ANALYZE there collects no engine-independent statistics);
3. warm-up: ``SELECT COUNT(pad) FROM sbtestN USE INDEX(k_N)`` and a primary-key scan;
4. verification of row counts and the ``k_N`` index.

Every step is timed and written to the catalog's ``prepare_steps`` as it finishes.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pandas as pd
import sqlalchemy as sa

from .. import paths, terminal
from ..db import secret_config_file
from ..safety import DestructiveRefused
from ..tools import display_command, execute
from .command import sysbench_command


class PrepareError(RuntimeError):
    """The data set could not be prepared or does not verify."""


def table_names(n: int) -> list[str]:
    return [f"sbtest{i}" for i in range(1, n + 1)]


def dataset_state(engine: sa.Engine, tables: int) -> pd.DataFrame:
    """One row per expected table: whether it exists, its row count, whether ``k_N`` exists."""
    insp = sa.inspect(engine)
    existing = set(insp.get_table_names())
    rows = []
    with engine.connect() as c:
        for i, t in enumerate(table_names(tables), start=1):
            if t not in existing:
                rows.append({"table": t, "exists": False, "rows": 0, "k_index": False})
                continue
            n = c.exec_driver_sql(f"SELECT COUNT(*) FROM `{t}`").scalar_one()
            idx = {ix["name"] for ix in insp.get_indexes(t)}
            rows.append({"table": t, "exists": True, "rows": int(n), "k_index": f"k_{i}" in idx})
    return pd.DataFrame(rows)


def matches(state: pd.DataFrame, table_size: int, *, grown_ok: bool = False) -> bool:
    """The tables exist with their ``k_N`` index and ``table_size`` rows each.

    ``grown_ok`` also accepts more rows: what ``oltp_insert`` leaves behind during a sweep,
    which must not trigger a re-prepare (and so a different data set) at every arm switch.
    """
    if not len(state) or not state["exists"].all() or not state["k_index"].all():
        return False
    rows = state["rows"]
    return bool((rows >= table_size).all() if grown_ok else (rows == table_size).all())


def analyze_sql(table: str, flavor: str) -> str:
    if flavor == "mariadb":
        return f"ANALYZE TABLE `{table}` PERSISTENT FOR ALL"
    return f"ANALYZE TABLE `{table}`"


def warmup_sql(table: str, index: int) -> list[str]:
    return [
        f"SELECT COUNT(pad) FROM `{table}` USE INDEX(k_{index})",
        f"SELECT COUNT(id) FROM `{table}` USE INDEX(PRIMARY)",
    ]


def record_step(
    ctx, step: str, table: str | None, status: str, seconds: float, detail: str | None
) -> dict:
    """One timed step of an arm's data set (prepare, load, ANALYZE, verify...) written to the
    catalog's ``prepare_steps`` as it finishes; returns the row."""
    row = {
        "study": ctx.study.study,
        "arm": ctx.arm.label,
        "step": step,
        "table_name": table,
        "status": status,
        "seconds": seconds,
        "detail": detail,
        "at": time.time(),
    }
    ctx.store.append("prepare_steps", [row])
    return row


def prepare(ctx, *, force: bool | None = None, progress: bool = True) -> pd.DataFrame:
    """Prepare / ANALYZE / warm up / verify the study's sysbench tables on one arm.

    Parameters
    ----------
    ctx
        An :class:`~tibenchlib.target.ArmContext`.
    force
        Re-create the tables even when they already match (default: ``dataset.force``).

    Returns
    -------
    DataFrame of steps: step, table_name, status, seconds, detail.
    """
    ds = ctx.study.dataset
    force = ds.force if force is None else force
    engine = ctx.engine()
    steps: list[dict] = []

    def step(name: str, table: str | None, fn: Callable[[], str | None]) -> None:
        t0 = time.perf_counter()
        status, detail = "ok", None
        try:
            detail = fn()
        except DestructiveRefused:
            raise
        except Exception as e:  # recorded, then re-raised: the catalog keeps what happened
            status, detail = "failed", str(e)
        steps.append(record_step(ctx, name, table, status, time.perf_counter() - t0, detail))
        if status != "ok":
            raise PrepareError(f"{name} {table or ''} failed: {detail}")

    try:
        state = dataset_state(engine, ds.tables)
        if force or not matches(state, ds.table_size):
            step("prepare", None, lambda: _sysbench_prepare(ctx))
        else:
            steps.append(
                {
                    "step": "prepare",
                    "table_name": None,
                    "status": "skipped",
                    "seconds": 0.0,
                    "detail": f"{ds.tables} tables × {ds.table_size} rows already present",
                }
            )
        names = table_names(ds.tables)
        bar = terminal.bar(
            None, "analyze + warm-up", "table", enabled=progress, iterable=names, step=True
        )
        for i, t in enumerate(bar, start=1):
            if ds.analyze:
                step("analyze", t, lambda t=t: _exec(engine, [analyze_sql(t, ctx.info.flavor)]))
            if ds.warmup:
                step("warmup", t, lambda t=t, i=i: _exec(engine, warmup_sql(t, i)))
        step("verify", None, lambda: _verify(engine, ds.tables, ds.table_size))
    finally:
        engine.dispose()
    return pd.DataFrame(steps)[["step", "table_name", "status", "seconds", "detail"]]


def ensure_ready(ctx) -> None:
    """Before runs on a freshly opened arm: prepare when the data set does not match, else
    warm the (possibly just restarted, cold) buffer pool."""
    engine = ctx.engine()
    try:
        state = dataset_state(engine, ctx.study.dataset.tables)
        ok = matches(state, ctx.study.dataset.table_size, grown_ok=True)
    finally:
        engine.dispose()
    if not ok:
        prepare(ctx, progress=False)
    elif ctx.study.dataset.warmup:
        warm(ctx)


def warm(ctx) -> float:
    """Warm-up SQL only (after a server restart the buffer pool is cold). Returns seconds."""
    t0 = time.perf_counter()
    engine = ctx.engine()
    try:
        for i, t in enumerate(table_names(ctx.study.dataset.tables), start=1):
            _exec(engine, warmup_sql(t, i))
    finally:
        engine.dispose()
    return time.perf_counter() - t0


def cleanup(ctx) -> None:
    """Drop the sysbench tables (``sysbench oltp_common cleanup``)."""
    ds = ctx.study.dataset
    ctx.guard(f"drop sbtest1..sbtest{ds.tables}")
    _sysbench(ctx, "cleanup")


def _exec(engine: sa.Engine, statements: list[str]) -> str:
    out = []
    with engine.connect() as c:
        for s in statements:
            r = c.exec_driver_sql(s)
            if r.returns_rows:
                out.append(" ".join(str(x) for x in r.fetchall()))
    return "; ".join(out) or None


def _verify(engine: sa.Engine, tables: int, table_size: int) -> str:
    state = dataset_state(engine, tables)
    bad = state[~(state["exists"] & (state["rows"] == table_size) & state["k_index"])]
    if len(bad):
        raise PrepareError(
            "data set does not verify: "
            + ", ".join(
                f"{r.table} (exists={r.exists}, rows={r.rows}/{table_size}, k index={r.k_index})"
                for r in bad.itertuples()
            )
        )
    return f"{tables} tables × {table_size} rows, k_N indexes present"


def _sysbench_prepare(ctx) -> str:
    ds = ctx.study.dataset
    ctx.guard(
        f"drop and re-create sbtest1..sbtest{ds.tables} ({ds.table_size:,} rows each) "
        f"in database {ctx.conn.database}"
    )
    _sysbench(ctx, "cleanup")
    return _sysbench(ctx, "prepare")


def _sysbench(ctx, action: str) -> str:
    ds = ctx.study.dataset
    log = paths.raw_log(ctx.study.study, "prepare", f"{ctx.arm.label}-{action}")
    with secret_config_file(ctx.conn, paths.private_dir(ctx.study.study)) as cfg:
        cmd = sysbench_command(
            "oltp_common",
            ctx.conn,
            action=action,
            tables=ds.tables,
            table_size=ds.table_size,
            threads=min(ds.prepare_threads, ds.tables),
            rand_type=ctx.study.rand_type,
            config_file=cfg,
        )
        out = execute(cmd, log)
    if out.missing or out.returncode != 0:
        tail = log.read_text(errors="replace")[-1500:]
        raise PrepareError(f"{display_command(cmd)} exited {out.returncode}:\n{tail}")
    return f"{display_command(cmd)} ({out.wall_s:.1f} s)"


# -- dry run -----------------------------------------------------------------------------------
#: Planning figures, not measurements: rows a second one ``sysbench prepare`` thread inserts,
#: rows a second a warm-up or ANALYZE scan reads, bytes an sbtest row takes on the server
#: (InnoDB, with its ``k_N`` index).
PREPARE_ROWS_PER_S = 20_000
SCAN_ROWS_PER_S = 1_000_000
ROW_BYTES = 240


def estimate(study, arms: list[str] | None = None) -> dict:
    """Dry-run entry of the prepare phase: each distinct target prepared once.

    Its disk is the server's (the tables), not the client's; the time assumes nothing is
    prepared yet (a data set that already matches is skipped).
    """
    labels = arms or [a.label for a in study.arms]
    targets = {study.target_for(study.arm(label)).model_dump_json() for label in labels}
    d = study.dataset
    rows = d.tables * d.table_size
    load_s = rows / (PREPARE_ROWS_PER_S * min(d.prepare_threads, d.tables))
    scans = int(d.analyze) + (2 if d.warmup else 0) + 1  # analyze, two warm-up scans, verify
    secs = len(targets) * (load_s + scans * rows / SCAN_ROWS_PER_S)
    n = len(targets)
    return {
        "phase": "prepare",
        "runs": n,
        "eta_s": secs,
        "disk_bytes": n * rows * ROW_BYTES,
        "note": f"{d.tables} × {d.table_size:,} rows on {n} target{'s' if n != 1 else ''} "
        "(server disk; rough)",
    }

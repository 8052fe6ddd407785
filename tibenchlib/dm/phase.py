"""Phase ``dm``: DM load tuning (report 003) on the one resumable run loop.

On the embedded default the source is tibench's private MariaDB (with a binary log), filled by
``sysbench oltp_insert prepare`` in its own database (``dm.database``, so the sweep's tables are
never touched), and the target a second private MariaDB (:mod:`.servers`). A ``full`` run dumps
the source with mydumper, loads the target with myloader and verifies every table
(:func:`tibenchlib.dm.migrate.migrate_once`); a ``sync`` run measures the replica's apply
throughput with MariaDB's parallel replication standing in for DM's sync unit
(:mod:`tibenchlib.dm.sync`). Every run is one :class:`~tibenchlib.record.RunRecord` in ``runs``
(``workload`` = the unit, ``arm`` = the setting, ``tps`` = rows per second) and one row of
``dm_runs`` with the tools' own measures; raw logs go to ``data/<study>/raw/dm/<run>/``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
import time
from dataclasses import dataclass, field
from types import SimpleNamespace

import pandas as pd
import sqlalchemy as sa

from .. import paths
from .. import store as store_tables
from ..attempts import set_aside
from ..db import ConnInfo, secret_config_file
from ..params import Study
from ..phase import Phase, RunContext
from ..record import RunRecord
from ..runloop import TargetDown
from ..server import EmbeddedServer
from ..store import Store
from ..sysbench.command import sysbench_command
from ..tools import execute
from . import sync as syncmod
from .analysis import result_rows, unit_rows
from .dump import DumpSettings, dump
from .load import LoadSettings, load
from .migrate import migrate_once
from .options import remove_stale
from .plan import (
    DmSpec,
    arm_labels,
    estimate,
    plan,
    planned_runs,
    run_dir,
    settings_for,
)
from .real import run_real_dm
from .servers import TARGET_NAME, source_server, target_server
from .verify import verify

log = logging.getLogger(__name__)

#: Tools a run on the embedded default needs.
TOOLS = ("mydumper", "myloader", "sysbench")


class DmSetupError(RuntimeError):
    """The phase cannot run as configured; the message names what to set."""


@dataclass
class DmContext:
    """The open arm: both servers, the catalog and what this phase call has set up."""

    study: Study
    arm: SimpleNamespace  # .label: the run loop switches arms by it
    server: EmbeddedServer  # the source (the run loop's alive check looks at it)
    target: EmbeddedServer
    store: Store
    state: dict = field(default_factory=dict)

    def source_conn(self) -> ConnInfo:
        return dataclasses.replace(self.server.conninfo(), database=self.study.dm.database)

    def target_conn(self) -> ConnInfo:
        return dataclasses.replace(self.target.conninfo(), database=self.study.dm.database)


def check_target(study: Study) -> None:
    """Refuse, before anything is measured, what the phase cannot run against."""
    if study.target.kind != "embedded" and not study.dm.master_url:
        raise DmSetupError(
            "phase dm: the target is not the embedded MariaDB and dm.master_url is not set: set "
            "dm.master_url (a DM master's OpenAPI, DM ≥ 5.3), dm.source_name and dm.source_url "
            "in the study file, or run the phase on the embedded default"
        )


# -- the source's data set ---------------------------------------------------------------------
def ensure_dataset(ctx: DmContext) -> bool:
    """The source holds ``dm.tables`` × ``dm.table_size`` rows of ``oltp_insert``'s tables, or
    is prepared again (sync runs add rows); True when it was prepared now."""
    p = ctx.study.dm
    si = ctx.source_conn()
    eng = si.engine(database="")
    try:
        with eng.begin() as c:
            c.exec_driver_sql(f"CREATE DATABASE IF NOT EXISTS `{p.database}`")
            counts = []
            for i in range(1, p.tables + 1):
                try:
                    counts.append(
                        c.exec_driver_sql(f"SELECT COUNT(*) FROM `{p.database}`.sbtest{i}").scalar()
                    )
                except sa.exc.DBAPIError:
                    counts.append(None)
            extra = c.exec_driver_sql(
                "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s",
                (p.database,),
            ).scalar()
    finally:
        eng.dispose()
    if counts == [p.table_size] * p.tables and extra == p.tables:
        return False
    log.info("dm: preparing %d × %d rows on the source (%s)", p.tables, p.table_size, p.database)
    raw = paths.raw_dir(ctx.study.study, "dm")
    raw.mkdir(parents=True, exist_ok=True)
    with secret_config_file(si, paths.private_dir(ctx.study.study)) as cfg:
        for action in ("cleanup", "prepare"):
            cmd = sysbench_command(
                "oltp_insert",
                si,
                action=action,
                tables=p.tables,
                table_size=p.table_size,
                threads=p.prepare_threads,
                config_file=cfg,
            )
            out = execute(cmd, raw / f"source-{action}.log", timeout_s=p.timeout_s)
            if action == "prepare" and out.returncode != 0:
                raise DmSetupError(
                    f"sysbench prepare of the DM source failed (exit {out.returncode}): see "
                    f"{out.log_path}"
                )
    return True


def leave_replication(engine: sa.Engine) -> None:
    """The target stops being a replica (a full run loads it from a dump)."""
    if syncmod.replica_status(engine):
        with engine.connect() as c:
            c = c.execution_options(isolation_level="AUTOCOMMIT")
            c.exec_driver_sql("STOP SLAVE")
            c.exec_driver_sql("RESET SLAVE ALL")


def replica_healthy(engine: sa.Engine) -> bool:
    st = syncmod.replica_status(engine)
    return bool(st) and st.get("Slave_IO_Running") == "Yes" and not syncmod.replica_error(st)


def setup_replica(ctx: DmContext) -> None:
    """A fresh copy of the source on the target (dump + load at the GTID position the dump is
    consistent with), then the target replicates from there and catches up."""
    p = ctx.study.dm
    si, ti = ctx.source_conn(), ctx.target_conn()
    d_dir = paths.raw_run_dir(ctx.study.study, "dm", "replica-setup")
    shutil.rmtree(d_dir, ignore_errors=True)
    priv = paths.private_dir(ctx.study.study)
    te, se = ti.engine(database=""), si.engine(database="")
    try:
        leave_replication(te)
        d = dump(
            si,
            d_dir / "dump",
            DumpSettings(threads=2),
            log_path=d_dir / "mydumper.log",
            private_dir=priv,
            database=p.database,
            timeout_s=p.timeout_s,
            count=False,
        )
        if not d.ok:
            raise syncmod.SyncError(f"replica set-up: mydumper failed: see {d.outcome.log_path}")
        ld = load(
            ti,
            d.directory,
            LoadSettings(threads=2),
            log_path=d_dir / "myloader.log",
            private_dir=priv,
            timeout_s=p.timeout_s,
            engine=te,
        )
        if not ld.ok:
            raise syncmod.SyncError(f"replica set-up: myloader failed: see {ld.outcome.log_path}")
        settings = syncmod.SyncSettings(workers=p.sync.workers[0], mode=p.sync.mode)
        syncmod.start_replica(te, si, d.gtid, settings)
        syncmod.wait_for(te, syncmod.gtid_binlog_pos(se), timeout_s=p.timeout_s)
        shutil.rmtree(d.directory, ignore_errors=True)
    finally:
        te.dispose()
        se.dispose()


# -- runs --------------------------------------------------------------------------------------
def _num(x):
    return None if x is None or (isinstance(x, float) and x != x) else x


def run_full(ctx: DmContext, spec: DmSpec) -> RunRecord:
    """One dump + load + verification with the arm's settings; recorded in ``runs`` and
    ``dm_runs`` (and the sampled CPU in ``samples``)."""
    study, p = ctx.study, ctx.study.dm
    s = settings_for(study, spec.knob, spec.value)
    ds = DumpSettings(s["dump.threads"], s["dump.rows"], s["dump.statement_size"])
    ls = LoadSettings(s["load.threads"], s["load.queries_per_transaction"])
    rdir = run_dir(study.study, spec)
    attempt = set_aside(rdir, folder=True)
    te = ctx.target_conn().engine(database="")
    try:
        leave_replication(te)
        ctx.state["replica"] = False
    finally:
        te.dispose()
    started = time.time()
    mr = migrate_once(
        ctx.server,
        ctx.target,
        ds,
        ls,
        run_dir=rdir,
        private_dir=paths.private_dir(study.study),
        database=p.database,
        timeout_s=p.timeout_s,
        keep_dump=p.keep_dump,
    )
    finished = time.time()
    r = mr.record
    ok = r["status"] == "ok"
    rows = r.get("dump_rows") or (
        int(mr.verification["source_rows"].sum()) if mr.verification is not None else None
    )
    dump_s, load_s = r.get("dump_seconds"), r.get("load_seconds")
    total = (dump_s or 0) + (load_s or 0)

    def per_s(sec):
        return rows / sec if rows and sec else None

    row = _dm_row(study, spec, ok) | {
        "verified": bool(r.get("verified")),
        "message": r.get("message"),
        "settings_json": json.dumps(s),
        "rows": rows,
        "dump_s": dump_s,
        "dump_bytes": r.get("dump_bytes"),
        "dump_mb_s": _num(r.get("dump_mb_s")),
        "dump_rows_s": per_s(dump_s),
        "statements": r.get("dump_statements"),
        "rows_per_statement": _num(r.get("dump_rows_per_statement")),
        "load_s": load_s,
        "load_mb_s": _num(r.get("load_mb_s")),
        "load_rows_s": per_s(load_s),
        "latency_ms": r.get("load_latency_ms"),
        "latency_estimator": r.get("load_latency_estimator"),
        "latency_mean_ms": r.get("load_latency_mean_ms"),
        "latency_p99_ms": r.get("load_latency_p99_ms"),
        "dump_cpu_source_pct": r.get("dump_cpu_source_pct"),
        "dump_cpu_tool_pct": r.get("dump_cpu_mydumper_pct"),
        "load_cpu_target_pct": r.get("load_cpu_target_pct"),
        "load_cpu_tool_pct": r.get("load_cpu_myloader_pct"),
        "log_path": str(rdir),
        "at": finished,
    }
    ctx.store.upsert("dm_runs", row)
    _samples(ctx.store, study.study, spec.run_key, mr.samples)
    commands = " && ".join(x for x in (r.get("dump_command"), r.get("load_command")) if x)
    return _record_run(
        ctx,
        spec,
        (ok, started, finished, attempt),
        workload=spec.workload,
        threads=s["load.threads"],
        error=None if ok else f"{r['status']}: {r.get('message')}",
        tps=per_s(total) if ok else None,
        events=rows,
        total_time_s=total or None,
        lat_avg_ms=r.get("load_latency_mean_ms"),
        lat_p99_ms=r.get("load_latency_p99_ms"),
        command=commands or None,
        log_path=str(rdir),
    )


def run_sync(ctx: DmContext, spec: DmSpec) -> RunRecord:
    """Apply throughput of the replica at the arm's worker-count for one sysbench workload
    (SQL thread stopped while sysbench writes, then the catch-up timed), the lag traced while
    sysbench writes with the SQL thread on, and a verification."""
    study, p = ctx.study, ctx.study.dm
    rdir = run_dir(study.study, spec)
    attempt = set_aside(rdir, folder=True)
    rdir.mkdir(parents=True, exist_ok=True)
    si, ti = ctx.source_conn(), ctx.target_conn()
    settings = syncmod.SyncSettings(workers=int(spec.value), mode=p.sync.mode)
    priv = paths.private_dir(study.study)

    def writer(name: str):
        return syncmod.sysbench_writer(
            si,
            spec.workload,
            tables=p.tables,
            table_size=p.table_size,
            threads=p.sync.threads,
            duration_s=p.sync.duration_s,
            log_path=rdir / f"{name}.log",
            private_dir=priv,
        )

    started = time.time()
    error, res, trace, check = None, None, None, None
    se, te = si.engine(database=""), ti.engine(database="")
    try:
        if not ctx.state.get("replica") or not replica_healthy(te):
            ensure_dataset(ctx)
            setup_replica(ctx)
            ctx.state["replica"] = True
        res = syncmod.apply_throughput(
            se, te, writer("sysbench"), workload=spec.workload, settings=settings,
            timeout_s=p.timeout_s,
        )  # fmt: skip
        error = res.error or (
            None if res.load.returncode == 0 else f"sysbench exited {res.load.returncode}"
        )
        if error is None and p.sync.lag:
            trace, out = syncmod.lag_trace(
                se, te, writer("sysbench-lag"), interval_s=0.5, timeout_s=p.timeout_s
            )
            if out.returncode != 0:
                error = f"sysbench (lag trace) exited {out.returncode}: see {out.log_path}"
        if error is None:
            check = verify(se, te, p.database)
            if not check.ok:
                error = check.message
    except (syncmod.SyncError, sa.exc.DBAPIError) as e:
        error = " ".join(str(getattr(e, "orig", None) or e).split())
    finally:
        se.dispose()
        te.dispose()
    if error:
        ctx.state["replica"] = False  # set up again before the next sync run
    finished = time.time()
    ok = error is None
    rec_d = res.record() if res is not None else {}
    row = _dm_row(study, spec, ok) | {
        "verified": bool(check is not None and check.ok),
        "message": error or (check.message if check is not None else None),
        "settings_json": json.dumps({"sync.workers": settings.workers, "mode": settings.mode}),
        "rows": rec_d.get("row_ops"),
        "transactions": rec_d.get("transactions"),
        "row_ops": rec_d.get("row_ops"),
        "catchup_s": _num(rec_d.get("catchup_s")),
        "events_s": _num(rec_d.get("events_s")),
        "rows_s": _num(rec_d.get("rows_s")),
        "max_lag_transactions": (
            float(trace["lag_transactions"].max()) if trace is not None and len(trace) else None
        ),
        "log_path": str(rdir),
        "at": finished,
    }
    ctx.store.upsert("dm_runs", row)
    if trace is not None and len(trace):
        _clear(ctx.store, "dm_lag", study.study, spec.run_key)
        ctx.store.append("dm_lag", trace.assign(study=study.study, run_key=spec.run_key))
    return _record_run(
        ctx,
        spec,
        (ok, started, finished, attempt),
        workload="sync",
        threads=p.sync.threads,
        error=error,
        tps=_num(rec_d.get("rows_s")) if ok else None,
        events=rec_d.get("transactions"),
        total_time_s=_num(rec_d.get("catchup_s")),
        command=f"sysbench {spec.workload} on the source; replica slave_parallel_threads="
        f"{settings.workers} slave_parallel_mode={settings.mode}",
        log_path=str(rdir / "sysbench.log"),
    )


def _record_run(ctx: DmContext, spec: DmSpec, outcome: tuple, **figures) -> RunRecord:
    """``spec``'s run recorded in the catalog's ``runs``: its identity, its ``outcome``
    (``ok``, started and finished times, attempt) and the unit's ``figures``."""
    ok, started, finished, attempt = outcome
    rec = RunRecord(
        study=ctx.study.study,
        run_key=spec.run_key,
        phase="dm",
        arm=spec.arm,
        repeat=spec.repeat,
        seq=spec.seq,
        status="ok" if ok else "failed",
        started_at=started,
        finished_at=finished,
        wall_s=finished - started,
        attempts=attempt,
        **figures,
    )
    ctx.store.record_run(rec)
    return rec


def _dm_row(study: Study, spec: DmSpec, ok: bool) -> dict:
    """The keys and status of ``spec``'s ``dm_runs`` row; each unit adds its figures."""
    return {
        "study": study.study,
        "run_key": spec.run_key,
        "unit": spec.unit,
        "knob": spec.knob,
        "setting": spec.setting,
        "workload": spec.workload,
        "repeat": spec.repeat,
        "status": "ok" if ok else "failed",
    }


def _clear(store: Store, table: str, study: str, run_key: str) -> None:
    t = getattr(store_tables, table)
    with store.engine.begin() as c:
        c.execute(t.delete().where(sa.and_(t.c.study == study, t.c.run_key == run_key)))


def _samples(store: Store, study: str, run_key: str, samples: pd.DataFrame) -> None:
    if samples is None or not len(samples):
        return
    _clear(store, "samples", study, run_key)
    cols = [c.name for c in store_tables.samples.columns if c.name in samples.columns]
    store.append("samples", samples[cols].assign(study=study, run_key=run_key))


# -- the phase ---------------------------------------------------------------------------------
def run_dm_phase(
    context: RunContext, *, arms: list[str] | None = None, redo: bool = False
) -> pd.DataFrame:
    """Run (or resume) the phase in the catalog ``store``; returns the catalog's ``dm_runs``
    of the planned runs."""
    study, store = context.study, context.store
    check_target(study)
    specs = plan(study, arms)
    remove_stale(paths.private_dir(study.study))  # option files a killed run left
    if study.dm.master_url:
        return run_real_dm(context, specs, redo=redo)
    state: dict = {"restarted": False}

    def open_arm(spec: DmSpec, previous):
        if previous is None:
            src = source_server(name="embedded", **study.target.server_options).ensure()
            tgt = target_server().ensure()
        else:
            src, tgt = previous.server, previous.target
        ctx = DmContext(study, SimpleNamespace(label=spec.arm), src, tgt, store, state)
        if spec.unit == "full" and not state.get("dataset"):
            ensure_dataset(ctx)
            state["dataset"] = True
        return ctx

    def alive(ctx: DmContext, spec: DmSpec) -> None:
        for srv in (ctx.server, ctx.target):
            if srv.pid is not None:
                continue
            tail = " | ".join(srv._log_tail(10).splitlines()[-3:])
            if state["restarted"]:
                raise TargetDown(
                    f"the {srv.name} MariaDB died again before run {spec.run_key} (already "
                    f"restarted once); end of {srv.error_log}: {tail}"
                )
            log.warning("the %s MariaDB is not running: restarting it once (%s)", srv.name, tail)
            state["restarted"] = True
            state["replica"] = False
            srv.ensure()

    def run(ctx: DmContext, spec: DmSpec) -> RunRecord:
        return run_full(ctx, spec) if spec.unit == "full" else run_sync(ctx, spec)

    context.run_plan(
        specs,
        open=open_arm,
        run=run,
        before_run=alive,
        redo=redo,
        requires=TOOLS,
        desc=f"dm {study.study}",
        describe=lambda s: f"{s.arm} {s.workload} r={s.repeat}",
    )
    return planned_runs(store, study, specs)


class Dm(Phase):
    name = "dm"
    notebook = "06_dm_load_tuning.ipynb"
    summary = "DM load tuning: mydumper/myloader knobs and the sync unit's worker-count"
    titles = {"en": "DM load tuning", "zh": "DM 迁移调优"}
    own_arms = True
    runs_given_arms = True

    arms = staticmethod(arm_labels)
    estimate = staticmethod(estimate)
    plan_runs = staticmethod(plan)

    def embedded_servers(self, study) -> list[str]:
        """Source and target, unless the study drives a real DM."""
        return [] if study.dm.master_url else ["embedded", TARGET_NAME]

    def run(self, ctx: RunContext, *, arms=None, redo=False) -> pd.DataFrame:
        """Rows per unit × knob × setting × workload (:func:`.analysis.result_rows`)."""
        done = self.measure_counting(ctx, run_dm_phase, arms=arms, redo=redo)
        return result_rows(unit_rows(done))

    def stored(self, study, store, arms) -> bool:
        return bool(len(store.read("dm_runs", study.study)))

    def results(self, study, store, arms) -> pd.DataFrame:
        return result_rows(unit_rows(planned_runs(store, study)))


DM = Dm()

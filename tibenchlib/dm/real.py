"""Phase ``dm`` against a real DM cluster (``dm.master_url``): tasks through DM's OpenAPI
(DM ≥ 5.3) or through ``dmctl`` with a task file (:mod:`.taskfile`; any DM, and the only way to
set mydumper's rows and statement size), chosen by :func:`choose_api`; the same plan, run loop
and records as on the embedded default.

* ``full`` runs: a ``full`` task with the arm's settings (:func:`.openapi.task_request`) into a
  target schema dropped first; the status is polled every ``dm.poll_s`` until the subtasks are
  Finished. The dump and load seconds are split where the polled unit turns from ``Dump`` to
  ``Load`` (so within ``poll_s``); MB/s is the load's ``total_bytes`` over the load seconds.
* ``sync`` runs: an ``all`` task per worker-count arm, synced first; then the task is stopped,
  sysbench writes on the source for ``duration_s``, the task is started again and the catch-up
  timed until DM reports it synced: DM's events and rows applied per second.
* Verification: every table's row count on TiDB equals the source's (``dm.source_url``);
  ``CHECKSUM TABLE`` is not comparable between MySQL and TiDB, so counts are what is checked.

Nothing is sent before the guard: a DM task writes the target, so it needs
``allow_destructive: true`` or ``--yes``. The task request is kept (password masked) in each
run's raw folder with every polled status.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import sqlalchemy as sa

from .. import paths
from ..attempts import set_aside
from ..db import ConnInfo, private_file, secret_config_file
from ..params import Study
from ..phase import RunContext
from ..record import RunRecord
from ..safety import guard_destructive
from ..store import Store
from ..sysbench.command import sysbench_command
from ..tools import execute
from . import openapi, taskfile
from .dmctl import DmStatusError
from .dmctl_client import DmctlClient
from .dump import DumpSettings
from .load import LoadSettings
from .plan import DmSpec, planned_runs, run_dir, settings_for
from .tidb_load import tidb_measures

log = logging.getLogger(__name__)


class DmTaskError(RuntimeError):
    """A DM task paused, failed or did not finish in time (one line)."""


@dataclass
class RealContext:
    study: Study
    arm: SimpleNamespace
    client: openapi.DmClient | DmctlClient
    source: ConnInfo
    target: ConnInfo
    store: Store
    state: dict = field(default_factory=dict)
    server: None = None  # no local server: the run loop checks the target by connecting
    api: str = "openapi"  # or "dmctl" (:func:`choose_api`)

    @property
    def conn(self) -> ConnInfo:  # what the run loop's alive check connects to
        return self.target


def connections(study: Study) -> tuple[ConnInfo, ConnInfo]:
    """The DM source's MySQL and the TiDB target, passwords from their variables."""
    p, t = study.dm, study.target
    src = ConnInfo.from_url(p.source_url, p.source_password)
    tgt = ConnInfo.from_url(t.url, t.password, t.tls.model_dump() if t.tls.ca else None)
    return src, tgt


def row_counts(conn: ConnInfo, database: str) -> dict[str, int]:
    """``{table: rows}`` of every base table of ``database``."""
    eng = conn.engine(database="")
    try:
        with eng.connect() as c:
            names = [
                r[0]
                for r in c.exec_driver_sql(
                    "SELECT TABLE_NAME FROM information_schema.TABLES"
                    " WHERE TABLE_SCHEMA = %s AND TABLE_TYPE = 'BASE TABLE'",
                    (database,),
                )
            ]
            return {
                n: int(c.exec_driver_sql(f"SELECT COUNT(*) FROM `{database}`.`{n}`").scalar())
                for n in sorted(names)
            }
    finally:
        eng.dispose()


def counts_agree(source: dict[str, int], target: dict[str, int]) -> str | None:
    """None when every source table has the same row count on the target, else one line."""
    if not source:
        return "verification failed: no tables on the source"
    bad = [
        f"{t} rows {n} ≠ {target[t]}" if t in target else f"{t} missing on the target"
        for t, n in source.items()
        if target.get(t) != n
    ]
    return "verification failed: " + "; ".join(bad) if bad else None


def unit_times(polls: pd.DataFrame) -> tuple[float | None, float | None]:
    """``(dump_s, load_s)`` from the polled status (``t`` seconds since the task started,
    ``unit``): the dump ends at the first poll in another unit, the load at the last poll."""
    if not len(polls):
        return None, None
    t_end = float(polls["t"].max())
    later = polls[polls["unit"].fillna("").str.lower() != "dump"]
    if not len(later):
        return t_end, None
    t_load = float(later["t"].min())
    return t_load, t_end - t_load


def needs_task_file(study: Study, specs: list[DmSpec]) -> bool:
    """Whether a planned run sets mydumper's rows or a statement size other than DM's default:
    DM's OpenAPI has no field for either, a task file has."""
    base = DumpSettings().statement_size
    for spec in specs:
        s = settings_for(study, spec.knob, spec.value)
        if s["dump.rows"] is not None or s["dump.statement_size"] != base:
            return True
    return False


def choose_api(study: Study, specs: list[DmSpec], *, dmctl: str | None = None) -> tuple[str, str]:
    """``(api, why)``: ``openapi`` or ``dmctl`` for the phase's tasks, and one line saying why.

    ``dm.api`` decides when set. With ``auto``: dmctl for DM older than 5.3 (``dm.version``, no
    OpenAPI); dmctl when the plan sets rows or statement size and dmctl is installed (else the
    OpenAPI, which warns that DM chose them); the OpenAPI when the master answers it, dmctl when
    it answers 404 (the OpenAPI is off: ``openapi = true`` in dm-master's configuration).
    """
    p = study.dm
    dmctl = dmctl if dmctl is not None else shutil.which("dmctl")
    if p.api != "auto":
        return p.api, f"dm.api: {p.api}"
    if taskfile.dm_version(p.version) < (5, 3):
        return "dmctl", f"DM {p.version} has no OpenAPI (DM ≥ 5.3): tasks through dmctl"
    if needs_task_file(study, specs):
        if dmctl:
            return "dmctl", "the plan sets dump rows or statement_size: tasks through dmctl"
        why = "the plan sets dump rows or statement_size but dmctl is not installed"
        return "openapi", why + ": DM's OpenAPI cannot carry them, DM chooses"
    try:
        openapi.DmClient(p.master_url, p.master_http).masters()
    except DmStatusError as e:
        if getattr(e, "http_status", None) == 404:
            why = "the DM master does not serve the OpenAPI (HTTP 404)"
            return "dmctl", why + ": tasks through dmctl"
        raise
    return "openapi", "the DM master serves the OpenAPI"


def poll(
    client: openapi.DmClient | DmctlClient,
    name: str,
    done,
    *,
    poll_s: float,
    timeout_s: float,
    log: Path,
) -> pd.DataFrame:
    """Poll the task's status until ``done(status)``; every status appended to ``log`` (JSON
    lines) and returned with ``t``. A Paused subtask or the timeout is a :class:`DmTaskError`."""
    t0 = time.monotonic()
    rows = []
    while True:
        st = client.status(name)
        t = time.monotonic() - t0
        with open(log, "a") as f:
            for r in st.to_dict("records"):
                f.write(json.dumps({"t": t, **r}, default=str) + "\n")
        rows += [{"t": t, **r} for r in st.to_dict("records")]
        if len(st) and (st["stage"].fillna("").str.lower() == "paused").any():
            err = next((e for e in st["error"] if e), None)
            raise DmTaskError(f"DM task {name} paused{': ' + err if err else ''} (see {log})")
        if done(st):
            return pd.DataFrame(rows)
        if t > timeout_s:
            raise DmTaskError(f"DM task {name} not done after {timeout_s:g} s (see {log})")
        time.sleep(poll_s)


def _recreate(ctx: RealContext, name: str, rdir: Path, *, task_mode: str, **settings) -> list:
    """Remove task ``name`` if it exists and start it again from scratch with ``settings``
    (``dump``, ``load``, ``workers``); the task as sent is kept in ``rdir``, password masked.
    Returns the warnings of settings the chosen API cannot carry."""
    p = ctx.study.dm
    common = dict(
        source_name=p.source_name, target=ctx.target, schema=p.database,
        batch=p.sync.batch, task_mode=task_mode, **settings,
    )  # fmt: skip
    if ctx.api == "dmctl":
        doc = taskfile.task_file(name, version=p.version, **common)
        try:
            ctx.client.stop_task(name)
        except DmStatusError:
            pass  # no such task yet
        (rdir / "task.yaml").write_text(taskfile.task_yaml(taskfile.masked(doc)))
        with private_file(
            taskfile.task_yaml(doc), paths.private_dir(ctx.study.study), "dm-task-", ".yaml"
        ) as f:
            ctx.client.start_task(f, *taskfile.start_args(p.version))
        return []
    body, warns = openapi.task_request(name, **common)
    try:
        ctx.client.delete_task(name)
    except DmStatusError:
        pass  # no such task yet
    (rdir / "task.json").write_text(json.dumps(openapi.masked(body), indent=1))
    ctx.client.create_task(body)
    ctx.client.start_task(name)
    return warns


def _command(ctx: RealContext, name: str, what: str) -> str:
    via = "dmctl start-task" if ctx.api == "dmctl" else "DM OpenAPI task"
    return f"{via} {name} ({what})"


def _drop_target_schema(ctx: RealContext) -> None:
    ctx.target.execute_on_server(f"DROP DATABASE IF EXISTS `{ctx.study.dm.database}`")


def _settings(study: Study, spec: DmSpec, workers: int | None = None):
    s = settings_for(study, spec.knob, spec.value)
    ds = DumpSettings(s["dump.threads"], s["dump.rows"], s["dump.statement_size"])
    ls = LoadSettings(s["load.threads"], s["load.queries_per_transaction"])
    return s, ds, ls, workers or s["sync.workers"] or 16


def run_full(ctx: RealContext, spec: DmSpec, rdir: Path) -> tuple[dict, RunRecord]:
    """One full migration by a DM task; returns the ``dm_runs`` row and the run record."""
    study, p = ctx.study, ctx.study.dm
    s, ds, ls, workers = _settings(study, spec)
    name = f"{p.task_name}-full"
    started = time.time()
    error, polls, warns = None, pd.DataFrame(), []
    try:
        _drop_target_schema(ctx)
        warns = _recreate(ctx, name, rdir, task_mode="full", dump=ds, load=ls, workers=workers)
        polls = poll(
            ctx.client, name, lambda st: openapi.finished(st, "full"),
            poll_s=p.poll_s, timeout_s=p.timeout_s, log=rdir / "status.jsonl",
        )  # fmt: skip
        error = counts_agree(row_counts(ctx.source, p.database), row_counts(ctx.target, p.database))
    except (DmTaskError, DmStatusError, sa.exc.DBAPIError) as e:
        error = " ".join(str(getattr(e, "orig", None) or e).split())
    finished = time.time()
    dump_s, load_s = unit_times(polls)
    total_bytes = polls["total_bytes"].max() if "total_bytes" in polls and len(polls) else None
    rows = sum(row_counts(ctx.source, p.database).values()) if error is None else None
    row = {
        "unit": "full", "verified": error is None, "message": error or "row counts agree",
        "settings_json": json.dumps(s), "rows": rows, "dump_s": dump_s, "load_s": load_s,
        "dump_bytes": total_bytes,
        "load_mb_s": total_bytes / 1e6 / load_s if total_bytes and load_s else None,
        "load_rows_s": rows / load_s if rows and load_s else None,
        "dump_rows_s": rows / dump_s if rows and dump_s else None,
    }  # fmt: skip
    row |= tidb_measures(
        study.prometheus_url, ctx.target, p.database, started, finished, study.prometheus_http
    )
    rec = dict(
        workload="full", threads=ls.threads, error=error, events=rows,
        tps=rows / (finished - started) if rows else None, warnings=warns,
        command=_command(ctx, name, "task-mode full"),
        started_at=started, finished_at=finished,
    )  # fmt: skip
    return row, rec


def run_sync(ctx: RealContext, spec: DmSpec, rdir: Path) -> tuple[dict, RunRecord]:
    """The syncer's catch-up at the arm's worker-count after ``duration_s`` of sysbench."""
    study, p = ctx.study, ctx.study.dm
    s, ds, ls, workers = _settings(study, spec, int(spec.value))
    name = f"{p.task_name}-sync"
    started = time.time()
    error, events, rows_applied, catchup = None, None, None, None
    synced = lambda st: openapi.finished(st, "all")  # noqa: E731
    try:
        if ctx.state.get("sync_arm") != spec.arm:
            _drop_target_schema(ctx)
            _recreate(ctx, name, rdir, task_mode="all", dump=ds, load=ls, workers=workers)
            poll(ctx.client, name, synced, poll_s=p.poll_s, timeout_s=p.timeout_s,
                 log=rdir / "status.jsonl")  # fmt: skip
            ctx.state["sync_arm"] = spec.arm
        before = ctx.client.status(name)
        ctx.client.pause_task(name)
        with secret_config_file(ctx.source, paths.private_dir(study.study)) as cfg:
            out = execute(
                sysbench_command(
                    spec.workload, ctx.source, tables=p.tables, table_size=p.table_size,
                    threads=p.sync.threads, time_s=p.sync.duration_s, report_interval_s=1,
                    config_file=cfg,
                ),
                rdir / "sysbench.log",
                timeout_s=p.sync.duration_s + 120,
            )  # fmt: skip
        if out.returncode != 0:
            raise DmTaskError(f"sysbench exited {out.returncode}: see {out.log_path}")
        t0 = time.monotonic()
        ctx.client.resume_task(name)
        after = poll(ctx.client, name, synced, poll_s=p.poll_s, timeout_s=p.timeout_s,
                     log=rdir / "status.jsonl")  # fmt: skip
        catchup = time.monotonic() - t0
        last = after[after["t"] == after["t"].max()]
        events = float(last["total_events"].sum() - before["total_events"].sum())
        rows_applied = float(last["total_rows"].sum() - before["total_rows"].sum())
        error = counts_agree(row_counts(ctx.source, p.database), row_counts(ctx.target, p.database))
    except (DmTaskError, DmStatusError, sa.exc.DBAPIError) as e:
        error = " ".join(str(getattr(e, "orig", None) or e).split())
        ctx.state.pop("sync_arm", None)
    finished = time.time()
    row = {
        "unit": "sync", "verified": error is None, "message": error or "row counts agree",
        "settings_json": json.dumps({"sync.workers": workers, "batch": p.sync.batch}),
        "rows": rows_applied, "transactions": events, "row_ops": rows_applied,
        "catchup_s": catchup,
        "events_s": events / catchup if events and catchup else None,
        "rows_s": rows_applied / catchup if rows_applied and catchup else None,
    }  # fmt: skip
    row |= tidb_measures(
        ctx.study.prometheus_url,
        ctx.target,
        p.database,
        started,
        finished,
        ctx.study.prometheus_http,
    )
    rec = dict(
        workload="sync", threads=p.sync.threads, error=error, events=events,
        tps=row["rows_s"], warnings=[], total_time_s=catchup,
        command=f"sysbench {spec.workload} on the source; "
        + _command(ctx, name, f"worker-count {workers}"),
        started_at=started, finished_at=finished,
    )  # fmt: skip
    return row, rec


def run_real_dm(context: RunContext, specs: list[DmSpec], *, redo: bool = False) -> pd.DataFrame:
    """The phase on a real DM cluster (see the module's doc)."""
    study, store = context.study, context.store
    p = study.dm
    src, tgt = connections(study)
    guard_destructive(
        f"run DM tasks from source {p.source_name} that drop and re-create database `{p.database}`",
        embedded=False,
        allowed=study.allow_destructive or context.yes,
        target=tgt.masked_url(),
    )
    api, why = choose_api(study, specs)
    log.info("dm: %s", why)
    client = (
        DmctlClient(p.master_url)
        if api == "dmctl"
        else openapi.DmClient(p.master_url, p.master_http)
    )
    state: dict = {}

    def open_arm(spec: DmSpec, previous):
        if previous is None:
            client.check()  # unreachable: one line, before anything is measured
        arm = SimpleNamespace(label=spec.arm)
        return RealContext(study, arm, client, src, tgt, store, state, api=api)

    def run(ctx: RealContext, spec: DmSpec) -> RunRecord:
        rdir = run_dir(study.study, spec)
        attempt = set_aside(rdir, folder=True)
        rdir.mkdir(parents=True, exist_ok=True)
        fn = run_full if spec.unit == "full" else run_sync
        row, rec = fn(ctx, spec, rdir)
        ok = rec["error"] is None
        store.upsert(
            "dm_runs",
            {
                "study": study.study, "run_key": spec.run_key, "knob": spec.knob,
                "setting": spec.setting, "workload": spec.workload, "repeat": spec.repeat,
                "status": "ok" if ok else "failed", "log_path": str(rdir),
                "at": rec["finished_at"], **row,
            },
        )  # fmt: skip
        r = RunRecord(
            study=study.study, run_key=spec.run_key, phase="dm", arm=spec.arm, seq=spec.seq,
            repeat=spec.repeat, status="ok" if ok else "failed", log_path=str(rdir),
            wall_s=rec["finished_at"] - rec["started_at"], attempts=attempt, **rec,
        )  # fmt: skip
        store.record_run(r)
        return r

    context.run_plan(
        specs, open=open_arm, run=run, redo=redo,
        requires=("sysbench",) if any(s.unit == "sync" for s in specs) else (),
        desc=f"dm {study.study} (DM {p.master_url})",
    )  # fmt: skip
    return planned_runs(store, study, specs)

"""The ``ycsb`` phase: YCSB workloads × thread ladder × repeats on every arm, resumable.

On the loop every measuring phase uses (:func:`tibenchlib.runloop.run_plan`): runs interleaved
over arms like the sweep (:func:`tibenchlib.runorder.run_order`), each one a
:class:`~tibenchlib.record.RunRecord` in ``runs`` (phase ``ycsb``, ``workload`` the workload's
name, ``tps`` = operations per second, the latency columns over *all* operations together) and
its per-operation figures in ``ycsb_ops``.

When an arm opens, each data set (table) is loaded once and its row count verified, recorded in
``prepare_steps`` like sysbench's prepare: a table already holding the data set is verified,
not loaded again. The upstream Java YCSB with tibench's binding drives the embedded server
(built by Maven on first use); go-ycsb drives a cluster when it is on PATH.

Latency: the Java YCSB writes each operation's HdrHistogram log (``hdrhistogram.fileoutput``);
the run's figures are read from those histograms, merged over the clients bucket by bucket
(:mod:`.hdr`), so a run of several clients reports the percentiles of all their calls. go-ycsb
writes no histogram: one go-ycsb client's figures are its own (its ``TOTAL`` line, over every
successful operation, gives the run's overall p95/p99), and the run's overall p95/p99 is left
empty when several go-ycsb clients ran (no percentile is averaged).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import sqlalchemy as sa

from .. import paths
from ..attempts import set_aside
from ..clients import endpoint_conns
from ..hosts.runs import record_hosts
from ..kube.sweep_job import check_job, pod_labels
from ..kube.tool_jobs import run_ycsb_job
from ..multiclient import align_series, sum_series
from ..params import Study
from ..parse.ycsb import parse_ycsb_file
from ..phase import Phase, RunContext, Tool
from ..record import RunRecord, outcome_status, result_rows
from ..runloop import stopped_answering
from ..runorder import run_order
from ..sysbench.prepare import record_step
from ..target import open_arm
from ..tools import which
from . import hdr
from .build import build_binding, is_built
from .runner import (
    Workload,
    YcsbError,
    choose_tool,
    host_paths,
    load,
    open_ycsb_hosts,
    row_count,
    run_on_hosts,
    run_together,
)

log = logging.getLogger(__name__)

PHASE = "ycsb"
#: Seconds a run costs beyond its measured time (JVM start, connect, summary, parsing the
#: histograms, recording; measured on the demo on 2 busy cores).
RUN_OVERHEAD_S = 3.5
#: Seconds a Maven build of the binding takes the first time (jars fetched), and loading speed.
BUILD_S = 60.0
LOAD_ROWS_PER_S = 2000.0
#: go-ycsb's start, connections and its end after SIGINT: 0.08 s for 100 operations here
GO_RUN_OVERHEAD_S = 0.5
#: a first build of go-ycsb with every module to fetch (4 minutes on a busy 2-core machine)
GO_BUILD_S = 300.0
#: Share of failed calls above which a run is degenerate (below: a warning).
ERROR_SHARE_LIMIT = 0.01
#: Growth of the table by earlier runs' inserts past which a run carries a warning.
GROWTH_WARN = 1.10
#: Operations reported in ``runs`` and in ``ycsb_ops`` as all of them together.
ALL = hdr.ALL


@dataclass(frozen=True)
class YcsbSpec:
    """One planned YCSB run: ``threads`` per client."""

    arm: str
    workload: str
    threads: int
    repeat: int
    seq: int = 0

    @property
    def run_key(self) -> str:
        return f"{PHASE}/{self.arm}/{self.workload}/t{self.threads}/r{self.repeat}"


def arm_labels(study: Study) -> list[str]:
    """The arms the phase runs: ``ycsb.arms``, or every arm of the study."""
    return list(study.ycsb.arms) or [a.label for a in study.arms]


def plan(study: Study, arms: list[str] | None = None) -> list[YcsbSpec]:
    """The phase's runs in execution order: the sweep's order (``study.order``: interleaved
    rounds with the arms' order balanced, sequential or random) over the YCSB workloads."""
    y = study.ycsb
    order = run_order(
        study,
        [a for a in arm_labels(study) if not arms or a in arms],
        list(y.workloads) or list(study.workloads),
        lambda w: list(y.threads) or study.threads_for(w),
        y.repeats or study.max_rounds,
    )
    return [YcsbSpec(a, w, t, r, i) for i, (a, w, t, r) in enumerate(order)]


def _tool(study: Study, conn) -> str:
    t = study.ycsb.tool
    if study.ycsb.client_hosts:
        return "ycsb"  # client hosts run the Java binding (params refuses go-ycsb with them)
    return choose_tool(conn) if t == "auto" else t


def _expected_s(w: Workload) -> float:
    # an operation-count run on 2 cores: ~1000 ops/s is the pessimistic rate of the small demo
    if w.maxexecutiontime_s is not None:
        return float(w.maxexecutiontime_s)
    return max(1.0, (w.operationcount or 0) / 1000.0)


def estimate(study: Study, arms: list[str] | None = None) -> dict:
    """Dry-run entry: runs, seconds (measured time + JVM start per run, one load per data set
    and arm opening at most, the first Maven build), disk (logs and histograms)."""
    specs = plan(study, arms)
    y = study.ycsb
    go = y.tool == "go-ycsb" and not y.client_hosts  # auto: go-ycsb only on a cluster
    start = GO_RUN_OVERHEAD_S if go else RUN_OVERHEAD_S
    secs = sum(_expected_s(y.workloads[s.workload]) + start for s in specs)
    tables = {w.table: w.recordcount for w in y.workloads.values()}
    secs += sum(n / LOAD_ROWS_PER_S + start for n in tables.values())
    built = (which("go-ycsb") is not None) if go else is_built()
    secs += 0 if built else (GO_BUILD_S if go else BUILD_S)
    secs += max(len(specs) - 1, 0) * study.cooldown_s
    secs += len(specs) * (y.clients_job.start_lead_s if y.clients_job else 0)  # the pods' barrier
    return {
        "runs": len(specs),
        "eta_s": secs,
        # logs and histograms, and each arm's tables (YCSB's rows: a key and fieldcount fields)
        "disk_bytes": len(specs) * y.n_clients * 60_000
        + len({s.arm for s in specs})
        * sum(
            w.recordcount * (w.fieldcount * w.fieldlength + 30) * 2
            for w in {w.table: w for w in y.workloads.values()}.values()
        ),
        "note": f"{len(specs)} YCSB runs, {len(tables)} data set(s) loaded once"
        + (
            ""
            if built
            else "; go-ycsb is built first (go)"
            if go
            else "; the YCSB binding is built first (Maven)"
        ),
        "specs": specs,
    }


def _writes(w: Workload) -> bool:
    return (w.updateproportion + w.insertproportion + w.readmodifywriteproportion) > 0


# -- opening an arm: build, load once, verify -----------------------------------------------------
def _columns(conn, table: str) -> int | None:
    eng = conn.engine()
    try:
        insp = sa.inspect(eng)
        return len(insp.get_columns(table)) if insp.has_table(table) else None
    finally:
        eng.dispose()


def ensure_loaded(ctx, *, force: bool = False) -> list[dict]:
    """Load each of the phase's data sets once and verify its rows; returns the steps.

    A table that holds at least ``recordcount`` rows in ``fieldcount`` + 1 columns is the data
    set already loaded (runs with inserts grow it): verified, not loaded again. Otherwise it is
    dropped and loaded — on a real cluster only with ``allow_destructive`` or ``--yes``.
    """
    study = ctx.study
    y = study.ycsb
    steps = []
    sets: dict[str, Workload] = {}
    for w in y.workloads.values():
        sets.setdefault(w.table, w)
    writing = [n for n, w in y.workloads.items() if _writes(w)]
    if writing:
        ctx.guard(f"run YCSB workloads that write ({', '.join(writing)}: updates or inserts)")
    tool = _tool(study, ctx.conn)
    for table, w in sets.items():
        t0 = time.time()
        rows = row_count(ctx.conn, table)
        cols = _columns(ctx.conn, table)
        if not force and rows is not None and rows >= w.recordcount and cols == w.fieldcount + 1:
            detail = f"{rows} rows (recordcount {w.recordcount}): already loaded, verified"
            steps.append(record_step(ctx, "ycsb_verify", table, "ok", time.time() - t0, detail))
            continue
        ctx.guard(f"drop and load YCSB table {table} ({w.recordcount:,} rows)")
        path = paths.raw_log(study.study, PHASE, f"load__{ctx.arm.label}__{table}")
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            r = load(
                ctx.conn, w, path, threads=y.load_threads, tool=tool,
                secret_dir=paths.private_dir(study.study), timeout_s=y.run_timeout_s,
                jvm_options=y.jvm_options,
            )  # fmt: skip
        except YcsbError as e:
            record_step(ctx, "ycsb_load", table, "failed", time.time() - t0, str(e)[:2000])
            raise
        detail = (
            f"{w.recordcount} rows loaded by {r.tool} ({y.load_threads} threads), "
            f"verified: {row_count(ctx.conn, table)} rows"
        )
        steps.append(record_step(ctx, "ycsb_load", table, "ok", time.time() - t0, detail))
    return steps


# -- one run -------------------------------------------------------------------------------------
def _client_conns(study: Study, conn) -> list:
    y = study.ycsb
    if y.clients_job:  # one per pod (their address is the Job's)
        return [conn] * y.clients_job.pods
    return endpoint_conns(conn, y.endpoints or y.n_clients)


def _paths(study: str, spec: YcsbSpec, clients: int) -> tuple[list[Path], list[Path]]:
    """Each client's log (named by :func:`paths.client_run_logs`, the rule every tool follows)
    and its HdrHistogram folder beside it (the log's name with ``.hdr``)."""
    logs = paths.client_run_logs(study, PHASE, spec.run_key, clients)
    logs[0].parent.mkdir(parents=True, exist_ok=True)
    return logs, [p.with_suffix(".hdr") for p in logs]


def _set_aside(logs: list[Path], hdr_dirs: list[Path]) -> int:
    """Move an earlier attempt's logs and histogram folders aside (never overwritten)."""
    attempt = 1
    for i, p in enumerate(logs):
        n = set_aside(p)
        attempt = max(attempt, n)
        d = hdr_dirs[i]
        if d.exists():
            d.rename(d.with_name(f"{d.name}.attempt{n - 1 if n > 1 else 1}"))
        d.mkdir(parents=True, exist_ok=True)
    return attempt


def _rows_now(ctx, w: Workload) -> Workload:
    """A workload with inserts runs on the table as it is: YCSB inserts keys from
    ``recordcount`` on, so the count now keeps them past the keys earlier runs inserted."""
    if w.insertproportion <= 0:
        return w
    n = row_count(ctx.conn, w.table)
    return w.model_copy(update={"recordcount": n}) if n and n > w.recordcount else w


def combine(
    summaries: list[dict], histograms: list[dict] | None, *, tool: str
) -> tuple[dict, dict, str]:
    """Several clients' parsed summaries (and HdrHistograms) as one run's figures.

    Returns ``(operations, latency, source)``: ``operations`` operation → ``count`` and
    ``errors`` summed over the clients; ``latency`` operation (and :data:`ALL`) → ``avg, min,
    max, p95, p99`` in ms; ``source`` says where the latency comes from.
    """
    ops: dict[str, dict] = {}
    for s in summaries:
        for op, n in (s.get("operations") or {}).items():
            ops.setdefault(op, {"count": 0, "errors": 0})["count"] += int(n or 0)
        for op, n in (s.get("errors") or {}).items():
            ops.setdefault(op, {"count": 0, "errors": 0})["errors"] += int(n or 0)
    if histograms is not None and all(histograms):
        lat = hdr.merged_latency(histograms)
        lat = {op: {k: v for k, v in f.items() if k != "count"} for op, f in lat.items()}
        n = len(histograms)
        source = "HdrHistogram" + (f", {n} clients merged bucket by bucket" if n > 1 else "")
        return ops, lat, source
    lat = {}
    if len(summaries) == 1:
        lat = dict(summaries[0].get("latency_ms") or {})
    calls = {op: v["count"] for op, v in ops.items() if hdr.is_call(op) and v["count"]}
    total = sum(calls.values())
    all_ = {"avg": None, "min": None, "max": None, "p95": None, "p99": None}
    if total and len(summaries) == 1:
        figs = [(lat.get(op) or {}, n) for op, n in calls.items()]
        avgs = [(f.get("avg"), n) for f, n in figs]
        if all(a is not None for a, _ in avgs):
            all_["avg"] = sum(a * n for a, n in avgs) / total
        mins = [f.get("min") for f, _ in figs if f.get("min") is not None]
        maxs = [f.get("max") for f, _ in figs if f.get("max") is not None]
        all_["min"] = min(mins) if mins else None
        all_["max"] = max(maxs) if maxs else None
        if len(calls) == 1:  # one operation: its percentiles are the run's
            f = figs[0][0]
            all_["p95"], all_["p99"] = f.get("p95"), f.get("p99")
        overall = summaries[0].get("overall_latency_ms") or {}
        if overall.get("p95") is not None:  # go-ycsb's TOTAL: its histogram of every operation
            all_ = {k: overall.get(k) for k in all_}
    lat[ALL] = all_
    return ops, lat, f"{tool} summary (no histogram to merge)"


def cancelled_calls(summaries: list[dict]) -> int:
    """Calls go-ycsb measured as errors because tibench's SIGINT ended the run while they were
    in flight (its ``context canceled`` lines): the deadline's, not the server's."""
    return sum(int(s.get("cancelled") or 0) for s in summaries)


def _status(ops: dict, summaries: list[dict], outcomes, expected_s: float | None):
    """The run's status: each client's by the one status rule
    (:func:`~tibenchlib.record.outcome_status`), the first failed one naming the run's failure;
    then the operations' errors and count."""
    warnings: list[str] = []
    for i, (s, o) in enumerate(zip(summaries, outcomes, strict=True)):
        checked = ("ok", None) if s.get("status") == "ok" else ("failed", s.get("error"))
        status, error = outcome_status(checked, o, "YCSB")
        if status != "ok":
            return "failed", f"client {i}: {error}" if len(summaries) > 1 else error, warnings
    calls = sum(v["count"] for op, v in ops.items() if hdr.is_call(op))
    errors = max(0, sum(v["errors"] for v in ops.values()) - cancelled_calls(summaries))
    if calls <= 0:
        return "degenerate", "zero throughput: no operation completed", warnings
    if errors:
        share = errors / (calls + errors)
        msg = f"{errors} of {calls + errors} operations did not return OK ({share:.1%})"
        if share > ERROR_SHARE_LIMIT:
            return "degenerate", msg, warnings
        warnings.append(msg)
    return "ok", None, warnings


def _intervals(results, outcomes, threads: int) -> pd.DataFrame:
    """The run's per-second throughput (status lines' TOTAL), summed over the clients on a
    common wall-clock grid."""
    series = []
    for r in results:
        iv = r.intervals
        iv = iv[(iv["operation"] == "TOTAL") & (iv["source"] != "timeseries")]
        series.append(pd.DataFrame({"t": iv["t_s"].to_numpy(), "tps": iv["ops_s"].to_numpy()}))
    if not any(len(s) for s in series):
        return pd.DataFrame(columns=["t", "threads", "tps"])
    if len(series) == 1:
        out = series[0]
    else:
        al = align_series(series, [o.started_at for o in outcomes], column="tps")
        summed = sum_series(al)
        summed = summed[summed["complete"]]
        out = pd.DataFrame(
            {"t": summed["wall_s"] - min(o.started_at for o in outcomes), "tps": summed["total"]}
        )
    return out.assign(threads=threads)


def _launch(ctx, spec: YcsbSpec, w, conns, tool: str, logs, hdr_dirs, timeout: float):
    """Run the run's clients together, where the study puts them: a Kubernetes Job's pods,
    client hosts over SSH, or processes here. Returns ``(runs, per_host, warnings)``
    (``per_host``: the hosts' rows, None unless on client hosts; ``warnings``: a Job's)."""
    y = ctx.study.ycsb
    if y.clients_job:
        runs, warnings = run_ycsb_job(
            ctx, spec.arm, spec.run_key, w, logs, threads=spec.threads, timeout_s=timeout
        )
        return runs, None, warnings
    if y.client_hosts:
        name = spec.run_key.replace("/", "__")
        runs, per_host = run_on_hosts(
            ctx, w, logs, hdr_dirs, threads=spec.threads, name=name, timeout_s=timeout
        )
        return runs, per_host, []
    extras = [
        ["-p", "hdrhistogram.fileoutput=true", "-p", f"hdrhistogram.output.path={d}/"]
        if tool == "ycsb"
        else []
        for d in hdr_dirs
    ]
    runs = run_together(
        conns, w, logs, threads=spec.threads, tool=tool,
        secret_dir=paths.private_dir(ctx.study.study), timeout_s=timeout, extras=extras,
        jvm_options=ctx.study.ycsb.jvm_options,
    )  # fmt: skip
    return runs, None, []


def run_one(ctx, spec: YcsbSpec) -> RunRecord:
    """Run one YCSB run on an open arm (all its clients together) and record it."""
    study = ctx.study
    y = study.ycsb
    w = _rows_now(ctx, y.workloads[spec.workload])
    conns = _client_conns(study, ctx.conn)
    tool = "go-ycsb" if y.clients_job else _tool(study, ctx.conn)  # the Job's pods: go-ycsb
    hosts = y.client_hosts
    logs, hdr_dirs = (
        host_paths(study, spec.run_key) if hosts else _paths(study.study, spec, len(conns))
    )
    if y.clients_job:  # raw/ycsb/<run>/pod<i>.log
        logs = paths.host_run_logs(study.study, PHASE, spec.run_key, pod_labels(len(conns)))
        hdr_dirs = [p.with_suffix(".hdr") for p in logs]
    attempt = _set_aside(logs, hdr_dirs)
    expected = _expected_s(w)
    timeout = y.run_timeout_s or expected * 2 + 120
    runs, per_host, job_warnings = _launch(ctx, spec, w, conns, tool, logs, hdr_dirs, timeout)
    outcomes = [r.outcome for r in runs]
    results = [parse_ycsb_file(p) for p in logs]
    summaries = [r.summary for r in results]
    histograms = None
    warnings: list[str] = list(job_warnings)  # a Job's: a pod late for the start, …
    if tool == "ycsb":
        try:
            histograms = [hdr.read_client(d) for d in hdr_dirs]
        except hdr.HdrError as e:
            warnings.append(f"HdrHistogram logs unreadable, latency from the summary: {e}")
    ops, lat, source = combine(summaries, histograms, tool=tool)
    status, error, more = _status(ops, summaries, outcomes, expected)
    gone = stopped_answering(ctx)  # killed during the run: say so, not "N errors"
    if gone:
        status, error = "failed", gone
    host_error = next((r.error for r in runs if r.error), None)
    if host_error:  # a client host failed or was lost: the line naming it
        status, error = "failed", host_error
    if hosts:
        tps_each = [s.get("throughput_ops_s") for s in summaries]
        record_hosts(ctx.store, study.study, spec.run_key, per_host, tps_each, samples=True)
    warnings += more
    loaded = y.workloads[spec.workload].recordcount
    if w.recordcount > GROWTH_WARN * loaded:
        warnings.append(
            f"table grown by earlier runs' inserts: {w.recordcount} rows at the start "
            f"({w.recordcount / loaded - 1:+.0%} over the {loaded} loaded)"
        )
    ok = status != "failed"
    tps = sum(s.get("throughput_ops_s") or 0 for s in summaries) if ok else None
    calls = sum(v["count"] for op, v in ops.items() if hdr.is_call(op))
    cancelled = cancelled_calls(summaries)
    errors = max(0, sum(v["errors"] for v in ops.values()) - cancelled)
    a = lat.get(ALL) or {}
    iv = _intervals(results, outcomes, spec.threads * len(conns))
    runtimes = [s.get("runtime_s") for s in summaries if s.get("runtime_s") is not None]
    rec = RunRecord(
        study=study.study,
        run_key=spec.run_key,
        phase=PHASE,
        arm=spec.arm,
        workload=spec.workload,
        threads=spec.threads * len(conns),
        repeat=spec.repeat,
        seq=spec.seq,
        status=status,
        error=error,
        tps=tps,
        events=float(calls) if ok else None,
        total_time_s=max(runtimes) if runtimes else None,
        lat_min_ms=a.get("min"),
        lat_avg_ms=a.get("avg"),
        lat_max_ms=a.get("max"),
        percentile=95.0,
        lat_pct_ms=a.get("p95"),
        lat_p95_ms=a.get("p95"),
        lat_p99_ms=a.get("p99"),
        errors=float(errors),
        n_intervals=len(iv),
        warnings=warnings,
        command=" & ".join(r.command for r in runs),
        log_path=str(logs[0]),
        started_at=min(o.started_at for o in outcomes),
        finished_at=max(o.finished_at for o in outcomes),
        wall_s=max(o.finished_at for o in outcomes) - min(o.started_at for o in outcomes),
        summary_json=json.dumps(
            {
                "tool": tool,
                "clients": len(conns),
                "threads_per_client": spec.threads,
                "recordcount": w.recordcount,
                "latency_source": source,
                "cancelled_at_deadline": cancelled,
                "operations": ops,
                "latency_ms": lat,
                "client_logs": [str(p) for p in logs],
            },
            default=str,
        ),
        attempts=attempt,
    )
    ctx.store.record_run(rec, iv)
    rows = op_rows(rec, ops, lat, source)
    ctx.store.replace_run_rows(PHASE + "_ops", study.study, spec.run_key, rows)
    return rec


def op_rows(rec: RunRecord, ops: dict, lat: dict, source: str | None = None) -> list[dict]:
    """The run's ``ycsb_ops`` rows: one per operation, and :data:`ALL`."""
    names = [*ops, *(op for op in lat if op not in ops)]
    rows = []
    for op in names:
        f = lat.get(op) or {}
        c = ops.get(op, {})
        if op == ALL:
            c = {
                "count": sum(v["count"] for o, v in ops.items() if hdr.is_call(o)),
                "errors": sum(v["errors"] for v in ops.values()),
            }
        rows.append(
            {
                "operation": op,
                "arm": rec.arm,
                "workload": rec.workload,
                "threads": rec.threads,
                "repeat": rec.repeat,
                "count": c.get("count"),
                "errors": c.get("errors"),
                **{f"{k}_ms": f.get(k) for k in ("avg", "min", "max", "p95", "p99")},
                "source": source,
            }
        )
    return rows


def result_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The phase's result rows (``results/ycsb.json``, ``tibench run --phase ycsb --json``):
    the runs' common columns, then ``clients``, ``latency_source`` and ``operations``
    (operation → ``count``, ``errors``, ``avg_ms``, ``p95_ms``, ``p99_ms``; ``ALL`` included)."""
    df = result_rows(runs)
    if not len(runs):
        return df.assign(clients=None, latency_source=None, operations=None)
    extra = [json.loads(s) if isinstance(s, str) else {} for s in runs["summary_json"]]
    df["clients"] = [e.get("clients") for e in extra]
    df["latency_source"] = [e.get("latency_source") for e in extra]
    df["operations"] = [_result_ops(e) for e in extra]
    return df


def _result_ops(e: dict) -> dict:
    ops = dict(e.get("operations") or {})
    ops[ALL] = {
        "count": sum(v["count"] for op, v in ops.items() if hdr.is_call(op)),
        "errors": sum(v["errors"] for v in ops.values()),
    }
    return {
        op: {
            **ops.get(op, {}),
            **{f"{k}_ms": v for k, v in f.items() if k in ("avg", "p95", "p99")},
        }
        for op, f in (e.get("latency_ms") or {}).items()
    }


def describe(spec: YcsbSpec) -> str:
    return f"{spec.arm} {spec.workload} t={spec.threads} r={spec.repeat}"


def run_ycsb_phase(
    context: RunContext, *, arms: list[str] | None = None, redo: bool = False
) -> pd.DataFrame:
    """Run (or resume) the phase in the catalog ``store``; returns the catalog's runs of the
    planned cells."""
    study, store, yes = context.study, context.store, context.yes
    specs = plan(study, arms)

    def open_ready(spec: YcsbSpec, _previous):
        ctx = open_arm(study, spec.arm, yes=yes, store=store)
        if study.ycsb.client_hosts:  # their pre-flight, before anything is loaded or run
            open_ycsb_hosts(study, ctx.conn, store=store, arm=ctx.arm.label)
        if study.ycsb.clients_job:  # kubectl is there, before anything is loaded or run
            check_job(ctx, study.ycsb.clients_job)
        if _tool(study, ctx.conn) == "ycsb":
            t0 = time.time()
            build_binding()
            if time.time() - t0 > 1:
                record_step(
                    ctx, "ycsb_build", "", "ok", time.time() - t0, "YCSB binding built (Maven)"
                )
        ensure_loaded(ctx)
        return ctx

    context.run_plan(
        specs,
        open=open_ready,
        run=run_one,
        redo=redo,
        cooldown_s=study.cooldown_s,
        desc=f"ycsb {study.study}",
        describe=describe,
    )
    runs = store.runs(study.study, phase=PHASE)
    keys = {s.run_key for s in specs}
    return runs[runs["run_key"].isin(keys)].reset_index(drop=True) if len(runs) else runs


class Ycsb(Phase):
    name = "ycsb"
    notebook = "07_ycsb.ipynb"
    summary = "YCSB workloads × thread ladder × repeats (upstream YCSB or go-ycsb)"
    titles = {"en": "YCSB", "zh": "YCSB"}
    own_arms = True
    tool = Tool("YCSB", {"en": ("operations/s", "every operation"), "zh": ("操作/秒", "全部操作")})

    arms = staticmethod(arm_labels)
    estimate = staticmethod(estimate)
    plan_runs = staticmethod(plan)

    def run(self, ctx: RunContext, *, arms=None, redo=False) -> pd.DataFrame:
        ctx.runs = ctx.measure(run_ycsb_phase, arms=arms, redo=redo)
        return result_table(ctx.runs)

    def results(self, study, store, arms) -> pd.DataFrame:
        runs = store.runs(study.study, phase=self.name)
        if len(runs):
            keys = {s.run_key for s in plan(study, arms)}
            runs = runs[runs["run_key"].isin(keys)].reset_index(drop=True)
        return result_table(runs)


YCSB = Ycsb()

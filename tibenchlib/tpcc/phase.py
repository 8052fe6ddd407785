"""Phase ``tpcc``: TPC-C throughput (tpmC) over a thread ladder, with and without keying and
think times, on the one resumable run loop.

On the embedded default (and on any target with ``tpcc.tool: sysbench``) the TPC-C-like sysbench
Lua driver runs (:mod:`tibenchlib.tpcc.runner`: TPC-C-like, not audited); on a url target
go-tpc / ``tiup bench tpcc`` runs when installed, and the phase stops with one line when neither
is. The data set is loaded once per warehouse count (database ``<tpcc.database>_w<N>``), its
row counts and the specification's consistency conditions checked, both recorded in
``prepare_steps`` like sysbench's prepare; after every run the conditions are checked again and
a violation fails the run.

Every run is one :class:`~tibenchlib.record.RunRecord` in ``runs`` (phase ``tpcc``, workload
``tpcc`` or ``tpcc_wait``): ``tps`` is every committed transaction per second (tpmTotal / 60),
the latency columns are New-Order's (BEGIN to COMMIT, keying and think times excluded). tpmC,
tpmTotal, efficiency, the mix and every transaction type's latency are in ``tpcc_runs``.

Several clients in one run (``tpcc.clients``): the clients start together
(:func:`tibenchlib.clients.execute_together`), their per-second series are aligned on
wall-clock time and summed, their histograms merged bucket by bucket
(:mod:`tibenchlib.multiclient`), and tpmC is the orders table's growth over the run, so all
clients' New-Orders together. A client that fails fails the run; every client's log stays in
``raw/tpcc/``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import sqlalchemy as sa

from .. import paths
from ..attempts import set_aside
from ..clients import endpoint_conns, execute_together, split_threads
from ..db import ConnInfo, secret_config_file
from ..hosts.runs import record_hosts
from ..kube.sweep_job import check_job, pod_labels
from ..kube.tool_jobs import run_gotpc_job
from ..multiclient import merge_histograms, merged_percentiles, summed_intervals
from ..params import Study
from ..parse.gotpc import parse_tpcc_output, tpcc_series
from ..parse.sysbench import parse_sysbench_file
from ..phase import Phase, RunContext, Tool
from ..record import RunRecord, outcome_status
from ..runorder import arm_order
from ..stats import fieller_ratio, summarize_cells
from ..store import Store
from ..sysbench.command import client_seeds, seeded
from ..sysbench.prepare import record_step
from ..sysbench.record import check_run
from ..target import open_arm
from ..tools import ToolMissing, display_command, execute, require
from .consistency import check_consistency
from .runner import (
    TRANSACTIONS,
    Scale,
    cleanup_sysbench_tpcc,
    gotpc_command,
    gotpc_tool,
    host_logs,
    open_tpcc_hosts,
    orders_count,
    orders_count_after,
    parse_driver_counts,
    parse_driver_latency,
    prepare_sysbench_tpcc,
    run_lua_on_hosts,
    sysbench_tpcc_command,
    transaction_latency,
)

log = logging.getLogger(__name__)

#: tpmC per warehouse at the specification's maximum (go-tpc's efficiency denominator).
TPMC_PER_WAREHOUSE = 12.86
#: Seconds a run costs beyond its duration (connections, orders counted, consistency checks).
RUN_OVERHEAD_S = 2.0
#: The 9 tables of the TPC-C schema.
TABLES = ("warehouse", "district", "customer", "history", "new_order", "orders", "order_line",
          "item", "stock")  # fmt: skip
#: Columns of the phase's result rows (``results/tpcc.json``): one row per cell.
SUMMARY_COLUMNS = [
    "arm", "tool", "warehouses", "workload", "threads", "clients", "n", "n_failed", "tpmc",
    "tpmc_ci_low", "tpmc_ci_high", "tpm_total", "tpm_total_ci_low", "tpm_total_ci_high",
    "efficiency_pct", "new_order_p95_ms", "new_order_p95_ms_ci_low", "new_order_p95_ms_ci_high",
    "new_order_p99_ms", "method", "warnings",
]  # fmt: skip


class TpccToolMissing(RuntimeError):
    """No TPC-C driver for the target: go-tpc/tiup missing on a url target."""


@dataclass(frozen=True)
class TpccSpec:
    """One planned TPC-C run."""

    arm: str
    warehouses: int
    wait: bool
    threads: int
    repeat: int
    seq: int = 0
    phase: str = "tpcc"

    @property
    def workload(self) -> str:
        return "tpcc_wait" if self.wait else "tpcc"

    @property
    def run_key(self) -> str:
        return f"tpcc/{self.arm}/w{self.warehouses}/{self.workload}/t{self.threads}/r{self.repeat}"


def arm_labels(study: Study) -> list[str]:
    """The arms the phase runs: ``tpcc.arms``, or every arm of the study."""
    return list(study.tpcc.arms) or [a.label for a in study.arms]


def plan(study: Study, arms: list[str] | None = None) -> list[TpccSpec]:
    """The runs in execution order. Per warehouse count (one data set each), rounds of
    repeats; in a round, every arm runs every wait mode and thread count once, so drift spreads
    over the whole ladder and every arm. The arms' order within a round follows the sweep
    (``study.order``): ``interleaved`` and ``random`` rotate and reverse it from round to round
    (:func:`tibenchlib.runorder.arm_order`), so a round is a block for a paired comparison;
    ``sequential`` runs each arm's rounds back to back."""
    p = study.tpcc
    labels = [a for a in arm_labels(study) if not arms or a in arms]
    out: list[TpccSpec] = []
    for w in p.warehouses:
        if study.order == "sequential":
            blocks = [(a, r) for a in labels for r in range(1, p.repeats + 1)]
        else:
            blocks = [(a, r) for r in range(1, p.repeats + 1) for a in arm_order(labels, r)]
        for a, r in blocks:
            for wait in p.wait:
                for t in p.threads:
                    out.append(TpccSpec(a, w, wait, t, r, len(out)))
    return out


def describe(spec: TpccSpec) -> str:
    return f"{spec.arm} w{spec.warehouses} {spec.workload} t{spec.threads} r{spec.repeat}"


def resolve_tool(study: Study, arm: str) -> str:
    """``sysbench`` (the Lua driver) or ``go-tpc`` for an arm; :class:`TpccToolMissing` with
    one line when the target needs go-tpc and neither go-tpc nor tiup is installed."""
    p = study.tpcc
    embedded = study.is_embedded(study.arm(arm))
    tool = p.tool if p.tool != "auto" else ("sysbench" if embedded else "go-tpc")
    if tool == "go-tpc":
        if gotpc_tool() is None:
            try:  # tibench's own build, where the go command can make it (once per user)
                require("go-tpc")
            except ToolMissing:
                raise TpccToolMissing(
                    "tpcc: neither go-tpc nor tiup is installed (make go-tools builds go-tpc "
                    "with the go command, or set tpcc.tool: sysbench to run the TPC-C-like Lua "
                    "driver on this target)"
                ) from None
        if p.wait_scale != 1:
            raise TpccToolMissing(
                f"tpcc.wait_scale {p.wait_scale:g}: go-tpc runs the specification's keying "
                "and think times only (wait_scale 1)"
            )
    return tool


def efficiency_pct(tpmc, warehouses: int, wait: bool, wait_scale: float = 1.0) -> float | None:
    """go-tpc's efficiency, ``100 × tpmC / (12.86 × warehouses)``: tpmC against the ceiling the
    specification's keying and think times put on a warehouse's ten terminals. ``None`` unless
    those times held the terminals back at the specification's length (``wait`` and
    ``wait_scale`` 1): without them, or shortened, the ceiling does not apply and the ratio
    runs to thousands of percent."""
    if tpmc is None or not wait or wait_scale != 1 or not warehouses or pd.isna(tpmc):
        return None
    return 100 * float(tpmc) / (TPMC_PER_WAREHOUSE * warehouses)


def data_conn(conn: ConnInfo, study: Study, warehouses: int) -> ConnInfo:
    """The connection to the data set of ``warehouses`` (database ``<tpcc.database>_w<N>``)."""
    return dataclasses.replace(conn, database=f"{study.tpcc.database}_w{warehouses}")


def client_conns(conn: ConnInfo, study: Study) -> list[ConnInfo]:
    """One connection per client: the target ``clients`` times, or each ``host:port``."""
    t = study.tpcc
    return endpoint_conns(conn, t.n_clients if t.client_hosts else t.clients)


# -- the data set ------------------------------------------------------------------------------
def loaded_scale(engine: sa.Engine) -> Scale | None:
    """The scale of the loaded tables (None when any of the 9 is missing or empty)."""
    with engine.connect() as c:
        have = {r[0].lower() for r in c.exec_driver_sql("SHOW TABLES")}
        if not set(TABLES) <= have:
            return None
        w = c.exec_driver_sql("SELECT COUNT(*) FROM warehouse").scalar_one()
        items = c.exec_driver_sql("SELECT COUNT(*) FROM item").scalar_one()
        cust = c.exec_driver_sql("SELECT COUNT(*) FROM customer").scalar_one()
    if not w or not items or not cust:
        return None
    try:
        return Scale(int(w), int(items), int(cust) // (10 * int(w)))
    except ValueError:
        return None


def consistency_detail(checked: pd.DataFrame) -> tuple[bool, str]:
    """(all conditions hold, one line saying which do not)."""
    bad = checked[~checked["ok"]]
    if not len(bad):
        return True, f"consistency conditions {', '.join(map(str, checked['condition']))} hold"
    first = bad.iloc[0]
    return False, (
        f"consistency condition {first['condition']} ({first['rule']}) violated in "
        f"{first['violations']} rows" + (f", and {len(bad) - 1} more" if len(bad) > 1 else "")
    )


def ensure_data(ctx, warehouses: int, tool: str) -> ConnInfo:
    """Load the data set of ``warehouses`` unless a loaded one of the same scale passes the
    consistency conditions; both steps recorded in ``prepare_steps``. Returns its connection."""
    study = ctx.study
    p = study.tpcc
    conn = data_conn(ctx.conn, study, warehouses)
    want = Scale(warehouses, p.items, p.customers)
    ctx.conn.execute_on_server(f"CREATE DATABASE IF NOT EXISTS `{conn.database}`")
    eng = conn.engine()
    try:
        have = loaded_scale(eng)
        t0 = time.time()
        if have == want or (tool == "go-tpc" and have and have.warehouses == warehouses):
            ok, detail = consistency_detail(check_consistency(eng))
            if ok:
                record_step(ctx, "tpcc_verify", conn.database, "ok", time.time() - t0,
                      f"loaded: {warehouses} warehouses; {detail}")  # fmt: skip
                return conn
            log.warning("%s: %s: loading it again", conn.database, detail)
        ctx.guard(f"load the TPC-C tables into {conn.database} (their data is dropped)")
        raw = paths.raw_dir(study.study, "tpcc")
        private = paths.private_dir(study.study)
        t0 = time.time()
        if tool == "sysbench":
            cleanup_sysbench_tpcc(conn, raw / f"cleanup_w{warehouses}.log", private_dir=private)
            out = prepare_sysbench_tpcc(conn, want, raw / f"prepare_w{warehouses}.log",
                                        private_dir=private)  # fmt: skip
        else:
            # go-tpc's own check (prepare's by default, or `tpcc check`) takes minutes per
            # warehouse on MariaDB (conditions 10 and 12: a subquery over HISTORY per
            # customer, no index to serve it); tibench's conditions below verify the load
            out = _gotpc(conn, "prepare", raw / f"prepare_w{warehouses}.log", warehouses, 4,
                         prepare_check=False)  # fmt: skip
        if out.returncode != 0:
            detail = f"exited {out.returncode}; log {out.log_path}"
            record_step(ctx, "tpcc_prepare", conn.database, "failed", time.time() - t0, detail)
            raise RuntimeError(f"tpcc: loading {conn.database} failed: {detail}")
        record_step(ctx, "tpcc_prepare", conn.database, "ok", time.time() - t0,
              f"{warehouses} warehouses, {want.items} items, {want.customers} customers per "
              f"district ({tool})")  # fmt: skip
        t0 = time.time()
        got = loaded_scale(eng)
        ok, detail = consistency_detail(check_consistency(eng))
        if tool == "sysbench" and got != want:
            ok, detail = False, f"loaded {got}, expected {want}"
        record_step(ctx, "tpcc_verify", conn.database, "ok" if ok else "failed", time.time() - t0,
              detail)  # fmt: skip
        if not ok:
            raise RuntimeError(f"tpcc: {conn.database} after loading: {detail}")
        return conn
    finally:
        eng.dispose()


def _gotpc_cmd(conn: ConnInfo, action: str, warehouses: int, threads: int, **kw) -> list[str]:
    cmd = gotpc_command(conn, action, warehouses=warehouses, threads=threads,
                        tool=gotpc_tool() or ("go-tpc",), **kw)  # fmt: skip
    return cmd


def _with_password(cmd: list[str], conn: ConnInfo) -> list[str]:
    return [*cmd, "-p", conn.password] if conn.password else cmd


def _gotpc(conn: ConnInfo, action: str, path: Path, warehouses: int, threads: int, **kw):
    cmd = _gotpc_cmd(conn, action, warehouses, threads, **kw)
    return execute(_with_password(cmd, conn), path)


# -- one run -----------------------------------------------------------------------------------
def measure_lua(ctx, spec: TpccSpec, conn: ConnInfo, logs: list[Path]) -> dict:
    """One run of the Lua driver by every client at once (``ctx.study`` is read), the orders
    counted before and after; returns the run's figures, not yet recorded."""
    study = ctx.study
    p = study.tpcc
    scale = Scale(spec.warehouses, p.items, p.customers)
    conns = client_conns(conn, study)
    shares = split_threads(spec.threads, len(conns))
    timeout = study.run_timeout_s or p.duration_s * 1.5 + 60
    # each client its own seed (the Lua driver draws with sysbench.rand), the arms' alike
    key = f"w{spec.warehouses}/{spec.workload}/t{spec.threads}/r{spec.repeat}"
    seeds = client_seeds(study.seed, key, len(conns))
    eng = conn.engine()
    per_host = None
    try:
        before = orders_count(eng)
        if p.client_hosts:
            per_host, cmds = run_lua_on_hosts(
                ctx, conn, scale, shares, logs, name=spec.run_key.replace("/", "__"),
                seeds=seeds, timeout_s=timeout, time_s=p.duration_s,
                report_interval_s=p.report_interval_s, wait=spec.wait, wait_scale=p.wait_scale,
            )  # fmt: skip
            outcomes = [r.outcome for r in per_host]
        else:
            with ExitStack() as stack:
                cmds = []
                for c, n, seed in zip(conns, shares, seeds, strict=True):
                    cfg = stack.enter_context(secret_config_file(c, paths.private_dir(study.study)))
                    cmd = sysbench_tpcc_command(
                        c, "run", scale, threads=n, time_s=p.duration_s,
                        report_interval_s=p.report_interval_s, config_file=cfg, wait=spec.wait,
                        wait_scale=p.wait_scale,
                    )  # fmt: skip
                    cmds.append(seeded(cmd, seed))
                outcomes = execute_together(cmds, logs, timeout_s=timeout)
        after, lost = orders_count_after(eng)
    finally:
        eng.dispose()
    parsed = [parse_sysbench_file(x) for x in logs]
    texts = [Path(x).read_text(errors="replace") for x in logs]
    status, error, warnings = "ok", None, []
    for i, (o, sb) in enumerate(zip(outcomes, parsed, strict=True)):
        iv = sb.intervals if (sb.intervals is not None and not spec.wait) else pd.DataFrame()
        st, err, w = check_run(sb.summary, iv, p.duration_s, p.report_interval_s)
        st, err = outcome_status((st, err), o, "sysbench")
        if spec.wait and st == "degenerate":
            st, err = "ok", None  # with think times, sysbench's events are mostly waits
        prefix = f"client {i} ({Path(o.log_path).name}): " if len(logs) > 1 else ""
        warnings += [prefix + x for x in w]
        if st != "ok" and status == "ok":
            status, error = st, prefix + (err or st)
    counts = [parse_driver_counts(t) for t in texts]
    total: dict[str, int] = {}
    if all(c is not None for c in counts):
        for c in counts:
            for k, v in c.items():
                total[k] = total.get(k, 0) + v
    elif status == "ok":
        status, error = "failed", "the driver printed no transaction counts"
    if lost:  # the server went away during the run (the loop restarts it before the next)
        status, error = "failed", lost
    if per_host is not None:  # client hosts: a host that failed is named, each one recorded
        host_error = next((r.error for r in per_host if r.error), None)
        if host_error:
            status, error = "failed", host_error
        tps_each = [sb.summary.get("tps") for sb in parsed]
        record_hosts(ctx.store, study.study, spec.run_key, per_host, tps_each, samples=True)
    new_orders = after - before if after is not None else None
    if status == "ok" and total.get("new_order") != new_orders:
        status, error = (
            "failed",
            (
                f"New-Order counts disagree: {new_orders} new orders in the table, "
                f"{total.get('new_order')} counted by the driver"
            ),
        )
    runtime = max((sb.summary.get("total_time_s") or 0 for sb in parsed), default=0) or None
    committed = sum(total.get(t, 0) for t in TRANSACTIONS) if total else None
    rollbacks = total.get("new_order_rollback") if total else None
    drawn = (committed or 0) + (rollbacks or 0)
    mix = None
    if drawn:
        mix = {t: 100 * total.get(t, 0) / drawn for t in TRANSACTIONS}
        mix["new_order"] += 100 * rollbacks / drawn
    lat = transaction_latency(parse_driver_latency(texts))
    hists = [sb.histogram for sb in parsed if sb.histogram is not None and len(sb.histogram)]
    all_pct = merged_percentiles(hists) if hists else {}
    sums = [sb.summary for sb in parsed]
    return _figures(status, error, warnings, outcomes, cmds, runtime) | {
        "new_orders": new_orders,
        "new_order_rollbacks": rollbacks,
        "committed": committed,
        "transactions": {t: total.get(t, 0) for t in TRANSACTIONS} if total else None,
        "mix_pct": mix,
        "latency": lat,
        "all_latency_ms": {"p95": all_pct.get(95), "p99": all_pct.get(99)},
        "histogram_buckets": int(len(merge_histograms(hists))) if hists else 0,
        "sysbench_tps": _sum(s.get("tps") for s in sums),
        "qps": _sum(s.get("qps") for s in sums),
        "errors": _sum(s.get("errors") for s in sums),
        "reconnects": _sum(s.get("reconnects") for s in sums),
        "series": summed_intervals(parsed, [o.started_at for o in outcomes]),
    }


def _figures(status, error, warnings, outcomes, cmds, runtime) -> dict:
    """What every driver's run figures begin with: its status, error and warnings, how each
    client ended (``outcomes``) and its command, and the run time."""
    return {
        "status": status,
        "error": error,
        "warnings": warnings,
        "outcomes": outcomes,
        "commands": cmds,
        "runtime_s": runtime,
    }


def _sum(values) -> float | None:
    vals = [v for v in values if v is not None]
    return float(sum(vals)) if vals else None


def series_of(result, threads: int) -> pd.DataFrame:
    """One go-tpc client's per-interval rows in the catalog's ``intervals`` columns: ``t``
    (end of the interval, s), ``tps`` (committed transactions per second: the ``[Current]``
    lines' TPM summed, ÷ 60), ``err_s`` (failed ones per second), ``threads``."""
    cur = tpcc_series(result.lines)
    if cur.empty:
        return pd.DataFrame(columns=["t", "tps", "qps", "err_s", "reconn_s", "threads"])
    dt = cur["t_s"].diff().fillna(cur["t_s"]).where(lambda d: d > 0)
    return pd.DataFrame(
        {
            "t": cur["t_s"].to_numpy(),
            "tps": (cur["tpm_total"] / 60).to_numpy(),
            "qps": float("nan"),
            "err_s": (cur["errors"] / dt).fillna(0.0).to_numpy(),
            "reconn_s": 0.0,
            "threads": float(threads),
        }
    )


def gotpc_series(results, started: list[float], shares: list[int]) -> pd.DataFrame:
    """The run's per-second series: one go-tpc client's :func:`series_of`, or several
    clients' aligned on wall-clock time and summed as sysbench's are
    (:func:`tibenchlib.multiclient.summed_intervals`)."""
    each = [_Series(series_of(r, n)) for r, n in zip(results, shares, strict=True)]
    return summed_intervals(each, started)


@dataclass(frozen=True)
class _Series:
    intervals: pd.DataFrame


def measure_gotpc(ctx, spec: TpccSpec, conn: ConnInfo, logs: list[Path]) -> dict:
    """One go-tpc run by every client at once (or by the pods of ``tpcc.clients_job``);
    returns the run's figures, not yet recorded."""
    study = ctx.study
    p = study.tpcc
    timeout = study.run_timeout_s or p.duration_s * 1.5 + 120
    job_error, job_warnings = None, []
    if p.clients_job is not None:  # the clients are the pods of a Kubernetes Job
        outcomes, cmds, job_error, job_warnings = run_gotpc_job(
            ctx, spec, conn, logs, timeout_s=timeout
        )
        shares = split_threads(spec.threads, p.clients_job.pods)
    else:
        conns = client_conns(conn, study)
        shares = split_threads(spec.threads, len(conns))
        cmds = [
            _gotpc_cmd(
                c,
                "run",
                spec.warehouses,
                n,
                time_s=p.duration_s,
                wait=spec.wait,
                interval_s=p.report_interval_s,
            )  # fmt: skip
            for c, n in zip(conns, shares, strict=True)
        ]
        outcomes = execute_together(
            [_with_password(cmd, c) for cmd, c in zip(cmds, conns, strict=True)], logs,
            timeout_s=timeout,
        )  # fmt: skip
    res = [parse_tpcc_output(Path(x).read_text(errors="replace"), str(x)) for x in logs]
    status, error = ("failed", job_error) if job_error else ("ok", None)
    warnings = list(job_warnings)
    for i, (o, r) in enumerate(zip(outcomes, res, strict=True)):
        st, err = outcome_status((r.summary["status"], r.summary["error"]), o, "go-tpc")
        if st != "ok" and status == "ok":
            prefix = f"client {i} ({Path(o.log_path).name}): " if len(logs) > 1 else ""
            status, error = "failed", prefix + (err or st)
    s = [r.summary for r in res]
    series = gotpc_series(res, [o.started_at for o in outcomes], shares)
    for i, r in enumerate(res):
        if status != "ok" or r.summary.get("status") != "ok":
            continue
        # sysbench's rules on the per-second series (stalls, variation, intervals missing);
        # with keying and think times most intervals of a small run commit nothing
        iv = series_of(r, shares[i]) if not spec.wait else pd.DataFrame()
        tps = (r.summary.get("tpm_total") or 0) / 60
        st, err, w = check_run({"status": "ok", "tps": tps, "events": tps}, iv, p.duration_s,
                               p.report_interval_s)  # fmt: skip
        prefix = f"client {i} ({Path(outcomes[i].log_path).name}): " if len(logs) > 1 else ""
        warnings += [prefix + x for x in w]
        if st != "ok":
            status, error = st, prefix + (err or st)
    tpmc = _sum(x.get("tpmc") for x in s)
    tpm_total = _sum(x.get("tpm_total") for x in s)
    runtime = max((x.get("runtime_s") or 0 for x in s), default=0) or None
    totals = {}
    for x in s:
        for k, v in (x.get("transactions") or {}).items():
            totals[k.lower()] = totals.get(k.lower(), 0) + v
    lat = {}
    for t in TRANSACTIONS:
        per = [(x.get("latency_ms") or {}).get(t.upper()) for x in s]
        if len(s) == 1 and per[0]:
            one = per[0]
            lat[t] = {"n": totals.get(t, 0), "avg": one.get("avg"), "p50": one.get("p50"),
                      "p90": one.get("p90"), "p95": one.get("p95"), "p99": one.get("p99"),
                      "p999": one.get("p99_9"), "max": one.get("max")}  # fmt: skip
        else:
            lat[t] = {"n": totals.get(t, 0), "avg": None, "p50": None, "p90": None, "p95": None,
                      "p99": None, "p999": None, "max": None}  # fmt: skip
    if len(s) > 1:
        warnings.append(
            "go-tpc prints percentiles, no histogram: several clients' p95/p99 cannot be merged "
            "(left empty rather than averaged)"
        )
    committed = sum(totals.values()) if totals else None
    return _figures(status, error, warnings, outcomes, cmds, runtime) | {
        "new_orders": totals.get("new_order"),
        "new_order_rollbacks": None,
        "committed": committed,
        "transactions": {t: totals.get(t, 0) for t in TRANSACTIONS} if totals else None,
        "mix_pct": None,
        "latency": lat,
        "all_latency_ms": {},
        "qps": None,
        "errors": _sum(sum((x.get("errors") or {}).values()) for x in s),
        "reconnects": None,
        "series": series,
        "tpmc": tpmc,
        "tpm_total": tpm_total,
    }


def run_one(ctx, spec: TpccSpec, tool: str) -> RunRecord:
    """Measure one TPC-C run on an open arm, check consistency, record it. Returns its record."""
    study = ctx.study
    p = study.tpcc
    conn = ensure_data(ctx, spec.warehouses, tool) if spec.warehouses not in ctx.tpcc_ready else (
        data_conn(ctx.conn, study, spec.warehouses)
    )  # fmt: skip
    ctx.tpcc_ready.add(spec.warehouses)
    if p.clients_job is not None:  # raw/tpcc/<run>/pod<i>.log
        logs = paths.host_run_logs(
            study.study, "tpcc", spec.run_key, pod_labels(p.clients_job.pods)
        )
    elif p.client_hosts:
        logs = host_logs(study, spec.run_key)
    else:
        logs = paths.client_run_logs(study.study, "tpcc", spec.run_key, p.n_clients)
    attempt = max(set_aside(x) for x in logs)
    f = (measure_lua if tool == "sysbench" else measure_gotpc)(ctx, spec, conn, logs)
    status, error = f["status"], f["error"]
    minutes = f["runtime_s"] / 60 if f["runtime_s"] else None
    tpmc = f.get("tpmc")
    tpm_total = f.get("tpm_total")
    if tool == "sysbench" and minutes and f["new_orders"] is not None:
        tpmc = f["new_orders"] / minutes
        tpm_total = f["committed"] / minutes if f["committed"] is not None else None
    if status == "ok" and not tpmc:
        status, error = "degenerate", "no New-Order committed during the run"
    cons_ok, cons = None, None
    if p.consistency:
        eng = conn.engine()
        try:
            checked = check_consistency(eng)
        except sa.exc.DBAPIError as e:  # the server went away after the run
            checked = None
            if status == "ok":
                status, error = "failed", "consistency not checked: the server stopped answering: "
                error += " ".join(str(getattr(e, "orig", None) or e).split())
        finally:
            eng.dispose()
        if checked is not None:
            cons_ok, detail = consistency_detail(checked)
            cons = checked.drop(columns="examples").to_dict("records")
            if not cons_ok and status == "ok":
                status, error = "failed", detail
    no = f["latency"].get("new_order") or {}
    outcomes = f["outcomes"]
    n_clients = len(logs)
    command = display_command(f["commands"][0])
    if n_clients > 1:
        command += f"  (and {n_clients - 1} more clients started with it)"
    summary = {k: v for k, v in f.items() if k not in ("outcomes", "commands", "series")}
    summary.update({"tool": tool, "tpmc": tpmc, "tpm_total": tpm_total, "clients": n_clients})
    iv = f["series"]
    rec = RunRecord(
        study=study.study,
        run_key=spec.run_key,
        phase="tpcc",
        arm=spec.arm,
        workload=spec.workload,
        threads=spec.threads,
        repeat=spec.repeat,
        seq=spec.seq,
        status=status,
        error=error,
        tps=tpm_total / 60 if tpm_total is not None else None,
        qps=f["qps"],
        events=f["committed"],
        total_time_s=f["runtime_s"],
        lat_avg_ms=no.get("avg"),
        lat_max_ms=no.get("max"),
        percentile=95.0,
        lat_pct_ms=no.get("p95"),
        lat_p50_ms=no.get("p50"),
        lat_p90_ms=no.get("p90"),
        lat_p95_ms=no.get("p95"),
        lat_p99_ms=no.get("p99"),
        lat_p999_ms=no.get("p999"),
        errors=f["errors"],
        reconnects=f["reconnects"],
        n_intervals=len(iv),
        warnings=list(f["warnings"]),
        command=command,
        log_path=str(logs[0]),
        started_at=min(o.started_at for o in outcomes),
        finished_at=max(o.finished_at for o in outcomes),
        wall_s=max(o.finished_at for o in outcomes) - min(o.started_at for o in outcomes),
        summary_json=json.dumps(summary, default=str),
        attempts=attempt,
    )
    ctx.store.record_run(rec, iv if len(iv) else None)
    ctx.store.upsert(
        "tpcc_runs",
        {
            "study": study.study,
            "run_key": spec.run_key,
            "arm": spec.arm,
            "tool": tool,
            "warehouses": spec.warehouses,
            "wait": spec.wait,
            "threads": spec.threads,
            "clients": n_clients,
            "repeat": spec.repeat,
            "status": status,
            "tpmc": tpmc,
            "tpm_total": tpm_total,
            "efficiency_pct": efficiency_pct(tpmc, spec.warehouses, spec.wait, p.wait_scale),
            "new_orders": f["new_orders"],
            "new_order_rollbacks": f["new_order_rollbacks"],
            "runtime_s": f["runtime_s"],
            "mix_json": json.dumps(f["mix_pct"]),
            "latency_json": json.dumps(f["latency"]),
            "consistency_ok": cons_ok,
            "consistency_json": json.dumps(cons, default=str),
            "client_logs_json": json.dumps([str(x) for x in logs]),
            "at": time.time(),
        },
    )
    return rec


# -- the phase ---------------------------------------------------------------------------------
def run_tpcc_phase(
    context: RunContext, *, arms: list[str] | None = None, redo: bool = False
) -> pd.DataFrame:
    """Run (or resume) the TPC-C runs in the catalog ``store`` and return one row per cell
    (:data:`SUMMARY_COLUMNS`)."""
    study, store, yes = context.study, context.store, context.yes
    specs = plan(study, arms)
    tools = {a: resolve_tool(study, a) for a in dict.fromkeys(s.arm for s in specs)}

    def open_tpcc(spec: TpccSpec, _previous):
        ctx = open_arm(study, spec.arm, yes=yes, store=store)
        if not ctx.embedded:
            ctx.guard("run TPC-C (it writes to the tpcc databases)")
        if study.tpcc.client_hosts:  # their pre-flight, before anything is loaded or run
            open_tpcc_hosts(study, ctx.conn, store=store, arm=ctx.arm.label)
        if study.tpcc.clients_job:  # kubectl is there, before anything is loaded or run
            check_job(ctx, study.tpcc.clients_job)
        ctx.tpcc_ready = set()
        return ctx

    def run(ctx, spec: TpccSpec) -> RunRecord:
        if not hasattr(ctx, "tpcc_ready"):  # an arm reopened by the alive check
            ctx.tpcc_ready = set()
        return run_one(ctx, spec, tools[spec.arm])

    context.run_plan(
        specs,
        open=open_tpcc,
        run=run,
        redo=redo,
        cooldown_s=study.cooldown_s,
        requires=("sysbench",) if "sysbench" in tools.values() else (),
        desc="tpcc",
        describe=describe,
    )
    return summarize(study, store, arms)


def runs_table(study: Study, store: Store | None = None, arms: list[str] | None = None):
    """The phase's runs from the catalog, joined with their TPC-C figures (``tpcc_runs``):
    one row per run, latency JSON decoded into ``latency`` (type → figures)."""
    store = store or Store.for_study(study)
    runs = store.runs(study.study, phase="tpcc")
    if not len(runs):
        return pd.DataFrame()
    t = store.read("tpcc_runs", study.study)
    keep = ["run_key", "tool", "warehouses", "wait", "clients", "tpmc", "tpm_total",
            "efficiency_pct", "new_orders", "runtime_s", "mix_json", "latency_json",
            "consistency_ok"]  # fmt: skip
    df = runs.merge(t[keep], on="run_key", how="left")
    if arms:
        df = df[df["arm"].isin(arms)]
    df["latency"] = [json.loads(x) if isinstance(x, str) else {} for x in df["latency_json"]]
    df["mix"] = [json.loads(x) if isinstance(x, str) else None for x in df["mix_json"]]
    return df.drop(columns=["latency_json", "mix_json"]).reset_index(drop=True)


CELL_KEYS = ["arm", "tool", "warehouses", "workload", "threads", "clients"]


def summarize(study: Study, store: Store | None = None, arms: list[str] | None = None):
    """Per cell (arm × warehouses × wait mode × threads): mean tpmC, tpmTotal and New-Order
    p95 over the repeated runs with Student t 95% intervals (:func:`stats.summarize_cells`;
    the run is the unit), mean efficiency and New-Order p99."""
    runs = runs_table(study, store, arms)
    if not len(runs):
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    keys = CELL_KEYS
    out = None
    for metric, name in (("tpmc", "tpmc"), ("tpm_total", "tpm_total"),
                         ("lat_p95_ms", "new_order_p95_ms")):  # fmt: skip
        c = summarize_cells(runs, metric=metric, keys=keys)
        c = c.rename(columns={"mean": name, "ci_low": f"{name}_ci_low",
                              "ci_high": f"{name}_ci_high"})  # fmt: skip
        if out is None:
            out = c[[*keys, "n", "n_failed", name, f"{name}_ci_low", f"{name}_ci_high",
                     "method", "warnings"]]  # fmt: skip
        else:
            out = out.merge(c[[*keys, name, f"{name}_ci_low", f"{name}_ci_high"]], on=keys)
    ok = runs[runs["status"] == "ok"]
    extra = ok.groupby(keys)[["lat_p99_ms"]].mean().reset_index()
    extra = extra.rename(columns={"lat_p99_ms": "new_order_p99_ms"})
    out = out.merge(extra, on=keys, how="left")
    # linear in tpmC, so the mean efficiency is the efficiency of the mean; recomputed here
    # rather than read from the runs, so a catalog written before the rule obeys it too
    out["efficiency_pct"] = [
        efficiency_pct(t, w, m == "tpcc_wait", study.tpcc.wait_scale)
        for t, w, m in zip(out["tpmc"], out["warehouses"], out["workload"], strict=True)
    ]
    return out.reindex(columns=SUMMARY_COLUMNS).sort_values(keys, ignore_index=True)


def latency_table(study: Study, store: Store | None = None, arms: list[str] | None = None):
    """Per cell and transaction type: mean of the runs' p95 and p99 (ms) with Student t 95%
    intervals on p95 (each run's percentile from its histogram of all threads and clients),
    transactions timed per run."""
    runs = runs_table(study, store, arms)
    if not len(runs):
        return pd.DataFrame()
    rows = []
    for r in runs.itertuples():
        for t in TRANSACTIONS:
            v = (r.latency or {}).get(t) or {}
            rows.append({"arm": r.arm, "warehouses": r.warehouses, "workload": r.workload,
                         "threads": r.threads, "transaction": t, "status": r.status,
                         "repeat": r.repeat, "n_tx": v.get("n"), "avg_ms": v.get("avg"),
                         "p95_ms": v.get("p95"), "p99_ms": v.get("p99")})  # fmt: skip
    df = pd.DataFrame(rows)
    keys = ["arm", "warehouses", "workload", "threads", "transaction"]
    c = summarize_cells(df, metric="p95_ms", keys=keys)
    m = df[df["status"] == "ok"].groupby(keys)[["avg_ms", "p99_ms", "n_tx"]].mean().reset_index()
    c = c.merge(m, on=keys, how="left")
    order = {t: i for i, t in enumerate(TRANSACTIONS)}
    c["_o"] = c["transaction"].map(order)
    c = c.sort_values([*keys[:-1], "_o"], ignore_index=True).drop(columns="_o")
    return c.rename(columns={"mean": "p95_ms", "ci_low": "p95_ci_low", "ci_high": "p95_ci_high"})


# -- dry run and progress ----------------------------------------------------------------------
#: Rough seconds to load one warehouse per 10,000 items plus 300 customers per district.
LOAD_S_PER_UNIT = 3.0


#: Bytes of one row of each table, as the TPC-C specification sizes them (clause 1.2-1.3):
#: warehouse, district, customer, history, order, new-order, order-line, stock, item.
ROW_BYTES = {"warehouse": 89, "district": 95, "customer": 655, "history": 46, "order": 24,
             "new_order": 8, "order_line": 54, "stock": 306, "item": 82}  # fmt: skip
#: Pages, indexes and free space of a storage engine over the rows' own bytes (InnoDB: ~2x).
STORAGE_OVERHEAD = 2.0


def data_set_bytes(items: int, customers: int, warehouses: int) -> float:
    """Rough disk of one loaded data set: the initial population of clause 4.3.3 (per
    warehouse: 10 districts of ``customers`` customers, one history row and one order of ~10
    lines each, 30% of orders new; ``items`` stock rows), the item table once, times
    :data:`STORAGE_OVERHEAD`."""
    r = ROW_BYTES
    per_district = customers * (
        r["customer"] + r["history"] + r["order"] + 10 * r["order_line"] + 0.3 * r["new_order"]
    )
    per_wh = r["warehouse"] + 10 * (r["district"] + per_district) + items * r["stock"]
    return STORAGE_OVERHEAD * (items * r["item"] + warehouses * per_wh)


def estimate(study: Study, arms: list[str] | None = None) -> dict:
    """Dry-run entry of the tpcc phase: its runs and one load per arm × warehouse count."""
    p = study.tpcc
    specs = plan(study, arms)
    loads = len({(s.arm, s.warehouses) for s in specs})
    unit = max(p.items / 10_000, p.customers / 300)
    load_s = sum(LOAD_S_PER_UNIT * unit * w for w in p.warehouses) * len({s.arm for s in specs})
    eta = len(specs) * (p.duration_s + RUN_OVERHEAD_S) + load_s
    eta += max(len(specs) - 1, 0) * study.cooldown_s
    eta += len(specs) * (p.clients_job.start_lead_s if p.clients_job else 0)  # the pods' barrier
    per_run = 200 * p.duration_s / p.report_interval_s + 50_000
    data = sum(data_set_bytes(p.items, p.customers, s_w) for _, s_w in
               {(s.arm, s.warehouses) for s in specs})  # fmt: skip
    return {
        "runs": len(specs),
        "eta_s": eta,
        "disk_bytes": int(len(specs) * per_run * p.n_clients + data),
        "note": f"{len(specs)} runs of {p.duration_s} s, {loads} data sets "
        f"({', '.join(map(str, p.warehouses))} warehouses), {p.n_clients} client(s)",
    }


def wait_effect(study: Study, store: Store | None = None, arms: list[str] | None = None):
    """Per arm × warehouses × threads measured both ways: tpmC with keying and think times
    over tpmC without, the ratio of the mean tpmC with Fieller's 95% interval (independent
    runs, :func:`tibenchlib.stats.fieller_ratio`)."""
    runs = runs_table(study, store, arms)
    cols = ["arm", "warehouses", "threads", "n_nowait", "n_wait", "tpmc_nowait", "tpmc_wait",
            "ratio", "ci_low", "ci_high", "warnings"]  # fmt: skip
    if not len(runs):
        return pd.DataFrame(columns=cols)
    ok = runs[(runs["status"] == "ok") & runs["tpmc"].notna()]
    rows = []
    for (a, w, t), g in ok.groupby(["arm", "warehouses", "threads"], sort=True):
        x = g.loc[g["workload"] == "tpcc_wait", "tpmc"].to_numpy(float)
        y = g.loc[g["workload"] == "tpcc", "tpmc"].to_numpy(float)
        if not len(x) or not len(y):
            continue
        f = fieller_ratio(x, y)
        rows.append({"arm": a, "warehouses": int(w), "threads": int(t), "n_nowait": len(y),
                     "n_wait": len(x), "tpmc_nowait": y.mean(), "tpmc_wait": x.mean(),
                     "ratio": f["ratio"], "ci_low": f["ci_low"], "ci_high": f["ci_high"],
                     "warnings": f["warnings"]})  # fmt: skip
    return pd.DataFrame(rows, columns=cols)


#: the warehouse count in a run key (``tpcc/<arm>/w8/...``)
_WAREHOUSES = re.compile(r"/w(\d+)/")


class Tpcc(Phase):
    name = "tpcc"
    notebook = "08_tpcc.ipynb"
    summary = "TPC-C (TPC-C-like on the embedded server): tpmC over threads, wait on/off"
    titles = {"en": "TPC-C", "zh": "TPC-C"}
    own_arms = True
    tool = Tool(
        "TPC-C",
        {
            "en": ("transactions/s (tpmTotal/60)", "New-Order"),
            "zh": ("事务/秒 (tpmTotal/60)", "New-Order"),
        },
    )

    arms = staticmethod(arm_labels)
    estimate = staticmethod(estimate)
    plan_runs = staticmethod(plan)
    measure_runs = staticmethod(run_tpcc_phase)

    def results(self, study, store, arms) -> pd.DataFrame:
        return summarize(study, store, arms)

    def cell_workload(self, runs: pd.DataFrame) -> pd.Series:
        """Runs carry their warehouse count in the key: ``tpcc w8`` is another data set."""
        w = runs["run_key"].str.extract(_WAREHOUSES, expand=False)
        return runs["workload"].where(w.isna(), runs["workload"] + " w" + w.fillna(""))


TPCC = Tpcc()

"""One sysbench run on an open arm: its log, its command, its execution, its record.

:func:`run_one` is the ``run`` callable the sweep and NUMA phases hand to
:func:`tibenchlib.runloop.run_plan`: it writes sysbench's output to the run's raw log (earlier
attempts set aside, never overwritten), samples the server's and client's resources, parses the
log and records a :class:`~tibenchlib.record.RunRecord`. :func:`warmup_runs` warms an arm just
opened until throughput is steady.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import paths
from ..attempts import set_aside
from ..clients import endpoint_conns, execute_together, failed_clients, split_threads
from ..db import secret_config_file
from ..hosts.runs import host_logs, run_on_hosts
from ..multiclient import merge_parsed
from ..parse.sysbench import parse_sysbench_file
from ..prometheus import collect_run_metrics
from ..record import RunRecord
from ..resources import ProcessSampler, client_bottleneck
from ..tools import display_command, execute
from ..warmup import steady_after
from .command import run_seeds, seeded, study_command
from .record import record_from_parsed

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunSpec:
    """One planned sysbench run."""

    arm: str
    workload: str
    threads: int
    repeat: int
    seq: int = 0
    phase: str = "sweep"

    @property
    def run_key(self) -> str:
        key = f"{self.arm}/{self.workload}/t{self.threads}/r{self.repeat}"
        return key if self.phase == "sweep" else f"{self.phase}/{key}"


def log_path(study: str, spec: RunSpec) -> Path:
    return paths.run_log(study, "sysbench", spec.run_key)


def client_logs(study: str, spec: RunSpec, clients: int) -> list[Path]:
    """Every client's log of a run: :func:`log_path` for one client, ``.c<i>`` for several."""
    return paths.client_run_logs(study, "sysbench", spec.run_key, clients)


def study_logs(study, spec: RunSpec) -> list[Path]:
    """Every client's log of a run of ``study``: per host (``<run>/<host>.log``) when its
    clients are hosts, else :func:`client_logs`."""
    if study.client_hosts or study.clients_job:
        return host_logs(study, spec.run_key)
    return client_logs(study.study, spec, study.n_clients)


def run_one(
    ctx, spec: RunSpec, *, duration_s: int | None = None, sample: bool | None = None
) -> RunRecord:
    """Run one sysbench run on an open arm and record it. Returns its record."""
    study = ctx.study
    d = duration_s or study.duration_s
    logs = study_logs(study, spec)
    attempt = max(set_aside(p) for p in logs)
    timeout = study.run_timeout_s or d * 1.5 + 60
    sampler = _sampler(ctx) if (study.sample_resources if sample is None else sample) else None

    def started(pid: int) -> None:
        if sampler is not None:
            sampler.watch("client", pid)
            sampler.t0 = time.time()
            sampler.start()

    if study.client_hosts or study.clients_job:  # clients on hosts (local, SSH) or pods
        parsed, outcome, command, hosts = run_on_hosts(ctx, spec, d, logs, timeout, sampler)
    elif len(logs) == 1:
        with secret_config_file(ctx.conn, paths.private_dir(study.study)) as cfg:
            cmd = study_command(study, ctx.conn, spec.workload, spec.threads, d, cfg)
            try:
                outcome = execute(cmd, logs[0], timeout_s=timeout, on_start=started)
            finally:
                if sampler is not None:
                    sampler.stop()
        parsed = parse_sysbench_file(logs[0])
        command = display_command(cmd)
    else:
        parsed, outcome, command = _run_clients(ctx, spec, d, logs, timeout, sampler)
    rec, iv = record_from_parsed(
        parsed,
        study=study.study,
        run_key=spec.run_key,
        phase=spec.phase,
        arm=spec.arm,
        workload=spec.workload,
        threads=spec.threads,
        repeat=spec.repeat,
        seq=spec.seq,
        outcome=outcome,
        command=command,
        expected_s=d,
        interval_s=study.report_interval_s,
    )
    rec.attempts = attempt
    if study.clients_job:
        rec.warnings += hosts.warnings
    if sampler is not None:
        samples = sampler.samples
        rec.warnings += sampler.warnings
        if study.client_hosts and len(hosts.samples):
            samples = pd.concat([samples, hosts.samples], ignore_index=True)
            rec.warnings += hosts.warnings

        cb = client_bottleneck(samples)
        if cb["warning"] and cb["n"]:
            rec.warnings.append(cb["warning"])
    if study.prometheus_url:
        metrics, warns = collect_run_metrics(
            study.prometheus_url,
            outcome.started_at,
            outcome.finished_at,
            access=study.prometheus_http,
        )
        rec.warnings += warns
        if len(metrics):
            ctx.store.append(
                "cluster_metrics", metrics.assign(study=study.study, run_key=spec.run_key)
            )
    ctx.store.record_run(rec, iv)
    if sampler is not None and len(samples):
        ctx.store.append("samples", samples.assign(study=study.study, run_key=spec.run_key))
    return rec


def _run_clients(ctx, spec: RunSpec, d: int, logs: list[Path], timeout: float, sampler):
    """Several sysbench clients of one run started together (``study.clients``), the run's
    threads shared among them; returns ``(parsed, outcome, command)`` for the record builder:
    one parsed result whose summary, intervals and histogram merge the clients'
    (:mod:`tibenchlib.multiclient`) and one outcome spanning them all (the first failed
    client's exit when one failed). Every client's log stays where it was written."""
    study = ctx.study
    conns = endpoint_conns(ctx.conn, study.clients)
    shares = split_threads(spec.threads, len(conns))
    seeds = run_seeds(study, spec, len(conns))
    with ExitStack() as stack:
        cmds = []
        for c, n, seed in zip(conns, shares, seeds, strict=True):
            cfg = stack.enter_context(secret_config_file(c, paths.private_dir(study.study)))
            cmds.append(seeded(study_command(study, c, spec.workload, n, d, cfg), seed))
        if sampler is not None:
            sampler.t0 = time.time()
            sampler.start()
        try:
            outcomes = execute_together(cmds, logs, timeout_s=timeout)
        finally:
            if sampler is not None:
                sampler.stop()
    each = [parse_sysbench_file(p) for p in logs]
    parsed = merge_parsed(each, [o.started_at for o in outcomes], logs)
    summary = parsed.summary
    failed = failed_clients(outcomes)
    base = outcomes[failed[0]] if failed else outcomes[0]
    outcome = dataclasses.replace(
        base,
        started_at=min(o.started_at for o in outcomes),
        finished_at=max(o.finished_at for o in outcomes),
    )
    if failed and summary["status"] == "ok":
        summary["status"] = "failed"
        summary["error"] = f"client {failed[0]} ({Path(base.log_path).name}) did not end well"
    command = display_command(cmds[0]) + f"  (and {len(cmds) - 1} more clients started with it)"
    return parsed, outcome, command


def warmup_runs(ctx) -> pd.DataFrame:
    """Warm up an arm just opened (server start or arm switch) until throughput is steady.

    Per workload, at its largest thread count: sysbench runs of ``warmup_s`` seconds reporting
    every second, until :func:`tibenchlib.warmup.steady_after` calls the throughput steady or
    ``warmup_max_runs`` runs were made. Nothing here enters the sweep's statistics; every
    warm-up run is recorded in the catalog's ``warmups`` table. Returns this opening's rows.
    """
    study = ctx.study
    seconds = int(max(1, round(study.warmup_s)))
    done = ctx.store.read("warmups", study.study)
    opening = int(done["opening"].max()) + 1 if len(done) else 1
    rows = []
    for w in study.workloads:
        threads = max(study.threads_for(w))
        previous = None
        for attempt in range(1, study.warmup_max_runs + 1):
            spec = RunSpec(ctx.arm.label, w, threads, attempt, phase="warmup")
            path = paths.run_log(study.study, "warmup", spec.run_key, prefix=f"o{opening}__")
            with secret_config_file(ctx.conn, paths.private_dir(study.study)) as cfg:
                cmd = study_command(study, ctx.conn, w, threads, seconds, cfg, report=False)
                out = execute(cmd, path, timeout_s=seconds * 1.5 + 60)
            if out.returncode != 0:
                log.warning("warm-up run %s exited %s (log %s)", spec.run_key, out.returncode, path)
            iv = parse_sysbench_file(path).intervals
            tps = iv["tps"].to_numpy() if iv is not None and len(iv) else []
            st = steady_after(tps, previous)
            rows.append(
                {
                    "study": study.study,
                    "arm": ctx.arm.label,
                    "workload": w,
                    "threads": threads,
                    "opening": opening,
                    "attempt": attempt,
                    "seconds": out.wall_s,
                    "tps": st["tps"],
                    "n_intervals": len(tps),
                    "mser_cut_s": st["mser_cut_s"],
                    "change_pct": st["change_pct"],
                    "steady": st["steady"],
                    "detail": st["detail"],
                    "log_path": str(path),
                    "at": out.started_at,
                }
            )
            ctx.store.append("warmups", [rows[-1]])
            previous = st["tps"]
            if st["steady"]:
                break
        else:
            # one run per opening is a fixed warm-up: there is nothing to compare it with, so
            # "not steady" says nothing (the catalog's warmups table still records it)
            (log.warning if study.warmup_max_runs > 1 else log.info)(
                "%s %s: throughput not steady after %d warm-up runs (%s)",
                ctx.arm.label,
                w,
                study.warmup_max_runs,
                rows[-1]["detail"],
            )
    return pd.DataFrame(rows)


def describe(spec: RunSpec) -> str:
    """A run in the progress bar's words."""
    return f"{spec.arm} {spec.workload} t={spec.threads} r={spec.repeat}"


def _sampler(ctx):
    """Per-second CPU/RSS of the local server (when tibench runs it) and the sysbench client."""
    server_pid = ctx.server.pid if ctx.server else None
    return ProcessSampler({"server": server_pid} if server_pid else {})

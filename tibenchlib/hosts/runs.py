"""Sweep runs whose sysbench clients are on several hosts (``clients: [local, user@host…]``).

:func:`open_hosts` runs the pre-flight once per study and target in this process (again when a
host's connection dropped) and keeps the connections; :func:`check_arm` is the sweep's hook
when an arm opens (the figures go to the catalog's ``client_hosts`` table, a problem stops the
phase before anything is measured). :func:`run_on_hosts` is one run: the threads shared among
the clients, the credentials file written on each host, the clients started together
(:func:`tibenchlib.hosts.execute.run_clients`), every log parsed and merged like local
clients' (:func:`tibenchlib.multiclient.merge_parsed`), each client recorded in ``run_hosts``
and each host's CPU demand returned for the run's samples.
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
from dataclasses import dataclass, field

import pandas as pd

from .. import paths
from ..clients import split_threads
from ..db import secret_config_file
from ..kube.sweep_job import check_job, job_logs, run_on_job
from ..multiclient import merge_parsed
from ..parse.sysbench import parse_sysbench_file
from ..resources import client_bottleneck
from ..sysbench.command import run_seeds, seeded, study_command
from ..tools import Outcome, display_command
from .execute import ClientJob, ClientResult, run_clients, start_spread_ms
from .preflight import HostCheck, check_hosts, check_rows, problems
from .spec import host_labels
from .ssh import HostError, remote_dir

log = logging.getLogger(__name__)

__all__ = [
    "HostExtras",
    "check_arm",
    "close_all",
    "host_logs",
    "merged_outcome",
    "open_hosts",
    "record_hosts",
    "run_on_hosts",
]

_open: dict[tuple, list[HostCheck]] = {}


@dataclass
class HostExtras:
    """What a run on hosts adds to the run's record: the hosts' CPU samples and warnings."""

    samples: pd.DataFrame = field(default_factory=pd.DataFrame)
    warnings: list[str] = field(default_factory=list)


def close_all() -> None:
    """Close every open client-host connection of this process."""
    for checks in _open.values():
        for c in checks:
            if c.ssh is not None:
                c.ssh.close()
    _open.clear()


atexit.register(close_all)


def open_hosts(
    study,
    conn,
    *,
    store=None,
    arm: str | None = None,
    clients=None,
    tool: str = "sysbench",
    field: str = "sysbench",
    report_interval_s: float | None = None,
) -> list[HostCheck]:
    """The client hosts (``clients``, default: the sweep's) checked for ``tool`` (a host's own
    path in its entry's ``field``) and connected (see :mod:`.preflight`); raises
    :class:`HostError`, one line per problem, when any is found."""
    clients = study.client_hosts if clients is None else clients
    key = (study.study, conn.host, conn.port, tool, tuple(c.host for c in clients))
    checks = _open.get(key)
    if checks and all(c.local or (c.ssh is not None and c.ssh.connected) for c in checks):
        return checks
    for c in checks or []:
        if c.ssh is not None:
            c.ssh.close()
    checks = check_hosts(
        study.study,
        clients,
        (conn.host, conn.port),
        report_interval_s=report_interval_s or study.report_interval_s,
        allow_mixed_versions=study.allow_mixed_versions,
        tool=tool,
        field=field,
    )
    if store is not None:
        store.append("client_hosts", check_rows(checks, study.study, arm))
    bad = problems(checks)
    if bad:
        for c in checks:
            if c.ssh is not None:
                c.ssh.close()
        _open.pop(key, None)
        raise HostError("\n".join(bad))
    for c in checks:
        if c.killed:
            log.warning("client host %s: killed %s left by an earlier run", c.host, c.killed)
    _open[key] = checks
    return checks


def check_arm(ctx) -> None:
    """The sweep's hook when an arm opens: pre-flight of its client hosts (none: nothing)."""
    if ctx.study.clients_job is not None:  # clients as a Kubernetes Job: kube.sweep_job
        check_job(ctx)
    if ctx.study.client_hosts:
        open_hosts(ctx.study, ctx.conn, store=ctx.store, arm=ctx.arm.label)


def host_logs(study, run_key: str) -> list:
    """Each client's raw log of a run on hosts: ``raw/sysbench/<run>/<host>.log``."""
    if study.clients_job is not None:
        return job_logs(study, run_key)
    labels = host_labels([c.host for c in study.client_hosts])
    return paths.host_run_logs(study.study, "sysbench", run_key, labels)


def merged_outcome(results: list[ClientResult]) -> tuple[Outcome, str | None]:
    """The run's outcome from its clients': the first failed client's (else the first's),
    spanning the earliest start to the latest end; and the first failed client's one-line
    error (None when every client ended well)."""
    failed = [r for r in results if r.error]
    outcomes = [r.outcome for r in results]
    base = failed[0].outcome if failed else outcomes[0]
    outcome = dataclasses.replace(
        base,
        started_at=min(o.started_at for o in outcomes),
        finished_at=max(o.finished_at for o in outcomes),
        returncode=base.returncode if base.returncode is not None else 1,
    )
    return outcome, (failed[0].error if failed else None)


def record_hosts(
    store, study: str, run_key: str, results: list[ClientResult], tps, *, samples: bool = False
) -> None:
    """One ``run_hosts`` row per client of a run (``tps``: each client's own figure); with
    ``samples``, the SSH hosts' CPU samples become the run's ``samples`` (a phase that samples
    nothing else: YCSB, TPC-C; ``t`` counts from the agreed start)."""
    if samples:
        remote = [r.samples for r in results if len(r.samples)]
        rows = pd.concat(remote, ignore_index=True).to_dict("records") if remote else []
        store.replace_run_rows("samples", study, run_key, rows)
    store.replace_run_rows(
        "run_hosts",
        study,
        run_key,
        [
            {
                "host": r.job.check.label,
                "destination": r.job.check.host,
                "threads": r.job.threads,
                "agreed_start": r.agreed,
                "started_at": r.outcome.started_at,
                "start_delay_ms": r.start_delay_ms,
                "finished_at": r.outcome.finished_at,
                "returncode": r.outcome.returncode,
                "tps": t,
                "log_path": str(r.outcome.log_path),
                "error": r.error,
            }
            for r, t in zip(results, tps, strict=True)
        ],
    )


def run_on_hosts(ctx, spec, d: int, logs: list, timeout: float, sampler):
    """One sweep run with clients on hosts; returns ``(parsed, outcome, command, extras)``
    as the run's record wants them (see :func:`tibenchlib.sysbench.runner.run_one`)."""
    if ctx.study.clients_job is not None:
        return run_on_job(ctx, spec, d, logs, timeout, sampler)
    study = ctx.study
    checks = open_hosts(study, ctx.conn, store=ctx.store, arm=ctx.arm.label)
    shares = split_threads(spec.threads, len(checks))
    name = spec.run_key.replace("/", "__")
    with secret_config_file(ctx.conn, paths.private_dir(study.study)) as local_cfg:
        jobs = []
        seeds = run_seeds(study, spec, len(checks))
        for c, n, lg, host, seed in zip(
            checks, shares, logs, study.client_hosts, seeds, strict=True
        ):
            cfg = local_cfg if c.local else f"{remote_dir(study.study, c.label)}/{name}.cfg"
            argv = seeded(study_command(study, ctx.conn, spec.workload, n, d, cfg), seed)
            if host.sysbench:
                argv[0] = host.sysbench
            secret = f"mysql-password={ctx.conn.password}\n" if ctx.conn.password else ""
            jobs.append(ClientJob(c, argv, lg, n, secret="" if c.local else secret))

        def local_started(pid: int) -> None:
            if sampler is not None:
                sampler.watch("client", pid)

        def local_ended() -> None:
            if sampler is not None:
                sampler.unwatch("client")

        if sampler is not None:
            sampler.start()
        try:
            results = run_clients(
                jobs,
                study=study.study,
                name=name,
                timeout_s=timeout,
                on_local_start=local_started,
                on_local_end=local_ended,
            )
        finally:
            if sampler is not None:
                sampler.stop()
    each = [parse_sysbench_file(p) for p in logs]
    parsed = merge_parsed(each, [r.outcome.started_at for r in results], logs)
    summary = parsed.summary
    summary["client_hosts"] = [c.label for c in checks]
    summary["start_spread_ms"] = start_spread_ms(results)
    outcome, error = merged_outcome(results)
    if error:
        summary["status"] = "failed"
        summary["error"] = error
    record_hosts(ctx.store, study.study, spec.run_key, results,
                 [p.summary.get("tps") for p in each])  # fmt: skip
    extras = HostExtras()
    remote = [r.samples for r in results if len(r.samples)]
    if sampler is not None and remote:
        # the hosts' samples count from the agreed start, the local sampler's from its own t0
        shift = results[0].agreed - (sampler.t0 or results[0].agreed)
        extras.samples = pd.concat(remote, ignore_index=True)
        extras.samples["t"] = (extras.samples["t"] + shift).round(3)
        for r in results:
            if len(r.samples):
                cb = client_bottleneck(r.samples, source=f"client:{r.job.check.label}")
                if cb["warning"]:
                    extras.warnings.append(cb["warning"])
    n = len(jobs) - 1
    command = display_command(jobs[0].argv)
    if n:
        command += f"  (and {n} more clients started with it)"
    return parsed, outcome, command, extras

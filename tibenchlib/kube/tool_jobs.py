"""A YCSB or TPC-C run whose clients are the pods of one Kubernetes Job (``ycsb.clients_job``,
``tpcc.clients_job``): go-ycsb or go-tpc, one per pod.

As the sweep's Job (:mod:`.sweep_job`): the pods wait for a common start ``start_lead_s``
ahead, the Job and its password Secret are deleted whatever happened (:func:`.runner.run_job`),
each pod's log is saved as ``raw/<phase>/<run>/pod<i>.log`` and each pod is recorded in
``run_hosts``. A failed pod fails the run with the runner's one line.

These functions only run the pods and hand back what each one did, as the phases' own
multi-client paths want it; the merge is the phase's: the ycsb phase's ``combine`` (counts
summed, no percentile averaged) and the tpcc phase's go-tpc figures (tpmC and counts summed).

- :func:`run_ycsb_job`: go-ycsb pods, each with the run's ``threadcount`` (YCSB's threads are
  per client);
- :func:`run_gotpc_job`: go-tpc pods sharing the run's threads
  (:func:`tibenchlib.clients.split_threads`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..clients import split_threads
from ..parse.gotpc import parse_tpcc_output
from ..parse.ycsb import parse_ycsb_file
from ..tools import Outcome, display_command
from ..tpcc.runner import gotpc_command
from ..ycsb.runner import YcsbRun, _mask_in_log, go_ycsb_command
from .sweep_job import host_rows, job_kubectl, launch_pods, pod_conn

__all__ = ["PodsRun", "run_gotpc_job", "run_ycsb_job"]


@dataclass
class PodsRun:
    """What a Job's pods did: each pod's outcome (by index; ``log_path`` its log), the Job's
    one-line failure (None when every pod succeeded), warnings and the Job's name."""

    name: str
    outcomes: list[Outcome]
    error: str | None
    warnings: list[str] = field(default_factory=list)


def _run_pods(
    ctx,
    cj,
    *,
    arm: str,
    run_key: str,
    tool: str,
    args: Sequence[str],
    threads: list[int],
    shares: bool,
    logs: list[Path],
    password: str | None,
    timeout_s: float,
    tps_of: Callable[[Path], float | None],
) -> PodsRun:
    """Run ``tool`` with ``args`` in ``cj.pods`` pods (pod ``i`` with ``threads[i]``, given
    as ``--threads=`` when ``shares``), save their logs as ``logs``, record ``run_hosts``."""
    kc = job_kubectl(ctx.study, arm, cj)
    p = launch_pods(
        ctx, cj, kc, run_key=run_key, tool=tool, args=list(args),
        shares=threads if shares else None, logs=logs, password=password, timeout_s=timeout_s,
    )  # fmt: skip
    for log in logs:
        _mask_in_log(log, password)  # go-ycsb prints its properties, the password among them
        if not log.exists():  # no log read back: an empty one, so the phase parses "no summary"
            log.touch()
    by_index, started, error = p.by_index, p.started, p.error
    tps = {i: tps_of(logs[i]) for i in p.read}
    rows = host_rows(by_index, threads, started, p.start_at, logs, tps)
    ctx.store.replace_run_rows("run_hosts", ctx.study.study, run_key, rows)
    outcomes = []
    for i in range(cj.pods):
        r = by_index.get(i)
        code = None if r is None or pd.isna(r["exit_code"]) else int(r["exit_code"])
        finished = None if r is None or pd.isna(r["finished"]) else float(r["finished"])
        outcomes.append(
            Outcome(
                returncode=code if code is not None else (1 if error else 0),
                log_path=logs[i],
                started_at=started.get(i, p.applied_at),
                finished_at=finished if finished is not None else p.ended_at,
            )
        )
    return PodsRun(p.name, outcomes, error, p.warnings)


def _job_note(cj, name: str, threads: list[int]) -> str:
    return (
        f"  ({cj.pods} pods of Job {name}, image {cj.image}, threads {'+'.join(map(str, threads))})"
    )


def run_ycsb_job(
    ctx, arm: str, run_key: str, workload, logs: list[Path], *, threads: int, timeout_s: float
) -> tuple[list[YcsbRun], list[str]]:
    """One YCSB run as a Job of go-ycsb pods, each with ``threads`` threads; returns each
    pod's run as :func:`tibenchlib.ycsb.runner.run_together` does (the first carries the
    Job's one-line failure) and the Job's warnings for the run."""
    cj = ctx.study.ycsb.clients_job
    cmd = go_ycsb_command("run", pod_conn(ctx.study, arm, ctx.conn, cj), workload, threads=threads)
    each = [threads] * cj.pods
    pr = _run_pods(
        ctx, cj, arm=arm, run_key=run_key, tool="go-ycsb", args=cmd[1:], threads=each,
        shares=False, logs=logs, password=ctx.conn.password, timeout_s=timeout_s,
        tps_of=lambda p: parse_ycsb_file(p).summary.get("throughput_ops_s"),
    )  # fmt: skip
    command = display_command(cmd) + _job_note(cj, pr.name, each)
    runs = [
        YcsbRun("go-ycsb", "run", threads, command, o, error=pr.error if i == 0 else None)
        for i, o in enumerate(pr.outcomes)
    ]
    return runs, pr.warnings


def _gotpc_tps(path: Path) -> float | None:
    s = parse_tpcc_output(path.read_text(errors="replace"), str(path)).summary
    return s["tpm_total"] / 60 if s.get("tpm_total") is not None else None


def run_gotpc_job(
    ctx, spec, conn, logs: list[Path], *, timeout_s: float
) -> tuple[list[Outcome], list[list[str]], str | None, list[str]]:
    """One TPC-C run (``spec``: warehouses, threads, wait) as a Job of go-tpc pods sharing the
    run's threads; returns each pod's outcome and command (password-free), the Job's one-line
    failure and its warnings, as the tpcc phase's go-tpc path merges them."""
    study = ctx.study
    p, cj = study.tpcc, study.tpcc.clients_job
    pconn = pod_conn(study, spec.arm, conn, cj)
    shares = split_threads(spec.threads, cj.pods)

    def command(n: int) -> list[str]:
        return gotpc_command(
            pconn, "run", warehouses=spec.warehouses, threads=n, time_s=p.duration_s,
            wait=spec.wait, interval_s=p.report_interval_s, tool=("go-tpc",),
        )  # fmt: skip

    base = command(1)
    t = base.index("-T")
    args = base[1:t] + base[t + 2 :]  # each pod's share comes as --threads=
    pr = _run_pods(
        ctx, cj, arm=spec.arm, run_key=spec.run_key, tool="go-tpc", args=args, threads=shares,
        shares=True, logs=logs, password=conn.password, timeout_s=timeout_s, tps_of=_gotpc_tps,
    )  # fmt: skip
    return pr.outcomes, [command(n) for n in shares], pr.error, pr.warnings

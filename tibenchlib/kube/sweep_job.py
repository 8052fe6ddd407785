"""A sweep run whose sysbench clients are the pods of one Kubernetes Job (``clients_job``).

:func:`run_on_job` is one run: the run's threads shared among the pods
(:func:`tibenchlib.clients.split_threads`, pod ``i`` gets share ``i``), the Job and its password
Secret built for the run key (:mod:`.job`) with a start barrier ``start_lead_s`` ahead, run and
deleted (:func:`.runner.run_job`), each pod's log saved as ``raw/sysbench/<run>/pod<i>.log``,
the logs merged like the SSH hosts' (:func:`tibenchlib.multiclient.merge_parsed`, each pod
aligned on its actual start) and each pod recorded in ``run_hosts`` (``host`` = ``pod<i>``, the
same client across repeats; ``destination`` = the pod's name and node). A failed pod fails the
run with the runner's one line; the Job and the Secret are deleted either way.

:func:`check_job` is the sweep's hook when an arm opens (kubectl present, before any run).
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .. import paths
from ..clients import split_threads
from ..multiclient import merge_parsed
from ..parse.sysbench import SysbenchResult, parse_sysbench_file
from ..sysbench.command import run_seeds, study_command
from ..tools import Outcome, display_command
from .job import START_MARK, job_labels, job_manifest, job_name, secret_manifest
from .kubectl import Kubectl, KubectlError
from .runner import JobFailed, run_job

__all__ = [
    "JobExtras",
    "PodsLaunch",
    "check_job",
    "host_rows",
    "job_kubectl",
    "job_logs",
    "launch_pods",
    "pod_conn",
    "pod_labels",
    "pod_starts",
    "run_on_job",
]

#: A pod that started this much after the agreed instant missed the barrier (a warning).
LATE_S = 1.0

_MARK = re.compile(rf"^{re.escape(START_MARK)} (\d+(?:\.\d+)?)", re.MULTILINE)


@dataclass
class JobExtras:
    """What a run on a Job adds to the run's record: warnings (no client-side samples: the
    pods' CPU is the cluster's to measure)."""

    samples: pd.DataFrame = field(default_factory=pd.DataFrame)
    warnings: list[str] = field(default_factory=list)


def pod_labels(pods: int) -> list[str]:
    """Each client's name across runs: ``pod0``, ``pod1``… (its log's name too)."""
    return [f"pod{i}" for i in range(pods)]


def job_logs(study, run_key: str) -> list[Path]:
    """Each pod's raw log of a run: ``raw/sysbench/<run>/pod<i>.log``."""
    labels = pod_labels(study.clients_job.pods)
    return paths.host_run_logs(study.study, "sysbench", run_key, labels)


def job_kubectl(study, arm_label: str, cj=None) -> Kubectl:
    """kubectl for the arm's cluster, in the Job's namespace (``cj``: a phase's
    ``clients_job``; default the sweep's)."""
    k8s = study.target_for(study.arm(arm_label)).kubernetes
    kc = Kubectl.for_target(k8s)
    ns = (cj or study.clients_job).namespace
    return dataclasses.replace(kc, namespace=ns) if ns else kc


def check_job(ctx, cj=None) -> None:
    """The hook when an arm opens: kubectl is there (else one line, nothing run)."""
    kc = job_kubectl(ctx.study, ctx.arm.label, cj)
    if kc.installed() is None:
        raise KubectlError(
            f"clients_job: {kc.binary} is not installed (not found on PATH); the Job needs it"
        )


def pod_conn(study, arm_label: str, conn, cj=None):
    """The connection the pods use: ``clients_job.endpoint``, the target's own address
    (``target``) or TiDB Operator's Service ``<cluster>-tidb.<namespace>.svc:4000``
    (``cj``: a phase's ``clients_job``; default the sweep's)."""
    ep = (cj or study.clients_job).endpoint
    if ep == "target":
        return conn
    if ep is None:
        k8s = study.target_for(study.arm(arm_label)).kubernetes
        ep = f"{k8s.cluster}-tidb.{k8s.namespace}.svc:4000"
    host, _, port = ep.rpartition(":")
    return dataclasses.replace(conn, host=host.strip("[]"), port=int(port))


def _actual_start(log: Path) -> float | None:
    """The pod's actual start as its wrapper printed it (:data:`.job.START_MARK`)."""
    try:
        with log.open(errors="replace") as f:
            head = f.read(4096)
    except OSError:
        return None
    m = _MARK.search(head)
    return float(m.group(1)) if m else None


@dataclass
class PodsLaunch:
    """What one Job's pods did, as a sweep run and a YCSB or TPC-C run read it: the Job's
    name, the agreed start, when it was applied and done, its one-line failure (None when every
    pod succeeded), warnings, the read logs' indexes, each pod's ``job_pods`` row by index and
    each read pod's actual start."""

    name: str
    start_at: int
    applied_at: float
    ended_at: float
    error: str | None
    warnings: list[str]
    read: list[int]
    by_index: dict[int, pd.Series]
    started: dict[int, float]


def launch_pods(
    ctx,
    cj,
    kc: Kubectl,
    *,
    run_key: str,
    tool: str,
    args: list[str],
    shares: list[int] | None,
    logs: list[Path],
    password: str | None,
    timeout_s: float,
    sampler=None,
    seeds: list[int] | None = None,
) -> PodsLaunch:
    """Run ``tool`` with ``args`` in ``cj.pods`` pods of one Job (pod ``i`` with
    ``--threads=shares[i]`` when ``shares``), its password in a Secret, a start barrier
    ``cj.start_lead_s`` ahead; save the logs as ``logs``; ``sampler`` runs meanwhile. The Job
    and the Secret are deleted whatever happened (:func:`.runner.run_job`)."""
    study = ctx.study
    name = job_name(study.study, run_key)
    labels = job_labels(study.study, run_key)
    start_at = math.ceil(time.time()) + cj.start_lead_s
    job = job_manifest(
        name=name,
        namespace=kc.namespace,
        tool=tool,
        image=cj.image,
        args=args,
        clients=cj.pods,
        secret=name,
        labels=labels,
        deadline_s=int(cj.start_lead_s + timeout_s),
        start_at=start_at,
        shares=shares,
        seeds=seeds,
    )
    secret = secret_manifest(name, kc.namespace, password, labels)
    error, warnings = None, []
    applied_at = time.time()
    if sampler is not None:
        sampler.start()
    try:
        out = run_job(
            kc,
            job=job,
            secret=secret,
            log_dir=logs[0].parent,
            log_paths=logs,
            timeout_s=cj.start_lead_s + timeout_s,
        )
    except JobFailed as e:
        error, out = str(e), e.outcome
    finally:
        if sampler is not None:
            sampler.stop()
    ended_at = time.time()
    pods = out.pods if out is not None else pd.DataFrame()
    if out is not None:
        warnings += out.warnings
    read = sorted(out.logs) if out is not None else []
    started = pod_starts(out, read, start_at, warnings)
    by_index = {int(r["index"]): r for _, r in pods.iterrows() if pd.notna(r["index"])}
    return PodsLaunch(
        name, start_at, applied_at, ended_at, error, warnings, read, by_index, started
    )


def run_on_job(ctx, spec, d: int, logs: list[Path], timeout: float, sampler):
    """One sweep run with its clients as a Job; returns ``(parsed, outcome, command, extras)``
    as the run's record wants them (see :func:`tibenchlib.sysbench.runner.run_one`)."""
    study, cj = ctx.study, ctx.study.clients_job
    kc = job_kubectl(study, spec.arm)
    shares = split_threads(spec.threads, cj.pods)
    argv = study_command(study, pod_conn(study, spec.arm, ctx.conn), spec.workload, 1, d, None)
    seeds = [s for s in run_seeds(study, spec, cj.pods) if s] or None  # one pod: sysbench's
    drop = ("--threads=", "--rand-seed=") if seeds else ("--threads=",)
    args = [a for a in argv[1:] if not a.startswith(drop)]
    extras = JobExtras()
    p = launch_pods(
        ctx, cj, kc, run_key=spec.run_key, tool="sysbench", args=args, shares=shares,
        seeds=seeds, logs=logs, password=ctx.conn.password, timeout_s=timeout, sampler=sampler,
    )  # fmt: skip
    extras.warnings += p.warnings
    each = {i: parse_sysbench_file(logs[i]) for i in p.read}
    started, by_index, error, name = p.started, p.by_index, p.error, p.name
    if each:
        parsed = merge_parsed([each[i] for i in p.read], [started[i] for i in p.read], logs)
    else:
        parsed = SysbenchResult(
            summary={"status": "failed", "error": error}, intervals=None, histogram=None
        )
    summary = parsed.summary
    summary["client_hosts"] = pod_labels(cj.pods)
    summary["start_spread_ms"] = (
        (max(started.values()) - min(started.values())) * 1000 if started else None
    )
    summary["kubernetes_job"] = {"name": name, "image": cj.image, "namespace": kc.namespace}
    codes = [by_index[i]["exit_code"] for i in sorted(by_index)]
    bad = [c for c in codes if pd.notna(c) and c != 0]
    returncode = int(bad[0]) if bad else (1 if error else 0)
    if error:
        summary["status"] = "failed"
        summary["error"] = error
    finished = [float(r["finished"]) for r in by_index.values() if pd.notna(r["finished"])]
    outcome = Outcome(
        returncode=returncode,
        log_path=logs[0],
        started_at=min(started.values()) if started else p.applied_at,
        finished_at=max(finished) if finished else p.ended_at,
    )
    tps = {i: each[i].summary.get("tps") for i in each}
    rows = host_rows(by_index, shares, started, p.start_at, logs, tps)
    ctx.store.replace_run_rows("run_hosts", study.study, spec.run_key, rows)
    command = display_command(["sysbench", *args]) + (
        f"  ({cj.pods} pods of Job {name}, image {cj.image}, threads {'+'.join(map(str, shares))})"
    )
    return parsed, outcome, command, extras


def pod_starts(out, read, start_at: int, warnings: list[str]) -> dict[int, float]:
    """Each read pod's actual start (its log's start line, else its container's start), with
    a warning for a pod that missed the barrier by more than :data:`LATE_S`."""
    started = {}
    for i in read:
        t = _actual_start(out.logs[i])
        if t is None:
            t = out.started.get(i, float(start_at))
            warnings.append(f"pod{i}: no start line in its log; its container's start used")
        started[i] = t
        if t - start_at > LATE_S:
            warnings.append(
                f"pod{i} started {t - start_at:.1f} s after the agreed start: raise "
                "clients_job.start_lead_s"
            )
    return started


def host_rows(by_index, shares, started, start_at, logs, tps) -> list[dict]:
    """The run's ``run_hosts`` rows, one per pod (``pod<i>``), ``tps`` by pod index."""
    rows = []
    for i, label in enumerate(pod_labels(len(shares))):
        r = by_index.get(i)
        pod = None if r is None else r["pod"]
        node = None if r is None or pd.isna(r["node"]) else r["node"]
        t = started.get(i)
        rows.append(
            {
                "host": label,
                "destination": f"{pod} on {node}" if node else pod,
                "threads": shares[i],
                "agreed_start": float(start_at),
                "started_at": t,
                "start_delay_ms": None if t is None else (t - start_at) * 1000,
                "finished_at": None if r is None or pd.isna(r["finished"]) else r["finished"],
                "returncode": None if r is None or pd.isna(r["exit_code"]) else r["exit_code"],
                "tps": tps.get(i),
                "log_path": str(logs[i]),
                "error": _pod_error(r, i in tps),
            }
        )
    return rows


def _pod_error(row, has_log: bool) -> str | None:
    if row is None:
        return "no pod"
    if row["phase"] != "Succeeded":
        code = "" if pd.isna(row["exit_code"]) else f", exit {int(row['exit_code'])}"
        return f"pod {row['pod']} {row['phase']}{code}" + ("" if has_log else ", no log")
    return None if has_log else "no log"

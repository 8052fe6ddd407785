"""One run's clients as a Kubernetes Job: apply, wait, read every pod's log, delete.

:func:`run_job` sends the Secret and the Job (:mod:`tibenchlib.kube.job`) to ``kubectl apply
-f -`` on standard input, waits for the Job to complete or fail (two ``kubectl wait`` calls, one
per condition, whichever answers first), lists its pods, saves each pod's ``kubectl logs`` under
the run's log folder, and deletes the Job and the Secret whatever happened: success, a failed
pod, a timeout, an error, Ctrl-C or SIGTERM (turned into ``KeyboardInterrupt`` while the Job
runs). A failed run raises :class:`JobFailed` with one line naming the pods, after every log
was saved.

:func:`merge_sysbench` hands the saved logs to sysbench's parser and the per-client merge
(:func:`tibenchlib.multiclient.merge_parsed`): intervals aligned on the pods' start times,
histograms merged.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import yaml

from ..multiclient import merge_parsed
from ..parse.sysbench import SysbenchResult, parse_sysbench_file
from .kubectl import Kubectl, KubectlError
from .resources import job_pods, load_objects

log = logging.getLogger(__name__)

__all__ = ["JobFailed", "JobOutcome", "merge_sysbench", "run_job"]


class JobFailed(RuntimeError):
    """The Job failed or timed out; the message is one line, the logs are saved
    (``outcome``: what the Job left, None when its pods could not be listed)."""

    def __init__(self, message: str, outcome: JobOutcome | None = None):
        super().__init__(message)
        self.outcome = outcome


@dataclass
class JobOutcome:
    """What a Job left: its pods (:func:`tibenchlib.kube.resources.job_pods`), each client's
    saved log and start (epoch seconds) by index, and warnings that travel with the run."""

    name: str
    pods: pd.DataFrame
    logs: dict[int, Path]
    started: dict[int, float]
    warnings: list[str] = field(default_factory=list)


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


@contextlib.contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    """SIGTERM raises ``KeyboardInterrupt`` meanwhile (as tibench's command line does), so the
    ``finally`` that deletes the Job runs; a handler someone else set is left alone."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.getsignal(signal.SIGTERM)
    if old is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        if old is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, old)


def _wait(kubectl: Kubectl, name: str, timeout_s: float, poll_s: float) -> str:
    """``complete``, ``failed`` or ``timeout``: whichever ``kubectl wait`` answers first."""
    t = f"--timeout={max(1, int(timeout_s))}s"
    procs = {
        cond: kubectl.start(["wait", f"job/{name}", f"--for=condition={cond}", t])
        for cond in ("complete", "failed")
    }
    try:
        while True:
            done = {c: p.returncode for c, p in procs.items() if p.poll() is not None}
            for cond in ("complete", "failed"):
                if done.get(cond) == 0:
                    return cond
            if len(done) == len(procs):
                return "timeout"
            time.sleep(poll_s)
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.terminate()
            with contextlib.suppress(Exception):
                p.communicate(timeout=5)


def _delete(kubectl: Kubectl, name: str) -> None:
    for kind in ("job", "secret"):
        try:
            kubectl.run(["delete", kind, name, "--ignore-not-found", "--wait=false"])
        except KubectlError as e:
            log.warning("could not delete %s/%s: %s (delete it by hand)", kind, name, e)


def _container(job: dict) -> str:
    return job["spec"]["template"]["spec"]["containers"][0]["name"]


def _check_no_password(job: dict, password: str | None) -> None:
    if not password:
        return
    c = job["spec"]["template"]["spec"]["containers"][0]
    if any(password in str(a) for a in [*c.get("command", []), *c.get("args", [])]):
        raise ValueError("args: the password is in the Job's arguments; it comes from the Secret")


def _assign(pods: pd.DataFrame, n: int, warnings: list[str]) -> dict[int, pd.Series]:
    """Client index → its pod. A pod without a completion index takes the next free index in
    name order, with a warning (an API older than Indexed Jobs' annotation)."""
    by_index: dict[int, pd.Series] = {}
    for _, row in pods.iterrows():
        if pd.notna(row["index"]):
            by_index.setdefault(int(row["index"]), row)
    free = [i for i in range(n) if i not in by_index]
    for _, row in pods[pods["index"].isna()].iterrows():
        if not free:
            break
        i = free.pop(0)
        by_index[i] = row
        warnings.append(f"pod {row['pod']} has no completion index: taken as client {i}")
    return by_index


def run_job(
    kubectl: Kubectl,
    *,
    job: dict,
    secret: dict,
    log_dir: str | Path,
    timeout_s: float,
    poll_s: float = 1.0,
    log_paths: list[Path] | None = None,
) -> JobOutcome:
    """Run the Job, save every pod's log as ``<log_dir>/<job>-<index>.log`` (or as
    ``log_paths[index]``), delete the Job and its Secret, and return what it left.

    Raises :class:`JobFailed` when the Job failed, timed out or lacks a client's pod (after
    the logs were saved), :class:`KubectlError` when kubectl could not be run, and
    ``ValueError`` when the password is in the Job's arguments (nothing is applied then).
    """
    name, n = job["metadata"]["name"], int(job["spec"]["completions"])
    _check_no_password(job, (secret.get("stringData") or {}).get("password"))
    log_dir = Path(log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    warnings: list[str] = []
    with _sigterm_unwinds():
        try:
            kubectl.run(["apply", "-f", "-"], stdin=yaml.safe_dump_all([secret, job]))
            state = _wait(kubectl, name, timeout_s + 60, poll_s)
            pods = job_pods(
                load_objects(
                    kubectl.run(["get", "pods", "-l", f"job-name={name}", "-o", "yaml"]),
                    f"kubectl get pods -l job-name={name}",
                )
            )
            by_index = _assign(pods, n, warnings)
            logs: dict[int, Path] = {}
            container = _container(job)
            for i, row in sorted(by_index.items()):
                path = log_paths[i] if log_paths else log_dir / f"{name}-{i}.log"
                path.parent.mkdir(parents=True, exist_ok=True)
                try:
                    path.write_text(kubectl.run(["logs", str(row["pod"]), "-c", container]))
                    logs[i] = path
                except KubectlError as e:
                    warnings.append(f"client {i} (pod {row['pod']}): no log: {e}")
            missing = [i for i in range(n) if i not in logs]
            started = {}
            for i, row in by_index.items():
                if pd.notna(row["started"]):
                    started[i] = float(row["started"])
                else:
                    warnings.append(f"pod {row['pod']}: no start time")
            outcome = JobOutcome(name, pods, logs, started, warnings)
            if state != "complete" or missing:
                bad = [
                    f"{r['pod']} ({r['phase']}, exit {r['exit_code']})"
                    for r in by_index.values()
                    if r["phase"] != "Succeeded"
                ]
                why = {"failed": "failed", "timeout": f"did not finish in {timeout_s:g} s"}.get(
                    state, "completed"
                )
                raise JobFailed(
                    f"Job {name} {why}"
                    + (f"; pods not succeeded: {', '.join(bad)}" if bad else "")
                    + (f"; no log for client(s) {missing}" if missing else "")
                    + f"; logs in {log_dir}",
                    outcome,
                )
            return outcome
        finally:
            _delete(kubectl, name)


def merge_sysbench(outcome: JobOutcome) -> SysbenchResult:
    """The Job's sysbench logs parsed and merged into the run's result. A pod without a start
    time is aligned with the earliest one (and ``outcome.warnings`` says so)."""
    idx = sorted(outcome.logs)
    first = min(outcome.started.values(), default=0.0)
    parsed = [parse_sysbench_file(outcome.logs[i]) for i in idx]
    return merge_parsed(
        parsed, [outcome.started.get(i, first) for i in idx], [outcome.logs[i] for i in idx]
    )

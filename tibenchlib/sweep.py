"""Workload sweeps: sysbench workloads × thread ladder × repeats, resumable.

Each run keeps its raw log and exact command (no password), is checked for failure and
degeneracy, and lands in the catalog as soon as it finishes. Running the study again skips runs
already in the catalog unless ``redo``; a run cut short by a kill is simply run again.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from . import paths
from .db import secret_config_file
from .params import WRITE_WORKLOADS, Study
from .record import RunRecord
from .run import display_command, execute, sysbench_command
from .runloop import run_plan
from .store import Store
from .sysbench.record import record_from_parsed

log = logging.getLogger(__name__)

#: Seconds a run costs beyond its configured duration (connect, thread start, report).
RUN_OVERHEAD_S = 1.0


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


def plan(
    study: Study,
    *,
    arms: list[str] | None = None,
    workloads: list[str] | None = None,
    threads: list[int] | None = None,
    repeats: int | None = None,
) -> list[RunSpec]:
    """The runs of a sweep, in execution order.

    ``interleaved`` (default) runs the whole ladder once per repeat (a round), every arm in each
    round, so slow drift in the machine spreads over every thread count and arm instead of
    biasing one; the arms' order changes from round to round (:func:`arm_order`: rotated and
    reversed, balanced for position and for the arm that ran just before), so no arm always
    runs first or always follows the same arm, and the rounds can serve as blocks for a paired
    comparison. ``random`` shuffles the arms' order
    and the workloads × threads within each round (seeded). ``sequential`` is the reports' shell
    loop: each cell's repeats back to back.
    """
    arm_labels = arms or [a.label for a in study.arms]
    wls = workloads or list(study.workloads)

    def ths(w: str) -> list[int]:
        return threads or study.threads_for(w)

    reps = range(1, (repeats or study.repeats) + 1)
    rng = random.Random(study.seed)
    out: list[tuple[str, str, int, int]] = []
    if study.order == "sequential":
        out = [(a, w, t, r) for a in arm_labels for w in wls for t in ths(w) for r in reps]
    else:
        for r in reps:
            in_round = arm_order(arm_labels, r)
            if study.order == "random":
                rng.shuffle(in_round)
            for a in in_round:
                cells = [(a, w, t, r) for w in wls for t in ths(w)]
                if study.order == "random":
                    rng.shuffle(cells)
                out += cells
    return [RunSpec(a, w, t, r, i) for i, (a, w, t, r) in enumerate(out)]


def arm_order(labels: list[str], round_no: int) -> list[str]:
    """The arms' order in round ``round_no`` (1-based) of an interleaved sweep.

    Rounds 1, 3, 5, ... rotate the params' order by 0, 1, 2, ...; rounds 2, 4, 6, ... run the
    reverse of that rotation.  Over 2 x (number of arms) rounds every arm takes every position
    equally often and follows every other arm equally often (a Williams design), so neither the
    slot after an arm switch nor what the previous arm left behind (dirty pages, a full redo log)
    favours one arm; round 1 runs in the params' order.
    """
    k = ((round_no - 1) // 2) % len(labels)
    rotated = labels[k:] + labels[:k]
    return rotated if round_no % 2 else rotated[::-1]


def estimate(study: Study, specs: list[RunSpec], duration_s: float | None = None) -> dict:
    """ETA and disk estimate of a plan (logs: ~130 bytes a second, histogram ~40 KB a run)."""
    d = duration_s or study.duration_s
    secs = len(specs) * (d + RUN_OVERHEAD_S) + max(len(specs) - 1, 0) * study.cooldown_s
    if study.warmup_s:
        # unrecorded warm-up runs per workload each time an arm is (re)opened: at least two
        # short ones (they must agree), one of 20 s or more (MSER-5 can judge it alone)
        switches = sum(1 for i, s in enumerate(specs) if i == 0 or s.arm != specs[i - 1].arm)
        per = 1 if study.warmup_s >= 20 else min(2, study.warmup_max_runs)
        secs += switches * len(study.workloads) * per * (study.warmup_s + RUN_OVERHEAD_S)
    per_log = 130 * d / study.report_interval_s + (40_000 if study.histogram else 2_000)
    return {"runs": len(specs), "eta_s": secs, "disk_bytes": int(len(specs) * per_log)}


def phase_estimate(study: Study, arms: list[str] | None = None) -> dict:
    """Dry-run entry of the sweep phase, its planned runs under ``specs``."""
    specs = plan(study, arms=arms)
    est = estimate(study, specs)
    return {
        "runs": len(specs),
        "eta_s": est["eta_s"],
        "disk_bytes": est["disk_bytes"],
        "note": f"{len(specs)} runs of {study.duration_s} s, cooldown {study.cooldown_s:g} s",
        "specs": specs,
    }


def log_path(study: str, spec: RunSpec) -> Path:
    return paths.raw_dir(study, "sysbench") / (spec.run_key.replace("/", "__") + ".log")


def earlier_attempts(path: Path) -> list[Path]:
    """The logs of earlier attempts of a run, set aside as ``<name>.attempt<N>.log``."""
    return sorted(
        path.parent.glob(f"{path.stem}.attempt*.log"),
        key=lambda p: int(p.stem.rsplit("attempt", 1)[1] or 0),
    )


def set_aside(path: Path) -> int:
    """Move an existing log at ``path`` to the next ``.attempt<N>.log`` (a failed attempt, a run
    re-measured with ``--redo``, or a log the catalog does not know): raw logs are never
    overwritten. Returns this attempt's number (1 for a first run)."""
    earlier = earlier_attempts(path)
    n = len(earlier)
    if path.exists():
        n += 1
        dest = path.with_name(f"{path.stem}.attempt{n}.log")
        path.rename(dest)
        log.info("earlier log of this run kept as %s", dest)
    return n + 1


def study_command(
    study: Study,
    conn,
    workload: str,
    threads: int,
    time_s: int,
    config_file,
    *,
    report: bool = True,
) -> list[str]:
    """The sysbench command of one run of ``study`` (``report=False``: a warm-up run without
    report interval, percentile or histogram)."""
    extra = (
        {
            "report_interval_s": study.report_interval_s,
            "percentile": study.percentile,
            "histogram": study.histogram,
        }
        if report
        else {}
    )
    return sysbench_command(
        workload,
        conn,
        tables=study.dataset.tables,
        table_size=study.dataset.table_size,
        threads=threads,
        time_s=time_s,
        rand_type=study.rand_type,
        extra=study.extra_args,
        config_file=config_file,
        **extra,
    )


def run_one(
    ctx, spec: RunSpec, *, duration_s: int | None = None, sample: bool | None = None
) -> RunRecord:
    """Run one sysbench run on an open arm and record it. Returns its record."""
    from .parse.sysbench import parse_sysbench_file

    study = ctx.study
    d = duration_s or study.duration_s
    path = log_path(study.study, spec)
    attempt = set_aside(path)
    timeout = study.run_timeout_s or d * 1.5 + 60
    sampler = _sampler(ctx) if (study.sample_resources if sample is None else sample) else None

    def started(pid: int) -> None:
        if sampler is not None:
            sampler.watch("client", pid)
            sampler.t0 = time.time()
            sampler.start()

    with secret_config_file(ctx.conn, paths.private_dir(study.study)) as cfg:
        cmd = study_command(study, ctx.conn, spec.workload, spec.threads, d, cfg)
        try:
            outcome = execute(cmd, path, timeout_s=timeout, on_start=started)
        finally:
            if sampler is not None:
                sampler.stop()
    parsed = parse_sysbench_file(path)
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
        command=display_command(cmd),
        expected_s=d,
        interval_s=study.report_interval_s,
    )
    rec.attempts = attempt
    if sampler is not None:
        samples = sampler.samples
        rec.warnings += sampler.warnings
        from .sampler import client_bottleneck

        cb = client_bottleneck(samples)
        if cb["warning"] and cb["n"]:
            rec.warnings.append(cb["warning"])
    if study.prometheus_url:
        from .prometheus import collect_run_metrics

        metrics, warns = collect_run_metrics(
            study.prometheus_url, outcome.started_at, outcome.finished_at
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


def warmup_runs(ctx) -> pd.DataFrame:
    """Warm up an arm just opened (server start or arm switch) until throughput is steady.

    Per workload, at its largest thread count: sysbench runs of ``warmup_s`` seconds reporting
    every second, until :func:`tibenchlib.warmup.steady_after` calls the throughput steady or
    ``warmup_max_runs`` runs were made. Nothing here enters the sweep's statistics; every
    warm-up run is recorded in the catalog's ``warmups`` table. Returns this opening's rows.
    """
    from .parse.sysbench import parse_sysbench_file
    from .warmup import steady_after

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
            name = f"o{opening}__{spec.run_key.replace('/', '__')}.log"
            path = paths.raw_dir(study.study, "warmup") / name
            with secret_config_file(ctx.conn, paths.private_dir(study.study)) as cfg:
                cmd = sysbench_command(
                    w,
                    ctx.conn,
                    tables=study.dataset.tables,
                    table_size=study.dataset.table_size,
                    threads=threads,
                    time_s=seconds,
                    rand_type=study.rand_type,
                    extra=study.extra_args,
                    config_file=cfg,
                    report_interval_s=1,
                )
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
            log.warning(
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
    from .sampler import ProcessSampler

    server_pid = ctx.server.pid if ctx.server else None
    return ProcessSampler({"server": server_pid} if server_pid else {})


def sweep(
    study: Study,
    *,
    arms: list[str] | None = None,
    redo: bool = False,
    yes: bool = False,
    progress: bool = True,
    store: Store | None = None,
) -> pd.DataFrame:
    """Run (or resume) the study's sweep; returns the catalog's runs of the planned cells.

    Runs already in the catalog are skipped, except failed and degenerate ones, which are run
    again (their logs kept as earlier attempts); ``redo`` re-measures every run (the loop:
    :func:`tibenchlib.runloop.run_plan`).
    """
    from .prepare import ensure_ready, prepare
    from .target import open_arm

    if store is None:
        store = Store.for_study(study, record=True)
    else:
        store.record_study(study.study, study.public_dump())
    specs = plan(study, arms=arms)

    def open_ready(spec: RunSpec, _previous):
        ctx = open_arm(study, spec.arm, yes=yes, store=store)
        ensure_ready(ctx)
        if study.warmup_s:
            warmup_runs(ctx)
        return ctx

    def reprepare(ctx, spec: RunSpec) -> None:
        if study.dataset.reset == "reprepare" and spec.workload in WRITE_WORKLOADS:
            prepare(ctx, force=True, progress=False)

    run_plan(
        study,
        specs,
        store=store,
        open=open_ready,
        run=run_one,
        before_run=reprepare,
        redo=redo,
        yes=yes,
        progress=progress,
        cooldown_s=study.cooldown_s,
        requires=("sysbench",),
        desc=f"sweep {study.study}",
        describe=describe,
    )
    df = store.runs(study.study)
    keys = {s.run_key for s in specs}
    return df[df["run_key"].isin(keys)].reset_index(drop=True) if len(df) else df


def sweep_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The reports' table per workload × arm × threads, each figure with its interval.

    Estimator: the mean over repeated runs of sysbench's own per-run figures (TPS, QPS, average
    latency) and of the histogram p95, each with a Student t 95% interval (df = n − 1) on the
    log scale, back-transformed, so no bound is negative; n = 1 gives no interval. Failed and
    degenerate runs are counted (``n_failed``), never averaged.
    """
    from .stats import summarize_cells

    keys = ["workload", "arm", "threads"]
    out = None
    for metric in ("tps", "qps", "lat_avg_ms", "lat_p95_ms"):
        if metric not in runs or runs[metric].isna().all():
            continue
        c = summarize_cells(runs, metric=metric)
        cols = {"mean": metric, "ci_low": f"{metric}_ci_low", "ci_high": f"{metric}_ci_high"}
        keep = keys + list(cols)
        if out is None:
            keep += ["n"] + [k for k in ("n_failed", "cv", "warnings") if k in c]
        c = c[keep].rename(columns=cols)
        out = c if out is None else out.merge(c, on=keys, how="outer")
    if out is None:
        return pd.DataFrame(columns=keys)
    return out.sort_values(keys).reset_index(drop=True)

"""Workload sweeps: sysbench workloads × thread ladder × repeats, resumable.

Each run keeps its raw log and exact command (no password), is checked for failure and
degeneracy, and lands in the catalog as soon as it finishes. Running the study again skips runs
already in the catalog unless ``redo``; a run cut short by a kill is simply run again.
"""

from __future__ import annotations

import json
import logging
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.std import tqdm  # text bars: a saved notebook shows them, widgets would not

from . import paths
from .db import remove_stale_configs, secret_config_file
from .lock import study_lock
from .params import WRITE_WORKLOADS, Study
from .run import display_command, execute, require, sysbench_command
from .store import Store

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


def log_path(study: str, spec: RunSpec) -> Path:
    return paths.study_dir(study) / "raw" / "sysbench" / (spec.run_key.replace("/", "__") + ".log")


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


# -- checks ------------------------------------------------------------------------------------
def check_run(summary: dict, iv: pd.DataFrame, expected_s: float | None, interval_s: float):
    """Status and warnings of one parsed run.

    Returns ``(status, error, warnings)``: status is "ok", "failed" (sysbench said so, or no
    summary) or "degenerate" (sysbench finished but the run cannot be trusted: zero throughput,
    latency flat at 0, or far fewer intervals than configured).
    """
    warnings: list[str] = []
    if summary.get("status") != "ok":
        error = summary.get("error") or "failed"
        # sysbench's first FATAL is often the generic "unable to connect"; the server's own
        # error ("error 1045: Access denied ...") is what a DBA needs to see.
        server_err = next((f for f in summary.get("fatal") or [] if f.startswith("error ")), None)
        if server_err and server_err not in error:
            error = f"{error} ({server_err})"
        return "failed", error, warnings
    tps = summary.get("tps") or 0.0
    if tps <= 0 or not summary.get("events"):
        return "degenerate", "zero throughput: no transaction completed", warnings
    if len(iv) and "tps" in iv:
        zero = int((iv["tps"] <= 0).sum())
        if zero:
            warnings.append(f"{zero} of {len(iv)} intervals had zero TPS")
        if zero > 0.1 * len(iv):
            return "degenerate", f"stalled: {zero} of {len(iv)} intervals had zero TPS", warnings
        if "lat_ms" in iv and iv["lat_ms"].notna().any() and (iv["lat_ms"].fillna(0) == 0).all():
            return "degenerate", "latency flat at 0 in every interval", warnings
        mean = iv["tps"].mean()
        if len(iv) > 2 and mean > 0:
            cv = iv["tps"].std(ddof=1) / mean
            if cv > 0.25:
                warnings.append(f"interval TPS varies by {cv:.0%} (CV) within the run")
    if expected_s and interval_s:
        want = int(expected_s // interval_s)
        # sysbench 1.0 often drops a run's last report line: one missing line is normal
        if want >= 3 and len(iv) < min(0.8 * want, want - 1):
            return "degenerate", f"aborted: {len(iv)} of {want} intervals reported", warnings
    if summary.get("errors"):
        warnings.append(f"{summary['errors']:g} ignored errors")
    if summary.get("reconnects"):
        warnings.append(f"{summary['reconnects']:g} reconnects")
    return "ok", None, warnings


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


def run_row(
    study: Study, spec: RunSpec, parsed, outcome, cmd: list[str], duration_s: float | None = None
) -> tuple[dict, pd.DataFrame]:
    """The catalog row of one run from its parsed log (pure apart from the parser's result)."""
    from .parse.sysbench import histogram_percentiles

    s = parsed.summary
    iv = parsed.intervals if parsed.intervals is not None else pd.DataFrame()
    expected = duration_s or study.duration_s
    status, error, warnings = check_run(s, iv, expected, study.report_interval_s)
    if outcome.timed_out:
        status, error = "failed", f"timeout after {outcome.wall_s:.0f} s"
    elif outcome.missing:
        status, error = "failed", f"{outcome.missing} is not installed"
    elif outcome.returncode not in (0, None):
        # e.g. a segfault (139) leaves a log without FATAL and without a summary
        status = "failed"
        error = f"{error + '; ' if error else ''}sysbench exited {outcome.returncode}"
    lat = s.get("latency_ms") or {}
    pct = {}
    hist = getattr(parsed, "histogram", None)
    if hist is not None and len(hist):
        pct = histogram_percentiles(hist, (50, 90, 95, 99, 99.9))
    p95 = pct.get(95)
    if p95 is None and s.get("percentile") == 95:
        p95 = lat.get("percentile_value")
    row = {
        "study": study.study,
        "run_key": spec.run_key,
        "phase": spec.phase,
        "arm": spec.arm,
        "workload": spec.workload,
        "threads": spec.threads,
        "repeat": spec.repeat,
        "seq": spec.seq,
        "status": status,
        "error": error,
        "tps": s.get("tps"),
        "qps": s.get("qps"),
        "events": s.get("events"),
        "total_time_s": s.get("total_time_s"),
        "lat_min_ms": lat.get("min"),
        "lat_avg_ms": lat.get("avg"),
        "lat_max_ms": lat.get("max"),
        "percentile": s.get("percentile"),
        "lat_pct_ms": lat.get("percentile_value"),
        "lat_p50_ms": pct.get(50),
        "lat_p90_ms": pct.get(90),
        "lat_p95_ms": p95,
        "lat_p99_ms": pct.get(99),
        "lat_p999_ms": pct.get(99.9),
        "errors": s.get("errors"),
        "reconnects": s.get("reconnects"),
        "n_intervals": len(iv),
        "warnings_json": json.dumps(warnings),
        "command": display_command(cmd),
        "log_path": str(outcome.log_path),
        "started_at": outcome.started_at,
        "finished_at": outcome.finished_at,
        "wall_s": outcome.wall_s,
        "summary_json": json.dumps(s, default=str),
    }
    return row, iv


def run_one(ctx, spec: RunSpec, *, duration_s: int | None = None, sample: bool | None = None):
    """Run one sysbench run on an open arm and record it. Returns the catalog row."""
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
    row, iv = run_row(study, spec, parsed, outcome, cmd, duration_s=d)
    row["attempts"] = attempt
    if sampler is not None:
        samples = sampler.samples
        warnings = json.loads(row["warnings_json"]) + sampler.warnings
        from .sampler import client_bottleneck

        cb = client_bottleneck(samples)
        if cb["warning"] and cb["n"]:
            warnings.append(cb["warning"])
        row["warnings_json"] = json.dumps(warnings)
    if study.prometheus_url:
        from .prometheus import collect_run_metrics

        metrics, warns = collect_run_metrics(
            study.prometheus_url, outcome.started_at, outcome.finished_at
        )
        row["warnings_json"] = json.dumps(json.loads(row["warnings_json"]) + warns)
        if len(metrics):
            ctx.store.append(
                "cluster_metrics", metrics.assign(study=study.study, run_key=spec.run_key)
            )
    ctx.store.record_run(row, iv)
    if sampler is not None and len(samples):
        ctx.store.append("samples", samples.assign(study=study.study, run_key=spec.run_key))
    return row


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
            path = (
                paths.study_dir(study.study)
                / "raw"
                / "warmup"
                / f"o{opening}__{spec.run_key.replace('/', '__')}.log"
            )
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


def progress_line(done: int, total: int, t0: float, row: dict) -> None:
    """One plain line per finished run on stderr, for batch runs without a progress bar
    (papermill forwards it to the terminal and keeps it in the executed notebook)."""
    elapsed = time.monotonic() - t0
    eta = f", ETA {(total - done) * elapsed / done / 60:.1f} min" if done else ""
    tps = f"{row['tps']:.0f} TPS" if row.get("tps") else row["status"]
    print(f"run {done}/{total} {row['run_key']}: {tps}{eta}", file=sys.stderr, flush=True)


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
    retry_failed: bool = False,
    yes: bool = False,
    progress: bool = True,
    store: Store | None = None,
) -> pd.DataFrame:
    """Run (or resume) the study's sweep; returns the catalog's runs of the planned cells.

    Runs already in the catalog are skipped, except failed and degenerate ones, which are run
    again (their logs kept as earlier attempts); ``redo`` re-measures every run.
    ``retry_failed`` is accepted for compatibility: retrying is the default.
    """
    from .prepare import ensure_ready, prepare
    from .target import open_arm

    if store is None:
        store = Store.for_study(study, record=True)
    else:
        store.record_study(study.study, study.public_dump())
    specs = plan(study, arms=arms)
    with study_lock(study.study):
        todo = runs_to_do(store, study.study, specs, redo=redo)
        est = estimate(study, todo)
        log.info(
            "sweep: %d runs planned, %d to do, ETA %.0f s", len(specs), len(todo), est["eta_s"]
        )
        if todo:
            require("sysbench")
        remove_stale_configs(paths.private_dir(study.study))
        alive = AliveCheck()
        ctx = None
        bar = tqdm(total=len(todo), desc=f"sweep {study.study}", disable=not progress, unit="run")
        t_start = time.monotonic()
        last_end = None
        for k, spec in enumerate(todo, start=1):
            if ctx is None or ctx.arm.label != spec.arm:
                ctx = open_arm(study, spec.arm, yes=yes, store=store)
                ensure_ready(ctx)
                if study.warmup_s:
                    warmup_runs(ctx)
            if study.dataset.reset == "reprepare" and spec.workload in WRITE_WORKLOADS:
                prepare(ctx, force=True, progress=False)
            if last_end is not None and study.cooldown_s:
                # counted from the end of the previous run, across arm switches too
                time.sleep(max(0.0, study.cooldown_s - (time.time() - last_end)))
            ctx = alive.check(ctx, spec, len(todo) - k + 1, yes=yes)
            bar.set_postfix_str(f"{spec.arm} {spec.workload} t={spec.threads} r={spec.repeat}")
            row = run_one(ctx, spec)
            last_end = row["finished_at"]
            if row["status"] != "ok":
                log.warning("%s: %s: %s", spec.run_key, row["status"], row["error"])
            bar.update(1)
            if not progress:
                progress_line(k, len(todo), t_start, row)
        bar.close()
    df = store.runs(study.study)
    keys = {s.run_key for s in specs}
    return df[df["run_key"].isin(keys)].reset_index(drop=True) if len(df) else df


def runs_to_do(store: Store, study: str, specs: list[RunSpec], *, redo: bool = False):
    """The planned runs still to measure: not in the catalog, or there as failed/degenerate."""
    done = store.run_status(study)
    todo = [s for s in specs if redo or done.get(s.run_key, "failed") != "ok"]
    retried = sum(1 for s in todo if s.run_key in done and not redo)
    if retried:
        log.info("%d failed or degenerate runs will be run again", retried)
    return todo


class TargetDown(RuntimeError):
    """The database stopped answering in the middle of a phase."""


class AliveCheck:
    """Before each run: is the server there? A dead embedded server is restarted once per phase
    (the end of its error log shown); a dead external target stops the phase."""

    def __init__(self) -> None:
        self.restarted = False

    def check(self, ctx, spec: RunSpec, left: int, *, yes: bool = False):
        if ctx is None:
            return ctx
        if ctx.server is not None:
            if ctx.server.pid is not None:
                return ctx
            tail = ctx.server._log_tail(10)
            if self.restarted:
                raise TargetDown(
                    f"the embedded MariaDB died again before run {spec.run_key} ({left} runs "
                    f"left, already restarted once); end of {ctx.server.error_log}: "
                    + " | ".join(tail.splitlines()[-3:])
                )
            log.warning(
                "the embedded MariaDB is not running before run %s: restarting it once; "
                "end of %s:\n%s",
                spec.run_key,
                ctx.server.error_log,
                tail,
            )
            self.restarted = True
            from .target import open_arm

            return open_arm(ctx.study, ctx.arm, yes=yes, store=ctx.store)
        import sqlalchemy as sa

        eng = ctx.conn.engine(database="", connect_args={"connect_timeout": 5})
        try:
            with eng.connect() as c:
                c.exec_driver_sql("SELECT 1")
        except sa.exc.DBAPIError as e:
            raise TargetDown(
                f"{ctx.conn.masked_url()} stopped answering before run {spec.run_key} "
                f"({left} runs left, not started): {e.orig}; run the same command again to "
                "resume when it is back"
            ) from None
        finally:
            eng.dispose()
        return ctx


def sweep_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The reports' table per workload × arm × threads, each figure with its interval.

    Estimator: the mean over repeated runs of sysbench's own per-run figures (TPS, QPS, average
    latency) and of the histogram p95, each with a Student t 95% interval (df = n − 1); n = 1
    gives no interval. Failed and degenerate runs are counted (``n_failed``), never averaged.
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


def cells(runs: pd.DataFrame) -> pd.DataFrame:
    """The reports' table per workload × arm × threads: mean TPS, QPS, avg and p95 latency."""
    ok = runs[runs["status"] == "ok"]
    g = ok.groupby(["workload", "arm", "threads"])
    out = g.agg(
        n=("tps", "size"),
        tps=("tps", "mean"),
        qps=("qps", "mean"),
        lat_avg_ms=("lat_avg_ms", "mean"),
        lat_p95_ms=("lat_p95_ms", "mean"),
    ).reset_index()
    failed = runs[runs["status"] != "ok"].groupby(["workload", "arm", "threads"]).size()
    out["n_failed"] = [int(failed.get((r.workload, r.arm, r.threads), 0)) for r in out.itertuples()]
    return out.replace({np.nan: None})

"""A parsed sysbench run checked and turned into a :class:`~tibenchlib.record.RunRecord`.

The status rule (:func:`tibenchlib.record.decide_status`) and the percentile rule
(:func:`tibenchlib.record.p95_rule`) are applied here, once, for the sweep, the NUMA phase and
``tibench compare`` over log directories alike.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..parse.sysbench import histogram_percentiles
from ..record import RunRecord, outcome_status, p95_rule

#: Percentiles read from the histogram into the record.
PERCENTILES = (50, 90, 95, 99, 99.9)


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


def record_from_parsed(
    parsed,
    *,
    study: str,
    run_key: str,
    phase: str = "sweep",
    arm: str | None = None,
    workload: str | None = None,
    threads: int | None = None,
    repeat: int | None = None,
    seq: int | None = None,
    outcome=None,
    command: str | None = None,
    expected_s: float | None = None,
    interval_s: float | None = None,
    log_path: str | Path | None = None,
) -> tuple[RunRecord, pd.DataFrame]:
    """The record of one parsed sysbench log and its intervals (pure apart from the parse).

    ``outcome`` (:class:`tibenchlib.tools.Outcome`) is how the process ended; None for a log read
    from disk, whose exit is unknown. ``workload``/``threads`` default to what the log prints.
    """
    s = parsed.summary
    iv = parsed.intervals if parsed.intervals is not None else pd.DataFrame()
    checked = check_run(s, iv, expected_s, interval_s)
    status, error = outcome_status(checked[:2], outcome, "sysbench")
    lat = s.get("latency_ms") or {}
    hist = getattr(parsed, "histogram", None)
    pct = histogram_percentiles(hist, PERCENTILES) if hist is not None and len(hist) else {}
    p95 = p95_rule(pct, s.get("percentile"), lat.get("percentile_value"))
    if threads is None and s.get("threads") is not None:
        threads = int(s["threads"])
    rec = RunRecord(
        study=study,
        run_key=run_key,
        phase=phase,
        arm=arm,
        workload=workload if workload is not None else s.get("workload"),
        threads=threads,
        repeat=repeat,
        seq=seq,
        status=status,
        error=error,
        tps=s.get("tps"),
        qps=s.get("qps"),
        events=s.get("events"),
        total_time_s=s.get("total_time_s"),
        lat_min_ms=lat.get("min"),
        lat_avg_ms=lat.get("avg"),
        lat_max_ms=lat.get("max"),
        percentile=s.get("percentile"),
        lat_pct_ms=lat.get("percentile_value"),
        lat_p50_ms=pct.get(50),
        lat_p90_ms=pct.get(90),
        lat_p95_ms=p95,
        lat_p99_ms=pct.get(99),
        lat_p999_ms=pct.get(99.9),
        errors=s.get("errors"),
        reconnects=s.get("reconnects"),
        n_intervals=len(iv),
        warnings=list(checked[2]),
        command=command,
        log_path=str(outcome.log_path if outcome is not None else log_path),
        started_at=outcome.started_at if outcome is not None else None,
        finished_at=outcome.finished_at if outcome is not None else None,
        wall_s=outcome.wall_s if outcome is not None else None,
        summary_json=json.dumps(s, default=str),
    )
    return rec, iv

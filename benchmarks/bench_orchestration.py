"""Orchestration: a sweep's wall time against its configured durations and cooldowns.

Goal (issue 3, section 5): wall time ≤ Σ durations + Σ cooldowns + 1 s per run.

    .venv/bin/python benchmarks/bench_orchestration.py [--arms 2] [--repeats 2] [--duration 5]

A study on a private MariaDB (temporary ``TIBENCH_DATA``): ``oltp_point_select`` and
``oltp_read_only`` × threads 1, 2 × ``--repeats`` × ``--arms`` (two arms differ by a dynamic
option, ``innodb_flush_log_at_trx_commit`` 1 / 2, as in ``params/ci.yaml``: the sweep switches
arms with ``SET GLOBAL``, no restart), 5 s runs, 1 s cooldown, interleaved order. The tables are
prepared first (not timed: prepare is its own phase); then :func:`tibenchlib.sweep.sweep` is
timed end to end, resource sampling on, as ``tibench run --phase sweep`` would run it.

The budget counts n − 1 cooldowns, as :func:`tibenchlib.sweep.estimate` does, and, with
``--warmup-s``, the configured warm-up runs (one per workload at each arm opening), which
``estimate`` leaves out. The overhead is
split from the catalog's own timestamps (``started_at``/``finished_at`` of each run):

* before the first run: opening the arm, checking the data set, warm-up SQL;
* inside each run: sysbench's wall time beyond ``--time`` (start, connect, report, exit);
* between two runs of one arm: the gap minus the cooldown slept (sampler stop, parse, catalog
  write, next command);
* at an arm switch: the whole gap (the sweep opens the other arm, re-checks and re-warms the
  data set, runs the ``warmup_s`` runs if any, and sleeps no cooldown there);
* after the last run: returning the catalog's rows.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_overhead import (  # noqa: E402
    fmt_iv,
    header,
    loadavg,
    open_prepared,
    private_data,
    private_server,
)

from tibenchlib.params import parse_study  # noqa: E402
from tibenchlib.stats import t_interval  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    ap.add_argument(
        "--workloads", nargs="+", default=["oltp_point_select", "oltp_read_only"], help="workloads"
    )
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="thread ladder")
    ap.add_argument("--arms", type=int, choices=(1, 2), default=2, help="arms (2: A/B switches)")
    ap.add_argument("--repeats", type=int, default=2, help="repeats")
    ap.add_argument("--duration", type=int, default=5, help="seconds per run (--time)")
    ap.add_argument("--cooldown", type=float, default=1.0, help="cooldown_s between runs")
    ap.add_argument(
        "--warmup-s", type=float, default=0.0, help="warmup_s: unrecorded runs at each arm opening"
    )
    ap.add_argument("--tables", type=int, default=4, help="sysbench --tables")
    ap.add_argument("--table-size", type=int, default=10_000, help="sysbench --table-size")
    ap.add_argument("--keep", action="store_true", help="keep the temporary TIBENCH_DATA")
    a = ap.parse_args(argv)

    from tibenchlib.phase import RunContext
    from tibenchlib.sweep import RUN_OVERHEAD_S, estimate, plan, sweep

    header("bench_orchestration: sweep wall time vs Σ durations + Σ cooldowns + 1 s per run")
    arms = [
        {"label": "flush1", "server_options": {"innodb_flush_log_at_trx_commit": 1}},
        {"label": "flush2", "server_options": {"innodb_flush_log_at_trx_commit": 2}},
    ][: a.arms]
    study = parse_study(
        {
            "study": "bench-orchestration",
            "target": {"kind": "embedded"},
            "dataset": {"tables": a.tables, "table_size": a.table_size},
            "workloads": a.workloads,
            "threads": a.threads,
            "duration_s": a.duration,
            "cooldown_s": a.cooldown,
            "warmup_s": a.warmup_s,
            "repeats": a.repeats,
            "order": "interleaved",
            "arms": arms,
        }
    )
    with private_data(a.keep), private_server(study):
        open_prepared(study)
        specs = plan(study)
        n = len(specs)
        est = estimate(study, specs)
        durations = n * study.duration_s
        cooldowns = max(n - 1, 0) * study.cooldown_s
        # The sweep opens an arm before its first run and at every change of arm.
        opens = 1 + sum(x.arm != y.arm for x, y in zip(specs, specs[1:], strict=False))
        warmups = opens * len(a.workloads) * (max(1, round(a.warmup_s)) if a.warmup_s else 0)
        budget = durations + cooldowns + warmups + RUN_OVERHEAD_S * n
        print(
            f"plan: {n} runs = {len(study.arms)} arms × {len(a.workloads)} workloads × "
            f"{len(a.threads)} thread counts × {a.repeats} repeats; {a.duration} s runs, "
            f"{a.cooldown:g} s cooldown; load average {loadavg()}"
        )
        t0 = time.time()
        runs = sweep(RunContext.open(study, progress=False))
        t1 = time.time()

    wall = t1 - t0
    runs = runs.sort_values("seq").reset_index(drop=True)
    bad = runs[runs["status"] != "ok"]
    inside = (runs["wall_s"] - study.duration_s).tolist()
    gaps_same, gaps_switch = [], []
    for prev, cur in zip(runs.itertuples(), runs.iloc[1:].itertuples(), strict=False):
        gap = cur.started_at - prev.finished_at
        if cur.arm == prev.arm:
            gaps_same.append(gap - study.cooldown_s)
        else:
            gaps_switch.append(gap)
    before = runs["started_at"].iloc[0] - t0
    after = t1 - runs["finished_at"].iloc[-1]
    slept = len(gaps_same) * study.cooldown_s
    # Overhead proper: what is neither sysbench's --time, a warm-up run nor a cooldown slept.
    over = wall - durations - slept - warmups

    def stat(xs: list[float]) -> str:
        if not xs:
            return "-"
        t = t_interval(xs)
        return f"{t['mean']:.3f} s × {len(xs)} = {sum(xs):.2f} s   (95% t {fmt_iv(t, 3)})"

    print()
    print(f"{'':<34} seconds")
    print(f"{'Σ durations':<34} {durations:>8.2f}")
    print(f"{'Σ configured cooldowns (n − 1)':<34} {cooldowns:>8.2f}")
    if warmups:
        print(f"{'Σ warm-up runs (warmup_s)':<34} {warmups:>8.2f}   ({opens} arm openings)")
    print(f"{'+ 1 s per run':<34} {RUN_OVERHEAD_S * n:>8.2f}")
    print(f"{'= budget':<34} {budget:>8.2f}")
    print(f"{'sweep.estimate ETA':<34} {est['eta_s']:>8.2f}")
    print(f"{'measured wall time of sweep()':<34} {wall:>8.2f}")
    print(f"{'cooldowns actually slept':<34} {slept:>8.2f}   ({len(gaps_same)} of {n - 1} gaps)")
    print()
    print("where the overhead beyond durations and configured cooldowns went:")
    print(f"  before the first run (open arm, check, warm-up)   {before:.2f} s")
    if warmups:
        print(f"  (the warm-up runs' {warmups:.0f} s are in the first and arm-switch rows)")
    print(f"  inside runs (sysbench wall − --time)              {stat(inside)}")
    print(f"  between runs of one arm (gap − cooldown)          {stat(gaps_same)}")
    print(f"  at arm switches (whole gap, no cooldown)          {stat(gaps_switch)}")
    print(f"  after the last run                                {after:.2f} s")
    print(f"  total {over:.2f} s = {over / n:.3f} s per run")
    print(
        f"cooldowns not slept (the sweep skips them after opening an arm): "
        f"{cooldowns - slept:.2f} s of the budget"
    )
    if len(bad):
        print(f"{len(bad)} runs not ok: {bad[['run_key', 'status', 'error']].to_dict('records')}")
    print(f"load average at the end: {loadavg()}")
    ok = wall <= budget and not len(bad)
    print(
        f"verdict: sweep wall time {wall:.2f} s {'≤' if wall <= budget else '>'} budget "
        f"{budget:.2f} s: goal {'MET' if ok else 'NOT met'} "
        f"(overhead {over / n:.3f} s per run beyond --time and cooldowns slept, "
        f"against {RUN_OVERHEAD_S:g} s allowed)"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

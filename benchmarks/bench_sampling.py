"""Sampling must not disturb what it measures: TPS with the resource sampler on ÷ off.

Goals (issue 5, section 5): the ratio of mean TPS is at least 0.98, or its 95% interval holds 1;
the sampler's own CPU is at most 1% of a core.

    .venv/bin/python benchmarks/bench_sampling.py [--pairs 8] [--duration 10] [--threads 2]

Both arms are :func:`tibenchlib.sysbench.runner.run_one` on the same open arm of a private
MariaDB (under a temporary ``TIBENCH_DATA``), ``oltp_point_select``, 4 tables × 10000 rows,
2 threads, 10 s; the only difference is ``sample`` (what ``Study.sample_resources`` sets): on, a
:class:`~tibenchlib.resources.ProcessSampler` reads the server's and sysbench's CPU and RSS once a
second and the samples go to the catalog. Pairs alternate their order (on first, then off
first, ...). Reported: the ratio of mean TPS with Fieller's 95% interval, the per-pair ratios,
and the sampler's own CPU as :attr:`ProcessSampler.overhead_pct` (its thread's CPU time over its
lifetime), plus the driver process's CPU per run in each arm as a cross-check. Each run's CPU
account (who used the cores, in cores) and the load average are printed: the machine is shared.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_overhead import (  # noqa: E402
    ACCOUNT_HEAD,
    account_cells,
    account_note,
    accounted,
    alternating,
    captured_samplers,
    goal_met,
    header,
    loadavg,
    make_study,
    open_prepared,
    paired_args,
    paired_reports,
    private_data,
    private_server,
    verdict,
)

SAMPLER_GOAL_PCT = 1.0


def main(argv: list[str] | None = None) -> int:
    a = paired_args(argv, __doc__, "discarded runs (sampler off) first")

    from tibenchlib.sysbench.runner import RunSpec, run_one

    header("bench_sampling: TPS with the resource sampler on ÷ off (run_one, sample=True/False)")
    with private_data(a.keep):
        study = make_study("bench-sampling", a)
        with private_server(study) as server, captured_samplers() as samplers:
            ctx = open_prepared(study)
            seq = 0

            def one(sample: bool) -> float:
                nonlocal seq
                seq += 1
                spec = RunSpec("default", a.workload, a.threads, seq, seq)
                row = run_one(ctx, spec, sample=sample)
                if row["status"] != "ok":
                    raise RuntimeError(f"{spec.run_key}: {row['status']}: {row['error']}")
                return float(row["tps"])

            for _ in range(a.warmup_runs):
                print(f"warm-up run (sampler off, discarded): {one(False):.1f} TPS")
            rows = []
            for pair, arm in alternating(a.pairs, "on", "off"):
                time.sleep(a.pause)
                n_before = len(samplers)
                value, acc = accounted(lambda arm=arm: one(arm == "on"), server.pid)
                sampler = samplers[-1] if len(samplers) > n_before else None
                rows.append((pair, arm, value, acc, sampler))

        print()
        head = f"{'pair':>4} {'sampler':<7} {'TPS':>9} {ACCOUNT_HEAD}"
        print(f"{head} {'sampler %core':>13} {'rows':>4}")
        for pair, arm, value, acc, s in rows:
            own = f"{s.overhead_pct:>13.3f} {len(s.samples):>4}" if s else f"{'':>13} {'':>4}"
            print(f"{pair:>4} {arm:<7} {value:>9.1f} {account_cells(acc)} {own}")
        print(account_note())
        print()
        res = paired_reports(rows, ("on", "off"), a.duration)
        for arm in ("on", "off"):
            accs = [r[3] for r in rows if r[1] == arm]
            drv = sum(x.driver * x.wall_s for x in accs) / len(accs)
            print(
                f"sampler {arm:<3}: driver CPU per run {drv:.3f} s "
                f"({100 * drv / (sum(x.wall_s for x in accs) / len(accs)):.2f}% of a core)"
            )
        own = [r[4].overhead_pct for r in rows if r[4] is not None]
        mean_own, max_own = sum(own) / len(own), max(own)
        sampler_ok = max_own <= SAMPLER_GOAL_PCT
        print(f"load average at the end: {loadavg()}")
        print(verdict(res["fieller"], "sampler on/off TPS"))
        print(
            f"verdict: sampler's own CPU: goal ≤ {SAMPLER_GOAL_PCT:g}% of a core "
            f"{'MET' if sampler_ok else 'NOT met'} (mean {mean_own:.3f}%, max {max_own:.3f}% "
            f"over {len(own)} runs; ProcessSampler.overhead_pct; {os.cpu_count()} cores)"
        )
    return 0 if goal_met(res["fieller"]) and sampler_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

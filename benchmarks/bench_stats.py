"""Time tibench's statistics on a study-sized synthetic data set (issue 4, section 5).

    .venv/bin/python benchmarks/bench_stats.py [--arms 2] [--repeat 3]

The study: 4 workloads x 6 thread counts x 5 repeats x 600 one-second intervals per arm, with a
warm-up ramp, AR(1) per-second noise and run-to-run noise, thread scaling by the USL.  Timed:
MSER-5 + steady state + batch means + interval CV for every run, cell summaries, the A/B
comparison with Holm, the improvement summary, and saturation (step table + USL fit) for every
workload x arm.  Data generation is not timed.  Budget: <= 2 s on 2 cores.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from scipy import signal

from tibenchlib.saturation import saturation, usl_model
from tibenchlib.stats import compare_arms, summarize_cells, summarize_improvement
from tibenchlib.steady import steady_state_table

WORKLOADS = ["oltp_point_select", "oltp_read_only", "oltp_update_index", "oltp_read_write"]
THREADS = [8, 16, 32, 64, 128, 256]
REPEATS, SECONDS = 5, 600


def make_study(arms: int, seed: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Synthetic runs and intervals tables shaped like tibench's catalog."""
    rng = np.random.default_rng(seed)
    keys = [
        (w, f"arm{a}", th, r)
        for w in WORKLOADS
        for a in range(arms)
        for th in THREADS
        for r in range(1, REPEATS + 1)
    ]
    n = len(keys)
    th = np.array([k[2] for k in keys], float)
    gain = np.array([1 + 0.03 * int(k[1][3:]) for k in keys])  # arm1 is 3 % faster
    level = usl_model(th, 1000, 0.03, 2e-5) * gain * (1 + 0.02 * rng.standard_normal(n))
    t = np.arange(1, SECONDS + 1, dtype=float)
    ramp = 1 - 0.5 * np.exp(-t / 20)
    e = rng.standard_normal((n, SECONDS)) * 0.05 * np.sqrt(1 - 0.49)
    tps = level[:, None] * (ramp + signal.lfilter([1.0], [1.0, -0.7], e, axis=1))
    run_id = [f"{w}/{a}/{th}/{r}" for w, a, th, r in keys]
    intervals = pd.DataFrame(
        {"run_id": np.repeat(run_id, SECONDS), "t": np.tile(t, n), "tps": tps.ravel()}
    )
    runs = pd.DataFrame(keys, columns=["workload", "arm", "threads", "repeat"])
    runs["run_id"] = run_id
    runs["tps"] = tps.mean(axis=1)  # sysbench's figure: all events over all seconds
    runs["lat_p95_ms"] = runs["threads"] / runs["tps"] * 1000 * 1.6
    runs["status"] = "ok"
    return runs, intervals


def bench(runs: pd.DataFrame, intervals: pd.DataFrame) -> dict[str, float]:
    t = {}
    t0 = time.perf_counter()
    steady = steady_state_table(intervals, warmup="mser5")
    t["steady state (MSER-5, batch means, CV)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    cells = summarize_cells(runs)
    t["cell summaries"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    arms = sorted(runs["arm"].unique())
    if len(arms) > 1:
        cmp = compare_arms(runs, arms[0], arms[1], cells=cells)
        summarize_improvement(cmp)
    t["A/B comparison + summary"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    for (w, a), _ in runs.groupby(["workload", "arm"]):
        saturation(runs, workload=w, arm=a)
    t["saturation + USL"] = time.perf_counter() - t0
    assert len(steady) == len(runs)
    return t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arms", type=int, default=2, help="arms per study (1 = a plain sweep)")
    ap.add_argument("--repeat", type=int, default=3, help="timed repetitions; best is shown")
    a = ap.parse_args()
    runs, intervals = make_study(a.arms)
    print(
        f"study: {len(WORKLOADS)} workloads x {len(THREADS)} thread counts x {REPEATS} repeats x "
        f"{a.arms} arm(s) = {len(runs)} runs, {len(intervals):,} intervals"
    )
    bench(runs.head(60), intervals.head(60 * SECONDS))  # warm imports and caches
    results = [bench(runs, intervals) for _ in range(a.repeat)]
    best = min(results, key=lambda r: sum(r.values()))
    for k, v in best.items():
        print(f"  {k:<40} {v:6.3f} s")
    total = sum(best.values())
    print(f"  {'total (best of ' + str(a.repeat) + ')':<40} {total:6.3f} s  (budget 2 s)")


if __name__ == "__main__":
    main()

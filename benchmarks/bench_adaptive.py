"""Runs saved by adaptive repeats: a simulated study, adaptive rounds against fixed rounds.

    .venv/bin/python benchmarks/bench_adaptive.py [--studies 400] [--min 5] [--max 10]
        [--target 2] [--delta 2] [--cv-low 0.3] [--cv-high 3]

The study: 4 workloads x 6 thread counts = 24 cells, two arms interleaved in rounds (AB, BA, ...).
Each run's figure is lognormal around its cell's truth, with a run-to-run CV drawn per cell
log-uniformly between ``--cv-low`` and ``--cv-high`` percent (quiet point selects to noisy
writes); true differences per cell drawn from 0, +-1, +5 and +15 percent.

The adaptive design is :func:`tibenchlib.adaptive.stopping_rule` (Stein's two-stage rule with its
early look). A cell is *answered* when its interval is within +-target or lies entirely beyond or
within +-delta. The fixed design runs every cell n rounds and uses the paired t interval
(df = n - 1) at 95%; "the fixed design that reaches the same width" is the smallest n whose share
of answered cells is at least the adaptive design's. Printed: runs of each design, their ratio,
the share of cells answered and the coverage of each design's intervals (which must stay >= 93%).
Exit code 0 when the adaptive design needs fewer runs than that fixed design and keeps coverage.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np
from scipy import stats as st

from tibenchlib.adaptive import stopping_rule

CELLS = 4 * 6
EFFECTS = np.log1p(np.array([0.0, 0.01, -0.01, 0.05, 0.15]))


def simulate(rng, studies: int, max_rounds: int, cv_low: float, cv_high: float):
    """Within-round log ratios (studies x cells, rounds) and each cell's true log ratio."""
    m = studies * CELLS
    sigma = np.exp(rng.uniform(math.log(cv_low / 100), math.log(cv_high / 100), m))
    mu = rng.choice(EFFECTS, m)
    a = rng.normal(0, 1, (m, max_rounds)) * sigma[:, None]
    b = rng.normal(0, 1, (m, max_rounds)) * sigma[:, None]
    return mu[:, None] + b - a, mu


def answered(lo, hi, target: float, delta: float) -> np.ndarray:
    """Intervals (log scale) within +-target, or entirely beyond or within +-delta."""
    h, up, down = math.log1p(target / 100), math.log1p(delta / 100), math.log1p(-delta / 100)
    half = (hi - lo) / 2
    return (half <= h * (1 + 1e-12)) | (lo > up) | (hi < down) | ((lo >= down) & (hi <= up))


def fixed(d, mu, n: int, target: float, delta: float):
    x = d[:, :n]
    m, s = x.mean(1), x.std(1, ddof=1)
    half = st.t.ppf(0.975, n - 1) * s / math.sqrt(n)
    lo, hi = m - half, m + half
    return answered(lo, hi, target, delta).mean(), ((lo <= mu) & (mu <= hi)).mean()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--studies", type=int, default=400)
    ap.add_argument("--min", type=int, default=5, help="stage 1 rounds (repeats: auto has 5)")
    ap.add_argument("--max", type=int, default=10)
    ap.add_argument("--target", type=float, default=2.0, help="target half-width, percent")
    ap.add_argument("--delta", type=float, default=2.0, help="equivalence margin, percent")
    ap.add_argument("--cv-low", type=float, default=0.3, help="quietest cell's run CV, percent")
    ap.add_argument("--cv-high", type=float, default=3.0, help="noisiest cell's run CV, percent")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    rng = np.random.default_rng(a.seed)
    d, mu = simulate(rng, a.studies, a.max, a.cv_low, a.cv_high)
    t0 = time.perf_counter()
    dec = stopping_rule(
        d,
        min_rounds=a.min,
        max_rounds=a.max,
        target_halfwidth_pct=a.target,
        delta_pct=a.delta,
    )
    secs = time.perf_counter() - t0
    lo, hi = np.log(dec["ratio_ci_low"].to_numpy()), np.log(dec["ratio_ci_high"].to_numpy())
    share = answered(lo, hi, a.target, a.delta).mean()
    cover = ((lo <= mu) & (mu <= hi)).mean()
    runs_adaptive = 2 * int(dec["rounds_used"].sum())
    per_study = runs_adaptive / a.studies
    print(
        f"{a.studies} simulated studies x {CELLS} cells x 2 arms; run CV {a.cv_low:g}–"
        f"{a.cv_high:g}%, repeats min {a.min} max {a.max}, target ±{a.target:g}%, "
        f"margin ±{a.delta:g}%"
    )
    print(f"stopping rule over {len(dec)} cells: {secs * 1000:.0f} ms")
    print(
        f"adaptive: {per_study:.1f} runs per study, {share:.1%} of cells answered, "
        f"coverage {cover:.1%}; reasons: "
        + ", ".join(f"{k} {v / len(dec):.0%}" for k, v in dec["reason"].value_counts().items())
    )
    match = None
    for n in range(2, a.max + 1):
        s, c = fixed(d, mu, n, a.target, a.delta)
        runs = 2 * n * CELLS
        print(f"fixed n={n:2d}: {runs} runs per study, {s:.1%} answered, coverage {c:.1%}")
        if match is None and s >= share:
            match = (n, runs)
    top = 2 * a.max * CELLS
    print(f"ratio adaptive / fixed {a.max} rounds (the most the rule may run): "
          f"{per_study / top:.2f}")  # fmt: skip
    if match is None:
        print(f"no fixed design up to {a.max} rounds answers {share:.1%} of the cells: "
              f"adaptive / fixed {a.max} = {per_study / top:.2f}")  # fmt: skip
        ok = cover >= 0.93
    else:
        n, runs = match
        ratio = per_study / runs
        print(f"ratio adaptive / fixed n={n} (the fixed design answering as many cells): "
              f"{ratio:.2f}")  # fmt: skip
        ok = ratio < 1 and cover >= 0.93
    print("goal (fewer runs than the fixed design of the same width, coverage >= 93%):",
          "met" if ok else "NOT met")  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""False level shifts of PELT on stationary long-memory runs, with a Wilson interval.

    .venv/bin/python benchmarks/bench_pelt.py [--runs 1200] [--rho 0.95] [--sd 0.10]

Each run is 240 one-second intervals of TPS = 1000 x (1 + sd x e), e a stationary AR(1) series
with lag-1 correlation ``--rho`` and unit variance (so ``--sd`` is the seconds' marginal CV);
nothing shifts, so every change point :func:`tibenchlib.stability.change_points` reports is
false. Runs are seeded 100000 + i and 200000 + i (two halves), the same series every time.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from tibenchlib.stability import change_points


def run(seed: int, rho: float, sd: float, n: int = 240) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    z = rng.standard_normal(n)
    e = np.empty(n)
    e[0] = z[0]
    for i in range(1, n):
        e[i] = rho * e[i - 1] + np.sqrt(1 - rho**2) * z[i]
    return pd.DataFrame({"t": np.arange(1, n + 1, dtype=float), "tps": 1000 * (1 + sd * e)})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=1200)
    ap.add_argument("--rho", type=float, default=0.95)
    ap.add_argument("--sd", type=float, default=0.10)
    a = ap.parse_args()
    half = a.runs // 2
    seeds = [b + i for b in (100000, 200000) for i in range(half)]
    false = sum(len(change_points(run(s, a.rho, a.sd))[0]) > 1 for s in seeds)
    n = len(seeds)
    p, z = false / n, 1.959963984540054
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    print(
        f"AR({a.rho:g}) seconds, marginal CV {a.sd:.0%}, 240 s: {false} of {n} runs with a false "
        f"level shift, {p:.2%} [{c - h:.2%}, {c + h:.2%}]"
    )


if __name__ == "__main__":
    main()

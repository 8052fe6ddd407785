"""How often round effects name a round that did not move, and find one that did.

    .venv/bin/python benchmarks/bench_rounds.py [--sims 300] [--seed 1]

Sweeps as the interleaved sweep runs them: every round runs arms A and B (B 1.5 x A) at each
thread count of each workload, the arms' order alternating by round; run noise CV 3 % in
execution order, independent normal, AR(1) 0.5, or Student t3 (scaled to sd 1). Three sizes:
3 and 5 rounds of 1 workload x 3 thread counts (18 and 30 runs), 5 rounds of 2 workloads x 4
thread counts (80 runs). For each: the share of sweeps with no round shift in which
:func:`tibenchlib.rounds.round_notes` names a round (false alarms), and with round 1 at -10 %
the share in which round 1 is named and the share in which another round is named too.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from tibenchlib.rounds import round_effects, round_notes

DESIGNS = ((3, 1, (1, 2, 4)), (5, 1, (1, 2, 4)), (5, 2, (1, 2, 4, 8)))


def sweep(rng, rounds, workloads, threads, noise, shift=None, cv=0.03) -> pd.DataFrame:
    """One simulated sweep's runs table (``seq``: execution order)."""
    rows = [
        (f"w{w}", arm, t, r)
        for r in range(1, rounds + 1)
        for arm in ("AB" if r % 2 else "BA")
        for w in range(workloads)
        for t in threads
    ]
    n = len(rows)
    if noise == "ar0.5":
        z = rng.standard_normal(n)
        e = np.empty(n)
        e[0] = z[0]
        for i in range(1, n):
            e[i] = 0.5 * e[i - 1] + np.sqrt(0.75) * z[i]
    elif noise == "t3":
        e = rng.standard_t(3, n) / np.sqrt(3)
    else:
        e = rng.standard_normal(n)
    df = pd.DataFrame(rows, columns=["workload", "arm", "threads", "repeat"])
    f = np.where(df["repeat"] == shift[0], shift[1], 1.0) if shift else 1.0
    df["tps"] = 1000 * df["threads"] * np.where(df["arm"] == "B", 1.5, 1.0) * f * np.exp(cv * e)
    return df.assign(seq=np.arange(n), status="ok")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sims", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    print(f"{a.sims} sweeps per row, run CV 3%")
    print(
        "rounds x workloads x threads | noise | false alarms | round 1 at -10% named | other named"
    )
    for rounds, wl, th in DESIGNS:
        for noise in ("iid", "ar0.5", "t3"):
            false = found = other = 0
            for _ in range(a.sims):
                false += bool(round_notes(round_effects(sweep(rng, rounds, wl, th, noise))))
                notes = round_notes(round_effects(sweep(rng, rounds, wl, th, noise, (1, 0.9))))
                found += any(x.startswith("round 1 ") for x in notes)
                other += any(not x.startswith("round 1 ") for x in notes)
            print(
                f"{rounds} x {wl} x {len(th)} | {noise} | {false / a.sims:.1%} | "
                f"{found / a.sims:.1%} | {other / a.sims:.1%}"
            )


if __name__ == "__main__":
    main()

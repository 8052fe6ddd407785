"""False claims and power of tibench's A/B verdict against pyperf's test, at 3 and 5 rounds.

    .venv/bin/python benchmarks/bench_power.py [--sims 5000] [--seed 1]

Each simulated study is one cell of two arms, A and B, run in interleaved rounds in the sweep's
own arm order (:func:`tibenchlib.runorder.arm_order`: A B, B A, B A, A B, ...). A run's TPS is
``1000 x effect x exp(round + noise)``: the run noise is normal on the log scale with sd 3 %
(CV 3 %); "±10 % round drift" moves every run of a round by the same ``exp(u)``,
``u ~ Uniform(-0.10, +0.10)``, drawn per round. A-vs-A has no effect; power is for B 5 % faster.

* tibench: :func:`tibenchlib.stats.compare_arms` on the runs table (each study its own
  workload, ``family="workload"``), a claim = verdict "better" or "worse" (read off the
  interval): the paired t on the within-round log ratios (df = n - 1);
* blocks (not adopted): :func:`tibenchlib.blocks.blocked_arrays`, the shorter of the paired and
  the pooled t interval with calibrated critical values; it matches pyperf without drift but
  claims too often when the arms' runs within a round move apart (carry-over, position), see
  docs/statistics.md;
* pyperf: ``pyperf._utils.is_significant`` (Student's two-sample t, df = 2n - 2) on the TPS,
  when pyperf is installed (``pip install pyperf``; not a tibench dependency);
* benchstat: quoted, not run (golang.org/x/perf/benchmath's Mann-Whitney U with its default
  alpha 0.05, 5,000 studies a row, the same conditions): at 3 rounds its U test cannot reach
  p < 0.05 at all.

Prints one row per condition: false claims / power with their 95 % Wilson intervals.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from tibenchlib.blocks import blocked_arrays
from tibenchlib.runorder import arm_order
from tibenchlib.stats import compare_arms

try:  # a peer's test, for the table only; tibench does not depend on pyperf
    from pyperf._utils import is_significant
except ImportError:  # pragma: no cover - the table then leaves pyperf out
    is_significant = None

CV, EFFECT, DRIFT = 0.03, 1.05, 0.10
#: benchstat (golang.org/x/perf/benchmath, Mann-Whitney U, alpha 0.05), 5,000 studies a row,
#: as measured with the same conditions: (false claims, power) in %.
BENCHSTAT = {
    (3, False): (0.0, 0.0),
    (5, False): (3.1, 50.0),
    (3, True): (0.0, 0.0),
    (5, True): (0.1, 5.0),
}


def simulate(rng, sims: int, n: int, effect: float, drift: bool) -> tuple[np.ndarray, ...]:
    """TPS of arms A and B, [sims, n], and which arm ran first in each round."""
    shift = rng.uniform(-DRIFT, DRIFT, (sims, n)) if drift else np.zeros((sims, n))
    a = 1000 * np.exp(shift + CV * rng.standard_normal((sims, n)))
    b = 1000 * effect * np.exp(shift + CV * rng.standard_normal((sims, n)))
    b_first = np.array([arm_order(["A", "B"], r)[0] == "B" for r in range(1, n + 1)])
    return a, b, b_first


def runs_table(a: np.ndarray, b: np.ndarray, b_first: np.ndarray) -> pd.DataFrame:
    """The runs as the catalog holds them: one workload per simulated study."""
    sims, n = a.shape
    rounds = np.tile(np.arange(1, n + 1), sims)
    bf = np.tile(b_first, sims).astype(int)
    wl = np.repeat(np.arange(sims), n).astype(str)
    return pd.DataFrame(
        {
            "workload": np.concatenate([wl, wl]),
            "arm": ["A"] * a.size + ["B"] * b.size,
            "threads": 8,
            "repeat": np.concatenate([rounds, rounds]),
            "seq": np.concatenate([2 * rounds + bf, 2 * rounds + 1 - bf]),
            "tps": np.concatenate([a.ravel(), b.ravel()]),
            "status": "ok",
        }
    )


def claims(a: np.ndarray, b: np.ndarray, b_first: np.ndarray) -> dict[str, float]:
    """Share of studies with a claim (a direction), by each rule."""
    cmp = compare_arms(runs_table(a, b, b_first), "A", "B", family="workload")
    out = {"tibench": float(cmp["verdict"].isin(["better", "worse"]).mean())}
    d, s = np.log(b / a), np.log(b * a)
    n = a.shape[1]
    _, lo, hi, *_ = blocked_arrays(d.mean(1), d.std(1, ddof=1), s.std(1, ddof=1), n, 0.95)
    out["blocks (not adopted)"] = float(((lo > 1) | (hi < 1)).mean())
    if is_significant is not None:
        out["pyperf"] = float(
            np.mean([is_significant(list(x), list(y))[0] for x, y in zip(a, b, strict=True)])
        )
    return out


def wilson(p: float, n: int) -> tuple[float, float]:
    """95 % Wilson interval of a proportion."""
    z = 1.959963984540054
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return c - h, c + h


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sims", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"CV {CV:.0%}, +{EFFECT - 1:.0%} for power, {args.sims} studies a row")
    print("condition | rule | false claims [95%] | power +5% [95%]")
    for drift in (False, True):
        for n in (3, 5):
            null = claims(*simulate(rng, args.sims, n, 1.0, drift))
            alt = claims(*simulate(rng, args.sims, n, EFFECT, drift))
            cond = f"{'±10% round drift' if drift else 'no drift'}, n = {n}"
            for rule in null:
                f0, f1 = null[rule], alt[rule]
                lo0, hi0 = wilson(f0, args.sims)
                lo1, hi1 = wilson(f1, args.sims)
                print(
                    f"{cond} | {rule} | {f0:.1%} [{lo0:.1%}, {hi0:.1%}] | "
                    f"{f1:.1%} [{lo1:.1%}, {hi1:.1%}]"
                )
            bs = BENCHSTAT[(n, drift)]
            print(f"{cond} | benchstat (quoted) | {bs[0]:.1f}% | {bs[1]:.1f}%")


if __name__ == "__main__":
    main()

"""Rounds used and power of adaptive repeats by run CV, against fixed designs of 5, 8 and 10 rounds.

    .venv/bin/python benchmarks/bench_adaptive.py [--cells 4000] [--min 5] [--max 10]
        [--delta 2] [--cvs 1 2 5] [--phi 0] [--drift 0] [--seed 1]

One A/B cell at a time, simulated as the sweep runs it: two arms per round in the order
:func:`tibenchlib.runorder.arm_order` gives (AB, BA, BA, AB, ...), each run's figure lognormal
around the truth with run-to-run CV ``--cvs`` percent (``--phi``: AR(1) run noise in execution
order; ``--drift``: a trend per run), true candidate/baseline ratios 1, 1 + delta/2, 1 + delta and
1 + 2 delta. Every design sees the same runs.

The adaptive design is :func:`tibenchlib.adaptive.stopping_rule` with its defaults (what
``repeats: {min, max}`` and ``repeats: auto`` run). A fixed design runs n rounds (``--fixed-min``
.. ``max``) and reports the interval the comparison reports for rounds as blocks (the paired t
on the within-round log ratios, :func:`tibenchlib.stats._paired_arrays`) at 95%. Verdicts are
the product's rule, read off the
interval (:func:`tibenchlib.stats._interval_verdicts`, one cell): *power* is the share of
"equivalent" verdicts at true ratios 1 and 1 + delta/2, of "better" at 1 + delta and 1 + 2 delta.
``n_eq`` is the smallest fixed n whose power reaches the adaptive design's: the fixed design of
equal power; "-" where no design reaches 5% power (nothing can be decided at that CV and effect).
``beaten`` lists the fixed designs of no more rounds than the adaptive one uses on average whose
power exceeds it by more than 1.5 points (Monte Carlo error).

Exit code 0 when (a) no fixed design of as many rounds or fewer has more power, (b) at CV <= 2%
the adaptive design uses at most 0.7 of the rounds of the fixed design of equal power, and (c)
its coverage stays >= 93.5% everywhere.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

from tibenchlib.adaptive import stopping_rule
from tibenchlib.runorder import arm_order
from tibenchlib.stats import _interval_verdicts, _paired_arrays

FIXED = (5, 8, 10)


def simulate(rng, cells: int, mu: float, cv_pct: float, rounds: int, phi=0.0, drift=0.0):
    """Within-round log ratios and log sums (cells x rounds each) in the sweep's arm order."""
    n = 2 * rounds
    z = rng.normal(size=(cells, n)) * math.log1p(cv_pct / 100)
    e = np.empty_like(z)
    e[:, 0] = z[:, 0] / math.sqrt(1 - phi**2)
    for i in range(1, n):
        e[:, i] = phi * e[:, i - 1] + z[:, i]
    e += drift * np.arange(n)
    order = [arm_order(["a", "b"], r + 1) for r in range(rounds)]
    a = np.array([2 * r + o.index("a") for r, o in enumerate(order)])
    b = np.array([2 * r + o.index("b") for r, o in enumerate(order)])
    return mu + e[:, b] - e[:, a], mu + e[:, b] + e[:, a]


def fixed(d, s, n: int):
    """The comparison's interval at 95% on the first n rounds: low, high (log scale)."""
    x = d[:, :n]
    _, lo, hi, *_ = _paired_arrays(x.mean(1), x.std(1, ddof=1), n, 0.95)
    return np.log(lo), np.log(hi)


def power(lo, hi, effect: float, delta: float) -> float:
    """Share of the right verdict by the product's rule (read off the interval): "equivalent"
    below delta, "better" from delta on."""
    v, _ = _interval_verdicts(np.expm1(lo) * 100, np.expm1(hi) * 100, np.ones(lo.size), delta)
    return float(np.mean(v == ("equivalent" if effect < delta else "better")))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cells", type=int, default=4000, help="simulated cells per CV and effect")
    ap.add_argument("--min", type=int, default=5, help="first look (repeats: auto has 5)")
    ap.add_argument("--max", type=int, default=10)
    ap.add_argument("--fixed-min", type=int, default=3, help="smallest fixed design compared")
    ap.add_argument("--delta", type=float, default=2.0, help="equivalence margin, percent")
    ap.add_argument("--cvs", type=float, nargs="+", default=[1.0, 2.0, 5.0])
    ap.add_argument("--phi", type=float, default=0.0, help="AR(1) coefficient of run noise")
    ap.add_argument("--drift", type=float, default=0.0, help="trend per run, log scale")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    rng = np.random.default_rng(a.seed)
    ns = range(a.fixed_min, a.max + 1)
    effects = (0.0, a.delta / 2, a.delta, 2 * a.delta)
    print(
        f"{a.cells} simulated A/B cells per row, repeats min {a.min} max {a.max}, margin "
        f"±{a.delta:g}%, AR(1) {a.phi:g}, drift {a.drift:g}; power = share of 'equivalent' "
        f"(effect < delta) or 'better' (effect >= delta) verdicts"
    )
    head = (
        f"{'CV %':>5} {'effect %':>8} | {'rounds':>6} {'power':>6} {'cover':>6} | "
        + " ".join(f"{'n=' + str(n):>6}" for n in FIXED)
        + f" | {'n_eq':>4} | beaten by"
    )
    print(head)
    print("-" * len(head))
    ok, secs, by_cv = True, 0.0, {}
    for cv in a.cvs:
        for eff in effects:
            mu = math.log1p(eff / 100)
            d, s = simulate(rng, a.cells, mu, cv, a.max, a.phi, a.drift)
            t0 = time.perf_counter()
            dec = stopping_rule(
                d, min_rounds=a.min, max_rounds=a.max, target_halfwidth_pct=2.0, delta_pct=a.delta
            )
            secs += time.perf_counter() - t0
            lo, hi = np.log(dec["ratio_ci_low"]), np.log(dec["ratio_ci_high"])
            pw = power(lo, hi, eff, a.delta)
            cover = float(np.mean((lo <= mu) & (mu <= hi)))
            rounds = float(dec["rounds_used"].mean())
            fp = {n: power(*fixed(d, s, n), eff, a.delta) for n in ns}
            n_eq = next((n for n in ns if fp[n] >= pw), None)
            decidable = max(pw, *fp.values()) >= 0.05
            beaten = [n for n in ns if n <= rounds and fp[n] > pw + 0.015]
            ok &= not beaten
            if decidable and cv <= 2:
                ok &= n_eq is not None and rounds <= 0.7 * n_eq
            ok &= cover >= 0.935
            by_cv.setdefault(cv, []).append(rounds)
            eq = (f"> {a.max}" if n_eq is None else str(n_eq)) if decidable else "-"
            print(
                f"{cv:5g} {eff:8g} | {rounds:6.2f} {pw:6.1%} {cover:6.1%} | "
                + " ".join(f"{fp[n]:6.1%}" for n in FIXED if n in fp)
                + f" | {eq:>4} | "
                + (", ".join(f"n={n} {fp[n]:.1%}" for n in beaten) or "-")
            )
    print(
        "mean rounds over the four effects: "
        + ", ".join(
            f"CV {cv:g}%: {np.mean(r):.2f} ({1 - np.mean(r) / a.max:.0%} fewer than {a.max})"
            for cv, r in by_cv.items()
        )  # fmt: skip
    )
    print(f"stopping rule: {secs * 1000:.0f} ms for {len(a.cvs) * len(effects) * a.cells} cells")
    print("goal (no fixed design of as many rounds or fewer has more power; at CV <= 2% at most "
          "0.7 of the rounds of the fixed design of equal power; coverage >= 93.5%):",
          "met" if ok else "NOT met")  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""The figures docs/statistics.md quotes for cells and comparisons, measured in one seeded run.

    .venv/bin/python benchmarks/bench_claims.py [--sims 10000] [--seed 1]

Every row is a seeded simulation through the product's own vectorised cores (the functions
:func:`tibenchlib.stats.compare_arms` runs), on run figures whose truth is known:

1. cell interval (:func:`tibenchlib.stats._log_t_arrays`, t on the log scale): coverage of the
   true mean, n = 3, 5, 8; normal runs at CV 5 % and 20 %, lognormal at 10 %;
2. rounds as blocks (the paired t on the within-round log ratios,
   :func:`tibenchlib.stats._paired_arrays`, the interleaved sweep's comparison): two arms per
   round in the sweep's order (:func:`tibenchlib.runorder.arm_order`),
   n = 3, 5, 8, 10 rounds, run CV 1 % and 3 %, run noise independent normal, AR(1) 0.5 and 0.9
   in execution order, Student t3, with round drift (every run of a round moved by
   ``exp(u)``, u ~ U(-10 %, +10 %)) or a level step (+10 % from the middle of the sweep on):
   coverage of the true ratio (+2 %), and each wrong single-cell verdict at true effects 0,
   delta/2, delta and 2 delta (delta = 2 %): a direction at no effect, the wrong direction,
   "at least delta" at delta/2, "below delta" or "equivalent" at delta and 2 delta;
3. the same wrong verdicts for the unpaired Fieller interval on min(n) - 1 df (runs without
   rounds), normal runs, n = 3, 5, 8, CV 1 % and 3 %.

Prints each condition's figures, then the ranges the document quotes.
"""

from __future__ import annotations

import argparse

import numpy as np

from tibenchlib.runorder import arm_order
from tibenchlib.stats import _fieller_arrays, _interval_verdicts, _log_t_arrays, _paired_arrays

DELTA = 2.0
WRONG = {
    0.0: ("better", "worse"),
    0.5: ("worse", "better at least delta"),
    1.0: ("worse", "better below delta", "equivalent"),
    2.0: ("worse", "better below delta", "equivalent"),
}
NOISES = ("iid", "ar0.5", "ar0.9", "t3", "drift", "step")


def cell_coverage(rng, sims: int) -> list[tuple[str, float]]:
    out = []
    for n in (3, 5, 8):
        for kind, scale in (("normal", 0.05), ("normal", 0.20), ("lognormal", 0.10)):
            if kind == "normal":
                x, truth = 1000 * (1 + scale * rng.standard_normal((sims, n))), 1000.0
            else:
                x = 1000 * np.exp(scale * rng.standard_normal((sims, n)))
                truth = 1000 * np.exp(scale**2 / 2)
            lo, hi = _log_t_arrays(x.mean(1), x.std(1, ddof=1), n, 0.95)
            out.append(
                (f"n={n} {kind} CV {scale:.0%}", float(((lo <= truth) & (truth <= hi)).mean()))
            )
    return out


def sweep_logs(rng, sims: int, n: int, cv: float, noise: str, effect: float):
    """Log figures of arms A and B [sims, n] in interleaved rounds."""
    runs = 2 * n
    if noise.startswith("ar"):
        phi = float(noise[2:])
        z = rng.standard_normal((sims, runs))
        e = np.empty_like(z)
        e[:, 0] = z[:, 0]
        for i in range(1, runs):
            e[:, i] = phi * e[:, i - 1] + np.sqrt(1 - phi**2) * z[:, i]
    elif noise == "t3":
        e = rng.standard_t(3, (sims, runs)) / np.sqrt(3)
    else:
        e = rng.standard_normal((sims, runs))
    e = cv * e
    first_a = np.array([arm_order(["A", "B"], r)[0] == "A" for r in range(1, n + 1)])
    ia = np.where(first_a, 2 * np.arange(n), 2 * np.arange(n) + 1)
    ib = np.where(first_a, 2 * np.arange(n) + 1, 2 * np.arange(n))
    la, lb = e[:, ia], np.log1p(effect) + e[:, ib]
    if noise == "drift":
        u = rng.uniform(-0.10, 0.10, (sims, n))
        la, lb = la + u, lb + u
    elif noise == "step":
        later = (np.arange(n) >= n // 2) * np.log(1.10)
        la, lb = la + later, lb + later
    return la, lb


def said(lo_pct, hi_pct) -> np.ndarray:
    v, size = _interval_verdicts(lo_pct, hi_pct, np.ones(lo_pct.size, bool), DELTA)
    return np.char.strip(np.char.add(np.char.add(v.astype(str), " "), size.astype(str)))


def wrong_rate(s: np.ndarray, frac: float) -> float:
    return max(float(np.mean([x == w or x.startswith(w + " ") for x in s])) for w in WRONG[frac])


def blocked_rows(rng, sims: int):
    rows = []
    for noise in NOISES:
        for n in (3, 5, 8, 10):
            for cv in (0.01, 0.03):
                la, lb = sweep_logs(rng, sims, n, cv, noise, 0.02)
                d = lb - la
                _, lo, hi, *_ = _paired_arrays(d.mean(1), d.std(1, ddof=1), n, 0.95)
                cover = float(((lo <= 1.02) & (1.02 <= hi)).mean())
                worst = 0.0
                for frac in WRONG:
                    la, lb = sweep_logs(rng, sims, n, cv, noise, frac * DELTA / 100)
                    d = lb - la
                    _, lo, hi, *_ = _paired_arrays(d.mean(1), d.std(1, ddof=1), n, 0.95)
                    worst = max(worst, wrong_rate(said((lo - 1) * 100, (hi - 1) * 100), frac))
                rows.append((noise, n, cv, cover, worst))
    return rows


def unpaired_rows(rng, sims: int):
    rows = []
    for n in (3, 5, 8):
        for cv in (0.01, 0.03):
            worst = 0.0
            for frac in WRONG:
                eff = frac * DELTA / 100
                a = 1000 * (1 + cv * rng.standard_normal((sims, n)))
                b = 1000 * (1 + eff) * (1 + cv * rng.standard_normal((sims, n)))
                _, lo, hi, _, _ = _fieller_arrays(
                    b.mean(1), b.var(1, ddof=1), n, a.mean(1), a.var(1, ddof=1), n, 0.95, "min"
                )
                worst = max(worst, wrong_rate(said((lo - 1) * 100, (hi - 1) * 100), frac))
            rows.append((n, cv, worst))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sims", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    print(f"{a.sims} simulated comparisons per condition, seed {a.seed}")
    cc = cell_coverage(rng, a.sims)
    for what, c in cc:
        print(f"cell interval {what}: coverage {c:.1%}")
    br = blocked_rows(rng, a.sims)
    print("rounds as blocks: noise, rounds, CV | coverage of +2% | worst wrong verdict")
    for noise, n, cv, cover, worst in br:
        print(f"  {noise:6} n={n:2d} CV {cv:.0%} | {cover:.1%} | {worst:.2%}")
    ur = unpaired_rows(rng, a.sims)
    print("unpaired Fieller (min(n) - 1 df): rounds, CV | worst wrong verdict")
    for n, cv, worst in ur:
        print(f"  n={n} CV {cv:.0%} | {worst:.2%}")
    covers = [c for *_, c, _ in br]
    iid = [r[3] for r in br if r[0] == "iid"]
    print(
        f"ranges: cell coverage {min(c for _, c in cc):.1%}-{max(c for _, c in cc):.1%}; "
        f"blocks coverage {min(covers):.1%}-{max(covers):.1%} (iid only: "
        f"{min(iid):.1%}-{max(iid):.1%}); "
        f"worst wrong single-cell verdict: blocks {max(r[4] for r in br):.2%}, "
        f"unpaired {max(r[2] for r in ur):.2%}"
    )


if __name__ == "__main__":
    main()

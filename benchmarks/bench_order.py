"""The A-vs-A pair's lean under carry-over, by run order: rotated rounds against the balanced
design (10,000 simulated studies per row).

    .venv/bin/python benchmarks/bench_order.py [--studies 10000] [--rounds 4 5] [--cv 3]

The demo's three arms (flush1, flush1_again, flush2 1.5 times faster), one cell, each run's
figure lognormal with run-to-run CV ``--cv`` percent, under three models of what an order does
(:data:`tibenchlib.carryover.MODELS`): an arm carried on unopened into the next round gains 5%;
an arm opened right after flush2 loses 5%; both. Orders as the run loop executes them
(:func:`tibenchlib.carryover.executed`): ``rotated`` is the former rounds (rotated and reversed,
an arm opened only when it changes), ``balanced`` is :func:`tibenchlib.runorder.round_design`
after its pre-period run, every round re-opening its arms. The pair flush1_again / flush1 is
compared within rounds as the sweep compares it (:func:`tibenchlib.stats.paired_ratio`).

Prints per row the mean lean over the studies with its 95% interval, the lean the order's
effects alone give (no noise), and the share of studies whose interval claims a difference.
Exit code 0 when every balanced row leans by at most 0.3% (its interval inside +-0.3%).
"""

from __future__ import annotations

import argparse
import sys
import time

from tibenchlib.carryover import aa_lean_table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    ap.add_argument("--studies", type=int, default=10_000, help="simulated studies per row")
    ap.add_argument("--rounds", type=int, nargs="+", default=[4, 5], help="round counts")
    ap.add_argument("--cv", type=float, default=3.0, help="run-to-run CV, percent")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    t0 = time.monotonic()
    df = aa_lean_table(a.rounds, a.studies, a.cv / 100, a.seed)
    print(
        f"A-vs-A lean (flush1_again / flush1), {a.studies} studies per row, CV {a.cv:g}%, "
        f"seed {a.seed}\n"
    )
    print(f"{'model':<18} {'order':<9} {'n':>2}  {'lean % [95% CI]':<26} {'no-noise':>8}  claims")
    for r in df.itertuples():
        print(
            f"{r.model:<18} {r.order:<9} {r.rounds:>2}  "
            f"{r.lean_pct:+.2f} [{r.lean_ci_low:+.2f}, {r.lean_ci_high:+.2f}]{'':<8} "
            f"{r.expected_pct:+7.2f}%  {r.claims:6.1%}"
        )
    bal = df[df["order"] == "balanced"]
    ok = bool(((bal["lean_ci_low"] >= -0.3) & (bal["lean_ci_high"] <= 0.3)).all())
    worst = bal["lean_pct"].abs().max()
    print(
        f"\nbalanced design: largest |lean| {worst:.2f}% (goal <= 0.3%: "
        f"{'met' if ok else 'NOT met'}); {time.monotonic() - t0:.0f} s"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

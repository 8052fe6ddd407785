"""What a run order does to a comparison when arms leave something behind: seeded simulations of
studies whose truth is known, with the product's own orders and paired comparison.

Two orders are simulated as the run loop executes them:

* ``rotated``: :func:`tibenchlib.runorder.arm_order` without a round count (rounds rotated and
  reversed), an arm opened only when the plan moves to another one, so an arm that ends a round
  and begins the next carries on with no switch and no warm-up;
* ``balanced``: :func:`tibenchlib.runorder.round_design` after its pre-period run, every round
  re-opening its arms.

Each run's figure is its arm's true level times lognormal noise (coefficient of variation
``cv``), times ``1 + continuation`` for a run that carries on its arm unopened, times ``1 +
carry[z]`` for a run opened right after a run of arm ``z``. The pair is compared as the sweep
compares it, within rounds (:func:`tibenchlib.stats.paired_ratio`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .runorder import arm_order, round_design
from .stats import paired_ratio

ORDERS = ("rotated", "balanced")


@dataclass(frozen=True)
class Run:
    """One run of a simulated study, in execution order."""

    arm: str
    round: int  # 0: the pre-period
    opened: bool  # the arm was opened (switch and warm-up) for this run
    after: str | None  # the arm of the run before it


def executed(
    labels: Sequence[str],
    rounds: int,
    order: str,
    pairs: Sequence[tuple[str, str]] | None = None,
) -> list[Run]:
    """The runs of one cell per arm and round as the run loop executes ``order`` (``rotated`` or
    ``balanced``, see the module's docstring; ``pairs``: the compared pairs the balanced design
    balances first)."""
    if order == "rotated":
        plan = [(a, r) for r in range(1, rounds + 1) for a in arm_order(list(labels), r)]
    elif order == "balanced":
        d = round_design(labels, rounds, pairs)
        plan = [(d.pre, 0)] + [(a, r) for r, o in enumerate(d.rounds, start=1) for a in o]
    else:
        raise ValueError(f"order must be one of {ORDERS}, not {order!r}")
    out: list[Run] = []
    for i, (a, r) in enumerate(plan):
        prev = plan[i - 1] if i else None
        opened = prev is None or prev[0] != a or order == "balanced"
        out.append(Run(a, r, opened, prev[0] if prev else None))
    return out


def log_offsets(
    runs: Sequence[Run],
    truth: Mapping[str, float],
    continuation: float = 0.0,
    carry: Mapping[str, float] | None = None,
) -> np.ndarray:
    """Each run's expected log figure: its arm's true level and the order's effects on it."""
    carry = carry or {}
    out = []
    for x in runs:
        e = np.log(truth[x.arm])
        if not x.opened:
            e += np.log1p(continuation)
        elif x.after is not None:
            e += np.log1p(carry.get(x.after, 0.0))
        out.append(e)
    return np.array(out)


def expected_lean_pct(runs: Sequence[Run], base: str, cand: str, offsets: np.ndarray) -> float:
    """The lean of the paired estimate of ``cand`` against ``base`` the order's effects alone
    give (no noise), in percent: exp(mean within-round log ratio) - 1."""
    d = _round_diffs(runs, base, cand, offsets[None, :])[0]
    return float(np.expm1(d.mean()) * 100)


def _round_diffs(runs, base, cand, values) -> np.ndarray:
    idx = {(x.arm, x.round): i for i, x in enumerate(runs)}
    rounds = sorted({x.round for x in runs if x.round > 0})
    b = [idx[(base, r)] for r in rounds]
    c = [idx[(cand, r)] for r in rounds]
    return values[:, c] - values[:, b]


def simulate(
    labels: Sequence[str],
    rounds: int,
    order: str,
    *,
    base: str,
    cand: str,
    truth: Mapping[str, float] | None = None,
    cv: float = 0.03,
    continuation: float = 0.0,
    carry: Mapping[str, float] | None = None,
    studies: int = 10_000,
    seed: int = 0,
    pairs: Sequence[tuple[str, str]] | None = None,
) -> dict:
    """``studies`` simulated studies of ``labels`` over ``rounds`` rounds run in ``order``;
    the pair ``cand`` against ``base`` compared within rounds in each.

    Estimator per study: :func:`tibenchlib.stats.paired_ratio` of the pair's figures by round
    (the pre-period run is never compared). Returned: ``lean_pct``, the mean over studies of
    (ratio - 1) x 100 with ``lean_ci_low``/``lean_ci_high`` (its normal 95% interval over the
    ``studies``, which are independent), the ``expected_pct`` the order's effects alone give,
    and ``claims``, the share of studies whose 95% interval excludes no difference.
    """
    truth = truth or {a: 1.0 for a in labels}
    runs = executed(labels, rounds, order, pairs)
    mu = log_offsets(runs, truth, continuation, carry)
    sigma = np.sqrt(np.log1p(cv**2))
    rng = np.random.default_rng(seed)
    logs = mu[None, :] + rng.normal(0.0, sigma, size=(studies, len(runs)))
    diffs = _round_diffs(runs, base, cand, logs)
    ratios, claims = np.empty(studies), 0
    ones = np.ones(diffs.shape[1])
    for i in range(studies):
        r = paired_ratio(np.exp(diffs[i]), ones)
        ratios[i] = r["ratio"]
        claims += not (r["ci_low"] <= 1.0 <= r["ci_high"])
    lean = (ratios - 1) * 100
    half = 1.96 * lean.std(ddof=1) / np.sqrt(studies)
    return {
        "order": order,
        "rounds": rounds,
        "studies": studies,
        "lean_pct": float(lean.mean()),
        "lean_ci_low": float(lean.mean() - half),
        "lean_ci_high": float(lean.mean() + half),
        "expected_pct": expected_lean_pct(runs, base, cand, mu),
        "claims": claims / studies,
    }


#: The demo's arms and the effects the models give them: an arm carried on unopened
#: into the next round gains 5% (``continuation``); an arm opened after flush2, which leaves
#: the most dirty pages, loses 5% (``flush2``).
DEMO_ARMS = ("flush1", "flush1_again", "flush2")
DEMO_PAIRS = (("flush1", "flush2"), ("flush1", "flush1_again"))
MODELS: dict[str, dict] = {
    "continuation +5%": {"continuation": 0.05},
    "after flush2 -5%": {"carry": {"flush2": -0.05}},
    "both": {"continuation": 0.05, "carry": {"flush2": -0.05}},
}


def aa_lean_table(
    rounds: Sequence[int] = (4, 5), studies: int = 10_000, cv: float = 0.03, seed: int = 1
) -> pd.DataFrame:
    """The demo's A-vs-A pair (flush1_again against flush1, flush2 1.5 times faster) under each
    of :data:`MODELS`, each order and each round count: one row of :func:`simulate` each."""
    truth = {"flush1": 1.0, "flush1_again": 1.0, "flush2": 1.5}
    rows = []
    for model, effects in MODELS.items():
        for n in rounds:
            for order in ORDERS:
                r = simulate(
                    DEMO_ARMS, n, order, base="flush1", cand="flush1_again", truth=truth, cv=cv,
                    studies=studies, seed=seed, pairs=DEMO_PAIRS, **effects,
                )  # fmt: skip
                rows.append({"model": model, **r})
    return pd.DataFrame(rows)

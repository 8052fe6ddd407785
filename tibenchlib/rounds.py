"""Round and drift effects: does a whole round of the sweep run slow or fast?

An interleaved sweep runs every cell once per round (``repeat``). Warm-up after a server start,
or drift on a shared host, moves every cell of a round at once; per cell that looks like noise,
across the cells it is a pattern. :func:`round_effects` fits log(figure) = cell + round by least
squares over all cells (workload x arm x threads) and tests each round against the mean of the
others; :func:`round_notes` words the significant ones ("round 1 is -12% [-18, -6] against rounds
2-3: warm-up or drift"); :func:`exclude_rounds` drops rounds from the statistics and says so.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats as _st

from .stats import CELL_KEYS, _valid_mask, holm

__all__ = ["round_effects", "round_notes", "exclude_rounds", "ROUND_METHOD"]

ROUND_METHOD = (
    "least squares on log(figure) = cell + round; each round against the mean of the others, "
    "t interval on the residual df; Holm across rounds"
)
COLUMNS = [
    "round",
    "n_runs",
    "n_cells",
    "effect_pct",
    "ci_low_pct",
    "ci_high_pct",
    "p_value",
    "p_adjusted",
    "significant",
    "note",
]


def _span(rounds: Sequence[int]) -> str:
    r = sorted(int(x) for x in rounds)
    if len(r) == 1:
        return f"round {r[0]}"
    if r == list(range(r[0], r[-1] + 1)):
        return f"rounds {r[0]}–{r[-1]}"
    return "rounds " + ", ".join(map(str, r))


def round_effects(
    runs: pd.DataFrame,
    metric: str = "tps",
    round_col: str = "repeat",
    keys: Sequence[str] = CELL_KEYS,
    level: float = 0.95,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Each round's figures relative to the other rounds, across all cells, with an interval.

    Estimator: ordinary least squares of log(figure) on a cell factor (``keys``) and a round
    factor; the effect of round r is its coefficient minus the mean of the other rounds'
    (exp - 1, in percent): how much round r's runs sit above or below the same cells' runs in
    the other rounds.  Interval: t on the residual df; p-values Holm-adjusted across rounds.
    Assumes the round shifts every cell by the same factor and independent run noise, equal in
    variance on the log scale.  ``significant`` when the Holm p < ``alpha``.

    Returns
    -------
    DataFrame
        One row per round: ``round, n_runs, n_cells, effect_pct, ci_low_pct, ci_high_pct,
        p_value, p_adjusted, significant, note``; ``attrs["f_p_value"]`` holds the F test of
        "no round effect at all" and ``attrs["method"]`` the method.  Empty with fewer than two
        rounds or no residual df.
    """
    missing = [c for c in (*keys, metric, round_col) if c not in runs.columns]
    if missing:
        raise ValueError(f"runs lack column(s) {missing} needed for round effects")
    v = runs[_valid_mask(runs, metric)].copy()
    v["tb_y"] = pd.to_numeric(v[metric], errors="coerce")
    v = v[(v["tb_y"] > 0) & v[round_col].notna()]
    cell = pd.Series(list(zip(*(v[k] for k in keys), strict=True)), index=v.index)
    ci, cells = pd.factorize(cell)
    rounds = np.sort(v[round_col].astype(int).unique())
    ri = np.searchsorted(rounds, v[round_col].astype(int).to_numpy())
    n, c, k = len(v), len(cells), len(rounds)
    df = n - c - (k - 1)
    out = pd.DataFrame(columns=COLUMNS)
    out.attrs.update(method=ROUND_METHOD, f_p_value=None)
    if k < 2 or df < 1:
        return out
    y = np.log(v["tb_y"].to_numpy(float))
    x = np.zeros((n, c + k - 1))
    x[np.arange(n), ci] = 1.0
    later = ri > 0
    x[np.flatnonzero(later), c + ri[later] - 1] = 1.0
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    rss = float(((y - x @ beta) ** 2).sum())
    s2 = rss / df
    cov = s2 * np.linalg.pinv(x.T @ x)
    # F test against the cell-only model
    x0 = x[:, :c]
    b0, *_ = np.linalg.lstsq(x0, y, rcond=None)
    rss0 = float(((y - x0 @ b0) ** 2).sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        f = ((rss0 - rss) / (k - 1)) / s2
    f_p = float(_st.f.sf(f, k - 1, df)) if np.isfinite(f) else None
    q = _st.t.ppf(0.5 + level / 2, df)
    rows = []
    for j, r in enumerate(rounds):
        # effect of round j minus the mean of the others, in terms of the round coefficients
        w = np.full(k, -1.0 / (k - 1))
        w[j] = 1.0
        L = np.zeros(c + k - 1)
        L[c:] = w[1:]  # round 1 is the reference (coefficient 0)
        est, se = float(L @ beta), float(np.sqrt(max(L @ cov @ L, 0.0)))
        p = float(2 * _st.t.sf(abs(est / se), df)) if se > 0 else (1.0 if est == 0 else 0.0)
        rows.append(
            {
                "round": int(r),
                "n_runs": int((ri == j).sum()),
                "n_cells": int(len(np.unique(ci[ri == j]))),
                "effect_pct": (np.exp(est) - 1) * 100,
                "ci_low_pct": (np.exp(est - q * se) - 1) * 100,
                "ci_high_pct": (np.exp(est + q * se) - 1) * 100,
                "p_value": p,
            }
        )
    out = pd.DataFrame(rows)
    out["p_adjusted"] = holm(out["p_value"])
    out["significant"] = out["p_adjusted"] < alpha
    notes = []
    for row in out.itertuples():
        others = _span([r for r in rounds if r != row.round])
        # signed: the interval reads around its own estimate, whichever side of 0 it lies
        notes.append(
            f"round {row.round} is {row.effect_pct:+.0f}% [{row.ci_low_pct:+.0f}, "
            f"{row.ci_high_pct:+.0f}] against {others} (Holm p={row.p_adjusted:.2g}): "
            "warm-up or drift"
        )
    out["note"] = notes
    out = out[COLUMNS]
    out.attrs.update(method=ROUND_METHOD, f_p_value=f_p)
    return out


def round_notes(effects: pd.DataFrame) -> list[str]:
    """The sentences of the significant rounds of :func:`round_effects` (empty when none).

    Largest effect first. One slow round makes every other round look fast against the rest by
    about 1/(k - 1) of its effect: a round whose interval holds that mirror image of a round
    already named is not named again.
    """
    if not len(effects):
        return []
    k = len(effects)
    sig = effects[effects["significant"]]
    sig = sig.reindex(sig["effect_pct"].abs().sort_values(ascending=False).index)
    notes, mirrors = [], []
    for row in sig.itertuples():
        if any(row.ci_low_pct <= m <= row.ci_high_pct for m in mirrors):
            continue
        notes.append(row.note)
        mirrors.append((np.exp(-np.log1p(row.effect_pct / 100) / (k - 1)) - 1) * 100)
    return notes


def exclude_rounds(
    runs: pd.DataFrame, rounds: Sequence[int], round_col: str = "repeat"
) -> tuple[pd.DataFrame, str | None]:
    """Drop the runs of ``rounds`` from the statistics; returns the kept runs and the sentence
    that says so (None when nothing is excluded)."""
    rounds = sorted({int(r) for r in rounds})
    if not rounds:
        return runs, None
    present = set(runs[round_col].dropna().astype(int)) if round_col in runs else set()
    unknown = [r for r in rounds if r not in present]
    if unknown:
        raise ValueError(
            f"compare.exclude_rounds: no round {unknown} in the runs (rounds: {sorted(present)})"
        )
    kept = runs[~runs[round_col].isin(rounds)]
    return kept, f"{_span(rounds)} excluded from the statistics (compare.exclude_rounds)"

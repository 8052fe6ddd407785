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
from scipy import optimize as _opt
from scipy import stats as _st

from .stats import CELL_KEYS, _valid_mask

__all__ = ["round_effects", "round_notes", "exclude_rounds", "ROUND_METHOD"]

ROUND_METHOD = (
    "least squares on log(figure) = cell + round; each round against the mean of the others, "
    "covariance for AR(1) run noise in execution order (method of moments), t on the residual "
    "df less one; Holm step-down, each step refitted without the rounds already named"
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
    "against",
    "note",
]


def _span(rounds: Sequence[int]) -> str:
    r = sorted(int(x) for x in rounds)
    if len(r) == 1:
        return f"round {r[0]}"
    if r == list(range(r[0], r[-1] + 1)):
        return f"rounds {r[0]}–{r[-1]}"
    return "rounds " + ", ".join(map(str, r))


def _lag_traces(pm: np.ndarray, lags: int) -> tuple[np.ndarray, np.ndarray]:
    """For the residual maker ``pm`` (n x n): ``a[k] = tr(S_k pm)`` and ``b[k] = tr(S_1 pm S_k
    pm)``, k = 0..lags, where ``S_0 = I`` and ``S_k`` has ones k off the diagonal on both sides
    (the AR(1) correlation is ``I + sum rho^k S_k``)."""
    n = pm.shape[0]
    a, b = np.zeros(lags + 1), np.zeros(lags + 1)

    def shifted(k: int) -> np.ndarray:  # S_k @ pm without forming S_k
        q = np.zeros_like(pm)
        if k == 0:
            return pm.copy()
        q[k:] += pm[:-k]
        q[:-k] += pm[k:]
        return q

    s1 = shifted(1)
    for k in range(min(lags, n - 1) + 1):
        sk = shifted(k)
        a[k] = np.trace(sk)
        b[k] = float((s1 * sk.T).sum())
    return a, b


def _ar1_rho(resid: np.ndarray, pm: np.ndarray, lags: int = 40) -> float:
    """Lag-1 autocorrelation of the run noise in execution order, by the method of moments on
    the least-squares residuals: the rho whose expected residual lag-1 ratio (given the design:
    the fit's cell and round means pull the residuals' own autocorrelation down) equals the
    observed one; clipped to [0, 0.95] (a negative one is not let narrow an interval)."""
    n = resid.size
    if n < 4:
        return 0.0
    a, b = _lag_traces(pm, lags)
    obs = float((resid[1:] * resid[:-1]).sum() / (resid**2).sum())
    k = np.arange(lags + 1)

    def expected(rho: float) -> float:
        w = rho**k
        return 0.5 * float(w @ b) / float(w @ a)

    if expected(0.0) >= obs:
        return 0.0
    if expected(0.95) <= obs:
        return 0.95
    return float(_opt.brentq(lambda r: expected(r) - obs, 0.0, 0.95))


def _fit(y, ci, ri, pos, keep_rounds) -> dict | None:
    """Least squares of log figure on cell + round over the runs of ``keep_rounds`` (indices
    into the sorted rounds); each kept round against the mean of the other kept rounds, with a
    covariance for AR(1) run noise in execution order (``pos``; None: independent runs)."""
    sel = np.isin(ri, keep_rounds)
    serial = pos is not None
    pos = pos[sel] if serial else np.arange(sel.sum())
    y = y[sel]
    cells, ci_s = np.unique(ci[sel], return_inverse=True)
    r_s = np.searchsorted(keep_rounds, ri[sel])
    n, c, k = y.size, cells.size, len(keep_rounds)
    df = n - c - (k - 1) - serial  # one more for the autocorrelation estimated
    if k < 2 or df < 1:
        return None
    order = np.argsort(pos, kind="stable")
    y, ci_s, r_s = y[order], ci_s[order], r_s[order]
    x = np.zeros((n, c + k - 1))
    x[np.arange(n), ci_s] = 1.0
    later = r_s > 0
    x[np.flatnonzero(later), c + r_s[later] - 1] = 1.0
    pinv = np.linalg.pinv(x)
    beta = pinv @ y
    resid = y - x @ beta
    pm = np.eye(n) - x @ pinv
    rho_hat = _ar1_rho(resid, pm) if serial else 0.0
    # the estimate's own error (about 1/sqrt(n)) would let the noise of a short sweep pass for
    # a round effect: the covariance takes its upper reach
    rho = min(0.95, rho_hat + 1.5 / np.sqrt(n)) if serial else 0.0
    lag = np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
    corr = rho**lag
    # E[rss] = sigma^2 tr(pm corr): the residuals' sum of squares under AR(1) noise
    s2 = float((resid**2).sum()) / float(np.trace(pm @ corr))
    cov = s2 * pinv @ corr @ pinv.T
    est, se = np.zeros(k), np.zeros(k)
    for j in range(k):
        w = np.full(k, -1.0 / (k - 1))
        w[j] = 1.0
        lv = np.zeros(c + k - 1)
        lv[c:] = w[1:]  # the first kept round is the reference (coefficient 0)
        est[j], se[j] = float(lv @ beta), float(np.sqrt(max(lv @ cov @ lv, 0.0)))
    # autocorrelated residuals carry less information than their count: Bartlett's effective df
    df = max(1.0, df * (1 - rho) / (1 + rho))
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(se > 0, 2 * _st.t.sf(np.abs(est / se), df), np.where(est == 0, 1.0, 0.0))
    return {"est": est, "se": se, "p": p, "df": df, "rho": rho_hat}


def round_effects(
    runs: pd.DataFrame,
    metric: str = "tps",
    round_col: str = "repeat",
    keys: Sequence[str] = CELL_KEYS,
    level: float = 0.95,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Each round's figures relative to the other rounds, across all cells, with an interval.

    Estimator: least squares of log(figure) on a cell factor (``keys``) and a round factor; the
    effect of round r is its coefficient minus the mean of the other rounds' (exp - 1, in
    percent): how much round r's runs sit above or below the same cells' runs in the other
    rounds.  Run noise may be autocorrelated in execution order (``seq``): the covariance is
    that of AR(1) noise, its lag-1 correlation estimated from the residuals by the method of
    moments and taken at that estimate plus 1.5/sqrt(n) (its sampling error: in a short sweep
    the estimate alone lets AR(0.5) noise pass for a round effect), clipped to [0, 0.95]; the
    t on Bartlett's effective df, (residual df - 1)(1 - rho)/(1 + rho).  Without
    ``seq`` the runs are taken as independent (ordinary least squares).  Step-down
    (Holm): the round with the smallest p is named when p < ``alpha`` / (rounds not yet named);
    the fit is then repeated without the named rounds, so the others are tested against each
    other, not against a mean a named round pulled (no mirror image of a slow round is named as
    a fast one).  ``significant``: named.  Assumes the round shifts every cell by the same
    factor, noise equal in variance on the log scale.

    Returns
    -------
    DataFrame
        One row per round: ``round, n_runs, n_cells, effect_pct, ci_low_pct, ci_high_pct,
        p_value, p_adjusted, significant, against`` (the rounds it is set against), ``note``;
        a named round's figures are from the fit in
        which it was named (against the rounds still unnamed then), the others' from the last
        fit; ``attrs["rho"]`` holds the first fit's noise autocorrelation, ``attrs["method"]``
        the method.  Empty with fewer than two rounds or no residual df.
    """
    missing = [c for c in (*keys, metric, round_col) if c not in runs.columns]
    if missing:
        raise ValueError(f"runs lack column(s) {missing} needed for round effects")
    v = runs[_valid_mask(runs, metric)].copy()
    v["tb_y"] = pd.to_numeric(v[metric], errors="coerce")
    v = v[(v["tb_y"] > 0) & v[round_col].notna()]
    cell = pd.Series(list(zip(*(v[k] for k in keys), strict=True)), index=v.index)
    ci, _ = pd.factorize(cell)
    rounds = np.sort(v[round_col].astype(int).unique())
    ri = np.searchsorted(rounds, v[round_col].astype(int).to_numpy())
    pos = None  # without the execution order the runs are taken as independent
    if "seq" in v.columns and v["seq"].notna().all():
        pos = pd.to_numeric(v["seq"]).rank(method="first").to_numpy()
    y = np.log(v["tb_y"].to_numpy(float))
    out = pd.DataFrame(columns=COLUMNS)
    out.attrs.update(method=ROUND_METHOD, rho=None)
    keep = np.arange(len(rounds))
    first = _fit(y, ci, ri, pos, keep)
    if first is None:
        return out
    out.attrs["rho"] = first["rho"]
    rows: dict[int, dict] = {}
    fit, p_run = first, 0.0
    while fit is not None:
        j = int(np.argmin(fit["p"]))
        p_adj = max(p_run, min(1.0, len(keep) * float(fit["p"][j])))
        named = p_adj < alpha
        for i, rj in enumerate(keep):
            if named and i != j:
                continue
            rows[int(rj)] = _row(fit, i, rounds, keep, ri, ci, level, named, p_adj)
        if not named:
            break
        p_run = p_adj
        keep = np.delete(keep, j)
        fit = _fit(y, ci, ri, pos, keep) if len(keep) >= 2 else None
    for rj in keep:  # rounds left once two remain and one was named: figures from the last fit
        rows.setdefault(int(rj), _row(first, int(rj), rounds, np.arange(len(rounds)), ri, ci,
                                      level, False, 1.0))  # fmt: skip
    out = pd.DataFrame([rows[j] for j in sorted(rows)])[COLUMNS]
    out.attrs.update(method=ROUND_METHOD, rho=first["rho"])
    return out


def _row(fit, i, rounds, keep, ri, ci, level, named, p_adj) -> dict:
    """One round's row: its effect against the other rounds of ``keep``, and its note."""
    rj = keep[i]
    q = _st.t.ppf(0.5 + level / 2, fit["df"])
    est, se = fit["est"][i], fit["se"][i]
    eff, lo, hi = ((np.exp(x) - 1) * 100 for x in (est, est - q * se, est + q * se))
    others = _span([rounds[o] for o in keep if o != rj])
    return {
        "round": int(rounds[rj]),
        "n_runs": int((ri == rj).sum()),
        "n_cells": int(len(np.unique(ci[ri == rj]))),
        "effect_pct": eff,
        "ci_low_pct": lo,
        "ci_high_pct": hi,
        "p_value": float(fit["p"][i]),
        "p_adjusted": p_adj if named else max(p_adj, min(1.0, len(keep) * float(fit["p"][i]))),
        "significant": bool(named),
        "against": [int(rounds[o]) for o in keep if o != rj],
        # signed: the interval reads around its own estimate, whichever side of 0 it lies
        "note": f"round {rounds[rj]} is {eff:+.0f}% [{lo:+.0f}, {hi:+.0f}] against {others} "
        f"(Holm p={p_adj if named else 1.0:.2g}): warm-up or drift",
    }


def round_notes(effects: pd.DataFrame) -> list[str]:
    """The sentences of the rounds :func:`round_effects` named (empty when none), largest
    effect first; each named round is tested against the rounds not named before it, so no
    mirror image of another is among them."""
    if not len(effects):
        return []
    sig = effects[effects["significant"]]
    sig = sig.reindex(sig["effect_pct"].abs().sort_values(ascending=False).index)
    return list(sig["note"])


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

"""Verdicts of a comparison, measured in seeded simulation: how often each claim is wrong.

The verdict is read off the simultaneous interval (``tibenchlib.stats._interval_verdicts``), and
the unpaired test and interval take the conservative df min(n) - 1. Both are checked here with the
vectorised cores :func:`tibenchlib.stats.compare_arms` runs, on normal run figures whose truth is
known, thousands of comparisons at once.
"""

from __future__ import annotations

import numpy as np
import pytest

from tibenchlib.stats import _fieller_arrays, _interval_verdicts, _welch_arrays

DELTA = 2.0  # percent


def _cells(rng, shape, n_a, n_b, sd_a, sd_b, effect=0.0, mean=1000.0):
    """Arm means and variances of ``shape`` simulated cells (normal runs)."""
    a = mean + sd_a * rng.standard_normal((*shape, n_a))
    b = mean * (1 + effect) + sd_b * rng.standard_normal((*shape, n_b))
    return b.mean(-1), b.var(-1, ddof=1), a.mean(-1), a.var(-1, ddof=1)


def _pct_interval(mb, vb, nb, ma, va, na, level, df_method="min"):
    _, lo, hi, _, _ = _fieller_arrays(mb, vb, nb, ma, va, na, level, df_method)
    return (lo - 1) * 100, (hi - 1) * 100


@pytest.mark.parametrize("n_a, n_b", [(5, 5), (5, 8), (8, 5), (8, 8)])
@pytest.mark.parametrize("sd_a, sd_b", [(30.0, 10.0), (10.0, 30.0)])
def test_family_wise_false_claims_with_unequal_spreads(n_a, n_b, sd_a, sd_b):
    """22 cells with no difference (a TPC-H power run), spreads 3:1: the family-wise rate of a
    false claim - Holm's p below alpha anywhere, or a simultaneous interval excluding 0 - stays
    <= 5.5 %. Welch-Satterthwaite df gave 4.2-10.7 % here (7.1 % at 5 + 5). 4000 families: the
    binomial standard error at 5 % is 0.34 %, so a true 5 % passes and 7 % cannot (measured on
    min(n) - 1 df: 0.05-2.4 %)."""
    rng = np.random.default_rng(2024 + 10 * n_a + n_b + int(sd_a))
    fams, m, alpha = 4000, 22, 0.05
    mb, vb, ma, va = _cells(rng, (fams, m), n_a, n_b, sd_a, sd_b)
    p = _welch_arrays(mb, vb, n_b, ma, va, n_a)[2]
    # Holm rejects something in a family iff its smallest p is below alpha / m
    holm_fw = (p.min(axis=1) < alpha / m).mean()
    lo, hi = _pct_interval(mb, vb, n_b, ma, va, n_a, 1 - alpha / m)
    verdict, _ = _interval_verdicts(lo, hi, np.ones_like(lo, bool), DELTA)
    claim_fw = np.isin(verdict, ["better", "worse"]).any(axis=1).mean()
    assert holm_fw <= 0.055, holm_fw
    assert claim_fw <= 0.055, claim_fw
    # and Satterthwaite's df is what went wrong: the same data, its df, too many claims at 5 + 8
    if (n_a, n_b, sd_a) == (8, 5, 10.0):
        _, _, ws = _welch_arrays_ws(mb, vb, n_b, ma, va, n_a)
        assert (ws.min(axis=1) < alpha / m).mean() > 0.07


def _welch_arrays_ws(mx, vx, nx, my, vy, ny):
    """Welch's t on Satterthwaite's df, computed plainly (the former test, for contrast)."""
    from scipy import stats

    a, b = vx / nx, vy / ny
    t = (mx - my) / np.sqrt(a + b)
    df = (a + b) ** 2 / (a**2 / (nx - 1) + b**2 / (ny - 1))
    return t, df, 2 * stats.t.sf(np.abs(t), df)


# true effect as a fraction of delta -> the verdicts that would be wrong there
WRONG = {
    0.0: {"better", "worse"},
    0.5: {"worse", "better at least delta"},
    1.0: {"worse", "better below delta", "equivalent"},
    2.0: {"worse", "better below delta", "equivalent"},
}


@pytest.mark.parametrize("n, cv", [(3, 0.03), (5, 0.03), (5, 0.01), (8, 0.02)])
def test_each_interval_verdicts_error_rate_at_known_effects(n, cv):
    """One cell, true effects 0, delta/2, delta and 2 delta (delta = 2 %): every wrong verdict -
    a direction at no effect, the wrong direction, "at least delta" at delta/2, "below delta" or
    "equivalent" at delta and 2 delta - needs the interval to miss the truth on one side, so it
    stays <= 2.5 % per side. 8000 comparisons per effect: standard error 0.17 % at 2.5 %, so
    the bound asserted is 3 %; measured 0-1.7 % (the estimate-based rules issued "small" at a
    true +2.5 % up to 15 % of the time and "better" at +1.5 % up to 20 %)."""
    rng = np.random.default_rng(int(n * 1000 + cv * 1e4))
    sims = 8000
    for frac, wrong in WRONG.items():
        effect = frac * DELTA / 100
        mb, vb, ma, va = _cells(rng, (sims,), n, n, 1000 * cv, 1000 * (1 + effect) * cv, effect)
        lo, hi = _pct_interval(mb, vb, n, ma, va, n, 0.95)
        verdict, size = _interval_verdicts(lo, hi, np.ones(sims, bool), DELTA)
        said = np.char.add(np.char.add(verdict.astype(str), " "), size.astype(str))
        said = np.char.strip(said)
        for w in wrong:
            # "better" alone counts every better verdict, with any size
            rate = np.mean([s == w or s.startswith(w + " ") for s in said])
            assert rate <= 0.03, (n, cv, frac, w, rate)
    # and the rules do say something: at 2 delta with n = 5, CV 1 % mostly "at least delta"
    if (n, cv) == (5, 0.01):
        assert np.mean(said == "better at least delta") > 0.5

"""Two arms measured in the same rounds: an interval that pools when the rounds do not differ.

Not the comparison's interval: :func:`tibenchlib.stats.compare_arms` keeps the paired t. This
one assumes that whatever moves a round moves both of its arms alike; a carry-over or a position
effect moves them apart and makes its pooled half too narrow (A-vs-A claims of 7.5-9.1% under
the run-order carry-over models; docs/statistics.md, "Rounds as blocks"). It stays for the
power comparison with pyperf (``benchmarks/bench_power.py``) and as the calibration it proves.

Rounds are blocks: each ran both arms, and a round that runs slow moves both. On the log scale,
with ``d_r = log(b_r / a_r)`` and ``s_r = log(b_r) + log(a_r)`` over k + 1 rounds, the rounds'
sum of squares splits into a within-round part ``SS_E = sum (d_r - mean d)^2 / 2`` and a
between-round part ``SS_B = sum (s_r - mean s)^2 / 2``, each on k df. Two intervals for the
log ratio, both centred on mean d:

* paired: the half-width ``t(k) sd_d / sqrt(n)`` rests on ``SS_E`` alone; it covers whatever the
  round effects are, but at three rounds it has two df;
* pooled: ``sqrt((sd_d^2 + sd_s^2) / (2 n))`` on 2k df, the two-sample t of the arms as if the
  rounds were alike (pyperf's); with no round variance it has twice the df, with some it is
  too wide (never too narrow).

Picking one after looking (a pre-test on ``SS_B / SS_E``, or REML's boundary estimate of the
round variance with Kenward-Roger's df, or the shorter of the two at their usual t values)
breaks the 95 %: with no round variance it claims 7-8 % of A-vs-A comparisons at 3 and 5 rounds
(``tests/test_blocks.py``). Instead the interval is the *shorter* of the two, each
with its own critical value: ``q_pool = POOL_WIDEN x t(2k)``, a hair above the pooled t's, and
``q_pair`` calibrated so that the shorter one misses with probability exactly ``1 - level``
when the rounds do not differ. That is the worst case: with no round variance,
``T_pool = mean d / se_pool`` is t(2k) and independent of ``R = SS_B / (SS_B + SS_E)``
(Beta(k/2, k/2)), and the shorter interval misses when ``|T_pool| > min(q_pool, q_pair
sqrt(2 (1 - R)))`` - a one-dimensional integral over R; a round variance only widens the pooled
interval (its ``SS_B`` grows) and leaves the paired one exact, so the miss rate falls towards the
paired interval's own share (``tests/test_blocks.py`` checks both by seeded simulation). The
result has the pooled t's power within sampling error when the rounds are alike (31.6 % against
pyperf's 32.4 % for +5 %, CV 3 %, 3 rounds: ``benchmarks/bench_power.py``) and more than it under
round drift (8.3 % against 6.7 %), though less there than the paired t alone (22.1 %).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy import special as _sp
from scipy import stats as _st

__all__ = ["POOL_WIDEN", "BLOCKED_METHOD", "critical_values", "blocked_arrays"]

#: The pooled interval's critical value over the pooled t's: the price of letting the paired
#: interval win under round drift (1.00 would leave it no miss probability to spend).
POOL_WIDEN = 1.02
BLOCKED_METHOD = (
    "rounds as blocks: the shorter of the paired t interval (df = n - 1) and the pooled one "
    "(df = 2n - 2), critical values calibrated to cover at the level whatever the round variance"
)
#: Gauss-Legendre nodes of the miss integral, and the alpha grid of the calibration table
#: (log-spaced, so p-values down to 1e-12 are read off it).
_NODES = 64
_ALPHAS = np.geomspace(1e-12, 0.999, 72)


def _f(x) -> np.ndarray:
    return np.asarray(x, dtype=float)


def _miss(k: int, q_pool: np.ndarray, q_pair: np.ndarray) -> np.ndarray:
    """Probability that the shorter interval misses when the rounds do not differ.

    ``W = 1 - R ~ Beta(k/2, k/2)``; the paired interval is the shorter when
    ``W < w* = (q_pool / q_pair)^2 / 2``. The miss is ``2 t_2k.sf(q_pool) P(W >= w*)`` plus
    ``int_0^w* 2 t_2k.sf(q_pair sqrt(2 w)) f(w) dw``, the latter by Gauss-Legendre in
    ``v = sqrt(w)``, where the integrand is smooth.
    """
    a = k / 2
    w_star = np.minimum((q_pool / q_pair) ** 2 / 2, 1.0)
    far = 2 * _sp.stdtr(2 * k, -q_pool) * _sp.betaincc(a, a, w_star)
    x, g = np.polynomial.legendre.leggauss(_NODES)
    top = np.sqrt(w_star)[..., None]
    v = top * (x + 1) / 2
    dens = 2 * v ** (2 * a - 1) * (1 - v**2) ** (a - 1) / _sp.beta(a, a)
    near = (2 * _sp.stdtr(2 * k, -q_pair[..., None] * np.sqrt(2) * v) * dens) @ g
    return far + near * top[..., 0] / 2


@lru_cache(maxsize=64)
def _table(k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For k df: (alpha grid, q_pool, q_pair) with q_pair calibrated at each alpha by
    bisection (the miss falls as q_pair grows), all alphas at once."""
    q_pool = POOL_WIDEN * _st.t.isf(_ALPHAS / 2, 2 * k)
    lo = np.full(_ALPHAS.size, 1e-3)
    hi = np.full(_ALPHAS.size, 1e7)
    for _ in range(45):
        mid = np.sqrt(lo * hi)
        over = _miss(k, q_pool, mid) > _ALPHAS
        lo, hi = np.where(over, mid, lo), np.where(over, hi, mid)
    return _ALPHAS, q_pool, hi


def critical_values(n, level) -> tuple[np.ndarray, np.ndarray]:
    """``(q_pool, q_pair)`` for ``n`` rounds at ``level`` (arrays broadcast; NaN where n < 2).

    q_pool is ``POOL_WIDEN`` times the t quantile on 2(n - 1) df; q_pair is calibrated so that
    the shorter interval covers at ``level`` when the rounds do not differ (see the module).
    """
    n, level = np.broadcast_arrays(_f(n), _f(level))
    qp, qd = np.full(n.shape, np.nan), np.full(n.shape, np.nan)
    for k in np.unique(n[np.isfinite(n) & (n >= 2)] - 1):
        at = n - 1 == k
        a, pool, pair = _table(int(k))
        la = np.log(1 - level[at])
        qp[at] = POOL_WIDEN * _st.t.isf((1 - level[at]) / 2, 2 * k)
        qd[at] = np.exp(np.interp(la, np.log(a), np.log(pair)))
    return qp, qd


def _p_values(n, t_pool, t_pair) -> np.ndarray:
    """The smallest alpha at which the shorter interval excludes 0: the smaller of the alpha
    that puts ``q_pool`` at ``|t_pool|`` and the one that puts ``q_pair`` at ``|t_pair|``."""
    n, t_pool, t_pair = np.broadcast_arrays(_f(n), np.abs(_f(t_pool)), np.abs(_f(t_pair)))
    p = np.full(n.shape, np.nan)
    for k in np.unique(n[np.isfinite(n) & (n >= 2)] - 1):
        at = n - 1 == k
        a, _, pair = _table(int(k))
        p_pool = 2 * _st.t.sf(t_pool[at] / POOL_WIDEN, 2 * k)
        # q_pair falls as alpha grows: interpolate log alpha on the reversed log q_pair axis
        lq = np.log(np.maximum(t_pair[at], 1e-300))
        p_pair = np.exp(np.interp(-lq, -np.log(pair), np.log(a)))
        p[at] = np.minimum(np.minimum(p_pool, p_pair), 1.0)
    return p


def blocked_arrays(mean_d, sd_d, sd_s, n, level):
    """Interval for the log ratio of two arms over ``n`` rounds as blocks, vectorised.

    Parameters
    ----------
    mean_d, sd_d : array_like
        Mean and sd of the within-round log ratios ``d_r``.
    sd_s : array_like
        Sd of the within-round log sums ``s_r`` (what the rounds share).
    n : array_like
        Rounds.
    level : float or array_like
        Confidence level (an array for simultaneous intervals).

    Returns
    -------
    tuple of arrays
        ``(ratio, low, high, df, p, pooled)``: exp(mean d) with the shorter interval's ends,
        the df of the interval chosen (2n - 2 pooled, n - 1 paired), the p-value of the same
        rule, and whether the pooled interval was the shorter; NaN (False) where n < 2.
    """
    mean_d, sd_d, sd_s, n = _f(mean_d), _f(sd_d), _f(sd_s), _f(n)
    q_pool, q_pair = critical_values(n, level)
    with np.errstate(invalid="ignore", divide="ignore"):
        se_pair = sd_d / np.sqrt(n)
        se_pool = np.sqrt((sd_d**2 + sd_s**2) / (2 * n))
        h_pool, h_pair = q_pool * se_pool, q_pair * se_pair
        pooled = h_pool < h_pair
        half = np.where(pooled, h_pool, h_pair)
        p = _p_values(n, mean_d / se_pool, mean_d / se_pair)
    p = np.where(se_pair == 0, np.where(mean_d == 0, 1.0, 0.0), p)
    ok = np.isfinite(n) & (n >= 2)
    return (
        np.exp(mean_d),
        np.where(ok, np.exp(mean_d - half), np.nan),
        np.where(ok, np.exp(mean_d + half), np.nan),
        np.where(ok, np.where(pooled, 2 * (n - 1), n - 1), np.nan),
        np.where(ok, p, np.nan),
        ok & pooled,
    )

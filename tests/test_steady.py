"""Within-run diagnostics: MSER-5 warm-up cut, steady-state TPS, batch means, interval CV."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import signal, stats

from tibenchlib.steady import (
    batch_means_ci,
    interval_cv,
    mser5,
    steady_state_table,
    steady_state_tps,
)

T = np.arange(1, 601, dtype=float)


def _ramp(rng):
    return 1000 * (1 - 0.6 * np.exp(-T / 20)) + rng.normal(0, 20, T.size)


def _mser_plain(x):
    """MSER-5 written out loop by loop (no running sums) for comparison."""
    k = len(x) // 5
    z = np.asarray(x[: 5 * k]).reshape(k, 5).mean(1)
    dmax = k - max(min(10, k // 2), k // 10)
    stat = [((z[d:] - z[d:].mean()) ** 2).sum() / (k - d) ** 2 for d in range(dmax + 1)]
    return 5 * int(np.argmin(stat))


def test_mser5_white_noise_cuts_about_nothing():
    rng = np.random.default_rng(1)
    cuts = np.array([mser5(rng.normal(1000, 20, 600))["cut_index"] for _ in range(200)])
    assert np.median(cuts) == 0
    assert np.mean(cuts <= 30) >= 0.9  # <= 5 % of the run in nine runs out of ten
    r = mser5(np.random.default_rng(2).normal(1000, 20, 600))
    assert r["cut_index"] <= 30 and r["warnings"] == []


def test_mser5_ramp_cut_between_50_and_110_s():
    r = mser5(_ramp(np.random.default_rng(3)), T)
    assert 50 <= r["cut_s"] <= 110, r
    rng = np.random.default_rng(4)
    cuts = np.array([mser5(_ramp(rng), T)["cut_s"] for _ in range(200)])
    assert 50 <= np.median(cuts) <= 110
    assert np.mean((cuts >= 50) & (cuts <= 110)) >= 0.85


def test_mser5_matches_plain_computation_and_is_scale_free():
    rng = np.random.default_rng(5)
    for _ in range(20):
        x = _ramp(rng)
        cut = mser5(x)["cut_index"]
        assert cut == _mser_plain(x)
        assert mser5(x * 1e-3)["cut_index"] == cut
        assert mser5(x * 250 + 1e6)["cut_index"] == cut


def test_mser5_reports_seconds_from_series_index_and_no_steady_state():
    x = pd.Series(np.linspace(0, 1000, 300), index=np.arange(2, 602, 2.0))  # never settles
    r = mser5(x)
    assert r["cut_s"] == x.index[r["cut_index"] - 1]
    assert r["cut_index"] > 150
    assert any(w.startswith("no steady state") for w in r["warnings"])
    short = mser5([1.0, 2, 3])
    assert short["cut_index"] == 0 and "too few" in short["warnings"][0]


def test_steady_state_is_events_over_seconds_after_the_cut():
    t = np.array([1, 2, 3, 4, 6, 8, 10.0])  # interval lengths 1,1,1,1,2,2,2
    tps = np.array([10, 20, 30, 40, 50, 60, 70.0])
    iv = pd.DataFrame({"t": t, "tps": tps})
    r = steady_state_tps(iv, warmup=2)
    keep = t - np.diff(t, prepend=0) >= 2  # intervals starting at or after 2 s
    dt = np.diff(t, prepend=0)[keep]
    assert r["tps"] == pytest.approx((tps[keep] * dt).sum() / dt.sum())
    assert r["cut_index"] == 2 and r["window_s"] == 8 and r["warmup_method"] == "fixed 2 s"
    full = steady_state_tps(iv, warmup=0)
    assert full["tps"] == pytest.approx((tps * np.diff(t, prepend=0)).sum() / 10)
    late = steady_state_tps(iv, warmup=6)
    assert any(w.startswith("no steady state") for w in late["warnings"])


def test_steady_state_mser_on_ramp_and_batch_interval():
    x = _ramp(np.random.default_rng(6))
    r = steady_state_tps(pd.DataFrame({"t": T, "tps": x}))
    assert r["warmup_method"] == "MSER-5" and 50 <= r["cut_s"] <= 110
    assert r["tps"] == pytest.approx(x[r["cut_index"] :].mean())
    assert r["bm_ci_low"] < r["tps"] < r["bm_ci_high"]
    assert r["interval_cv"] == pytest.approx(
        x[r["cut_index"] :].std(ddof=1) / x[r["cut_index"] :].mean()
    )


def test_batch_means_known_answer():
    x = np.arange(40.0)
    r = batch_means_ci(x, batches=20)
    z = x.reshape(20, 2).mean(1)
    # t on the log scale (changed on purpose: a throughput's interval stays above 0)
    half = stats.t.ppf(0.975, 19) * z.std(ddof=1) / np.sqrt(20) / z.mean()
    assert (r["batches"], r["batch_size"], r["df"]) == (20, 2, 19)
    assert r["ci_low"] == pytest.approx(z.mean() * np.exp(-half)) and r["ci_low"] > 0
    assert r["ci_high"] == pytest.approx(z.mean() * np.exp(half))
    assert any("correlated" in w for w in r["warnings"])  # a trend is not noise
    r = batch_means_ci(np.arange(41.0), batches=20)  # remainder dropped at the start
    assert r["mean"] == pytest.approx(np.arange(1, 41.0).mean())


def test_batch_means_coverage_on_ar1():
    """Batch means are honest for within-run precision where naive s/sqrt(n) is not."""
    rng = np.random.default_rng(9)
    phi, sims = 0.7, 2000
    e = rng.standard_normal((sims, 600))
    x = 10.0 + signal.lfilter([1.0], [1.0, -phi], e, axis=1)  # true mean 10 (TPS-like)
    bm = x.reshape(sims, 20, 30).mean(2)
    m = bm.mean(1)
    half = stats.t.ppf(0.975, 19) * bm.std(1, ddof=1) / np.sqrt(20) / m  # on the log scale
    bm_cover = ((m * np.exp(-half) <= 10) & (10 <= m * np.exp(half))).mean()
    naive = stats.t.ppf(0.975, 599) * x.std(1, ddof=1) / np.sqrt(600)
    naive_cover = (np.abs(x.mean(1) - 10) <= naive).mean()
    assert 0.90 <= bm_cover <= 0.97 and naive_cover < 0.75
    one = batch_means_ci(x[0])  # and the library agrees with the array version
    assert one["ci_high"] == pytest.approx(m[0] * np.exp(half[0]))
    assert one["ci_low"] == pytest.approx(m[0] * np.exp(-half[0]))


def test_batch_means_interval_stays_positive():
    # a run whose throughput swings from near 0 to 3,000: the linear interval went below 0
    rng = np.random.default_rng(4)
    x = np.abs(rng.standard_cauchy(60)) * 300
    r = batch_means_ci(x)
    assert r["ci_low"] > 0 and r["ci_low"] < r["mean"] < r["ci_high"]


def test_interval_cv():
    assert interval_cv([90, 100, 110]) == pytest.approx(10 / 100)
    assert interval_cv([1.0]) is None
    assert interval_cv([0, 0, 0]) is None
    assert interval_cv([0, 90, 100, 110], start=1) == pytest.approx(0.1)


def test_steady_state_table_per_run():
    r1 = _ramp(np.random.default_rng(10))
    iv = pd.concat(
        [
            pd.DataFrame({"run_id": "r1", "t": T, "tps": r1}),
            pd.DataFrame({"run_id": "r2", "t": T, "tps": 1000 * (1 + 0.3 * np.sin(T / 10))}),
        ]
    )
    tab = steady_state_table(iv).set_index("run_id")
    assert list(tab.index) == ["r1", "r2"]
    assert tab.loc["r1", "cut_s"] == mser5(r1, T)["cut_s"]
    assert tab.loc["r1", "steady_tps"] == pytest.approx(steady_state_tps(r1)["tps"])
    assert any("varies by" in w for w in tab.loc["r2", "warnings"])
    with pytest.raises(ValueError, match="run_key"):
        steady_state_table(iv, by="run_key")

"""Paired within-round comparison: known answers, the fallback, and simulations with round drift.

A round runs every arm once; drift on a shared host moves a whole round. Simulated log figures
are ``log mu_arm + round effect + within-round noise``; the truth (the ratio) is known, so the
coverage of the interval and the rate of false verdicts are measured, not assumed. Vectorised:
every simulated study is one row of an array.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from tibenchlib.stats import (
    PAIRED_METHOD,
    _fieller_arrays,
    _paired_arrays,
    compare_arms,
    holm,
    paired_ratio,
)

ISSUE_RATIOS = [1.28, 1.31, 1.28, 1.35, 1.06]  # flush 1 -> 2, oltp_write_only, 1 thread


def test_paired_ratio_known_answer_from_the_issue():
    r = paired_ratio(ISSUE_RATIOS, [1.0] * 5)
    d = np.log(ISSUE_RATIOS)
    half = stats.t.ppf(0.975, 4) * d.std(ddof=1) / np.sqrt(5)
    assert r["ratio"] == pytest.approx(np.exp(d.mean()))
    assert r["ci_low"] == pytest.approx(np.exp(d.mean() - half))
    assert r["ci_high"] == pytest.approx(np.exp(d.mean() + half))
    assert r["p_value"] == pytest.approx(stats.ttest_1samp(d, 0).pvalue)
    # the issue's "about [+12, +39] %" (its unpaired Fieller interval was [-2.8, +60.5])
    assert (r["ci_low"] - 1) * 100 == pytest.approx(12, abs=1.5)
    assert (r["ci_high"] - 1) * 100 == pytest.approx(39, abs=2.5)
    assert r["df"] == 4 and r["n_pairs"] == 5 and not r["warnings"]


def test_paired_ratio_is_reciprocal_and_drops_bad_pairs():
    x, y = [1100.0, 1210.0, 980.0, 1005.0], [1000.0, 1150.0, 900.0, 0.0]
    ab, ba = paired_ratio(x, y), paired_ratio(y, x)
    assert ab["n_pairs"] == 3 and any("dropped" in w for w in ab["warnings"])
    assert ab["ratio"] == pytest.approx(1 / ba["ratio"])
    assert ab["ci_low"] == pytest.approx(1 / ba["ci_high"])
    one = paired_ratio([1100.0], [1000.0])
    assert one["ci_low"] is None and one["p_value"] is None and one["warnings"]
    with pytest.raises(ValueError, match="as many values"):
        paired_ratio([1.0, 2.0], [1.0])


def _runs(a, b, order):
    """Two arms over rounds; ``order[r]`` is True when B ran first in round r (from seq)."""
    rows = []
    for r, (x, y) in enumerate(zip(a, b, strict=True), start=1):
        first_b = order[r - 1]
        rows.append({"arm": "A", "repeat": r, "seq": 2 * r + first_b, "tps": x})
        rows.append({"arm": "B", "repeat": r, "seq": 2 * r + (not first_b), "tps": y})
    return pd.DataFrame(rows).assign(workload="w", threads=1, status="ok")


def test_compare_arms_pairs_when_the_order_varies_else_falls_back():
    base = np.array([1000.0, 800.0, 1150.0, 880.0, 1080.0])  # round drift, CV 14 %
    cand = base * np.array(ISSUE_RATIOS)
    rot = _runs(base, cand, [False, True, False, True, False])
    r = compare_arms(rot, "A", "B").iloc[0]
    want = paired_ratio(cand, base)
    assert r["method"] == PAIRED_METHOD and r["n_pairs"] == 5
    assert r["ratio"] == pytest.approx(want["ratio"])
    assert r["ci_low_pct"] == pytest.approx((want["ci_low"] - 1) * 100)
    assert r["p_value"] == pytest.approx(want["p_value"])
    assert r["verdict"] == "better" and any("paired within 5 rounds" in w for w in r["warnings"])

    fixed = compare_arms(_runs(base, cand, [False] * 5), "A", "B").iloc[0]
    assert fixed["method"].startswith("Fieller") and fixed["n_pairs"] == 0
    assert any("same order in every round" in w for w in fixed["warnings"])
    _, lo, hi, _, _ = _fieller_arrays(
        cand.mean(), cand.var(ddof=1), 5, base.mean(), base.var(ddof=1), 5, 0.95, "min"
    )
    assert fixed["ci_low_pct"] == pytest.approx((lo - 1) * 100)
    # the round drift costs the unpaired interval its width (the issue: [-2.8, +60.5])
    assert fixed["ci_high_pct"] - fixed["ci_low_pct"] > 1.5 * (r["ci_high_pct"] - r["ci_low_pct"])
    forced = compare_arms(_runs(base, cand, [False] * 5), "A", "B", paired=True).iloc[0]
    assert forced["method"] == PAIRED_METHOD
    unpaired = compare_arms(rot, "A", "B", paired=False).iloc[0]
    assert unpaired["method"] == fixed["method"]
    # without seq (a summary CSV, log directories) there is nothing to pair on
    assert compare_arms(rot.drop(columns="seq"), "A", "B").iloc[0]["n_pairs"] == 0


def test_simultaneous_interval_and_words_when_an_interval_is_not_a_claim():
    rng = np.random.default_rng(3)
    cells = []
    for t in range(1, 7):
        a = 1000 * (1 + 0.05 * rng.standard_normal(3))
        b = a * (1.08 if t == 1 else 1.0) * (1 + 0.03 * rng.standard_normal(3))
        cells.append(_runs(a, b, [False, True, False]).assign(threads=t))
    cmp = compare_arms(pd.concat(cells, ignore_index=True), "A", "B").set_index("threads")
    assert (cmp["family_size"] == 6).all()
    # the simultaneous interval is the same estimator at level 1 - 0.05/6, so it is wider
    assert (
        (cmp["ci_low_adj_pct"] < cmp["ci_low_pct"]) & (cmp["ci_high_adj_pct"] > cmp["ci_high_pct"])
    ).all()
    r = cmp.loc[1]
    d = np.log(r["ratio"])
    half = (np.log(r["ratio_ci_high"]) - d) / stats.t.ppf(0.975, 2)
    assert r["ci_low_adj_pct"] == pytest.approx(
        (np.exp(d - stats.t.ppf(1 - 0.025 / 6, 2) * half) - 1) * 100
    )
    np.testing.assert_allclose(cmp["p_adjusted"], holm(cmp["p_value"]))
    for row in cmp.itertuples():
        excludes = row.ci_low_pct > 0 or row.ci_high_pct < 0
        if row.verdict in ("better", "worse"):
            assert excludes
        elif excludes:  # an interval excluding 0 beside a non-claim is explained in words
            assert any("not a claim" in w or "no claim" in w for w in row.warnings), row


def test_a_claim_needs_a_bounded_interval_that_excludes_zero():
    # Welch p is small but Fieller is unbounded: the baseline mean is barely above 0 relative to
    # its spread, so the ratio cannot be bounded
    runs = pd.DataFrame(
        {
            "workload": "w",
            "threads": 1,
            "arm": ["A"] * 2 + ["B"] * 2,
            "repeat": [1, 2, 1, 2],
            "tps": [1.0, 60.0, 500.0, 501.0],
        }
    )
    r = compare_arms(runs, "A", "B").iloc[0]
    assert np.isnan(r["ci_low_pct"])
    assert r["verdict"] not in ("better", "worse")


# -- simulations with round drift ------------------------------------------------------------

SIMS = 20000


def _sim(rng, sims, n, ratio, drift_cv, within_cv):
    """Run figures [sims, n] of arms A and B sharing a round effect (log-normal model)."""
    rnd = drift_cv * rng.standard_normal((sims, n))
    a = 1000 * np.exp(rnd + within_cv * rng.standard_normal((sims, n)))
    b = 1000 * ratio * np.exp(rnd + within_cv * rng.standard_normal((sims, n)))
    return a, b


def _paired(a, b, level=0.95):
    d = np.log(b / a)
    return _paired_arrays(d.mean(1), d.std(1, ddof=1), a.shape[1], level)


def _unpaired(a, b, level=0.95):
    n = a.shape[1]
    r, lo, hi, _, _ = _fieller_arrays(
        b.mean(1), b.var(1, ddof=1), n, a.mean(1), a.var(1, ddof=1), n, level
    )
    from tibenchlib.stats import _welch_arrays

    p = _welch_arrays(b.mean(1), b.var(1, ddof=1), n, a.mean(1), a.var(1, ddof=1), n)[2]
    return r, lo, hi, p


@pytest.mark.parametrize("n", [3, 5])
@pytest.mark.parametrize("drift_cv", [0.10, 0.0])
def test_paired_coverage_with_and_without_round_drift(n, drift_cv):
    rng = np.random.default_rng(100 * n + int(100 * drift_cv))
    ratio = 1.25
    a, b = _sim(rng, SIMS, n, ratio, drift_cv, within_cv=0.03)
    # the paired estimand is the ratio of medians of the log-normal arms: exactly `ratio`
    _, lo, hi, _, p = _paired(a, b)
    cover = ((lo <= ratio) & (ratio <= hi)).mean()
    assert 0.94 <= cover <= 0.96, cover


@pytest.mark.parametrize("drift_cv", [0.10, 0.0])
def test_a_vs_a_false_verdicts_paired_and_unpaired(drift_cv):
    """Same system twice, 3 cells per comparison with Holm: few false claims either way."""
    rng = np.random.default_rng(11 + int(100 * drift_cv))
    sims, n, cells = 6000, 5, 3
    a, b = _sim(rng, sims * cells, n, 1.0, drift_cv, within_cv=0.03)
    for p in (_paired(a, b)[4], _unpaired(a, b)[3]):
        # Holm rejects something in a family iff its smallest p is below alpha / m
        family_false = (p.reshape(sims, cells).min(axis=1) * cells < 0.05).mean()
        assert family_false <= 0.055, family_false


def test_paired_finds_the_effect_that_round_drift_hides_from_the_unpaired_interval():
    """Drift CV 10 %, within-round CV 3 %, +10 %, 5 rounds: paired finds it, unpaired rarely."""
    rng = np.random.default_rng(5)
    a, b = _sim(rng, SIMS, 5, 1.10, drift_cv=0.10, within_cv=0.03)
    _, plo, _, _, pp = _paired(a, b)
    _, ulo, _, up = _unpaired(a, b)
    paired_power = ((pp < 0.05) & (plo > 1)).mean()
    unpaired_power = ((up < 0.05) & (ulo > 1)).mean()
    assert paired_power >= 0.95, paired_power
    assert unpaired_power <= 0.5, unpaired_power
    # without drift the two agree that the effect is there
    a, b = _sim(rng, SIMS, 5, 1.10, drift_cv=0.0, within_cv=0.03)
    assert ((_paired(a, b)[4] < 0.05).mean()) >= 0.95
    assert ((_unpaired(a, b)[3] < 0.05).mean()) >= 0.95


def test_compare_arms_simulated_studies_end_to_end():
    """The DataFrame path on simulated rotated rounds gives the same rates as the arrays."""
    rng = np.random.default_rng(21)
    sims, n = 2000, 5
    a, b = _sim(rng, sims, n, 1.0, drift_cv=0.10, within_cv=0.03)
    rounds = np.tile(np.arange(1, n + 1), sims)
    first_b = (rounds % 2 == 0).astype(int)
    wl = np.repeat(np.arange(sims), n)
    runs = pd.DataFrame(
        {
            "workload": np.concatenate([wl, wl]),
            "arm": ["A"] * a.size + ["B"] * b.size,
            "threads": 4,
            "repeat": np.concatenate([rounds, rounds]),
            "seq": np.concatenate([2 * rounds + first_b, 2 * rounds + 1 - first_b]),
            "tps": np.concatenate([a.ravel(), b.ravel()]),
        }
    )
    cmp = compare_arms(runs, "A", "B", family="workload")
    assert (cmp["method"] == PAIRED_METHOD).all()
    false = cmp["verdict"].isin(["better", "worse"]).mean()
    assert false <= 0.06, false  # nominal 5 %, sampling error about 0.5 %
    np.testing.assert_allclose(cmp["p_value"], _paired(a, b)[4])


def test_report_table_shows_the_simultaneous_interval_beside_the_per_cell_one():
    from tibenchlib.report.comparison import report_table

    rng = np.random.default_rng(4)
    cells = []
    for t in (1, 2, 4):
        a = 1000 * (1 + 0.05 * rng.standard_normal(5))
        b = a * 1.5 * (1 + 0.03 * rng.standard_normal(5))
        cells.append(_runs(a, b, [False, True, False, True, False]).assign(threads=t))
    cmp = compare_arms(pd.concat(cells, ignore_index=True), "A", "B")
    t = report_table(cmp)
    col = "simultaneous 95% (Bonferroni)"
    assert list(t.columns).index(col) == list(t.columns).index("TPS improvement (%)") + 1
    r = cmp.iloc[0]
    assert t[col][0] == f"[{r['ci_low_adj_pct']:+.1f}, {r['ci_high_adj_pct']:+.1f}]"
    assert (t["Verdict"] == "better").all()

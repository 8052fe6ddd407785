"""Scaling statistics on synthetic times with known speedups, and report 002's table."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pandas as pd
import pytest

from tibenchlib.tpch import scaling as S


def synthetic(
    speedups: dict[str, float],
    n: int = 5,
    queries: int = 22,
    cv: float = 0.02,
    seed: int = 7,
    mode: str = "power",
    streams: int = 1,
) -> pd.DataFrame:
    """Times t_q / speedup[arm] with independent normal noise of relative sd ``cv``."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.5, 30.0, queries)
    rows = []
    for arm, s in speedups.items():
        for q in range(1, queries + 1):
            for rep in range(1, n + 1):
                for stream in range(streams):
                    mu = base[q - 1] / s
                    rows.append(
                        {
                            "arm": arm,
                            "mode": mode,
                            "stream": stream,
                            "rep": rep,
                            "warmup": False,
                            "query": q,
                            "status": "ok",
                            "seconds": mu * (1 + cv * rng.standard_normal()),
                            "verified": True,
                            "started_at": 0.0,
                        }
                    )
    return pd.DataFrame(rows)


def test_known_speedups_are_recovered_with_intervals_covering_them():
    runs = synthetic({"3": 1.0, "4": 4 / 3, "5": 1.25})
    s = S.query_summary(runs)
    assert list(s.columns) == S.SUMMARY_COLUMNS
    assert len(s) == 66
    four, five = s[s.arm == "4"], s[s.arm == "5"]
    assert np.allclose(four.speedup, 4 / 3, rtol=0.04)
    assert np.allclose(five.improvement_pct, 20.0, atol=3.0)
    assert ((four.ci_low_pct <= 25.0) & (25.0 <= four.ci_high_pct)).mean() >= 0.85
    assert (four.not_scaled == False).all()  # noqa: E712
    assert np.allclose(four.efficiency, 1.0, rtol=0.04)  # linear: 4/3 faster with 4/3 units
    assert np.allclose(five.efficiency, 1.25 / (5 / 3), rtol=0.04)
    base = s[s.arm == "3"]
    assert (base.improvement_pct == 0).all() and base.not_scaled.isna().all()
    assert (s.verified == True).all()  # noqa: E712


def test_mean_and_t_interval_match_a_plain_computation():
    runs = synthetic({"a": 1.0, "b": 2.0}, n=4, queries=1)
    s = S.query_summary(runs)
    x = runs[(runs.arm == "b")].seconds.to_numpy()
    from scipy import stats as st

    # a time is positive: t on the log scale (delta method), back-transformed
    half = st.t.ppf(0.975, 3) * x.std(ddof=1) / 2 / x.mean()
    row = s[s.arm == "b"].iloc[0]
    assert row.mean_s == pytest.approx(x.mean())
    expect = (x.mean() * np.exp(-half), x.mean() * np.exp(half))
    assert (row.ci_low_s, row.ci_high_s) == pytest.approx(expect)
    y = runs[(runs.arm == "a")].seconds.to_numpy()
    # runs without start times: the order is not known, the comparison unpaired
    assert row.improvement_pct == pytest.approx((y.mean() - x.mean()) / y.mean() * 100)
    assert row.speedup == pytest.approx(y.mean() / x.mean())


def test_an_arm_that_does_not_scale_is_flagged():
    s = S.query_summary(synthetic({"1": 1.0, "2": 1.0}, queries=10))
    flags = s[s.arm == "2"].not_scaled
    assert flags.mean() >= 0.8  # 95% intervals contain the true 0 most of the time


@pytest.mark.slow  # a seeded Monte-Carlo simulation
def test_improvement_interval_coverage():
    # 400 queries of one run table are 400 independent simulations of one query's interval
    s = S.query_summary(synthetic({"a": 1.0, "b": 1.25}, n=3, queries=400, cv=0.05, seed=5))
    b = s[s.arm == "b"]
    hits = ((b.ci_low_pct <= 20.0) & (20.0 <= b.ci_high_pct)).mean()
    assert 0.92 <= hits <= 0.98


def test_one_repeat_gives_estimates_without_intervals():
    s = S.query_summary(synthetic({"a": 1.0, "b": 2.0}, n=1, queries=3))
    b = s[s.arm == "b"]
    assert b.ci_low_pct.isna().all() and b.ci_low_s.isna().all() and b.not_scaled.isna().all()
    assert b.improvement_pct.notna().all()
    assert b.warnings.str.contains("n = 1").all()


def test_throughput_streams_average_within_a_repeat():
    runs = synthetic({"a": 1.0, "b": 2.0}, n=3, queries=2, streams=4, mode="throughput")
    obs = S.observations(runs)
    assert len(obs) == 2 * 2 * 3  # arms x queries x repeats
    first = runs[(runs.arm == "a") & (runs["query"] == 1) & (runs.rep == 1)].seconds.mean()
    got = obs[(obs.arm == "a") & (obs["query"] == 1) & (obs.rep == 1)].seconds.iloc[0]
    assert got == pytest.approx(first)
    assert (S.query_summary(runs).n == 3).all()


def test_timeouts_are_reported_and_excluded():
    runs = synthetic({"a": 1.0, "b": 2.0}, n=3, queries=3)
    bad = (runs.arm == "b") & (runs["query"] == 2) & (runs.rep == 1)
    runs.loc[bad, ["status", "seconds"]] = ["timeout", 60.0]
    s = S.query_summary(runs)
    row = s[(s.arm == "b") & (s["query"] == 2)].iloc[0]
    assert row.status == "timeout"
    assert pd.isna(row.improvement_pct) and pd.isna(row.ci_low_pct)
    assert "1 of 3 repeats timeout" in row.warnings
    base_bad = (runs.arm == "a") & (runs["query"] == 3)
    runs.loc[base_bad, "status"] = "error"
    s = S.query_summary(runs)
    base3 = s[(s.arm == "a") & (s["query"] == 3)].iloc[0]
    assert base3.status == "error" and pd.isna(base3.improvement_pct)
    o = S.overall_summary(runs)
    assert (o.n_queries == 1).all() and (o.excluded == "Q2,Q3").all()


def test_warmup_rows_are_ignored():
    runs = synthetic({"a": 1.0, "b": 2.0}, n=2, queries=1)
    warm = runs.iloc[[0]].assign(warmup=True, rep=0, seconds=1e6)
    s = S.query_summary(pd.concat([runs, warm]))
    assert (s.n == 2).all() and s.mean_s.max() < 1e3


def test_geometric_mean_and_total_time():
    runs = synthetic({"3": 1.0, "5": 1.5}, n=4, queries=22, cv=0.01)
    o = S.overall_summary(runs)
    five = o[o.arm == "5"].iloc[0]
    assert five.geomean_ratio == pytest.approx(1 / 1.5, rel=0.01)
    assert five.speedup == pytest.approx(1.5, rel=0.01)
    assert five.geomean_ci_low_s < five.geomean_s < five.geomean_ci_high_s
    assert five.ratio_ci_low < 1 / 1.5 < five.ratio_ci_high
    assert five.improvement_pct == pytest.approx(100 / 3, abs=1.0)
    assert five.not_scaled is False or five.not_scaled == False  # noqa: E712
    assert five.efficiency == pytest.approx(1.5 / (5 / 3), rel=0.01)
    obs = S.observations(runs)
    per_rep = obs.groupby(["arm", "rep"]).seconds.sum()
    assert five.total_s == pytest.approx(per_rep["5"].mean())
    # per pass: the ratio of the geometric means of the passes' totals (the pass is the unit)
    within = np.log(per_rep["5"].to_numpy() / per_rep["3"].to_numpy())
    assert five.total_ratio == pytest.approx(np.exp(within.mean()))
    base = o[o.arm == "3"].iloc[0]
    q_means = obs[obs.arm == "3"].groupby("query").seconds.mean()
    assert base.geomean_s == pytest.approx(np.exp(np.log(q_means).mean()))


@pytest.mark.slow  # Monte Carlo: several seconds of simulations
def test_geometric_mean_interval_coverage():
    hits, sims = 0, 150
    for i in range(sims):
        o = S.overall_summary(synthetic({"a": 1.0, "b": 1.2}, n=3, queries=22, cv=0.05, seed=i))
        r = o[o.arm == "b"].iloc[0]
        hits += r.ratio_ci_low <= 1 / 1.2 <= r.ratio_ci_high
    assert 0.88 <= hits / sims <= 1.0


def test_cli_rows_have_the_documented_columns():
    rows = S.cli_rows(S.query_summary(synthetic({"a": 1.0, "b": 2.0}, n=2, queries=22)))
    assert list(rows.columns) == [
        "query",
        "arm",
        "mode",
        "n",
        "status",
        "mean_s",
        "ci_low_s",
        "ci_high_s",
        "improvement_pct",
        "ci_low_pct",
        "ci_high_pct",
        "verified",
    ]
    assert len(rows) == 44


def test_run_elapsed():
    runs = synthetic({"a": 1.0}, n=2, queries=2, streams=2, mode="throughput")
    runs["started_at"] = np.where(runs.rep == 1, 0.0, 5.0)
    runs["seconds"] = 1.0
    runs.loc[(runs.rep == 1) & (runs["query"] == 2), "seconds"] = 2.0
    runs.loc[(runs.rep == 2) & (runs.stream == 1) & (runs["query"] == 1), "seconds"] = 3.0
    e = S.run_elapsed(runs).set_index("rep")
    # rep 1: starts 0, last end 2; rep 2: starts 5, last end 5 + 3
    assert e.loc[1, "elapsed_s"] == pytest.approx(2.0)
    assert e.loc[2, "elapsed_s"] == pytest.approx(3.0)


# --------------------------------------------------------------------------- report 002


def test_seed002_table_is_complete():
    t = S.load_seed002()
    assert len(t) == 66
    assert t.groupby("tiflash_instances").size().to_dict() == {3: 22, 4: 22, 5: 22}
    assert t.improvement_pct_reported.notna().sum() == 44
    assert t[t["query"] == "Q9"].seconds.tolist() == [29.87, 22.95, 18.11]


def test_seed002_improvement_ratios_recomputed_exactly():
    t = pd.read_csv(S.seed002_path(), dtype=str, keep_default_na=False)
    times = {(r.query, r.tiflash_instances): Decimal(r.seconds) for r in t.itertuples()}
    checked = 0
    for r in t.itertuples():
        if r.tiflash_instances == "3":
            continue
        base, arm = times[(r.query, "3")], times[(r.query, r.tiflash_instances)]
        pct = ((base - arm) / base * 100).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
        assert pct == Decimal(r.improvement_pct_reported), r
        checked += 1
    assert checked == 44


def test_seed002_through_query_summary():
    t = S.load_seed002()
    s = S.query_summary(S.seed002_runs(t))
    m = s.merge(
        t.assign(arm=t.tiflash_instances.astype(str), query=t["query"].str[1:].astype(int)),
        on=["query", "arm"],
    )
    m = m[m.arm != "3"]
    assert len(m) == 44
    assert np.allclose(m.improvement_pct.round(2), m.improvement_pct_reported, atol=1e-9)
    assert m.ci_low_pct.isna().all()  # n = 1: no interval
    assert S.improvement_pct(7.67, 6.12) == pytest.approx(20.2086, abs=1e-4)


def test_three_way_verdict_shows_a_slower_query():
    runs = synthetic({"3": 1.0, "4": 1.0}, n=4, queries=4, cv=0.01)
    four = (runs.arm == "4") & runs["query"].isin([1, 2])
    runs.loc[four, "seconds"] *= np.where(runs.loc[four, "query"] == 1, 0.7, 1.4)
    s = S.query_summary(runs).set_index(["arm", "query"])
    assert s.loc[("4", 1), "scaling"] == "faster" and not s.loc[("4", 1), "not_scaled"]
    assert s.loc[("4", 2), "scaling"] == "slower" and s.loc[("4", 2), "not_scaled"]
    assert s.loc[("4", 2), "improvement_pct"] < 0 and s.loc[("4", 2), "ci_high_pct"] < 0
    assert set(s.loc["4", "scaling"]) <= set(S.SCALING)
    assert s.loc["3", "scaling"].isna().all()
    # Holm across the mode's four queries
    four_rows = s.loc["4"]
    from tibenchlib.stats import holm

    np.testing.assert_allclose(four_rows["p_adjusted"], holm(four_rows["p_value"]))


@pytest.mark.slow  # Monte Carlo: several seconds of simulations
def test_holm_keeps_false_query_verdicts_per_study_below_alpha():
    # 120 studies (one mode each) of 22 queries in which nothing changed, n = 3 repeats: without
    # a correction most studies would call some query changed (1 - 0.95^22 = 68 %)
    frames = [
        synthetic({"a": 1.0, "b": 1.0}, n=3, queries=22, cv=0.03, seed=100 + i, mode=f"m{i}")
        for i in range(120)
    ]
    s = S.query_summary(pd.concat(frames, ignore_index=True))
    b = s[s.arm == "b"]
    assert b["scaling"].notna().all()
    any_false = b.groupby("mode")["scaling"].agg(lambda v: (v != "no detectable change").any())
    raw = b.groupby("mode")["p_value"].agg(lambda p: (p < 0.05).any())
    assert any_false.mean() <= 0.08, any_false.mean()
    # uncorrected p (on the conservative min(n) - 1 = 2 df): still far above 5 % (30 %)
    assert raw.mean() >= 0.2


def test_verdict_wording_never_claims_no_change():
    from tibenchlib.report import scaling as R

    runs = synthetic({"3": 1.0, "4": 1.0}, n=3, queries=3, cv=0.01)
    slow = (runs.arm == "4") & (runs["query"] == 1)
    runs.loc[slow, "seconds"] *= 1.5
    s = S.query_summary(runs)
    for lang in ("en", "zh"):
        table = R.verdict_table(s, lang)
        assert len(table) == 3 and len(R.verdict_table(s, lang, only={"slower"})) == 1
        text = R.verdict_sentence(s, "3", lang) + " ".join(table.iloc[:, -1])
        assert ("1 slower" in text) if lang == "en" else ("1 个更慢" in text)
        for proof in ("did not scale", "no change.", "unchanged", "没有变化。", "无变化"):
            assert proof not in text
        assert ("not that nothing changed" in text) or ("并不证明没有变化" in text)
    with pytest.raises(ValueError, match="lang"):
        R.verdict_table(s, "fr")

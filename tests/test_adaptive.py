"""Adaptive repeats: the group-sequential stopping rule against known answers, its coverage and
false verdicts under optional stopping by seeded simulation through the sweep's own arm order
(beside the fixed-n design), its rounds and power against fixed designs, the params, the
round-by-round planning and the comparison built on it."""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pandas as pd
import pytest
from helpers import tibench
from scipy import stats as st

from tibenchlib.adaptive import (
    ADAPTIVE_METHOD,
    CALIBRATION_SEED,
    REASONS,
    adaptive_comparison,
    boundaries,
    cell_decisions,
    open_cells,
    round_series,
    stopping_rule,
)
from tibenchlib.params import ParamsError, parse_study
from tibenchlib.runorder import arm_order
from tibenchlib.stats import _paired_arrays, _verdicts
from tibenchlib.sweep import adaptive_round, adaptive_specs, phase_estimate, plan

RULE = {"min_rounds": 3, "max_rounds": 10, "target_halfwidth_pct": 2.0, "delta_pct": 2.0}


def _study(**kw):
    base = {
        "study": "ad",
        "workloads": ["oltp_point_select", "oltp_read_only"],
        "threads": [1, 4],
        "repeats": {"min": 3, "max": 6, "target_halfwidth_pct": 2},
        "arms": [{"label": "a"}, {"label": "b"}],
    }
    return parse_study({**base, **kw})


def _look(d, n, min_rounds=3, max_rounds=10):
    """The repeated interval of the first n rounds, recomputed plainly (log scale)."""
    b = boundaries(min_rounds, max_rounds).set_index("rounds").loc[n]
    x = np.asarray(d[:n], dtype=float)
    m, s = x.mean(), x.std(ddof=1)
    return m, s, b, b["critical"] * s / math.sqrt(n)


# -- the boundaries -----------------------------------------------------------------------------
def test_boundaries_spend_alpha_by_obrien_fleming_and_widen_only_the_early_looks():
    b = boundaries(5, 10)
    assert b["rounds"].tolist() == list(range(5, 11)) and b["df"].tolist() == list(range(4, 10))
    t = b["rounds"] / 10
    assert b["alpha_spent"].to_numpy() == pytest.approx(
        2 - 2 * st.norm.cdf(st.norm.ppf(0.975) / np.sqrt(t))
    )
    assert b["alpha_spent"].iloc[-1] == pytest.approx(0.05)
    c = b["critical"].to_numpy()
    assert (np.diff(c) < 0).all()  # the early looks are the strict ones
    # the price of five earlier looks at the last one: c_10 above t(0.975, 9) = 2.26, by < 20%
    assert st.t.ppf(0.975, 9) < c[-1] < 1.2 * st.t.ppf(0.975, 9)
    assert b["nominal_level"].to_numpy() == pytest.approx(1 - 2 * st.t.sf(c, b["df"]))
    assert boundaries(5, 10)["critical"].tolist() == c.tolist()  # deterministic
    with pytest.raises(ValueError, match="min_rounds must be at least 2"):
        boundaries(1, 10)
    with pytest.raises(ValueError, match=r"max_rounds \(2\) is below min_rounds \(3\)"):
        boundaries(3, 2)


@pytest.mark.parametrize(("lo", "hi"), [(5, 10), (3, 10), (2, 4)])
def test_some_look_misses_in_five_percent_of_fresh_normal_samples(lo, hi):
    """The calibration's own claim on data it has not seen (another seed): the chance that any
    look's interval misses is alpha. 100,000 paths: binomial sd 0.07%, bounds at 3.5 sd."""
    b = boundaries(lo, hi)
    x = np.random.default_rng(CALIBRATION_SEED + 1).standard_normal((100_000, hi)) * 0.02
    miss = np.zeros(len(x), dtype=bool)
    for n, c in zip(b["rounds"], b["critical"], strict=True):
        m, s = x[:, :n].mean(1), x[:, :n].std(1, ddof=1)
        miss |= np.abs(m) > c * s / math.sqrt(n)
    assert abs(miss.mean() - 0.05) < 3.5 * math.sqrt(0.05 * 0.95 / len(x)), miss.mean()


# -- the rule, against figures recomputed plainly ----------------------------------------------
def test_a_cell_stops_at_its_first_decisive_look_with_that_looks_interval():
    # true +5%, run noise ~1%: not decided at the strict looks 3-4, decided later
    d = [0.060, 0.030, 0.052, 0.041, 0.058, 0.045, 0.049, 0.038, 0.055, 0.047]
    up = math.log(1.02)
    first = None
    for n in range(3, 11):
        m, s, b, half = _look(d, n)
        if m - half > 0 and m > up:  # the comparison's "better"
            first = n
            break
    assert first is not None and first > 3
    out = stopping_rule(d, **RULE).iloc[0]
    m, s, b, half = _look(d, first)
    assert m - half <= up  # the interval still reaches below +2%
    assert out["reason"] == "estimate above margin" and not out["open"]
    assert out["rounds_used"] == first == out["rounds_needed"] and out["df"] == first - 1
    assert out["mean_log"] == pytest.approx(m, abs=1e-15) and out["sd"] == pytest.approx(s)
    assert out["ratio_ci_low"] == pytest.approx(math.exp(m - half), rel=1e-12)
    assert out["ratio_ci_high"] == pytest.approx(math.exp(m + half), rel=1e-12)
    assert out["level"] == pytest.approx(b["nominal_level"])
    p = 2 * st.t.sf(abs(m) * math.sqrt(first) / s, first - 1)
    assert out["p_value"] == pytest.approx(min(1.0, p * 0.05 / (1 - b["nominal_level"])))
    assert out["p_value"] < 0.05  # below alpha exactly when the interval excludes 0
    # the rounds before the stop: running, reporting the repeated interval so far
    before = stopping_rule(d[: first - 1], **RULE).iloc[0]
    assert before["open"] and before["reason"] == "running"
    assert before["rounds_used"] == first - 1
    # rounds after the stop are never read: the interval is the same with all ten
    assert stopping_rule(d[:first] + [9.0] * (10 - first), **RULE).iloc[0].equals(out)


def test_each_decision_has_its_reason():
    quiet_gain = [0.300, 0.301, 0.302]  # +35%: beyond the margin at the first look (c = 57)
    r = stopping_rule(quiet_gain, **RULE).iloc[0]
    assert r["reason"] == "above margin" and r["rounds_used"] == 3 and not r["open"]
    down = stopping_rule([-x for x in quiet_gain], **RULE).iloc[0]
    assert down["reason"] == "below margin"
    flat = stopping_rule([0.0001, -0.0001, 0.0], **RULE).iloc[0]
    assert flat["reason"] == "within margin" and flat["ratio_ci_high"] < 1.02
    # +3% with the interval above 0 but not above +2%: "better" by the comparison's rule
    rng = np.random.default_rng(11)
    d = math.log(1.03) + rng.normal(0, 0.004, (400, 10))
    out = stopping_rule(d, **RULE)
    gain = out[out["reason"] == "estimate above margin"]
    assert len(gain) > 0 and set(out["reason"]) <= set(REASONS)
    assert (gain["ratio_ci_low"] > 1).all() and (gain["ratio_ci_low"] <= 1.02).all()
    assert (gain["ratio"] > 1.02).all()
    # without a margin (one arm) the target half-width stops the cell
    one = stopping_rule([4.6, 4.6002, 4.5998], **{**RULE, "delta_pct": None}).iloc[0]
    assert one["reason"] == "target width" and one["halfwidth_pct"] <= 2.0


def test_a_cell_no_decision_can_reach_stops_out_of_reach_unless_futility_is_off():
    noisy = [0.10, -0.12, 0.05]  # sd 11%: no interval at 10 rounds gets near ±2%
    out = stopping_rule(noisy, **RULE).iloc[0]
    assert out["reason"] == "out of reach" and not out["open"] and out["rounds_used"] == 3
    on = stopping_rule(noisy, **RULE, futility=0.0).iloc[0]
    assert on["reason"] == "running" and on["open"] and on["rounds_needed"] == 10
    assert stopping_rule(noisy * 4, **RULE, futility=0.0).iloc[0]["reason"] == "max rounds"
    with pytest.raises(ValueError, match="futility must lie in"):
        stopping_rule(noisy, **RULE, futility=1.0)


def test_failed_rounds_are_skipped_and_the_first_look_needs_min_valid_pairs():
    rows = stopping_rule([[0.01, np.nan, 0.0101, np.nan], [0.01, np.nan, 0.0101, 0.0102]], **RULE)
    assert rows["reason"].tolist() == ["stage 1", "within margin"]
    assert rows["rounds"].tolist() == [2, 3] and math.isnan(rows["ratio_ci_low"].iloc[0])
    closed = stopping_rule([0.01, 0.012], **RULE, rounds_run=[10]).iloc[0]
    assert closed["reason"] == "max rounds" and not closed["open"]
    # a cell out of rounds with fewer valid pairs reports its last look
    short = stopping_rule([0.05, -0.04, 0.06, 0.0], **RULE, rounds_run=[10], futility=0)
    assert short["reason"].iloc[0] == "max rounds" and short["rounds_used"].iloc[0] == 4
    with pytest.raises(ValueError, match="min_rounds must be at least 2"):
        stopping_rule([0.1], **{**RULE, "min_rounds": 1})
    with pytest.raises(ValueError, match="max_rounds .* below min_rounds"):
        stopping_rule([0.1], **{**RULE, "max_rounds": 2})


# -- coverage and false verdicts under optional stopping, by seeded simulation ----------------
def _simulate(rng, reps, mu, sigma, *, max_rounds, phi=0.0, drift=0.0):
    """Within-round log ratios of ``reps`` cells: run noise N(0, sigma) on the log scale
    (lognormal figures) or AR(1) with coefficient ``phi`` over the runs in execution order;
    ``drift``: a trend per run in execution order (a shift shared by a whole round cancels
    exactly in the log ratio; a trend inside the round does not). The arms run in the sweep's
    own order, :func:`tibenchlib.runorder.arm_order` over ``max_rounds`` (AB, BA, AB, BA, ...)."""
    n = 2 * max_rounds
    z = rng.normal(size=(reps, n)) * sigma
    e = np.empty_like(z)
    e[:, 0] = z[:, 0] / math.sqrt(1 - phi**2)
    for i in range(1, n):
        e[:, i] = phi * e[:, i - 1] + z[:, i]
    trend = drift * np.arange(n)
    order = [arm_order(["a", "b"], r + 1, max_rounds) for r in range(max_rounds)]
    a = np.array([2 * r + o.index("a") for r, o in enumerate(order)])
    b = np.array([2 * r + o.index("b") for r, o in enumerate(order)])
    return (e[:, b] + trend[b] + mu) - (e[:, a] + trend[a])


def test_the_simulation_runs_the_arms_in_the_sweeps_order():
    s = _study(workloads=["oltp_point_select"], threads=[1], repeats={"min": 3, "max": 6})
    seq = {(x.arm, x.repeat): x.seq for x in plan(s)}
    # pure drift of 1 per run: each round's log ratio is seq(b) - seq(a) of the plan
    d = _simulate(np.random.default_rng(0), 1, 0.0, 0.0, max_rounds=6, drift=1.0)[0]
    assert d.tolist() == [seq[("b", r)] - seq[("a", r)] for r in range(1, 7)]
    assert d.tolist() == [1, -1, 1, -1, 1, -1]  # AB, BA, AB, BA: balanced for carry-over


def _rates(ratio, lo, hi, p, mu, delta_pct=2.0):
    imp, lo_p, hi_p = (ratio - 1) * 100, (lo - 1) * 100, (hi - 1) * 100
    cover = (np.log(lo) <= mu) & (mu <= np.log(hi))
    v = _verdicts(imp, lo_p, hi_p, p, delta_pct, 0.05)
    wrong = {"better"} if mu <= 0 else set()
    wrong |= {"worse"} if mu >= 0 else set()
    return cover.mean(), np.isin(v, list(wrong)).mean()


#: 4000 cells per case: binomial sd 0.34% at 95% (the floor 93.5% is 4.4 sd below 95%) and
#: 0.34% at 5% (false verdicts are allowed 5% + 3 sd = 6.0%)
REPS, COVER_FLOOR, FALSE_CEILING = 4000, 0.935, 0.05 + 3 * math.sqrt(0.05 * 0.95 / 4000)
FIXED_FLOOR = 0.93


@pytest.mark.slow
@pytest.mark.parametrize(
    "noise",
    [
        {"phi": 0.0, "drift": 0.0},  # lognormal runs
        {"phi": 0.0, "drift": 0.003},  # lognormal with round drift
        {"phi": 0.6, "drift": 0.0},  # AR(1) runs
        {"phi": 0.6, "drift": 0.003},  # AR(1) with round drift
    ],
    ids=["lognormal", "lognormal+drift", "ar1", "ar1+drift"],
)
def test_adaptive_keeps_coverage_and_false_verdicts_beside_fixed_n(noise):
    rng = np.random.default_rng(20261123)
    cases = (
        (0.0, 0.004),
        (0.0, 0.012),
        (0.0, 0.03),
        (math.log(1.02), 0.004),  # on the margin: "within" and "beyond" both wrong there
        (math.log(1.02), 0.012),
        (0.05, 0.012),
        (-0.03, 0.02),
    )
    for (mu, sigma), n0 in itertools.product(cases, (3, 5)):  # min 5: what repeats: auto uses
        d = _simulate(rng, REPS, mu, sigma, max_rounds=10, **noise)
        a = stopping_rule(d, **{**RULE, "min_rounds": n0})
        assert not a["open"].any()
        cov, false = _rates(a["ratio"], a["ratio_ci_low"], a["ratio_ci_high"], a["p_value"], mu)
        assert cov >= COVER_FLOOR, (mu, sigma, noise, cov)
        assert false <= FALSE_CEILING, (mu, sigma, noise, false)
        # the fixed design at the same mean number of rounds (paired t, df = n - 1)
        n = max(2, round(a["rounds_used"].mean()))
        x = d[:, :n]
        f = _paired_arrays(x.mean(1), x.std(1, ddof=1), np.full(REPS, n), 0.95)
        cov_f, false_f = _rates(f[0], f[1], f[2], f[4], mu)
        # under AR(1) runs the two-arm order AB, BA, AB, BA (balanced for carry-over) makes
        # consecutive rounds' differences correlate positively: the fixed paired t at n = 3
        # covers 93.3-93.4% there
        assert cov_f >= FIXED_FLOOR and false_f <= FALSE_CEILING, (mu, sigma, noise, cov_f)
        assert cov >= cov_f - 0.01 and false <= false_f + 0.01


def test_looking_every_round_with_ordinary_intervals_would_break_coverage():
    """Why repeated intervals: stopping at the first round whose ordinary t interval is
    narrower than the target or clears the margin misses far more than 5% of the time (a true
    +2% cell); the group-sequential rule on the same data does not."""
    rng = np.random.default_rng(7)
    mu, up = math.log(1.02), math.log(1.02)
    d = _simulate(rng, 3000, mu, 0.02, max_rounds=10)
    q = {n: st.t.ppf(0.975, n - 1) for n in range(2, 11)}
    naive = np.zeros(len(d), dtype=bool)
    for i, row in enumerate(d):
        for n in range(2, 11):
            m, half = row[:n].mean(), q[n] * row[:n].std(ddof=1) / math.sqrt(n)
            if half <= up or n == 10 or m - half > up or m + half < -up:
                naive[i] = abs(m - mu) <= half
                break
    seq = stopping_rule(d, **RULE)
    cover = (np.log(seq["ratio_ci_low"]) <= mu) & (np.log(seq["ratio_ci_high"]) >= mu)
    assert naive.mean() < 0.90 and cover.mean() >= 0.94


def _power(m, lo, hi, p, effect_pct, delta_pct=2.0):
    v = _verdicts(np.expm1(m) * 100, np.expm1(lo) * 100, np.expm1(hi) * 100, p, delta_pct, 0.05)
    return float(np.mean(v == ("equivalent" if effect_pct < delta_pct else "better")))


@pytest.mark.slow
@pytest.mark.parametrize("cv", [1.0, 2.0, 5.0])
def test_no_more_rounds_than_the_fixed_design_of_equal_power(cv):
    """At run CV 1%, 2% and 5% and true effects 0, delta/2, delta and 2 delta (repeats: auto),
    the adaptive design's mean rounds are at most those of the smallest fixed n whose power
    (share of the right verdict) reaches its own, wherever any design has 5% power; at CV <= 2%
    it runs at least 30% fewer rounds than max over the four effects. 3000 cells per effect:
    power's binomial sd <= 0.9% (equal power: to 2 sd of the difference), mean rounds' sd
    < 0.03 (0.25 rounds allowed)."""
    rng = np.random.default_rng(int(cv * 100))
    used = []
    for eff in (0.0, 1.0, 2.0, 4.0):
        mu = math.log1p(eff / 100)
        d = _simulate(rng, 3000, mu, math.log1p(cv / 100), max_rounds=10)
        a = stopping_rule(d, **{**RULE, "min_rounds": 5})
        lo, hi = np.log(a["ratio_ci_low"]), np.log(a["ratio_ci_high"])
        pw = _power(a["mean_log"], lo, hi, a["p_value"], eff)
        fixed = {}
        for n in range(5, 11):
            x = d[:, :n]
            f = _paired_arrays(x.mean(1), x.std(1, ddof=1), np.full(len(x), n), 0.95)
            fixed[n] = _power(np.log(f[0]), np.log(f[1]), np.log(f[2]), f[4], eff)
        rounds = a["rounds_used"].mean()
        used.append(rounds)
        if max(pw, *fixed.values()) >= 0.05:
            # equal power to 2 binomial sd of the difference of two estimates
            tol = 2 * math.sqrt(2 * pw * (1 - pw) / len(d))
            n_eq = next((n for n in fixed if fixed[n] >= pw - tol), 10)
            assert rounds <= n_eq + 0.25, (cv, eff, rounds, pw, fixed)
    if cv <= 2:
        assert np.mean(used) <= 7.0, used


# -- params -------------------------------------------------------------------------------------
def test_params_accept_a_number_auto_or_the_rule_and_name_the_field_on_error():
    assert parse_study({"study": "x", "repeats": 4}).adaptive is None
    assert parse_study({"study": "x", "repeats": 4}).max_rounds == 4
    auto = parse_study({"study": "x", "repeats": "auto"})
    assert (auto.adaptive.min, auto.adaptive.max, auto.max_rounds) == (5, 10, 10)
    s = _study()
    assert s.adaptive.target_halfwidth_pct == 2 and str(s.repeats) == "3–6 (adaptive, ±2%)"
    assert parse_study(s.public_dump()).repeats == s.repeats  # the catalog's copy reads back
    for bad, words in (
        ({"min": 1}, "repeats.min"),
        ({"min": 5, "max": 3}, "max (3) is below min (5)"),
        ({"mn": 3}, "repeats.mn: unknown key"),
        (0, "repeats: Input should be greater than 0"),
    ):
        with pytest.raises(ParamsError, match=re.escape(words)):
            parse_study({"study": "x", "repeats": bad})
    assert parse_study({"study": "x", "repeats": {"futility": 0}}).adaptive.futility == 0
    with pytest.raises(ParamsError, match=re.escape("repeats.futility")):
        parse_study({"study": "x", "repeats": {"futility": 1}})
    with pytest.raises(ParamsError, match="order must be 'interleaved' or 'random'"):
        _study(order="sequential")
    with pytest.raises(ParamsError, match="exclude_rounds cannot be used with adaptive"):
        _study(compare={"exclude_rounds": [1]})


# -- planning round by round from the catalog ---------------------------------------------------
def _runs(study, figures):
    """Catalog-shaped sweep runs: ``figures[(arm, workload, threads)]`` lists TPS per round."""
    order = {s.run_key: s.seq for s in plan(study)}
    rows = []
    for (arm, w, t), tps in figures.items():
        for r, y in enumerate(tps, start=1):
            key = f"{arm}/{w}/t{t}/r{r}"
            rows.append(
                {
                    "run_key": key,
                    "phase": "sweep",
                    "arm": arm,
                    "workload": w,
                    "threads": t,
                    "repeat": r,
                    "seq": order[key],
                    "tps": y,
                    "lat_p95_ms": 1.0,
                    "status": "ok" if y else "failed",
                }
            )
    return pd.DataFrame(rows)


def test_rounds_after_stage_one_hold_only_the_open_cells_in_the_full_plans_order():
    s = _study(workloads=["oltp_point_select"], threads=[1, 4])
    quiet = {
        ("a", "oltp_point_select", 1): [100, 101, 100],
        ("b", "oltp_point_select", 1): [110, 111, 110],
    }
    noisy = {  # about +6%, too noisy to decide at round 3, a decision within reach by 6
        ("a", "oltp_point_select", 4): [100, 100, 100],
        ("b", "oltp_point_select", 4): [105, 110, 108],
    }
    runs = _runs(s, quiet | noisy)
    assert len(adaptive_round(s, runs.iloc[:0], 1)) == 4  # stage 1: every cell
    assert len(adaptive_round(s, runs, 3)) == 4
    r4 = adaptive_round(s, runs, 4)
    assert {(x.workload, x.threads) for x in r4} == {("oltp_point_select", 4)}
    full = {x.run_key: x.seq for x in plan(s)}
    assert [x.seq for x in r4] == [full[x.run_key] for x in r4]
    assert [x.arm for x in r4] == arm_order(["a", "b"], 4, s.max_rounds) == ["b", "a"]
    dec = cell_decisions(s, runs)
    assert open_cells(dec) == [("oltp_point_select", 4)]
    quiet_row = dec[dec["threads"] == 1].iloc[0]
    assert quiet_row["reason"] == "above margin" and quiet_row["ratio"] == pytest.approx(
        math.exp(np.mean(np.log(np.array([110, 111, 110]) / [100, 101, 100])))
    )
    # the decision only reads rounds before the one being planned: a later round changes nothing
    more = _runs(s, noisy | {k: v + [500] for k, v in quiet.items()})
    assert adaptive_round(s, more, 4) == r4
    # tibench runs: the rounds decided so far and the next one
    assert len(adaptive_specs(s, runs)) == 12 + 2
    assert len(adaptive_specs(s, runs.iloc[:0])) == 12  # a fresh study: stage 1 is certain


def test_round_series_pairs_one_run_of_each_arm_per_round_and_skips_failures():
    s = _study(workloads=["oltp_point_select"], threads=[1])
    runs = _runs(
        s,
        {
            ("a", "oltp_point_select", 1): [100, 0, 100],
            ("b", "oltp_point_select", 1): [105, 107, 0],
        },
    )
    keys, d, given = round_series(runs, "a", "b")
    assert keys == [("oltp_point_select", 1)] and given.tolist() == [3]
    assert d[0, 0] == pytest.approx(math.log(1.05)) and np.isnan(d[0, 1:]).all()
    _, one, _ = round_series(runs, "a", None)
    assert one[0, 0] == pytest.approx(math.log(100)) and np.isnan(one[0, 1])
    single = _study(arms=[{"label": "a"}], workloads=["oltp_point_select"], threads=[1])
    assert set(cell_decisions(single, runs)["candidate"].isna()) == {True}


def test_dry_run_states_the_rule_and_the_range_of_runs():
    est = phase_estimate(_study(duration_s=10))
    # and the pre-period's one run
    assert est["runs_min"] == 2 * 2 * 2 * 3 + 1 and est["runs"] == 2 * 2 * 2 * 6 + 1
    assert est["eta_min_s"] < est["eta_s"]
    assert est["rule"].startswith("at most 6 rounds; from round 3 on, each cell stops")
    assert "±2%" in est["rule"] and "O'Brien-Fleming" in est["rule"]


def test_tibench_dry_run_prints_the_range_and_the_rule(tmp_path, data_dir):
    import json

    from helpers import tibench

    f = _real_params(tmp_path)
    text = tibench("run", str(f), "--phase", "sweep", "--dry-run").stdout
    assert "9–17" in text and "sweep: at most 4 rounds; from round 2 on" in text
    assert "sweep runs, in order (the most it may run):" in text
    entry = json.loads(tibench("run", str(f), "--phase", "sweep", "--dry-run", "--json").stdout)
    sweep = entry["phases"][0]
    assert (sweep["runs_min"], sweep["runs"]) == (9, 17) and sweep["eta_min_s"] < sweep["eta_s"]
    assert not (data_dir / "adapt").exists(), "a dry run writes nothing"


def test_comparison_uses_the_adaptive_interval_and_says_why_each_cell_stopped():
    from tibenchlib.compare import compare_arms_table

    s = _study(workloads=["oltp_point_select"], threads=[1, 4])
    rng = np.random.default_rng(3)
    base = 1000 * np.exp(rng.normal(0, 0.002, 6))
    figures = {
        ("a", "oltp_point_select", 1): list(base[:3]),
        ("b", "oltp_point_select", 1): list(base[3:] * 1.2),
        ("a", "oltp_point_select", 4): [1000, 1100, 950, 1040, 980, 1010],
        ("b", "oltp_point_select", 4): [1020, 1000, 1000, 1090, 990, 1000],
    }
    runs = _runs(s, figures)
    out = adaptive_comparison(compare_arms_table(runs, s), runs, s)
    dec = cell_decisions(s, runs).set_index("threads")
    t1, t4 = out.set_index("threads").loc[1], out.set_index("threads").loc[4]
    assert t1["stop_reason"] == "above margin" and t1["n_rounds"] == 3
    assert t1["verdict"] == "better" and t1["method"] == ADAPTIVE_METHOD
    assert t1["ci_low_pct"] == pytest.approx((dec.loc[1, "ratio_ci_low"] - 1) * 100)
    # sd 5% over the first 3 rounds: even 6 rounds cannot decide against ±2%
    assert t4["stop_reason"] == dec.loc[4, "reason"] == "out of reach" and t4["n_rounds"] == 3
    assert t4["verdict"] != "better" and t4["ci_low_pct"] < 0 < t4["ci_high_pct"]
    assert t4["df"] == 2 and t4["ci_level"] == pytest.approx(dec.loc[4, "level"])
    assert any("group-sequential interval" in w for w in t4["warnings"])
    # the fixed-n comparison's notes on its own interval and pairing are gone
    notes = [w for ws in out["warnings"] for w in ws]
    assert not [w for w in notes if "paired within" in w or "Fieller" in w or "unpaired" in w]
    assert (out["p_adjusted"] >= out["p_value"] - 1e-12).all()
    assert (out["ci_low_adj_pct"] <= out["ci_low_pct"]).all()


def test_a_change_inside_the_margin_is_a_direction_with_its_size_below_delta():
    """The verdict reads off the simultaneous interval beside it: a +1% change whose interval
    excludes 0 and lies below the 2% margin is "better", sized "below delta" (not "small",
    which judged size from the point estimate)."""
    from tibenchlib.compare import compare_arms_table

    s = _study(workloads=["oltp_point_select"], threads=[1])
    a = [1000.0, 1010.0, 990.0]
    b = [x * 1.01 * (1 + e) for x, e in zip(a, (0.0005, -0.0004, 0.0002), strict=True)]
    runs = _runs(s, {("a", "oltp_point_select", 1): a, ("b", "oltp_point_select", 1): b})
    row = adaptive_comparison(compare_arms_table(runs, s), runs, s).iloc[0]
    assert 0 < row["ci_low_adj_pct"] and row["ci_high_adj_pct"] < 2
    assert row["verdict"] == "better" and row["size"] == "below delta"


def test_identical_ratios_in_stage_one_are_flagged_not_trusted():
    from tibenchlib.compare import compare_arms_table

    s = _study(workloads=["oltp_point_select"], threads=[1])
    a = [1000.0, 1010.0, 990.0, 1005.0, 995.0]
    runs = _runs(
        s, {("a", "oltp_point_select", 1): a, ("b", "oltp_point_select", 1): [x * 1.1 for x in a]}
    )
    row = adaptive_comparison(compare_arms_table(runs, s), runs, s).iloc[0]
    assert row["stop_reason"] == "above margin" and row["ratio"] == pytest.approx(1.1)
    assert row["ci_low_pct"] == pytest.approx(row["ci_high_pct"])
    assert any("zero-width interval" in w for w in row["warnings"])


def test_stopping_table_and_sentence_in_english_and_chinese():
    from tibenchlib.compare import compare_arms_table
    from tibenchlib.report.adaptive import stopping_summary, stopping_table

    # futility off: the noisy cell runs to max
    s = _study(
        workloads=["oltp_point_select"],
        threads=[1, 4],
        repeats={"min": 3, "max": 6, "target_halfwidth_pct": 2, "futility": 0},
    )
    figures = {
        ("a", "oltp_point_select", 1): [1000, 1001, 1000],
        ("b", "oltp_point_select", 1): [1100, 1102, 1099],
        ("a", "oltp_point_select", 4): [1000, 1100, 950, 1040, 980, 1010],
        ("b", "oltp_point_select", 4): [1020, 1000, 1000, 1090, 990, 1000],
    }
    runs = _runs(s, figures)
    cmp = adaptive_comparison(compare_arms_table(runs, s), runs, s)
    en, zh = stopping_table(cmp, s, "en"), stopping_table(cmp, s, "zh")
    assert list(en.columns)[-1] == "Why it stopped" and list(zh.columns)[-1] == "停止原因"
    assert en["Rounds run"].tolist() == ["3", "6"]
    assert en["Why it stopped"].tolist() == [
        "stopped early: whole interval above +2%",
        "reached 6 rounds (needed more for ±2%)",
    ]
    assert zh["停止原因"].tolist()[1] == "已达上限 6 轮 (要达到 ±2% 还需更多轮次)"
    say_en = stopping_summary(cmp, s, len(runs), "en")
    assert f"{len(runs)} runs made, against 24" in say_en
    assert "1 stopped early: whole interval above +2%; 1 reached 6 rounds" in say_en
    say_zh = stopping_summary(cmp, s, len(runs), "zh")
    assert f"共运行 {len(runs)} 次" in say_zh


# -- a real tiny study on the embedded MariaDB ----------------------------------------------------
def _real_params(tmp_path, *, run_on: bool = False, threads: tuple = (1, 2)):
    import yaml

    f = tmp_path / "adaptive.yaml"
    f.write_text(
        yaml.safe_dump(
            {
                "study": "adapt",
                "dataset": {"tables": 1, "table_size": 500},
                "workloads": ["oltp_point_select"],
                "threads": list(threads),
                "duration_s": 2,
                "sample_resources": False,
                # run_on: no futility stop and a margin no interval fits within, so a cell
                # stops before max only on an interval excluding 0 (at round 3, |t| > 7.2)
                "repeats": {"min": 2, "max": 4, "futility": 0 if run_on else 0.1},
                "compare": {"delta_pct": 0.01 if run_on else 2},
                "arms": [{"label": "a"}, {"label": "b"}],
            }
        )
    )
    return f


def _cli(*args, check=True):
    """``tibench ARGS`` through ``main()`` in this process (``helpers.tibench``): a child would
    only add its imports."""
    r = tibench(*args)
    assert r.returncode == 0 or not check, r.stderr[-2000:]
    return r


@pytest.mark.slow
@pytest.mark.notebook
def test_real_adaptive_study_stops_resumes_after_a_kill_and_reports(
    tmp_path, data_dir, sysbench_bin
):
    import json
    import os
    import signal
    import subprocess
    import sys
    import time

    from tibenchlib.notebook import execute_phase_notebook
    from tibenchlib.params import load_study
    from tibenchlib.store import Store

    # one cell (two arms, one run each a round); it cannot stop at round 2 (c = 119 at df 1),
    # so a round 3 surely runs; the sweep is killed inside it and resumed
    f = _real_params(tmp_path, run_on=True, threads=(1,))
    study = load_study(f)
    _cli("run", str(f), "--phase", "prepare", "--in-process")
    store = Store.for_study(study)
    p = subprocess.Popen(
        [sys.executable, "-m", "tibenchlib.cli", "run", str(f), "--phase", "sweep", "--in-process"],
        env=os.environ.copy(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 180
    # the pre-period's run, rounds 1 and 2, and one run of round 3
    while time.monotonic() < deadline and len(store.run_status("adapt")) < 6:
        time.sleep(0.2)
    time.sleep(1.0)  # inside a run of round 3
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    mid = store.runs("adapt", phase="sweep").set_index("run_key")
    assert 5 <= len(mid) < 8 and set(mid["repeat"]) == {1, 2, 3}
    r = _cli("run", str(f), "--phase", "sweep", "--in-process", "--json")
    after = store.runs("adapt", phase="sweep").set_index("run_key")
    assert 6 <= len(after) <= 8 and (after["status"] == "ok").all(), after[["status", "error"]]
    for rec in mid.itertuples():  # nothing measured before the kill was run again
        assert after.loc[rec.Index, "started_at"] == rec.started_at
    assert len(json.loads(r.stdout)) == len(after)
    # it stopped where the rule says (mostly at max: two identical arms; on a loaded machine the
    # rounds' order can still put a whole interval beyond the margin, seen once in five suites
    # on four workers, at round 3 or at the last look, round 4), and running it again measures
    # nothing
    dec = cell_decisions(study, after.reset_index())
    assert not dec["open"].any()
    assert set(dec["reason"]) <= set(REASONS) - {"stage 1", "running", "target width"}
    assert len(after) == 2 * dec["rounds_used"].sum()
    assert (dec["rounds_used"][dec["reason"] == "max rounds"] == 4).all()
    assert (dec["reason"][dec["rounds_used"] < 4] != "max rounds").all()
    _cli("run", str(f), "--phase", "sweep", "--in-process")
    assert (
        store.runs("adapt", phase="sweep")["started_at"].tolist()
        == after.sort_values("seq")["started_at"].tolist()
    )

    # the comparison carries each cell's rounds and why it stopped; so does notebook 03
    cmp = json.loads(_cli("run", str(f), "--phase", "compare", "--in-process", "--json").stdout)
    assert len(cmp) == 1
    for row in cmp:
        d = dec[dec["threads"] == row["threads"]].iloc[0]
        assert row["n_rounds"] == d["rounds_used"] and row["stop_reason"] == d["reason"]
        assert row["method"] == ADAPTIVE_METHOD and row["ci_low_pct"] <= row["ci_high_pct"]
    out = execute_phase_notebook("adapt", "compare", f, progress=False)
    cells = json.loads(out.read_text())["cells"]
    text = json.dumps([c.get("outputs", []) for c in cells])
    assert '"output_type": "error"' not in text
    assert "Adaptive repeats:" in text
    assert "reached 4 rounds" in text or dec["reason"].iloc[0] in text

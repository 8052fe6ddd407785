"""Findings as data: each phase's claims follow its intervals, the saturation and bottleneck
statements cannot contradict each other, and the sentences render in English and Chinese."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from tibenchlib import findings as F
from tibenchlib.diagnose import diagnose
from tibenchlib.findings.record import Figure, Finding
from tibenchlib.rounds import round_effects


def _cmp_row(threads, est, lo, hi, verdict, p=0.01, n=5, workload="oltp_update_non_index"):
    return {
        "workload": workload,
        "threads": threads,
        "baseline": "flush1",
        "candidate": "flush2",
        "n_baseline": n,
        "n_candidate": n,
        "baseline_value": 1000.0,
        "candidate_value": 1500.0,
        "baseline_sd": 100.0,
        "candidate_sd": 140.0,
        "improvement_pct": est,
        "ci_low_pct": lo,
        "ci_high_pct": hi,
        "p_adjusted": p,
        "verdict": verdict,
        "method": "Fieller: ratio",
    }


def test_faster_at_every_thread_count_is_one_finding_with_its_figure():
    cmp = pd.DataFrame(
        [_cmp_row(1, 30.0, 20.0, 41.0, "better"), _cmp_row(4, 52.0, 41.0, 64.0, "better", 0.003)]
    )
    (f,) = F.compare_findings(cmp, 2.0)
    assert f.key == "f_cmp_all_better" and f.verdict == "better"
    assert (f.figure.estimate, f.figure.ci_low, f.figure.ci_high, f.figure.n) == (52, 41, 64, 5)
    en = F.render(f, "en")
    assert en == (
        "flush2 is faster than flush1 on oltp_update_non_index at every thread count: "
        "+52% [+41, +64] at 4 threads (5 rounds, Holm p = 0.003)."
    )
    zh = F.render(f, "zh")
    assert "提升 52% [41, 64]" in zh and "+52" not in zh and "（5 轮，Holm p = 0.003）。" in zh


def test_mixed_cells_are_said_one_by_one_and_an_open_cell_says_what_it_needs():
    cmp = pd.DataFrame(
        [
            _cmp_row(1, 2.0, -10.0, 10.0, "inconclusive", 0.6, n=3),
            _cmp_row(2, 9.0, 4.0, 14.0, "better"),
        ]
    )
    open_, better = F.compare_findings(cmp, 2.0)
    assert open_.verdict == "inconclusive" and open_.reason == "interval_wide"
    # half-width on the log scale (ln 1.1 - ln 0.9) / 2 against ln 1.04, times n = 3
    h = (math.log(1.1) - math.log(0.9)) / 2
    assert open_.values["need"] == math.ceil(3 * (h / math.log(1.04)) ** 2) == 20
    assert "no answer yet" in F.render(open_, "en") and "about 20 rounds needed" in F.render(
        open_, "en"
    )
    assert better.verdict == "better" and "at 2 threads" in F.render(better, "en")
    assert "at 1 thread:" in F.render(open_, "en")  # one thread, not "1 threads"


def test_no_difference_is_claimed_only_when_every_cell_is_equivalent():
    eq = pd.DataFrame(
        [_cmp_row(1, 0.5, -1.0, 1.5, "equivalent"), _cmp_row(2, -0.2, -1.8, 1.0, "equivalent")]
    )
    (f,) = F.compare_findings(eq, 2.0)
    assert f.key == "f_cmp_equivalent" and "(±2% margin" in F.render(f, "en")
    mixed = pd.DataFrame(
        [_cmp_row(1, 0.5, -1.0, 1.5, "equivalent"), _cmp_row(2, 1.0, -9.0, 12.0, "~")]
    )
    keys = [f.key for f in F.compare_findings(mixed, 2.0)]
    assert (
        "f_cmp_equivalent" not in keys
        and keys[0] == "f_cmp_cell_equivalent"
        and keys[1].startswith("f_cmp_cell_open")
    )


def _sweep_runs(shape: dict[int, float], n: int = 4, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for t, tps in shape.items():
        for r in range(1, n + 1):
            rows.append(
                {
                    "run_key": f"w/a/{t}/{r}",
                    "workload": "w",
                    "arm": "a",
                    "threads": t,
                    "repeat": r,
                    "tps": tps * (1 + rng.normal(0, 0.01)),
                    "status": "ok",
                    "lat_p95_ms": 1.0,
                }
            )
    return pd.DataFrame(rows)


def test_a_curve_still_rising_is_said_once_and_the_diagnosis_does_not_contradict_it():
    runs = _sweep_runs({1: 1000, 2: 2000, 4: 4000})
    found = F.sweep_findings(diagnose(runs, None))
    assert [f.verdict for f in found] == ["rising"]
    text = F.render(found[0], "en")
    assert "still rising at 4 threads" in text and "beyond the thread ladder" in text
    assert not any("level" in F.render(f, "en") for f in found)


def test_a_flat_curve_is_saturated_and_its_bottleneck_reads_the_same_row():
    runs = _sweep_runs({1: 1000, 2: 1900, 4: 2000, 8: 2000})
    d = diagnose(runs, None)
    sat, *rest = F.sweep_findings(d)
    assert sat.verdict == "saturated" and sat.values["n_sat"] == int(d["n_sat"].iloc[0])
    assert all(f.verdict != "rising" for f in rest)


def test_round_effects_carry_a_signed_interval_around_their_estimate():
    runs = _sweep_runs({1: 1000, 2: 2000}, n=3)
    runs.loc[runs["repeat"] == 3, "tps"] *= 0.6  # a slow third round
    found = F.round_findings(round_effects(runs))
    assert found and found[0].values["round"] == 3
    fig = found[0].figure
    assert fig.ci_low < fig.estimate < fig.ci_high < 0
    text = F.render(found[0], "en")
    lo, hi = (f"{x:+.0f}" for x in (fig.ci_low, fig.ci_high))
    assert f"[{lo}, {hi}]" in text and text.startswith("Round 3 sits -")


def test_dm_names_a_best_setting_only_when_its_interval_stands_apart():
    rows = pd.DataFrame(
        {
            "unit": "load",
            "knob": "load.threads",
            "setting": ["4", "8", "16"],
            "workload": "full",
            "n": 3,
            "status": "ok",
            "metric": "mb_s",
            "mb_s": [10.0, 20.0, 21.0],
            "ci_low": [9.0, 18.0, 19.5],
            "ci_high": [11.0, 22.0, 22.5],
        }
    )
    (tied,) = F.dm_findings(rows, pd.DataFrame())
    assert tied.verdict == "inconclusive" and tied.values["tied"] == ["16", "8"]
    assert "cannot be told apart" in F.render(tied, "en") and "无法区分" in F.render(tied, "zh")
    apart = rows.assign(ci_low=[9.0, 18.0, 20.5], ci_high=[11.0, 19.5, 21.5])
    (best,) = F.dm_findings(apart, pd.DataFrame())
    assert best.key == "f_dm_best" and best.values["best"] == "16"


def test_an_impossible_figure_is_withheld_not_shown():
    ok = Finding(
        "tpch_scaling",
        "f_tpch_counts",
        {"mode": "power", "arm": "b", "base": "a", "n": 22, "faster": 9, "slower": 0, "same": 13},
        Figure(40.0, 30.0, 50.0, "% saved", 3),
        "better",
    )
    assert "9 of 22 queries faster" in F.render(ok, "en")
    bad = Finding(ok.phase, ok.key, ok.values, Figure(40.0, 30.0, 120.0, "% saved", 3), "better")
    outside = Finding(ok.phase, ok.key, ok.values, Figure(60.0, 10.0, 50.0, "% saved", 3), "better")
    for f in (bad, outside):
        assert F.impossible(f.figure) and "withheld" in F.render(f, "en")
        assert "不予采用" in F.render(f, "zh")


def test_an_inconclusive_finding_needs_a_reason_and_a_known_verdict():
    with pytest.raises(ValueError, match="needs a reason"):
        Finding("compare", "f_cmp_cell_open", {}, None, "inconclusive")
    with pytest.raises(ValueError, match="verdict must be one of"):
        Finding("compare", "f_cmp_cell_open", {}, None, "maybe")


def test_chinese_sentences_use_full_width_punctuation_outside_their_figures():
    f = Finding(
        "numa",
        "f_cmp_cell_better",
        {
            "cand": "cpus:0",
            "base": "unbound",
            "workload": "oltp_point_select",
            "threads": 2,
            "p": 0.01,
            "n": 3,
            "delta": 2.0,
        },
        Figure(12.0, 4.0, 20.5, "%", 3),
        "better",
    )
    zh = F.render(f, "zh")
    assert "cpus:0 对比 unbound，" in zh  # the arm's colon is a name's, kept
    assert "提升 12% [4.0, 20]" in zh and "（3 轮，Holm p = 0.01）。" in zh
    assert not any(c in zh.replace("cpus:0", "").replace("[4.0, 20]", "") for c in ",:;()")


def test_findings_round_trip_through_json(tmp_path, monkeypatch):
    monkeypatch.setenv("TIBENCH_DATA", str(tmp_path))
    cmp = pd.DataFrame([_cmp_row(4, 52.0, 41.0, 64.0, "better", 0.003)])
    found = {"compare": F.compare_findings(cmp, 2.0)}
    out = F.save("s", found)
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["compare"][0]["text"]["zh"].startswith("flush2 对比 flush1")
    assert F.load("s") == found


def test_a_throughput_peak_is_named_only_when_its_interval_stands_apart():
    cells = pd.DataFrame(
        {
            "workload": "YCSB a", "arm": "x", "threads": [1, 2, 4], "n": 3,
            "mean": [100.0, 190.0, 200.0], "ci_low": [95.0, 180.0, 185.0],
            "ci_high": [105.0, 200.0, 215.0],
        }
    )  # fmt: skip
    (tied,) = F.peak_findings(cells, "ycsb", "ops/s", "ycsb")
    assert tied.verdict == "inconclusive" and tied.values["tied"] == [2, 4]
    assert "thread counts 2, 4 cannot be told apart" in F.render(tied, "en")
    apart = cells.assign(ci_low=[95.0, 180.0, 195.0], ci_high=[105.0, 190.0, 205.0])
    (top,) = F.peak_findings(apart, "ycsb", "ops/s", "ycsb")
    assert top.key == "f_peak_top" and top.verdict == "rising"
    assert "the peak may lie beyond" in F.render(top, "en")


def test_rounds_needed_without_an_interval_is_none():
    # an unbounded Fieller interval reaches the findings as NaN, not None
    assert F.rounds_needed(3, float("nan"), float("nan"), 2.0) is None
    assert F.rounds_needed(3, None, 5.0, 2.0) is None
    assert F.rounds_needed(3, -10.0, 10.0, 2.0) > 3


def test_a_tie_at_n_2_says_why_and_about_how_many_rounds_would_settle_it():
    # two runs per cell with sd 5: a t interval on 1 degree of freedom is ±12.7 × 5 / √2 = ±45
    t1 = sps.t.ppf(0.975, 1)
    h = t1 * 5 / np.sqrt(2)
    cells = pd.DataFrame(
        {
            "workload": "YCSB a", "arm": "x", "threads": [1, 2], "n": 2, "mean": [190.0, 200.0],
            "ci_low": [190.0 - h, 200.0 - h], "ci_high": [190.0 + h, 200.0 + h],
        }
    )  # fmt: skip
    (tied,) = F.peak_findings(cells, "ycsb", "ops/s", "ycsb")
    # recomputed plainly: the smallest m with t(m-1) × (5 + 5) / √m < 200 - 190
    m = next(m for m in range(3, 100) if sps.t.ppf(0.975, m - 1) * 10 / np.sqrt(m) < 10)
    assert m == 7 and tied.values["need"] == m and tied.reason == "overlap_threads_need"
    en, zh = F.render(tied, "en"), F.render(tied, "zh")
    assert "n = 2 runs per cell" in en and "about 7 rounds would tell them apart" in en
    assert "约 7 轮" in zh and "," not in zh.split("[")[0]
    # means too close to separate in any affordable number of rounds: said as "more than"
    close = cells.assign(mean=[199.9, 200.0])
    (far,) = F.peak_findings(close, "ycsb", "ops/s", "ycsb")
    assert "more than 50 rounds" in F.render(far, "en")
    # intervals on the log scale (mean × exp(±h)): the same rule on log throughput
    sd = 0.05  # of log ops/s
    hl = t1 * sd / np.sqrt(2)
    logc = cells.assign(ci_low=cells["mean"] * np.exp(-hl), ci_high=cells["mean"] * np.exp(hl))
    (lt,) = F.peak_findings(logc, "ycsb", "ops/s", "ycsb")
    gap = np.log(200 / 190)
    m = next(m for m in range(3, 100) if sps.t.ppf(0.975, m - 1) * 2 * sd / np.sqrt(m) < gap)
    assert lt.values["need"] == m


def test_levels_off_needs_the_gain_past_the_saturation_point_to_stay_small():
    """2 threads reach 95% of the peak mean (4 threads), but the interval of the gain from 2 to
    4 threads reaches far above 5%: no "levels off" is claimed."""
    tps = {1: [1000.0, 1010.0, 990.0], 2: [1900.0, 1500.0, 2400.0], 4: [2000.0, 1400.0, 2700.0]}
    runs = pd.DataFrame(
        [
            {"run_key": f"w/a/{t}/{r}", "workload": "w", "arm": "a", "threads": t, "repeat": r,
             "tps": x, "status": "ok", "lat_p95_ms": 1.0}
            for t, xs in tps.items()
            for r, x in enumerate(xs, 1)
        ]
    )  # fmt: skip
    d = diagnose(runs, None)
    # the 95%-of-peak point of the means is evidence, not a saturation point the table shows
    assert d["evidence"].iloc[0]["n_sat_means"] == 2 and d["n_max"].iloc[0] == 4
    assert d["n_sat"].iloc[0] is None and d["saturation"].iloc[0] == "unclear"
    sat = F.sweep_findings(d)[0]
    assert sat.verdict == "inconclusive" and sat.figure.ci_high > F.sweep.LEVEL_PCT
    assert sat.values["threads_from"] == 2
    assert "neither shown to rise nor to level off" in F.render(sat, "en")


def test_levels_off_is_not_claimed_from_an_unbounded_interval():
    """1 thread has the highest mean, but its runs are so spread that the ratio of 2 threads to
    1 has no bounded interval: the gain past the saturation point may be anything, so no
    "levels off" (the verdict would follow the means alone); one run per thread count, where no
    interval can exist, still reads the means."""

    def runs(tps):
        return pd.DataFrame(
            [
                {"run_key": f"w/a/{t}/{r}", "workload": "w", "arm": "a", "threads": t,
                 "repeat": r, "tps": x, "status": "ok", "lat_p95_ms": 1.0}
                for t, xs in tps.items()
                for r, x in enumerate(xs, 1)
            ]
        )  # fmt: skip

    d = diagnose(runs({1: [3000.0, 10.0, 20.0], 2: [700.0, 710.0, 690.0]}), None)
    assert d["evidence"].iloc[0]["n_sat_means"] == 1 and d["n_max"].iloc[0] == 2
    assert d["n_sat"].iloc[0] is None and d["saturation"].iloc[0] == "unclear"
    assert d["tps_ratio_ci_high"].isna().iloc[0]  # Fieller: unbounded
    sat = F.sweep_findings(d)[0]
    assert sat.key == "f_sat_unclear" and sat.verdict == "inconclusive", sat
    en = F.render(sat, "en")
    assert "neither shown to rise nor to level off" in en and "interval unbounded" in en
    assert "置信区间无界" in F.render(sat, "zh")
    # one run per thread count: no interval can exist, and the means speak as before
    one = diagnose(runs({1: [1000.0], 2: [700.0]}), None)
    assert F.sweep_findings(one)[0].key == "f_sat_levels"


def test_each_phase_objects_hook_returns_its_findings(monkeypatch):
    from tibenchlib import registry

    for phase in list(F.PHASE_FINDINGS):
        fake = [Finding(phase.name, "f_pair", {"cand": "b", "base": "a"})]
        monkeypatch.setitem(F.PHASE_FINDINGS, phase, lambda study, store, _f=fake: _f)
    for p in registry.PHASES:
        got = F.phase_findings(None, p, object())
        if p in F.PHASE_FINDINGS:
            assert [f.phase for f in got] == [p.name]
        else:
            assert got == []  # environment and prepare conclude nothing


def test_a_total_time_clearly_longer_is_said_as_longer_not_as_negative_saving():
    summary = pd.DataFrame(
        {"mode": "power", "arm": "b", "query": ["Q1", "Q2"], "n": 3,
         "scaling": ["no detectable change", "slower"]}
    )  # fmt: skip
    overall = pd.DataFrame(
        {"mode": ["power"], "arm": ["b"], "improvement_pct": [-81.0], "ci_low_pct": [-105.0],
         "ci_high_pct": [-59.0]}
    )  # fmt: skip
    (f,) = F.tpch_findings(summary, overall, "a")
    assert f.key == "f_tpch_counts_longer" and f.figure.coherent
    assert "longer by +81% [+59, +105]" in F.render(f, "en")
    assert "耗时（几何平均）增加 81% [59, 105]" in F.render(f, "zh")
    # a saving stays a saving
    (g,) = F.tpch_findings(summary, overall.assign(improvement_pct=20.0, ci_low_pct=5.0,
                                                   ci_high_pct=30.0), "a")  # fmt: skip
    assert (
        g.key == "f_tpch_counts"
        and "time saved over all queries (geometric mean) +20% [+5.0, +30]" in F.render(g, "en")
    )


def test_no_time_saved_overall_is_claimed_beside_no_query_faster():
    """The overall figure claims what its interval supports, as the per-query verdicts do: an
    interval reaching 0 is "no change shown", never "time saved"."""
    summary = pd.DataFrame(
        {"mode": "power", "arm": "b", "query": ["Q1", "Q2"], "n": 3,
         "scaling": ["no detectable change", "no detectable change"]}
    )  # fmt: skip
    overall = pd.DataFrame(
        {"mode": ["power"], "arm": ["b"], "improvement_pct": [5.0], "ci_low_pct": [-3.0],
         "ci_high_pct": [12.0]}
    )  # fmt: skip
    (f,) = F.tpch_findings(summary, overall, "a")
    assert f.key == "f_tpch_counts_nochange" and f.verdict == "inconclusive"
    en, zh = F.render(f, "en"), F.render(f, "zh")
    assert "0 of 2 queries faster" in en and "no change in time is shown" in en
    assert "+5.0% [-3.0, +12]" in en and "time saved over all" not in en
    assert "耗时（几何平均）未检测到变化" in zh and "全部查询的耗时（几何平均）减少" not in zh
    # no interval at all (one repeat) claims nothing either
    (g,) = F.tpch_findings(summary, overall.assign(ci_low_pct=None, ci_high_pct=None), "a")
    assert g.key == "f_tpch_counts_nochange"
    # a total clear of 0 while no one query is: said as a total, not beside "no query faster"
    (h,) = F.tpch_findings(summary, overall.assign(ci_low_pct=1.0), "a")
    assert h.key == "f_tpch_counts_pooled" and h.verdict == "better"
    assert "0 of 2" not in F.render(h, "en") and "no single query" in F.render(h, "en")
    assert "单条查询差异均不显著" in F.render(h, "zh")
    (k,) = F.tpch_findings(summary, overall.assign(improvement_pct=-5.0, ci_low_pct=-9.0,
                                                   ci_high_pct=-1.0), "a")  # fmt: skip
    assert k.key == "f_tpch_counts_longer_pooled" and k.verdict == "worse"


def test_one_thread_count_gives_a_figure_not_a_peak():
    cells = pd.DataFrame(
        {"workload": "YCSB r", "arm": "x", "threads": [2], "n": 3, "mean": [981.0],
         "ci_low": [205.0], "ci_high": [4698.0]}
    )  # fmt: skip
    (f,) = F.peak_findings(cells, "ycsb", "ops/s", "ycsb")
    assert f.key == "f_peak_one" and f.verdict == "info"
    assert "highest" not in F.render(f, "en") and "no peak to locate" in F.render(f, "en")
    assert "最高" not in F.render(f, "zh")


def test_the_tpch_finding_names_the_queries_whose_change_is_not_resolved():
    """The per-query table reads "not resolved" for a change the repeats did not size (issue
    23's time saved of -2,869.8% [-116,677.5, +24.5], a time ratio of 29.7 [0.755, 1,168]);
    the finding counts it among the queries without a detectable change and says so."""
    summary = pd.DataFrame(
        {"mode": "power", "arm": "b", "query": [1, 2], "n": 3,
         "scaling": ["no detectable change", "no detectable change"],
         "ratio": [29.698, 1.05], "ratio_ci_low": [0.755, 0.9], "ratio_ci_high": [1167.8, 1.2]}
    )  # fmt: skip
    overall = pd.DataFrame(
        {"mode": ["power"], "arm": ["b"], "improvement_pct": [5.0], "ci_low_pct": [-3.0],
         "ci_high_pct": [12.0]}
    )  # fmt: skip
    (f,) = F.tpch_findings(summary, overall, "a")
    en, zh = F.render(f, "en"), F.render(f, "zh")
    assert "2 without a detectable change (1 of them not resolved" in en
    assert "2 个未检测到变化（其中 1 个无法确定" in zh
    (g,) = F.tpch_findings(summary.iloc[1:], overall, "a")
    assert "not resolved" not in F.render(g, "en") and "无法确定" not in F.render(g, "zh")


@pytest.mark.parametrize(
    "workload,wh,lang,said",
    [
        ("tpcc", 1, "en", "TPC-C without keying/think times, 1 warehouse"),
        ("tpcc_wait", 10, "en", "TPC-C with keying/think times, 10 warehouses"),
        ("tpcc", 1, "zh", "TPC-C 无键入/思考时间，1 个仓库"),  # zh punctuation, as said
    ],
)
def test_a_tpcc_finding_counts_its_warehouses_in_words(workload, wh, lang, said):
    assert F._tpcc_cell(workload, wh, lang) == said


def test_an_interval_end_short_of_100_percent_never_reads_as_100():
    """A bound of -99.6% is not "all the throughput lost": shown to a decimal, at most 99.9."""
    fig = Figure(80.0, -99.62, 169414.0, "%", 3, "paired")
    assert F.figure_text(fig) == "+80% [-99.6, +169,414]"
    assert F.figure_text(Figure(80.0, -99.97, 120.0, "%", 3, "paired")) == "+80% [-99.9, +120]"
    assert F.figure_text(Figure(50.0, 20.0, 99.7, "% saved", 3, "t")) == "+50% [+20, +99.7]"
    # ends at or beyond 100 are what they are; others keep their rounding
    assert F.figure_text(Figure(-81.0, -105.0, -59.0, "%", 3, "t")) == "-81% [-105, -59]"
    assert F.figure_text(Figure(5.0, -3.04, 12.0, "%", 3, "t")) == "+5.0% [-3.0, +12]"

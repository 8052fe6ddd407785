"""Tables for people: number formats, the reports' headers, arm order, verdict colours."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from tibenchlib.report import tables as T
from tibenchlib.report.tpch_queries import tpch_overall_table


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        (296958.4, "296,958"),
        (1234.5, "1,234"),  # banker's rounding of .5 is not at stake: 1234.5 → 1,234 or 1,235
        (45.67, "45.7"),
        (0.734, "0.73"),
        (0.0123, "0.012"),
        (None, "n/a"),
        (math.nan, "n/a"),
        (math.inf, "n/a"),
    ],
)
def test_fmt_num(x, expected):
    if x == 1234.5:
        assert T.fmt_num(x) in {"1,234", "1,235"}
    else:
        assert T.fmt_num(x) == expected


def test_fmt_pct_ci_reads_like_the_issue():
    assert T.fmt_pct_ci(4.93, 1.6, 8.44) == "+4.9% [+1.6, +8.4]"
    assert T.fmt_pct_ci(-1.93, -3.04, -0.5) == "-1.9% [-3.0, -0.5]"
    assert T.fmt_pct_ci(5.0, None, None) == "+5.0% (no interval)"
    assert T.fmt_pct_ci(None) == "n/a"


@pytest.mark.parametrize(
    ("p", "expected"),
    [(0.0312, "0.031"), (0.00123, "0.0012"), (0.21, "0.21"), (0.5, "0.5"), (3e-7, "<0.0001")],
)
def test_fmt_p_two_significant_digits(p, expected):
    assert T.fmt_p(p) == expected


def test_fmt_ci_keeps_the_estimates_decimals():
    assert T.fmt_ci(12345.6, 12000.2, 12700.9) == "12,346 [12,000, 12,701]"
    assert T.fmt_ci(0.75, 0.7, 0.8) == "0.75 [0.70, 0.80]"
    assert T.fmt_ci(3.0, None, None) == "3.00"


def test_arm_order_is_the_studys_not_alphabetical():
    assert T.arm_order(["b", "a", "c"], ["c", "a", "b"]) == ["c", "a", "b"]
    assert T.arm_order(["z", "a"], ["a"]) == ["a", "z"]
    df = pd.DataFrame({"arm": ["v6", "v5", "v6", "v5"], "threads": [2, 1, 1, 2]})
    out = T.sort_by_arm(df, "arm", ["v6", "v5"], then=("threads",))
    assert list(out["arm"]) == ["v6", "v6", "v5", "v5"]
    assert list(out["threads"]) == [1, 2, 1, 2]


def _cmp_rows():
    # the first two rows of report 000's point-select table, as compare_arms_table rows
    return pd.DataFrame(
        {
            "baseline": ["v5.1.4", "v5.1.4"],
            "candidate": ["v6.0.0", "v6.0.0"],
            "workload": ["oltp_point_select"] * 2,
            "threads": [150, 300],
            "baseline_value": [296958.0, 442315.0],
            "candidate_value": [291233.0, 450641.0],
            "baseline_lat_p95_ms": [0.75, 1.3],
            "candidate_lat_p95_ms": [0.73, 1.06],
            "improvement_pct": [-1.928, 1.882],
            "ci_low_pct": [-3.1, 0.4],
            "ci_high_pct": [-0.7, 3.4],
            "p_adjusted": [0.0123, 0.04567],
            "verdict": ["worse", "~"],
            "n_baseline": [3, 3],
            "n_candidate": [3, 3],
            "warnings": [[], ["a long note that must not be cut at fifty characters, ever, ok"]],
        }
    )


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_compare_table_headers_and_cells(lang):
    t = T.compare_table(_cmp_rows(), lang=lang)
    L = T.labels(lang)
    assert list(t.columns[:5]) == [
        L["threads"],
        "v5.1.4 TPS",
        "v6.0.0 TPS",
        L["p95"].format(arm="v5.1.4"),
        L["p95"].format(arm="v6.0.0"),
    ]
    assert t.iloc[0]["v5.1.4 TPS"] == "296,958"
    assert t.iloc[0][L["imp"]] == "-1.9% [-3.1, -0.7]"
    assert t.iloc[1][L["p"]] == "0.046"
    assert t.iloc[1][L["notes"]].endswith("ever, ok")
    if lang == "zh":
        assert L["imp"].startswith("TPS 提升 (%)")
        assert L["p95"].format(arm="v6.0.0") == "v6.0.0 95% 延迟 (ms)"


def test_styled_colours_verdicts_and_words_them():
    t = T.compare_table(_cmp_rows())
    html = T.styled(t).to_html()
    assert T.VERDICT_COLOURS["worse"] in html
    assert "no significant difference" in html
    assert "...</td>" not in html  # nothing elided
    assert T.plain(t)["Verdict"].tolist() == ["worse", "no significant difference"]


def test_empty_inputs_give_empty_tables():
    assert T.compare_table(pd.DataFrame()).empty
    assert T.sweep_table(pd.DataFrame()).empty
    assert T.numa_table(pd.DataFrame()).empty


def test_unknown_language_is_named():
    with pytest.raises(ValueError, match="lang must be one of en, zh, not 'fr'"):
        T.labels("fr")


def test_impossible_time_saved_and_efficiency_are_withheld():
    overall = pd.DataFrame(
        {
            "mode": "power", "arm": ["1", "2", "4"], "n_queries": 22,
            "geomean_s": [1.0, 0.6, 0.01], "geomean_ci_low_s": [0.9, 0.5, 0.005],
            "geomean_ci_high_s": [1.1, 0.7, 0.02], "improvement_pct": [0.0, 40.0, 99.0],
            "ci_low_pct": [None, 30.0, 95.0], "ci_high_pct": [None, 50.0, 101.0],
            "speedup": [1.0, 1.67, 100.0], "speedup_ci_low": [None, 1.4, 50.0],
            "speedup_ci_high": [None, 2.0, 200.0], "efficiency": [1.0, 0.83, 25.0],
        }
    )  # fmt: skip
    t = tpch_overall_table(overall, "en", base="1")
    saved, eff = t["Time saved (%) [95% CI]"].tolist(), t["Efficiency (%)"].tolist()
    assert saved == ["reference", "+40.0% [+30.0, +50.0]", T.WITHHELD]
    assert eff == ["100", "83", T.WITHHELD]
    # the overall verdict reads the same interval: none for the base or a withheld figure
    assert t["Verdict"].tolist() == [T.WITHHELD, "better", T.WITHHELD]


def test_an_overall_time_beyond_twice_the_base_is_said_as_a_multiple_in_both_languages():
    """The demo's overall row read "-68.5% [-107.7, -36.6]" (time saved): past twice the base
    time the column says every compared arm's time as a multiple of it, as the per-query table
    does, under a header that says so; the verdict keeps reading the interval."""
    overall = pd.DataFrame(
        {
            "mode": "power", "arm": ["cpus:0", "unbound", "other"], "n_queries": 20,
            "geomean_s": [0.05, 0.0843, 0.04], "geomean_ci_low_s": [0.04, 0.07, 0.03],
            "geomean_ci_high_s": [0.06, 0.1, 0.05], "improvement_pct": [0.0, -68.5, 20.0],
            "ci_low_pct": [None, -107.7, 10.0], "ci_high_pct": [None, -36.6, 30.0],
            "speedup": [1.0, 0.59, 1.25], "speedup_ci_low": [None, 0.48, 1.11],
            "speedup_ci_high": [None, 0.73, 1.43], "efficiency": [None, None, None],
        }
    )  # fmt: skip
    en = tpch_overall_table(overall, "en", base="cpus:0")
    col = T.labels("en")["t_ratio"]
    assert T.labels("en")["t_imp"] not in en
    assert en[col].tolist() == ["reference", "1.69× [1.37, 2.08]", "0.80× [0.70, 0.90]"]
    assert en["Verdict"].tolist() == [T.WITHHELD, "worse", "better"]
    zh = tpch_overall_table(overall, "zh", base="cpus:0")
    assert zh[T.labels("zh")["t_ratio"]].tolist()[1] == "1.69 倍 [1.37, 2.08]"
    # within twice the base time, percent as before
    near = overall.assign(ci_low_pct=[None, -90.0, 10.0])
    assert T.labels("en")["t_imp"] in tpch_overall_table(near, "en", base="cpus:0")


def test_the_overall_time_saved_claims_only_what_its_interval_supports():
    """Beside "no query faster", an overall interval holding 0 reads "no significant
    difference", never a saving; the table and the finding read one rule."""
    from tibenchlib import findings as F

    overall = pd.DataFrame(
        {
            "mode": "power", "arm": ["a", "b"], "n_queries": 22,
            "geomean_s": [1.0, 0.95], "geomean_ci_low_s": [0.9, 0.8],
            "geomean_ci_high_s": [1.1, 1.1], "improvement_pct": [0.0, 5.0],
            "ci_low_pct": [None, -3.0], "ci_high_pct": [None, 12.0],
            "speedup": [1.0, 1.05], "speedup_ci_low": [None, 0.9],
            "speedup_ci_high": [None, 1.2], "efficiency": [1.0, 0.5],
        }
    )  # fmt: skip
    for lang in ("en", "zh"):
        t = tpch_overall_table(overall, lang, base="a")
        assert t[T.labels(lang)["verdict"]].tolist() == [T.WITHHELD, "~"]
        assert f">{T.verdict_text('~', lang)}<" in T.styled(t, lang).to_html()
    summary = pd.DataFrame(
        {"mode": "power", "arm": "b", "query": [1, 2], "n": 3,
         "scaling": ["no detectable change"] * 2}
    )  # fmt: skip
    (f,) = F.tpch_findings(summary, overall[overall["arm"] == "b"], "a")
    assert f.key == "f_tpch_counts_nochange"
    assert T.saved_verdict(1.0, 12.0) == "better" and T.saved_verdict(-9.0, -1.0) == "worse"
    assert T.saved_verdict(None, 12.0) == "n/a"
    assert T.impossible_saved(99.0, 101.0) and not T.impossible_saved(40.0, 50.0)


# -- a TPC-H query's time against the base arm's ------------------------------------------------
def _tpch_runs(times: dict[int, dict[str, list[float]]]) -> pd.DataFrame:
    """Execution rows of ``{query: {arm: [seconds per repeat]}}``, one stream, all ok."""
    return pd.DataFrame(
        [
            {"arm": arm, "mode": "power", "query": q, "rep": i, "seconds": t, "status": "ok",
             "verified": True, "warmup": False}
            for q, arms in times.items()
            for arm, ts in arms.items()
            for i, t in enumerate(ts, 1)
        ]
    )  # fmt: skip


def test_a_query_whose_change_the_repeats_cannot_size_reads_not_resolved_with_its_reason():
    """Issue 23's row, "−2,869.8% [−116,677.5, +24.5]" of time saved: the ratio 29.7 [0.755,
    1,168] holds 1 and spans a factor of 1,500. It reads "not resolved" in both languages, the
    notes give the interval and the arm whose times varied, the verdict stays "no detectable
    change" (as the findings count it), and no cell carries the old figures."""
    from tibenchlib.report import scaling as R
    from tibenchlib.report.tpch_queries import UNRESOLVED_SPAN, tpch_query_table

    row = {"query": 5, "mode": "power", "n": 3, "status": "ok", "warnings": None}
    summary = pd.DataFrame(
        [
            {**row, "arm": "unbound", "mean_s": 0.0108, "ci_low_s": 0.0093, "ci_high_s": 0.0126,
             "ratio": 1.0, "improvement_pct": 0.0, "speedup": 1.0, "scaling": None},
            {**row, "arm": "cpus:0", "mean_s": 0.3207, "ci_low_s": 0.0049, "ci_high_s": 20.8,
             "ratio": 29.698, "ratio_ci_low": 0.755, "ratio_ci_high": 1167.775,
             "improvement_pct": -2869.8, "ci_low_pct": -116677.5, "ci_high_pct": 24.5,
             "speedup": 1 / 29.698, "speedup_ci_low": 1 / 1167.775, "speedup_ci_high": 1 / 0.755,
             "p_adjusted": 0.42, "scaling": "no detectable change"},
        ]
    )  # fmt: skip
    assert 1167.775 / 0.755 > UNRESOLVED_SPAN
    for lang, nr in (("en", "not resolved"), ("zh", "无法确定")):
        L = T.labels(lang)
        for t in (tpch_query_table(summary, lang, base="unbound"), R.verdict_table(summary, lang)):
            cells = " ".join(t.astype(str).to_numpy().ravel())
            assert "2,869.8" not in cells and "116,677" not in cells and "-2869" not in cells
            cand = t[t.iloc[:, 2] == "cpus:0"]
            (cell,) = cand.iloc[:, 5 if len(t.columns) == 8 else 3]
            assert cell == nr
            if len(t.columns) == 8:  # its mean time's low end is not rounded to a time of 0
                assert cand.iloc[0, 4] == "0.32 [0.005, 20.80]"
            note = t[L["notes"]].iloc[-1]
            assert "0.76" in note and "1,168" in note and "cpus:0" in note and "20.8" in note
            if lang == "zh":
                assert "倍" in note and "次测试" in note and "time" not in note
        v = R.verdict_table(summary, lang)
        assert v[v.columns[5]].tolist() == [R.SCALING_LABELS[lang]["no detectable change"]]


def test_a_time_change_is_a_percentage_up_to_double_and_a_multiple_beyond():
    """From the estimators themselves (query_summary over repeats): while every interval stays
    within twice the base time, a time saved in percent; once a query may take three times as
    long, the whole column says multiples of the base time ("3.00× [..]", not "-200%"), one
    form per column; one repeat 90 times the others' leaves the change not resolved."""
    from tibenchlib.report import scaling as R
    from tibenchlib.report.tpch_queries import tpch_query_table
    from tibenchlib.tpch import scaling

    times = {
        5: {"unbound": [0.0102, 0.0108, 0.0115], "cpus:0": [0.0106, 0.0121, 0.95]},
        6: {"unbound": [0.10, 0.11, 0.12], "cpus:0": [0.31, 0.33, 0.35]},
        7: {"unbound": [0.10, 0.11, 0.12], "cpus:0": [0.13, 0.14, 0.15]},
    }
    arms, units = ["unbound", "cpus:0"], {"unbound": 2, "cpus:0": 1}
    s = scaling.query_summary(_tpch_runs(times), arms, units=units)
    t = tpch_query_table(s, "en", base="unbound")
    assert "Time saved (%) [95% CI]" not in t
    cand = t[t["Arm"] == "cpus:0"].set_index("Query")
    said = cand["Time vs base (×) [95% CI]"]
    assert said["Q5"] == "not resolved" and cand.loc["Q5", "Speed-up [95% CI]"] == "not resolved"
    assert said["Q6"].startswith("3.00× [2.") and said["Q7"].startswith("1.27× [")
    assert cand.loc["Q6", "Speed-up [95% CI]"].startswith("0.33 [")
    assert t[t["Arm"] == "unbound"]["Time vs base (×) [95% CI]"].eq("reference").all()
    zh = tpch_query_table(s, "zh", base="unbound")
    assert zh["耗时相对基准 (倍) [95% 置信区间]"].iloc[3].startswith("3.00 倍 [")
    assert R.verdict_table(s, "en")["Time vs base (×) [95% CI]"].iloc[1].startswith("3.00× [")
    # without the threefold query: percentages, the unresolved row still "not resolved"
    del times[6]
    s = scaling.query_summary(_tpch_runs(times), arms, units=units)
    t = tpch_query_table(s, "en", base="unbound")
    saved = t[t["Arm"] == "cpus:0"].set_index("Query")["Time saved (%) [95% CI]"]
    assert saved["Q5"] == "not resolved"
    assert saved["Q7"].startswith("-27.3% [") and saved["Q7"].endswith("]")

"""report/words: every sentence in both languages, and the library's real warnings in Chinese.

The warnings are produced here by the library itself (seeded simulated runs through
``stats.compare_arms``, ``stats.summarize_cells``, ``saturation``, ``steady``), so a change in a
warning's English wording that the Chinese table no longer matches fails here.
"""

from __future__ import annotations

import re
import string

import numpy as np
import pandas as pd
import pytest

from tibenchlib.report import tables as T
from tibenchlib.report import words as W
from tibenchlib.report.tpch_queries import tpch_overall_table

ENGLISH = re.compile(r"\b[a-z]{3,}\b")
#: English words that may stay in a Chinese note: estimators, variables and tools.
NAMES = {"kappa", "lambda", "sigma", "lag", "compare", "exclude_rounds", "pid", "tps"}


#: one figure said two ways: signed (+39%), or without sign after a verb that gives its direction
#: (zh: TPS 提升 39%), with the word for that direction (高 / 低)
_SAME_FIGURE = {"fig_abs": "fig", "higher_lower": None}


def _fields(template: str) -> set[str]:
    fields = {f for _, f, _, _ in string.Formatter().parse(template) if f}
    return {_SAME_FIGURE.get(f, f) for f in fields} - {None}


def test_every_sentence_has_both_languages_with_the_same_figures():
    for key, entry in W.SENTENCES.items():
        assert set(entry) == set(W.LANGS), key
        assert _fields(entry["en"]) == _fields(entry["zh"]), key
        # Chinese words, or at least Chinese (full-width) punctuation
        zh = r"[\u4e00-\u9fff\u3000-\u303f\uff00-\uffef]"
        assert re.search(zh, entry["zh"]) or entry["zh"] == entry["en"], key


def test_every_note_template_keeps_its_fields():
    for en, zh in W.NOTES:
        assert _fields(en) == _fields(zh), en
        words = re.sub(r"\{\w+\}", "", en)
        assert re.search(r"[\u4e00-\u9fff]", zh) or not re.search("[a-z]", words), en


def test_say_fills_figures_and_names_an_unknown_id():
    # Chinese prose takes full-width punctuation (；，), whatever the template was typed with
    assert (
        W.say("failed", "zh", n=3) == "3 次测试失败或结果不可信\uff1b它们只计数\uff0c不参与平均。"
    )
    assert W.say("failed", "en", n=3).startswith("3 run(s) failed")
    with pytest.raises(KeyError, match="no sentence 'nope'"):
        W.say("nope", "zh")
    with pytest.raises(ValueError, match="lang must be"):
        W.say("failed", "fr", n=1)


def test_note_translates_known_warnings_and_keeps_unknown_ones():
    assert W.note("flush1: CV 30.0% > 25%", "zh") == "flush1：变异系数 30.0% > 25%"
    assert W.note("cpus:0: 2 failed run(s) excluded", "zh") == "cpus:0：已排除 2 次失败的测试"
    assert W.note("n=1: point estimate only, no interval", "en") == (
        "n=1: point estimate only, no interval"
    )
    # a warning nobody mapped stays as the library wrote it: shown, never lost
    assert W.note("something new: 3 things", "zh") == "something new: 3 things"
    assert W.notes(["n=1: point estimate only, no interval", "x"], "zh") == (
        "n=1：只有点估计，没有置信区间；x"
    )
    assert W.notes(None, "zh") == "" and W.notes(float("nan"), "zh") == ""
    # a list of names in a warning is said as a Chinese list
    between = (
        "the CPU demand of server, client lies between 75% and 90% (or its interval reaches "
        "above 75%): neither at its limit nor clearly free"
    )
    assert W.note(between, "zh").startswith("server、client 的 CPU 需求介于 75% 与 90% 之间")


def _runs(rng, arms=("a", "b"), threads=(1, 2, 4), n=2, cv=0.05, effect=1.03) -> pd.DataFrame:
    rows = []
    seq = 0
    for rep in range(1, n + 1):
        for t in threads:
            for arm in arms if rep % 2 else arms[::-1]:
                mu = 1000 * t * (effect if arm == arms[1] else 1)
                seq += 1
                rows.append(
                    {
                        "workload": "oltp_point_select",
                        "arm": arm,
                        "threads": t,
                        "repeat": rep,
                        "seq": seq,
                        "status": "ok",
                        "tps": rng.normal(mu, cv * mu),
                        "lat_p95_ms": 1.0,
                    }
                )
    return pd.DataFrame(rows)


def _untranslated(notes: list[str]) -> list[str]:
    zh = [W.note(x, "zh") for x in notes]
    return [x for x in zh if {w for w in ENGLISH.findall(x.replace("n/a", ""))} - NAMES]


@pytest.mark.parametrize(
    "n, cv, paired",
    [(1, 0.05, "auto"), (2, 0.05, "auto"), (3, 0.4, "auto"), (3, 0.02, False), (5, 0.01, True)],
)
def test_the_librarys_comparison_warnings_all_have_chinese(n, cv, paired):
    from tibenchlib.stats import compare_arms, summarize_cells, summarize_improvement

    rng = np.random.default_rng(7 + n)
    runs = _runs(rng, n=n, cv=cv)
    cmp = compare_arms(runs, "a", "b", paired=paired)
    notes = [w for ws in cmp["warnings"] for w in ws]
    notes += [w for ws in summarize_cells(runs)["warnings"] for w in ws]
    notes += [w for ws in summarize_improvement(cmp)["warnings"] for w in ws]
    assert notes, "the simulated runs gave no warning to translate"
    assert not _untranslated(notes), _untranslated(notes)


def test_saturation_and_steady_state_warnings_have_chinese():
    from tibenchlib.saturation import saturation
    from tibenchlib.steady import batch_means_ci, mser5

    rng = np.random.default_rng(3)
    runs = _runs(rng, arms=("a", "b"), threads=(1, 2, 4), n=1)
    notes = saturation(runs, workload="oltp_point_select", arm="a")["warnings"]
    notes += mser5(np.r_[np.zeros(8), np.full(4, 100.0)])["warnings"]
    notes += batch_means_ci(np.arange(6, dtype=float))["warnings"]
    assert len(notes) >= 3
    assert not _untranslated(notes), _untranslated(notes)


def test_tables_show_notes_and_missing_intervals_in_chinese():
    cmp = pd.DataFrame(
        {
            "baseline": ["a"],
            "candidate": ["b"],
            "workload": ["oltp_point_select"],
            "threads": [4],
            "baseline_value": [1000.0],
            "candidate_value": [1050.0],
            "improvement_pct": [5.0],
            "ci_low_pct": [None],
            "ci_high_pct": [None],
            "p_adjusted": [None],
            "verdict": ["n/a"],
            "n_baseline": [1],
            "n_candidate": [1],
            "warnings": [["n=1+1: point estimate only, no interval"]],
        }
    )
    t = T.compare_table(cmp, "zh")
    assert t["TPS 提升 (%) [95% 置信区间]"].iloc[0] == "+5.0% \uff08无区间\uff09"
    assert t["说明"].iloc[0] == "n=1+1：只有点估计，没有置信区间"
    assert T.compare_table(cmp, "en")["Notes"].iloc[0] == cmp["warnings"].iloc[0][0]


def test_the_base_arm_is_the_reference_not_plus_zero():
    overall = pd.DataFrame(
        {
            "mode": ["power", "power"],
            "arm": ["cpus:0", "unbound"],
            "n_queries": [22, 22],
            "geomean_s": [1.0, 0.5],
            "geomean_ci_low_s": [0.9, 0.45],
            "geomean_ci_high_s": [1.1, 0.55],
            "improvement_pct": [0.0, 50.0],
            "ci_low_pct": [None, 45.0],
            "ci_high_pct": [None, 55.0],
            "speedup": [1.0, 2.0],
            "speedup_ci_low": [None, 1.8],
            "speedup_ci_high": [None, 2.2],
            "efficiency": [1.0, 1.0],
        }
    )
    for lang, ref in (("en", "reference"), ("zh", "基准")):
        col = T.labels(lang)["t_imp"]
        t = tpch_overall_table(overall, lang, base="cpus:0")
        assert list(t[col]) == [ref, "+50.0% [+45.0, +55.0]"]
    assert "(no interval)" in tpch_overall_table(overall, "en")[T.labels("en")["t_imp"]][0]


def test_a_long_note_is_shortened_with_its_whole_text_one_click_away():
    long = "; ".join(["interval TPS varies by 31% (CV) within the run"] * 8)
    cell = T.notes_html(long)
    assert cell.startswith("<details") and len(cell) > len(long)
    shown = re.search(r"<summary>(.*?)</summary>", cell).group(1)
    assert len(shown) <= T.NOTES_SHOWN + 2 and shown.endswith(" …")
    # the whole text: what the summary shows plus what opens below it
    body = re.sub(r"<[^>]+>", "", cell.split("</summary>", 1)[1])
    assert shown.removesuffix(" …") + body == long
    assert T.notes_html("n < 3") == "n &lt; 3"
    html = T.styled(pd.DataFrame({"Notes": [long], "Threads": ["4"]})).to_html()
    assert "max-width: 24em" in html and "<details" in html


def _verdict_notes() -> list[str]:
    """Seeded runs that reach every verdict's note: inconclusive (wide), the size of a better
    verdict against the margin, zero spread, and a degenerate (zero-TPS) run."""
    from tibenchlib.stats import compare_arms

    notes = []
    for seed, n, cv, effect in [(1, 2, 0.3, 1.0), (2, 5, 0.002, 1.019), (3, 5, 0.0005, 1.005)]:
        runs = _runs(np.random.default_rng(seed), n=n, cv=cv, effect=effect)
        notes += [w for ws in compare_arms(runs, "a", "b")["warnings"] for w in ws]
    runs = _runs(np.random.default_rng(4), n=3, cv=0.0)
    runs.loc[0, "tps"] = 0.0
    notes += [w for ws in compare_arms(runs, "a", "b")["warnings"] for w in ws]
    return notes


def test_every_verdicts_note_has_chinese():
    notes = _verdict_notes()
    for start in ("inconclusive: the interval [", "size ", "no spread in either arm"):
        assert any(x.startswith(start) for x in notes), (start, notes)
    assert any("<= 0 excluded" in x for x in notes), notes
    assert not _untranslated(notes), _untranslated(notes)
    size = next(x for x in notes if x.startswith("size "))
    zh = W.note(size, "zh")
    assert "幅度" in zh and "联合置信区间" in zh and re.search(r"\[[-+\d., ]+\]", zh)


def test_the_adaptive_notes_have_chinese():
    from test_adaptive import _runs as runs_of
    from test_adaptive import _study

    from tibenchlib.adaptive import adaptive_comparison
    from tibenchlib.compare import compare_arms_table

    s = _study(workloads=["oltp_point_select"], threads=[1, 4])
    a = [1000.0, 1010.0, 990.0, 1000.0, 1005.0, 995.0]
    figures = {
        ("a", "oltp_point_select", 1): a[:3],
        ("b", "oltp_point_select", 1): [x * 1.1 for x in a[:3]],
        ("a", "oltp_point_select", 4): [1000, 1100, 950, 1040, 980, 1010],
        ("b", "oltp_point_select", 4): [1020, 1000, 1000, 1090, 990, 1000],
    }
    runs = runs_of(s, figures)
    out = adaptive_comparison(compare_arms_table(runs, s), runs, s)
    s1 = _study(workloads=["oltp_point_select"], threads=[1])
    b = [x * 1.01 * (1 + e) for x, e in zip(a[:3], (0.0005, -0.0004, 0.0002), strict=True)]
    runs1 = runs_of(s1, {("a", "oltp_point_select", 1): a[:3], ("b", "oltp_point_select", 1): b})
    out1 = adaptive_comparison(compare_arms_table(runs1, s1), runs1, s1)
    notes = [w for ws in [*out["warnings"], *out1["warnings"]] for w in ws]
    for part in ("group-sequential interval", "out of reach"):
        assert any(part in x for x in notes), (part, notes)
    # +1% with an interval above 0 is a direction whose size is below the ±2% margin: the
    # verdict and its size come from the interval, not a "no claim" note
    assert out1.iloc[0][["verdict", "size"]].tolist() == ["better", "below delta"]
    assert not _untranslated(notes), _untranslated(notes)


def test_the_stability_and_steady_input_notes_have_chinese():
    from tibenchlib.stability import stability_report
    from tibenchlib.steady import batch_means_ci

    rng = np.random.default_rng(5)
    tps = 1000 + rng.normal(0, 10, 300)
    tps[100:104] = 0.0  # a stall to the floor
    tps[200:] *= 0.7  # a level shift
    report = stability_report(pd.DataFrame({"t": np.arange(1, 301.0), "tps": tps}))
    notes = list(report["warnings"])
    notes += batch_means_ci(np.zeros(40))["warnings"]
    for part in ("dip event(s)", "level shifts", "mean interval figure <= 0"):
        assert any(part in x for x in notes), (part, notes)
    assert not _untranslated(notes), _untranslated(notes)


def test_the_tpcc_data_set_details_have_chinese():
    from tibenchlib.tpcc.phase import consistency_detail

    checked = pd.DataFrame(
        {
            "condition": [1, 2, 3],
            "ok": [True, False, False],
            "rule": ["W_YTD = SUM(D_YTD)", "D_NEXT_O_ID - 1 = MAX(O_ID)", "NO_O_ID RANGE"],
            "violations": [0, 4, 2],
        }
    )
    notes = [consistency_detail(checked)[1], consistency_detail(checked.iloc[:1])[1]]
    notes += [consistency_detail(checked.iloc[:2])[1]]
    assert notes[1] == "consistency conditions 1 hold" and "violated in 4 rows" in notes[0]
    assert not _untranslated(notes), _untranslated(notes)
    assert W.note(notes[0], "zh").endswith("另有 1 条也不满足")


def test_zh_punct_converts_the_sentence_and_keeps_figures_names_and_code():
    out = W.zh_punct("结果(n = 3):提升 +5% [+1.2, +9.0],`a:b,c` 1,234 次;见 http://x")
    assert out == (
        "结果\uff08n = 3\uff09\uff1a提升 +5% [+1.2, +9.0]\uff0c`a:b,c` 1,234 次\uff1b见 http://x"
    )
    assert W.zh_punct("plain English, (kept): as is") == "plain English, (kept): as is"
    # the template's colon is the sentence's even beside a figure: "unbound：22", "8：2,646"
    said = W.say("f_dm_best", "zh", dm_what="增量同步", knob="k", best="8", fig="2,646")
    assert "最佳取值为 8\uff1a2,646" in said
    assert "unbound\uff1a22 个" in W.say(
        "f_tpch_counts", "zh", mode="power", base="cpus:0", arm="unbound", faster=0, n=22,
        slower=0, same=22, fig_abs="1%", unresolved="",
    )  # fmt: skip
    # a figure passed to say() keeps its own punctuation: an arm named cpus:0, an interval
    s = W.say("f_pair", "zh", cand="cpus:0", base="node(0)")
    assert s == "cpus:0 对比 node(0)"

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

ENGLISH = re.compile(r"\b[a-z]{3,}\b")
#: English words that may stay in a Chinese note: estimators, variables and tools.
NAMES = {"kappa", "lambda", "sigma", "lag", "compare", "exclude_rounds", "pid"}


def _fields(template: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(template) if f}


def test_every_sentence_has_both_languages_with_the_same_figures():
    for key, entry in W.SENTENCES.items():
        assert set(entry) == set(W.LANGS), key
        assert _fields(entry["en"]) == _fields(entry["zh"]), key
        assert re.search(r"[\u4e00-\u9fff]", entry["zh"]) or entry["zh"] == entry["en"], key


def test_every_note_template_keeps_its_fields():
    for en, zh in W.NOTES:
        assert _fields(en) == _fields(zh), en
        words = re.sub(r"\{\w+\}", "", en)
        assert re.search(r"[\u4e00-\u9fff]", zh) or not re.search("[a-z]", words), en


def test_say_fills_figures_and_names_an_unknown_id():
    assert W.say("failed", "zh", n=3) == "3 次测试失败或结果不可信;它们只计数,不参与平均。"
    assert W.say("failed", "en", n=3).startswith("3 run(s) failed")
    with pytest.raises(KeyError, match="no sentence 'nope'"):
        W.say("nope", "zh")
    with pytest.raises(ValueError, match="lang must be"):
        W.say("failed", "fr", n=1)


def test_note_translates_known_warnings_and_keeps_unknown_ones():
    assert W.note("flush1: CV 30.0% > 25%", "zh") == "flush1:变异系数 30.0% > 25%"
    assert W.note("cpus:0: 2 failed run(s) excluded", "zh") == "cpus:0:已排除 2 次失败的测试"
    assert W.note("n=1: point estimate only, no interval", "en") == (
        "n=1: point estimate only, no interval"
    )
    # a warning nobody mapped stays as the library wrote it: shown, never lost
    assert W.note("something new: 3 things", "zh") == "something new: 3 things"
    assert W.notes(["n=1: point estimate only, no interval", "x"], "zh") == (
        "n=1:只有点估计,没有置信区间; x"
    )
    assert W.notes(None, "zh") == "" and W.notes(float("nan"), "zh") == ""


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
    assert t["TPS 提升 (%) [95% 置信区间]"].iloc[0] == "+5.0% (无区间)"
    assert t["说明"].iloc[0] == "n=1+1:只有点估计,没有置信区间"
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
        t = T.tpch_overall_table(overall, lang, base="cpus:0")
        assert list(t[col]) == [ref, "+50.0% [+45.0, +55.0]"]
    assert "(no interval)" in T.tpch_overall_table(overall, "en")[T.labels("en")["t_imp"]][0]


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

"""One answer to "where does throughput level off": the diagnosis decides it once, and the
sweep's finding, the diagnosis table (report and ``tibench diagnose``) and the diagnosis's
sentence all read that decision. Known curves: one that levels off, one still rising at the
ladder's top, one whose peak at the top is noise, one whose gain past the 95%-of-peak point the
interval leaves open."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tibenchlib import findings as F
from tibenchlib.cli import _essential
from tibenchlib.diagnose import diagnose
from tibenchlib.report.diagnosis import diagnosis_table
from tibenchlib.report.words import note

LADDER = [1, 2, 4]


def _runs(curve: dict, cv: float, repeats: int = 3, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        [
            {"run_key": f"w/a/{t}/{r}", "workload": "w", "arm": "a", "threads": t, "repeat": r,
             "status": "ok", "tps": curve[t] * (1 + cv * rng.standard_normal()),
             "lat_p95_ms": float(t)}
            for t in LADDER
            for r in range(1, repeats + 1)
        ]
    )  # fmt: skip


#: curve, CV of the runs, the state the diagnosis must decide, the finding it must make
CASES = {
    "levels off": ({1: 1000.0, 2: 2000.0, 4: 2010.0}, 0.005, "levels_off", "f_sat_levels"),
    "rising at the top": ({1: 1000.0, 2: 2000.0, 4: 4000.0}, 0.01, "not_reached", "f_sat_rising"),
    "peak at the top by noise": (
        {1: 1000.0, 2: 2000.0, 4: 2050.0}, 0.15, "unclear", "f_sat_unclear"
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_the_finding_the_table_and_the_sentence_say_the_same(case):
    curve, cv, state, key = CASES[case]
    d = diagnose(_runs(curve, cv), None)
    r = d.iloc[0]
    assert r["saturation"] == state, (r["saturation"], r["warnings"])
    sat = F.sweep_findings(d)[0]
    assert sat.key == key
    for lang in ("en", "zh"):
        cell = diagnosis_table(d, lang).iloc[0, 4]
        short = _essential(diagnosis_table(d, lang), d, lang).iloc[0, 4]
        said = F.render(sat, lang)
        if state == "levels_off":
            assert cell == short == "2" and r["n_sat"] == 2
            assert sat.values["n_sat"] == 2
            assert "from 2 threads" in said or "从 2 压测线程" in said
        else:
            # a peak at the ladder's top is never a saturation point, in any of the three
            assert r["n_sat"] is None and not cell.isdigit() and not short.isdigit()
            assert "levels off from" not in r["sentence_en"] and "趋于饱和" not in said
        if state == "not_reached":
            assert cell == ("not reached within the ladder (≤ 4)" if lang == "en"
                            else "所测线程范围内尚未到达（≤ 4）")  # fmt: skip
            assert short == ("not reached (≤ 4)" if lang == "en" else "未到达（≤ 4）")
            assert r["verdict"] == "not_saturated"


def test_an_open_gain_past_the_95pct_point_is_no_saturation_point_anywhere():
    # 2 threads reach 95% of the peak mean, but the runs are so spread that the gain from 2 to
    # 4 threads may be far above 5%
    runs = _runs({1: 1000.0, 2: 1950.0, 4: 2000.0}, 0.2, seed=5)
    d = diagnose(runs, None)
    r = d.iloc[0]
    assert r["saturation"] == "unclear" and r["n_sat"] is None
    assert r["evidence"]["n_sat_means"] == 2
    # the warning that says why is said in Chinese in a Chinese table
    (why,) = [w for w in r["warnings"] if "no saturation point is claimed" in w]
    assert note(why, "zh").endswith("不认定瓶颈点")
    assert diagnosis_table(d, "en").iloc[0, 4] == "unclear"
    assert "levels off" not in r["sentence_en"]
    sat = F.sweep_findings(d)[0]
    assert sat.key == "f_sat_unclear" and sat.values["threads_from"] == 2
    assert sat.figure.ci_high is None or sat.figure.ci_high > F.sweep.LEVEL_PCT

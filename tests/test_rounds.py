"""Round and drift effects: a known answer, simulations with known truth, and the compare notes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from tibenchlib.compare import compare_arms_table
from tibenchlib.params import ParamsError, parse_study
from tibenchlib.rounds import exclude_rounds, round_effects, round_notes


def _runs(rng, rounds=3, effects=None, cv=0.03, arms="AB", threads=(1, 2, 4)):
    effects = effects or {}
    rows = []
    seq = 0
    for r in range(1, rounds + 1):
        for arm in arms if r % 2 else arms[::-1]:
            for t in threads:
                f = effects.get(r, 1.0) * (1.5 if arm == "B" else 1.0)
                tps = 1000 * t * f * np.exp(cv * rng.standard_normal())
                rows.append(
                    {"workload": "w", "arm": arm, "threads": t, "repeat": r, "seq": seq,
                     "tps": tps, "status": "ok"}
                )  # fmt: skip
                seq += 1
    return pd.DataFrame(rows)


def test_round_effect_known_answer_on_a_balanced_sweep():
    runs = _runs(np.random.default_rng(1), rounds=4, effects={1: 0.88})
    e = round_effects(runs).set_index("round")
    # balanced: the least-squares contrast is the mean over cells of log y(r) - mean log y(others)
    y = np.log(runs.pivot_table(index=["arm", "threads"], columns="repeat", values="tps"))
    d = y[1] - y[[2, 3, 4]].mean(axis=1)
    assert e.loc[1, "effect_pct"] == pytest.approx((np.exp(d.mean()) - 1) * 100)
    # its standard error from the two-way residuals (df = 24 - 6 - 3 = 15)
    res = y.sub(y.mean(axis=1), axis=0).sub(y.mean(axis=0) - y.to_numpy().mean(), axis=1)
    s2 = (res.to_numpy() ** 2).sum() / 15
    se = np.sqrt(s2 * (1 + 1 / 3) / 6)
    q = stats.t.ppf(0.975, 15)
    assert e.loc[1, "ci_low_pct"] == pytest.approx((np.exp(d.mean() - q * se) - 1) * 100)
    assert e.loc[1, "significant"] and e.attrs["f_p_value"] < 0.001
    notes = round_notes(e.reset_index())
    assert len(notes) == 1  # rounds 2-4 look fast only as round 1's mirror image
    assert notes[0].startswith("round 1 is -1") and "against rounds 2–4" in notes[0]
    lo, hi = (f"{x:+.0f}" for x in e.loc[1, ["ci_low_pct", "ci_high_pct"]])
    assert f"[{lo}, {hi}]" in notes[0]  # a signed interval around its signed estimate
    assert "warm-up or drift" in notes[0]


@pytest.mark.slow  # Monte Carlo: several seconds of simulations
def test_round_effect_interval_coverage_and_false_alarms():
    rng = np.random.default_rng(2)
    cover, alarms, sims = 0, 0, 300
    for _ in range(sims):
        runs = _runs(rng, rounds=3, effects={1: 0.9})
        e = round_effects(runs).set_index("round")
        truth = (0.9 / 1.0 - 1) * 100  # rounds 2-3 at 1.0
        cover += e.loc[1, "ci_low_pct"] <= truth <= e.loc[1, "ci_high_pct"]
        flat = round_effects(_runs(rng, rounds=3))
        alarms += bool(round_notes(flat))
    assert 0.92 <= cover / sims <= 0.98, cover / sims
    assert alarms / sims <= 0.06, alarms / sims


def test_exclude_rounds_and_the_compare_notes():
    runs = _runs(np.random.default_rng(3), rounds=5, effects={1: 0.85})
    kept, sentence = exclude_rounds(runs, [1])
    assert set(kept["repeat"]) == {2, 3, 4, 5}
    assert sentence == "round 1 excluded from the statistics (compare.exclude_rounds)"
    assert exclude_rounds(runs, []) == (runs, None)
    with pytest.raises(ValueError, match=r"exclude_rounds: no round \[9\]"):
        exclude_rounds(runs, [9])
    base = {"study": "s", "repeats": 5, "arms": [{"label": "A"}, {"label": "B"}],
            "workloads": ["oltp_update_non_index"]}  # fmt: skip
    cmp = compare_arms_table(runs.assign(workload="oltp_update_non_index"), parse_study(base))
    assert all(any("round 1 is" in w and "cancels it" in w for w in ws) for ws in cmp["warnings"])
    assert (cmp["method"].str.startswith("paired")).all()
    ex = parse_study({**base, "compare": {"exclude_rounds": [1]}})
    cmp = compare_arms_table(runs.assign(workload="oltp_update_non_index"), ex)
    assert (cmp["n_pairs"] == 4).all()
    assert all(any("round 1 excluded" in w for w in ws) for ws in cmp["warnings"])
    with pytest.raises(ParamsError, match=r"compare.exclude_rounds \[6\]"):
        parse_study({**base, "compare": {"exclude_rounds": [6]}})

"""TPC-H verdicts whose truth is known: the designs under drift, the per-query family-wise rate,
the throughput measure, the block design's drift, the stand-in's caveat, and one real phase
whose recorded passes alternate.

The simulations run the product's own plan and statistics (benchmarks/bench_tpch_design.py's
functions) at small sizes; the script prints the full-size figures.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tibenchlib import phases
from tibenchlib.findings.tpch import CPU_SETS, tpch_findings
from tibenchlib.params import parse_study
from tibenchlib.runorder import arm_order
from tibenchlib.store import Store
from tibenchlib.tpch import passes, phase, scaling

_spec = importlib.util.spec_from_file_location(
    "bench_tpch_design", Path(__file__).parents[1] / "benchmarks" / "bench_tpch_design.py"
)
B = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(B)

ZH_PUNCT = re.compile(r"[，：；（）。]")


def test_embedded_passes_alternate_in_the_rounds_order():
    s = B.study(4)
    got = [(b.arm, b.rep) for b in phase.plan(s)]
    want = [(a, r) for r in range(1, 5) for a in arm_order(B.ARMS, r)]
    assert got == want
    # every round holds one pass of each arm, and each arm runs first in half the rounds
    firsts = [got[2 * i][0] for i in range(4)]
    assert sorted(firsts) == sorted(B.ARMS * 2)
    keys = [b.run_key for b in phase.plan(s)]
    assert len(set(keys)) == len(keys) and keys[0] == "tpch_scaling/cpus:0/power/1"


def test_cluster_passes_run_in_blocks_and_return_to_the_first_arm():
    s = B.study(3, "blocks")
    got = [(b.arm, b.rep) for b in phase.plan(s)]
    assert got[:6] == [("cpus:0", r) for r in (1, 2, 3)] + [("unbound", r) for r in (1, 2, 3)]
    assert got[6:] == [("cpus:0", r) for r in (4, 5, 6)]
    # one arm per call: the return block waits until the other arms are measured
    first = [b.rep for b in phase.plan(s, ["cpus:0"])]
    assert first == [1, 2, 3]
    done = {b.run_key for b in phase.plan(s, ["unbound"])}
    assert [b.rep for b in phase.plan(s, ["cpus:0"], done=done)] == [1, 2, 3, 4, 5, 6]


def test_drift_decides_the_old_order_and_not_the_alternated_one():
    """10% linear drift over the phase, no arm effect, CV 3%, n = 3 passes per arm."""
    # small sizes (the script's 400 studies per row: see docs/statistics.md)
    old = B.false_verdict_rate("arm_after_arm", 3, 8)
    new = B.false_verdict_rate("alternated", 3, 15)
    blocks = B.false_verdict_rate("blocks", 3, 8)
    assert old["overall"] >= 0.75
    assert new["overall"] <= 0.1 and new["any_query"] <= 0.1
    assert blocks["overall"] <= 0.125 and blocks["any_query"] <= 0.125


def test_the_quick_verdicts_are_the_findings_verdicts():
    """The script's quick path reads the same functions as the findings: same conclusions."""
    rng = np.random.default_rng(5)
    for design, effect in (("arm_after_arm", 1.0), ("alternated", 1.1), ("blocks", 1.1)):
        runs = B.simulate_runs(rng, B.order(3, design), effect={"unbound": effect})
        full, quick = B.verdicts(runs), B.quick_verdicts(runs)
        assert full["overall"] == quick["overall"] and full["longer"] == quick["longer"]
        assert full["queries"].sort_index().equals(quick["queries"].sort_index())


def test_a_real_change_is_still_found_under_drift():
    assert B.detection_rate("alternated", 3, 10, 1.10) >= 0.8
    assert B.detection_rate("alternated", 3, 6, 1 / 1.10) >= 0.8


def _null_log_ratios(rng, n: int, cvs: np.ndarray, change: float = 1.0) -> pd.DataFrame:
    d = rng.normal(0, np.sqrt(2) * cvs[:, None], size=(len(cvs), n))
    d[8] += np.log(change)
    return pd.DataFrame({"query": np.repeat(np.arange(1, len(cvs) + 1), n), "d": d.ravel()})


def test_per_query_familywise_rate_is_near_its_level_and_a_change_is_found():
    """Over 22 queries with no change the paired t with Holm claims one in about 5% of
    studies whatever the queries' CVs (the old Welch test on min(n) - 1 df: 0.0-0.3%)."""
    rng = np.random.default_rng(7)
    cvs = np.linspace(0.02, 0.06, 22)
    sims = 400
    fw = sum(
        bool((passes.query_tests(_null_log_ratios(rng, 3, cvs))["p_adjusted"] < 0.05).any())
        for _ in range(sims)
    )
    assert 0.015 <= fw / sims <= 0.075
    hits = sum(
        bool(passes.query_tests(_null_log_ratios(rng, 5, np.full(22, 0.02), 1.10))
             .set_index("query").loc[9, "p_adjusted"] < 0.05)
        for _ in range(100)
    )  # fmt: skip
    assert hits >= 50


def test_moderated_prior_recovers_known_variances():
    rng = np.random.default_rng(3)
    s2 = 0.01 * rng.chisquare(4, 5000) / 4  # every variance 0.01: no spread, d0 infinite
    d0, s02 = passes.moderated_prior(s2, np.full(5000, 4.0))
    assert d0 > 50 and s02 == pytest.approx(0.01, rel=0.05)
    sig = 0.01 * 8 / rng.chisquare(8, 5000)  # a scaled inverse chi-square prior, d0 = 8
    s2 = sig * rng.chisquare(4, 5000) / 4
    d0, s02 = passes.moderated_prior(s2, np.full(5000, 4.0))
    assert d0 == pytest.approx(8, rel=0.3) and s02 == pytest.approx(0.01, rel=0.15)


def _throughput_runs(seconds_per_query: dict[str, float], streams: dict[str, int]):
    """Alternated throughput passes: every stream runs 4 queries back to back."""
    rows, clock = [], 0.0
    rng = np.random.default_rng(1)
    for r in (1, 2, 3):
        for arm in arm_order(list(streams), r):
            for s in range(streams[arm]):
                t0 = clock
                for q in (1, 2, 3, 4):
                    sec = seconds_per_query[arm] * q * np.exp(rng.normal(0, 0.02))
                    rows.append((arm, "throughput", s, r, False, q, "ok", sec, True, t0))
                    t0 += sec
            clock += 100
    cols = ["arm", "mode", "stream", "rep", "warmup", "query", "status", "seconds", "verified",
            "started_at"]  # fmt: skip
    return pd.DataFrame(rows, columns=cols)


def test_throughput_is_judged_by_queries_per_hour_not_per_query_time():
    """Two streams, each query 35% longer than under one stream: 48% more queries per hour.
    The finding says the rate rose; no query is called slower."""
    runs = _throughput_runs({"cpus:0": 1.0, "unbound": 1.35}, {"cpus:0": 1, "unbound": 2})
    arms = ["cpus:0", "unbound"]
    summary = scaling.query_summary(runs, arms)
    overall = scaling.overall_summary(runs, arms)
    compared = passes.compare_passes(passes.pass_table(runs, arms), arms)
    cand = summary[summary["arm"] == "unbound"]
    assert cand["scaling"].isna().all() and cand["improvement_pct"].isna().all()
    assert cand["warnings"].str.contains("queries per hour").all()
    (f,) = tpch_findings(summary, overall, "cpus:0", compared, stand_in=True)
    assert f.key == "f_tpch_qph" and f.verdict == "better"
    assert f.figure.estimate == pytest.approx(100 * (2 / 1.35 - 1), abs=2)
    assert f.figure.ci_low > 0 and f.values["streams"] == 2
    assert CPU_SETS in f.caveats


def _block_passes(times: dict[tuple[str, int], float]) -> pd.DataFrame:
    rows = []
    for (arm, rep), g in times.items():
        rows.append({"mode": "power", "arm": arm, "rep": rep, "streams": 1, "queries": 22,
                     "started_at": float(rep + (10 if arm == "b" else 0)), "elapsed_s": 1.0,
                     "geomean_s": g, "total_s": 22 * g, "qph": 3600 * 22 / (22 * g)})  # fmt: skip
    return pd.DataFrame(rows)


def test_blocks_state_the_drift_and_do_not_claim_a_change_within_it():
    """A 1.00, B 1.05, A again 1.10: B sits on the drift line; the mean of the two A blocks
    equals B, and B's +5% against the first block alone is within the A-to-A drift."""
    noise = [0.99, 1.0, 1.01]
    times = {("a", r): 1.00 * noise[r - 1] for r in (1, 2, 3)}
    times |= {("b", r): 1.05 * noise[r - 1] for r in (1, 2, 3)}
    times |= {("a", r): 1.10 * noise[r - 4] for r in (4, 5, 6)}
    c = passes.compare_passes(_block_passes(times), ["a", "b"]).iloc[0]
    assert c["design"] == "blocks"
    assert c["drift_pct"] == pytest.approx(10.0, abs=0.01)
    assert c["change_pct"] == pytest.approx(0.0, abs=0.2) and bool(c["within_drift"])
    assert c["ci_low_pct"] < 0 < c["ci_high_pct"]
    # a real +20% between two A blocks that drifted +2%: claimed, the drift stated beside it
    times2 = {k: (v * 1.2 / 1.05 if k[0] == "b" else v) for k, v in times.items()}
    times2 |= {("a", r): 1.02 * noise[r - 4] for r in (4, 5, 6)}
    c2 = passes.compare_passes(_block_passes(times2), ["a", "b"]).iloc[0]
    assert not c2["within_drift"] and c2["ci_low_pct"] > 10


def test_block_findings_carry_the_drift_caveat_and_withhold_a_change_within_it():
    base = {"mode": "power", "n": 3, "status": "ok", "warnings": None, "ci_low_s": 1,
            "ci_high_s": 1, "verified": True}  # fmt: skip
    summary = pd.DataFrame(
        [{**base, "query": q, "arm": "b", "mean_s": 1.1, "ratio": 1.1, "ratio_ci_low": 1.05,
          "ratio_ci_high": 1.15, "improvement_pct": -10.0, "ci_low_pct": -15.0,
          "ci_high_pct": -5.0, "scaling": "slower"} for q in (1, 2)]
    )  # fmt: skip
    overall = pd.DataFrame([{"mode": "power", "arm": "b", "improvement_pct": -10.0,
                             "ci_low_pct": -15.0, "ci_high_pct": -5.0}])  # fmt: skip
    compared = pd.DataFrame([{"mode": "power", "arm": "b", "design": "blocks", "n": 3,
                              "drift_pct": 12.0, "drift_ci_low_pct": 8.0,
                              "drift_ci_high_pct": 16.0, "within_drift": True, "streams": 1,
                              "base_streams": 1}])  # fmt: skip
    (f,) = tpch_findings(summary, overall, "a", compared)
    assert f.key == "f_tpch_counts_nochange"
    assert f.verdict == "inconclusive" and f.reason == "within_drift"
    (cav,) = f.caveats
    assert cav.key == "tpch_blocks" and "+12.0% [+8.0, +16.0]" in cav.text["en"]
    assert "+12.0% [+8.0, +16.0]" in cav.text["zh"] and ZH_PUNCT.search(cav.text["zh"])
    assert ZH_PUNCT.search(CPU_SETS.text["zh"]) and "TiFlash" in CPU_SETS.text["zh"]
    from tibenchlib.findings.render import render

    assert "drift" in render(f, "en") and "漂移" in render(f, "zh")


@pytest.mark.slow
def test_real_phase_records_alternated_passes_and_resumes_a_lost_one(data_dir):
    study = parse_study({
        "study": "tpalt",
        "tpch_scaling": {"scale_factor": 0.01, "repeats": 2, "queries": [1, 6],
                         "arms": ["cpus:0", "unbound"], "modes": ["power"]},
    })  # fmt: skip
    phases.run_phase(study, "tpch_scaling", progress=False)
    store = Store.for_study(study)
    runs = store.runs("tpalt", phase="tpch_scaling").sort_values("started_at")
    got = [(a, int(r)) for a, r in zip(runs["arm"], runs["repeat"], strict=True)]
    assert got == [("cpus:0", 1), ("unbound", 1), ("unbound", 2), ("cpus:0", 2)]
    q = store.read("tpch_queries", "tpalt")
    first = q.groupby(["arm", "repeat"])["at"].min().sort_values()
    assert [k for k in first.index if k[1] > 0] == [
        ("cpus:0", 1), ("unbound", 1), ("unbound", 2), ("cpus:0", 2)
    ]  # fmt: skip
    # a pass lost (its record failed) is measured again, alone, and the others are kept
    lost = "tpch_scaling/unbound/power/1"
    with store.engine.begin() as c:
        c.exec_driver_sql(f"UPDATE runs SET status = 'failed' WHERE run_key = '{lost}'")
    before = q.set_index(["arm", "mode", "query", "stream", "repeat"])["at"]
    phases.run_phase(study, "tpch_scaling", progress=False)
    after = store.read("tpch_queries", "tpalt").set_index(
        ["arm", "mode", "query", "stream", "repeat"]
    )["at"]
    changed = {k[:1] + k[4:] for k in after.index if after[k] != before.get(k)}
    assert changed <= {("unbound", 1), ("unbound", 0)}
    assert ("unbound", 1) in changed


def test_passes_pair_by_round_only_when_they_ran_in_rounds():
    rng = np.random.default_rng(2)
    for design, paired in (("alternated", True), ("arm_after_arm", False)):
        runs = B.simulate_runs(rng, B.order(3, design))
        table = passes.pass_table(runs, B.ARMS)
        assert passes.rounds_ordered(table) is paired
        c = passes.compare_passes(table, B.ARMS).iloc[0]
        assert c["design"] == ("alternated" if paired else "blocks")
        assert pd.isna(c["drift_pct"])  # no return to the first arm: no drift measured
    assert not passes.rounds_ordered(table.assign(started_at=np.nan))

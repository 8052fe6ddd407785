"""The truth harness for run order: studies whose truth is known, simulated and real, must make
no false finding, and a real effect must still be found.

Simulated (seeded, the product's own orders and paired comparison,
:mod:`tibenchlib.carryover`): the demo's A-vs-A pair under a continuation effect and a
carry-over after flush2 leans as the former rotated rounds made it lean, and no more than 0.3%
under the balanced design.

Real (the embedded MariaDB, real sysbench): A-vs-A arms in the sweep (flush1 twice) and NUMA
(unbound against a binding to every CPU tibench may use) while a CPU hog's duty cycle ramps
from 0 to 100% of one CPU over the phase, a drift that blocks of arms would turn into a verdict;
and the flush effect (``innodb_flush_log_at_trx_commit`` 1 -> 2) still found. A claim has a 5%
chance by design even where there is nothing; a design artefact repeats, so a study that claims
an A-vs-A difference is run once more, and the test fails when the claim repeats.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from tibenchlib.carryover import DEMO_ARMS, DEMO_PAIRS, MODELS, executed, log_offsets, simulate
from tibenchlib.params import parse_study
from tibenchlib.stats import compare_arms

TRUTH = {"flush1": 1.0, "flush1_again": 1.0, "flush2": 1.5}


# -- simulated -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("model", "rounds", "rotated_pct"),
    [
        ("continuation +5%", 5, -0.97),
        ("after flush2 -5%", 4, -1.27),
        ("both", 4, -2.47),
        ("continuation +5%", 4, -1.21),
        ("after flush2 -5%", 5, 0.0),
        ("both", 5, -0.97),
    ],
)
def test_the_balanced_design_removes_the_a_vs_a_lean(model, rounds, rotated_pct):
    kw = {"base": "flush1", "cand": "flush1_again", "truth": TRUTH, "pairs": DEMO_PAIRS}
    kw |= MODELS[model]
    rotated = simulate(DEMO_ARMS, rounds, "rotated", studies=1000, seed=3, **kw)
    balanced = simulate(DEMO_ARMS, rounds, "balanced", studies=1000, seed=3, **kw)
    # the former order leans by what its effects alone give, and the simulation sees it
    assert rotated["expected_pct"] == pytest.approx(rotated_pct, abs=0.01)
    assert rotated["lean_ci_low"] <= rotated_pct <= rotated["lean_ci_high"] + 0.02
    # the balanced design: no lean from the effects, none beyond 0.3% in the simulation
    assert balanced["expected_pct"] == pytest.approx(0.0, abs=1e-9)
    assert -0.3 <= balanced["lean_ci_low"] and balanced["lean_ci_high"] <= 0.3
    assert balanced["claims"] <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 1000)


def test_the_simulation_compares_as_the_sweep_does():
    """The simulation's paired ratio is the comparison the sweep's compare phase makes from the
    catalog's rows (round = repeat, execution order = seq)."""
    runs = executed(DEMO_ARMS, 5, "balanced", DEMO_PAIRS)
    mu = log_offsets(runs, TRUTH, **MODELS["both"])
    rng = np.random.default_rng(5)
    for _ in range(3):
        y = np.exp(mu + rng.normal(0, 0.03, len(runs)))
        rows = pd.DataFrame(
            {
                "workload": "w", "threads": 2, "arm": [x.arm for x in runs],
                "repeat": [x.round for x in runs], "seq": range(len(runs)), "tps": y,
                "status": "ok",
            }
        )[lambda d: d["repeat"] > 0]  # fmt: skip
        cmp = compare_arms(rows, "flush1", "flush1_again").iloc[0]
        a = rows[rows["arm"] == "flush1"].set_index("repeat")["tps"]
        b = rows[rows["arm"] == "flush1_again"].set_index("repeat")["tps"]
        assert cmp["method"].startswith("paired")
        assert cmp["ratio"] == pytest.approx(float(np.exp(np.log(b / a).mean())))


# -- real runs under an injected drift -----------------------------------------------------------
HOG = """
import sys, time
ramp, end = float(sys.argv[1]), float(sys.argv[2])
t0 = time.monotonic()
while (t := time.monotonic() - t0) < end:
    duty = min(1.0, t / ramp)
    busy_until = time.monotonic() + 0.1 * duty
    while time.monotonic() < busy_until:
        pass
    time.sleep(0.1 * (1 - duty))
"""


def _hog(kill_after, ramp_s: float, end_s: float) -> subprocess.Popen:
    """A CPU hog whose duty cycle ramps from 0 to 100% of one CPU over ``ramp_s`` seconds; it
    ends by itself after ``end_s`` and is killed when the test ends."""
    return kill_after(subprocess.Popen([sys.executable, "-c", HOG, str(ramp_s), str(end_s)]))


def _every_cpu() -> str:
    cpus = sorted(os.sched_getaffinity(0))
    return "cpus:" + ",".join(str(c) for c in cpus)


def _sweep_study(name: str):
    return parse_study(
        {
            "study": name,
            "target": {"kind": "embedded"},
            "dataset": {"tables": 1, "table_size": 1000},
            "workloads": ["oltp_update_non_index"],
            "threads": [2],
            "duration_s": 2,
            "report_interval_s": 1,
            "repeats": 4,
            "warmup_s": 1,
            "warmup_max_runs": 1,
            "arms": [
                {"label": "flush1", "server_options": {"innodb_flush_log_at_trx_commit": 1}},
                {"label": "flush1_again", "server_options": {"innodb_flush_log_at_trx_commit": 1}},
                {"label": "flush2", "server_options": {"innodb_flush_log_at_trx_commit": 2}},
            ],
            "compare": {
                "baseline": "flush1",
                "candidate": "flush2",
                "pairs": [["flush1", "flush2"], ["flush1", "flush1_again"]],
                "delta_pct": 2,
            },
            "numa": {
                "policies": ["unbound", _every_cpu()],
                "workloads": ["oltp_point_select"],
                "threads": [2],
                "repeats": 4,
                "duration_s": 1,
            },
        }
    )


def _sweep_verdicts(name: str, kill_after) -> tuple[pd.DataFrame, float]:
    from tibenchlib import phases
    from tibenchlib.compare import compare_arms_table
    from tibenchlib.store import Store

    study = _sweep_study(name)
    phases.run_phase(study, "prepare", progress=False)
    t0 = time.monotonic()
    hog = _hog(kill_after, ramp_s=40, end_s=90)
    try:
        phases.run_phase(study, "sweep", progress=False)
    finally:
        hog.kill()
        hog.wait()
    runs = Store.for_study(study).runs(name, phase="sweep")
    assert len(runs) == 12 and (runs["status"] == "ok").all()
    return compare_arms_table(runs, study), time.monotonic() - t0


@pytest.mark.slow
def test_sweep_finds_the_flush_effect_and_no_a_vs_a_difference_under_drift(
    data_dir, sysbench_bin, kill_after
):
    from tibenchlib.store import Store

    for attempt in (1, 2):
        cmp, took = _sweep_verdicts(f"truth-sweep-{attempt}", kill_after)
        real = cmp[cmp["candidate"] == "flush2"].iloc[0]
        aa = cmp[cmp["candidate"] == "flush1_again"].iloc[0]
        assert real["verdict"] == "better" and real["ci_low_pct"] > 0, real.to_dict()
        assert aa["method"].startswith("paired")
        if aa["verdict"] not in ("better", "worse"):
            break
    else:
        pytest.fail(f"A-vs-A claimed twice under drift: {aa[['improvement_pct', 'verdict']]}")
    # the pre-period run was measured and recorded apart from the compared runs
    pre = Store.for_study(_sweep_study(f"truth-sweep-{attempt}")).runs(
        f"truth-sweep-{attempt}", phase="sweep-pre"
    )
    assert len(pre) == 1 and pre.iloc[0]["arm"] == "flush1" and pre.iloc[0]["repeat"] == 0


@pytest.mark.slow
def test_numa_makes_no_a_vs_a_finding_under_drift(data_dir, sysbench_bin, kill_after):
    from tibenchlib import numa, phases

    for attempt in (1, 2):
        study = _sweep_study(f"truth-numa-{attempt}")
        hog = _hog(kill_after, ramp_s=30, end_s=75)
        try:
            rows = phases.run_phase(study, "numa", progress=False)
        finally:
            hog.kill()
            hog.wait()
        assert len(rows) == 1 and rows.iloc[0]["n_baseline"] == rows.iloc[0]["n_candidate"] == 4
        if rows.iloc[0]["verdict"] not in ("better", "worse"):
            break
    else:
        pytest.fail(f"NUMA A-vs-A claimed twice under drift: {rows.iloc[0].to_dict()}")
    assert len(numa.plan(study)) == 9  # 4 rounds of 2 policies and the pre-period run
